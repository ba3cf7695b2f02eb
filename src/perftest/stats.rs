//! The statistics perftest reports, computed from tick timestamps exactly as perftest
//! defines them (see the module docs of [`crate::perftest`] for the definitions and their
//! oddities).

use super::wire::ReportMsg;

/// `MB/sec` in perftest is MiB/s.
const MIB: f64 = 1_048_576.0;
/// `Gb/sec` is 10^9 bit/s: 125 000 000 bytes per second.
const GBIT_BYTES: f64 = 125_000_000.0;

/// What a bandwidth run recorded.
#[derive(Clone, Debug, Default)]
pub struct BwSamples {
    /// Post timestamps, indexed by the global post counter (one entry when the peak is
    /// off: the start of the measured interval).
    pub tposted: Vec<u64>,
    /// Completion timestamps, indexed by the global completion counter (one entry when
    /// the peak is off: the end of the measured interval).
    pub tcompleted: Vec<u64>,
    /// Messages counted: per QP with `-n`, in total with `-D`.
    pub iters: u64,
}

/// How to turn [`BwSamples`] into a [`BwReport`].
#[derive(Clone, Copy, Debug)]
pub struct BwShape {
    /// Message size in bytes.
    pub size: u64,
    /// Number of QPs.
    pub num_qps: u64,
    /// Requests per post call.
    pub post_list: u64,
    /// One completion per this many requests.
    pub cq_mod: u64,
    /// Whether the peak is not computed (it is then reported as 0).
    pub no_peak: bool,
    /// Duration mode (`-D`): `iters` is already the total over all QPs.
    pub duration: bool,
    /// `--report_gbits`: Gb/s instead of MiB/s.
    pub gbits: bool,
}

/// A bandwidth result: the numbers perftest prints and exchanges.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BwReport {
    /// Message size in bytes.
    pub size: u64,
    /// Messages.
    pub iters: u64,
    /// Peak bandwidth (MiB/s or Gb/s).
    pub bw_peak: f64,
    /// Average bandwidth (MiB/s or Gb/s).
    pub bw_avg: f64,
    /// Average message rate in millions of messages per second.
    pub msg_rate: f64,
}

impl BwReport {
    /// The sum of two sides' results (bidirectional tests), size and iterations of `self`.
    pub fn plus(&self, other: &BwReport) -> BwReport {
        BwReport {
            size: self.size,
            iters: self.iters,
            bw_peak: self.bw_peak + other.bw_peak,
            bw_avg: self.bw_avg + other.bw_avg,
            msg_rate: self.msg_rate + other.msg_rate,
        }
    }
}

impl From<&BwReport> for ReportMsg {
    /// The results as they cross the wire.
    fn from(r: &BwReport) -> ReportMsg {
        ReportMsg {
            size: r.size,
            iters: r.iters,
            bw_peak: r.bw_peak,
            bw_avg: r.bw_avg,
            msg_rate: r.msg_rate,
        }
    }
}

impl From<ReportMsg> for BwReport {
    /// The peer's results as they came over the wire.
    fn from(m: ReportMsg) -> BwReport {
        BwReport {
            size: m.size,
            iters: m.iters,
            bw_peak: m.bw_peak,
            bw_avg: m.bw_avg,
            msg_rate: m.msg_rate,
        }
    }
}

/// perftest's `ROUND_UP`: the smallest multiple of `align` that is at least `value`.
fn round_up(value: u64, align: u64) -> u64 {
    value.div_ceil(align) * align
}

