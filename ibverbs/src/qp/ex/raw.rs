//! The FFI calls of the extended send API: every unsafe block of `qp/ex/`.
//!
//! [`ExSend`] is a QP's `ibv_qp_ex`, made once the provider was found to set every function
//! a batch of the QP may call ([`ExSend::check_provider`]); [`RawBatch`] is a batch open on
//! it, between `ibv_wr_start` and `ibv_wr_complete` / `ibv_wr_abort`, which writes a
//! request into the send queue only once it passed the batch's limits (so its operation's
//! function is one of those): [`RawBatch::push`] for a [`SendRequest`], and
//! [`push_request`] for a request made in the batch ([`BatchRequest::push`]).
//!
//! It takes nothing from `qp/raw.rs`, whose QP handle makes the view from the QP's
//! pointer, send ops and limits ([`ExSend::new`]) and keeps it.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::error::{check, Error, Result, WrError};
use crate::ffi;
use crate::qp::ex::BatchRequest;
use crate::types::WrOpcode;
use crate::types::{QpType, SendOps};
use crate::wr::limits::SendLimits;
use crate::wr::{check_each, refused, Limits, Linked, SendParts, SendRequest, SgList};

/// The extended view of a QP built with send ops, and the limits its batches check
/// requests against (worked out once, when the QP is created). Kept by the QP's own handle
/// (`RawQp`, in `qp/raw.rs`), whose QP the view is part of.
pub(crate) struct ExSend {
    qpx: NonNull<ffi::ibv_qp_ex>,
    limits: SendLimits,
}

impl ExSend {
    /// The extended view of `qp` and the limits of its batches (`limits`, the send queue's,
    /// narrowed to `ops`), if it was created with send ops; [`Error::Unsupported`] if the
    /// provider did not set a function a batch may call.
    ///
    /// # Safety
    /// `qp` is a live QP created with the send ops `ops` (by `ibv_create_qp_ex`, which
    /// `rdma_create_qp_ex` calls too) and granted `limits`, and it outlives the view.
    pub(in crate::qp) unsafe fn new(
        qp: NonNull<ffi::ibv_qp>,
        ops: SendOps,
        limits: &SendLimits,
    ) -> Result<Option<Box<ExSend>>> {
        if ops.is_empty() {
            return Ok(None);
        }
        // SAFETY: the QP is live and was created with send ops (caller): the extended view
        // is the provider's to give.
        let Some(qpx) = NonNull::new(unsafe { ffi::ibv_qp_to_qp_ex(qp.as_ptr()) }) else {
            return Ok(None);
        };
        let ex = ExSend {
            qpx,
            limits: limits.clone().for_batch(ops),
        };
        ex.check_provider()?;
        Ok(Some(Box::new(ex)))
    }

    /// Checks that the provider set every function a batch of this QP may call: the ones
    /// of each operation the limits let a batch post, and the calls every batch makes
    /// ([`Error::Unsupported`] naming the first missing one). Called once, when the QP is
    /// built; the batch's calls rely on it.
    fn check_provider(&self) -> Result<()> {
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

    /// Opens a batch (`ibv_wr_start`). `&mut self`, which only the QP's `RawQp::start_batch`
    /// gives, keeps other posts off the QP until the batch is completed or aborted, which
    /// its owner does on every path, unwinding included.
    #[inline]
    pub(in crate::qp) fn start(&mut self) -> RawBatch<'_> {
        let ExSend { qpx, ref limits } = *self;
        // SAFETY: qpx is the live QP's extended view, and nothing else posts on the QP
        // while the batch is open (above).
        unsafe { ffi::ibv_wr_start(qpx.as_ptr()) };
        RawBatch {
            qpx,
            limits,
            pushed: 0,
            open: true,
            _qp: PhantomData,
        }
    }
}

/// A batch open on a QP's extended view: completed by [`complete`](Self::complete), else
/// aborted on drop.
pub(crate) struct RawBatch<'qp> {
    qpx: NonNull<ffi::ibv_qp_ex>,
    limits: &'qp SendLimits,
    /// Requests pushed so far.
    pushed: usize,
    /// Whether the batch still has to be completed or aborted.
    open: bool,
    _qp: PhantomData<&'qp mut ExSend>,
}

