// A polling loop cannot return the slice of `CompletionQueue::poll` once it is non-empty:
// the borrow of `wc` the returned slice holds lasts across the loop's iterations (a
// limitation of today's borrow checker). `CompletionQueue::poll_until` is that loop.
use rdma_verbs::{CompletionQueue, WorkCompletion};

fn first<'w>(
    cq: &CompletionQueue,
    wc: &'w mut [WorkCompletion],
) -> rdma_verbs::Result<&'w mut [WorkCompletion]> {
    loop {
        let done = cq.poll(wc)?;
        if !done.is_empty() {
            return Ok(done);
        }
    }
}

fn main() {}
