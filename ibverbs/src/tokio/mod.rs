//! Async completions and device events on tokio (feature `tokio`).
//!
//! ```no_run
//! use futures_core::Stream;
//! use ibverbs::tokio::AsyncCq;
//! use ibverbs::WorkCompletion;
//!
//! # async fn f() -> ibverbs::Result<()> {
//! let ctx = ibverbs::Context::open_first()?;
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
//!
//! # Waiting for completions
//! [`AsyncCq::poll`] polls the CQ; while it is empty it polls again up to the spin budget,
//! yielding to the runtime after each empty poll (busy-polling: the latency of the blocking
//! loop, one core busy), then arms the CQ, polls once more and awaits the channel's fd.
//! Arm, poll, wait, read and acknowledge are all done inside, in the order that misses
//! nothing: a completion that arrives before the arm is found by the poll after it, one
//! after the arm raises an event.
//!
//! A channel is registered with the reactor once and shared by its CQs. Events are counted
//! per CQ (as for the blocking waits, see [`CompletionChannel`](crate::CompletionChannel)):
//! a task that finds the fd readable reads every queued event, counts each for its CQ and
//! wakes the task waiting on that CQ only. The reactor wakes one waiting task per
//! readiness (the last to register); when that task stops waiting (its event came, or it
//! was dropped) it wakes another waiting task to take its place, so the fd is never left
//! without a reader.
//!
//! The reactor is the current runtime's when the first [`AsyncCq`] of a channel (or the
//! [`AsyncEvents`] of a context) is made: outside a runtime that fails with
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument). The tokio dependency uses
//! its `net` feature (the reactor, `AsyncFd`) and `rt` (to tell that a runtime is current
//! instead of panicking); nothing here spawns tasks.

mod cq;
mod events;

pub(crate) use cq::ChannelFd;
pub use cq::{AsyncCq, CompletionStream, DEFAULT_SPIN};
pub use events::AsyncEvents;
