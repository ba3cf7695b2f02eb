//! Operations that own their buffers: [`AsyncQp`] and its [`Op`] futures.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::ops::RangeBounds;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};

use super::cq::AsyncCq;
use super::raw::qp_queues;
use crate::cq::WorkCompletion;
use crate::error::{Error, Result};
use crate::mr::{AlignedBuffer, MemoryRegion, RegistrableMemory};
use crate::qp::QueuePair;
use crate::types::QpType;
use crate::wake::wake_all;
use crate::wr::{RecvRequest, RemoteMemory, SendRequest};
use crate::AddressHandle;

/// A connected QP whose operations are futures that own their buffer (feature `tokio`).
///
/// Each operation takes a [`MemoryRegion`] by value, posts a signaled request over it and
/// returns an [`Op`], which resolves to the region and the request's completion (success,
/// a remote error, or `WR_FLUSH_ERR` once the QP is in error). Between the post and the
/// completion the region sits in the QP's in-flight table, not in the future, so
/// dropping the future cannot free or reuse memory the HCA may still touch; see the
/// [module docs](super) for how cancellation and `mem::forget` are handled.
///
/// The table takes every completion of its CQ, so [`new`](Self::new) makes sure that each
/// is of a request the table posted: the QP's send and receive CQ is the [`AsyncCq`] given,
/// no other QP uses that CQ (and none can later: the CQ is the table's), the QP takes no
/// receives from a shared receive queue, and nothing was ever posted on it (so no request
/// of the caller's can complete under one of the table's ids); after that the QP is not
/// reachable to post on (only its number, endpoint and state are).
pub struct AsyncQp<B: RegistrableMemory = AlignedBuffer> {
    shared: Arc<Shared<B>>,
}

pub(crate) struct Shared<B: RegistrableMemory> {
    /// Destroyed first (`ibv_destroy_qp`, which ends the HCA's access to every buffer in
    /// the table), then the table's regions are deregistered and freed.
    qp: QueuePair,
    state: Mutex<State<B>>,
}

struct State<B: RegistrableMemory> {
    cq: AsyncCq,
    /// The QP's number: completions of other QPs on the CQ are not the table's.
    qp_num: u32,
    slots: HashMap<u64, Slot<B>>,
    next_id: u64,
    /// The tasks waiting on the table (a leaf lock: nothing else is locked under it).
    wakers: Arc<Mutex<Wakers>>,
    /// The waker the CQ is polled with: wakes every task in `wakers`.
    fan_out: Waker,
}

/// The tasks waiting on an [`AsyncQp`]'s table.
#[derive(Default)]
struct Wakers {
    /// The task of each op waiting for its completion, by request id.
    ops: HashMap<u64, Waker>,
    /// Tasks waiting in [`AsyncQp::settle`].
    settling: Vec<Waker>,
}

/// The waker the table's CQ is polled with (for the busy-poll yield and the channel's
/// event): wakes every task waiting on the table (each re-registers when polled), so the
/// first of them polled polls the CQ for all, and none that is never polled again can
/// keep the others from their completions.
struct FanOut(Arc<Mutex<Wakers>>);

impl std::task::Wake for FanOut {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut wakers = lock(&self.0);
        let mut all: Vec<Waker> = wakers.ops.drain().map(|(_, waker)| waker).collect();
        all.append(&mut wakers.settling);
        drop(wakers);
        wake_all(all);
    }
}

/// Locks a mutex whose data stays consistent if a holder panicked (none does).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A posted request's region.
enum Slot<B: RegistrableMemory> {
    /// Posted, not completed: the HCA may use the memory.
    InFlight {
        mr: MemoryRegion<B>,
        /// The op was dropped: free the region when the completion comes.
        abandoned: bool,
        /// The address handle of a UD send ([`AsyncQp::send_to`]), kept until it
        /// completes: the HCA may read it until then.
        ah: Option<Arc<AddressHandle>>,
    },
    /// Completed, waiting for its op to take it.
    Done {
        mr: MemoryRegion<B>,
        wc: WorkCompletion,
    },
}

/// How many completions one poll of the CQ takes.
const BATCH: usize = 16;

