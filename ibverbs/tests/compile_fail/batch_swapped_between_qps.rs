// Two open batches cannot be swapped: each closure's batch has a lifetime of its own, so
// the batch each `QueuePair::batch` ends is the one it started on its own QP.
use rdma_verbs::QueuePair;

fn swap(mut x: QueuePair, mut y: QueuePair) -> rdma_verbs::Result<()> {
    x.batch(|bx| {
        y.batch(|by| {
            std::mem::swap(bx, by);
            Ok(())
        })
    })
}

fn main() {}
