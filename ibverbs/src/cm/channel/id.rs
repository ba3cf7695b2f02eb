//! CM ids: `struct rdma_cm_id`, the rdma_cm counterpart of a socket.

mod ib; // AF_IB addresses: bind_ib, resolve_ib_addr, local_ib_addr, peer_ib_addr
#[cfg(feature = "tokio")]
pub(crate) mod lend; // the QP lent to an owner of its own (tokio's AsyncQp)
pub(crate) mod mcast; // MulticastJoinFlag: rdma_join_multicast_ex, rdma_leave_multicast
pub(crate) mod option; // CmOption: rdma_set_option

use std::cell::OnceCell;
use std::fmt;
use std::net::SocketAddr;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rdmacm_sys as cm;

use super::EventChannel;
use crate::cm::addr::{from_c, to_c};
use crate::cm::device::IdContext;
use crate::cm::param::{check_private_data, ConnParam, Message};
use crate::cm::raw::{id_table, ChannelInner};
use crate::cm::PortSpace;
use crate::context::async_event::AsyncEventKind;
use crate::context::Context;
use crate::drop_error;
use crate::error::{check, Error, Result};
use crate::qp::{QueuePair, QueuePairBuilder};

/// A CM id (`rdma_create_id`), destroyed on drop (`rdma_destroy_id`, after its QP).
///
/// It keeps its [`EventChannel`] alive; its QP ([`create_qp`](Self::create_qp)) belongs to
/// it and is destroyed first. Before that, it leaves the multicast groups it joined
/// ([`join_multicast`](Self::join_multicast)), which detaches its QP from them. The id is
/// `Send` but not `Sync`: librdmacm updates the id's fields (its addresses, route) in calls
/// on it, which must not run beside each other.
pub struct CmId {
    raw: NonNull<cm::rdma_cm_id>,
    /// Also the id's `context`, which its events carry.
    handle: IdHandle,
    ps: PortSpace,
    /// Boxed: a QP carries its receive post table, and an id stays small inside a CM event.
    qp: Option<Box<QueuePair>>,
    /// The id's device context and its hold on it, once [`context`](Self::context) found
    /// it: an id stays on the device it was bound to.
    ctx: OnceCell<IdContext>,
    /// The multicast groups joined and not left, each the context of its join's events.
    joins: Vec<Arc<mcast::Join>>,
    /// The owner of a QP lent out of the id (`lend_qp`), kept while librdmacm may reach
    /// the QP.
    #[cfg(feature = "tokio")]
    lent: Option<lend::Keeper>,
    // Dropped after the id is destroyed (fields drop after Drop::drop).
    _channel: Arc<ChannelInner>,
}

// SAFETY: an id may be used from any thread, one call at a time (it is not Sync).
unsafe impl Send for CmId {}

/// Which id a [`CmEvent`](crate::cm::CmEvent) is for: compare with [`CmId::handle`].
///
/// Each id gets a handle of its own, from a process-wide counter, kept in the id's
/// `context` (which librdmacm hands back with its events): a handle never names another id,
/// not even a new one at the address of an id destroyed before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IdHandle(usize);

/// The next id's handle.
static NEXT_HANDLE: AtomicUsize = AtomicUsize::new(1);

impl IdHandle {
    /// A handle no id had before.
    fn new() -> Self {
        IdHandle(NEXT_HANDLE.fetch_add(1, Ordering::Relaxed))
    }

    /// The handle of the live id `raw` (created or adopted by [`CmId`]).
    ///
    /// # Safety
    /// `raw` must be a live id.
    pub(super) unsafe fn of(raw: *mut cm::rdma_cm_id) -> Self {
        // SAFETY: live (caller); the context holds the handle, set when the CmId was made.
        IdHandle(unsafe { (*raw).context } as usize)
    }