impl<B: RegistrableMemory> AsyncQp<B> {
    /// Wraps a connected QP whose send and receive CQ is `cq`'s, on which nothing was
    /// posted yet.
    ///
    /// Fails with [`Error::InvalidArgument`], naming the reason, if either of the QP's CQs
    /// is another one, if another QP uses the CQ, if the QP takes its receives from a shared
    /// receive queue, or if a request was ever posted on the QP (its completion, or a
    /// later one under the same `wr_id`, could not be told from the table's). Completions
    /// still on the CQ (of QPs destroyed before: no live one has any) are discarded.
    pub fn new(qp: QueuePair, cq: AsyncCq) -> Result<Self> {
        let (send_cq, recv_cq, srq) = qp_queues(&qp);
        let refused = |reason: &str| {
            Err(Error::InvalidArgument {
                what: "async queue pair",
                reason: reason.into(),
            })
        };
        if send_cq != cq.cq().ptr() || recv_cq != cq.cq().ptr() {
            return refused("its send and receive CQ must be the async CQ given");
        }
        // The CQ's holders: the AsyncCq and this QP (as send and as receive CQ); each other
        // QP on it holds it too, and nothing else does.
        if Arc::strong_count(cq.cq().inner()) != 3 {
            return refused("another QP uses its CQ, whose completions the table would take");
        }
        if !srq.is_null() {
            return refused(
                "it takes receives from a shared receive queue, posted under ids of the caller's",
            );
        }
        if qp.has_posted() {
            return refused(
                "requests were posted on it before: their completions could not be told from \
                 the table's (wrap the QP before posting)",
            );
        }
        let mut stale = [WorkCompletion::default(); BATCH];
        while !cq.cq().poll(&mut stale)?.is_empty() {}
        let qp_num = qp.qp_num();
        let wakers = Arc::default();
        let fan_out = Waker::from(Arc::new(FanOut(Arc::clone(&wakers))));
        Ok(AsyncQp {
            shared: Arc::new(Shared {
                qp,
                state: Mutex::new(State {
                    cq,
                    qp_num,
                    slots: HashMap::new(),
                    next_id: 0,
                    wakers,
                    fan_out,
                }),
            }),
        })
    }

    /// Wraps `id`'s QP (as [`new`](Self::new) does) while the id keeps librdmacm's
    /// pointer to it and the table alive: see
    /// [`AsyncCmId::async_qp`](super::cm::AsyncCmId::async_qp).
    #[cfg(feature = "cm")]
    pub(crate) fn on_cm_id(id: &mut crate::cm::CmId, cq: AsyncCq) -> Result<Self>
    where
        B: 'static,
        Shared<B>: Send + Sync,
    {
        let shared = id.lend_qp(|qp| Ok(AsyncQp::new(qp, cq)?.shared))?;
        Ok(AsyncQp { shared })
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.shared.qp.qp_num()
    }

    /// What the peer needs to connect to the QP.
    pub fn endpoint(&self) -> crate::Endpoint {
        self.shared.qp.endpoint()
    }

    /// Moves the QP to ERROR ([`QueuePair::to_error`]): every request in flight completes
    /// with `WR_FLUSH_ERR`, and its region comes back (or is freed) with that completion.
    pub fn to_error(&self) -> Result<()> {
        self.shared.qp.to_error()
    }

    /// Sends `range` of `mr` (`IBV_WR_SEND`).
    pub fn send(&self, mr: MemoryRegion<B>, range: impl RangeBounds<usize>) -> Result<Op<B>> {
        self.start(mr, |id, mr| {
            let sge = [mr.sge(range)?];
            self.post(SendRequest::send(id, &sge))
        })
    }

