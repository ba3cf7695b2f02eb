//! A periodic timer on tokio's reactor: a `timerfd`, which needs only the I/O driver that
//! the completion channels already need. tokio's own timers need the time driver, and
//! panic in a runtime built without it (`enable_time`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use ::tokio::io::unix::AsyncFd;

use super::reactor::register;

/// Ticks once per period (periods missed while nobody polled fold into one tick).
#[derive(Debug)]
pub(crate) struct Ticker {
    fd: AsyncFd<OwnedFd>,
}

impl Ticker {
    /// Starts ticking every `period` (at least 1 ns); fails outside a tokio runtime or in
    /// one without its I/O driver.
    pub(crate) fn new(period: Duration) -> io::Result<Ticker> {
        let flags = libc::TFD_NONBLOCK | libc::TFD_CLOEXEC;
        // SAFETY: timerfd_create takes no pointers; its result is checked.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let every = libc::timespec {
            tv_sec: libc::time_t::try_from(period.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: period.subsec_nanos().into(),
        };
        let spec = libc::itimerspec {
            it_interval: every,
            it_value: every,
        };
        // SAFETY: `fd` is a timerfd; `spec` is read during the call; no old value is asked for.
        if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the AsyncFd owns `fd`, so it stays open until the registration is gone.
        let fd = unsafe { register(fd, "keepalive timer") }?;
        Ok(Ticker { fd })
    }

    /// Ready once a period ended since the last tick; `Pending` with `cx`'s waker kept.
    pub(crate) fn poll_tick(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let read = guard.try_io(|fd| {
                let mut expirations = [0u8; 8];
                // SAFETY: `expirations` is the 8 writable bytes a timerfd read fills.
                let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
                if n < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
            if let Ok(result) = read {
                return Poll::Ready(result);
            }
        }
    }
}
