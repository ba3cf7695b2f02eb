//! Destroy calls that fail inside `Drop`.
//!
//! `Drop` cannot return an error, so a failed `ibv_destroy_*` / `ibv_dealloc_*` /
//! `ibv_dereg_mr` / `ibv_close_device` in a destructor is counted here and written to stderr.
//! Tests assert that [`count`] stays 0; a program can check it at exit.
//!
//! The report never panics: a write error (stderr closed, a broken pipe) is ignored, so a
//! destructor that runs during an unwind cannot turn it into an abort. The count is kept
//! whether or not the message could be written.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::check;

static FAILED: AtomicUsize = AtomicUsize::new(0);

/// How many destroy calls have failed in destructors since the process started.
pub fn count() -> usize {
    FAILED.load(Ordering::Relaxed)
}

/// Reports the return code of a destroy call made in `Drop`; true if it succeeded.
pub(crate) fn report(verb: &'static str, rc: i32) -> bool {
    match check(verb, rc) {
        Ok(()) => true,
        Err(err) => {
            FAILED.fetch_add(1, Ordering::Relaxed);
            // Not eprintln!, which panics when stderr cannot be written.
            let _ = writeln!(std::io::stderr(), "rdma-verbs: {err} (in drop)");
            false
        }
    }
}
