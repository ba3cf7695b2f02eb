//! perftest's receive credits in the send bandwidth loops, on iWARP (`ib_send_bw`'s
//! `send_rcredit`; the memory is `rdma::Credits`):
//! - a sender posts on a QP only while it stays less than the RX depth ahead of the count
//!   the receiver last wrote into its credit slot (`post_list` at a time);
//! - a receiver counts its receives per QP and, at every third of the RX depth (and at
//!   every multiple of it), writes the count into the sender's slot, a signaled RDMA write
//!   of 4 bytes whose completion (an `RDMA_WRITE` on the send CQ, work request ID the QP's
//!   index) shares the send queue with the QP's sends: at most TX depth in flight in all;
//! - each loop waits for its writes to complete before it returns.
//!
//! Unlike perftest, which posts a write at once and, when the send queue is full, takes
//! send completions until it can, a write that finds no room here waits for the loop's next
//! turn (which takes the send completions), and a count due when the loop ends is not sent:
//! the sender has sent everything by then, and a late write could land after the sender
//! cleared its slots for the next size.

use rdma_verbs::{SendRequest, WcOpcode, WorkCompletion};

use super::cq::completion_error;
use super::post::Target;
use super::watchdog::Watchdog;
use super::{Plan, POLL_BATCH};
use crate::perftest::rdma::{Cq, Credits, Queues, COUNT_LEN};
use crate::perftest::types::{Ctx as _, Result};

/// The credits of one measurement: this side's slots, and its receive counts and writes.
pub struct Credit<'a> {
    credits: &'a mut Credits,
    /// A count is written every this many receives (a third of the RX depth, at least 1).
    every: u64,
    rx_depth: u64,
    tx_depth: u64,
    /// Receives per QP.
    rcnt: Vec<u64>,
    /// Per QP, whether a count is due.
    due: Vec<bool>,
    /// Per QP, writes posted and not completed.
    in_flight: Vec<u64>,
}

impl<'a> Credit<'a> {
    /// The credits of a measurement of `plan` on `nq` QPs, if the test has them
    /// (`credits`): the slots are cleared, as perftest does before each size.
    pub fn of(credits: Option<&'a mut Credits>, plan: &Plan, nq: usize) -> Result<Option<Self>> {
        let Some(credits) = credits else {
            return Ok(None);
        };
        credits.reset()?;
        Ok(Some(Credit {
            credits,
            every: (plan.rx_depth / 3).max(1),
            rx_depth: plan.rx_depth,
            tx_depth: plan.tx_depth,
            rcnt: vec![0; nq],
            due: vec![false; nq],
            in_flight: vec![0; nq],
        }))
    }

    /// Whether QP `q`, with `scnt` messages posted, may post `post_list` more: the
    /// receiver's count keeps it less than the RX depth ahead (perftest's 32-bit window).
    #[inline]
    pub fn may_send(&self, q: usize, scnt: u64, post_list: u64) -> Result<bool> {
        let granted = self.credits.granted(q)?;
        Ok(window_open(scnt, post_list, granted, self.rx_depth))
    }

    /// Slots of QP `q`'s send queue that its writes hold.
    #[inline]
    pub fn held(&self, q: usize) -> u64 {
        self.in_flight[q]
    }

    /// Whether a count waits for room in a send queue.
    #[inline]
    pub fn pending(&self) -> bool {
        self.due.contains(&true)
    }

    /// Whether writes are in flight.
    #[inline]
    pub fn writing(&self) -> bool {
        self.in_flight.iter().any(|&n| n > 0)
    }

    /// A receive on QP `q` (after its receive was posted again): a count is due at every
    /// `every`-th receive of each RX depth's worth, as perftest counts.
    #[inline]
    pub fn received(&mut self, q: usize) {
        self.rcnt[q] += 1;
        if due_at(self.rcnt[q], self.rx_depth, self.every) {
            self.due[q] = true;
        }
    }

