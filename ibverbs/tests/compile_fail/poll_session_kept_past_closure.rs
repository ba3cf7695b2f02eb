// The closure's poll session cannot be kept past the closure: `ExtendedCq::poll_session`
// calls `ibv_end_poll` when the closure returns, so no later call reaches an ended session.
use rdma_verbs::ExtendedCq;

fn keep(mut cq: ExtendedCq) -> rdma_verbs::Result<()> {
    let mut kept = None;
    cq.poll_session(|session| {
        kept = Some(session);
        Ok(())
    })
}

fn main() {}
