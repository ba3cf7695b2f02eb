// A region cannot be dropped while a scatter/gather entry of it is alive: the entry borrows
// the region, so the request it goes into cannot point at deregistered (and freed) memory.
use rdma_verbs::{AccessFlags, ProtectionDomain, QueuePair, RemoteMemory, SendRequest};

fn post(pd: ProtectionDomain, qp: QueuePair, peer: RemoteMemory) -> rdma_verbs::Result<()> {
    let mr = pd.alloc_mr(64, AccessFlags::LOCAL_WRITE)?;
    let sge = [mr.sge(..)?];
    drop(mr);
    qp.post_send(&mut [SendRequest::write(1, &sge, peer)])?;
    Ok(())
}

fn main() {}
