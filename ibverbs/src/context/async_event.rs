//! Asynchronous events: reading them (`ibv_get_async_event`, `ibv_ack_async_event`) and
//! their descriptions (`ibv_event_type_str`). The events themselves are plain values, in
//! `types/async_event.rs`, which the raw layer fills.

use std::fmt;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::context::{raw, Context};
use crate::error::{Error, Result};
use crate::types::{AsyncEvent, AsyncEventKind, EventSource};

impl AsyncEventKind {
    /// The verbs description, such as `"port active"` (`ibv_event_type_str`).
    pub fn as_str(self) -> &'static str {
        raw::event_type_str(self.raw())
            .to_str()
            .unwrap_or("unknown")
    }
}

/// The `ibv_event_type_str` description.
impl fmt::Display for AsyncEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for AsyncEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.source {
            EventSource::Port(port) => write!(f, "{} on port {port}", self.kind),
            _ => fmt::Display::fmt(&self.kind, f),
        }
    }
}

impl Context {
    /// Waits for the next asynchronous event (`ibv_get_async_event`) and acknowledges it
    /// (`ibv_ack_async_event`) after copying it.
    ///
    /// Blocks until an event arrives; see [`Context::wait_async_event`] for a timeout.
    pub fn get_async_event(&self) -> Result<AsyncEvent> {
        loop {
            if let Some(event) = self.try_get_async_event()? {
                return Ok(event);
            }
            // The fd is non-blocking (an async event stream made it so): wait for it.
            self.inner.raw.poll_async_fd(-1)?;
        }
    }

    /// Reads the next asynchronous event if one is queued (`ibv_get_async_event`,
    /// `ibv_ack_async_event`); `None` if the fd is non-blocking and has none (`EAGAIN`).
    pub(crate) fn try_get_async_event(&self) -> Result<Option<AsyncEvent>> {
        let event = match self.inner.raw.get_async_event() {
            Ok(event) => event,
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
            Err(source) => {
                return Err(Error::Verb {
                    verb: "ibv_get_async_event",
                    source,
                })
            }
        };
        self.inner.ports.event(event.kind);
        Ok(Some(event))
    }

    /// Waits up to `timeout` for the next asynchronous event; `None` if none came.
    ///
    /// Polls the event file descriptor, then calls [`Context::get_async_event`]. If other
    /// threads also read events of this context, one of them may take the event first and
    /// this call then blocks until the next one.
    pub fn wait_async_event(&self, timeout: Duration) -> Result<Option<AsyncEvent>> {
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        if self.inner.raw.poll_async_fd(ms)? {
            self.get_async_event().map(Some)
        } else {
            Ok(None)
        }
    }

    /// The file descriptor that becomes readable when an asynchronous event is pending
    /// (`ibv_context::async_fd`), to wait on in an event loop of the caller's; once it is
    /// readable, take the event with [`Context::wait_async_event`] (a zero timeout) or
    /// [`Context::get_async_event`]. The `tokio` feature's `AsyncEvents` waits for it on
    /// the reactor.
    ///
    /// # Safety
    /// The descriptor may only be waited on for readiness. The caller must not read from it
    /// (`read`, `ibv_get_async_event`, anything that does), duplicate it for anything that
    /// reads, or close it. An event about a CQ, QP, SRQ or WQ read past the context is never
    /// acknowledged, and that object's destroy verb then blocks forever in its drop. It is
    /// open while the context lives.
    pub unsafe fn async_raw_fd(&self) -> RawFd {
        self.async_fd()
    }

    /// The async event descriptor, for the crate's own waits.
    pub(crate) fn async_fd(&self) -> RawFd {
        self.inner.raw.async_fd()
    }
}
