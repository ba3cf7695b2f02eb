//! rdma_cm as futures (features `tokio` and `cm`): [`AsyncCmChannel`], its ids, listeners
//! and connections.
//!
//! The event channel's fd is registered with the reactor, and every event read from it is
//! queued for the id it is for; each id's futures take that id's events. The reactor holds
//! a waker that wakes every task waiting on an id of the channel (as for completion
//! channels), so an id whose future is kept but never polled again stalls only itself.
//!
//! Cancellation: [`AsyncCmId::connect`] and [`ConnectRequest::accept`] take the id by
//! value, so dropping their future drops the id (`rdma_destroy_id`, which tears down a
//! connection under way) and nothing is left half-connected; events the kernel had queued
//! for it are dropped with its queue. A request yielded by a [`Listener`] and dropped is
//! destroyed the same way (the peer sees a reject).

use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use ::tokio::io::unix::AsyncFd;
use futures_core::Stream;

use super::cq::AsyncCq;
use super::ops::AsyncQp;
use super::raw::{reactor_error, register, Registered};
use crate::cm::{
    CmEvent, CmEventKind, CmId, ConnParam, EventChannel, IbAddr, IdHandle, MulticastJoinFlag,
    PortSpace, UdPeer,
};
use crate::error::{Error, Result};
use crate::mr::RegistrableMemory;
use crate::wake::wake_all;
use crate::{QueuePair, QueuePairBuilder};

/// An rdma_cm event channel on tokio's reactor (features `tokio` and `cm`).
#[derive(Clone)]
pub struct AsyncCmChannel {
    shared: Arc<Shared>,
}

struct Shared {
    /// The event channel on the reactor: the registration holds it, so its fd stays open
    /// while registered.
    fd: AsyncFd<Registered<EventChannel>>,
    /// The waker the reactor holds: wakes every waiting id.
    fan_out: Waker,
    ids: Arc<Mutex<Ids>>,
}

impl Shared {
    /// The event channel.
    fn channel(&self) -> &EventChannel {
        self.fd.get_ref().owner()
    }
}

/// The events read for each id of the channel and not yet taken.
#[derive(Default)]
struct Ids(HashMap<IdHandle, Queue>);

#[derive(Default)]
struct Queue {
    events: VecDeque<CmEvent>,
    /// The task waiting for the id's next event.
    waker: Option<Waker>,
}

/// Wakes the task waiting on each id (each re-registers when polled).
struct FanOut(Arc<Mutex<Ids>>);

impl std::task::Wake for FanOut {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let wakers: Vec<Waker> = lock(&self.0)
            .0
            .values_mut()
            .filter_map(|queue| queue.waker.take())
            .collect();
        wake_all(wakers);
    }
}

fn lock(ids: &Mutex<Ids>) -> MutexGuard<'_, Ids> {
    // Nothing panics while holding the lock; a poisoned state is still consistent.
    ids.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Ids {
    /// Removes `id`'s queue; the ids of connect requests still in it go with it (returned,
    /// to be destroyed outside the lock).
    fn remove(&mut self, id: IdHandle, dropped: &mut Vec<CmEvent>) {
        let Some(queue) = self.0.remove(&id) else {
            return;
        };
        for event in queue.events {
            if let CmEventKind::ConnectRequest { id: child, .. } = &event.kind {
                self.remove(child.handle(), dropped);
            }
            dropped.push(event);
        }
    }
}

impl AsyncCmChannel {
    /// Creates an event channel (`rdma_create_event_channel`) and registers its fd with the
    /// current tokio runtime's reactor; fails with [`Error::InvalidArgument`] outside one or
    /// in one without an I/O driver.
    pub fn new() -> Result<Self> {
        let fd = register(EventChannel::new()?, "async CM event channel")?;
        let ids = Arc::new(Mutex::new(Ids::default()));
        let fan_out = Waker::from(Arc::new(FanOut(Arc::clone(&ids))));
        Ok(AsyncCmChannel {
            shared: Arc::new(Shared { fd, fan_out, ids }),
        })
    }

    /// Creates an id on the channel (`rdma_create_id`) in port space `ps`.
    pub fn create_id(&self, ps: PortSpace) -> Result<AsyncCmId> {
        let id = self.shared.channel().create_id(ps)?;
        lock(&self.shared.ids)
            .0
            .insert(id.handle(), Queue::default());
        Ok(self.adopt(id))
    }

