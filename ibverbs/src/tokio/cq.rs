//! Completions awaited on tokio: [`AsyncCq`] and its [`CompletionStream`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};

use ::tokio::io::unix::AsyncFd;
use futures_core::Stream;

use super::raw::{reactor_error, register, Registered};
use crate::cq::channel::CompletionChannel;
use crate::cq::{CompletionQueue, RawChannel, WorkCompletion};
use crate::error::Result;
use crate::wake::wake_all;

/// How many empty polls [`AsyncCq`] makes by default before it arms the CQ and waits for
/// an event.
pub const DEFAULT_SPIN: u32 = 64;

/// How many empty polls [`AsyncCq`] makes in a row, within its spin budget, before it
/// yields to the runtime. A yield costs far more than an empty `ibv_poll_cq`: a pass
/// through the scheduler and, for the future `block_on` runs, a poll of the reactor (an
/// `epoll_wait` system call); yielding after every empty poll put one of those between
/// a completion's arrival and its discovery.
const POLLS_PER_YIELD: u32 = 32;

/// A completion channel's fd registered with tokio's reactor (one registration per
/// channel, shared by its CQs), and the waker the reactor wakes when it is readable (every
/// task waiting on a CQ of the channel).
pub(crate) struct ChannelFd {
    fd: AsyncFd<Registered<Arc<RawChannel>>>,
    fan_out: Waker,
}

/// A CQ whose completions are awaited (feature `tokio`).
///
/// [`poll`](Self::poll) busy-polls first: while the CQ is empty it polls again up to the
/// spin budget ([`with_spin`](Self::with_spin)), yielding to the runtime after every 32
/// empty polls, then arms the CQ (`ibv_req_notify_cq`), polls once more (a completion that came before
/// the arm raises no event) and waits for the channel's fd on tokio's reactor; when the
/// event comes it is read and acknowledged (`ibv_get_cq_event`, `ibv_ack_cq_events`) and
/// the CQ polled again. No completion can be missed between the last poll and the arm.
///
/// Several CQs may share one channel: an event read by any of them is counted for the CQ
/// it belongs to and wakes only the task waiting on that CQ. The channel is registered
/// with the reactor once, by the first `AsyncCq` made on it; keep a channel's CQs on one
/// runtime, and do not wait on them with the blocking calls
/// ([`CompletionQueue::poll_wait`], [`CompletionQueue::wait`]) meanwhile.
pub struct AsyncCq {
    cq: CompletionQueue,
    channel: CompletionChannel,
    spin: u32,
    /// Empty polls since the last completion.
    spun: u32,
    /// Whether the CQ is armed and its event not yet taken.
    armed: bool,
    /// Whether a task waits for the CQ's event (its waker is kept by the channel).
    waiting: bool,
}

impl AsyncCq {
    /// Wraps a CQ made with a completion channel, registering the channel's fd with the
    /// current tokio runtime's reactor if no CQ of the channel did before.
    ///
    /// Fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument) if the CQ has
    /// no channel, no tokio runtime is current or the runtime has no I/O driver.
    pub fn new(cq: CompletionQueue) -> Result<AsyncCq> {
        let channel = cq.channel()?.clone();
        {
            // Under the channel's lock, so that it is registered once.
            let _events = channel.lock();
            if channel.reactor().get().is_none() {
                let fd = register(Arc::clone(channel.raw()), "async completion queue")?;
                // Cannot fail: set under the lock after checking it was empty.
                let fan_out = channel.fan_out();
                let _ = channel.reactor().set(ChannelFd { fd, fan_out });
            }
        }
        Ok(AsyncCq {
            cq,
            channel,
            spin: DEFAULT_SPIN,
            spun: 0,
            armed: false,
            waiting: false,
        })
    }

    /// Sets the spin budget: how many empty polls before waiting for an event (0: wait as
    /// soon as the CQ is empty). The CQ yields to the runtime after every 32 empty polls,
    /// so spinning does not starve other tasks, but it keeps the thread busy.
    pub fn with_spin(mut self, polls: u32) -> Self {
        self.spin = polls;
        self
    }

    /// The CQ, to create QPs with.
    pub fn cq(&self) -> &CompletionQueue {
        &self.cq
    }

    /// Waits for completions and polls up to `wc.len()` of them into `wc` (`ibv_poll_cq`);
    /// resolves to how many, at least 1 unless `wc` is empty.
    ///
    /// Dropping the future while it waits gives up the wait.
    pub fn poll<'a>(&'a mut self, wc: &'a mut [WorkCompletion]) -> PollCq<'a> {
        PollCq { cq: self, wc }
    }

    /// Gives up a wait for the CQ's event: the channel drops the task's waker.
    pub(crate) fn stop_waiting(&mut self) {
        if std::mem::take(&mut self.waiting) {
            let waker = self.channel.lock().stop_waiting(self.cq.ptr());
            drop(waker); // outside the lock
        }
    }

    /// The poll function under [`poll`](Self::poll), for hand-written futures: `Ready` with
    /// the number of completions written to `wc` (at least 1 unless `wc` is empty), or
    /// `Pending` with the task woken when there may be more.
    pub fn poll_completions(
        &mut self,
        cx: &mut TaskContext<'_>,
        wc: &mut [WorkCompletion],
    ) -> Poll<Result<usize>> {
        let mut wakes = Vec::new();
        let polled = self.poll_deferred(cx, wc, &mut wakes);
        wake_all(wakes);
        polled
    }

