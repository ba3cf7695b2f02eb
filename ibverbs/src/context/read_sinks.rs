//! iWARP's rule for the sink of an RDMA read ([`IwarpRule::ReadSinkNeedsRemoteWrite`]): the
//! local keys of the regions of an iWARP device that were registered without remote write,
//! which a read may not land in. Kept by the context of an iWARP device only; the regions
//! note and forget themselves ([`MemoryRegion`](crate::MemoryRegion), `DmaBufRegion`), and a
//! read posted on an iWARP QP is checked against it.
//!
//! [`IwarpRule::ReadSinkNeedsRemoteWrite`]: crate::IwarpRule::ReadSinkNeedsRemoteWrite

use std::collections::HashSet;
use std::sync::Mutex;

use crate::ffi;
use crate::types::AccessFlags;

/// The local keys barred from being a read's sink.
#[derive(Debug, Default)]
pub(crate) struct ReadSinks {
    barred: Mutex<HashSet<u32>>,
}

impl ReadSinks {
    fn barred(&self) -> std::sync::MutexGuard<'_, HashSet<u32>> {
        // A panic elsewhere leaves a set that is whole (each operation is one call).
        self.barred.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A region registered (or re-registered) with `lkey` and `access`.
    pub(crate) fn note(&self, lkey: u32, access: AccessFlags) {
        if access.contains(AccessFlags::REMOTE_WRITE) {
            self.barred().remove(&lkey);
        } else {
            self.barred().insert(lkey);
        }
    }

    /// The region of `lkey` is about to be deregistered (its key may be handed out again).
    pub(crate) fn forget(&self, lkey: u32) {
        self.barred().remove(&lkey);
    }

    /// Whether none of `sges` is in a region registered without remote write. Keys the
    /// crate did not register (`Sge::from_raw`) are not known to be barred.
    pub(crate) fn allow(&self, sges: &[ffi::ibv_sge]) -> bool {
        let barred = self.barred();
        barred.is_empty() || sges.iter().all(|s| !barred.contains(&s.lkey))
    }
}
