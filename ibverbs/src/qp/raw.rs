//! The FFI calls of a queue pair: every unsafe block of `qp/` but the extended send path's
//! (`qp/ex/raw.rs`).
//!
//! [`RawQp`] owns the `ibv_qp`: it is created from a [`QpInit`], whose PD, CQs and SRQ were
//! found of one device, keeps those alive, holds the limits the provider granted and checks
//! every request against them before posting it, and destroys the QP on drop. So its
//! methods are safe: a live `RawQp` is a live QP, and what it posts fits. Also here: the
//! receive queue's table of post functions ([`RecvQueue`]) and the creation of a QP on a
//! CM id ([`QueuePairBuilder::create_on_id`]). `qp.rs` keeps the public `unsafe`
//! [`QueuePair::modify`](super::QueuePair::modify), which passes its caller's promise on to [`RawQp::modify`].

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::num::NonZeroU64;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::ex::raw::{ExSend, RawBatch};
use super::QueuePairBuilder;
use crate::cq::{CompletionQueue, CqInner};
use crate::drop_error;
use crate::error::{check, check_ptr, Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::srq::SharedReceiveQueue;
use crate::types::{Gid, QpState, QpType, SendOps};
use crate::wr::keys::KeyCache;
use crate::wr::limits::{RecvLimits, SendLimits, RECV_CLASSES};
use crate::wr::post_error::PostError;
use crate::wr::{post_failed, post_list, post_many, Frame, Limits, Linked};
use crate::wr::{RecvRequest, SendRequest};

/// What a QP is created from: the `ibv_qp_init_attr_ex` of a builder whose completion
/// queues and shared receive queue were found of its protection domain's device, naming
/// those objects, which it borrows.
#[derive(Clone, Copy)]
pub(super) struct QpInit<'a> {
    attr: ffi::ibv_qp_init_attr_ex,
    pd: &'a ProtectionDomain,
    send_cq: &'a CompletionQueue,
    recv_cq: &'a CompletionQueue,
    srq: Option<&'a SharedReceiveQueue>,
    qp_type: QpType,
    send_ops: SendOps,
}

impl<'a> QpInit<'a> {
    /// The creation attributes of `b`'s QP, once its CQs and SRQ are found of its PD's
    /// device ([`Error::Mismatch`] naming the first that is not).
    pub(super) fn new(b: &QueuePairBuilder<'a>) -> Result<Self> {
        let ctx = b.pd.context();
        ctx.check_same(b.send_cq.inner().context(), "send completion queue")?;
        ctx.check_same(b.recv_cq.inner().context(), "receive completion queue")?;
        if let Some(srq) = b.srq {
            b.pd.check_same(srq.pd(), "shared receive queue")?;
        }
        let mut attr = ffi::ibv_qp_init_attr_ex {
            send_cq: b.send_cq.ptr(),
            recv_cq: b.recv_cq.ptr(),
            srq: b.srq.map_or(ptr::null_mut(), |s| s.ptr()),
            cap: b.caps,
            qp_type: b.qp_type.raw(),
            sq_sig_all: i32::from(b.sq_sig_all),
            comp_mask: ffi::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0,
            pd: b.pd.ptr(),
            ..Default::default()
        };
        if !b.send_ops.is_empty() {
            attr.comp_mask |= ffi::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
            attr.send_ops_flags = b.send_ops.bits();
        }
        if !b.create_flags.is_empty() {
            attr.comp_mask |= ffi::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_CREATE_FLAGS.0;
            attr.create_flags = b.create_flags.bits();
        }
        Ok(QpInit {
            attr,
            pd: b.pd,
            send_cq: b.send_cq,
            recv_cq: b.recv_cq,
            srq: b.srq,
            qp_type: b.qp_type,
            send_ops: b.send_ops,
        })
    }

    /// The attributes.
    pub(super) fn attr(&self) -> &ffi::ibv_qp_init_attr_ex {
        &self.attr
    }

