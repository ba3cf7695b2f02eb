//! The measured loops, one per perftest `run_iter_*` function: what is posted when, what is
//! timestamped, and how completions are counted. Request building (`post`), completion
//! polling (`cq`), the duration timer (`timer`) and liveness (`watchdog`) are their own
//! rooms; the loops are `bw` and `lat`. The loops know the peer only as [`Target`]s.

mod bw;
mod cq;
mod credit;
mod lat;
mod post;
mod timer;
mod watchdog;

pub use bw::{bw_bidir, bw_recv, bw_send, warm_up};
pub use lat::{lat_read, lat_send, lat_write, LatSamples};
pub use post::{post_receives, Target};
pub use watchdog::{Watchdog, STALL};

use super::options::{Limiter, Timed};
use super::rdma::Run;
use super::types::{AtomicOp, Verb};

/// Completions taken per poll (perftest's `CTX_POLL_BATCH`).
const POLL_BATCH: usize = 16;

/// What a sending loop needs to know.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The operation.
    pub verb: Verb,
    /// Message size.
    pub size: u64,
    /// Iterations per QP (ignored with a duration).
    pub iters: u64,
    /// Send queue depth.
    pub tx_depth: u64,
    /// One completion per this many requests.
    pub cq_mod: u64,
    /// Requests per post.
    pub post_list: u64,
    /// Whether per-message timestamps are kept.
    pub no_peak: bool,
    /// Send inline.
    pub inline: bool,
    /// Atomic operation.
    pub atomic: AtomicOp,
    /// Duration mode.
    pub duration: Option<Timed>,
    /// Receive queue depth (send tests).
    pub rx_depth: u64,
    /// The SW rate limiter: messages per second and per burst.
    pub pacing: Option<Pacing>,
}

/// perftest's SW rate limiter: bursts of `burst` messages (over all QPs), each starting
/// `1 / (per_second / burst)` seconds after the one before.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pacing {
    /// Messages per second.
    pub per_second: f64,
    /// Messages per burst.
    pub burst: u64,
}

impl Plan {
    /// The plan of `run` for messages of `size` bytes.
    pub fn new(run: &Run, size: u64) -> Plan {
        let verb = run.test.verb();
        let (q, t) = (&run.queues, &run.traffic);
        let inline_size = u64::from(run.port.inline_size);
        Plan {
            verb,
            size,
            iters: t.iters,
            tx_depth: q.tx_depth.into(),
            cq_mod: q.cq_mod.into(),
            post_list: q.post_list.into(),
            no_peak: run.report.no_peak,
            inline: matches!(verb, Verb::Send | Verb::Write) && size <= inline_size,
            atomic: t.atomic,
            duration: t.duration,
            rx_depth: q.rx_depth.into(),
            pacing: run
                .qos
                .rate_limit
                .as_ref()
                .filter(|r| r.limiter == Limiter::Sw)
                .map(|r| Pacing {
                    per_second: r.per_second(size),
                    burst: r.burst.max(1).into(),
                }),
        }
    }

    /// Whether post `k` of a QP asks for a completion: every `cq_mod`-th, and the last.
    #[inline]
    fn signaled(&self, k: u64) -> bool {
        k % self.cq_mod == self.cq_mod - 1 || (self.duration.is_none() && k + 1 == self.iters)
    }
}

/// `n` zeroed time stamps whose pages are written now, before the measured loop (as
/// perftest's `memset` of its arrays), so that the loop takes no page fault for them (a
/// `vec![0; n]` gets fresh zero pages, faulted in one by one at the first stamp on each).
fn stamps(n: usize) -> Vec<u64> {
    let mut v = vec![0; n];
    // Opaque to the optimizer, which would otherwise drop the fill of a buffer known zero.
    std::hint::black_box(&mut v).fill(0);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signaled_requests() {
        let plan = Plan {
            verb: Verb::Write,
            size: 64,
            iters: 250,
            tx_depth: 128,
            cq_mod: 100,
            post_list: 1,
            no_peak: false,
            inline: false,
            atomic: AtomicOp::FetchAndAdd,
            duration: None,
            rx_depth: 1,
            pacing: None,
        };
        let signaled: Vec<u64> = (0..250).filter(|&k| plan.signaled(k)).collect();
        assert_eq!(signaled, [99, 199, 249]);
        let d = Plan {
            duration: Some(Timed {
                seconds: 5,
                margin: 1,
            }),
            ..plan
        };
        assert!(!d.signaled(249));
    }
}
