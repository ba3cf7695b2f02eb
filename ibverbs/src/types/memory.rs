//! The rules memory sources are held to ([`MemoryRule`]) and what a failed re-registration
//! leaves of a region ([`ReregState`]): the values [`Error`](crate::Error) carries.

use std::fmt;

/// A rule of a memory source, checked before memory is mapped or registered
/// ([`Error::MemoryRule`](crate::Error::MemoryRule)); the page
/// [`docs::soundness`](crate::docs::soundness) lists the rule of every memory source with its
/// reason and test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MemoryRule {
    /// An on-demand paging region ([`AccessFlags::ON_DEMAND`](crate::AccessFlags::ON_DEMAND))
    /// starts on a page boundary: of the page size, or of the huge page size with
    /// [`AccessFlags::HUGETLB`](crate::AccessFlags::HUGETLB), the kernel's paging unit for
    /// it. rxe's on-demand paging (Linux 6.14 to 7.3 at least) copies the data of a
    /// transfer to the start of the page where the transfer starts, not to its offset in
    /// that page: into a region that starts mid-page, such as a `Vec`, that is memory before
    /// the region (the heap allocator's bookkeeping: heap corruption). In a region that
    /// starts on a page boundary, the misplaced bytes stay inside the region.
    OdpPageAligned,
    /// [`Mapping::file`](crate::Mapping::file) maps a file only when it is on shmem (tmpfs, a
    /// memfd) and sealed against shrinking (`F_SEAL_SHRINK`): then no one holding the fd can take a
    /// page away from the mapping. Truncation is sealed off, and a punched hole (`fallocate`
    /// `FALLOC_FL_PUNCH_HOLE`, which the seal does not stop) reads back as zeros, since the
    /// kernel's own shmem mount behind memfds has no size limit. Not hugetlbfs: a hole punched
    /// there returns the huge pages to the pool, and the next access raises `SIGBUS` when the pool
    /// is empty, while the seals that stop hole punching (`F_SEAL_WRITE`, `F_SEAL_FUTURE_WRITE`)
    /// also stop the writable shared mapping a registration needs. Not a regular filesystem: it
    /// cannot be sealed, and fails a fault (`SIGBUS`) on `ENOSPC` or an I/O error.
    SealedShmemFile,
}

impl fmt::Display for MemoryRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryRule::OdpPageAligned => {
                "on-demand paging needs a region that starts on a page boundary (a huge page \
                 boundary with HUGETLB)"
            }
            MemoryRule::SealedShmemFile => {
                "a file is mapped safely only if it is a shmem (tmpfs) memfd sealed against \
                 shrinking (F_SEAL_SHRINK)"
            }
        })
    }
}

/// What became of a region whose `ibv_rereg_mr` failed ([`Error::Rereg`](crate::Error::Rereg)),
/// after rdma-core's `enum ibv_rereg_mr_err_code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReregState {
    /// As before the call (`IBV_REREG_MR_ERR_INPUT`, `IBV_REREG_MR_ERR_DONT_FORK_NEW`).
    Unchanged,
    /// Changed as asked; only marking the old range forkable again failed
    /// (`IBV_REREG_MR_ERR_DO_FORK_OLD`).
    Changed,
    /// Unusable (`IBV_REREG_MR_ERR_CMD`, `IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW`): the provider or
    /// the kernel failed the command and rdma-core leaves the MR's state undefined. (A refusal with
    /// `EOPNOTSUPP`, which changes nothing, is [`Error::Unsupported`](crate::Error::Unsupported)
    /// instead, and the region stays usable.) The region refuses scatter/gather entries and further
    /// changes from then on; dropping it deregisters it.
    Invalid,
}

impl fmt::Display for ReregState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReregState::Unchanged => "the region is unchanged",
            ReregState::Changed => "the region was changed",
            ReregState::Invalid => "the region is left invalid: deregister it",
        })
    }
}
