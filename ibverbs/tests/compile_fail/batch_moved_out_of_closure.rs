// The closure's batch cannot be moved out of its reference (to forget it, leaving the send
// queue locked): the closure gets `&mut WrBatch` only.
use rdma_verbs::QueuePair;

fn forget(mut qp: QueuePair) -> rdma_verbs::Result<()> {
    qp.batch(|batch| {
        std::mem::forget(*batch);
        Ok(())
    })
}

fn main() {}
