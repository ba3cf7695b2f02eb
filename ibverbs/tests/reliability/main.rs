//! Reliability on a real device (run through `scripts/with-rdma`; rxe in CI): many QPs under
//! load with every byte and every completion accounted for, and a peer process killed in
//! the middle of a transfer.
//!
//! The peer-death tests re-execute this binary as the peer: `peer_death::child_process`
//! (ignored in normal runs) does the child's side when `IBVERBS_RELIABILITY_CHILD` is set.
//! Parent and child exchange their endpoints over TCP on 127.0.0.1 as one text line each.
//!
//! `IBVERBS_RELIABILITY_ROUNDS` sets the rounds of the load test (default 12).
//!
//! The tests run one at a time (a lock), so that the fault timings they print (run with
//! `--nocapture` to see them) are not skewed by each other. Every test checks at its end that
//! no destroy call failed in a destructor.
//!
//! The modules: `load` (the load test), `peer_death` (the peer-death tests and their child
//! process).

mod load;
mod peer_death;

use std::sync::{Mutex, MutexGuard, PoisonError};

use rdma_verbs::AccessFlags;

/// Runs the tests of this binary one at a time.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Local write and remote write: memory a peer writes into.
pub const REMOTE: AccessFlags = AccessFlags::LOCAL_WRITE.union(AccessFlags::REMOTE_WRITE);
