//! Completion polling, the one place the loops take completions: busy polling, sleeping on
//! the completion channel with events (`-e`), and perftest's report of a failed completion.

use std::os::fd::AsRawFd;

use ibverbs::WorkCompletion;

use super::watchdog::Watchdog;
use crate::perftest::rdma::Cq;
use crate::perftest::types::{Ctx as _, Error, Result};

/// Polls `cq` once, without sleeping even with events (`ibv_poll_cq`); the number of
/// completions now in `wc`.
#[inline]
pub fn poll(cq: &Cq, wc: &mut [WorkCompletion]) -> Result<usize> {
    Ok(cq.cq.poll(wc).ctx("poll CQ failed")?.len())
}

/// Polls `cq`. With events (`-e`) and nothing there, sleeps on the channel until a
/// completion is signalled; perftest's `ctx_notify_events` before each poll, without the
/// race of arming after the wait.
pub fn poll_or_wait(
    cq: &mut Cq,
    wc: &mut [WorkCompletion],
    wd: &mut Watchdog<'_>,
) -> Result<usize> {
    let n = poll(cq, wc)?;
    if n > 0 || cq.channel.is_none() {
        return Ok(n);
    }
    wait(cq, wc, wd)
}

/// The events half of [`poll_or_wait`]: arm the CQ, poll again, then sleep on the channel.
#[cold]
fn wait(cq: &mut Cq, wc: &mut [WorkCompletion], wd: &mut Watchdog<'_>) -> Result<usize> {
    let Some(channel) = &cq.channel else {
        return Ok(0);
    };
    cq.cq
        .req_notify(false)
        .ctx("Couldn't request CQ notification")?;
    let n = poll(cq, wc)?;
    if n > 0 {
        return Ok(n);
    }
    let fd = channel.as_raw_fd();
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the duration of the call, and the channel
        // keeps `fd` open.
        let rc = unsafe { libc::poll(&mut pfd, 1, 1000) };
        if rc > 0 {
            cq.cq.wait().ctx("Failed to get cq_event")?;
            return poll(cq, wc);
        }
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::new(format!(
                "waiting for a completion event: {}",
                std::io::Error::last_os_error()
            )));
        }
        wd.check()?;
    }
}

/// Waits for one completion on `cq`, busy-polling (or sleeping with events); a failed one
/// is an error of `side`.
pub fn one_completion(cq: &mut Cq, wd: &mut Watchdog<'_>, side: &str) -> Result<()> {
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        let n = poll_or_wait(cq, &mut wc, wd)?;
        if n > 0 {
            if !wc[0].is_success() {
                return Err(completion_error(&wc[0], side, String::new()));
            }
            wd.progress();
            return Ok(());
        }
        wd.idle()?;
    }
}

/// A failed completion, as perftest reports it.
pub fn completion_error(wc: &WorkCompletion, side: &str, counts: String) -> Error {
    Error::new(format!(
        " Completion with error at {side}\n Failed status {}: wr_id {} syndrom {:#x}\n {counts}",
        wc.status(),
        wc.wr_id(),
        wc.vendor_err()
    ))
}
