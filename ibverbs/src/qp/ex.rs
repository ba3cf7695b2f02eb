//! The extended send API: `struct ibv_qp_ex` and the `ibv_wr_*` calls.
//!
//! A QP built with [`QueuePairBuilder::send_ops`](crate::QueuePairBuilder::send_ops) is
//! created with `ibv_create_qp_ex` and can post through a [`WrBatch`]: `ibv_wr_start`, one
//! `ibv_wr_*` call per request writing straight into the send queue, then
//! `ibv_wr_complete`. The requests are the same [`SendRequest`]s as for
//! [`QueuePair::post_send`](crate::QueuePair::post_send), checked the same way
//! ([`WrBatch::push`]), or [`BatchRequest`]s made in the batch by its method of the
//! operation ([`WrBatch::write`], ...), whose parts go to the `ibv_wr_*` calls without an
//! `ibv_send_wr` in between: the cheaper way, checked by the same rules.
//!
//! Between `ibv_wr_start` and `ibv_wr_complete` / `ibv_wr_abort` the provider holds the
//! send queue's lock, so a batch that is never ended would deadlock the next post. The
//! batch therefore lives only inside [`QueuePair::batch`]'s closure, owned by the crate,
//! which ends it on every way out: completed when the closure returns `Ok`, aborted when it
//! returns an error or panics. The closure gets `&mut WrBatch`, which cannot be moved out,
//! forgotten or swapped with another QP's batch.
//!
//! The `ibv_wr_*` calls go through function pointers of `ibv_qp_ex` that the provider sets
//! for the operations the QP was created with (rxe leaves the others null). So each is
//! called only once two checks agree: when the QP is built, [`ExSend::check_provider`]
//! finds every function a batch of the QP may call set (else the build fails with
//! [`Error::Unsupported`] naming it); when a request is pushed, the limits' check finds its
//! operation among those (enabled at creation, on the transport). The dispatch from a
//! request's opcode to its call is exhaustive over [`WrOpcode`]: an opcode without a call
//! of its own is refused ([`WrError::NotInBatch`]), never sent to another operation's.

mod request; // BatchRequest: a request made straight into a batch

pub use request::BatchRequest;

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{check, Error, Result, WrError};
use crate::ffi;
use crate::qp::QueuePair;
use crate::types::QpType;
use crate::types::WrOpcode;
use crate::wr::limits::SendLimits;
use crate::wr::{check_each, refused, Limits, Linked, SendParts, SendRequest};

/// The extended view of a QP built with send ops, and the limits its batches check
/// requests against (worked out once, when the QP is created).
pub(crate) struct ExSend {
    pub(crate) qpx: NonNull<ffi::ibv_qp_ex>,
    pub(crate) limits: SendLimits,
}

impl ExSend {
    /// Checks that the provider set every function a batch of this QP may call: the ones
    /// of each operation the limits let a batch post, and the calls every batch makes
    /// ([`Error::Unsupported`] naming the first missing one). Called once, when the QP is
    /// built; the batch's calls rely on it.
    pub(crate) fn check_provider(&self) -> Result<()> {
        use ffi::ibv_wr_opcode as O;
        // SAFETY: qpx is the live QP's extended view; its pointers are set at creation.
        let q = unsafe { self.qpx.as_ref() };
        // Whether the batch calls `ibv_<field>`, whether the provider set `field`, its names.
        macro_rules! function {
            ($called:expr, $field:ident) => {
                (
                    $called,
                    q.$field.is_some(),
                    concat!("ibv_", stringify!($field)),
                    concat!(stringify!($field), " in its provider"),
                )
            };
        }
        let ud = self.limits.qp_type() == QpType::Ud;
        let functions = [
            function!(true, wr_start),
            function!(true, wr_complete),
            function!(true, wr_abort),
            function!(true, wr_set_sge),
            function!(true, wr_set_sge_list),
            function!(true, wr_set_inline_data),
            function!(true, wr_set_inline_data_list),
            function!(ud, wr_set_ud_addr),
            function!(self.posts(O::IBV_WR_SEND), wr_send),
            function!(self.posts(O::IBV_WR_SEND_WITH_IMM), wr_send_imm),
            function!(self.posts(O::IBV_WR_RDMA_WRITE), wr_rdma_write),
            function!(self.posts(O::IBV_WR_RDMA_WRITE_WITH_IMM), wr_rdma_write_imm),
            function!(self.posts(O::IBV_WR_RDMA_READ), wr_rdma_read),
            function!(self.posts(O::IBV_WR_ATOMIC_CMP_AND_SWP), wr_atomic_cmp_swp),
            function!(
                self.posts(O::IBV_WR_ATOMIC_FETCH_AND_ADD),
                wr_atomic_fetch_add
            ),
            function!(self.posts(O::IBV_WR_ATOMIC_WRITE), wr_atomic_write),
        ];
        match functions
            .into_iter()
            .find(|&(called, set, ..)| called && !set)
        {
            None => Ok(()),
            Some((_, _, what, missing)) => Err(Error::Unsupported { what, missing }),
        }
    }