    /// Wraps an id whose queue exists.
    fn adopt(&self, id: CmId) -> AsyncCmId {
        AsyncCmId {
            id: Some(id),
            channel: self.clone(),
        }
    }

    /// Binds a new id of the TCP port space (RC connections) to `addr` (`rdma_bind_addr`,
    /// port 0: one the CM picks) and listens on it (`rdma_listen`, `backlog` requests
    /// pending at most). For another port space (UD requests of the UDP one), create the
    /// id, bind it, and call [`AsyncCmId::listen`].
    pub fn listen(&self, addr: SocketAddr, backlog: i32) -> Result<Listener> {
        let id = self.create_id(PortSpace::Tcp)?;
        id.id().bind(addr)?;
        id.listen(backlog)
    }

    /// `id`'s next event, reading the fd when the reactor says it is readable.
    fn poll_event(&self, id: IdHandle, cx: &mut TaskContext<'_>) -> Poll<Result<CmEvent>> {
        let mut fan_out = TaskContext::from_waker(&self.shared.fan_out);
        loop {
            {
                let mut ids = lock(&self.shared.ids);
                // An AsyncCmId's queue lives as long as it, and its id cannot be swapped
                // out (there is no `&mut CmId`): not reached, but no reason to panic.
                let Some(queue) = ids.0.get_mut(&id) else {
                    return Poll::Ready(Err(Error::InvalidArgument {
                        what: "CM id",
                        reason: "not an id of this async channel".into(),
                    }));
                };
                if let Some(event) = queue.events.pop_front() {
                    queue.waker = None;
                    return Poll::Ready(Ok(event));
                }
                if !queue
                    .waker
                    .as_ref()
                    .is_some_and(|w| w.will_wake(cx.waker()))
                {
                    queue.waker = Some(cx.waker().clone());
                }
            }
            // Not under the lock: tokio wakes the fan-out (which locks) at once when the
            // task's budget is spent.
            match self.shared.fd.poll_read_ready(&mut fan_out) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(ready) => {
                    let mut ready = ready.map_err(reactor_error)?;
                    self.drain()?;
                    ready.clear_ready();
                }
            }
        }
    }

    /// Reads every queued event, queueing each for its id and waking that id's task;
    /// events of ids no longer here are dropped (a connect request's new id destroyed).
    fn drain(&self) -> Result<()> {
        let mut dropped = Vec::new();
        let mut woken = Vec::new();
        while let Some(event) = self.shared.channel().try_get_event()? {
            let mut ids = lock(&self.shared.ids);
            let Some(queue) = ids.0.get_mut(&event.id) else {
                dropped.push(event);
                continue;
            };
            woken.extend(queue.waker.take());
            let child = match &event.kind {
                CmEventKind::ConnectRequest { id, .. } => Some(id.handle()),
                _ => None,
            };
            queue.events.push_back(event);
            if let Some(child) = child {
                ids.0.insert(child, Queue::default());
            }
        }
        drop(dropped);
        wake_all(woken);
        Ok(())
    }
}

/// A CM id whose events are awaited; destroyed on drop (`rdma_destroy_id`, after its QP).
///
/// Its events are queued for it by its channel, so the id is never handed out mutably: the
/// calls that need `&mut CmId` are its own ([`create_qp`](Self::create_qp),
/// [`take_qp`](Self::take_qp), [`join_multicast`](Self::join_multicast),
/// [`leave_multicast`](Self::leave_multicast)), and it cannot be swapped with an id of
/// another channel.
pub struct AsyncCmId {
    /// Taken only by drop.
    id: Option<CmId>,
    channel: AsyncCmChannel,
}

impl AsyncCmId {
    /// The id, for the calls that need no event (addresses, [`CmId::context`], its QP).
    pub fn id(&self) -> &CmId {
        self.id.as_ref().expect("taken only by drop")
    }

    /// Listens on the bound id (`rdma_listen`, `backlog` requests pending at most): its
    /// connect requests come from the [`Listener`].
    pub fn listen(self, backlog: i32) -> Result<Listener> {
        self.id().listen(backlog)?;
        Ok(Listener { id: self })
    }