/// Computes the bandwidth report as perftest's `print_report_bw` does.
///
/// The peak is the best average time per message over every window that starts at a post
/// and ends at a completion; perftest divides integer cycles (truncating), this divides
/// exactly. The average is bytes over the time from the first post to the last completion.
pub fn bw_report(s: &BwSamples, shape: &BwShape, ticks_per_sec: f64) -> BwReport {
    let n = s.iters * shape.num_qps;
    let first_posted = s.tposted.first().copied().unwrap_or(0);
    // (ticks, messages) of the best window so far.
    let mut best = (u64::MAX, 1u64);
    if !shape.no_peak && n > 0 && s.tposted.len() as u64 >= n && s.tcompleted.len() as u64 >= n {
        let post_list = shape.post_list.max(1);
        let cq_mod = shape.cq_mod.max(1);
        // `t / count < best_t / best_count`, compared by cross-multiplication.
        let mut consider = |i: u64, j: u64| {
            let t = s.tcompleted[j as usize].wrapping_sub(s.tposted[i as usize]);
            let count = j - i + 1;
            if u128::from(t) * u128::from(best.1) < u128::from(best.0) * u128::from(count) {
                best = (t, count);
            }
        };
        let mut i = 0;
        while i < n {
            let mut j = round_up(i + 1, cq_mod) - 1;
            while j < n {
                consider(i, j);
                j += cq_mod;
            }
            // The last request is signaled even when `n` is not a multiple of cq_mod.
            if n % cq_mod != 0 {
                consider(i, n - 1);
            }
            i += post_list;
        }
    }
    let iters = if shape.duration { s.iters } else { n };
    let last = if shape.no_peak {
        0
    } else {
        iters.saturating_sub(1) as usize
    };
    let end = s.tcompleted.get(last).copied().unwrap_or(0);
    let test_ticks = end.wrapping_sub(first_posted) as f64;
    let unit = if shape.gbits { GBIT_BYTES } else { MIB };
    let size = shape.size as f64;
    let bw_avg = size * iters as f64 * ticks_per_sec / (test_ticks * unit);
    let msg_rate = iters as f64 * ticks_per_sec / (test_ticks * 1e6);
    let bw_peak = if shape.no_peak {
        0.0
    } else {
        let per_message = best.0 as f64 / best.1 as f64;
        size * ticks_per_sec / (per_message * unit)
    };
    BwReport {
        size: shape.size,
        iters,
        bw_peak,
        bw_avg,
        msg_rate,
    }
}

/// The latency statistics perftest's `print_report_lat` prints, in microseconds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatReport {
    /// Smallest sample.
    pub t_min: f64,
    /// The largest sample kept... which perftest takes one past the kept ones: the
    /// second-largest sample overall.
    pub t_max: f64,
    /// The median of the kept samples.
    pub t_typical: f64,
    /// The mean of the kept samples.
    pub t_avg: f64,
    /// perftest's standard deviation (whole-microsecond deviations, see the module docs).
    pub t_stdev: f64,
    /// The sample at index `ceil(0.99 · kept)` of the sorted samples.
    pub p99: f64,
    /// The sample at index `ceil(0.999 · kept)` of the sorted samples.
    pub p999: f64,
    /// Every sample in µs in the order taken (for `-U`).
    pub unsorted: Vec<f64>,
    /// The kept samples in µs, sorted (for `-H`).
    pub sorted_kept: Vec<f64>,
}

/// How many of the largest samples perftest drops.
const LAT_MEASURE_TAIL: usize = 2;