    /// These attributes with `max_inline_data` of `n` bytes.
    pub(super) fn with_max_inline_data(mut self, n: u32) -> Self {
        self.attr.cap.max_inline_data = n;
        self
    }

    /// These attributes without creation flags.
    pub(super) fn without_create_flags(mut self) -> Self {
        self.attr.create_flags = 0;
        self.attr.comp_mask &= !ffi::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_CREATE_FLAGS.0;
        self
    }
}

/// An `ibv_qp`, destroyed on drop (`ibv_destroy_qp`), with the objects it was created on
/// (kept alive until then) and the limits its requests are checked against.
pub(super) struct RawQp {
    qp: NonNull<ffi::ibv_qp>,
    /// The capabilities the creation granted (it writes them back into the request).
    caps: ffi::ibv_qp_cap,
    /// The operations the extended send API was created for (empty if none).
    send_ops: SendOps,
    send_limits: SendLimits,
    recv: RecvQueue,
    /// The extended view and its batches' limits, once
    /// [`enable_batches`](Self::enable_batches) found the provider's functions (boxed: a
    /// QP stays small inside a CM event).
    ex: Option<Box<ExSend>>,
    /// Whether a request was ever posted (or offered to be posted) on the QP: a
    /// `tokio::AsyncQp` wraps only a QP without one, so that every completion with its number
    /// is of a request it posted.
    posted: AtomicBool,
    /// Whether a post on the QP once [`stopped`](Self::stopped) is refused: on siw
    /// ([`completes_no_post_once_stopped`]), where a request posted then never completes.
    refuse_once_stopped: bool,
    /// Whether the crate moved the QP to ERROR or disconnected its CM id (a QP never
    /// leaves those: the typed transitions and `modify`'s contract go no way back).
    stopped: AtomicBool,
    // Dropped after the QP is destroyed (fields drop after Drop::drop).
    pd: ProtectionDomain,
    _send_cq: Arc<CqInner>,
    _recv_cq: Arc<CqInner>,
    _srq: Option<SharedReceiveQueue>,
}

// SAFETY: QPs may be used from any thread; posting and modifying are thread-safe in
// libibverbs. The extended view is used under `&mut` only (start_batch), and the limits'
// PD pointer is only compared.
unsafe impl Send for RawQp {}
// SAFETY: as above.
unsafe impl Sync for RawQp {}

impl Drop for RawQp {
    fn drop(&mut self) {
        // SAFETY: the QP is live. Destroying it stops the HCA from touching any memory its
        // outstanding requests referenced.
        let rc = unsafe { ffi::ibv_destroy_qp(self.qp.as_ptr()) };
        drop_error::report("ibv_destroy_qp", rc);
    }
}

impl RawQp {
    /// Creates a QP of `init` (`ibv_create_qp_ex`; the error names `ibv_create_qp` unless
    /// it has send ops), without its extended view yet.
    pub(super) fn create(init: &QpInit<'_>) -> Result<Self> {
        let mut attr = init.attr;
        // SAFETY: the context is open and the PD, CQs and SRQ the attributes name are live
        // and of it (QpInit::new); the RawQp made below keeps them alive for as long as the
        // QP exists.
        let qp = unsafe { ffi::ibv_create_qp_ex(init.pd.context().ptr(), &mut attr) };
        let verb = if init.send_ops.is_empty() {
            "ibv_create_qp"
        } else {
            "ibv_create_qp_ex"
        };
        let qp = check_ptr(verb, qp)?;
        // SAFETY: the QP was just created from init, which granted attr.cap.
        Ok(unsafe { RawQp::new(qp, init, &attr.cap) })
    }

