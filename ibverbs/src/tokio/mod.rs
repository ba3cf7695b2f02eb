//! Async completions and device events on tokio (feature `tokio`).
//!
//! ```no_run
//! use rdma_verbs::tokio::AsyncCq;
//! use rdma_verbs::WorkCompletion;
//!
//! # async fn f() -> rdma_verbs::Result<()> {
//! let ctx = rdma_verbs::Context::open_first()?;
//! let channel = ctx.create_comp_channel()?;
//! let mut cq = AsyncCq::new(ctx.create_cq(64, Some(&channel))?)?.with_spin(1000);
//! // ... create QPs on cq.cq() and post ...
//! let mut wc = [WorkCompletion::default(); 16];
//! let n = cq.poll(&mut wc).await?;
//! for done in &wc[..n] {
//!     done.ok()?;
//! }
//! # Ok(()) }
//! ```
//!
//! | type | what it waits on | made by |
//! |---|---|---|
//! | [`AsyncCq`] | a CQ's completions: busy-polls, then its channel's fd on the reactor | [`AsyncCq::new`] (a CQ with a channel) |
//! | [`CompletionStream`] | the same, one completion at a time, as a `Stream` | [`AsyncCq::into_stream`] |
//! | [`AsyncEvents`] | the device's async events (`ibv_get_async_event`), as a `Stream` | [`AsyncEvents::new`] |
//! | [`AsyncQp`] | a connected QP whose operations own their buffers | [`AsyncQp::new`] (a QP on which nothing was posted yet, alone on its [`AsyncCq`]; an rdma_cm id's QP is wrapped before the connection with `cm::AsyncCmId::async_qp`, or taken out of a connected id with `cm::AsyncCmId::take_qp`) |
//! | `cm::AsyncCmChannel`, `cm::AsyncCmId`, `cm::Listener` (feature `cm` too) | rdma_cm events: resolve, connect, accept, incoming requests as a `Stream`, disconnect | `cm::AsyncCmChannel::new` |
//! | [`Op`] | one posted send, receive, RDMA write or read, or atomic: resolves to its region and completion | [`AsyncQp::send`], [`AsyncQp::send_to`] (UD), [`AsyncQp::recv`], [`AsyncQp::write`], [`AsyncQp::read`], [`AsyncQp::fetch_add`], [`AsyncQp::compare_swap`] |
//!
//! # Waiting for completions
//! [`AsyncCq::poll`] polls the CQ; while it is empty it polls again up to the spin budget,
//! yielding to the runtime after every 32 empty polls (busy-polling: the latency of the
//! blocking loop, one core busy), then arms the CQ, polls once more and awaits the channel's fd.
//! Arm, poll, wait, read and acknowledge are all done inside, in the order that misses
//! nothing: a completion that arrives before the arm is found by the poll after it, one
//! after the arm raises an event.
//!
//! A channel is registered with the reactor once and shared by its CQs. Events are counted
//! per CQ (as for the blocking waits, see [`CompletionChannel`](crate::CompletionChannel)):
//! a task that finds the fd readable reads every queued event, counts each for its CQ and
//! wakes the task waiting on that CQ only. The reactor holds no task's waker but the
//! channel's own, which wakes every task then waiting on a CQ of the channel; whichever is
//! polled first drains the fd, and the others find their events counted (or wait again).
//! So a wait that is kept but never polled again (a [`CompletionStream`] left idle, a
//! stored future) stalls nothing but itself: no subset of waiting tasks can keep the
//! others from their events.
//!
//! # Operations that own their buffers, and cancellation
//! The HCA may read or write a request's memory from the post until its completion. An
//! [`Op`] cannot keep that memory alive itself: a future may be dropped at any await point
//! (a `select!`, a timeout, a cancelled task), and dropping it must not free or reuse the
//! memory while the request runs. So the region is never in the future:
//!
//! - [`AsyncQp::send`] and its siblings take the [`MemoryRegion`](crate::MemoryRegion) by
//!   value and, under the QP's table lock, post the request with a fresh `wr_id` and move
//!   the region into the QP's in-flight table under that id. The returned [`Op`] holds
//!   only the id and a handle on the table.
//! - Whoever polls the CQ (any op, or [`AsyncQp::settle`]) hands each completion to its
//!   table entry: the region and completion wait there for their op, which takes both
//!   when polled. A completion is the HCA's last use of the request's memory (also when
//!   the request failed or was flushed with `WR_FLUSH_ERR` after the QP went to error).
//! - Dropping an [`Op`] before then marks its entry abandoned; the region stays in the
//!   table and is deregistered and freed when the completion arrives, never before.
//!   Dropping it after the completion came frees the region at once.
//! - Forgetting an [`Op`] (`mem::forget`) leaks its handle on the table, so the table, the
//!   QP and the regions are never freed: forgetting only leaks. Dropping the
//!   [`AsyncQp`] and every op destroys the QP first (`ibv_destroy_qp`: the HCA is then
//!   done with every request) and then deregisters and frees what the table still holds.
//! - Nothing is reachable from safe code in between: the table is private, and the regions
//!   come back only with their completion.
//!
//! The CQ is polled by the tasks that await ops, with a waker of the QP's table that wakes
//! every task then waiting on one of its ops (for the busy-poll yield and for the channel's
//! event), so whichever is polled next polls the CQ for all and wakes each op whose
//! completion it takes; an op kept but never polled again stalls only itself.
//! Completions of requests whose op was dropped are only taken when some op is awaited or
//! [`AsyncQp::settle`] runs.
//!
//! # Wakers
//! A waker is the runtime's code. The crate calls one only with none of its locks held and
//! its state consistent: the channel acknowledges an event before it wakes the task
//! waiting for it, and the table hands a whole batch of completions to their ops (and
//! frees the regions of dropped ops after that, outside the lock) before it wakes anyone.
//! So a waker that panics leaves nothing half done (every other waker is still woken, then
//! its panic goes on in the task that woke it), and one that polls a future of the crate
//! again finds nothing locked. The page [`docs::soundness`](crate::docs::soundness) has a
//! row for each future.
//!
//! The reactor is the current runtime's when the first [`AsyncCq`] of a channel (or the
//! [`AsyncEvents`] of a context) is made: outside a runtime, or in one built without its
//! I/O driver (no `enable_io`), that fails with
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument). tokio's registration panics
//! in a runtime without the driver and has no call that tells first; the crate catches that
//! panic and returns the error (the panic hook still prints tokio's message; with
//! `panic = "abort"` the process aborts there, as it would with tokio's own types). The
//! tokio dependency uses its `net` feature (the reactor, `AsyncFd`) and `rt` (to tell that
//! a runtime is current); nothing here spawns tasks.

#[cfg(feature = "cm")]
#[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
pub mod cm;
mod cq;
mod events;
mod ops;
mod raw; // the system calls of the tokio module: every unsafe block of the folder
#[cfg(feature = "cm")]
#[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
pub mod stream;
#[cfg(feature = "cm")]
mod ticker;

pub(crate) use cq::ChannelFd;
pub use cq::{AsyncCq, CompletionStream, PollCq, DEFAULT_SPIN};
pub use events::AsyncEvents;
pub use ops::{AsyncQp, Op, Settle};
pub(crate) use raw::OwnsFd;
