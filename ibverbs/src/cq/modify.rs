//! Changing a completion queue after creation: `ibv_resize_cq` and `ibv_modify_cq`.

use crate::cq::CompletionQueue;
use crate::error::{check, Error, Result};

impl CompletionQueue {
    /// Resizes the CQ to at least `min_entries` entries (`ibv_resize_cq`);
    /// [`capacity`](Self::capacity) tells what the provider made of it.
    ///
    /// Checked first: 0 fails with [`Error::OutOfRange`], more than the device's `max_cqe`
    /// with [`Error::DeviceLimit`]. Fewer entries than the completions the CQ holds is
    /// refused by the provider (`EINVAL`): [`Error::InvalidArgument`] naming the size. A
    /// provider without the verb gives [`Error::Unsupported`].
    pub fn resize(&mut self, min_entries: u32) -> Result<()> {
        let ctx = self.inner().context();
        let cqe = ctx.checked_cqe(min_entries)?;
        if cqe == 0 {
            let max = ctx.device_limits()?.max_cqe;
            return Err(Error::OutOfRange {
                what: "CQ entries",
                value: 0,
                min: 1,
                max: u64::try_from(max).unwrap_or(0),
            });
        }
        let rc = self.resize_cq(cqe);
        let errno = if rc < 0 {
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
        } else {
            rc
        };
        match errno {
            libc::EINVAL => Err(Error::InvalidArgument {
                what: "CQ entries",
                reason: format!(
                    "the provider refused {min_entries}: fewer than the completions the CQ \
                     holds (ibv_resize_cq: EINVAL)"
                ),
            }),
            libc::EOPNOTSUPP => Err(Error::Unsupported {
                what: "resizing a CQ (ibv_resize_cq)",
                missing: "resize_cq in its provider",
            }),
            _ => check("ibv_resize_cq", rc),
        }
    }

    /// Sets completion moderation (`ibv_modify_cq` with `IBV_CQ_MODERATE`): an event after
    /// `count` completions or `period_us` microseconds, whichever comes first.
    ///
    /// Checked first against the device's `cq_mod_caps`
    /// ([`query_device`](crate::Context::query_device)): a device reporting none fails with
    /// [`Error::Unsupported`], a count or period over its maximum with
    /// [`Error::DeviceLimit`]. A provider without the verb (`EOPNOTSUPP`) gives
    /// [`Error::Unsupported`] too.
    pub fn set_moderation(&self, count: u16, period_us: u16) -> Result<()> {
        let caps = self.inner().context().query_device()?.cq_mod_caps;
        if caps.max_cq_count == 0 && caps.max_cq_period == 0 {
            return Err(Error::Unsupported {
                what: "CQ moderation (ibv_modify_cq)",
                missing: "cq_mod_caps in ibv_device_attr_ex",
            });
        }
        for (value, max, what, limit) in [
            (
                count,
                caps.max_cq_count,
                "CQ moderation count",
                "max_cq_count",
            ),
            (
                period_us,
                caps.max_cq_period,
                "CQ moderation period",
                "max_cq_period",
            ),
        ] {
            if value > max {
                return Err(Error::DeviceLimit {
                    what,
                    value: value.into(),
                    limit,
                    max: max.into(),
                });
            }
        }
        let rc = self.moderate_cq(count, period_us);
        if rc == libc::EOPNOTSUPP {
            return Err(Error::Unsupported {
                what: "CQ moderation (ibv_modify_cq)",
                missing: "modify_cq in its provider",
            });
        }
        check("ibv_modify_cq", rc)
    }
}
