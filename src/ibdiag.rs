//! What infiniband-diags' tools share in how they report (its `ibdiag_common` and
//! `ibpanic`/`ibwarn` macros): fatal and warning messages, and the version line.

use std::fmt::Write as _;

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

/// `IBDEBUG` (libibmad's `DEBUG` with `-d`): `ibdebug: [pid] function: msg` on stdout.
pub fn debug(out: &mut Output, function: &str, msg: &str) {
    let _ = writeln!(out, "ibdebug: [{}] {function}: {msg}", std::process::id());
}

/// The line `-V` prints to stderr, after which the tool exits with status 0.
pub fn version_line(prog: &str) -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!("{prog} BUILD VERSION: rdma-verbs-tools {version}")
}

/// `IBEXIT`: `prog: iberror: failed: msg` on stdout (with `-d`, `debug` > 0: `prog:
/// iberror: [pid N] function: failed: msg`); returns the status the C tool exits with (-1,
/// so 255).
pub fn exit(out: &mut Output, prog: &str, debug: u32, function: &str, msg: &str) -> i32 {
    let _ = if debug > 0 {
        let pid = std::process::id();
        writeln!(
            out,
            "{prog}: iberror: [pid {pid}] {function}: failed: {msg}"
        )
    } else {
        writeln!(out, "{prog}: iberror: failed: {msg}")
    };
    -1
}
