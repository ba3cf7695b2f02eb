//! Kernel features: device capabilities that rxe has on some kernels only (the kernel matrix
//! of scripts/with-rdma), read from the device, never from the kernel version.
//!
//! `WITH_RDMA_EXPECT` (set by scripts/with-rdma in its VM for the kernel it booted, or by you
//! on a native device) lists the features the device must have, comma separated, by
//! [`Feature::name`]. A test that needs a feature asks [`feature`] first: on a device that
//! lacks it, the test is skipped and says so by name, unless the feature is expected, which
//! fails the test.

use std::io::Write;

use rdma_verbs::{Context, DeviceCapFlags, OdpGeneralCaps};

/// A device capability that only some kernels' rxe has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// On-demand paging (`IBV_ODP_SUPPORT` in the general ODP caps): rxe from Linux 6.14.
    Odp,
    /// Atomic write (`IB_UVERBS_DEVICE_ATOMIC_WRITE`): rxe from Linux 6.2.
    AtomicWrite,
}

impl Feature {
    /// The feature's name in `WITH_RDMA_EXPECT`.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Odp => "odp",
            Feature::AtomicWrite => "atomic_write",
        }
    }

    /// What the feature is, for messages.
    pub fn label(self) -> &'static str {
        match self {
            Feature::Odp => "ODP",
            Feature::AtomicWrite => "atomic write",
        }
    }

    /// Whether the device of `ctx` reports the feature (`ibv_query_device_ex`).
    pub fn present(self, ctx: &Context) -> bool {
        let attr = ctx.query_device().expect("ibv_query_device_ex");
        match self {
            Feature::Odp => attr.odp_caps.general.contains(OdpGeneralCaps::SUPPORT),
            Feature::AtomicWrite => attr.device_cap_flags.contains(DeviceCapFlags::ATOMIC_WRITE),
        }
    }

    /// Whether `WITH_RDMA_EXPECT` lists the feature; `None` when it is not set.
    pub fn expected(self) -> Option<bool> {
        let list = std::env::var("WITH_RDMA_EXPECT").ok()?;
        Some(list.split(',').any(|f| f.trim() == self.name()))
    }
}

/// Whether a test of `feature` runs on the device of `ctx`: `true` when the device has it.
/// When it does not, the test is skipped (`false`) with a line naming the feature on
/// stderr (past the test harness's capture), unless `WITH_RDMA_EXPECT` lists it: then this
/// panics.
pub fn feature(ctx: &Context, feature: Feature) -> bool {
    if feature.present(ctx) {
        return true;
    }
    let (name, label) = (feature.name(), feature.label());
    let why = match feature.expected() {
        Some(true) => panic!(
            "the device has no {label}, but WITH_RDMA_EXPECT lists {name}: this kernel's rxe \
             should have it"
        ),
        Some(false) => "(expected)",
        None => "(WITH_RDMA_EXPECT is not set: nothing is expected)",
    };
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let line = format!("{test}: skipped: rxe on this kernel has no {label} {why}\n");
    // Written to the process's stderr, not through eprintln!, which the harness captures.
    let _ = std::io::stderr().write_all(line.as_bytes());
    false
}