    /// The `RawQp` that owns `qp` and keeps `init`'s objects alive.
    ///
    /// # Safety
    /// `qp` is a live QP just created from `init`, which granted `cap`, and nothing else
    /// destroys it.
    unsafe fn new(qp: NonNull<ffi::ibv_qp>, init: &QpInit<'_>, cap: &ffi::ibv_qp_cap) -> Self {
        let ctx = init.pd.context();
        let mut send_limits =
            SendLimits::new(init.qp_type, cap, init.pd.ptr()).with_keys(KeyCache::new(init.pd));
        if ctx.is_iwarp() {
            send_limits = send_limits.for_iwarp(ctx);
        }
        // SAFETY: the QP and its context are live (caller). libibverbs fills every empty
        // slot of the ops table with a stub, and a provider sets it once, when the context
        // opens.
        let provider = unsafe { (*(*qp.as_ptr()).context).ops.post_recv };
        let recv = RecvQueue::new(
            provider.unwrap_or(refuse),
            match init.srq {
                Some(_) => RecvLimits::srq(),
                None => RecvLimits::new(cap.max_recv_wr, cap.max_recv_sge)
                    .with_keys(KeyCache::new(init.pd)),
            },
        );
        RawQp {
            qp,
            caps: *cap,
            send_ops: init.send_ops,
            send_limits,
            recv,
            ex: None,
            posted: AtomicBool::new(false),
            refuse_once_stopped: completes_no_post_once_stopped(ctx),
            stopped: AtomicBool::new(false),
            pd: init.pd.clone(),
            _send_cq: Arc::clone(init.send_cq.inner()),
            _recv_cq: Arc::clone(init.recv_cq.inner()),
            _srq: init.srq.cloned(),
        }
    }

    /// Makes the extended view of a QP created with send ops, once the provider is found to
    /// set every function a batch of it may call ([`Error::Unsupported`] naming the first
    /// missing one); nothing for a QP without.
    pub(super) fn enable_batches(&mut self) -> Result<()> {
        // SAFETY: the QP is live and was created with `send_ops`, which granted
        // `send_limits`; the view is kept in `self.ex`, so it goes with the QP.
        self.ex = unsafe { ExSend::new(self.qp, self.send_ops, &self.send_limits) }?;
        Ok(())
    }