    /// Whether a batch posts `opcode` (enabled at creation, and on the transport).
    fn posts(&self, opcode: ffi::ibv_wr_opcode) -> bool {
        self.limits.allows(opcode)
    }
}

/// A batch of requests on an extended QP, open inside [`QueuePair::batch`].
pub struct WrBatch<'qp> {
    qpx: NonNull<ffi::ibv_qp_ex>,
    limits: &'qp SendLimits,
    /// Requests pushed so far.
    pushed: usize,
    /// Whether the batch still has to be completed or aborted.
    open: bool,
    _qp: PhantomData<&'qp mut QueuePair>,
}

impl QueuePair {
    /// Posts a batch of extended work requests: `ibv_wr_start`, then `f` adds requests
    /// (a [`BatchRequest`] of the batch's method of the operation, or a [`SendRequest`]
    /// with [`WrBatch::push`]); when `f` returns `Ok` the batch is posted
    /// (`ibv_wr_complete`, all or nothing), when it returns an error or panics the batch
    /// is aborted (`ibv_wr_abort`) and nothing is posted. Fails before calling `f` unless
    /// the QP was built with [`send_ops`](crate::QueuePairBuilder::send_ops).
    ///
    /// ```no_run
    /// # fn f(mut qp: rdma_verbs::QueuePair, mr: rdma_verbs::MemoryRegion, peer: rdma_verbs::RemoteMemory) -> rdma_verbs::Result<()> {
    /// let sge = [mr.sge(0..8)?];
    /// qp.batch(|batch| {
    ///     batch.write(1, &sge, peer).push()?;
    ///     // A request made aside, as for post_send:
    ///     batch.push(&rdma_verbs::SendRequest::send(2, &sge).signaled())
    /// })?;
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn batch<R>(&mut self, f: impl FnOnce(&mut WrBatch<'_>) -> Result<R>) -> Result<R> {
        let Some(&ExSend { qpx, ref limits }) = self.qp_ex() else {
            return Err(no_send_ops());
        };
        self.mark_posted();
        // SAFETY: qpx is this live QP's extended view; `&mut self` keeps other posts off the
        // QP until the batch below is completed or aborted, which its owner (this frame)
        // does on every path, unwinding included.
        unsafe { ffi::ibv_wr_start(qpx.as_ptr()) };
        let mut batch = WrBatch {
            qpx,
            limits,
            pushed: 0,
            open: true,
            _qp: PhantomData,
        };
        let value = f(&mut batch)?;
        batch.complete()?;
        Ok(value)
    }
}

/// The error of [`QueuePair::batch`] on a QP built without send ops.
#[cold]
#[inline(never)]
fn no_send_ops() -> Error {
    Error::InvalidArgument {
        what: "queue pair",
        reason: "it was built without send_ops, so it has no ibv_wr_* API".into(),
    }
}

impl WrBatch<'_> {
    /// Adds `wr` to the batch (`ibv_wr_send`, `ibv_wr_rdma_write`, ... then
    /// `ibv_wr_set_ud_addr` for UD and `ibv_wr_set_sge_list` or, for inline requests,
    /// `ibv_wr_set_inline_data` / `ibv_wr_set_inline_data_list`).
    ///
    /// The request is checked as [`QueuePair::post_send`] checks it, and against the
    /// operations the QP's extended API was created for (a memory window bind, which has no
    /// send op, is refused: [`WrError::NotInBatch`]); a refused request
    /// ([`Error::Request`], with its index in the batch) is not added, and ending the
    /// closure with the error (`?`) aborts the whole batch.
    // Inlined into the caller, where the request was usually just built: its opcode and
    // flags are then known, the match below folds to one call and the request's unused
    // fields are never written.
    #[inline(always)]
    pub fn push(&mut self, wr: &SendRequest<'_>) -> Result<()> {
        if wr.need() & self.limits.deny() != 0 {
            check_each(std::slice::from_ref(wr), self.pushed, self.limits)?;
        }
        // SAFETY: the request passed the check.
        unsafe { self.start(&SendParts::of(wr)) }
    }

