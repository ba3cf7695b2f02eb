//! Posting receives to a queue pair (`ibv_post_recv`), checked by a table lookup.
//!
//! A receive's requirement word is one bit, its class ([`recv_need`](crate::wr::limits)):
//! `1 << n` for `n` entries, or the class that needs the exact check. The QP keeps, per
//! class, the function a single request of that class is posted with: the provider's
//! `post_recv` (`ibv_context::ops`, read once at creation; `ibv_post_recv` calls the same
//! pointer) where the class fits the queue, else `refuse`. So the check of one request is
//! the load of its table entry, not a test and branch of its own, and a refused request
//! comes back from `refuse` to the exact check of a list, where it gets its typed error.
//! The table, `refuse` and the calls are in `qp/raw.rs` (`RecvQueue`, `RawQp::post_recv`).

use super::QueuePair;
use crate::wr::post_error::PostError;
use crate::wr::RecvRequest;

impl QueuePair {
    /// Posts a list of receive requests (`ibv_post_recv`), checked as
    /// [`post_send`](Self::post_send) checks sends.
    #[inline]
    pub fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        self.raw.post_recv(wrs)
    }
}