    /// The raw `ibv_qp`, valid while this lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_qp {
        self.qp.as_ptr()
    }

    /// The QP number.
    pub(super) fn qp_num(&self) -> u32 {
        // SAFETY: the QP is live.
        unsafe { self.qp.as_ref() }.qp_num
    }

    /// The capabilities the creation granted.
    pub(super) fn caps(&self) -> &ffi::ibv_qp_cap {
        &self.caps
    }

    /// The operations the extended send API was created for (empty if none).
    pub(super) fn send_ops(&self) -> SendOps {
        self.send_ops
    }

    /// The protection domain.
    pub(super) fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// Records that a request is being posted (see the `posted` field).
    #[inline(always)]
    fn mark_posted(&self) {
        self.posted.store(true, Ordering::Relaxed);
    }

    /// Records that the QP went to ERROR, or that its CM id disconnected (which moves it to
    /// ERROR or, on iWARP, to SQD and on to ERROR): see [`check_running`](Self::check_running).
    pub(super) fn mark_stopped(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// Refuses a post on a QP the crate stopped, where the provider would never complete it
    /// (see [`completes_no_post_once_stopped`]).
    #[inline(always)]
    fn check_running(&self) -> Result<(), PostError> {
        if self.refuse_once_stopped && self.stopped.load(Ordering::Relaxed) {
            return Err(refused_once_stopped());
        }
        Ok(())
    }

    /// Whether a request was ever posted on the QP.
    #[cfg(feature = "tokio")]
    pub(super) fn has_posted(&self) -> bool {
        self.posted.load(Ordering::Relaxed)
    }

    /// `ibv_modify_qp` with the attributes `mask` selects. A failed state change is
    /// [`Error::Transition`].
    ///
    /// # Safety
    /// The modification keeps the capabilities (`IBV_QP_CAP`): the posts check requests
    /// against the ones granted at creation. ([`QueuePair::modify`](super::QueuePair::modify)
    /// asks its caller for more: what the QP's type relies on.)
    pub(super) unsafe fn modify(
        &self,
        attr: &mut ffi::ibv_qp_attr,
        mask: ffi::ibv_qp_attr_mask,
    ) -> Result<()> {
        // SAFETY: the QP is live and attr is initialised.
        let rc = unsafe { ffi::ibv_modify_qp(self.ptr(), attr, mask.0 as i32) };
        let to_state = mask.0 & ffi::ibv_qp_attr_mask::IBV_QP_STATE.0 != 0;
        if rc == 0 && to_state && attr.qp_state == ffi::ibv_qp_state::IBV_QPS_ERR {
            self.mark_stopped();
        }
        match check("ibv_modify_qp", rc) {
            Err(Error::Verb { source, .. }) if to_state => Err(Error::Transition {
                to: QpState::from_raw(attr.qp_state),
                source,
            }),
            other => other,
        }
    }

    /// `ibv_modify_qp` for the typed transitions (INIT, RTR, RTS, ERROR) and the typed
    /// changes in RTS (`qp/path_mig.rs`), which keep the promise of
    /// [`modify`](Self::modify): each moves the state on (or keeps it) with the attributes
    /// of its transition, never `IBV_QP_CAP`. A failed state change is
    /// [`Error::Transition`].
    pub(super) fn transition(
        &self,
        attr: &mut ffi::ibv_qp_attr,
        mask: ffi::ibv_qp_attr_mask,
    ) -> Result<()> {
        debug_assert_eq!(mask.0 & ffi::ibv_qp_attr_mask::IBV_QP_CAP.0, 0);
        // SAFETY: a typed transition does not pass IBV_QP_CAP (above).
        unsafe { self.modify(attr, mask) }
    }

    /// `ibv_query_qp` of the attributes `mask` selects, and the creation attributes.
    pub(super) fn query(&self, mask: u32) -> Result<(ffi::ibv_qp_attr, ffi::ibv_qp_init_attr)> {
        let mut attr = ffi::ibv_qp_attr::default();
        let mut init = ffi::ibv_qp_init_attr::default();
        // SAFETY: the QP is live and the out structs are writable.
        let rc = unsafe { ffi::ibv_query_qp(self.ptr(), &mut attr, mask as i32, &mut init) };
        check("ibv_query_qp", rc)?;
        Ok((attr, init))
    }

    /// `ibv_modify_qp_rate_limit` with `attr`: its return code (`EOPNOTSUPP` where the
    /// provider has no `modify_qp_rate_limit`: the `-sys` port checks the pointer first).
    pub(super) fn modify_rate_limit(&self, mut attr: ffi::ibv_qp_rate_limit_attr) -> c_int {
        // SAFETY: the QP is live and attr is an initialised ibv_qp_rate_limit_attr, which
        // the call only reads.
        unsafe { ffi::ibv_modify_qp_rate_limit(self.ptr(), &mut attr) }
    }

    /// `ibv_attach_mcast` to the group `gid` of multicast LID `lid`: its return code.
    pub(super) fn attach_mcast(&self, gid: Gid, lid: u16) -> c_int {
        let raw = gid.to_raw();
        // SAFETY: the QP is live and raw is a valid GID for the call.
        unsafe { ffi::ibv_attach_mcast(self.ptr(), &raw, lid) }
    }

    /// `ibv_detach_mcast` from the group `gid` of multicast LID `lid`: its return code.
    pub(super) fn detach_mcast(&self, gid: Gid, lid: u16) -> c_int {
        let raw = gid.to_raw();
        // SAFETY: the QP is live and raw is a valid GID for the call.
        unsafe { ffi::ibv_detach_mcast(self.ptr(), &raw, lid) }
    }

    /// Posts a list of send requests (`ibv_post_send`), each checked against the QP's
    /// send limits first (see [`QueuePair::post_send`](super::QueuePair::post_send)).
    #[inline]
    pub(super) fn post_send(&self, wrs: &mut [SendRequest<'_>]) -> Result<(), PostError> {
        self.mark_posted();
        self.check_running()?;
        let queue = || ("ibv_post_send", self.send_limits.depth());
        post_list(wrs, &self.send_limits, queue, |head, bad| {
            // SAFETY: the QP is live; post_list hands over the list it linked of requests
            // it checked against the QP's limits, and every SGE they reference borrows a
            // live registered region (or was vouched for by Sge::from_raw).
            unsafe { ffi::ibv_post_send(self.ptr(), head, bad) }
        })
    }

    /// Opens a batch on the QP's extended view (`ibv_wr_start`); `None` for a QP built
    /// without send ops. `&mut self` keeps every other post off the QP while the batch is
    /// open.
    #[inline]
    pub(super) fn start_batch(&mut self) -> Option<RawBatch<'_>> {
        let ex = self.ex.as_deref_mut()?;
        // mark_posted, with `ex` borrowed from another field.
        self.posted.store(true, Ordering::Relaxed);
        Some(ex.start())
    }
}

