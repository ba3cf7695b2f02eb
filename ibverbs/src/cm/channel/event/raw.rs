//! The FFI calls of a CM event (`struct rdma_cm_event`): its read (`rdma_get_cm_event`),
//! what it says, and its acknowledgement (`rdma_ack_cm_event`); every unsafe block of the
//! events' part of `channel/`.
//!
//! [`RawEvent`] owns an event read and not yet acknowledged, with the id table lock it is
//! read and copied under; its methods are safe because a live handle means an event whose
//! fields, and the ids they point to, are valid. What the event's contexts hold is the id's
//! raw layer's ([`IdHandle`], [`Join`]), and so is the owner of a connect request's new id
//! ([`RawCmId`], made at the read).

use std::ptr::NonNull;
use std::sync::{Arc, MutexGuard};

use rdmacm_sys as cm;

use crate::cm::channel::id::raw::{IdHandle, Join, RawCmId};
use crate::cm::channel::raw::ChannelInner;
use crate::cm::raw::id_table;
use crate::error::{check, Error, Result};
use crate::ffi;

/// An event `rdma_get_cm_event` returned, not yet acknowledged: what it says is read through
/// its methods, under the id table lock it holds, then [`ack`](Self::ack) lets go of the
/// lock and acknowledges it, once. (Dropped unacknowledged, by a panic while it is copied,
/// the event is never acknowledged.)
pub(crate) struct RawEvent {
    raw: NonNull<cm::rdma_cm_event>,
    /// Held from the read until the acknowledgement.
    table: MutexGuard<'static, ()>,
    /// The new id of a connect request, until taken.
    request: Option<RawCmId>,
}

impl RawEvent {
    /// Reads one event if one is queued (`rdma_get_cm_event` on the non-blocking fd); `None`
    /// if there was none. The event holds the id table from the read until it is
    /// acknowledged ([`RawEvent::ack`]): a connect request's event carries a new id (taken
    /// with [`RawEvent::take_request`]), and reading a multicast join's event reads (and
    /// attaches) its id's QP (see [`id_table`]).
    pub(crate) fn read(channel: &Arc<ChannelInner>) -> Result<Option<Self>> {
        let mut raw = std::ptr::null_mut();
        let table = id_table();
        // SAFETY: the channel is live; raw is a valid out pointer.
        let rc = unsafe { cm::rdma_get_cm_event(channel.ptr(), &mut raw) };
        if rc != 0 {
            let err = Error::last("rdma_get_cm_event");
            if err.raw_os_error() == Some(libc::EAGAIN) {
                return Ok(None);
            }
            return Err(err);
        }
        // rdma_get_cm_event returned 0, so it set the event.
        let raw = NonNull::new(raw).ok_or_else(|| Error::last("rdma_get_cm_event"))?;
        // SAFETY: raw is the event just read, valid (its id live) until it is acknowledged.
        let ev = unsafe { raw.as_ref() };
        let request =
            (ev.event == cm::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST).then(|| {
                // SAFETY: a connect request's id is a new, live id of librdmacm (never null),
                // created on this channel and owned by nothing else: this RawCmId is its owner.
                unsafe { RawCmId::adopt(ev.id, channel, IdHandle::new()) }
            });
        Ok(Some(RawEvent {
            raw,
            table,
            request,
        }))
    }

    /// The event.
    fn ev(&self) -> &cm::rdma_cm_event {
        // SAFETY: the event is valid until acknowledged, and ack consumes self.
        unsafe { self.raw.as_ref() }
    }

    /// The event's type.
    pub(crate) fn event_type(&self) -> cm::rdma_cm_event_type {
        self.ev().event
    }

    /// The event's `status`.
    pub(crate) fn status(&self) -> i32 {
        self.ev().status
    }

