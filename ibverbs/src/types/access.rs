//! Access rights of memory regions, windows and queue pairs: `enum ibv_access_flags`.

use crate::ffi;
use bitflags::bitflags;

bitflags! {
    /// Access rights of a memory region or window (`enum ibv_access_flags`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct AccessFlags: u32 {
        /// `IBV_ACCESS_LOCAL_WRITE`: the HCA may write (receives, read responses).
        const LOCAL_WRITE = ffi::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0;
        /// `IBV_ACCESS_REMOTE_WRITE`: peers may RDMA-write (needs `LOCAL_WRITE`).
        const REMOTE_WRITE = ffi::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0;
        /// `IBV_ACCESS_REMOTE_READ`: peers may RDMA-read.
        const REMOTE_READ = ffi::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0;
        /// `IBV_ACCESS_REMOTE_ATOMIC`: peers may run atomics (needs `LOCAL_WRITE`).
        const REMOTE_ATOMIC = ffi::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0;
        /// `IBV_ACCESS_MW_BIND`: memory windows may be bound to the region.
        const MW_BIND = ffi::ibv_access_flags::IBV_ACCESS_MW_BIND.0;
        /// `IBV_ACCESS_ZERO_BASED`: remote addresses are offsets from the start. A right of
        /// a memory window bind; a registration refuses it (a region's remote addresses
        /// are its virtual addresses, and rxe on Linux 7.3 refuses it with `EOPNOTSUPP`).
        const ZERO_BASED = ffi::ibv_access_flags::IBV_ACCESS_ZERO_BASED.0;
        /// `IBV_ACCESS_ON_DEMAND`: on-demand paging instead of pinning; the memory must
        /// start on a page boundary ([`MemoryRule::OdpPageAligned`](crate::MemoryRule)).
        const ON_DEMAND = ffi::ibv_access_flags::IBV_ACCESS_ON_DEMAND.0;
        /// `IBV_ACCESS_HUGETLB`: on-demand paging in huge pages (the kernel reads it only
        /// with `ON_DEMAND`, so a registration refuses it alone; pinned huge pages register
        /// without it). The memory must then start on a huge page boundary; rxe on Linux
        /// 7.3 refuses it ([`Error::Unsupported`]).
        const HUGETLB = ffi::ibv_access_flags::IBV_ACCESS_HUGETLB.0;
        /// `IBV_ACCESS_RELAXED_ORDERING`: the HCA may reorder PCIe writes.
        const RELAXED_ORDERING = ffi::ibv_access_flags::IBV_ACCESS_RELAXED_ORDERING.0;
    }
}
