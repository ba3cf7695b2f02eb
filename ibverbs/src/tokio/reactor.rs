//! Registration with tokio's reactor: the one road every fd of the `tokio` module takes
//! (completion channels, a context's async fd, CM event channels, the keepalive timer).

use std::os::fd::{AsRawFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};

use ::tokio::io::unix::AsyncFd;
use ::tokio::io::Interest;

use crate::error::{Error, Result};

/// A descriptor owned elsewhere (a channel, a context) that outlives its registration.
pub(super) struct BorrowedFdOf(pub(super) RawFd);

impl AsRawFd for BorrowedFdOf {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Registers `fd` for readability with the current tokio runtime's reactor.
///
/// Fails with [`Error::InvalidArgument`] naming `what` outside a tokio runtime, and also in
/// a runtime built without its I/O driver (no `enable_io`/`enable_all`), where tokio's
/// registration panics: that panic is caught here and becomes the error (tokio's panic
/// message is still printed by the panic hook; in a program built with `panic = "abort"`
/// the process aborts, as tokio's own types make it). Fails with the reactor's error
/// otherwise (`EEXIST` for an fd registered already).
///
/// # Safety
/// `fd.as_raw_fd()` is an open descriptor, and stays open and the same until the returned
/// `AsyncFd` is dropped (tokio's `register_with_interest` contract).
pub(super) unsafe fn register<T: AsRawFd>(fd: T, what: &'static str) -> Result<AsyncFd<T>> {
    let no_runtime = |reason: &str| Error::InvalidArgument {
        what,
        reason: reason.into(),
    };
    ::tokio::runtime::Handle::try_current()
        .map_err(|_| no_runtime("it must be made inside a tokio runtime"))?;
    // SAFETY: the caller keeps the fd open and the same while the registration lives.
    let registered = catch_unwind(AssertUnwindSafe(|| unsafe {
        AsyncFd::register_with_interest(fd, Interest::READABLE)
    }));
    match registered {
        Ok(Ok(fd)) => Ok(fd),
        Ok(Err(e)) => Err(reactor_error(e.into())),
        Err(_) => Err(no_runtime(
            "the current tokio runtime has no I/O driver (build it with enable_io)",
        )),
    }
}

/// The error of the reactor's registration or readiness wait.
pub(super) fn reactor_error(source: std::io::Error) -> Error {
    Error::Verb {
        verb: "tokio readiness",
        source,
    }
}
