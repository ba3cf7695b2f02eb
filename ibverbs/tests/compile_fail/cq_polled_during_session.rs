// The CQ cannot be polled another way while a poll session is open: `poll_session` takes
// the CQ by `&mut`, so no other poll of it (plain `ibv_poll_cq` included) runs while the
// provider holds the CQ's lock for the session.
use rdma_verbs::{ExtendedCq, WorkCompletion};

fn poll(mut cq: ExtendedCq) -> rdma_verbs::Result<()> {
    let mut wc = [WorkCompletion::default(); 4];
    cq.poll_session(|session| {
        let _ = session.next_wc()?;
        cq.poll(&mut wc)?;
        Ok(())
    })
}

fn main() {}
