//! Event channels: `struct rdma_event_channel`, the fd CM events arrive on, with what lives
//! on a channel as its children: the ids created on it and the events it delivers.

pub(super) mod event; // CmEvent: what the channel delivers, copied and acknowledged
pub(super) mod id; // CmId: the ids created on the channel

use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdmacm_sys as cm;

use self::event::CmEvent;
use self::id::CmId;
use super::raw::{id_table, ChannelInner};
use super::PortSpace;
use crate::error::{Error, Result};

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
        // SAFETY: no arguments; the result is checked.
        let channel = EventChannel {
            inner: Arc::new(ChannelInner::create()?),
        };
        let fd = channel.fd();
        // SAFETY: fd is the channel's open fd; F_GETFL/F_SETFL take and return plain flags.
        let rc = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags < 0 {
                flags
            } else {
                libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK)
            }
        };
        if rc < 0 {
            return Err(Error::last("fcntl(O_NONBLOCK)"));
        }
        Ok(channel)
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
        // SAFETY: the channel is live; librdmacm sets fd at creation and never changes it.
        unsafe { (*self.ptr()).fd }
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
            self.poll(-1)?;
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
            self.poll(ms)?;
        }
    }

    /// Polls the fd until it is readable or `ms` milliseconds have passed (-1: no limit);
    /// a signal ends the wait early. Whether an event is there is for the next read to say
    /// (another reader may take it first).
    fn poll(&self, ms: i32) -> Result<()> {
        let mut pfd = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: pfd is one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, ms) } < 0 {
            let err = Error::last("poll");
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
        Ok(())
    }

    /// Reads one event if one is queued (`rdma_get_cm_event` on the non-blocking fd), then
    /// acknowledges it; `None` if there was none.
    pub(crate) fn try_get_event(&self) -> Result<Option<CmEvent>> {
        let mut raw = std::ptr::null_mut();
        // A connect request's event carries a new id, and reading a multicast join's event
        // reads (and attaches) its id's QP (see `id_table`); the fd is non-blocking, so the
        // table is held only while librdmacm reads the event and it is copied.
        let table = id_table();
        // SAFETY: the channel is live; raw is a valid out pointer.
        let rc = unsafe { cm::rdma_get_cm_event(self.ptr(), &mut raw) };
        if rc != 0 {
            let err = Error::last("rdma_get_cm_event");
            if err.raw_os_error() == Some(libc::EAGAIN) {
                return Ok(None);
            }
            return Err(err);
        }
        // SAFETY: raw is an event rdma_get_cm_event just returned, not yet acknowledged;
        // take() acknowledges it exactly once, after copying it under the table lock.
        unsafe { CmEvent::take(self, raw, table) }.map(Some)
    }
}

impl std::fmt::Debug for EventChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventChannel")
            .field("fd", &self.fd())
            .finish()
    }
}
