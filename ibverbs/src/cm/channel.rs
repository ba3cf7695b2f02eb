//! Event channels: `struct rdma_event_channel`, the fd CM events arrive on, with what lives
//! on a channel as its children: the ids created on it and the events it delivers.

pub(super) mod event; // CmEvent: what the channel delivers, copied and acknowledged
pub(super) mod id; // CmId: the ids created on the channel
mod raw; // ChannelInner, the FFI calls of the channel (its events' and ids' have their own)

use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdmacm_sys as cm;

use self::event::raw::RawEvent;
use self::event::CmEvent;
use self::id::CmId;
use self::raw::ChannelInner;
use super::PortSpace;
use crate::error::Result;

/// An event channel (`rdma_create_event_channel`), destroyed when it and every id created
/// on it are dropped (`rdma_destroy_event_channel`).
///
/// Its fd is non-blocking; [`get_event`](Self::get_event) and
/// [`get_event_timeout`](Self::get_event_timeout) wait for it, and a poll loop of the
/// caller's gets its number from the `unsafe` [`raw_fd`](Self::raw_fd). Each event is
/// copied out and acknowledged (`rdma_ack_cm_event`) before it is returned, so none is left
/// unacknowledged and `rdma_destroy_id` never waits for one; the fd is not handed to safe
/// code (no `AsFd`, no `AsRawFd`), through which an event could be taken and never
/// acknowledged.
#[derive(Clone)]
pub struct EventChannel {
    pub(super) inner: Arc<ChannelInner>,
}

impl EventChannel {
    /// Creates an event channel (`rdma_create_event_channel`) with a non-blocking fd.
    pub fn new() -> Result<Self> {
        Ok(EventChannel {
            inner: Arc::new(ChannelInner::create()?),
        })
    }

    /// The raw `rdma_event_channel`, valid while this channel lives.
    pub(crate) fn ptr(&self) -> *mut cm::rdma_event_channel {
        self.inner.ptr()
    }

    /// The channel's file descriptor, to wait for its readiness in a poll loop of the
    /// caller's; once it is readable, take the event with
    /// [`get_event_timeout`](Self::get_event_timeout) and a zero timeout.
    ///
    /// # Safety
    /// The descriptor may only be waited on for readiness. The caller must not read events
    /// from it (`rdma_get_cm_event`, or the `write` of a command to the fd, which is how
    /// librdmacm reads them), duplicate it for anything that does, close it, or change its
    /// flags (it stays non-blocking). An event taken past the channel is never
    /// acknowledged, and `rdma_destroy_id` then blocks forever in the id's drop. It is open
    /// while the channel lives.
    pub unsafe fn raw_fd(&self) -> RawFd {
        self.fd()
    }

    /// The channel's descriptor, for the crate's own waits.
    pub(crate) fn fd(&self) -> RawFd {
        self.inner.fd()
    }

    /// Creates a CM id on this channel (`rdma_create_id`) in port space `ps`: TCP for RC,
    /// UDP for UD.
    pub fn create_id(&self, ps: PortSpace) -> Result<CmId> {
        CmId::create(self, ps)
    }

    /// Waits for the next event (`rdma_get_cm_event`), then acknowledges it.
    pub fn get_event(&self) -> Result<CmEvent> {
        loop {
            if let Some(event) = self.try_get_event()? {
                return Ok(event);
            }
            self.inner.poll(-1)?;
        }
    }

    /// Waits up to `timeout` for the next event; `None` if none came. An event already
    /// queued costs one system call (no clock read, no poll); a timeout too long to have
    /// an end waits as [`get_event`](Self::get_event) does.
    pub fn get_event_timeout(&self, timeout: Duration) -> Result<Option<CmEvent>> {
        let mut deadline = None;
        loop {
            if let Some(event) = self.try_get_event()? {
                return Ok(Some(event));
            }
            let now = Instant::now();
            let ms = match *deadline.get_or_insert_with(|| now.checked_add(timeout)) {
                Some(end) => {
                    let left = end.saturating_duration_since(now);
                    if left.is_zero() {
                        return Ok(None);
                    }
                    // Rounded up, so that the wait ends at or after the deadline.
                    i32::try_from(left.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
                }
                None => -1,
            };
            self.inner.poll(ms)?;
        }
    }

    /// Reads one event if one is queued (`rdma_get_cm_event` on the non-blocking fd), then
    /// acknowledges it; `None` if there was none.
    pub(crate) fn try_get_event(&self) -> Result<Option<CmEvent>> {
        // The event holds the id table while librdmacm reads it and it is copied (a connect
        // request's event carries a new id, and reading a multicast join's event reads and
        // attaches its id's QP); the fd is non-blocking, so that is short.
        match RawEvent::read(&self.inner)? {
            Some(ev) => CmEvent::take(ev).map(Some),
            None => Ok(None),
        }
    }
}

impl std::fmt::Debug for EventChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventChannel")
            .field("fd", &self.fd())
            .finish()
    }
}
