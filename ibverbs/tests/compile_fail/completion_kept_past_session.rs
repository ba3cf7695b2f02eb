// A completion of a poll session cannot be kept past the closure: an `ExCompletion` borrows
// the session, whose `ibv_wc_read_*` calls read the provider's current entry, valid only
// until the session moves on or ends.
use rdma_verbs::ExtendedCq;

fn keep(mut cq: ExtendedCq) -> rdma_verbs::Result<()> {
    let mut kept = None;
    cq.poll_session(|session| {
        kept = session.next_wc()?;
        Ok(())
    })
}

fn main() {}
