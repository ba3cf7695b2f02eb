// A UD request cannot outlive its address handle: the request borrows the handle, so the
// provider never reads `wr.ud.ah` of a destroyed one.
use rdma_verbs::{AddressHandle, MemoryRegion, QueuePair, SendRequest, DEFAULT_QKEY};

fn post(mr: MemoryRegion, qp: QueuePair, ah: AddressHandle) -> rdma_verbs::Result<()> {
    let sge = [mr.sge(..)?];
    let wr = SendRequest::send(1, &sge).ud(&ah, 0x12, DEFAULT_QKEY);
    drop(ah);
    qp.post_send(&mut [wr])?;
    Ok(())
}

fn main() {}
