// A queue pair that is not connected has no `post_send`: `create_qp` gives a
// `PreparedQueuePair` (INIT), which can post receives and tell its endpoint; only
// `connect` (RC, UC) or `ready` (UD) gives the `QueuePair` that sends.
use rdma_verbs::{CompletionQueue, MemoryRegion, ProtectionDomain, QpType, SendRequest};

fn post(pd: ProtectionDomain, cq: CompletionQueue, mr: MemoryRegion) -> rdma_verbs::Result<()> {
    let qp = pd.create_qp(QpType::Rc, &cq, &cq).build()?;
    let sge = [mr.sge(..)?];
    qp.post_send(&mut [SendRequest::send(1, &sge)])?;
    Ok(())
}

fn main() {}