/// siw's `vendor_id` (`SIW_VENDOR_ID`, "bmt", in Linux's `drivers/infiniband/sw/siw/siw.h`).
const SIW_VENDOR_ID: u32 = 0x62_6d74;

/// Whether `ctx` is a siw device, which never completes a request posted on a QP in ERROR
/// or disconnected: its provider writes the request into the queue it shares with the
/// kernel, which flushed that queue once, at the move to ERROR, and whose `siw_post_send`
/// in ERROR flushes only the requests the call itself carries (none for a user QP); out of
/// RTS it fails the call, but the request stays in the queue and the provider rings no
/// doorbell for the next ones, which then return success (Linux 6.1, `siw_verbs.c`,
/// `siw_qp.c`, rdma-core's `providers/siw`); receives are written with no call at all.
/// siw's `ibv_query_qp` reports no state (always RESET), so the crate refuses the posts on
/// a QP it stopped itself.
fn completes_no_post_once_stopped(ctx: &crate::Context) -> bool {
    ctx.is_iwarp()
        && ctx
            .device_limits()
            .is_ok_and(|attr| attr.vendor_id == SIW_VENDOR_ID)
}

/// The error of a post on a siw QP the crate stopped ([`RawQp::check_running`]).
#[cold]
#[inline(never)]
fn refused_once_stopped() -> PostError {
    PostError::from(Error::Unsupported {
        what: "posting on a siw queue pair moved to ERROR or disconnected",
        missing: "a completion of requests posted then: siw completes none of them (they \
                  sit in its queue until the QP is destroyed)",
    })
}

/// The signature of `ibv_context_ops::post_recv`.
type PostRecv = unsafe extern "C" fn(
    *mut ffi::ibv_qp,
    *mut ffi::ibv_recv_wr,
    *mut *mut ffi::ibv_recv_wr,
) -> c_int;

/// What [`refuse`] returns; no provider does (they return 0, an errno value or -1).
const REFUSED: c_int = c_int::MIN;

/// The receive queue of a QP: its limits and its post function by request class (see
/// `qp/recv.rs`): the provider's `post_recv` (`ibv_context::ops`, read once at creation;
/// `ibv_post_recv` calls the same pointer) where the class fits the queue, else [`refuse`].
struct RecvQueue {
    limits: RecvLimits,
    by_class: [PostRecv; RECV_CLASSES],
}

impl RecvQueue {
    /// The receive queue that posts with `provider` the classes `limits` grants.
    fn new(provider: PostRecv, limits: RecvLimits) -> Self {
        let deny = limits.deny();
        RecvQueue {
            limits,
            by_class: std::array::from_fn(|k| if deny >> k & 1 == 0 { provider } else { refuse }),
        }
    }
}

/// The table entry of a class the queue does not take: posts nothing, writes the request
/// to `bad` as a failing provider does and returns [`REFUSED`].
unsafe extern "C" fn refuse(
    _qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_recv_wr,
    bad: *mut *mut ffi::ibv_recv_wr,
) -> c_int {
    // SAFETY: `bad` is the frame slot of RawQp::post_recv, which is writable.
    unsafe { *bad = wr };
    REFUSED
}

