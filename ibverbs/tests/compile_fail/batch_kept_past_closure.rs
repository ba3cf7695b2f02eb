// The closure's batch cannot be kept past the closure: its lifetime ends with the call of
// `QueuePair::batch`, which completes or aborts it, so no push reaches an ended batch.
use rdma_verbs::QueuePair;

fn keep(mut qp: QueuePair) -> rdma_verbs::Result<()> {
    let mut kept = None;
    qp.batch(|batch| {
        kept = Some(batch);
        Ok(())
    })
}

fn main() {}
