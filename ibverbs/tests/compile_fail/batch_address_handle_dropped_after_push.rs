// An address handle cannot be dropped inside the batch's closure once a request using it
// was pushed: the provider reads the handle until the batch is posted (`ibv_wr_complete`,
// after the closure), so the request borrows it for the batch's `'env`, not only until
// `push`. (rxe fails the send on a destroyed handle; another provider may use it freed.)
use rdma_verbs::{AddressHandle, MemoryRegion, QueuePair, DEFAULT_QKEY};

fn post(mr: MemoryRegion, mut qp: QueuePair, ah: AddressHandle) -> rdma_verbs::Result<()> {
    let sge = [mr.sge(..)?];
    qp.batch(|batch| {
        batch.send(1, &sge).ud(&ah, 0x12, DEFAULT_QKEY).push()?;
        drop(ah);
        Ok(())
    })
}

fn main() {}
