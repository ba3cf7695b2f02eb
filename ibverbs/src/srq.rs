//! Shared receive queues: `struct ibv_srq`.

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;
use crate::limits::RecvLimits;
use crate::pd::ProtectionDomain;
use crate::post_error::PostError;
use crate::wr::{post_list, Limits, RecvRequest};

/// A shared receive queue (`ibv_create_srq`): receives that several QPs draw from.
///
/// Clones share the SRQ; it is destroyed after the last clone and the last QP using it.
#[derive(Clone)]
pub struct SharedReceiveQueue {
    inner: Arc<Inner>,
}

struct Inner {
    raw: NonNull<ffi::ibv_srq>,
    /// The size `ibv_create_srq` granted (it writes it back into the request).
    attr: ffi::ibv_srq_attr,
    limits: RecvLimits,
    pd: ProtectionDomain,
}

// SAFETY: SRQs may be used from any thread; posting is thread-safe.
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: QPs using the SRQ hold a clone, so none is left.
        let rc = unsafe { ffi::ibv_destroy_srq(self.raw.as_ptr()) };
        drop_error::report("ibv_destroy_srq", rc);
    }
}

impl ProtectionDomain {
    /// Creates a shared receive queue of at least `max_wr` requests of `max_sge` entries
    /// (`ibv_create_srq`).
    ///
    /// Sizes over the device's `max_srq_wr` / `max_srq_sge` (or a device without shared
    /// receive queues, `max_srq` 0) fail with [`Error::DeviceLimit`] before the call.
    pub fn create_srq(&self, max_wr: u32, max_sge: u32) -> Result<SharedReceiveQueue> {
        let dev = self.context().device_limits()?;
        for (what, value, limit, max) in [
            ("shared receive queues", 1, "max_srq", dev.max_srq),
            ("SRQ work requests", max_wr, "max_srq_wr", dev.max_srq_wr),
            (
                "SRQ scatter/gather entries",
                max_sge,
                "max_srq_sge",
                dev.max_srq_sge,
            ),
        ] {
            let max = u32::try_from(max).unwrap_or(0);
            if value > max {
                return Err(Error::DeviceLimit {
                    what,
                    value: value.into(),
                    limit,
                    max: max.into(),
                });
            }
        }
        // Zeroed in place, padding included: ibv_cmd_create_srq copies the whole struct into
        // an ibv_srq_init_attr_ex, whose comp_mask lies in this struct's tail padding, which
        // a struct literal leaves uninitialised.
        let mut attr = std::mem::MaybeUninit::<ffi::ibv_srq_init_attr>::zeroed();
        // SAFETY: all zero bytes are a valid ibv_srq_init_attr (integers, a null pointer).
        let attr = unsafe { attr.assume_init_mut() };
        attr.attr.max_wr = max_wr;
        attr.attr.max_sge = max_sge;
        // SAFETY: the PD is live and attr is initialised.
        let raw = unsafe { ffi::ibv_create_srq(self.as_raw(), attr) };
        Ok(SharedReceiveQueue {
            inner: Arc::new(Inner {
                raw: check_ptr("ibv_create_srq", raw)?,
                attr: attr.attr,
                limits: RecvLimits::new(attr.attr.max_wr, attr.attr.max_sge),
                pd: self.clone(),
            }),
        })
    }
}

impl SharedReceiveQueue {
    /// The raw `ibv_srq`, valid while the SRQ lives.
    pub fn as_raw(&self) -> *mut ffi::ibv_srq {
        self.inner.raw.as_ptr()
    }

    /// The protection domain.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.inner.pd
    }

    /// Requests the SRQ holds, as created (at least what was asked).
    pub fn max_wr(&self) -> u32 {
        self.inner.attr.max_wr
    }

    /// Scatter/gather entries per request, as created: the most `post_recv` accepts.
    pub fn max_sge(&self) -> u32 {
        self.inner.attr.max_sge
    }

    /// Posts a list of receive requests (`ibv_post_srq_recv`). Every request is first
    /// checked against [`max_sge`](Self::max_sge) and the 2^31-byte message limit; if one
    /// is refused ([`Error::Request`](crate::Error::Request)), none is posted.
    pub fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        let queue = || ("ibv_post_srq_recv", self.inner.limits.depth());
        post_list(wrs, &self.inner.limits, queue, |head, bad| {
            // SAFETY: the SRQ is live; every request was checked against its limits and
            // every SGE borrows a live registered region.
            unsafe { ffi::ibv_post_srq_recv(self.as_raw(), head, bad) }
        })
    }
}

impl fmt::Debug for SharedReceiveQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the SRQ is live.
        let handle = unsafe { (*self.as_raw()).handle };
        f.debug_struct("SharedReceiveQueue")
            .field("handle", &handle)
            .finish()
    }
}