impl RawQp {
    /// Posts a list of receive requests (`ibv_post_recv`), checked as
    /// [`post_send`](Self::post_send) checks sends: a single one whose entries' keys are
    /// known ([`Limits::known`]) by its class's entry in the table.
    #[inline]
    pub(super) fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        self.mark_posted();
        self.check_running()?;
        // Only the QP is kept across the provider call, in the frame next to `bad`.
        let mut frame = Frame::<ffi::ibv_recv_wr, _>::new(self);
        if let [one] = wrs {
            if !self.recv.limits.known(one) {
                return self.post_recv_many(wrs);
            }
            let need = one.need();
            debug_assert!(
                need.is_power_of_two() && need < 1 << RECV_CLASSES,
                "{need:#x}"
            );
            // SAFETY: a receive's requirement word is one bit below RECV_CLASSES
            // (limits::recv_need, the only maker of RecvRequest::need): not zero, and the
            // bit's index is in the table.
            let post = unsafe {
                let class = NonZeroU64::new_unchecked(need).trailing_zeros();
                *self.recv.by_class.get_unchecked(class as usize)
            };
            one.set_next(ptr::null_mut());
            let wr = ptr::from_mut(one).cast();
            // SAFETY: the QP is live; `post` is its provider's post_recv for a class it
            // takes (so the request fits its limits), or `refuse`. The request is alone
            // (next is null) and its SGEs borrow live registered regions.
            return match unsafe { post(self.ptr(), wr, frame.bad()) } {
                0 => Ok(()),
                rc => frame.keep.one_failed(rc, frame.bad),
            };
        }
        self.post_recv_many(wrs)
    }

    /// [`post_recv`](Self::post_recv) of a single request that `post` did not post: a
    /// refused one gets the exact check, a provider's failure its error.
    #[cold]
    #[inline(never)]
    fn one_failed(
        &self,
        rc: c_int,
        bad: MaybeUninit<*mut ffi::ibv_recv_wr>,
    ) -> Result<(), PostError> {
        if rc != REFUSED {
            return Err(post_failed(
                "ibv_post_recv",
                0,
                rc,
                self.recv.limits.depth(),
            ));
        }
        // SAFETY: `refuse` wrote the pointer it was given: the whole one request of
        // post_recv's list, which is borrowed for this call and whose first field is its
        // `ibv_recv_wr`.
        let one = unsafe { &mut *bad.assume_init().cast::<RecvRequest<'_>>() };
        self.post_recv_many(std::slice::from_mut(one))
    }

    /// [`post_recv`](Self::post_recv) of any other list: linked, checked and posted.
    fn post_recv_many(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        let queue = || ("ibv_post_recv", self.recv.limits.depth());
        post_many(
            |head, bad| {
                // SAFETY: the QP is live; post_many hands over the list it linked of
                // requests it checked against the QP's receive limits, and every SGE
                // borrows a live registered region.
                unsafe { ffi::ibv_post_recv(self.ptr(), head, bad) }
            },
            wrs,
            &self.recv.limits,
            queue,
        )
    }
}

#[cfg(feature = "cm")]
pub(super) use cm_id::CmQpId;

/// The CM id a QP is created on.
#[cfg(feature = "cm")]
mod cm_id {
    use std::ptr::NonNull;

    use rdmacm_sys as cm;

    use super::{QpInit, RawQp};
    use crate::cm::PortSpace;
    use crate::context::Context;
    use crate::error::{check, Result};
    use crate::qp::{PreparedQueuePair, QueuePair, QueuePairBuilder};
    use crate::types::Gid;

    /// A CM id to create a QP on, vouched for by the caller of
    /// [`QueuePairBuilder::create_on_id`].
    pub(in crate::qp) struct CmQpId {
        id: NonNull<cm::rdma_cm_id>,
    }

