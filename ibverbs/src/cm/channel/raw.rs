//! The FFI calls of an event channel (`struct rdma_event_channel`): every unsafe block of
//! `channel.rs`; the events' are in `event/raw.rs`, the id's in `id/raw.rs` (and a lent
//! QP's in `id/lend.rs`).
//!
//! [`ChannelInner`] owns the channel, and its methods are safe because a live handle means a
//! live channel. It is the leaf of the folder's raw layers: an id holds its channel, and an
//! event is read from it.

use std::os::fd::RawFd;
use std::ptr::NonNull;

use rdmacm_sys as cm;

use crate::error::{check_ptr, Result};
use crate::fd::{set_nonblocking, wait_readable};

/// The channel itself, shared by the [`EventChannel`](super::EventChannel) handles and the
/// ids created on it: destroyed when the last of them goes (`rdma_destroy_event_channel`).
pub(crate) struct ChannelInner {
    raw: NonNull<cm::rdma_event_channel>,
}

// SAFETY: an event channel is an fd and its number; librdmacm's calls on it are thread-safe
// (each reads whole events from the fd).
unsafe impl Send for ChannelInner {}
// SAFETY: as above.
unsafe impl Sync for ChannelInner {}

impl Drop for ChannelInner {
    fn drop(&mut self) {
        // SAFETY: the channel is live and every id created on it holds this Arc (RawCmId), so
        // all of them are destroyed.
        unsafe { cm::rdma_destroy_event_channel(self.raw.as_ptr()) };
    }
}

impl ChannelInner {
    /// `rdma_create_event_channel`, then its fd made non-blocking.
    pub(crate) fn create() -> Result<Self> {
        // SAFETY: no arguments; the result is checked.
        let raw = check_ptr("rdma_create_event_channel", unsafe {
            cm::rdma_create_event_channel()
        })?;
        let channel = ChannelInner { raw };
        set_nonblocking(channel.fd())?;
        Ok(channel)
    }

    /// The raw channel, valid while this lives.
    pub(crate) fn ptr(&self) -> *mut cm::rdma_event_channel {
        self.raw.as_ptr()
    }

    /// The channel's descriptor.
    pub(crate) fn fd(&self) -> RawFd {
        // SAFETY: the channel is live; librdmacm sets fd at creation and never changes it.
        unsafe { (*self.ptr()).fd }
    }

    /// Whether the channel has an event unread (its fd is readable now; no wait).
    pub(crate) fn has_unread(&self) -> Result<bool> {
        wait_readable(self.fd(), 0)
    }

    /// Polls the fd until it is readable or `ms` milliseconds have passed (-1: no limit);
    /// a signal ends the wait early. Whether an event is there is for the next read to say
    /// (another reader may take it first).
    pub(crate) fn poll(&self, ms: i32) -> Result<()> {
        match wait_readable(self.fd(), ms) {
            Err(err) if err.raw_os_error() != Some(libc::EINTR) => Err(err),
            _ => Ok(()),
        }
    }
}