    /// Writes the request `p` into the send queue: its operation's `ibv_wr_*` call, then
    /// `ibv_wr_set_ud_addr` for UD and the data's setter, and counts it.
    ///
    /// # Safety
    /// `p` passed the limits' check (the fast or the exact one).
    #[inline(always)]
    unsafe fn start(&mut self, p: &SendParts) -> Result<()> {
        use ffi::ibv_wr_opcode as O;
        let qpx = self.qpx.as_ptr();
        // SAFETY: qpx is live and inside ibv_wr_start. The request passed the check, so its
        // operation is one the batch posts (enabled at creation, on the transport), and
        // ExSend::check_provider found that operation's function set when the QP was built:
        // the ibv_wr_* call of its opcode has its pointer, as have the setters below.
        let started = unsafe {
            (*qpx).wr_id = p.wr_id;
            (*qpx).wr_flags = p.flags;
            match p.opcode {
                O::IBV_WR_SEND => {
                    ffi::ibv_wr_send(qpx);
                    Ok(())
                }
                O::IBV_WR_RDMA_WRITE => {
                    ffi::ibv_wr_rdma_write(qpx, p.rkey, p.remote_addr);
                    Ok(())
                }
                _ => start_other(qpx, *p),
            }
        };
        if let Err(reason) = started {
            return Err(refused(self.pushed, reason));
        }
        if self.limits.qp_type() == QpType::Ud {
            // SAFETY: as above; the check saw a live address handle of the QP's PD.
            unsafe { ffi::ibv_wr_set_ud_addr(qpx, p.ah, p.remote_qpn, p.remote_qkey) };
        }
        if p.flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0 != 0 {
            if p.num_sge == 1 {
                // SAFETY: as above; the list (of one entry, borrowed by the request) fits
                // max_inline_data, and the provider copies the data during the call.
                unsafe {
                    let one = *p.sg_list;
                    ffi::ibv_wr_set_inline_data(qpx, one.addr as *mut _, one.length as usize);
                }
            } else {
                // SAFETY: as above.
                unsafe { set_inline_list(qpx, p.sg_list, p.num_sge) };
            }
        } else if p.opcode != O::IBV_WR_ATOMIC_WRITE {
            // An atomic write carries its data in the request, and has no list.
            // SAFETY: as above; the list is valid for `num_sge` entries (it borrows the
            // request's slice), which fit max_send_sge, and the calls consume it.
            unsafe {
                if p.num_sge == 1 {
                    // One entry: its fields, not a list the provider copies (rxe: 25
                    // instructions less).
                    let one = *p.sg_list;
                    ffi::ibv_wr_set_sge(qpx, one.lkey, one.addr, one.length);
                } else {
                    ffi::ibv_wr_set_sge_list(qpx, p.num_sge as usize, p.sg_list);
                }
            }
        }
        self.pushed += 1;
        Ok(())
    }