    /// Sends `range` of `mr` as one datagram (`IBV_WR_SEND` on a UD QP) to QP `remote_qpn`
    /// with Q_Key `remote_qkey` through `ah` (from a `UdPeer` of rdma_cm, a received
    /// completion, or an endpoint), which is kept until the send completes. On another
    /// type of QP, where a send has no address and would reach the connected peer, it is
    /// refused ([`Error::InvalidArgument`]).
    pub fn send_to(
        &self,
        mr: MemoryRegion<B>,
        range: impl RangeBounds<usize>,
        ah: Arc<AddressHandle>,
        remote_qpn: u32,
        remote_qkey: u32,
    ) -> Result<Op<B>> {
        let qp_type = self.shared.qp.qp_type();
        if qp_type != QpType::Ud {
            return Err(Error::InvalidArgument {
                what: "queue pair type",
                reason: format!("send_to sends datagrams, on a UD QP; this QP is {qp_type:?}"),
            });
        }
        self.start_with(mr, Some(Arc::clone(&ah)), |id, mr| {
            let sge = [mr.sge(range)?];
            self.post(SendRequest::send(id, &sge).ud(&ah, remote_qpn, remote_qkey))
        })
    }

    /// Receives the next message into `range` of `mr` (`ibv_post_recv`).
    pub fn recv(&self, mr: MemoryRegion<B>, range: impl RangeBounds<usize>) -> Result<Op<B>> {
        self.start(mr, |id, mr| {
            let sge = [mr.sge(range)?];
            let mut wr = [RecvRequest::new(id, &sge)];
            Ok(self.shared.qp.post_recv(&mut wr)?)
        })
    }

    /// Writes `range` of `mr` to the peer's `remote` (`IBV_WR_RDMA_WRITE`).
    pub fn write(
        &self,
        mr: MemoryRegion<B>,
        range: impl RangeBounds<usize>,
        remote: RemoteMemory,
    ) -> Result<Op<B>> {
        self.start(mr, |id, mr| {
            let sge = [mr.sge(range)?];
            self.post(SendRequest::write(id, &sge, remote))
        })
    }

    /// Reads the peer's `remote` into `range` of `mr` (`IBV_WR_RDMA_READ`).
    pub fn read(
        &self,
        mr: MemoryRegion<B>,
        range: impl RangeBounds<usize>,
        remote: RemoteMemory,
    ) -> Result<Op<B>> {
        self.start(mr, |id, mr| {
            let sge = [mr.sge(range)?];
            self.post(SendRequest::read(id, &sge, remote))
        })
    }

    /// Adds `add` to the 8 bytes at the peer's `remote.addr`; the old value lands in `mr`
    /// at `offset` (`IBV_WR_ATOMIC_FETCH_AND_ADD`).
    pub fn fetch_add(
        &self,
        mr: MemoryRegion<B>,
        offset: usize,
        remote: RemoteMemory,
        add: u64,
    ) -> Result<Op<B>> {
        self.start(mr, |id, mr| {
            let sge = mr.sge(offset..offset.saturating_add(8))?;
            self.post(SendRequest::fetch_add(id, &sge, remote, add))
        })
    }

    /// Swaps the 8 bytes at the peer's `remote.addr` for `swap` if they equal `compare`;
    /// the old value lands in `mr` at `offset` (`IBV_WR_ATOMIC_CMP_AND_SWP`).
    pub fn compare_swap(
        &self,
        mr: MemoryRegion<B>,
        offset: usize,
        remote: RemoteMemory,
        compare: u64,
        swap: u64,
    ) -> Result<Op<B>> {
        self.start(mr, |id, mr| {
            let sge = mr.sge(offset..offset.saturating_add(8))?;
            self.post(SendRequest::compare_swap(id, &sge, remote, compare, swap))
        })
    }

    /// Posts one send request, signaled.
    fn post(&self, wr: SendRequest<'_>) -> Result<()> {
        Ok(self.shared.qp.post_send(&mut [wr.signaled()])?)
    }

    /// Posts a request over `mr` with the next id (under the table's lock, so that its
    /// completion cannot be polled before its slot exists) and makes its slot. A request
    /// refused or not posted gives the region back to the allocator: the HCA never saw it.
    fn start(
        &self,
        mr: MemoryRegion<B>,
        post: impl FnOnce(u64, &MemoryRegion<B>) -> Result<()>,
    ) -> Result<Op<B>> {
        self.start_with(mr, None, post)
    }

