//! CM ids: `struct rdma_cm_id`, the rdma_cm counterpart of a socket.

mod ib; // AF_IB addresses: bind_ib, resolve_ib_addr, local_ib_addr, peer_ib_addr
#[cfg(feature = "tokio")]
pub(crate) mod lend; // the QP lent to an owner of its own (tokio's AsyncQp)
pub(crate) mod mcast; // MulticastJoinFlag: rdma_join_multicast_ex, rdma_leave_multicast
pub(crate) mod option; // CmOption: rdma_set_option
pub(crate) mod raw; // RawCmId, IdHandle: the FFI calls of an id, the folder's unsafe but lend's

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use rdmacm_sys as cm;

use self::raw::{IdHandle, RawCmId};
use super::EventChannel;
use crate::cm::addr::{from_c, to_c};
use crate::cm::param::ConnParam;
use crate::cm::PortSpace;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::qp::{PreparedQueuePair, QueuePair, QueuePairBuilder};
use crate::types::AsyncEventKind;

/// A CM id (`rdma_create_id`), destroyed on drop (`rdma_destroy_id`, after its QP).
///
/// It keeps its [`EventChannel`] alive; its QP ([`create_qp`](Self::create_qp)) belongs to
/// it and is destroyed first. Before that, it leaves the multicast groups it joined
/// ([`join_multicast`](Self::join_multicast)), which detaches its QP from them. The id is
/// `Send` but not `Sync`: librdmacm updates the id's fields (its addresses, route) in calls
/// on it, which must not run beside each other.
pub struct CmId {
    /// The id and what librdmacm's id points to: its QP, its joins, its device context.
    raw: RawCmId,
    /// Also the id's `context`, which its events carry.
    handle: IdHandle,
}

/// A `Duration` as librdmacm's `timeout_ms`.
fn millis(timeout: Duration) -> Result<i32> {
    i32::try_from(timeout.as_millis()).map_err(|_| Error::OutOfRange {
        what: "timeout in milliseconds",
        value: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        min: 0,
        max: i32::MAX as u64,
    })
}

impl CmId {
    /// `rdma_create_id` on `channel`.
    pub(super) fn create(channel: &EventChannel, ps: PortSpace) -> Result<Self> {
        let handle = IdHandle::new();
        let raw = RawCmId::create(&channel.inner, ps, handle)?;
        Ok(CmId { raw, handle })
    }

    /// The id of a connect request, owned by its [`RawCmId`] (which gave it a handle of its
    /// own).
    pub(super) fn from_request(raw: RawCmId) -> Self {
        CmId {
            handle: raw.handle(),
            raw,
        }
    }

    /// The raw `rdma_cm_id`, valid while this id lives.
    pub(crate) fn ptr(&self) -> *mut cm::rdma_cm_id {
        self.raw.ptr()
    }

    /// What identifies this id in events ([`CmEvent::id`](crate::cm::CmEvent::id)).
    pub fn handle(&self) -> IdHandle {
        self.handle
    }

    /// The port space the id was created in.
    pub fn port_space(&self) -> PortSpace {
        self.raw.port_space()
    }

    /// The port of [`context`](Self::context)'s device the id is bound to (`port_num`),
    /// numbered from 1; `None` before it is bound to a device (bind, resolve or a connect
    /// request).
    pub fn port_num(&self) -> Option<u8> {
        let port = self.raw.port_num();
        (self.raw.verbs().is_some() && port != 0).then_some(port)
    }

    /// `rdma_migrate_id`: moves the id to `channel`, on which its events arrive from now
    /// on, its unread ones included (the events already read stay where they were read).
    /// The id holds the new channel and lets go of the old one. Every event read for the
    /// id was acknowledged when it was read, so the call does not wait for the old channel.
    ///
    /// A listening id is refused ([`Error::InvalidArgument`]) while its old channel has an
    /// unread event, which may be a connect request: the kernel leaves a pending request's
    /// new id on the old channel, and librdmacm, reading the request on the new one, drops
    /// it (the client is rejected when the old channel closes). Read the old channel's
    /// events first. A request that arrives while the call runs, after that check, is lost
    /// the same way: migrate a listener while no client connects, or prefer creating it on
    /// the channel it will stay on.
    pub fn migrate_id(&mut self, channel: &EventChannel) -> Result<()> {
        self.raw.migrate(&channel.inner)
    }

    /// `rdma_bind_addr`: binds to a local address (port 0: any free port), which also
    /// binds the id to that address's device.
    pub fn bind(&self, addr: SocketAddr) -> Result<()> {
        self.bind_c(to_c(addr))
    }

