//! Completion polling, the one place the loops take completions: busy polling, sleeping on
//! the completion channel with events (`-e`), and perftest's report of a failed completion.

use std::time::Duration;

use rdma_verbs::WorkCompletion;

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
/// completion is signalled (`CompletionQueue::poll_wait`: perftest's `ctx_notify_events`
/// before each poll, without the race of arming after the wait).
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

/// The events half of [`poll_or_wait`]: wait on the channel a second at a time, checking
/// that the peer is still there between waits.
#[cold]
fn wait(cq: &mut Cq, wc: &mut [WorkCompletion], wd: &mut Watchdog<'_>) -> Result<usize> {
    loop {
        let n = cq
            .cq
            .poll_wait(wc, Some(Duration::from_secs(1)))
            .ctx("Failed to get cq_event")?
            .len();
        if n > 0 {
            return Ok(n);
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