/// Computes latency statistics from post timestamps as perftest does: the samples are the
/// gaps between consecutive posts, divided by `rtt_factor` (2 for send and write, where a
/// gap is a round trip; 1 for read and atomic).
pub fn lat_report(tposted: &[u64], ticks_per_usec: f64, rtt_factor: f64) -> LatReport {
    let mut delta: Vec<u64> = tposted
        .windows(2)
        .map(|w| w[1].wrapping_sub(w[0]))
        .collect();
    let quotient = ticks_per_usec * rtt_factor;
    let us = |t: u64| t as f64 / quotient;
    let unsorted = delta.iter().map(|&d| us(d)).collect();
    delta.sort_unstable();
    if delta.len() <= LAT_MEASURE_TAIL {
        return LatReport {
            unsorted,
            ..LatReport::default()
        };
    }
    let n = delta.len() - LAT_MEASURE_TAIL;
    let median = if (n - 1) % 2 != 0 {
        (delta[n / 2] + delta[n / 2 - 1]) / 2
    } else {
        delta[n / 2]
    };
    let average = delta[..n].iter().map(|&d| us(d)).sum::<f64>() / n as f64;
    let stdev_sum: f64 = delta[..n]
        .iter()
        .map(|&d| {
            // perftest stores the deviation in an int: whole microseconds, truncated.
            let whole = (average - us(d)) as i64;
            (whole * whole) as f64
        })
        .sum();
    let i99 = (n as f64 * 0.99).ceil() as usize;
    let i999 = (n as f64 * 0.999).ceil() as usize;
    LatReport {
        t_min: us(delta[0]),
        t_max: us(delta[n]),
        t_typical: us(median),
        t_avg: average,
        t_stdev: (stdev_sum / n as f64).sqrt(),
        p99: us(delta[i99.min(delta.len() - 1)]),
        p999: us(delta[i999.min(delta.len() - 1)]),
        unsorted,
        sorted_kept: delta[..n].iter().map(|&d| us(d)).collect(),
    }
}

/// Latency in duration mode (`-D`): the mean per message over the measured interval and the
/// transactions per second, as perftest's `print_report_lat_duration`.
pub fn lat_duration(ticks: u64, iters: u64, ticks_per_usec: f64, rtt_factor: f64) -> (f64, f64) {
    let t = ticks as f64;
    let latency = t / ticks_per_usec / rtt_factor / iters as f64;
    let tps = iters as f64 / (t / (ticks_per_usec * 1e6));
    (latency, tps)
}