    /// Writes the counts due into the peer's slots (`targets`), on each QP whose send queue
    /// has room: `sending(q)` slots of it hold this side's sends.
    pub fn send_due(
        &mut self,
        queues: &Queues,
        targets: &[Target],
        sending: impl Fn(usize) -> u64,
    ) -> Result<()> {
        for (q, target) in targets.iter().enumerate().take(self.due.len()) {
            if !self.due[q] || sending(q) + self.in_flight[q] >= self.tx_depth {
                continue;
            }
            self.credits.set_outgoing(q, self.rcnt[q] as u32)?;
            let sge = [self.credits.outgoing(q)?];
            let slot = target.remote(0, COUNT_LEN);
            let mut wr = [SendRequest::write(q as u64, &sge, slot).signaled()];
            queues.qps[q].post_send(&mut wr).ctx(format_args!(
                "Couldn't post send qp {q} credit = {}",
                self.rcnt[q]
            ))?;
            self.due[q] = false;
            self.in_flight[q] += 1;
        }
        Ok(())
    }

    /// Whether `c`, a completion of the send CQ, is one of the writes (a failed one is
    /// not: its operation is unknown, and the caller reports it).
    #[inline]
    pub fn is_write(c: &WorkCompletion) -> bool {
        c.is_success() && c.opcode() == WcOpcode::RdmaWrite
    }

    /// A write completed (`c`, [`is_write`](Self::is_write), or any completion of a send
    /// CQ that carries only writes): a failed one is an error.
    #[inline]
    pub fn written(&mut self, c: &WorkCompletion, wd: &mut Watchdog<'_>) -> Result<()> {
        let q = c.wr_id() as usize;
        if !c.is_success() {
            return Err(completion_error(
                c,
                "server",
                format!("credit={}", self.rcnt.get(q).copied().unwrap_or(0)),
            ));
        }
        if let Some(n) = self.in_flight.get_mut(q) {
            *n = n.saturating_sub(1);
        }
        wd.progress();
        Ok(())
    }

    /// Waits for the writes in flight (perftest's `clean_scq_credit`), passing over the
    /// completions of sends.
    pub fn drain(&mut self, send_cq: &Cq, wd: &mut Watchdog<'_>) -> Result<()> {
        let mut wc = [WorkCompletion::default(); POLL_BATCH];
        while self.writing() {
            let n = super::cq::poll(send_cq, &mut wc)?;
            if n == 0 {
                wd.idle()?;
            }
            // With a duration, sends may still complete after the loop.
            for c in wc[..n]
                .iter()
                .filter(|c| !c.is_success() || Self::is_write(c))
            {
                self.written(c, wd)?;
            }
        }
        Ok(())
    }
}

/// Whether a sender with `scnt` messages posted may post `post_list` more when the receiver
/// has counted `granted`: it stays less than `rx_depth` ahead, in perftest's 32-bit
/// arithmetic (the count on the wire is 32 bits).
#[inline]
fn window_open(scnt: u64, post_list: u64, granted: u32, rx_depth: u64) -> bool {
    let ahead = (scnt as u32)
        .wrapping_add(post_list as u32)
        .wrapping_sub(granted);
    u64::from(ahead) < rx_depth
}

/// Whether the `rcnt`-th receive makes a count due: every `every`-th of each `rx_depth`.
#[inline]
fn due_at(rcnt: u64, rx_depth: u64, every: u64) -> bool {
    (rcnt % rx_depth) % every == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_like_perftest() {
        // RX depth 16: 15 ahead of the count at most.
        assert!(window_open(14, 1, 0, 16));
        assert!(!window_open(15, 1, 0, 16));
        assert!(window_open(15, 1, 5, 16));
        // Across the 32-bit wrap of the counts.
        let scnt = u64::from(u32::MAX) + 3;
        assert!(window_open(scnt, 1, u32::MAX - 5, 16));
        assert!(!window_open(scnt, 1, u32::MAX - 20, 16));
    }

    #[test]
    fn counts_due_like_perftest() {
        // RX depth 20, every 6: at 6, 12, 18, 20, 26, ...
        let due: Vec<u64> = (1..=40).filter(|&r| due_at(r, 20, 6)).collect();
        assert_eq!(due, [6, 12, 18, 20, 26, 32, 38, 40]);
    }
}
