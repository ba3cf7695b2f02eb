//! The raw pieces every part of the CM shares: the event channel itself and the lock around
//! librdmacm's table of ids. A leaf of `cm`: it imports none of the CM's other modules.

use std::ptr::NonNull;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rdmacm_sys as cm;

use crate::error::{check_ptr, Result};

/// The channel itself, shared by the [`EventChannel`] handles and the ids created on it.
pub(super) struct ChannelInner {
    raw: NonNull<cm::rdma_event_channel>,
}

// SAFETY: an event channel is an fd and its number; librdmacm's calls on it are thread-safe
// (each reads whole events from the fd).
unsafe impl Send for ChannelInner {}
// SAFETY: as above.
unsafe impl Sync for ChannelInner {}

impl Drop for ChannelInner {
    fn drop(&mut self) {
        // SAFETY: the channel is live and every id created on it holds this Arc, so all of
        // them are destroyed.
        unsafe { cm::rdma_destroy_event_channel(self.raw.as_ptr()) };
    }
}

impl ChannelInner {
    /// `rdma_create_event_channel`.
    pub(super) fn create() -> Result<Self> {
        // SAFETY: no arguments; the result is checked.
        let raw = check_ptr("rdma_create_event_channel", unsafe {
            cm::rdma_create_event_channel()
        })?;
        Ok(ChannelInner { raw })
    }

    /// The raw channel, valid while this lives.
    pub(super) fn ptr(&self) -> *mut cm::rdma_event_channel {
        self.raw.as_ptr()
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
