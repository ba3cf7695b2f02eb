//! perftest's `force_dependecies`: what one option changes in, or forbids with, another.

use std::fmt::Write as _;

use super::defaults::{Given, DEFAULT_RX_SEND};
use super::{Options, ATOMIC_SIZE, MAX_INLINE_UD, MAX_SIZE};
use crate::perftest::report::RESULT_LINE;
use crate::perftest::types::{Conn, Error, Result, Test, Verb};

/// Above this size, completion moderation is off unless asked for (`MSG_SIZE_CQ_MOD_LIMIT`).
const CQ_MOD_SIZE_LIMIT: u64 = 8192;
/// Receive depth cap for UC and UD (`UC_MAX_RX`).
const UC_MAX_RX: u64 = 16000;
/// Above this many iterations the peak is not computed (its cost is quadratic).
const PEAK_ITERS_LIMIT: u64 = 20000;

impl Options {
    /// Applies the dependencies, with `given` telling the numbers given from the defaults.
    /// The errors and notes come in perftest's order.
    pub(super) fn force_dependencies(&mut self, given: &Given) -> Result<()> {
        let cq_mod_given = given.cq_mod.is_some();
        self.fit_depths();
        self.moderate(cq_mod_given);
        self.fix_size()?;
        self.post_lists(cq_mod_given)?;
        self.duration_mode(given.margin)?;
        self.inline_ud();
        self.peak();
        Ok(())
    }

    /// Depths are capped by the iterations (UD and UC receive depths follow them); send
    /// tests' receive depths are made even.
    fn fit_depths(&mut self) {
        let send = self.test.verb() == Verb::Send;
        let iters = self.traffic.iters;
        let q = &mut self.queues;
        if self.traffic.duration.is_none() {
            q.tx_depth = q.tx_depth.min(iters as u32);
            if send {
                q.rx_depth = q.rx_depth.min(iters as u32);
            }
            if matches!(self.conn, Conn::Ud | Conn::Uc) && q.rx_depth == DEFAULT_RX_SEND {
                q.rx_depth = iters.min(UC_MAX_RX) as u32;
            }
        }
        if send && q.rx_depth % 2 == 1 && !self.size.all {
            q.rx_depth += 1;
        }
    }

    /// Large messages turn completion moderation off unless asked for (with a warning if
    /// it was); the moderation is capped by the TX depth.
    fn moderate(&mut self, cq_mod_given: bool) {
        let q = &mut self.queues;
        let large = self.size.size > CQ_MOD_SIZE_LIMIT && !self.size.all;
        if large && self.conn != Conn::Ud && !q.events {
            if !cq_mod_given {
                q.cq_mod = 1;
            } else if q.cq_mod > 1 {
                self.notes.push_str(RESULT_LINE);
                self.notes
                    .push_str("Warning: Large message requested and CQ moderation enabled\n");
                self.notes
                    .push_str("Warning: It can lead to inaccurate results\n");
            }
        }
        q.cq_mod = q.cq_mod.min(q.tx_depth);
    }

    /// `-a` runs up to [`MAX_SIZE`]; atomics move [`ATOMIC_SIZE`] bytes only.
    fn fix_size(&mut self) -> Result<()> {
        if self.size.all {
            self.size.size = MAX_SIZE;
        }
        if self.test.verb() == Verb::Atomic && self.size.size != ATOMIC_SIZE {
            return Err(Error::new(format!(
                "{RESULT_LINE}Message size cannot be changed for Atomic tests "
            )));
        }
        Ok(())
    }

    /// Post lists: bandwidth tests only, dividing the iterations, setting the moderation
    /// unless it was given (which must then divide them), no longer than the TX depth.
    fn post_lists(&mut self, cq_mod_given: bool) -> Result<()> {
        let q = &mut self.queues;
        if q.post_list <= 1 {
            return Ok(());
        }
        if !self.test.is_bw() {
            return Err(Error::new("Post list is supported in BW tests only"));
        }
        let t = &self.traffic;
        if t.duration.is_none() && t.iters % u64::from(q.post_list) != 0 {
            return Err(Error::new(
                "Number of iterations must be a multiple of post list size",
            ));
        }
        if !cq_mod_given {
            q.cq_mod = q.post_list;
            self.notes.push_str(RESULT_LINE);
            self.notes.push_str(
                "Post List requested - CQ moderation will be the size of the post list\n",
            );
        } else if q.post_list % q.cq_mod != 0 {
            return Err(Error::new(
                "Post list size must be a multiple of CQ moderation",
            ));
        }
        // perftest waits for room for a whole list in the send queue, forever.
        if q.post_list > q.tx_depth {
            return Err(Error::new(format!(
                "Post list size ({}) must not exceed the TX depth ({})",
                q.post_list, q.tx_depth
            )));
        }
        Ok(())
    }

    /// Duration mode counts the iterations and computes no peak; it takes no events, no
    /// `-a`, and margins shorter than half the duration. `margin` is `-f` as given.
    fn duration_mode(&mut self, margin: Option<u32>) -> Result<()> {
        let too_long = || Error::new("please check that DURATION > 2*MARGIN");
        let Some(d) = self.traffic.duration else {
            // perftest checks the default 5 s duration against a margin given without -D.
            if margin.is_some_and(|m| 5 <= 2 * m) {
                return Err(too_long());
            }
            return Ok(());
        };
        self.traffic.iters = 0;
        self.report.no_peak = true;
        if self.queues.events {
            return Err(Error::new("Duration mode doesn't work with events."));
        }
        if self.size.all {
            return Err(Error::new(
                "Duration mode currently doesn't support running on all sizes.",
            ));
        }
        if d.seconds <= 2 * d.margin {
            return Err(too_long());
        }
        Ok(())
    }

    /// UD caps the inline size asked for at [`MAX_INLINE_UD`], with a note.
    fn inline_ud(&mut self) {
        let inline = &mut self.device.inline_size;
        if self.conn == Conn::Ud && inline.is_some_and(|i| i > MAX_INLINE_UD) {
            let _ = writeln!(
                self.notes,
                "{RESULT_LINE}Setting inline size to {MAX_INLINE_UD} (Max inline size in UD)"
            );
            *inline = Some(MAX_INLINE_UD);
        }
    }

    /// No peak for the server of a unidirectional send test (its interval runs from its
    /// first receive), nor above [`PEAK_ITERS_LIMIT`] iterations.
    fn peak(&mut self) {
        let t = &self.traffic;
        if self.test == Test::SendBw && !self.connection.is_client() && !t.duplex {
            self.report.no_peak = true;
        }
        if t.duration.is_none() && t.iters > PEAK_ITERS_LIMIT && self.test.is_bw() {
            self.report.no_peak = true;
        }
    }
}