impl RawBatch<'_> {
    /// Adds `wr`, checked as [`QueuePair::post_send`](crate::QueuePair::post_send) checks
    /// it (see [`WrBatch::push`](crate::WrBatch::push)).
    #[inline(always)]
    pub(in crate::qp) fn push(&mut self, wr: &SendRequest<'_>) -> Result<()> {
        if wr.need() & self.limits.deny() != 0 || !self.limits.known(wr) {
            check_each(std::slice::from_ref(wr), self.pushed, self.limits)?;
        }
        // SAFETY: the request passed the check.
        unsafe { self.start(&SendParts::of(wr)) }
    }

    /// Writes the request `p` into the send queue: its operation's `ibv_wr_*` call, then
    /// `ibv_wr_set_ud_addr` for UD and the data's setter, and counts it; refused
    /// ([`WrError::BatchFull`]) when the batch already holds as many requests as the send
    /// queue (`max_send_wr`).
    ///
    /// # Safety
    /// `p` passed the limits' check (the fast or the exact one).
    #[inline(always)]
    unsafe fn start(&mut self, p: &SendParts<'_>) -> Result<()> {
        use ffi::ibv_wr_opcode as O;
        let depth = self.limits.depth();
        if self.pushed >= depth as usize {
            return Err(batch_full(self.pushed, depth));
        }
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
            unsafe { ffi::ibv_wr_set_ud_addr(qpx, p.ah(), p.remote_qpn, p.remote_qkey) };
        }
        if p.flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0 != 0 {
            if p.num_sge() == 1 {
                // SAFETY: as above; the list (of one entry, borrowed by the request) fits
                // max_inline_data, and the provider copies the data during the call.
                unsafe {
                    let one = p.sg().first();
                    ffi::ibv_wr_set_inline_data(qpx, one.addr as *mut _, one.length as usize);
                }
            } else {
                // SAFETY: as above.
                unsafe { set_inline_list(qpx, p.sg()) };
            }
        } else if p.opcode != O::IBV_WR_ATOMIC_WRITE {
            // An atomic write carries its data in the request, and has no list.
            // SAFETY: as above; the list is valid for `num_sge` entries (it borrows the
            // request's slice), which fit max_send_sge, and the calls consume it.
            unsafe {
                if p.num_sge() == 1 {
                    // One entry: its fields, not a list the provider copies (rxe: 25
                    // instructions less).
                    let one = p.sg().first();
                    ffi::ibv_wr_set_sge(qpx, one.lkey, one.addr, one.length);
                } else {
                    ffi::ibv_wr_set_sge_list(qpx, p.num_sge() as usize, p.sg().as_ptr());
                }
            }
        }
        self.pushed += 1;
        Ok(())
    }

    /// Requests pushed so far.
    #[inline]
    pub(in crate::qp) fn len(&self) -> usize {
        self.pushed
    }

    /// Posts the batch (`ibv_wr_complete`). On failure none of it was posted.
    #[inline]
    pub(in crate::qp) fn complete(mut self) -> Result<()> {
        self.open = false;
        // SAFETY: qpx is live and inside ibv_wr_start; complete ends it, even on failure.
        check("ibv_wr_complete", unsafe {
            ffi::ibv_wr_complete(self.qpx.as_ptr())
        })
        .map_err(|e| e.or_unsupported("ibv_wr_complete", "wr_complete in its provider"))
    }
}

/// The refusal of push `index` into a batch that holds as many requests as the send queue,
/// `depth`. Of values, not of the batch: a method taking the batch by reference kept the
/// batch in memory instead of registers (`scripts/compare-peers`: 14 instructions more
/// for a batch of one write).
#[cold]
#[inline(never)]
fn batch_full(index: usize, depth: u32) -> Error {
    refused(index, WrError::BatchFull { depth })
}

/// [`BatchRequest::push`]: adds `wr` to its batch, checked exactly.
// Taking the request whole, as the method did before the raw layer: through a method of
// RawBatch taking the parts by reference, the compiler kept a batch's loop less tight
// (`scripts/compare-peers 300` counted 3 instructions more for a batch of one write).
#[inline(always)]
pub(super) fn push_request(wr: BatchRequest<'_, '_, '_>) -> Result<()> {
    let batch = &mut wr.batch.raw;
    let limits = batch.limits;
    if !limits.fits_parts(&wr.parts) {
        return Err(refused(batch.pushed, limits.refusal_parts(wr.parts)));
    }
    // SAFETY: the request passed the exact check.
    unsafe { batch.start(&wr.parts) }
}

/// [`RawBatch::push`] for the operations other than sends and RDMA writes: starts the
/// request (`ibv_wr_send_imm`, `ibv_wr_rdma_read`, ...). Exhaustive over the operations:
/// one without an `ibv_wr_*` call here starts nothing and is [`WrError::NotInBatch`] (the
/// check refused it already; this keeps an opcode from reaching another's call).
///
/// # Safety
/// `qpx` is live and inside `ibv_wr_start`, and `p` passed the batch's check.
#[inline(never)]
unsafe fn start_other(qpx: *mut ffi::ibv_qp_ex, p: SendParts<'_>) -> Result<(), WrError> {
    let opcode = WrOpcode::from_raw(p.opcode);
    // SAFETY: the operation is one the batch posts, whose function ExSend::check_provider
    // found set (the check; see RawBatch::push).
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

/// [`RawBatch::push`] for inline data in other than one entry:
/// `ibv_wr_set_inline_data_list` of the entries of `sg`. The list comes by value, so that
/// the request's parts stay in registers.
///
/// # Safety
/// `qpx` is live and inside `ibv_wr_start`; the entries are those of a request that passed
/// the batch's check.
#[inline(never)]
unsafe fn set_inline_list(qpx: *mut ffi::ibv_qp_ex, sg: SgList<'_>) {
    let bufs: Vec<ffi::ibv_data_buf> = sg
        .entries()
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

impl Drop for RawBatch<'_> {
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
