//! What infiniband-diags' tools share in how they report (its `ibdiag_common` and
//! `ibpanic`/`ibwarn` macros): fatal and warning messages, and the version line.

use crate::cli::Output;

/// `IBPANIC`: `ibpanic: [pid] function: msg` on stderr; returns the status the C tool exits
/// with (-1, so 255).
pub fn panic(out: &mut Output, function: &str, msg: &str) -> i32 {
    out.error(&format!(
        "ibpanic: [{}] {function}: {msg}",
        std::process::id()
    ));
    -1
}

/// `IBWARN`: `ibwarn: [pid] function: msg` on stderr.
pub fn warn(out: &mut Output, function: &str, msg: &str) {
    out.error(&format!(
        "ibwarn: [{}] {function}: {msg}",
        std::process::id()
    ));
}

/// The line `-V` prints to stderr, after which the tool exits with status 0.
pub fn version_line(prog: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!("{prog} BUILD VERSION: ibverbs-tools {version}")
}
