// A work request cannot outlive its scatter/gather list: the request borrows the list, so
// what it points the provider at is alive when it is posted.
use rdma_verbs::{MemoryRegion, QueuePair, SendRequest};

fn post(mr: MemoryRegion, qp: QueuePair) -> rdma_verbs::Result<()> {
    let mut wr = {
        let sge = [mr.sge(..)?];
        SendRequest::send(1, &sge)
    };
    qp.post_send(std::slice::from_mut(&mut wr))?;
    Ok(())
}

fn main() {}
