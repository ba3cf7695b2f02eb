// The closure's poll session cannot be moved out of its reference (to forget it, leaving
// the CQ locked): the closure gets `&mut PollSession` only.
use rdma_verbs::ExtendedCq;

fn forget(mut cq: ExtendedCq) -> rdma_verbs::Result<()> {
    cq.poll_session(|session| {
        std::mem::forget(*session);
        Ok(())
    })
}

fn main() {}