    /// Requests pushed so far.
    pub fn len(&self) -> usize {
        self.pushed
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Posts the batch (`ibv_wr_complete`). On failure none of it was posted.
    #[inline]
    fn complete(mut self) -> Result<()> {
        self.open = false;
        // SAFETY: qpx is live and inside ibv_wr_start; complete ends it, even on failure.
        check("ibv_wr_complete", unsafe {
            ffi::ibv_wr_complete(self.qpx.as_ptr())
        })
        .map_err(|e| e.or_unsupported("ibv_wr_complete", "wr_complete in its provider"))
    }
}

/// [`WrBatch::push`] for the operations other than sends and RDMA writes: starts the
/// request (`ibv_wr_send_imm`, `ibv_wr_rdma_read`, ...). Exhaustive over the operations:
/// one without an `ibv_wr_*` call here starts nothing and is [`WrError::NotInBatch`] (the
/// check refused it already; this keeps an opcode from reaching another's call).
///
/// # Safety
/// `qpx` is live and inside `ibv_wr_start`, and `p` passed the batch's check.
#[inline(never)]
unsafe fn start_other(qpx: *mut ffi::ibv_qp_ex, p: SendParts) -> Result<(), WrError> {
    let opcode = WrOpcode::from_raw(p.opcode);
    // SAFETY: the operation is one the batch posts, whose function ExSend::check_provider
    // found set (the check; see WrBatch::push).
    unsafe {
        match opcode {
            WrOpcode::Send => ffi::ibv_wr_send(qpx),
            WrOpcode::RdmaWrite => ffi::ibv_wr_rdma_write(qpx, p.rkey, p.remote_addr),
            WrOpcode::SendWithImm => ffi::ibv_wr_send_imm(qpx, p.imm),
            WrOpcode::RdmaWriteWithImm => {
                ffi::ibv_wr_rdma_write_imm(qpx, p.rkey, p.remote_addr, p.imm)
            }
            WrOpcode::RdmaRead => ffi::ibv_wr_rdma_read(qpx, p.rkey, p.remote_addr),
            WrOpcode::AtomicWrite => {
                // The provider copies the 8 bytes during the call.
                let value = p.compare_add.to_ne_bytes();
                ffi::ibv_wr_atomic_write(qpx, p.rkey, p.remote_addr, value.as_ptr().cast())
            }
            WrOpcode::CompareSwap => {
                ffi::ibv_wr_atomic_cmp_swp(qpx, p.rkey, p.remote_addr, p.compare_add, p.swap)
            }
            WrOpcode::FetchAdd => {
                ffi::ibv_wr_atomic_fetch_add(qpx, p.rkey, p.remote_addr, p.compare_add)
            }
            WrOpcode::BindMw | WrOpcode::Other(_) => return Err(WrError::NotInBatch { opcode }),
        }
    }
    Ok(())
}

/// [`WrBatch::push`] for inline data in other than one entry: `ibv_wr_set_inline_data_list`
/// of the `num_sge` entries at `sg_list`. The parts come by value, so that the request's
/// stay in registers.
///
/// # Safety
/// `qpx` is live and inside `ibv_wr_start`; the entries are those of a request that passed
/// the batch's check, valid for `num_sge` reads.
#[inline(never)]
unsafe fn set_inline_list(qpx: *mut ffi::ibv_qp_ex, sg_list: *const ffi::ibv_sge, num_sge: u32) {
    // SAFETY: the list is valid for `num_sge` entries (caller).
    let sges = unsafe { std::slice::from_raw_parts(sg_list, num_sge as usize) };
    let bufs: Vec<ffi::ibv_data_buf> = sges
        .iter()
        .map(|s| ffi::ibv_data_buf {
            addr: s.addr as *mut _,
            length: s.length as usize,
        })
        .collect();
    // SAFETY: qpx is live and inside ibv_wr_start, the request passed the check (inline
    // total within max_inline_data); the provider copies the buffers during the call.
    unsafe { ffi::ibv_wr_set_inline_data_list(qpx, bufs.len(), bufs.as_ptr()) };
}

impl Drop for WrBatch<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.open {
            // SAFETY: qpx is live and inside ibv_wr_start.
            unsafe { ffi::ibv_wr_abort(self.qpx.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SendOps;

    unsafe extern "C" fn never() {}

    /// A provider function that is set but never called: the check reads `is_some` only.
    fn set<F: Copy>() -> Option<F> {
        assert_eq!(
            std::mem::size_of::<F>(),
            std::mem::size_of::<unsafe extern "C" fn()>()
        );
        // SAFETY: F is a function pointer type of the same size (checked); the value is
        // never called.
        Some(unsafe { std::mem::transmute_copy(&(never as unsafe extern "C" fn())) })
    }

    /// Of the provider's `ibv_qp_ex` functions, a QP needs those a batch of it may call:
    /// one missing fails the build, naming it; one of an operation the batch never posts
    /// (rxe leaves those null) does not matter.
    #[test]
    fn the_functions_a_batch_calls_are_checked_at_creation() {
        // SAFETY: all-zero is a valid ibv_qp_ex: null pointers, no functions.
        let mut q: Box<ffi::ibv_qp_ex> = Box::new(unsafe { std::mem::zeroed() });
        q.wr_start = set();
        q.wr_complete = set();
        q.wr_abort = set();
        q.wr_set_sge = set();
        q.wr_set_sge_list = set();
        q.wr_set_inline_data = set();
        q.wr_set_inline_data_list = set();
        q.wr_send = set();
        let qpx = NonNull::new(Box::into_raw(q)).unwrap();
        let cap = ffi::ibv_qp_cap::default();
        let ex = |qp_type, ops| ExSend {
            qpx,
            limits: SendLimits::new(qp_type, &cap, std::ptr::null_mut()).for_batch(ops),
        };
        let missing = |ex: ExSend| match ex.check_provider() {
            Ok(()) => None,
            Err(Error::Unsupported { what, .. }) => Some(what),
            Err(other) => panic!("{other}"),
        };
        let fetch_add = SendOps::SEND | SendOps::ATOMIC_FETCH_AND_ADD;
        assert_eq!(missing(ex(QpType::Rc, SendOps::SEND)), None);
        assert_eq!(
            missing(ex(QpType::Rc, fetch_add)),
            Some("ibv_wr_atomic_fetch_add")
        );
        // Not on the transport: a batch of a UC QP never posts it.
        assert_eq!(missing(ex(QpType::Uc, fetch_add)), None);
        assert_eq!(
            missing(ex(QpType::Ud, SendOps::SEND)),
            Some("ibv_wr_set_ud_addr")
        );
        // SAFETY: qpx is the box made above, which nothing uses any more.
        drop(unsafe { Box::from_raw(qpx.as_ptr()) });
    }
}