    impl CmQpId {
        /// The port and the source GID of the id's route, which librdmacm set when it bound
        /// the id to its device.
        pub(in crate::qp) fn route(&self) -> (u8, Gid) {
            // SAFETY: the id is live and bound to a device (create_on_id's caller).
            unsafe {
                let id = self.id.as_ptr();
                let ibaddr = (*id).route.addr.addr.ibaddr.as_ref();
                ((*id).port_num, Gid::from_raw(ibaddr.sgid))
            }
        }

        /// Creates the QP of `init` on the id (`rdma_create_qp_ex`), which librdmacm moves
        /// to INIT; `None` if librdmacm succeeded but set no QP on the id. On success the
        /// id's `qp` is the QP.
        pub(in crate::qp) fn create_qp(&self, init: &QpInit<'_>) -> Result<Option<RawQp>> {
            let mut attr = init.attr;
            // SAFETY: the id is live, without a QP and bound to the PD's device
            // (create_on_id's caller); the CQs and SRQ are of it (QpInit::new), and the
            // RawQp made below keeps them alive.
            let rc = unsafe { cm::rdma_create_qp_ex(self.id.as_ptr(), &mut attr) };
            check("rdma_create_qp_ex", rc)?;
            // SAFETY: the id is live and now has a QP.
            let qp = unsafe { (*self.id.as_ptr()).qp };
            Ok(NonNull::new(qp).map(|qp| {
                // SAFETY: the QP was just created from init, which granted attr.cap;
                // librdmacm does not destroy it (rdma_destroy_qp is never called on a QP
                // that was wrapped).
                unsafe { RawQp::new(qp, init, &attr.cap) }
            }))
        }

        /// Clears the id's `qp`, so that librdmacm no longer reaches the QP (which then
        /// drops).
        pub(in crate::qp) fn forget_qp(&self) {
            // SAFETY: the id is live (create_on_id's caller).
            unsafe { (*self.id.as_ptr()).qp = std::ptr::null_mut() };
        }

        /// Points the id's `qp` at `qp`.
        fn set_qp(&self, qp: &QueuePair) {
            // SAFETY: the id is live and has no QP (set_on_id's caller); the caller clears
            // the pointer before the QP drops.
            unsafe { (*self.id.as_ptr()).qp = qp.ptr() };
        }
    }

    impl PreparedQueuePair {
        /// Makes this QP the QP of `id` (librdmacm's `id->qp`), which librdmacm then moves
        /// to RTS on connect or accept, as one it created, once
        /// [`check_for_id`](Self::check_for_id) passes for the id's port space, device and
        /// route.
        ///
        /// # Safety
        /// `id` must be a live id bound to a device (`ctx`, its context), without a QP. On
        /// success the id's `qp` is the returned QP, which the caller must clear before the
        /// QP drops (librdmacm must not reach it after).
        pub(crate) unsafe fn set_on_id(
            self,
            id: NonNull<cm::rdma_cm_id>,
            ps: PortSpace,
            ctx: &Context,
        ) -> Result<QueuePair> {
            let id = CmQpId { id };
            self.check_for_id(ps, ctx, id.route())?;
            let qp = self.into_qp();
            id.set_qp(&qp);
            Ok(qp)
        }
    }

    impl QueuePairBuilder<'_> {
        /// Creates the QP on `id` (`rdma_create_qp_ex`); librdmacm moves it to INIT (a UD
        /// QP of the UDP port space at once to RTS), and on connect or accept to RTS. The
        /// QP sends from the GID of the id's route.
        ///
        /// # Safety
        /// `id` must be a live id bound to a device, without a QP, of the port space
        /// [`check_for_cm`](Self::check_for_cm) passed; the builder's PD must be of the id's
        /// device (`ctx`, its context). On success the id's `qp` is the returned QP, which
        /// the caller must clear before the QP drops (librdmacm must not reach it after).
        pub(crate) unsafe fn create_on_id(
            &self,
            id: NonNull<cm::rdma_cm_id>,
            ctx: &Context,
        ) -> Result<QueuePair> {
            // The caller's promise is all CmQpId's methods rely on.
            self.create_on(CmQpId { id }, ctx)
        }
    }
}