    /// Wraps the id's QP ([`create_qp`](Self::create_qp), nothing posted on it) in an
    /// [`AsyncQp`] on `cq` (which must be the QP's send and receive CQ and no other QP's,
    /// as [`AsyncQp::new`] requires) while the id keeps it for librdmacm: made before
    /// connecting or accepting, receives posted on it are in place when the peer's first
    /// message comes, as C programs post them before `rdma_connect` or `rdma_accept` (a
    /// server may send as soon as it accepts). librdmacm still moves the QP through its
    /// states (to RTR and RTS on connect or accept, to ERROR on disconnect); the id keeps
    /// the QP alive until the id is dropped, and [`id().qp()`](CmId::qp) is then `None`:
    /// only the `AsyncQp` posts on it. ([`take_qp`](Self::take_qp) instead takes the QP
    /// out of librdmacm's hands, once connected.)
    ///
    /// ```no_run
    /// # async fn f(id: &mut rdma_verbs::tokio::cm::AsyncCmId) -> rdma_verbs::Result<()> {
    /// use rdma_verbs::tokio::{AsyncCq, AsyncQp};
    /// let ctx = id.id().context()?;
    /// let (pd, channel) = (ctx.alloc_pd()?, ctx.create_comp_channel()?);
    /// let cq = AsyncCq::new(ctx.create_cq(64, Some(&channel))?)?;
    /// id.create_qp(pd.create_qp(rdma_verbs::QpType::Rc, cq.cq(), cq.cq()).max_recv_wr(16))?;
    /// let qp: AsyncQp = id.async_qp(cq)?;
    /// # Ok(()) }
    /// ```
    ///
    /// Fails as [`AsyncQp::new`] does, and if the id has no QP or has joined multicast
    /// groups (join after: the QP is then attached to them); if the wrapping fails, the
    /// QP is destroyed and the id has none.
    pub fn async_qp<B>(&mut self, cq: AsyncCq) -> Result<AsyncQp<B>>
    where
        B: RegistrableMemory + Send + Sync + 'static,
    {
        AsyncQp::on_cm_id(self.id_mut(), cq)
    }

    /// Creates the id's QP ([`CmId::create_qp`]), before connecting or accepting.
    pub fn create_qp(&mut self, qp: QueuePairBuilder<'_>) -> Result<&QueuePair> {
        self.id_mut().create_qp(qp)
    }

    /// Takes the id's QP out of it ([`CmId::take_qp`]), for example into an
    /// [`AsyncQp`] once connected.
    pub fn take_qp(&mut self) -> Option<QueuePair> {
        self.id_mut().take_qp()
    }

    /// Joins the multicast group `group` as a full member and waits for the join
    /// ([`join_multicast_ex`](Self::join_multicast_ex) with
    /// [`MulticastJoinFlag::FullMember`]).
    pub async fn join_multicast(&mut self, group: IpAddr) -> Result<UdPeer> {
        self.join_multicast_ex(group, MulticastJoinFlag::FullMember)
            .await
    }

    /// Joins the multicast group `group` as `flag` says ([`CmId::join_multicast_ex`], with
    /// its checks before librdmacm) and waits for the join's
    /// [`MulticastJoin`](CmEventKind::MulticastJoin): resolves to the group's [`UdPeer`]
    /// (send to it with an address handle from [`UdPeer::create_ah`], its `qp_num` and
    /// `qkey`); the id's QP is attached to the group, unless the join is send-only.
    ///
    /// A [`MulticastError`](CmEventKind::MulticastError) for the group, or another event of
    /// the id meanwhile, is an [`Error::Verb`] naming the event, and the id leaves the
    /// group again. Events of groups the id is no longer in (a join cancelled before) are
    /// dropped. Dropping the future before the join is done leaves the group (cancelling
    /// the join).
    pub async fn join_multicast_ex(
        &mut self,
        group: IpAddr,
        flag: MulticastJoinFlag,
    ) -> Result<UdPeer> {
        self.id_mut().join_multicast_ex(group, flag)?;
        // Leaves the group on every way out but the join's success.
        let pending = PendingJoin { id: self, group };
        loop {
            let event = pending.id.next_event().await?;
            if let CmEventKind::MulticastJoin { group: g, .. }
            | CmEventKind::MulticastError { group: g } = &event.kind
            {
                if !pending.id.id().multicast_groups().contains(g) {
                    continue; // of a join left since
                }
            }
            let event = event.expect_kind(
                "rdma_join_multicast",
                |k| matches!(k, CmEventKind::MulticastJoin { group: g, .. } if *g == group),
            )?;
            let CmEventKind::MulticastJoin { ud, .. } = event.kind else {
                unreachable!("matched by expect");
            };
            std::mem::forget(pending);
            return Ok(ud);
        }
    }

