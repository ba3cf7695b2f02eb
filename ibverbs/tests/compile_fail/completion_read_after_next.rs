// A completion cannot be read after the session moved to the next one: `next_wc` takes the
// session by `&mut` and the completion borrows it, because `ibv_next_poll` replaces the
// entry that the first completion's `ibv_wc_read_*` calls would read.
use rdma_verbs::ExtendedCq;

fn read(mut cq: ExtendedCq) -> rdma_verbs::Result<()> {
    cq.poll_session(|session| {
        let first = session.next_wc()?;
        let second = session.next_wc()?;
        println!("{:?} {:?}", first.map(|wc| wc.wr_id()), second.is_some());
        Ok(())
    })
}

fn main() {}
