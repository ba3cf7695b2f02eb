// A batch cannot be forgotten: there is no call that returns one. Between `ibv_wr_start`
// and `ibv_wr_complete` the provider holds the send queue's lock, so a `WrBatch` exists
// only inside the closure of `QueuePair::batch`, which ends it on every way out; a batch
// the caller owned could be passed to `mem::forget` and leave the queue locked.
use rdma_verbs::QueuePair;

fn forget(mut qp: QueuePair) -> rdma_verbs::Result<()> {
    std::mem::forget(qp.batch()?);
    Ok(())
}

fn main() {}
