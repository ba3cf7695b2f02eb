// A region cannot be dropped inside the batch's closure once a request with an entry of it
// was pushed: the HCA reads the entry when the batch is posted (`ibv_wr_complete`, after
// the closure), so the entries are borrowed for the batch's `'env`, not only until `push`.
use rdma_verbs::{MemoryRegion, QueuePair, RemoteMemory, SendRequest};

fn post(mr: MemoryRegion, mut qp: QueuePair, peer: RemoteMemory) -> rdma_verbs::Result<()> {
    let sge = [mr.sge(..)?];
    qp.batch(|batch| {
        batch.push(&SendRequest::write(1, &sge, peer))?;
        drop(mr);
        Ok(())
    })
}

fn main() {}
