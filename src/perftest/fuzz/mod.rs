//! Bounded fuzzing (proptest) of what a peer or a user feeds the perftest tools: every
//! message of the out-of-band exchange (`wire`), and the command line (`options`).
//! `crate::fuzz` has the configuration (`PROPTEST_CASES` overrides the case counts).

mod options;
mod wire;

use proptest::prelude::*;

use super::types::Test;

/// Any of the eight tests.
fn test() -> impl Strategy<Value = Test> {
    prop::sample::select(Test::ALL.to_vec())
}
