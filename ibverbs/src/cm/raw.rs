//! The FFI calls the CM's parts share: the lock around librdmacm's table of ids, and
//! librdmacm's device list ([`DeviceList`], which keeps a device context open for
//! `device.rs`). The other raw files of `cm/`: the channel's (`channel/raw.rs`), its
//! events' (`channel/event/raw.rs`), the id's (`channel/id/raw.rs`), the addresses' C forms
//! (`addr/raw.rs`); beside them only `device.rs` (the promise that a device context stays
//! open) and `channel/id/lend.rs` (a lent QP's owner) hold an unsafe block.

use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rdmacm_sys as cm;

use crate::ffi;

/// librdmacm's device list (`rdma_get_devices`), freed on drop (`rdma_free_devices`).
/// While it lives, librdmacm keeps every listed device context open (each is counted as
/// in use), even if the last id on the device goes.
pub(crate) struct DeviceList(NonNull<*mut ffi::ibv_context>);

// SAFETY: the list is only freed, once, by librdmacm's thread-safe rdma_free_devices.
unsafe impl Send for DeviceList {}
// SAFETY: as above: nothing is reached through a shared list.
unsafe impl Sync for DeviceList {}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from rdma_get_devices and is freed once.
        unsafe { cm::rdma_free_devices(self.0.as_ptr()) };
    }
}

impl DeviceList {
    /// librdmacm's device list if it names `verbs` (then the list keeps it open), else
    /// `None` (the device was removed, or the list could not be made).
    pub(crate) fn listing(verbs: *mut ffi::ibv_context) -> Option<Self> {
        // SAFETY: no count wanted; the result is checked.
        let raw = unsafe { cm::rdma_get_devices(std::ptr::null_mut()) };
        let list = DeviceList(NonNull::new(raw)?);
        let mut p = list.0.as_ptr();
        // SAFETY: the list is NULL-terminated and valid until freed (list's drop).
        unsafe {
            while !(*p).is_null() {
                if *p == verbs {
                    return Some(list);
                }
                p = p.add(1);
            }
        }
        None
    }
}

/// Held around every librdmacm call that adds an id to librdmacm's table of ids or takes
/// one out (`rdma_create_id`, `rdma_get_cm_event`, which creates the id of a connect
/// request, and `rdma_destroy_id`). rdma-core 44 adds under a lock of its own but takes out
/// without it, after the kernel has freed the id's number, which a new id on another thread
/// may already have been given: the removal can then clear the new id's entry, or free the
/// table's chunk while the new entry is written into it (found by valgrind DRD over the
/// async tests). Id set-up is not a hot path; one lock for the process closes it.
///
/// Reading an event holds it until the event is copied (then it is acknowledged): reading a
/// multicast join's event, librdmacm attaches the id's QP to the group, so leaving a group
/// (`rdma_leave_multicast`, which detaches the QP) and setting or clearing the QP pointer
/// of an id with joins (`create_qp`, `take_qp`, drop) hold it too, and the QP is never
/// attached while it is detached or leaves the id. `rdma_leave_multicast` and
/// `rdma_destroy_id` wait for the acknowledgement of the events read: under the lock, that
/// is at most one read just before, whose acknowledgement needs nothing but the event.
static ID_TABLE: Mutex<()> = Mutex::new(());

/// Takes [`ID_TABLE`] (a panic while it was held left nothing to repair: it guards no data).
pub(crate) fn id_table() -> MutexGuard<'static, ()> {
    ID_TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}
