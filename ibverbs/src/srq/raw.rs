//! The FFI calls of a shared receive queue: every unsafe block of `srq`.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::drop_error;
use crate::error::{check, check_ptr, Result, WrError};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::wr::keys::KeyCache;
use crate::wr::limits::RecvLimits;
use crate::wr::post_error::PostError;
use crate::wr::{post_list, Limits, RecvRequest};

/// An `ibv_srq`, destroyed on drop, with the PD it was created in (kept alive while it
/// lives) and the limits its receives are checked against before they are posted.
pub(super) struct RawSrq {
    srq: NonNull<ffi::ibv_srq>,
    /// The requests it holds: what `ibv_create_srq` granted (it writes it back into the
    /// request), then what `ibv_query_srq` reports after a resize.
    max_wr: AtomicU32,
    /// Scatter/gather entries per request, as granted.
    max_sge: u32,
    limits: RecvLimits,
    pd: ProtectionDomain,
}

// SAFETY: SRQs may be used from any thread; posting is thread-safe.
unsafe impl Send for RawSrq {}
// SAFETY: as above.
unsafe impl Sync for RawSrq {}

impl Drop for RawSrq {
    fn drop(&mut self) {
        // SAFETY: the SRQ is live, and QPs using it hold a clone of its SharedReceiveQueue
        // (so of the Arc around this), so none is left.
        let rc = unsafe { ffi::ibv_destroy_srq(self.srq.as_ptr()) };
        drop_error::report("ibv_destroy_srq", rc);
    }
}

impl RawSrq {
    /// Creates an SRQ of at least `max_wr` requests of `max_sge` entries in `pd`
    /// (`ibv_create_srq`).
    pub(super) fn create(pd: &ProtectionDomain, max_wr: u32, max_sge: u32) -> Result<Self> {
        // Zeroed in place, padding included: ibv_cmd_create_srq copies the whole struct into
        // an ibv_srq_init_attr_ex, whose comp_mask lies in this struct's tail padding, which
        // a struct literal leaves uninitialised.
        let mut attr = std::mem::MaybeUninit::<ffi::ibv_srq_init_attr>::zeroed();
        // SAFETY: all zero bytes are a valid ibv_srq_init_attr (integers, a null pointer).
        let attr = unsafe { attr.assume_init_mut() };
        attr.attr.max_wr = max_wr;
        attr.attr.max_sge = max_sge;
        // SAFETY: the PD is live and attr is initialised; the RawSrq keeps the PD alive.
        let srq = unsafe { ffi::ibv_create_srq(pd.ptr(), attr) };
        Ok(RawSrq {
            srq: check_ptr("ibv_create_srq", srq)?,
            max_wr: AtomicU32::new(attr.attr.max_wr),
            max_sge: attr.attr.max_sge,
            limits: RecvLimits::new(attr.attr.max_wr, attr.attr.max_sge)
                .with_keys(KeyCache::new(pd)),
            pd: pd.clone(),
        })
    }

    /// The raw `ibv_srq`, valid while this lives.
    pub(super) fn ptr(&self) -> *mut ffi::ibv_srq {
        self.srq.as_ptr()
    }

    /// The protection domain.
    pub(super) fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// The requests it holds (see the field).
    pub(super) fn max_wr(&self) -> u32 {
        self.max_wr.load(Ordering::Relaxed)
    }

    /// Records the size `ibv_query_srq` reports after a resize.
    pub(super) fn set_max_wr(&self, granted: u32) {
        self.max_wr.store(granted, Ordering::Relaxed);
    }

    /// Scatter/gather entries per request, as granted.
    pub(super) fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// The kernel's handle of the SRQ.
    pub(super) fn handle(&self) -> u32 {
        // SAFETY: the SRQ is live.
        unsafe { (*self.ptr()).handle }
    }

    /// `ibv_query_srq`.
    pub(super) fn query(&self) -> Result<ffi::ibv_srq_attr> {
        let mut attr = ffi::ibv_srq_attr::default();
        // SAFETY: the SRQ is live and attr is writable.
        check("ibv_query_srq", unsafe {
            ffi::ibv_query_srq(self.ptr(), &mut attr)
        })?;
        Ok(attr)
    }

    /// `ibv_modify_srq` of the fields of `attr` that `mask` names. (Neither a new size nor
    /// a limit changes what a receive is checked against: its entries per request.)
    pub(super) fn modify(
        &self,
        attr: &mut ffi::ibv_srq_attr,
        mask: ffi::ibv_srq_attr_mask,
    ) -> Result<()> {
        // SAFETY: the SRQ is live and attr is initialised; mask names the fields set.
        check("ibv_modify_srq", unsafe {
            ffi::ibv_modify_srq(self.ptr(), attr, mask.0 as i32)
        })
    }

    /// Posts a list of receive requests (`ibv_post_srq_recv`), each checked against the
    /// SRQ's limits first.
    #[inline]
    pub(super) fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        let queue = || ("ibv_post_srq_recv", Limits::<RecvRequest<'_>>::depth(self));
        post_list(wrs, self, queue, |head, bad| {
            // SAFETY: the SRQ is live; post_list hands over the list it linked of the
            // requests it checked against these limits, and every SGE borrows a live
            // registered region.
            unsafe { ffi::ibv_post_srq_recv(self.ptr(), head, bad) }
        })
    }
}

/// The limits of the SRQ's receives: those it was created with, and its current depth for
/// the error of a post that found it full.
impl Limits<RecvRequest<'_>> for RawSrq {
    #[inline(always)]
    fn deny(&self) -> u64 {
        self.limits.deny()
    }

    #[inline(always)]
    fn known(&self, wr: &RecvRequest<'_>) -> bool {
        self.limits.known(wr)
    }

    fn depth(&self) -> u32 {
        self.max_wr()
    }

    fn fits(&self, wr: &RecvRequest<'_>) -> bool {
        self.limits.fits(wr)
    }

    fn refusal(&self, wr: &RecvRequest<'_>) -> WrError {
        self.limits.refusal(wr)
    }
}