    /// Leaves the multicast group `group` ([`CmId::leave_multicast`]): a group the id has
    /// not joined is an [`Error::InvalidArgument`].
    pub fn leave_multicast(&mut self, group: IpAddr) -> Result<()> {
        self.id_mut().leave_multicast(group)
    }

    /// The id, mutably, for the calls above only: a `&mut CmId` handed out could be
    /// swapped with an id of another channel, whose events this one's channel never sees.
    fn id_mut(&mut self) -> &mut CmId {
        self.id.as_mut().expect("taken only by drop")
    }

    /// The id's next event (each event is acknowledged when read).
    pub async fn next_event(&self) -> Result<CmEvent> {
        poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The poll function under [`next_event`](Self::next_event).
    pub(crate) fn poll_event(&self, cx: &mut TaskContext<'_>) -> Poll<Result<CmEvent>> {
        self.channel.poll_event(self.id().handle(), cx)
    }

    /// Resolves `dst` (from `src` if given) to a device (`rdma_resolve_addr`) and the route
    /// to it (`rdma_resolve_route`), each within `timeout`. An `AddrError` or `RouteError`
    /// is an error ([`Error::Verb`] with the event's errno).
    pub async fn resolve(
        &mut self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        timeout: Duration,
    ) -> Result<()> {
        self.id().resolve_addr(src, dst, timeout)?;
        self.resolved(timeout).await
    }

    /// [`resolve`](Self::resolve) with AF_IB addresses ([`CmId::resolve_ib_addr`]).
    pub async fn resolve_ib(
        &mut self,
        src: Option<&IbAddr>,
        dst: &IbAddr,
        timeout: Duration,
    ) -> Result<()> {
        self.id().resolve_ib_addr(src, dst, timeout)?;
        self.resolved(timeout).await
    }

    /// Waits for the address to be resolved, then resolves the route (within `timeout`).
    async fn resolved(&mut self, timeout: Duration) -> Result<()> {
        self.expect("rdma_resolve_addr", |k| {
            matches!(k, CmEventKind::AddrResolved)
        })
        .await?;
        self.id().resolve_route(timeout)?;
        self.expect("rdma_resolve_route", |k| {
            matches!(k, CmEventKind::RouteResolved)
        })
        .await?;
        Ok(())
    }

    /// Connects (`rdma_connect`) the resolved id, whose QP exists, and waits for the
    /// connection: resolves to the connected id and the peer's private data. A reject
    /// (or nobody listening) is an [`Error::Rejected`] with the peer's private data,
    /// `Unreachable` an [`Error::Verb`] whose kind is `TimedOut`, and `ConnectError` one of
    /// kind `Other`.
    /// Dropping the future destroys the id.
    pub async fn connect(mut self, param: &ConnParam<'_>) -> Result<Connected> {
        self.id().connect(param)?;
        let event = self
            .expect("rdma_connect", |k| {
                matches!(k, CmEventKind::Established { .. })
            })
            .await?;
        let CmEventKind::Established { private_data, ud } = event.kind else {
            unreachable!("matched by expect");
        };
        Ok(Connected {
            id: self,
            private_data,
            ud,
        })
    }

    /// Disconnects (`rdma_disconnect`) and waits for this side's `Disconnected` (when the
    /// peer answers or the request times out). The side whose
    /// [`next_event`](Self::next_event) gave `Disconnected` first answers with
    /// [`CmId::disconnect`] instead (its event has come).
    pub async fn disconnect(&self) -> Result<()> {
        self.id().disconnect()?;
        loop {
            if matches!(self.next_event().await?.kind, CmEventKind::Disconnected) {
                return Ok(());
            }
        }
    }

    /// The id's next event if `want` says it is the one `verb` waits for, else its error
    /// ([`CmEvent::expect_kind`]).
    ///
    /// Through `&mut self`, so that the future is `Send` (an id is not `Sync`): the
    /// futures of [`resolve`](Self::resolve), [`connect`](Self::connect) and
    /// [`ConnectRequest::accept`] can be spawned.
    async fn expect(
        &mut self,
        verb: &'static str,
        want: impl FnOnce(&CmEventKind) -> bool,
    ) -> Result<CmEvent> {
        let id = &mut *self;
        poll_fn(move |cx| id.poll_event(cx))
            .await?
            .expect_kind(verb, want)
    }
}

impl Drop for AsyncCmId {
    fn drop(&mut self) {
        let handle = self.id().handle();
        // Destroyed first: the kernel then queues no more events for it.
        drop(self.id.take());
        let mut dropped = Vec::new();
        lock(&self.channel.shared.ids).remove(handle, &mut dropped);
        drop(dropped); // outside the lock
    }
}

impl std::fmt::Debug for AsyncCmId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncCmId").field("id", &self.id).finish()
    }
}

