//! Fork support: `ibv_fork_init` and `ibv_is_fork_initialized`.
//!
//! Before Linux 5.13, a child made by `fork()` could take over pages of the parent's
//! registered memory (copy-on-write moved the parent to a fresh copy the HCA did not know
//! of), so libibverbs marked registered ranges `MADV_DONTFORK` once `ibv_fork_init` had
//! been called. Newer kernels keep pinned pages with the parent across `fork()`, and
//! libibverbs reports [`ForkStatus::Unneeded`]: `ibv_fork_init` then does nothing. Either
//! way, a child never has the parent's registrations; it opens its own devices.
//!
//! Its own raw file: the two calls take no arguments and are the whole module, so they stay
//! here rather than in a raw layer of their own.

use crate::error::{check, Error, Result};
use crate::ffi;

/// Whether libibverbs protects registered memory across `fork()` (`enum ibv_fork_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ForkStatus {
    /// `IBV_FORK_DISABLED`: `ibv_fork_init` was not called and the kernel needs it.
    Disabled,
    /// `IBV_FORK_ENABLED`: registrations are marked `MADV_DONTFORK`.
    Enabled,
    /// `IBV_FORK_UNNEEDED`: the kernel keeps registered pages with the parent (Linux 5.13
    /// and later), nothing to do.
    Unneeded,
    /// A value libibverbs does not name.
    Unknown(u32),
}

/// Makes registered memory safe across `fork()` (`ibv_fork_init`): call it before
/// registering any memory.
///
/// On a kernel that does not need it ([`ForkStatus::Unneeded`]) this succeeds without
/// calling `ibv_fork_init`, which has nothing to do there but, in rdma-core 44, still fails
/// with `EINVAL` once memory was registered. Where it is needed, a call after a
/// registration is that `EINVAL`: [`Error::InvalidArgument`], saying so.
pub fn fork_init() -> Result<()> {
    if fork_status() == ForkStatus::Unneeded {
        return Ok(());
    }
    // SAFETY: takes no arguments; libibverbs serialises it internally.
    match check("ibv_fork_init", unsafe { ffi::ibv_fork_init() }) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Err(Error::InvalidArgument {
            what: "ibv_fork_init",
            reason: "memory was registered before it: it must come first".into(),
        }),
        other => other,
    }
}

/// Whether fork protection is on, off or not needed (`ibv_is_fork_initialized`).
pub fn fork_status() -> ForkStatus {
    use ffi::ibv_fork_status as F;
    // SAFETY: takes no arguments and only reads libibverbs' state.
    match unsafe { ffi::ibv_is_fork_initialized() } {
        F::IBV_FORK_DISABLED => ForkStatus::Disabled,
        F::IBV_FORK_ENABLED => ForkStatus::Enabled,
        F::IBV_FORK_UNNEEDED => ForkStatus::Unneeded,
        other => ForkStatus::Unknown(other.0),
    }
}
