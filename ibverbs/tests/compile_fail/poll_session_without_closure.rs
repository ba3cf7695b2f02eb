// A poll session cannot be forgotten: there is no call that returns one. Between a
// successful `ibv_start_poll` and `ibv_end_poll` the provider holds the CQ's lock, so a
// `PollSession` exists only inside the closure of `ExtendedCq::poll_session`, which ends it
// on every way out; a session the caller owned could be passed to `mem::forget`.
use rdma_verbs::ExtendedCq;

fn forget(mut cq: ExtendedCq) -> rdma_verbs::Result<()> {
    std::mem::forget(cq.poll_session()?);
    Ok(())
}

fn main() {}
