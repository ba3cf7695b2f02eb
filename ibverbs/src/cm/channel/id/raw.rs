//! The FFI calls of a CM id (`struct rdma_cm_id`): every unsafe block of `channel/id/` but
//! the lending of its QP (`lend.rs`, whose owner keeps the QP alive).
//!
//! [`RawCmId`] owns the id and what librdmacm's id points to or hands back: its QP
//! (`id->qp`), the context of each multicast join ([`Join`], handed back in the join's
//! events), the owner of a lent QP (feature `tokio`, a [`Keeper`]) and the hold on the id's
//! device context. Its methods are safe because a live handle means a live id whose pointers
//! are valid; its drop takes them apart in the order librdmacm needs (groups left, QP
//! detached from the id and destroyed, the context released), then destroys the id. The
//! values the id's context and its joins' contexts hold ([`IdHandle`], [`Join`]) are here
//! too, so that the safe modules of `id/` and the event's raw layer (`event/raw.rs`) read
//! them from this leaf.

#[cfg(feature = "tokio")]
use std::any::Any;
use std::cell::{Cell, OnceCell};
use std::ffi::c_void;
use std::mem;
use std::net::{IpAddr, SocketAddr};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rdmacm_sys as cm;

use crate::cm::addr::to_c;
use crate::cm::channel::raw::ChannelInner;
use crate::cm::device::{self, IdContext};
use crate::cm::param::{check_private_data, ConnParam, Message};
use crate::cm::raw::id_table;
use crate::cm::ud::UdPeer;
use crate::cm::PortSpace;
use crate::context::Context;
use crate::drop_error;
use crate::error::{check, Error, Result};
use crate::ffi;
use crate::qp::{PreparedQueuePair, QueuePair, QueuePairBuilder};
use crate::types::Gid;

/// Which id a [`CmEvent`](crate::cm::CmEvent) is for: compare with
/// [`CmId::handle`](crate::cm::CmId::handle).
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
    pub(crate) fn new() -> Self {
        IdHandle(NEXT_HANDLE.fetch_add(1, Ordering::Relaxed))
    }

    /// The handle an id's `context` holds (set when its [`RawCmId`] was made).
    pub(crate) fn from_context(context: *mut c_void) -> Self {
        IdHandle(context as usize)
    }

    /// The handle as an id's `context` (a number, never dereferenced).
    pub(crate) fn as_context(self) -> *mut c_void {
        self.0 as *mut c_void
    }
}

/// One group an id joined: the context of the join's events (librdmacm hands its address
/// back in them), kept by the id until the group is left.
pub(crate) struct Join {
    group: IpAddr,
    /// How the group is joined (`enum rdma_cm_mc_join_flags`).
    flags: cm::rdma_cm_mc_join_flags,
    /// The group's GID and LID once librdmacm attached the id's QP to it (at the join's
    /// `MULTICAST_JOIN` event), until the QP leaves the id and takes it along. Written and
    /// taken under the id table lock.
    attached: Mutex<Option<(Gid, u16)>>,
}

impl Join {
    /// The group joined.
    pub(crate) fn group(&self) -> IpAddr {
        self.group
    }

    /// Records what a `MULTICAST_JOIN` event of this join did: librdmacm attached the id's
    /// QP to the group if the id had one (`has_qp`, read under the id table lock, which the
    /// event's reader holds) and the join is not send-only.
    pub(crate) fn record_join(&self, peer: &UdPeer, has_qp: bool) {
        let send_only =
            self.flags == cm::rdma_cm_mc_join_flags::RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
        if has_qp && !send_only {
            let ah = peer.ah_attr();
            *self.attached_lock() = Some((Gid::from_raw(ah.grh.dgid), ah.dlid));
        }
    }

