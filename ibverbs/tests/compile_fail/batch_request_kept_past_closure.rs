// A batch request cannot be kept past the closure: it borrows the batch, which ends with
// the call of `QueuePair::batch`, so no request is pushed into an ended batch.
use rdma_verbs::{MemoryRegion, QueuePair};

fn keep(mr: MemoryRegion, mut qp: QueuePair) -> rdma_verbs::Result<()> {
    let sge = [mr.sge(..)?];
    let mut kept = None;
    qp.batch(|batch| {
        kept = Some(batch.send(1, &sge));
        Ok(())
    })?;
    kept.unwrap().push()
}

fn main() {}