/// C's `printf("%g")`: six significant digits, trailing zeros removed, exponent form below
/// 1e-4 and from 1e6.
pub fn c_g(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".to_owned()
        } else if x > 0.0 {
            "inf".to_owned()
        } else {
            "-inf".to_owned()
        };
    }
    // Round to 6 significant digits first; the exponent after rounding decides the form.
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        let decimals = (5 - exp) as usize;
        strip(&format!("{x:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(n_qps: u64, cq_mod: u64, no_peak: bool) -> BwShape {
        BwShape {
            size: 1 << 20,
            num_qps: n_qps,
            post_list: 1,
            cq_mod,
            no_peak,
            duration: false,
            gbits: false,
        }
    }

    #[test]
    fn bw_average_and_rate() {
        // 4 messages of 1 MiB, one completion per 2; first post at 1000, last completion
        // 2 s later with 1 tick = 1 ns.
        let s = BwSamples {
            tposted: vec![1000, 1010, 1020, 1030],
            tcompleted: vec![0, 1_000_001_000, 0, 2_000_001_000],
            iters: 4,
        };
        let r = bw_report(&s, &shape(1, 2, false), 1e9);
        assert_eq!(r.iters, 4);
        assert!((r.bw_avg - 2.0).abs() < 1e-12, "{}", r.bw_avg);
        assert!((r.msg_rate - 2e-6).abs() < 1e-15);
        // Windows (ticks per message): (0,1) 5e8, (0,3) 5e8, (1,1) 1e9-10, (1,3) (2e9-10)/3,
        // (2,3) (2e9-20)/2, (3,3) 2e9-30: the best is 0.5 s per MiB.
        assert!((r.bw_peak - 2.0).abs() < 1e-12, "{}", r.bw_peak);
    }

    #[test]
    fn bw_peak_uses_the_last_request_when_not_a_multiple_of_cq_mod() {
        let s = BwSamples {
            tposted: vec![10, 11, 12],
            tcompleted: vec![0, 110, 113],
            iters: 3,
        };
        let r = bw_report(&s, &shape(1, 2, false), 1e9);
        // Windows: (0,1) 100/2, (0,2) 103/3, (1,1) 99, (1,2) 102/2, (2,2) 101: 103/3 wins.
        let expect = (1u64 << 20) as f64 * 1e9 / (103.0 / 3.0) / MIB;
        assert!(
            (r.bw_peak - expect).abs() < 1e-6,
            "{} {}",
            r.bw_peak,
            expect
        );
    }

    #[test]
    fn no_peak_reports_zero_and_uses_the_interval() {
        let s = BwSamples {
            tposted: vec![100],
            tcompleted: vec![100 + 1_000_000_000],
            iters: 8,
        };
        let mut sh = shape(2, 1, true);
        sh.gbits = true;
        let r = bw_report(&s, &sh, 1e9);
        assert_eq!(r.bw_peak, 0.0);
        assert_eq!(r.iters, 16);
        // 16 MiB in 1 s = 16·2^20·8 bit/s.
        assert!((r.bw_avg - 16.0 * 1_048_576.0 / 125e6).abs() < 1e-12);
    }

    #[test]
    fn latency_like_perftest() {
        // 12 posts: 11 gaps of (in ticks, 1 tick = 1 µs with rtt 1):
        let gaps = [5u64, 3, 4, 100, 6, 3, 4, 5, 7, 50, 4];
        let mut t = vec![0u64];
        for g in gaps {
            t.push(t.last().unwrap() + g);
        }
        let r = lat_report(&t, 1.0, 1.0);
        // Sorted: 3 3 4 4 4 5 5 6 7 | 50 100 → 9 kept.
        assert_eq!(r.t_min, 3.0);
        assert_eq!(r.t_max, 50.0, "one past the kept samples");
        assert_eq!(r.t_typical, 4.0, "odd count: the middle one");
        let avg = (3 + 3 + 4 + 4 + 4 + 5 + 5 + 6 + 7) as f64 / 9.0;
        assert!((r.t_avg - avg).abs() < 1e-12);
        // Deviations truncated to whole µs: avg 4.56 → 1 1 0 0 0 0 0 -1 -2.
        let var = (1 + 1 + 1 + 4) as f64 / 9.0;
        assert!((r.t_stdev - var.sqrt()).abs() < 1e-12, "{}", r.t_stdev);
        // ceil(9 · 0.99) = 9 → index 9 = 50.
        assert_eq!(r.p99, 50.0);
        assert_eq!(r.p999, 50.0);
        assert_eq!(r.sorted_kept.len(), 9);
        assert_eq!(r.unsorted[3], 100.0);
    }

    #[test]
    fn latency_median_of_an_even_count_and_rtt_halving() {
        let gaps = [2u64, 4, 6, 8, 1000, 1000];
        let mut t = vec![0u64];
        for g in gaps {
            t.push(t.last().unwrap() + g);
        }
        let r = lat_report(&t, 1.0, 2.0);
        // Kept 2 4 6 8: median (4 + 6) / 2 = 5 ticks, halved: 2.5.
        assert_eq!(r.t_typical, 2.5);
        assert_eq!(r.t_min, 1.0);
    }

    #[test]
    fn latency_with_too_few_samples_is_zero() {
        assert_eq!(lat_report(&[1, 2, 3], 1.0, 1.0).t_avg, 0.0);
    }

    #[test]
    fn duration_latency() {
        let (lat, tps) = lat_duration(2_000_000, 1000, 1000.0, 2.0);
        assert!((lat - 1.0).abs() < 1e-12);
        assert!((tps - 500_000.0).abs() < 1e-6, "{tps}");
    }

    #[test]
    fn printf_g() {
        for (x, s) in [
            (10.7162, "10.7162"),
            (11.272, "11.272"),
            (121.34567, "121.346"),
            (0.0001234567, "0.000123457"),
            (0.00001234567, "1.23457e-05"),
            (1234567.0, "1.23457e+06"),
            (999999.5, "1e+06"),
            (100000.0, "100000"),
            (3.0, "3"),
            (0.0, "0"),
            (2.5, "2.5"),
        ] {
            assert_eq!(c_g(x), s, "{x}");
        }
    }
}
