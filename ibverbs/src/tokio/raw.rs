//! The system calls of the `tokio` module: every unsafe block of the folder.
//!
//! - Registration with tokio's reactor, the one road every fd of the module takes
//!   (completion channels, a context's async fd, CM event channels, the keepalive timer).
//!   It is safe through [`OwnsFd`]: the registration holds the descriptor's owner, so the
//!   descriptor stays open and the same while it is registered, as tokio requires.
//! - The keepalive's `timerfd` (feature `cm`).
//! - The CQs and SRQ a queue pair was created with.

use std::io;
#[cfg(feature = "cm")]
use std::os::fd::FromRawFd;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
#[cfg(feature = "cm")]
use std::time::Duration;

use ::tokio::io::unix::AsyncFd;
use ::tokio::io::Interest;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::ffi;
use crate::qp::QueuePair;

/// A value that keeps a descriptor open: what [`register`] takes.
///
/// # Safety
/// [`fd`](Self::fd) returns the same descriptor on every call, open for as long as the
/// value lives.
pub(crate) unsafe trait OwnsFd {
    /// The descriptor.
    fn fd(&self) -> RawFd;
}

// SAFETY: libibverbs sets a context's async_fd when opening the device and never changes
// it; it is closed with the device (ibv_close_device), which a Context handle delays.
unsafe impl OwnsFd for Context {
    fn fd(&self) -> RawFd {
        Context::async_fd(self)
    }
}

#[cfg(feature = "cm")]
// SAFETY: librdmacm sets the channel's fd at creation and never changes it; it is closed
// by rdma_destroy_event_channel, which an EventChannel handle delays.
unsafe impl OwnsFd for crate::cm::EventChannel {
    fn fd(&self) -> RawFd {
        crate::cm::EventChannel::fd(self)
    }
}

// SAFETY: an OwnedFd is one descriptor, open until it is dropped.
unsafe impl OwnsFd for OwnedFd {
    fn fd(&self) -> RawFd {
        self.as_raw_fd()
    }
}

// SAFETY: the Arc keeps the value, and so its descriptor, alive.
unsafe impl<T: OwnsFd> OwnsFd for Arc<T> {
    fn fd(&self) -> RawFd {
        T::fd(self)
    }
}

/// The owner of a registered descriptor, as the registration ([`AsyncFd`]) holds it; never
/// swapped for another (nothing calls `AsyncFd::get_mut`).
#[derive(Debug)]
pub(super) struct Registered<T>(T);

impl<T> Registered<T> {
    /// The owner.
    pub(super) fn owner(&self) -> &T {
        &self.0
    }
}

impl<T: OwnsFd> AsRawFd for Registered<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.0.fd()
    }
}

/// Registers `owner`'s descriptor for readability with the current tokio runtime's
/// reactor, the registration holding `owner`.
///
/// Fails with [`Error::InvalidArgument`] naming `what` outside a tokio runtime, and also in
/// a runtime built without its I/O driver (no `enable_io`/`enable_all`), where tokio's
/// registration panics: that panic is caught here and becomes the error (tokio's panic
/// message is still printed by the panic hook; in a program built with `panic = "abort"`
/// the process aborts, as tokio's own types make it). Fails with the reactor's error
/// otherwise (`EEXIST` for an fd registered already).
pub(super) fn register<T: OwnsFd>(owner: T, what: &'static str) -> Result<AsyncFd<Registered<T>>> {
    let no_runtime = |reason: &str| Error::InvalidArgument {
        what,
        reason: reason.into(),
    };
    ::tokio::runtime::Handle::try_current()
        .map_err(|_| no_runtime("it must be made inside a tokio runtime"))?;
    // SAFETY: the AsyncFd holds `owner`, whose descriptor (OwnsFd) stays open and the same
    // until the AsyncFd drops it (tokio's register_with_interest contract).
    let registered = catch_unwind(AssertUnwindSafe(|| unsafe {
        AsyncFd::register_with_interest(Registered(owner), Interest::READABLE)
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
pub(super) fn reactor_error(source: io::Error) -> Error {
    Error::Verb {
        verb: "tokio readiness",
        source,
    }
}

/// A new non-blocking `timerfd` on the monotonic clock that expires every `period` (at
/// least 1 ns; `timerfd_create`, `timerfd_settime`).
#[cfg(feature = "cm")]
pub(super) fn timerfd(period: Duration) -> io::Result<OwnedFd> {
    let flags = libc::TFD_NONBLOCK | libc::TFD_CLOEXEC;
    // SAFETY: timerfd_create takes no pointers; its result is checked.
    let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, flags) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let every = libc::timespec {
        tv_sec: libc::time_t::try_from(period.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: period.subsec_nanos().into(),
    };
    let spec = libc::itimerspec {
        it_interval: every,
        it_value: every,
    };
    // SAFETY: `fd` is a timerfd; `spec` is read during the call; no old value is asked for.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Takes the expirations of the timerfd `fd` (`read` of its 8-byte count):
/// `WouldBlock` if there were none.
#[cfg(feature = "cm")]
pub(super) fn read_timer(fd: &OwnedFd) -> io::Result<()> {
    let mut expirations = [0u8; 8];
    // SAFETY: `expirations` is the 8 writable bytes a timerfd read fills.
    let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The send CQ, receive CQ and SRQ (null if none) `qp` was created with.
pub(super) fn qp_queues(qp: &QueuePair) -> (*mut ffi::ibv_cq, *mut ffi::ibv_cq, *mut ffi::ibv_srq) {
    // SAFETY: the QP is live; libibverbs set its CQ and SRQ pointers at creation.
    unsafe {
        let raw = &*qp.ptr();
        (raw.send_cq, raw.recv_cq, raw.srq)
    }
}
