//! The descriptor calls the objects with an fd share (completion channels, the context's
//! async events, rdma_cm's event channels, the blocking stream's wait): a leaf, over `libc`
//! alone. A descriptor that is not open fails with `EBADF`; nothing here reads or writes
//! memory but the `pollfd`s given.

use std::os::fd::RawFd;

use libc::c_int;

use crate::error::{Error, Result};

/// Sets `O_NONBLOCK` on `fd` (`fcntl`).
pub(crate) fn set_nonblocking(fd: RawFd) -> Result<()> {
    // SAFETY: F_GETFL takes and returns plain flags; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above; F_SETFL takes plain flags.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(Error::last("fcntl(O_NONBLOCK)"));
    }
    Ok(())
}

/// Waits up to `timeout_ms` milliseconds (-1: forever) for an event of `fds` (`poll(2)`):
/// how many have one, 0 on timeout, or -1 with `errno` set.
pub(crate) fn poll_fds(fds: &mut [libc::pollfd], timeout_ms: c_int) -> c_int {
    // SAFETY: fds is `fds.len()` valid, writable pollfds for the duration of the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }
}

/// Waits up to `timeout_ms` milliseconds (-1: forever) for `fd` to become readable: true if
/// it did, false on timeout; a signal is an error of `EINTR`.
pub(crate) fn wait_readable(fd: RawFd, timeout_ms: c_int) -> Result<bool> {
    let mut pfd = [libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }];
    match poll_fds(&mut pfd, timeout_ms) {
        0 => Ok(false),
        n if n < 0 => Err(Error::last("poll")),
        _ => Ok(true),
    }
}
