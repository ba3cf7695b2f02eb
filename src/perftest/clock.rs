//! Timestamps: the CPU's time-stamp counter on x86_64 (as perftest's `get_cycles`), a
//! monotonic nanosecond clock elsewhere.
//!
//! The counter's frequency is measured against [`Instant`] between the creation of the
//! [`Clock`] and the report, which is at least the whole test apart, so the estimate is far
//! better than a short calibration loop and costs nothing on the data path. (perftest reads
//! `cpu MHz` from `/proc/cpuinfo` and cross-checks it with a short sample.)
//!
//! Why the counter and not `Instant` everywhere: `Instant::now()` is `clock_gettime`, a vDSO
//! call where the kernel's clocksource is the TSC but a system call otherwise. Measured in
//! the CI virtual machine (TCG, `hpet` clocksource): 1.7 µs per `Instant::now()` against
//! 31 ns per `rdtsc`; on the host 50 ns against 11 ns. A bandwidth test stamps every post,
//! so the counter is what keeps the measurement comparable with perftest's.

use std::time::{Duration, Instant};

/// The shortest interval the frequency is measured over.
const MIN_CALIBRATION: Duration = Duration::from_millis(100);

/// A source of tick timestamps with a known frequency.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    start_ticks: u64,
    start: Instant,
    rough_ticks_per_sec: f64,
}

impl Clock {
    /// Starts the clock: takes the reference pair and a rough frequency (10 ms sample) for
    /// deadlines (`-D`, timeouts) until the precise one is known.
    pub fn new() -> Clock {
        let start = Instant::now();
        let start_ticks = ticks();
        let rough = Duration::from_millis(10);
        while start.elapsed() < rough {
            std::hint::spin_loop();
        }
        let elapsed = start.elapsed().as_secs_f64();
        let rough_ticks_per_sec = (ticks().wrapping_sub(start_ticks)) as f64 / elapsed;
        Clock {
            start_ticks,
            start,
            rough_ticks_per_sec,
        }
    }

    /// The current timestamp in ticks.
    #[inline]
    pub fn now(&self) -> u64 {
        ticks()
    }

    /// Ticks per second, measured from the clock's creation until now (waiting until at
    /// least 100 ms have passed).
    pub fn ticks_per_sec(&self) -> f64 {
        while self.start.elapsed() < MIN_CALIBRATION {
            std::hint::spin_loop();
        }
        let t = ticks();
        let elapsed = self.start.elapsed().as_secs_f64();
        t.wrapping_sub(self.start_ticks) as f64 / elapsed
    }

    /// Roughly how many ticks `d` lasts (for deadlines, not for results).
    pub fn ticks_in(&self, d: Duration) -> u64 {
        (d.as_secs_f64() * self.rough_ticks_per_sec) as u64
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn ticks() -> u64 {
    // SAFETY: RDTSC exists on every x86_64 CPU, reads a counter and touches no memory.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn ticks() -> u64 {
    use std::sync::OnceLock;
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_advance_at_a_plausible_rate() {
        let clock = Clock::new();
        let a = clock.now();
        std::thread::sleep(Duration::from_millis(20));
        let b = clock.now();
        assert!(b > a);
        let hz = clock.ticks_per_sec();
        // Between 10 MHz and 100 GHz: a counter, not garbage.
        assert!((1e7..1e11).contains(&hz), "{hz}");
        let expected = clock.ticks_in(Duration::from_secs(1)) as f64;
        assert!((expected / hz - 1.0).abs() < 0.5, "{expected} vs {hz}");
    }
}
