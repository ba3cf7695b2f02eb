// A region cannot be written while a scatter/gather entry of it is alive: `write` takes the
// region by `&mut`, which the entry's shared borrow excludes, so the bytes a request sends
// are not changed between building it and posting it.
use rdma_verbs::{AccessFlags, ProtectionDomain, QueuePair, RemoteMemory, SendRequest};

fn post(pd: ProtectionDomain, qp: QueuePair, peer: RemoteMemory) -> rdma_verbs::Result<()> {
    let mut mr = pd.alloc_mr(64, AccessFlags::LOCAL_WRITE)?;
    let sge = [mr.sge(..)?];
    mr.write(0, b"changed under the request")?;
    qp.post_send(&mut [SendRequest::write(1, &sge, peer)])?;
    Ok(())
}

fn main() {}