    /// The group's GID and LID while the id's QP is attached to it, locked.
    fn attached_lock(&self) -> MutexGuard<'_, Option<(Gid, u16)>> {
        // Nothing panics under the lock; a poisoned value is still whole.
        self.attached.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The C socket address of `group` (port 0), the same bytes for the join and the leave
/// (`rdma_leave_multicast` finds the join by comparing them).
fn group_addr(group: IpAddr) -> libc::sockaddr_storage {
    to_c(SocketAddr::new(group, 0))
}

/// Hands the groups librdmacm attached an id's QP to (of its `joins`) over to `qp`, which is
/// leaving the id: it then detaches from them itself before it is destroyed. The caller
/// holds the id table lock and clears the id's QP pointer under it.
fn hand_over_groups(qp: &QueuePair, joins: &[Arc<Join>]) {
    let Some(mut groups) = qp.mcast_groups() else {
        return;
    };
    for join in joins {
        if let Some(group) = join.attached_lock().take() {
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
    }
}

/// What keeps a QP lent out of an id alive: the owner that `CmId::lend_qp`'s `wrap` made
/// of it.
#[cfg(feature = "tokio")]
pub(crate) type Keeper = Arc<dyn Any + Send + Sync>;

/// A CM id, owned: destroyed on drop (`rdma_destroy_id`, after its groups are left and its
/// QP destroyed), unless the id was the last holder of a removed device, which then keeps
/// it ([`IdContext::release`]).
///
/// `Send` but not `Sync` (its `OnceCell`): librdmacm updates the id's fields (its
/// addresses, route) in calls on it, which must not run beside each other.
pub(crate) struct RawCmId {
    ptr: NonNull<cm::rdma_cm_id>,
    ps: PortSpace,
    /// Boxed: a QP carries its receive post table, and an id stays small inside a CM event.
    /// librdmacm's `id->qp` points to it while it is here.
    qp: Option<Box<QueuePair>>,
    /// The multicast groups joined and not left, each the context of its join's events.
    joins: Vec<Arc<Join>>,
    /// The owner of a QP lent out of the id (`lend_qp`), kept while librdmacm may reach
    /// the QP.
    #[cfg(feature = "tokio")]
    lent: Option<Keeper>,
    /// The id's device context and its hold on it, once [`context`](Self::context) found
    /// it: an id stays on the device it was bound to.
    ctx: OnceCell<IdContext>,
    /// Whether `rdma_listen` succeeded on the id (see [`migrate`](Self::migrate)).
    listening: Cell<bool>,
    // Dropped after the id is destroyed (fields drop after Drop::drop).
    channel: Arc<ChannelInner>,
}

// SAFETY: an id may be used from any thread, one call at a time (it is not Sync); what it
// owns (its QP, joins, lent QP's owner, context hold) is Send.
unsafe impl Send for RawCmId {}

impl RawCmId {
    /// The owner of the live id `ptr` on `channel`, with nothing of its own yet. Only
    /// [`create`](Self::create), [`adopt`](Self::adopt) and a kept id in `drop` make one:
    /// each is the id's only owner.
    fn owning(ptr: NonNull<cm::rdma_cm_id>, ps: PortSpace, channel: &Arc<ChannelInner>) -> Self {
        RawCmId {
            ptr,
            ps,
            qp: None,
            joins: Vec::new(),
            #[cfg(feature = "tokio")]
            lent: None,
            ctx: OnceCell::new(),
            listening: Cell::new(false),
            channel: Arc::clone(channel),
        }
    }

    /// `rdma_create_id` on `channel` in port space `ps`, with `handle` as its context.
    pub(crate) fn create(
        channel: &Arc<ChannelInner>,
        ps: PortSpace,
        handle: IdHandle,
    ) -> Result<Self> {
        let mut raw = ptr::null_mut();
        let rc = {
            let _table = id_table();
            // SAFETY: the channel is live; raw is a valid out pointer; the context is a
            // number that librdmacm only hands back.
            unsafe { cm::rdma_create_id(channel.ptr(), &mut raw, handle.as_context(), ps.raw()) }
        };
        check("rdma_create_id", rc)?;
        let ptr = NonNull::new(raw).ok_or_else(|| Error::last("rdma_create_id"))?;
        Ok(Self::owning(ptr, ps, channel))
    }

    /// Takes ownership of the new id of a connect request on `channel`, giving it `handle`
    /// (librdmacm gave it the listening id's context).
    ///
    /// # Safety
    /// `raw` must be the `id` of a connect request event read from `channel`, not yet
    /// acknowledged, owned by nothing else.
    pub(crate) unsafe fn adopt(
        raw: *mut cm::rdma_cm_id,
        channel: &Arc<ChannelInner>,
        handle: IdHandle,
    ) -> Self {
        // SAFETY: a connect request's id is a live id of librdmacm (caller).
        let ps = PortSpace::from_raw(unsafe { (*raw).ps.0 } as i32).unwrap_or(PortSpace::Tcp);
        // SAFETY: as above; the id is ours, and librdmacm keeps but never reads the context.
        unsafe { (*raw).context = handle.as_context() };
        // SAFETY: an event's id is never null.
        Self::owning(unsafe { NonNull::new_unchecked(raw) }, ps, channel)
    }

    /// The raw `rdma_cm_id`, valid while this lives.
    pub(crate) fn ptr(&self) -> *mut cm::rdma_cm_id {
        self.ptr.as_ptr()
    }

    /// The handle the id's context holds.
    pub(crate) fn handle(&self) -> IdHandle {
        // SAFETY: the id is live; its context was set when this RawCmId was made.
        IdHandle::from_context(unsafe { (*self.ptr()).context })
    }

    /// The port space the id was created in.
    pub(crate) fn port_space(&self) -> PortSpace {
        self.ps
    }

    /// The device context the id is bound to (`verbs`), `None` before it is bound.
    pub(crate) fn verbs(&self) -> Option<NonNull<ffi::ibv_context>> {
        // SAFETY: the id is live; librdmacm sets its fields in calls on it, which take the
        // id by reference and so do not run beside this one (RawCmId is not Sync).
        NonNull::new(unsafe { (*self.ptr()).verbs })
    }

    /// The port of the id's device it is bound to (`port_num`, 0 before it is bound).
    pub(crate) fn port_num(&self) -> u8 {
        // SAFETY: as in `verbs`.
        unsafe { (*self.ptr()).port_num }
    }

    /// Whether the id is bound to an iWARP device.
    pub(crate) fn is_iwarp(&self) -> bool {
        self.verbs().is_some_and(|verbs| {
            // SAFETY: a bound id's context is open while the id lives, and so is its device.
            let transport = unsafe { (*(*verbs.as_ptr()).device).transport_type };
            transport == ffi::ibv_transport_type::IBV_TRANSPORT_IWARP
        })
    }

    /// `rdma_migrate_id` to `channel`, which the id then holds (letting go of the old one);
    /// refused for a listening id while its old channel has an unread event.
    ///
    /// The kernel (`ucma_connect_event_handler`, Linux 6.1) gives a connect request's new
    /// id to the listener's channel as the request arrives, and `ucma_migrate_id` moves the
    /// listener's unread events to the new channel but leaves their new ids on the old one:
    /// librdmacm, reading such a request on the new channel, fails to query its new id
    /// there (`EINVAL`), fails to destroy it, and drops the event without a word; the
    /// client then waits, and is rejected when the old channel closes. The old channel's
    /// fd is checked under the id table, so no reader of this process takes an event
    /// between the check and the move; a request the kernel queues in that window is lost
    /// all the same (nothing in user space can tell it from one that came after the move).
    pub(crate) fn migrate(&mut self, channel: &Arc<ChannelInner>) -> Result<()> {
        let _table = id_table();
        if self.listening.get()
            && !Arc::ptr_eq(&self.channel, channel)
            && self.channel.has_unread()?
        {
            return Err(Error::InvalidArgument {
                what: "CM id",
                reason: "a listening id migrates only once its channel has no unread event: \
                         the kernel leaves a pending connect request's new id on the old \
                         channel, and librdmacm drops the request read on the new one (read \
                         the old channel's events first)"
                    .into(),
            });
        }
        // SAFETY: the id and the channel are live; the id's events on its old channel were
        // acknowledged when read (RawEvent::ack), which rdma_migrate_id waits for, and an
        // event read before the table was taken is acknowledged without it.
        check("rdma_migrate_id", unsafe {
            cm::rdma_migrate_id(self.ptr(), channel.ptr())
        })?;
        self.channel = Arc::clone(channel);
        Ok(())
    }

    /// `rdma_bind_addr` to `sa` (IP or AF_IB, by its family).
    pub(crate) fn bind(&self, mut sa: libc::sockaddr_storage) -> Result<()> {
        // SAFETY: the id is live; sa is a whole sockaddr_storage, larger than the sockaddr
        // of any family.
        check("rdma_bind_addr", unsafe {
            cm::rdma_bind_addr(self.ptr(), ptr::addr_of_mut!(sa).cast())
        })
    }

    /// `rdma_listen` with `backlog`.
    pub(crate) fn listen(&self, backlog: i32) -> Result<()> {
        // SAFETY: the id is live.
        check("rdma_listen", unsafe {
            cm::rdma_listen(self.ptr(), backlog)
        })?;
        self.listening.set(true);
        Ok(())
    }

    /// `rdma_resolve_addr` of `dst` from `src` (IP or AF_IB, by their family) within `ms`.
    pub(crate) fn resolve_addr(
        &self,
        mut src: Option<libc::sockaddr_storage>,
        mut dst: libc::sockaddr_storage,
        ms: i32,
    ) -> Result<()> {
        let src_ptr = src
            .as_mut()
            .map_or(ptr::null_mut(), |s| ptr::from_mut(s).cast());
        // SAFETY: the id is live; the addresses are whole sockaddr_storages or null.
        check("rdma_resolve_addr", unsafe {
            cm::rdma_resolve_addr(self.ptr(), src_ptr, ptr::addr_of_mut!(dst).cast(), ms)
        })
    }

    /// `rdma_resolve_route` within `ms`.
    pub(crate) fn resolve_route(&self, ms: i32) -> Result<()> {
        // SAFETY: the id is live.
        check("rdma_resolve_route", unsafe {
            cm::rdma_resolve_route(self.ptr(), ms)
        })
    }

    /// `rdma_connect` with `param` (checked first).
    pub(crate) fn connect(&self, param: &ConnParam<'_>) -> Result<()> {
        let mut c = param.to_c(Message::Connect, self.ps)?;
        // SAFETY: the id is live; c points into param, which outlives the call.
        check("rdma_connect", unsafe {
            cm::rdma_connect(self.ptr(), &mut c)
        })
    }

    /// `rdma_accept` with `param` (checked first).
    pub(crate) fn accept(&self, param: &ConnParam<'_>) -> Result<()> {
        let mut c = param.to_c(Message::Accept, self.ps)?;
        // SAFETY: the id is live; c points into param, which outlives the call.
        check("rdma_accept", unsafe {
            cm::rdma_accept(self.ptr(), &mut c)
        })
    }

    /// `rdma_reject` with `private_data` (checked against the limit first).
    pub(crate) fn reject(&self, private_data: &[u8]) -> Result<()> {
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

    /// `rdma_disconnect`.
    pub(crate) fn disconnect(&self) -> Result<()> {
        // SAFETY: the id is live.
        let rc = unsafe { cm::rdma_disconnect(self.ptr()) };
        if let Some(qp) = self.qp() {
            // librdmacm moves the QP out of RTS first (to ERROR, or SQD on iWARP), so even
            // a failed call may have: the QP takes no more posts on siw.
            qp.mark_disconnected();
        }
        check("rdma_disconnect", rc)
    }

    /// `rdma_notify` of `event`.
    pub(crate) fn notify(&self, event: ffi::ibv_event_type) -> Result<()> {
        // SAFETY: the id is live; the event is a value of enum ibv_event_type.
        check("rdma_notify", unsafe { cm::rdma_notify(self.ptr(), event) })
    }

    /// The local address (`rdma_get_local_addr`), copied; of family `AF_UNSPEC` before
    /// the id is bound.
    pub(crate) fn local_addr(&self) -> libc::sockaddr_storage {
        // SAFETY: the id is live; the address is the id's `route.addr` source, a union
        // that holds a whole sockaddr_storage.
        unsafe {
            cm::rdma_get_local_addr(self.ptr())
                .cast::<libc::sockaddr_storage>()
                .read_unaligned()
        }
    }

    /// The peer's address (`rdma_get_peer_addr`), copied; `AF_UNSPEC` before it is set.
    pub(crate) fn peer_addr(&self) -> libc::sockaddr_storage {
        // SAFETY: as in `local_addr`, for the destination.
        unsafe {
            cm::rdma_get_peer_addr(self.ptr())
                .cast::<libc::sockaddr_storage>()
                .read_unaligned()
        }
    }

    /// `rdma_set_option(RDMA_OPTION_ID, name, value, size_of::<T>())`.
    pub(crate) fn set_option<T: Copy>(&self, name: u32, value: &T) -> Result<()> {
        // SAFETY: the id is live; value is size_of::<T>() readable bytes for the call,
        // which only copies them (librdmacm hands them to the kernel, never writes them).
        check("rdma_set_option", unsafe {
            cm::rdma_set_option(
                self.ptr(),
                cm::RDMA_OPTION_ID as i32,
                name as i32,
                ptr::from_ref(value).cast_mut().cast::<c_void>(),
                mem::size_of::<T>(),
            )
        })
    }

    /// The id's device context (librdmacm's, held open while the returned [`Context`] or
    /// the id lives); fails before the id is bound to a device. The same each time.
    pub(crate) fn context(&self) -> Result<Context> {
        if let Some(held) = self.ctx.get() {
            return Ok(held.ctx.clone());
        }
        let verbs = self.verbs().ok_or_else(|| Error::InvalidArgument {
            what: "CM id",
            reason: "not bound to a device yet (bind, resolve_addr or a connect request first)"
                .into(),
        })?;
        // The hold is taken only if the cell is empty: each id counts once.
        let held = self.ctx.get_or_init(|| device::context(verbs));
        Ok(held.ctx.clone())
    }

    /// The id's QP, if [`create_qp`](Self::create_qp) made one (and it was not taken).
    pub(crate) fn qp(&self) -> Option<&QueuePair> {
        self.qp.as_deref()
    }

    /// `rdma_create_qp_ex`: the id's QP as `qp` describes, refused if the id has one (or
    /// lent one), if `qp` does not fit the port space ([`QueuePairBuilder::check_for_cm`]),
    /// before the id is bound, or with a PD of another device.
    pub(crate) fn create_qp(&mut self, qp: QueuePairBuilder<'_>) -> Result<&QueuePair> {
        self.check_no_qp()?;
        qp.check_for_cm(self.ps)?;
        let ctx = self.context()?;
        ctx.check_same(qp.pd().context(), "protection domain")?;
        // A join's event may be read meanwhile, which reads the id's QP pointer.
        let _table = self.has_joins().then(id_table);
        // SAFETY: the id is live, bound to a device (context() succeeded), without a QP
        // (checked above), of a port space check_for_cm passed, and the PD is of its
        // device (check_same); the QP is kept in self.qp, and take_qp and drop clear the
        // id's pointer to it before it leaves.
        let created = unsafe { qp.create_on_id(self.ptr, &ctx)? };
        Ok(self.qp.insert(Box::new(created)))
    }

    /// Makes `qp` the id's QP (librdmacm's `id->qp`), refused as [`create_qp`](Self::create_qp)
    /// refuses, and for a QP of another device or built on another port or GID than the
    /// id's route's ([`PreparedQueuePair::check_for_id`]).
    pub(crate) fn set_qp(&mut self, qp: PreparedQueuePair) -> Result<&QueuePair> {
        self.check_no_qp()?;
        let ctx = self.context()?;
        // A join's event may be read meanwhile, which reads the id's QP pointer.
        let _table = self.has_joins().then(id_table);
        // SAFETY: the id is live, bound to a device (context() succeeded) and without a QP
        // (checked above); the QP is kept in self.qp, and take_qp and drop clear the id's
        // pointer to it before it leaves.
        let set = unsafe { qp.set_on_id(self.ptr, self.ps, &ctx)? };
        Ok(self.qp.insert(Box::new(set)))
    }

    /// Refuses a second QP: the id has one, or lent one.
    fn check_no_qp(&self) -> Result<()> {
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
        Ok(())
    }

    /// Sets librdmacm's `id->qp` to null, under the id table `_table` (held so that no
    /// event read meanwhile, a join's, which attaches the id's QP, sees it change).
    fn clear_qp(&self, _table: &MutexGuard<'static, ()>) {
        // SAFETY: the id is live; null points to no QP.
        unsafe { (*self.ptr()).qp = ptr::null_mut() };
    }

    /// Takes the QP out of the id: it takes along the groups librdmacm attached it to
    /// ([`hand_over_groups`]), and librdmacm's pointer to it is cleared, under the id table
    /// (a join's event read after no longer attaches it).
    pub(crate) fn take_qp(&mut self) -> Option<QueuePair> {
        let qp = self.qp.take()?;
        let table = id_table();
        hand_over_groups(&qp, &self.joins);
        self.clear_qp(&table);
        Some(*qp)
    }

    /// Points librdmacm's `id->qp` at `qp`, a QP lent out of the id, and keeps `keeper`
    /// until the id is destroyed (its pointer cleared first).
    ///
    /// # Safety
    /// `qp` must live while `keeper` does.
    #[cfg(feature = "tokio")]
    pub(crate) unsafe fn lend(&mut self, qp: *mut ffi::ibv_qp, keeper: Keeper) {
        {
            let _table = id_table();
            // SAFETY: the id is live; the QP lives while `keeper` does (caller), which the
            // id holds until its drop clears the pointer again.
            unsafe { (*self.ptr()).qp = qp };
        }
        self.lent = Some(keeper);
    }

    /// The multicast groups joined and not left.
    pub(crate) fn joins(&self) -> &[Arc<Join>] {
        &self.joins
    }

    /// Whether the id has joins (whose events read the id's QP pointer).
    pub(crate) fn has_joins(&self) -> bool {
        !self.joins.is_empty()
    }

    /// `rdma_join_multicast_ex` of `group` as `flags` say, with a new [`Join`] as the context
    /// of its events, kept until the group is left.
    pub(crate) fn join(&mut self, group: IpAddr, flags: cm::rdma_cm_mc_join_flags) -> Result<()> {
        let join = Arc::new(Join {
            group,
            flags,
            attached: Mutex::new(None),
        });
        let mut addr = group_addr(join.group());
        let mut attr = cm::rdma_cm_join_mc_attr_ex {
            comp_mask: (cm::rdma_cm_join_mc_attr_mask::RDMA_CM_JOIN_MC_ATTR_ADDRESS
                | cm::rdma_cm_join_mc_attr_mask::RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS)
                .0,
            join_flags: flags.0,
            addr: ptr::addr_of_mut!(addr).cast(),
        };
        let context = Arc::as_ptr(&join).cast_mut().cast();
        // SAFETY: the id is live; attr and the address it points to outlive the call, which
        // copies the address. The context is the Join, which stays alive (self.joins) until
        // rdma_leave_multicast has returned, after the join's last event was acknowledged
        // (leave_join); if the call fails, librdmacm forgets the join and no event carries
        // the context.
        check("rdma_join_multicast_ex", unsafe {
            cm::rdma_join_multicast_ex(self.ptr(), &mut attr, context)
        })?;
        self.joins.push(join);
        Ok(())
    }

    /// `rdma_leave_multicast` of the join at `at` in [`joins`](Self::joins), which it
    /// leaves whatever the result.
    pub(crate) fn leave(&mut self, at: usize) -> Result<()> {
        let join = self.joins.swap_remove(at);
        self.leave_join(join)
    }

    /// `rdma_leave_multicast` of `join`, taken out of the id's joins.
    fn leave_join(&self, join: Arc<Join>) -> Result<()> {
        let mut addr = group_addr(join.group());
        let rc = {
            // No event is read meanwhile: librdmacm's detaching the id's QP does not race
            // with a join's event attaching it. An event read just before is acknowledged
            // without the lock, so the call's wait for it ends.
            let _table = id_table();
            // SAFETY: the id is live and joined the group with these very address bytes;
            // the join's events read are acknowledged by their readers, each once.
            unsafe { cm::rdma_leave_multicast(self.ptr(), ptr::addr_of_mut!(addr).cast()) }
        };
        let result = check("rdma_leave_multicast", rc);
        if result.is_err() {
            // librdmacm freed its record of the join without waiting for the join's events:
            // one read meanwhile may still carry the context, which so must never be freed.
            mem::forget(join);
        }
        result
    }

    /// Leaves every group the id is still in (on drop), reporting failures.
    fn leave_all(&mut self) {
        for join in mem::take(&mut self.joins) {
            let rc = match self.leave_join(join) {
                Ok(()) => 0,
                Err(err) => err.raw_os_error().unwrap_or(libc::EIO),
            };
            drop_error::report("rdma_leave_multicast", rc);
        }
    }
}

impl Drop for RawCmId {
    fn drop(&mut self) {
        // First, while the QP is still the id's: librdmacm detaches it from each group (a
        // QP attached to a group cannot be destroyed), and no join's event comes after.
        self.leave_all();
        #[cfg(feature = "tokio")]
        if let Some(keeper) = self.lent.take() {
            // librdmacm must not reach the QP once it may be destroyed (with the owner's
            // last clone).
            self.clear_qp(&id_table());
            drop(keeper);
        }
        if let Some(qp) = self.qp.take() {
            // librdmacm must not reach the QP once it is destroyed.
            self.clear_qp(&id_table());
            drop(qp);
        }
        if let Some(held) = self.ctx.take() {
            let mut kept = false;
            held.release(|| {
                kept = true;
                // The kept id's owner from now on: this one returns without destroying it.
                Box::new(Self::owning(self.ptr, self.ps, &self.channel))
            });
            if kept {
                return; // its device was removed: the context destroys the id when it goes
            }
        }
        let _table = id_table();
        // SAFETY: the id is live, has no QP, and its events were all acknowledged when they
        // were read (RawEvent::ack), so this does not wait (nor, so, hold the table long).
        let rc = unsafe { cm::rdma_destroy_id(self.ptr()) };
        drop_error::report("rdma_destroy_id", rc);
    }
}