    /// `rdma_bind_addr` with an address in C's form (IP or AF_IB, by its family).
    fn bind_c(&self, sa: libc::sockaddr_storage) -> Result<()> {
        self.raw.bind(sa)
    }

    /// `rdma_listen`: waits for connect requests
    /// ([`ConnectRequest`](crate::cm::CmEventKind::ConnectRequest) events) on the bound address;
    /// `backlog` pending at most.
    pub fn listen(&self, backlog: i32) -> Result<()> {
        self.raw.listen(backlog)
    }

    /// `rdma_resolve_addr`: resolves `dst` (from `src` if given) to a device and port,
    /// within `timeout`; ends with an `AddrResolved` or `AddrError` event.
    pub fn resolve_addr(
        &self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        timeout: Duration,
    ) -> Result<()> {
        self.resolve_addr_c(src.map(to_c), to_c(dst), timeout)
    }

    /// `rdma_resolve_addr` with addresses in C's form (IP or AF_IB, by their family).
    fn resolve_addr_c(
        &self,
        src: Option<libc::sockaddr_storage>,
        dst: libc::sockaddr_storage,
        timeout: Duration,
    ) -> Result<()> {
        self.raw.resolve_addr(src, dst, millis(timeout)?)
    }

    /// `rdma_resolve_route`: finds the path to the resolved address within `timeout`; ends
    /// with a `RouteResolved` or `RouteError` event.
    pub fn resolve_route(&self, timeout: Duration) -> Result<()> {
        self.raw.resolve_route(millis(timeout)?)
    }

    /// `rdma_connect`: sends a connect request with `param` (checked first: nothing is sent
    /// if a field is out of range).
    pub fn connect(&self, param: &ConnParam<'_>) -> Result<()> {
        self.raw.connect(param)
    }

    /// `rdma_accept`: accepts the connect request this id came with, as `param` says.
    pub fn accept(&self, param: &ConnParam<'_>) -> Result<()> {
        self.raw.accept(param)
    }

    /// `rdma_reject`: rejects the connect request this id came with, sending
    /// `private_data` (checked against the limit first).
    pub fn reject(&self, private_data: &[u8]) -> Result<()> {
        self.raw.reject(private_data)
    }

    /// `rdma_disconnect`: tears the connection down (the QP goes to the error state, so
    /// outstanding work requests are flushed). On IB and RoCE this sends a DREQ: the peer
    /// gets `Disconnected` at once, and this side when the peer disconnects in turn (its
    /// DREP) or the DREQ times out; so a peer answers its `Disconnected` with `disconnect`.
    pub fn disconnect(&self) -> Result<()> {
        self.raw.disconnect()
    }

    /// `rdma_notify`: tells rdma_cm of an asynchronous event of the id's QP that it needs
    /// to know of. `CommEst` (`IBV_EVENT_COMM_EST`, from [`Context::get_async_event`](crate::Context::get_async_event)): the
    /// QP received before the connection was established (the peer's first message came
    /// before its RTU on the accepting side), so the connection is established now;
    /// `PathMig`: the QP migrated to its alternate path.
    ///
    /// Any other kind is refused before librdmacm ([`Error::InvalidArgument`], as the
    /// kernel would), and so is, by the kernel, an id with no connection under way
    /// (`EINVAL`). On iWARP devices the call does nothing.
    pub fn notify(&self, event: AsyncEventKind) -> Result<()> {
        if !matches!(event, AsyncEventKind::CommEst | AsyncEventKind::PathMig) {
            return Err(Error::InvalidArgument {
                what: "rdma_notify event",
                reason: format!(
                    "{event:?}: rdma_cm takes only CommEst (IBV_EVENT_COMM_EST) and PathMig \
                     (IBV_EVENT_PATH_MIG)"
                ),
            });
        }
        self.raw
            .notify(event.raw())
            .map_err(|err| match err.raw_os_error() {
                Some(libc::EINVAL) => Error::InvalidArgument {
                    what: "CM id",
                    reason: "rdma_notify: no connection is under way on it (EINVAL)".into(),
                },
                _ => err,
            })
    }

