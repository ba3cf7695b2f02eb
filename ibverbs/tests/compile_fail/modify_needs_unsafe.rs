// The queue pair's type states cannot be bypassed without `unsafe`: the raw `modify`
// (`ibv_modify_qp`), which could move an RTS-typed `QueuePair` to RESET or change what the
// crate checks posts against, is an `unsafe fn` with its contract.
use rdma_verbs::ffi::{ibv_qp_attr, ibv_qp_attr_mask, ibv_qp_state};
use rdma_verbs::QueuePair;

fn reset(qp: QueuePair) -> rdma_verbs::Result<()> {
    let mut attr = ibv_qp_attr {
        qp_state: ibv_qp_state::IBV_QPS_RESET,
        ..Default::default()
    };
    qp.modify(&mut attr, ibv_qp_attr_mask::IBV_QP_STATE)?;
    Ok(())
}

fn main() {}
