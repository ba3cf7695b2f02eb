//! The extended send API: `struct ibv_qp_ex` and the `ibv_wr_*` calls.
//!
//! A QP built with [`QueuePairBuilder::send_ops`](crate::QueuePairBuilder::send_ops) is
//! created with `ibv_create_qp_ex` and can post through a [`WrBatch`]: `ibv_wr_start`, one
//! `ibv_wr_*` call per request writing straight into the send queue, then
//! `ibv_wr_complete`. The requests are the same [`SendRequest`]s as for
//! [`QueuePair::post_send`](crate::QueuePair::post_send), checked the same way
//! ([`WrBatch::push`]), or [`BatchRequest`]s made in the batch by its method of the
//! operation ([`WrBatch::write`], ...), whose parts go to the `ibv_wr_*` calls without an
//! `ibv_send_wr` in between: the cheaper way, checked by the same rules.
//!
//! Between `ibv_wr_start` and `ibv_wr_complete` / `ibv_wr_abort` the provider holds the
//! send queue's lock, so a batch that is never ended would deadlock the next post. The
//! batch therefore lives only inside [`QueuePair::batch`]'s closure, owned by the crate,
//! which ends it on every way out: completed when the closure returns `Ok`, aborted when it
//! returns an error or panics. The closure gets `&mut WrBatch`, which cannot be moved out,
//! forgotten or swapped with another QP's batch.
//!
//! What a pushed request refers to (its address handle, the regions of its entries) is read
//! by the provider until the batch is posted, at the end of the closure, not only during
//! `push`. So a batch carries, as [`std::thread::scope`]'s scope does, a lifetime `'env`
//! of the environment outside the closure, and a request pushed into it borrows its
//! address handle and entries for `'env`: one made inside the closure cannot be pushed,
//! and one made outside cannot be dropped inside it (inline data is copied at the push).
//!
//! The `ibv_wr_*` calls go through function pointers of `ibv_qp_ex` that the provider sets
//! for the operations the QP was created with (rxe leaves the others null). So each is
//! called only once two checks agree: when the QP is built, the extended view's check
//! (`ExSend::check_provider`, in `ex/raw.rs` with the calls) finds every function a batch
//! of the QP may call set (else the build fails with [`Error::Unsupported`] naming it);
//! when a request is pushed, the limits' check finds its operation among those (enabled at
//! creation, on the transport). The dispatch from a request's opcode to its call is
//! exhaustive over [`WrOpcode`](crate::WrOpcode): an opcode without a call of its own is
//! refused ([`WrError::NotInBatch`](crate::WrError::NotInBatch)), never sent to another
//! operation's.

pub(super) mod raw; // the ibv_wr_* calls (ExSend, RawBatch): every unsafe block of the folder
mod request; // BatchRequest: a request made straight into a batch

pub use request::BatchRequest;

use std::marker::PhantomData;

use crate::error::{Error, Result};
use crate::qp::QueuePair;
use crate::wr::SendRequest;
use raw::RawBatch;

/// A batch of requests on an extended QP, open inside [`QueuePair::batch`].
///
/// `'qp` is the batch's borrow of its QP; `'env` the environment of the closure, for which
/// every request pushed borrows its address handle and entries (the provider reads them
/// until the batch is posted, after the closure).
pub struct WrBatch<'qp, 'env> {
    /// The batch's calls (`ex/raw.rs`).
    raw: RawBatch<'qp>,
    /// Invariant in `'env`, as [`std::thread::Scope`] is: the closure cannot shorten it to
    /// a lifetime of its own.
    env: PhantomData<&'env mut &'env ()>,
}

impl QueuePair {
    /// Posts a batch of extended work requests: `ibv_wr_start`, then `f` adds requests
    /// (a [`BatchRequest`] of the batch's method of the operation, or a [`SendRequest`]
    /// with [`WrBatch::push`]); when `f` returns `Ok` the batch is posted
    /// (`ibv_wr_complete`, all or nothing), when it returns an error or panics the batch
    /// is aborted (`ibv_wr_abort`) and nothing is posted. Fails before calling `f` unless
    /// the QP was built with [`send_ops`](crate::QueuePairBuilder::send_ops).
    ///
    /// What a request refers to is borrowed for `'env`, which outlasts the call: the
    /// address handles and the regions of the entries pushed are made before the batch
    /// and dropped after it.
    ///
    /// ```no_run
    /// # fn f(mut qp: rdma_verbs::QueuePair, mr: rdma_verbs::MemoryRegion, peer: rdma_verbs::RemoteMemory) -> rdma_verbs::Result<()> {
    /// let sge = [mr.sge(0..8)?];
    /// qp.batch(|batch| {
    ///     batch.write(1, &sge, peer).push()?;
    ///     // A request made aside, as for post_send:
    ///     batch.push(&rdma_verbs::SendRequest::send(2, &sge).signaled())
    /// })?;
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn batch<'env, R>(
        &mut self,
        f: impl FnOnce(&mut WrBatch<'_, 'env>) -> Result<R>,
    ) -> Result<R> {
        // `&mut self` keeps other posts off the QP until the batch is completed or aborted,
        // which its owner (this frame) does on every path, unwinding included.
        let Some(raw) = self.raw.start_batch() else {
            return Err(no_send_ops());
        };
        let mut batch = WrBatch {
            raw,
            env: PhantomData,
        };
        let value = f(&mut batch)?;
        batch.raw.complete()?;
        Ok(value)
    }
}

/// The error of [`QueuePair::batch`] on a QP built without send ops.
#[cold]
#[inline(never)]
fn no_send_ops() -> Error {
    Error::InvalidArgument {
        what: "queue pair",
        reason: "it was built without send_ops, so it has no ibv_wr_* API".into(),
    }
}

impl<'env> WrBatch<'_, 'env> {
    /// Adds `wr` to the batch (`ibv_wr_send`, `ibv_wr_rdma_write`, ... then
    /// `ibv_wr_set_ud_addr` for UD and `ibv_wr_set_sge_list` or, for inline requests,
    /// `ibv_wr_set_inline_data` / `ibv_wr_set_inline_data_list`).
    ///
    /// The request is checked as [`QueuePair::post_send`] checks it, and against the
    /// operations the QP's extended API was created for (a memory window bind, which has no
    /// send op, is refused: [`WrError::NotInBatch`](crate::WrError::NotInBatch)); a refused
    /// request ([`Error::Request`], with its index in the batch) is not added, nor is one
    /// past the send queue's depth (`max_send_wr`:
    /// [`WrError::BatchFull`](crate::WrError::BatchFull)), and ending the closure with the
    /// error (`?`) aborts the whole batch. The request's address handle and entries are
    /// borrowed for `'env`: until the batch is posted.
    // Inlined into the caller, where the request was usually just built: its opcode and
    // flags are then known, the match below folds to one call and the request's unused
    // fields are never written.
    #[inline(always)]
    pub fn push(&mut self, wr: &SendRequest<'env>) -> Result<()> {
        self.raw.push(wr)
    }

    /// Requests pushed so far.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.raw.len() == 0
    }
}