    /// [`start`](Self::start), keeping `ah` with the request until it completes.
    fn start_with(
        &self,
        mr: MemoryRegion<B>,
        ah: Option<Arc<AddressHandle>>,
        post: impl FnOnce(u64, &MemoryRegion<B>) -> Result<()>,
    ) -> Result<Op<B>> {
        let mut state = self.shared.lock();
        let id = state.next_id;
        post(id, &mr)?;
        state.next_id += 1;
        let slot = Slot::InFlight {
            mr,
            abandoned: false,
            ah,
        };
        state.slots.insert(id, slot);
        Ok(Op {
            shared: Arc::clone(&self.shared),
            id,
            taken: false,
        })
    }

    /// How many requests are posted and not completed (their ops dropped or not).
    pub fn in_flight(&self) -> usize {
        let state = self.shared.lock();
        let posted = |slot: &&Slot<B>| matches!(slot, Slot::InFlight { .. });
        state.slots.values().filter(posted).count()
    }

    /// Waits until every posted request has completed or been flushed, freeing the
    /// regions of dropped ops as their completions come.
    pub fn settle(&self) -> Settle<'_, B> {
        Settle { qp: self }
    }
}

/// The future of [`AsyncQp::settle`].
#[must_use = "futures do nothing unless awaited"]
pub struct Settle<'a, B: RegistrableMemory = AlignedBuffer> {
    qp: &'a AsyncQp<B>,
}

impl<B: RegistrableMemory> Future for Settle<'_, B> {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<()>> {
        let mut after = After::default();
        let mut state = self.qp.shared.lock();
        let polled = loop {
            if !state.any_in_flight() {
                break Poll::Ready(Ok(()));
            }
            let mut wakers = lock(&state.wakers);
            if !wakers.settling.iter().any(|w| w.will_wake(cx.waker())) {
                wakers.settling.push(cx.waker().clone());
            }
            drop(wakers);
            match state.poll_cq(&mut after) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending => break Poll::Pending,
            }
        };
        drop(state);
        after.run();
        polled
    }
}

impl<B: RegistrableMemory> fmt::Debug for Settle<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settle").field("qp", self.qp).finish()
    }
}

impl<B: RegistrableMemory> Shared<B> {
    fn lock(&self) -> MutexGuard<'_, State<B>> {
        lock(&self.state)
    }
}

/// What a poll or a drop leaves for after the table's lock is released: the runtime's
/// wakers to wake or to drop, and the regions to free (a buffer's drop is the caller's
/// code). Nothing of the caller's or the runtime's runs under the lock, so none of it can
/// find the table locked by its own thread, or leave it half updated by a panic.
struct After<B: RegistrableMemory> {
    wake: Vec<Waker>,
    drop: Vec<Waker>,
    free: Vec<MemoryRegion<B>>,
    /// Address handles of completed UD sends (`ibv_destroy_ah` if the last clone).
    ahs: Vec<Arc<AddressHandle>>,
}

impl<B: RegistrableMemory> Default for After<B> {
    fn default() -> Self {
        After {
            wake: Vec::new(),
            drop: Vec::new(),
            free: Vec::new(),
            ahs: Vec::new(),
        }
    }
}

impl<B: RegistrableMemory> After<B> {
    /// Wakes first (so that no task is left waiting if a drop panics), then drops.
    fn run(self) {
        let After {
            wake,
            drop,
            free,
            ahs,
        } = self;
        wake_all(wake);
        std::mem::drop((drop, free, ahs));
    }
}

impl<B: RegistrableMemory> State<B> {
    /// Polls the CQ once (busy-polling and waiting as the [`AsyncCq`] does, with the
    /// table's fan-out waker) and hands each completion to its slot: `Ready` if some came.
    /// The wakers to wake and the regions to free go to `after`, run by the caller once it
    /// released the table's lock.
    fn poll_cq(&mut self, after: &mut After<B>) -> Poll<Result<()>> {
        let mut wc = [WorkCompletion::default(); BATCH];
        let fan_out = self.fan_out.clone();
        let mut cx = TaskContext::from_waker(&fan_out);
        let n = match self.cq.poll_deferred(&mut cx, &mut wc, &mut after.wake) {
            Poll::Ready(Ok(n)) => n,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        };
        for wc in wc[..n].iter().filter(|wc| wc.qp_num() == self.qp_num) {
            let id = wc.wr_id();
            match self.slots.remove(&id) {
                Some(Slot::InFlight { mr, abandoned, ah }) => {
                    // The HCA is done with the region and the address handle.
                    after.ahs.extend(ah);
                    if abandoned {
                        after.free.push(mr);
                    } else {
                        self.slots.insert(id, Slot::Done { mr, wc: *wc });
                        after.wake.extend(lock(&self.wakers).ops.remove(&id));
                    }
                }
                Some(done @ Slot::Done { .. }) => {
                    self.slots.insert(id, done);
                }
                None => {} // not a request of this table
            }
        }
        if !self.any_in_flight() {
            after.wake.append(&mut lock(&self.wakers).settling);
        }
        Poll::Ready(Ok(()))
    }

