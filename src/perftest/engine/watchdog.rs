//! Liveness of the data path: a loop that stops making progress, or whose peer went away,
//! fails instead of spinning forever.

use std::time::Duration;

use crate::perftest::clock::Clock;
use crate::perftest::peer::Peer;
use crate::perftest::types::{Error, Result};

/// How long the data path may go without a completion before the test fails.
pub const STALL: Duration = Duration::from_secs(20);
/// Empty polls between two looks at the clock.
pub const IDLE_CHECK: u32 = 1024;
/// After this long without progress, and then this often, check whether the peer is still
/// connected.
const PEER_CHECK: Duration = Duration::from_millis(200);

/// Notices a data path that stopped: no progress for [`STALL`], or a peer that went away.
/// Time is read from the tick counter, which is cheap enough to look at often.
pub struct Watchdog<'a> {
    peer: &'a Peer,
    clock: &'a Clock,
    progress: u64,
    seen: u64,
    idle: u32,
    since: u64,
    last_peer_check: u64,
}

impl<'a> Watchdog<'a> {
    /// A watchdog that reports the peer's connection.
    pub fn new(peer: &'a Peer, clock: &'a Clock) -> Self {
        let now = clock.now();
        Watchdog {
            peer,
            clock,
            progress: 0,
            seen: 0,
            idle: 0,
            since: now,
            last_peer_check: now,
        }
    }

    /// Something completed.
    #[inline]
    pub fn progress(&mut self) {
        self.progress = self.progress.wrapping_add(1);
    }

    /// A poll found nothing: every [`IDLE_CHECK`] of those, look at the clock.
    #[inline]
    pub fn idle(&mut self) -> Result<()> {
        self.idle += 1;
        if self.idle >= IDLE_CHECK {
            self.idle = 0;
            self.check()
        } else {
            Ok(())
        }
    }

    /// Fails if nothing progressed for [`STALL`] or the peer closed the connection (looked
    /// at every [`PEER_CHECK`] once idle that long).
    #[cold]
    pub fn check(&mut self) -> Result<()> {
        let now = self.clock.now();
        if self.progress != self.seen {
            self.seen = self.progress;
            self.since = now;
            return Ok(());
        }
        let idle = now.saturating_sub(self.since);
        let peer_check = self.clock.ticks_in(PEER_CHECK);
        if idle >= peer_check && now.saturating_sub(self.last_peer_check) >= peer_check {
            self.last_peer_check = now;
            if self.peer.closed() {
                return Err(Error::new(
                    "the peer closed the connection during the test (it stopped or failed)",
                ));
            }
        }
        if idle >= self.clock.ticks_in(STALL) {
            return Err(Error::new(format!(
                "no progress for {} s: the peer is not taking part (different test or parameters?)",
                STALL.as_secs()
            )));
        }
        Ok(())
    }
}
