// A batch request cannot outlive its address handle: it borrows the handle until it is
// pushed, so the check and `ibv_wr_set_ud_addr` never read a destroyed one.
use rdma_verbs::{AddressHandle, MemoryRegion, QueuePair, DEFAULT_QKEY};

fn post(mr: MemoryRegion, mut qp: QueuePair, ah: AddressHandle) -> rdma_verbs::Result<()> {
    let sge = [mr.sge(..)?];
    qp.batch(|batch| {
        let wr = batch.send(1, &sge).ud(&ah, 0x12, DEFAULT_QKEY);
        drop(ah);
        wr.push()
    })
}

fn main() {}