    /// The local address (`rdma_get_local_addr`), once bound or resolved.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        from_c(&self.raw.local_addr())
    }

    /// The peer's address (`rdma_get_peer_addr`), once resolved or connected.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        from_c(&self.raw.peer_addr())
    }

    /// The device context the id is bound to (librdmacm's, kept open while the returned
    /// [`Context`] or the id lives): allocate the PD and CQs of
    /// [`create_qp`](Self::create_qp) on it. Fails before the id is bound to a device
    /// (bind, resolve or a connect request); the same handle each time, and for every id
    /// on the device while one lives (on the same thread).
    pub fn context(&self) -> Result<Context> {
        self.raw.context()
    }

    /// `rdma_create_qp_ex`: creates the id's QP as `qp` describes (its PD, CQs, SRQ,
    /// queue sizes, signalling, send operations), on the id's device and port; the QP
    /// belongs to the id ([`qp`](Self::qp)). The PD must be of [`context`](Self::context).
    /// The transport must fit the port space (TCP: RC; UDP and IPoIB: UD; IB: RC, UC or
    /// UD). rdma_cm decides the rest: the QP's port and GID (from the id's route), its
    /// access rights and Q_Key, so setting them on `qp` is refused. librdmacm moves the QP
    /// to INIT (a UDP id's UD QP at once to RTS), so receives may be posted before the
    /// connection is up; on connect or accept it moves it to RTS.
    ///
    /// ```no_run
    /// # fn f(id: &mut rdma_verbs::cm::CmId) -> rdma_verbs::Result<()> {
    /// use rdma_verbs::QpType;
    /// let ctx = id.context()?;
    /// let (pd, cq) = (ctx.alloc_pd()?, ctx.create_cq(64, None)?);
    /// id.create_qp(pd.create_qp(QpType::Rc, &cq, &cq).max_send_wr(32).sq_sig_all(true))?;
    /// # Ok(()) }
    /// ```
    pub fn create_qp(&mut self, qp: QueuePairBuilder<'_>) -> Result<&QueuePair> {
        self.raw.create_qp(qp)
    }

    /// Makes `qp`, a QP built on its own ([`ProtectionDomain::create_qp`]), the id's QP
    /// (librdmacm's `id->qp`), as if [`create_qp`](Self::create_qp) had made it: librdmacm
    /// connects it on connect or accept (on iWARP, the only way to connect a QP built so),
    /// it is [`qp`](Self::qp) and [`take_qp`](Self::take_qp) takes it out. Receives
    /// posted on it in INIT stay. Refused as `create_qp` refuses (the id
    /// has a QP, is not bound, or the QP's type does not fit the port space), and for a QP
    /// of another device ([`Error::Mismatch`]) or built on another port or GID than the
    /// id's route's ([`Error::InvalidArgument`]); `qp` is dropped then.
    ///
    /// ```no_run
    /// # fn f(id: &mut rdma_verbs::cm::CmId, ctx: &rdma_verbs::Context) -> rdma_verbs::Result<()> {
    /// use rdma_verbs::QpType;
    /// let (pd, cq) = (ctx.alloc_pd()?, ctx.create_cq(64, None)?);
    /// id.set_qp(pd.create_qp(QpType::Rc, &cq, &cq).build()?)?;
    /// # Ok(()) }
    /// ```
    ///
    /// [`ProtectionDomain::create_qp`]: crate::ProtectionDomain::create_qp
    /// [`Error::Mismatch`]: crate::Error::Mismatch
    /// [`Error::InvalidArgument`]: crate::Error::InvalidArgument
    pub fn set_qp(&mut self, qp: PreparedQueuePair) -> Result<&QueuePair> {
        self.raw.set_qp(qp)
    }

    /// The id's QP, if [`create_qp`](Self::create_qp) made one. It sends once the
    /// connection is established (before, posting sends fails in the provider).
    pub fn qp(&self) -> Option<&QueuePair> {
        self.raw.qp()
    }

    /// Takes the id's QP out of it, to be owned on its own (for example by a
    /// `tokio::AsyncQp`, feature `tokio`, which wraps only a QP nothing was posted on). Take
    /// it once the connection is established: librdmacm moves only the id's QP through
    /// its states. The id forgets the QP (librdmacm's pointer to it is cleared), so
    /// [`disconnect`](Self::disconnect) then no longer moves it to the error state: call
    /// [`QueuePair::to_error`] to flush its requests. `None` if the id has no QP.
    ///
    /// The QP stays attached to the multicast groups librdmacm attached it to (the id's
    /// joins, [`join_multicast`](Self::join_multicast)) and takes them along: they are in
    /// its [`QueuePair::mcast`], it detaches from them when it is dropped (or with
    /// [`QueuePair::detach_mcast`]), and the id leaving a group no longer detaches it.
    /// Joins that complete later do not attach it.
    pub fn take_qp(&mut self) -> Option<QueuePair> {
        self.raw.take_qp()
    }
}

impl fmt::Debug for CmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CmId")
            .field("port_space", &self.port_space())
            .field("local", &self.local_addr())
            .field("peer", &self.peer_addr())
            .field("qp", &self.qp())
            .field("multicast_groups", &self.multicast_groups())
            .finish()
    }
}