    /// The handle of the id the event is for: the listening id of a connect request.
    pub(crate) fn id(&self) -> IdHandle {
        let ev = self.ev();
        let id = if ev.event == cm::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST {
            ev.listen_id
        } else {
            ev.id
        };
        // SAFETY: the event's ids are live until the event is acknowledged, and every id of
        // the channel was made by a RawCmId, which set its handle as its context.
        IdHandle::from_context(unsafe { (*id).context })
    }

    /// Whether the event's id is of a UD QP type: librdmacm fills `param.ud` for those ids,
    /// `param.conn` for the others.
    pub(crate) fn is_ud(&self) -> bool {
        // SAFETY: the event's id (a connect request's new id) is live until the event is
        // acknowledged; only the field is read.
        let qp_type = unsafe { (*self.ev().id).qp_type };
        qp_type == ffi::ibv_qp_type::IBV_QPT_UD
    }

    /// Whether the event's id has a QP (read under the id table lock, as librdmacm read it
    /// to attach the QP to a multicast group while it read the event).
    pub(crate) fn id_has_qp(&self) -> bool {
        // SAFETY: as in `is_ud`; the QP pointer changes only under the id table lock, which
        // this event holds.
        !unsafe { (*self.ev().id).qp }.is_null()
    }

    /// The connection parameters (`param.conn`).
    pub(crate) fn conn(&self) -> &cm::rdma_conn_param {
        // SAFETY: both views of the union are plain data (integers and pointers, never
        // dereferenced here), so either reads whole values.
        unsafe { self.ev().param.conn.as_ref() }
    }

    /// The UD parameters (`param.ud`).
    pub(crate) fn ud(&self) -> &cm::rdma_ud_param {
        // SAFETY: as in `conn`.
        unsafe { self.ev().param.ud.as_ref() }
    }

    /// A copy of the private data (both views of the parameters begin with it).
    pub(crate) fn private_data(&self) -> Vec<u8> {
        let conn = self.conn();
        let (ptr, len) = (conn.private_data, conn.private_data_len);
        if ptr.is_null() || len == 0 {
            return Vec::new();
        }
        // SAFETY: librdmacm's private data is valid for its length until the event is
        // acknowledged.
        unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len.into()) }.to_vec()
    }

    /// The join a multicast event (`MULTICAST_JOIN` or `MULTICAST_ERROR`) is of: its
    /// `param.ud.private_data`, the context of the join. `None` for other events, and when
    /// there is none (only a raw join through `AsRaw`, against its rules, has none).
    pub(crate) fn join(&self) -> Option<&Join> {
        use cm::rdma_cm_event_type as T;
        if !matches!(
            self.event_type(),
            T::RDMA_CM_EVENT_MULTICAST_JOIN | T::RDMA_CM_EVENT_MULTICAST_ERROR
        ) {
            return None;
        }
        let join = self.ud().private_data.cast::<Join>();
        // SAFETY: the event is a join's; every join of a CmId is made by RawCmId::join,
        // which passes its Join as the context and keeps it until rdma_leave_multicast
        // returned (forever if that failed); the leave holds the id table, which this
        // unacknowledged event holds for as long as the borrow lasts, and waits for the
        // acknowledgement of the join's events read.
        (!join.is_null()).then(|| unsafe { &*join })
    }

    /// The new id of a connect request, once (then `None`): `Some` for a connect request
    /// only.
    pub(crate) fn take_request(&mut self) -> Option<RawCmId> {
        self.request.take()
    }

    /// Lets go of the id table, then acknowledges the event (`rdma_ack_cm_event`), once; the
    /// new id of a connect request not taken is destroyed after.
    pub(crate) fn ack(self) -> Result<()> {
        let RawEvent {
            raw,
            table,
            request,
        } = self;
        drop(table);
        // SAFETY: raw was not acknowledged yet (self is consumed), and nothing points into
        // it now (the borrows of self ended).
        let result = check("rdma_ack_cm_event", unsafe {
            cm::rdma_ack_cm_event(raw.as_ptr())
        });
        drop(request);
        result
    }
}
