//! The duration (`-D`) of a run: perftest's alarm and its phases, as deadlines the loops
//! check against the tick counter.

use std::time::Duration;

use super::Plan;
use crate::perftest::clock::Clock;

/// The phases of a duration (`-D`) run, perftest's `DurationStates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Warming up for the margin.
    Start,
    /// Counting.
    Sample,
    /// Cooling down for the margin.
    StopSample,
    /// Done.
    End,
}

/// perftest's duration alarm, as deadlines checked in the loops: `margin` seconds of warm
/// up, `duration - 2·margin` measured, `margin` to stop.
pub struct Timer {
    phase: Phase,
    deadline: u64,
    margin: u64,
    sample: u64,
    /// When the measured interval began.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}

impl Timer {
    /// A timer for `duration` seconds with `margin`, not started.
    pub fn new(clock: &Clock, duration: u32, margin: u32) -> Timer {
        let secs = |s: u32| clock.ticks_in(Duration::from_secs(s.into()));
        Timer {
            phase: Phase::Start,
            deadline: u64::MAX,
            margin: secs(margin),
            sample: secs(duration.saturating_sub(2 * margin)),
            start: 0,
            end: 0,
        }
    }

    /// The timer of `plan`: one with a duration, none with iterations.
    pub fn of(plan: &Plan, clock: &Clock) -> Option<Timer> {
        plan.duration
            .map(|d| Timer::new(clock, d.seconds, d.margin))
    }

    /// The timer of `plan`, its warm-up margin started now (the tests that time from their
    /// first post).
    pub fn started(plan: &Plan, clock: &Clock) -> Option<Timer> {
        let mut timer = Timer::of(plan, clock);
        if let Some(t) = &mut timer {
            t.begin(clock.now());
        }
        timer
    }

    /// The phase of `timer` now (none without a timer): `Start` until the test has
    /// `started` (the clock runs from the first post), then the timer's.
    #[inline]
    pub fn phase(timer: &mut Option<Timer>, started: bool, clock: &Clock) -> Option<Phase> {
        timer.as_mut().map(|t| {
            if started {
                t.poll(clock.now())
            } else {
                Phase::Start
            }
        })
    }

    /// Starts the warm-up margin at `now`.
    pub fn begin(&mut self, now: u64) {
        self.phase = Phase::Start;
        self.deadline = now.saturating_add(self.margin);
        self.poll(now);
    }

    /// The phase at `now`, moving on past expired deadlines.
    #[inline]
    pub fn poll(&mut self, now: u64) -> Phase {
        while self.phase != Phase::End && now >= self.deadline {
            match self.phase {
                Phase::Start => {
                    self.phase = Phase::Sample;
                    self.start = now;
                    self.deadline = now.saturating_add(self.sample);
                }
                Phase::Sample => {
                    self.phase = Phase::StopSample;
                    self.end = now;
                    self.deadline = now.saturating_add(self.margin);
                }
                Phase::StopSample | Phase::End => self.phase = Phase::End,
            }
        }
        self.phase
    }
}

/// The phase of a run's timer now, if it has one (reads the clock only then).
#[inline]
pub fn phase(timer: &mut Option<Timer>, clock: &Clock) -> Option<Phase> {
    timer.as_mut().map(|t| t.poll(clock.now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_phases() {
        let clock = Clock::new();
        let mut t = Timer::new(&clock, 4, 1);
        t.margin = 100;
        t.sample = 1000;
        t.begin(10);
        assert_eq!(t.poll(50), Phase::Start);
        assert_eq!(t.poll(110), Phase::Sample);
        assert_eq!(t.start, 110);
        assert_eq!(t.poll(1109), Phase::Sample);
        assert_eq!(t.poll(1110), Phase::StopSample);
        assert_eq!(t.end, 1110);
        assert_eq!(t.poll(1210), Phase::End);
        // No margin: sampling starts at once and ends with the interval.
        let mut t = Timer::new(&clock, 4, 0);
        t.sample = 1000;
        t.begin(5);
        assert_eq!(t.poll(5), Phase::Sample);
        assert_eq!(t.poll(1005), Phase::End);
        assert_eq!((t.start, t.end), (5, 1005));
    }
}