impl std::fmt::Debug for AsyncCmChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncCmChannel")
            .field("channel", self.shared.channel())
            .finish()
    }
}

/// A join that [`AsyncCmId::join_multicast_ex`] waits for: left on drop (forgotten once the
/// join is done).
struct PendingJoin<'a> {
    id: &'a mut AsyncCmId,
    group: IpAddr,
}

impl Drop for PendingJoin<'_> {
    fn drop(&mut self) {
        // The join failed or was cancelled; its group is the id's (joined just before).
        let _ = self.id.id_mut().leave_multicast(self.group);
    }
}

/// A connection made by [`AsyncCmId::connect`].
#[derive(Debug)]
#[non_exhaustive]
pub struct Connected {
    /// The connected id (its QP is in RTS).
    pub id: AsyncCmId,
    /// What the peer sent with its accept.
    pub private_data: Vec<u8>,
    /// For a UD id (UDP or IPoIB port space): the peer's address vector, QP number and
    /// Q_Key, to send it datagrams with ([`UdPeer::create_ah`], [`AsyncQp::send_to`]).
    pub ud: Option<UdPeer>,
}

/// A listening id: yields the connect requests that arrive, as a [`Stream`] (an
/// `Err` item if the id gets another event or the wait fails).
#[derive(Debug)]
pub struct Listener {
    id: AsyncCmId,
}

impl Listener {
    /// The address listened on (with the port the CM picked).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.id.id().local_addr()
    }
}

impl Stream for Listener {
    type Item = Result<ConnectRequest>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let id = &self.get_mut().id;
        let event = match id.channel.poll_event(id.id().handle(), cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(event)) => event,
        };
        Poll::Ready(Some(match event.kind {
            CmEventKind::ConnectRequest {
                id: child,
                private_data,
                initiator_depth,
                responder_resources,
            } => Ok(ConnectRequest {
                id: id.channel.adopt(child),
                private_data,
                initiator_depth,
                responder_resources,
            }),
            other => Err(Error::Verb {
                verb: "rdma_listen",
                source: std::io::Error::other(format!(
                    "{} (status {})",
                    other.c_name(),
                    event.status
                )),
            }),
        }))
    }
}

/// A connect request from a [`Listener`]: accept or reject it; dropping it destroys its id
/// (the peer sees a reject).
#[derive(Debug)]
#[non_exhaustive]
pub struct ConnectRequest {
    /// The new connection's id: create its QP before [`accept`](Self::accept).
    pub id: AsyncCmId,
    /// What the peer sent with its request.
    pub private_data: Vec<u8>,
    /// The peer's `initiator_depth`.
    pub initiator_depth: u8,
    /// The peer's `responder_resources`.
    pub responder_resources: u8,
}

impl ConnectRequest {
    /// Accepts (`rdma_accept`) and waits for the connection (`Established`): resolves to
    /// the connected id. Dropping the future destroys the id. A UD request (UDP or IPoIB
    /// port space: a service ID resolution, whose server side has no `Established`)
    /// resolves once its reply is sent; the peer's datagrams then come to the id's QP,
    /// and the answer to each goes back through an address handle made from its
    /// completion ([`ProtectionDomain::create_ah_from_wc`](crate::ProtectionDomain::create_ah_from_wc)).
    pub async fn accept(self, param: &ConnParam<'_>) -> Result<AsyncCmId> {
        let mut id = self.id;
        id.id().accept(param)?;
        if matches!(id.id().port_space(), PortSpace::Udp | PortSpace::Ipoib) {
            return Ok(id);
        }
        id.expect("rdma_accept", |k| {
            matches!(k, CmEventKind::Established { .. })
        })
        .await?;
        Ok(id)
    }

    /// Rejects (`rdma_reject`) with `private_data`, then destroys the id.
    pub fn reject(self, private_data: &[u8]) -> Result<()> {
        self.id.id().reject(private_data)
    }
}
