//! Work completion operations: `enum ibv_wc_opcode`.

use crate::ffi;

/// The operation a work completion reports (`enum ibv_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WcOpcode {
    /// A send completed (`IBV_WC_SEND`).
    Send,
    /// An RDMA write completed (`IBV_WC_RDMA_WRITE`).
    RdmaWrite,
    /// An RDMA read completed (`IBV_WC_RDMA_READ`).
    RdmaRead,
    /// A compare-and-swap completed (`IBV_WC_COMP_SWAP`).
    CompareSwap,
    /// A fetch-and-add completed (`IBV_WC_FETCH_ADD`).
    FetchAdd,
    /// A memory window bind completed (`IBV_WC_BIND_MW`).
    BindMw,
    /// A local invalidate completed (`IBV_WC_LOCAL_INV`).
    LocalInv,
    /// A receive completed (`IBV_WC_RECV`).
    Recv,
    /// A receive consumed by an RDMA write with immediate (`IBV_WC_RECV_RDMA_WITH_IMM`).
    RecvRdmaWithImm,
    /// An atomic write completed (`IBV_WC_ATOMIC_WRITE`).
    AtomicWrite,
    /// Another opcode: the raw value.
    Other(u32),
}

impl WcOpcode {
    pub(crate) fn from_raw(raw: ffi::ibv_wc_opcode) -> Self {
        use ffi::ibv_wc_opcode as O;
        match raw {
            O::IBV_WC_SEND => WcOpcode::Send,
            O::IBV_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
            O::IBV_WC_RDMA_READ => WcOpcode::RdmaRead,
            O::IBV_WC_COMP_SWAP => WcOpcode::CompareSwap,
            O::IBV_WC_FETCH_ADD => WcOpcode::FetchAdd,
            O::IBV_WC_BIND_MW => WcOpcode::BindMw,
            O::IBV_WC_LOCAL_INV => WcOpcode::LocalInv,
            O::IBV_WC_RECV => WcOpcode::Recv,
            O::IBV_WC_RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
            O::IBV_WC_ATOMIC_WRITE => WcOpcode::AtomicWrite,
            other => WcOpcode::Other(other.0),
        }
    }
}
