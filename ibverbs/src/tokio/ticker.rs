//! A periodic timer on tokio's reactor: a `timerfd`, which needs only the I/O driver that
//! the completion channels already need. tokio's own timers need the time driver, and
//! panic in a runtime built without it (`enable_time`).

use std::io;
use std::os::fd::OwnedFd;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use ::tokio::io::unix::AsyncFd;

use super::raw::{read_timer, register, timerfd, Registered};

/// Ticks once per period (periods missed while nobody polled fold into one tick).
#[derive(Debug)]
pub(crate) struct Ticker {
    fd: AsyncFd<Registered<OwnedFd>>,
}

impl Ticker {
    /// Starts ticking every `period` (at least 1 ns); fails outside a tokio runtime or in
    /// one without its I/O driver.
    pub(crate) fn new(period: Duration) -> io::Result<Ticker> {
        let fd = register(timerfd(period)?, "keepalive timer")?;
        Ok(Ticker { fd })
    }

    /// Ready once a period ended since the last tick; `Pending` with `cx`'s waker kept.
    pub(crate) fn poll_tick(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.fd.poll_read_ready(cx))?;
            let read = guard.try_io(|fd| read_timer(fd.get_ref().owner()));
            if let Ok(result) = read {
                return Poll::Ready(result);
            }
        }
    }
}
