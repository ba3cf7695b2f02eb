//! Shared receive queues: `struct ibv_srq`.

mod raw; // the FFI calls of the SRQ (RawSrq): every unsafe block of `srq`

use std::fmt;
use std::sync::Arc;

use crate::context::device_attr::DeviceCapFlags;
use crate::error::{Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::wr::post_error::PostError;
use crate::wr::RecvRequest;
use raw::RawSrq;

/// A shared receive queue (`ibv_create_srq`): receives that several QPs draw from.
///
/// Clones share the SRQ; it is destroyed after the last clone and the last QP using it.
#[derive(Clone)]
pub struct SharedReceiveQueue {
    inner: Arc<RawSrq>,
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
        Ok(SharedReceiveQueue {
            inner: Arc::new(RawSrq::create(self, max_wr, max_sge)?),
        })
    }
}

impl SharedReceiveQueue {
    /// The raw `ibv_srq`, valid while the SRQ lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_srq {
        self.inner.ptr()
    }

    /// The protection domain.
    pub fn pd(&self) -> &ProtectionDomain {
        self.inner.pd()
    }

    /// Requests the SRQ holds: as `ibv_create_srq` granted them (at least what was asked),
    /// or after a [resize](Self::resize) as `ibv_query_srq` reports them (rxe's query
    /// reports its ring's whole capacity, which can be more than the create granted).
    pub fn max_wr(&self) -> u32 {
        self.inner.max_wr()
    }

    /// Scatter/gather entries per request, as created: the most `post_recv` accepts.
    pub fn max_sge(&self) -> u32 {
        self.inner.max_sge()
    }

    /// The SRQ's attributes now (`ibv_query_srq`): its size, entries per request and
    /// limit (0 once the limit event fired, or if none was set). A provider that cannot
    /// query an SRQ (siw) gives [`Error::Unsupported`].
    pub fn query(&self) -> Result<SrqAttributes> {
        let attr = self.inner.query().map_err(|e| match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) => Error::Unsupported {
                what: "querying a shared receive queue (ibv_query_srq)",
                missing: "query_srq in its provider (refused with EOPNOTSUPP; siw has none)",
            },
            _ => e,
        })?;
        Ok(SrqAttributes {
            max_wr: attr.max_wr,
            max_sge: attr.max_sge,
            limit: attr.srq_limit,
        })
    }

    /// Arms the SRQ limit (`ibv_modify_srq` with `IBV_SRQ_LIMIT`): once fewer than `limit`
    /// receives are left in the SRQ, the device raises one
    /// [`AsyncEventKind::SrqLimitReached`](crate::AsyncEventKind::SrqLimitReached) event
    /// (read it with [`Context::get_async_event`](crate::Context::get_async_event); its
    /// source is this SRQ, [`EventSource::Srq`](crate::EventSource::Srq) with the address
    /// of [`AsRaw::as_raw`](crate::AsRaw::as_raw)) and disarms the limit. 0 disarms it.
    ///
    /// A limit over [`max_wr`](Self::max_wr) is [`Error::OutOfRange`], before the call.
    pub fn set_limit(&self, limit: u32) -> Result<()> {
        let max_wr = self.max_wr();
        Error::at_most("SRQ limit", limit.into(), max_wr.into())?;
        let mut attr = ffi::ibv_srq_attr {
            srq_limit: limit,
            ..Default::default()
        };
        self.inner
            .modify(&mut attr, ffi::ibv_srq_attr_mask::IBV_SRQ_LIMIT)
    }

    /// Resizes the SRQ to hold at least `max_wr` requests (`ibv_modify_srq` with
    /// `IBV_SRQ_MAX_WR`); [`max_wr`](Self::max_wr) then tells what was granted.
    ///
    /// Checked before the call: the device can resize SRQs
    /// ([`DeviceCapFlags::SRQ_RESIZE`], else [`Error::Unsupported`]), `max_wr` is at
    /// most the device's `max_srq_wr` ([`Error::DeviceLimit`]) and not under the armed
    /// limit ([`Error::OutOfRange`]). The provider refuses a size under the receives
    /// posted and not yet consumed (`EINVAL`), a number no verb reports: that is an
    /// [`Error::InvalidArgument`] naming the size asked for, the SRQ's size and that limit;
    /// the SRQ is unchanged.
    pub fn resize(&self, max_wr: u32) -> Result<()> {
        let ctx = self.pd().context();
        if !ctx
            .query_device()?
            .device_cap_flags
            .contains(DeviceCapFlags::SRQ_RESIZE)
        {
            return Err(Error::Unsupported {
                what: "resizing a shared receive queue",
                missing: "IBV_DEVICE_SRQ_RESIZE in device_cap_flags",
            });
        }
        let max = u32::try_from(ctx.device_limits()?.max_srq_wr).unwrap_or(0);
        if max_wr > max {
            return Err(Error::DeviceLimit {
                what: "SRQ work requests",
                value: max_wr.into(),
                limit: "max_srq_wr",
                max: max.into(),
            });
        }
        let limit = self.query()?.limit;
        if max_wr < limit {
            return Err(Error::OutOfRange {
                what: "SRQ size under its armed limit",
                value: max_wr.into(),
                min: limit.into(),
                max: max.into(),
            });
        }
        let mut attr = ffi::ibv_srq_attr {
            max_wr,
            ..Default::default()
        };
        match self
            .inner
            .modify(&mut attr, ffi::ibv_srq_attr_mask::IBV_SRQ_MAX_WR)
        {
            Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
                return Err(Error::InvalidArgument {
                    what: "SRQ size",
                    reason: format!(
                        "the provider refused {max_wr} (ibv_modify_srq: EINVAL): fewer than \
                         the receives posted to the SRQ and not yet consumed (its size is {})",
                        self.max_wr()
                    ),
                })
            }
            other => other?,
        }
        let granted = self.query()?.max_wr;
        self.inner.set_max_wr(granted);
        Ok(())
    }

    /// Posts a list of receive requests (`ibv_post_srq_recv`). Every request is first
    /// checked against [`max_sge`](Self::max_sge) and the 2^31-byte message limit; if one
    /// is refused ([`Error::Request`](crate::Error::Request)), none is posted.
    pub fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        self.inner.post_recv(wrs)
    }
}

/// A shared receive queue's attributes (`struct ibv_srq_attr`), from
/// [`SharedReceiveQueue::query`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SrqAttributes {
    /// Requests the SRQ holds.
    pub max_wr: u32,
    /// Scatter/gather entries per request.
    pub max_sge: u32,
    /// The armed limit (0: none).
    pub limit: u32,
}

impl fmt::Debug for SharedReceiveQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedReceiveQueue")
            .field("handle", &self.inner.handle())
            .finish()
    }
}
