// An address handle made inside the batch's closure cannot be pushed: it would be dropped
// at the end of the closure, before the batch is posted (`ibv_wr_complete`), while the
// provider still holds it. A request borrows its handle for the batch's `'env`, which
// outlasts the closure.
use rdma_verbs::{Endpoint, MemoryRegion, ProtectionDomain, QueuePair, SendRequest, DEFAULT_QKEY};

fn post(
    pd: ProtectionDomain,
    mr: MemoryRegion,
    mut qp: QueuePair,
    peer: Endpoint,
) -> rdma_verbs::Result<()> {
    let sge = [mr.sge(..)?];
    qp.batch(|batch| {
        let ah = pd.create_ah(&peer).build()?;
        batch.push(&SendRequest::send(1, &sge).ud(&ah, 0x12, DEFAULT_QKEY))
    })
}

fn main() {}