    /// The handle as an id's `context` (a number, never dereferenced).
    fn as_context(self) -> *mut std::ffi::c_void {
        self.0 as *mut std::ffi::c_void
    }
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
        let mut raw = ptr::null_mut();
        let handle = IdHandle::new();
        let rc = {
            let _table = id_table();
            // SAFETY: the channel is live; raw is a valid out pointer; the context is a
            // number that librdmacm only hands back.
            unsafe { cm::rdma_create_id(channel.ptr(), &mut raw, handle.as_context(), ps.raw()) }
        };
        check("rdma_create_id", rc)?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::last("rdma_create_id"))?;
        Ok(CmId {
            raw,
            handle,
            ps,
            qp: None,
            ctx: OnceCell::new(),
            joins: Vec::new(),
            #[cfg(feature = "tokio")]
            lent: None,
            _channel: Arc::clone(&channel.inner),
        })
    }

    /// Takes ownership of the new id of a connect request on `channel`.
    ///
    /// # Safety
    /// `raw` must be the `id` of a connect request event read from `channel`, owned by
    /// nothing else.
    pub(super) unsafe fn adopt_request(channel: &EventChannel, raw: *mut cm::rdma_cm_id) -> Self {
        // SAFETY: a connect request's id is a live id of librdmacm (caller).
        let ps = PortSpace::from_raw(unsafe { (*raw).ps.0 } as i32).unwrap_or(PortSpace::Tcp);
        // librdmacm gave it the listening id's context: it gets a handle of its own.
        let handle = IdHandle::new();
        // SAFETY: as above; the id is ours, and librdmacm keeps but never reads the context.
        unsafe { (*raw).context = handle.as_context() };
        CmId {
            // SAFETY: an event's id is never null.
            raw: unsafe { NonNull::new_unchecked(raw) },
            handle,
            ps,
            qp: None,
            ctx: OnceCell::new(),
            joins: Vec::new(),
            #[cfg(feature = "tokio")]
            lent: None,
            _channel: Arc::clone(&channel.inner),
        }
    }

    /// The raw `rdma_cm_id`, valid while this id lives.
    pub(crate) fn ptr(&self) -> *mut cm::rdma_cm_id {
        self.raw.as_ptr()
    }

    /// What identifies this id in events ([`CmEvent::id`](crate::cm::CmEvent::id)).
    pub fn handle(&self) -> IdHandle {
        self.handle
    }

    /// The port space the id was created in.
    pub fn port_space(&self) -> PortSpace {
        self.ps
    }

    /// The port of [`context`](Self::context)'s device the id is bound to (`port_num`),
    /// numbered from 1; `None` before it is bound to a device (bind, resolve or a connect
    /// request).
    pub fn port_num(&self) -> Option<u8> {
        // SAFETY: the id is live; librdmacm sets its fields in calls on it, which take
        // the id by reference and so do not run beside this one (CmId is not Sync).
        let (verbs, port) = unsafe { ((*self.ptr()).verbs, (*self.ptr()).port_num) };
        (!verbs.is_null() && port != 0).then_some(port)
    }

    /// `rdma_migrate_id`: moves the id to `channel`, on which its events arrive from now
    /// on (the events already read stay where they were read). The id holds the new
    /// channel and lets go of the old one. Every event read for the id was acknowledged
    /// when it was read, so the call does not wait for the old channel.
    pub fn migrate_id(&mut self, channel: &EventChannel) -> Result<()> {
        // SAFETY: the id and the channel are live; the id's events on its old channel were
        // acknowledged when read (CmEvent::take), which rdma_migrate_id waits for.
        check("rdma_migrate_id", unsafe {
            cm::rdma_migrate_id(self.ptr(), channel.ptr())
        })?;
        self._channel = Arc::clone(&channel.inner);
        Ok(())
    }

    /// `rdma_bind_addr`: binds to a local address (port 0: any free port), which also
    /// binds the id to that address's device.
    pub fn bind(&self, addr: SocketAddr) -> Result<()> {
        self.bind_c(to_c(addr))
    }

    /// `rdma_bind_addr` with an address in C's form (IP or AF_IB, by its family).
    fn bind_c(&self, mut sa: libc::sockaddr_storage) -> Result<()> {
        // SAFETY: the id is live; sa holds a whole sockaddr of its family (to_c, IbAddr::to_c).
        check("rdma_bind_addr", unsafe {
            cm::rdma_bind_addr(self.ptr(), ptr::addr_of_mut!(sa).cast())
        })
    }

    /// `rdma_listen`: waits for connect requests
    /// ([`ConnectRequest`](crate::cm::CmEventKind::ConnectRequest) events) on the bound address;
    /// `backlog` pending at most.
    pub fn listen(&self, backlog: i32) -> Result<()> {
        // SAFETY: the id is live.
        check("rdma_listen", unsafe {
            cm::rdma_listen(self.ptr(), backlog)
        })
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
        mut src: Option<libc::sockaddr_storage>,
        mut dst: libc::sockaddr_storage,
        timeout: Duration,
    ) -> Result<()> {
        let ms = millis(timeout)?;
        let src_ptr = src
            .as_mut()
            .map_or(ptr::null_mut(), |s| ptr::from_mut(s).cast());
        // SAFETY: the id is live; the addresses are sockaddrs of their family or null.
        check("rdma_resolve_addr", unsafe {
            cm::rdma_resolve_addr(self.ptr(), src_ptr, ptr::addr_of_mut!(dst).cast(), ms)
        })
    }

    /// `rdma_resolve_route`: finds the path to the resolved address within `timeout`; ends
    /// with a `RouteResolved` or `RouteError` event.
    pub fn resolve_route(&self, timeout: Duration) -> Result<()> {
        let ms = millis(timeout)?;
        // SAFETY: the id is live.
        check("rdma_resolve_route", unsafe {
            cm::rdma_resolve_route(self.ptr(), ms)
        })
    }

    /// `rdma_connect`: sends a connect request with `param` (checked first: nothing is sent
    /// if a field is out of range).
    pub fn connect(&self, param: &ConnParam<'_>) -> Result<()> {
        let mut c = param.to_c(Message::Connect, self.ps)?;
        // SAFETY: the id is live; c points into param, which outlives the call.
        check("rdma_connect", unsafe {
            cm::rdma_connect(self.ptr(), &mut c)
        })
    }

    /// `rdma_accept`: accepts the connect request this id came with, as `param` says.
    pub fn accept(&self, param: &ConnParam<'_>) -> Result<()> {
        let mut c = param.to_c(Message::Accept, self.ps)?;
        // SAFETY: the id is live; c points into param, which outlives the call.
        check("rdma_accept", unsafe {
            cm::rdma_accept(self.ptr(), &mut c)
        })
    }

    /// `rdma_reject`: rejects the connect request this id came with, sending
    /// `private_data` (checked against the limit first).
    pub fn reject(&self, private_data: &[u8]) -> Result<()> {
        let len = check_private_data(private_data, Message::Reject, self.ps)?;
        let data = if len == 0 {
            ptr::null()
        } else {
            private_data.as_ptr().cast()
        };
        // SAFETY: the id is live; data is null or valid for len bytes.
        check("rdma_reject", unsafe {
            cm::rdma_reject(self.ptr(), data, len)
        })
    }

    /// `rdma_disconnect`: tears the connection down (the QP goes to the error state, so
    /// outstanding work requests are flushed). On IB and RoCE this sends a DREQ: the peer
    /// gets `Disconnected` at once, and this side when the peer disconnects in turn (its
    /// DREP) or the DREQ times out; so a peer answers its `Disconnected` with `disconnect`.
    pub fn disconnect(&self) -> Result<()> {
        // SAFETY: the id is live.
        check("rdma_disconnect", unsafe {
            cm::rdma_disconnect(self.ptr())
        })
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
        // SAFETY: the id is live; the event is a value of enum ibv_event_type.
        let rc = unsafe { cm::rdma_notify(self.ptr(), event.raw()) };
        check("rdma_notify", rc).map_err(|err| match err.raw_os_error() {
            Some(libc::EINVAL) => Error::InvalidArgument {
                what: "CM id",
                reason: "rdma_notify: no connection is under way on it (EINVAL)".into(),
            },
            _ => err,
        })
    }

    /// The local address (`rdma_get_local_addr`), once bound or resolved.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: the id is live; the address inside it is as long as its family says.
        unsafe { from_c(cm::rdma_get_local_addr(self.ptr())) }
    }

    /// The peer's address (`rdma_get_peer_addr`), once resolved or connected.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        // SAFETY: as above.
        unsafe { from_c(cm::rdma_get_peer_addr(self.ptr())) }
    }

    /// The device context the id is bound to (librdmacm's, kept open while the returned
    /// [`Context`] or the id lives): allocate the PD and CQs of
    /// [`create_qp`](Self::create_qp) on it. Fails before the id is bound to a device
    /// (bind, resolve or a connect request); the same handle each time, and for every id
    /// on the device while one lives (on the same thread).
    pub fn context(&self) -> Result<Context> {
        if let Some(held) = self.ctx.get() {
            return Ok(held.ctx.clone());
        }
        // SAFETY: the id is live.
        let verbs = unsafe { (*self.ptr()).verbs };
        let verbs = NonNull::new(verbs).ok_or_else(|| Error::InvalidArgument {
            what: "CM id",
            reason: "not bound to a device yet (bind, resolve_addr or a connect request first)"
                .into(),
        })?;
        // The hold is taken only if the cell is empty: each id counts once.
        let held = self.ctx.get_or_init(|| crate::cm::device::context(verbs));
        Ok(held.ctx.clone())
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
        #[cfg(feature = "tokio")]
        let lent = self.lent.is_some();
        #[cfg(not(feature = "tokio"))]
        let lent = false;
        if self.qp.is_some() || lent {
            return Err(Error::InvalidArgument {
                what: "CM id",
                reason: "already has a QP".into(),
            });
        }
        qp.check_for_cm(self.ps)?;
        let ctx = self.context()?;
        ctx.check_same(qp.pd().context(), "protection domain")?;
        // A join's event may be read meanwhile, which reads the id's QP pointer.
        let _table = self.has_joins().then(id_table);
        // SAFETY: the id is live, bound to a device (context() succeeded), without a QP,
        // of a port space check_for_cm passed, and the PD is of its device; Drop and
        // take_qp clear the id's pointer to the QP before it drops.
        let created = unsafe { qp.create_on_id(self.raw, &ctx)? };
        Ok(self.qp.insert(Box::new(created)))
    }

    /// The id's QP, if [`create_qp`](Self::create_qp) made one. It sends once the
    /// connection is established (before, posting sends fails in the provider).
    pub fn qp(&self) -> Option<&QueuePair> {
        self.qp.as_deref()
    }

    /// Points librdmacm's `id->qp` at `qp` (null: none), under the id table, so that no
    /// event read meanwhile (a join's, which attaches the id's QP) sees it change.
    ///
    /// # Safety
    /// `qp` is null or a QP that lives until the pointer is set again or the id destroyed.
    pub(super) unsafe fn set_librdmacm_qp(&self, qp: *mut crate::ffi::ibv_qp) {
        let _table = id_table();
        // SAFETY: the id is live (self); the pointer is null or lives as long (caller).
        unsafe { (*self.ptr()).qp = qp };
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
        let qp = self.qp.take()?;
        let _table = id_table();
        self.hand_over_groups(&qp);
        // SAFETY: the id is live; librdmacm must not reach the QP once it is not the id's
        // (a join's event, read under the table lock, no longer attaches it).
        unsafe { (*self.ptr()).qp = ptr::null_mut() };
        Some(*qp)
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // First, while the QP is still the id's: librdmacm detaches it from each group (a
        // QP attached to a group cannot be destroyed), and no join's event comes after.
        self.leave_all();
        #[cfg(feature = "tokio")]
        self.release_lent();
        if let Some(qp) = self.qp.take() {
            // SAFETY: null: librdmacm must not reach the QP once it is destroyed.
            unsafe { self.set_librdmacm_qp(ptr::null_mut()) };
            drop(qp);
        }
        if let Some(held) = self.ctx.take() {
            if held.release_keeps_id(self.raw, &self._channel) {
                return; // its device was removed: the context destroys the id when it goes
            }
        }
        let _table = id_table();
        // SAFETY: the id is live, has no QP, and its events were all acknowledged when they
        // were read (CmEvent::take), so this does not wait (nor, so, hold the table long).
        let rc = unsafe { cm::rdma_destroy_id(self.ptr()) };
        drop_error::report("rdma_destroy_id", rc);
    }
}

impl fmt::Debug for CmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CmId")
            .field("port_space", &self.ps)
            .field("local", &self.local_addr())
            .field("peer", &self.peer_addr())
            .field("qp", &self.qp)
            .field("multicast_groups", &self.multicast_groups())
            .finish()
    }
}
