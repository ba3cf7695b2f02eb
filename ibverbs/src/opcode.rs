//! Work request operations: `enum ibv_wr_opcode` and the operation flags of the extended
//! send API (`enum ibv_qp_create_send_ops_flags`).

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
    }
}