    /// Whether a posted request has not completed yet.
    fn any_in_flight(&self) -> bool {
        self.slots
            .values()
            .any(|slot| matches!(slot, Slot::InFlight { .. }))
    }
}

/// A posted operation of an [`AsyncQp`]: resolves to its region and its completion
/// (check the status: a flushed request completes with `WR_FLUSH_ERR`).
///
/// Dropping it before then leaves the region in the QP's in-flight table, which frees it
/// when the completion comes (or when the QP is destroyed); forgetting it
/// (`mem::forget`) keeps the region until the QP is destroyed.
#[must_use = "dropping the op does not cancel the request; it only gives up its region"]
pub struct Op<B: RegistrableMemory = AlignedBuffer> {
    shared: Arc<Shared<B>>,
    id: u64,
    /// The region was taken (the future resolved).
    taken: bool,
}

impl<B: RegistrableMemory> Future for Op<B> {
    type Output = Result<(MemoryRegion<B>, WorkCompletion)>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut after = After::default();
        let mut state = this.shared.lock();
        let polled = poll_op(this.id, &mut this.taken, &mut state, cx, &mut after);
        drop(state);
        after.run();
        polled
    }
}

/// [`Op::poll`] of the op of request `id` under the table's lock (`taken`: the op's flag);
/// what is left for after it goes to `after`.
fn poll_op<B: RegistrableMemory>(
    id: u64,
    taken: &mut bool,
    state: &mut State<B>,
    cx: &mut TaskContext<'_>,
    after: &mut After<B>,
) -> Poll<Result<(MemoryRegion<B>, WorkCompletion)>> {
    loop {
        match state.slots.get_mut(&id) {
            Some(Slot::Done { .. }) => {
                let Some(Slot::Done { mr, wc }) = state.slots.remove(&id) else {
                    unreachable!("matched above");
                };
                *taken = true;
                return Poll::Ready(Ok((mr, wc)));
            }
            Some(Slot::InFlight { .. }) => {
                let mut wakers = lock(&state.wakers);
                if !wakers.ops.get(&id).is_some_and(|w| w.will_wake(cx.waker())) {
                    let old = wakers.ops.insert(id, cx.waker().clone());
                    after.drop.extend(old);
                }
            }
            None => {
                return Poll::Ready(Err(Error::InvalidArgument {
                    what: "async operation",
                    reason: "polled after it completed".into(),
                }))
            }
        }
        match state.poll_cq(after) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
    }
}

impl<B: RegistrableMemory> Drop for Op<B> {
    fn drop(&mut self) {
        if self.taken {
            return;
        }
        let mut after = After::default();
        let mut state = self.shared.lock();
        match state.slots.get_mut(&self.id) {
            Some(Slot::InFlight { abandoned, .. }) => *abandoned = true,
            // Completed: the HCA is done with the region; freed below, outside the lock.
            Some(Slot::Done { .. }) => {
                if let Some(Slot::Done { mr, .. }) = state.slots.remove(&self.id) {
                    after.free.push(mr);
                }
            }
            None => {}
        }
        after.drop.extend(lock(&state.wakers).ops.remove(&self.id));
        drop(state);
        after.run();
    }
}

impl<B: RegistrableMemory> fmt::Debug for AsyncQp<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncQp")
            .field("qp_num", &self.shared.qp.qp_num())
            .field("in_flight", &self.in_flight())
            .finish()
    }
}

impl<B: RegistrableMemory> fmt::Debug for Op<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Op").field("wr_id", &self.id).finish()
    }
}
