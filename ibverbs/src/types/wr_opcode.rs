//! Work request operations: `enum ibv_wr_opcode` and the operation flags of the extended
//! send API (`enum ibv_qp_create_send_ops_flags`).

use std::fmt;

use bitflags::bitflags;

use crate::ffi;

bitflags! {
    /// The operations an extended QP is created for (`enum ibv_qp_create_send_ops_flags`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct SendOps: u64 {
        /// `IBV_QP_EX_WITH_RDMA_WRITE`.
        const RDMA_WRITE = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE.0 as u64;
        /// `IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM`.
        const RDMA_WRITE_WITH_IMM = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM.0 as u64;
        /// `IBV_QP_EX_WITH_SEND`.
        const SEND = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_SEND.0 as u64;
        /// `IBV_QP_EX_WITH_SEND_WITH_IMM`.
        const SEND_WITH_IMM = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_SEND_WITH_IMM.0 as u64;
        /// `IBV_QP_EX_WITH_RDMA_READ`.
        const RDMA_READ = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_READ.0 as u64;
        /// `IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP`.
        const ATOMIC_CMP_AND_SWP = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP.0 as u64;
        /// `IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD`.
        const ATOMIC_FETCH_AND_ADD = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD.0 as u64;
        /// `IBV_QP_EX_WITH_ATOMIC_WRITE`: needs a device with
        /// [`DeviceCapFlags::ATOMIC_WRITE`](crate::DeviceCapFlags::ATOMIC_WRITE).
        const ATOMIC_WRITE = ffi::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_ATOMIC_WRITE.0 as u64;
    }
}

/// The operation of a send work request (`enum ibv_wr_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WrOpcode {
    /// `IBV_WR_SEND`.
    Send,
    /// `IBV_WR_SEND_WITH_IMM`.
    SendWithImm,
    /// `IBV_WR_RDMA_WRITE`.
    RdmaWrite,
    /// `IBV_WR_RDMA_WRITE_WITH_IMM`.
    RdmaWriteWithImm,
    /// `IBV_WR_RDMA_READ`.
    RdmaRead,
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`.
    CompareSwap,
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`.
    FetchAdd,
    /// `IBV_WR_BIND_MW`.
    BindMw,
    /// `IBV_WR_ATOMIC_WRITE` (only in a [`WrBatch`](crate::WrBatch)).
    AtomicWrite,
    /// Another opcode: the raw value.
    Other(u32),
}

impl WrOpcode {
    /// The operation of a raw opcode.
    pub fn from_raw(raw: ffi::ibv_wr_opcode) -> Self {
        use ffi::ibv_wr_opcode as O;
        match raw {
            O::IBV_WR_SEND => WrOpcode::Send,
            O::IBV_WR_SEND_WITH_IMM => WrOpcode::SendWithImm,
            O::IBV_WR_RDMA_WRITE => WrOpcode::RdmaWrite,
            O::IBV_WR_RDMA_WRITE_WITH_IMM => WrOpcode::RdmaWriteWithImm,
            O::IBV_WR_RDMA_READ => WrOpcode::RdmaRead,
            O::IBV_WR_ATOMIC_CMP_AND_SWP => WrOpcode::CompareSwap,
            O::IBV_WR_ATOMIC_FETCH_AND_ADD => WrOpcode::FetchAdd,
            O::IBV_WR_BIND_MW => WrOpcode::BindMw,
            O::IBV_WR_ATOMIC_WRITE => WrOpcode::AtomicWrite,
            other => WrOpcode::Other(other.0),
        }
    }

    /// The flag that enables the operation in the extended send API, if it has one here.
    pub fn send_op(self) -> Option<SendOps> {
        Some(match self {
            WrOpcode::Send => SendOps::SEND,
            WrOpcode::SendWithImm => SendOps::SEND_WITH_IMM,
            WrOpcode::RdmaWrite => SendOps::RDMA_WRITE,
            WrOpcode::RdmaWriteWithImm => SendOps::RDMA_WRITE_WITH_IMM,
            WrOpcode::RdmaRead => SendOps::RDMA_READ,
            WrOpcode::CompareSwap => SendOps::ATOMIC_CMP_AND_SWP,
            WrOpcode::FetchAdd => SendOps::ATOMIC_FETCH_AND_ADD,
            WrOpcode::AtomicWrite => SendOps::ATOMIC_WRITE,
            WrOpcode::BindMw | WrOpcode::Other(_) => return None,
        })
    }
}

impl fmt::Display for WrOpcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WrOpcode::Send => f.write_str("send"),
            WrOpcode::SendWithImm => f.write_str("send with immediate"),
            WrOpcode::RdmaWrite => f.write_str("RDMA write"),
            WrOpcode::RdmaWriteWithImm => f.write_str("RDMA write with immediate"),
            WrOpcode::RdmaRead => f.write_str("RDMA read"),
            WrOpcode::CompareSwap => f.write_str("atomic compare-and-swap"),
            WrOpcode::FetchAdd => f.write_str("atomic fetch-and-add"),
            WrOpcode::BindMw => f.write_str("memory window bind"),
            WrOpcode::AtomicWrite => f.write_str("atomic write"),
            WrOpcode::Other(raw) => write!(f, "opcode {raw}"),
        }
    }
}