    /// [`poll_completions`](Self::poll_completions), leaving every wake to the caller: the
    /// wakers to wake (the task's own, to yield; the waiters of the CQs whose events it
    /// read) go to `wakes`, so that a caller holding a lock wakes them after releasing it.
    pub(crate) fn poll_deferred(
        &mut self,
        cx: &mut TaskContext<'_>,
        wc: &mut [WorkCompletion],
        wakes: &mut Vec<Waker>,
    ) -> Poll<Result<usize>> {
        if wc.is_empty() {
            return Poll::Ready(Ok(0));
        }
        loop {
            let n = self.cq.poll(wc)?.len();
            if n > 0 {
                self.spun = 0;
                return Poll::Ready(Ok(n));
            }
            if self.spun < self.spin {
                self.spun += 1;
                if self.spun % POLLS_PER_YIELD != 0 {
                    std::hint::spin_loop();
                    continue;
                }
                wakes.push(cx.waker().clone());
                return Poll::Pending;
            }
            if !self.armed {
                self.cq.req_notify(false)?;
                self.armed = true;
                continue; // poll once more: what came before the arm raises no event
            }
            match self.poll_event(cx, wakes)? {
                Poll::Ready(()) => {
                    self.armed = false;
                    self.spun = 0;
                    self.waiting = false;
                }
                Poll::Pending => {
                    self.waiting = true;
                    return Poll::Pending;
                }
            }
        }
    }

    /// Takes this CQ's next event, draining the channel's fd when the reactor says it is
    /// readable; `Pending` with the waker kept for the CQ's next event (and for the fd's
    /// next readiness: the reactor holds the channel's fan-out waker, not this task's).
    /// Wakers to wake go to `wakes` ([`poll_deferred`](Self::poll_deferred)).
    fn poll_event(&self, cx: &mut TaskContext<'_>, wakes: &mut Vec<Waker>) -> Result<Poll<()>> {
        let raw = self.cq.ptr();
        let reactor = self.channel.reactor().get().expect("registered in new");
        let mut fan_out = TaskContext::from_waker(&reactor.fan_out);
        loop {
            {
                let mut events = self.channel.lock();
                if events.take(raw) {
                    let waker = events.stop_waiting(raw);
                    drop(events);
                    drop(waker);
                    return Ok(Poll::Ready(()));
                }
                events.wait(raw, cx.waker());
            }
            // With the task's budget spent, tokio's readiness poll would wake the fan-out
            // at once, here: deferred to the caller instead. An event counted meanwhile
            // wakes this task.
            if !::tokio::task::coop::has_budget_remaining() {
                wakes.push(reactor.fan_out.clone());
                return Ok(Poll::Pending);
            }
            match reactor.fd.poll_read_ready(&mut fan_out) {
                Poll::Pending => return Ok(Poll::Pending),
                Poll::Ready(ready) => {
                    let mut ready = ready.map_err(reactor_error)?;
                    self.channel.drain(wakes)?;
                    ready.clear_ready();
                }
            }
        }
    }

    /// A stream of the CQ's completions, one at a time.
    pub fn into_stream(self) -> CompletionStream {
        CompletionStream {
            cq: self,
            buf: [WorkCompletion::default(); STREAM_BATCH],
            next: 0,
            end: 0,
        }
    }
}

impl Drop for AsyncCq {
    fn drop(&mut self) {
        self.stop_waiting();
    }
}

/// The future of [`AsyncCq::poll`].
#[must_use = "futures do nothing unless awaited"]
pub struct PollCq<'a> {
    cq: &'a mut AsyncCq,
    wc: &'a mut [WorkCompletion],
}

impl Future for PollCq<'_> {
    type Output = Result<usize>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<usize>> {
        let this = self.get_mut();
        this.cq.poll_completions(cx, this.wc)
    }
}

impl Drop for PollCq<'_> {
    fn drop(&mut self) {
        self.cq.stop_waiting();
    }
}

impl std::fmt::Debug for PollCq<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollCq").field("cq", &self.cq).finish()
    }
}

impl std::fmt::Debug for AsyncCq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncCq")
            .field("cq", &self.cq)
            .field("spin", &self.spin)
            .finish()
    }
}

/// How many completions a [`CompletionStream`] polls at once.
const STREAM_BATCH: usize = 16;

/// The completions of an [`AsyncCq`] as a [`Stream`], each as polled (check its status);
/// an error of `ibv_poll_cq` or of the wait is an `Err` item. The stream does not end.
pub struct CompletionStream {
    cq: AsyncCq,
    buf: [WorkCompletion; STREAM_BATCH],
    next: usize,
    end: usize,
}

impl Stream for CompletionStream {
    type Item = Result<WorkCompletion>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.next == this.end {
            match this.cq.poll_completions(cx, &mut this.buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Ok(n)) => (this.next, this.end) = (0, n),
            }
        }
        this.next += 1;
        Poll::Ready(Some(Ok(this.buf[this.next - 1])))
    }
}

impl std::fmt::Debug for CompletionStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionStream")
            .field("cq", &self.cq)
            .field("buffered", &(self.end - self.next))
            .finish()
    }
}
