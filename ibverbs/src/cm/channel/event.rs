//! CM events (`struct rdma_cm_event`): copied into [`CmEvent`] and acknowledged at once.

pub(super) mod raw; // RawEvent, the FFI calls of an event: read, copied, acknowledged

use std::net::IpAddr;

use rdmacm_sys as cm;

use self::raw::RawEvent;
use super::id::raw::IdHandle;
use super::id::CmId;
use crate::cm::ud::UdPeer;
use crate::error::{Error, Result};

/// One event of an [`EventChannel`](super::EventChannel), already acknowledged: what it
/// said, copied.
#[derive(Debug)]
#[non_exhaustive]
pub struct CmEvent {
    /// The id it is for ([`CmId::handle`]); for a connect request, the listening id.
    pub id: IdHandle,
    /// What happened.
    pub kind: CmEventKind,
    /// The event's `status`: 0, a negative errno (errors), or the reject reason
    /// ([`CmEventKind::Rejected`]).
    pub status: i32,
}

/// What a [`CmEvent`] reports (`enum rdma_cm_event_type`), with its data.
///
/// On InfiniBand and RoCE the CM does not send the length of the private data: a peer's
/// private data arrives zero-padded to the message's whole field (56 bytes for a connect
/// request, 196 for an accept, 148 for a reject; 180 and 136 for UD's; see
/// [`private_data_limit`](crate::cm::private_data_limit)).
#[derive(Debug)]
#[non_exhaustive]
pub enum CmEventKind {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`: [`CmId::resolve_addr`] is done.
    AddrResolved,
    /// `RDMA_CM_EVENT_ADDR_ERROR`: the address did not resolve (`status` is the errno).
    AddrError,
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`: [`CmId::resolve_route`] is done.
    RouteResolved,
    /// `RDMA_CM_EVENT_ROUTE_ERROR`: the route did not resolve (`status` is the errno).
    RouteError,
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`, on a listening id: a peer connects.
    ConnectRequest {
        /// The id of the new connection: accept or reject it.
        id: CmId,
        /// What the peer sent with its request.
        private_data: Vec<u8>,
        /// The peer's `initiator_depth` (what we may give as `responder_resources`; 0
        /// for UD).
        initiator_depth: u8,
        /// The peer's `responder_resources` (what we may give as `initiator_depth`; 0
        /// for UD).
        responder_resources: u8,
    },
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`: a reply for an id without a QP.
    ConnectResponse {
        /// What the peer sent with its accept.
        private_data: Vec<u8>,
    },
    /// `RDMA_CM_EVENT_CONNECT_ERROR`: the connection failed (`status` is the errno).
    ConnectError,
    /// `RDMA_CM_EVENT_UNREACHABLE`: the peer did not answer.
    Unreachable,
    /// `RDMA_CM_EVENT_REJECTED`: the peer (or its CM, when nobody listens) rejected us.
    Rejected {
        /// The reject reason (the IB CM's REJ reason on IB and RoCE).
        reason: i32,
        /// What the reason means ([`reject_reason_text`]).
        reason_text: &'static str,
        /// What the peer sent with its reject.
        private_data: Vec<u8>,
    },
    /// `RDMA_CM_EVENT_ESTABLISHED`: the connection is up (for UD, on the connecting side
    /// only: the peer accepted).
    Established {
        /// What the peer sent with its accept (on the connecting side).
        private_data: Vec<u8>,
        /// For a UD id (UDP port space): the peer's address, QP number and Q_Key.
        ud: Option<UdPeer>,
    },
    /// `RDMA_CM_EVENT_DISCONNECTED`: the connection is down.
    Disconnected,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`: the id's device is going away.
    DeviceRemoval,
    /// `RDMA_CM_EVENT_MULTICAST_JOIN`: a join of
    /// [`CmId::join_multicast`](crate::cm::CmId::join_multicast) is done; librdmacm
    /// attached the id's QP to the group (unless the join is send-only or the id has no
    /// QP).
    MulticastJoin {
        /// The group joined, as it was given to the join.
        group: IpAddr,
        /// Where the group's datagrams go: its address vector (the group's GID and, on
        /// InfiniBand, its multicast LID), QP number
        /// ([`MULTICAST_QPN`](crate::MULTICAST_QPN)) and Q_Key. Send to the group through
        /// [`UdPeer::create_ah`] with these.
        ud: UdPeer,
    },
    /// `RDMA_CM_EVENT_MULTICAST_ERROR`: joining `group` failed, or a group joined before is
    /// no longer reachable (`status` is the errno, negative, or -1 when librdmacm could not
    /// attach the QP). The id still counts the group as joined: leave it
    /// ([`CmId::leave_multicast`](crate::cm::CmId::leave_multicast)), then join again if
    /// wanted.
    MulticastError {
        /// The group of the join, as it was given to it.
        group: IpAddr,
    },
    /// `RDMA_CM_EVENT_ADDR_CHANGE`: the id's address moved to another device.
    AddrChange,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`: the QP left timewait and can be reused.
    TimewaitExit,
    /// An event type this crate does not know, by number.
    Other(u32),
}

impl CmEventKind {
    /// The C name of the event type, as `rdma_event_str` gives it
    /// (`RDMA_CM_EVENT_ESTABLISHED`, ...).
    pub fn c_name(&self) -> &'static str {
        match self {
            CmEventKind::AddrResolved => "RDMA_CM_EVENT_ADDR_RESOLVED",
            CmEventKind::AddrError => "RDMA_CM_EVENT_ADDR_ERROR",
            CmEventKind::RouteResolved => "RDMA_CM_EVENT_ROUTE_RESOLVED",
            CmEventKind::RouteError => "RDMA_CM_EVENT_ROUTE_ERROR",
            CmEventKind::ConnectRequest { .. } => "RDMA_CM_EVENT_CONNECT_REQUEST",
            CmEventKind::ConnectResponse { .. } => "RDMA_CM_EVENT_CONNECT_RESPONSE",
            CmEventKind::ConnectError => "RDMA_CM_EVENT_CONNECT_ERROR",
            CmEventKind::Unreachable => "RDMA_CM_EVENT_UNREACHABLE",
            CmEventKind::Rejected { .. } => "RDMA_CM_EVENT_REJECTED",
            CmEventKind::Established { .. } => "RDMA_CM_EVENT_ESTABLISHED",
            CmEventKind::Disconnected => "RDMA_CM_EVENT_DISCONNECTED",
            CmEventKind::DeviceRemoval => "RDMA_CM_EVENT_DEVICE_REMOVAL",
            CmEventKind::MulticastJoin { .. } => "RDMA_CM_EVENT_MULTICAST_JOIN",
            CmEventKind::MulticastError { .. } => "RDMA_CM_EVENT_MULTICAST_ERROR",
            CmEventKind::AddrChange => "RDMA_CM_EVENT_ADDR_CHANGE",
            CmEventKind::TimewaitExit => "RDMA_CM_EVENT_TIMEWAIT_EXIT",
            CmEventKind::Other(_) => "UNKNOWN EVENT",
        }
    }
}

impl CmEvent {
    /// Copies `ev` into a [`CmEvent`] under the id table lock it holds (the id's QP pointer
    /// changes under it while the id has joins), then lets go of the lock and acknowledges
    /// the event (`rdma_ack_cm_event`), once, whatever the result: so the copy, and the id
    /// of a connect request in it, is dropped outside the lock if the acknowledgement fails.
    pub(super) fn take(mut ev: RawEvent) -> Result<Self> {
        use cm::rdma_cm_event_type as T;
        // librdmacm fills `param.ud` for the ids of UD QPs, `param.conn` for the others
        // (both begin with the private data).
        let ud = ev.is_ud();
        // The RDMA read depths of an RC request (none for UD).
        let depths = if ud {
            (0, 0)
        } else {
            let conn = ev.conn();
            (conn.initiator_depth, conn.responder_resources)
        };
        // Only a connect request carries a new id, which is ours from here on.
        let kind = match (ev.event_type(), ev.take_request()) {
            (_, Some(id)) => CmEventKind::ConnectRequest {
                id: CmId::from_request(id),
                private_data: ev.private_data(),
                initiator_depth: depths.0,
                responder_resources: depths.1,
            },
            (T::RDMA_CM_EVENT_ADDR_RESOLVED, _) => CmEventKind::AddrResolved,
            (T::RDMA_CM_EVENT_ADDR_ERROR, _) => CmEventKind::AddrError,
            (T::RDMA_CM_EVENT_ROUTE_RESOLVED, _) => CmEventKind::RouteResolved,
            (T::RDMA_CM_EVENT_ROUTE_ERROR, _) => CmEventKind::RouteError,
            (T::RDMA_CM_EVENT_CONNECT_RESPONSE, _) => CmEventKind::ConnectResponse {
                private_data: ev.private_data(),
            },
            (T::RDMA_CM_EVENT_CONNECT_ERROR, _) => CmEventKind::ConnectError,
            (T::RDMA_CM_EVENT_UNREACHABLE, _) => CmEventKind::Unreachable,
            (T::RDMA_CM_EVENT_REJECTED, _) => CmEventKind::Rejected {
                reason: ev.status(),
                reason_text: reject_reason_text(ev.status()),
                private_data: ev.private_data(),
            },
            (T::RDMA_CM_EVENT_ESTABLISHED, _) => CmEventKind::Established {
                private_data: ev.private_data(),
                ud: ud.then(|| UdPeer::from_c(ev.ud())),
            },
            (T::RDMA_CM_EVENT_DISCONNECTED, _) => CmEventKind::Disconnected,
            (T::RDMA_CM_EVENT_DEVICE_REMOVAL, _) => CmEventKind::DeviceRemoval,
            (T::RDMA_CM_EVENT_MULTICAST_JOIN | T::RDMA_CM_EVENT_MULTICAST_ERROR, _) => {
                multicast(&ev)
            }
            (T::RDMA_CM_EVENT_ADDR_CHANGE, _) => CmEventKind::AddrChange,
            (T::RDMA_CM_EVENT_TIMEWAIT_EXIT, _) => CmEventKind::TimewaitExit,
            (other, _) => CmEventKind::Other(other.0),
        };
        let (id, status) = (ev.id(), ev.status());
        ev.ack()?;
        Ok(CmEvent { id, kind, status })
    }

    /// Whether the event is for `id` (a connect request: for the listening `id`).
    pub fn is_for(&self, id: &CmId) -> bool {
        self.id == id.handle()
    }

    /// The event if `want` says it is the one `verb` waits for, else the error it is: a
    /// reject is [`Error::Rejected`] (reason and the peer's private data), `Unreachable`
    /// an [`Error::Verb`] of kind `TimedOut`, any other event one of kind `Other`.
    ///
    /// ```no_run
    /// # use rdma_verbs::cm::{CmEventKind, ConnParam, EventChannel};
    /// # fn f(channel: &EventChannel, id: &rdma_verbs::cm::CmId) -> rdma_verbs::Result<()> {
    /// id.connect(&ConnParam::new())?;
    /// let ev = channel.get_event()?.expect_kind("rdma_connect", |k| {
    ///     matches!(k, CmEventKind::Established { .. })
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn expect_kind(
        self,
        verb: &'static str,
        want: impl FnOnce(&CmEventKind) -> bool,
    ) -> Result<CmEvent> {
        if want(&self.kind) {
            return Ok(self);
        }
        let kind = match self.kind {
            CmEventKind::Rejected {
                reason,
                reason_text,
                private_data,
            } => {
                return Err(Error::Rejected {
                    verb,
                    reason,
                    reason_text,
                    private_data,
                })
            }
            CmEventKind::Unreachable => std::io::ErrorKind::TimedOut,
            _ => std::io::ErrorKind::Other,
        };
        let text = format!("{} (status {})", self.kind.c_name(), self.status);
        Err(Error::Verb {
            verb,
            source: std::io::Error::new(kind, text),
        })
    }
}

/// The kind of a multicast join's event `ev` (`MULTICAST_JOIN` or `MULTICAST_ERROR`), whose
/// `param.ud.private_data` is the context of the join: the id's [`Join`](super::id::raw::Join)
/// of the group. A join's event records in it whether librdmacm attached the id's QP.
fn multicast(ev: &RawEvent) -> CmEventKind {
    let Some(join) = ev.join() else {
        // Not a join of CmId's (only a raw join through `AsRaw`, against its rules).
        return CmEventKind::Other(ev.event_type().0);
    };
    if ev.event_type() == cm::rdma_cm_event_type::RDMA_CM_EVENT_MULTICAST_JOIN {
        let peer = UdPeer::from_c(ev.ud());
        // The id's QP pointer is read under the id table lock (the event holds it), as
        // librdmacm read it to attach the QP while it read the event.
        join.record_join(&peer, ev.id_has_qp());
        CmEventKind::MulticastJoin {
            group: join.group(),
            ud: peer,
        }
    } else {
        CmEventKind::MulticastError {
            group: join.group(),
        }
    }
}

/// What the reason of a [`CmEventKind::Rejected`] means: on IB and RoCE the InfiniBand CM's
/// reject reason (the REJ message's; the kernel's `ib_cm_rej_reason` names), on iWARP a
/// negated errno of the TCP stream or MPA exchange (`-ECONNRESET` for the peer's
/// `rdma_reject`).
pub fn reject_reason_text(reason: i32) -> &'static str {
    match reason {
        1 => "no QP",
        2 => "no EEC",
        3 => "no resources",
        4 => "timeout",
        5 => "unsupported request",
        6 => "invalid comm ID",
        7 => "invalid comm instance",
        8 => "invalid service ID (nobody listens there)",
        9 => "invalid transport type",
        10 => "stale connection",
        11 => "RDC does not exist",
        12 => "invalid GID",
        13 => "invalid LID",
        14 => "invalid SL",
        15 => "invalid traffic class",
        16 => "invalid hop limit",
        17 => "invalid packet rate",
        24 => "port CM redirect",
        25 => "port redirect",
        26 => "invalid MTU",
        27 => "insufficient responder resources",
        28 => "consumer defined (rejected by the peer)",
        29 => "invalid RNR retry",
        30 => "duplicate local comm ID",
        31 => "invalid class version",
        32 => "invalid flow label",
        r if r == -libc::ECONNRESET => "connection reset (iWARP: rejected by the peer)",
        r if r == -libc::ECONNREFUSED => "connection refused (iWARP: nobody listens there)",
        r if r == -libc::ETIMEDOUT => "timed out (iWARP)",
        _ => "unknown reason",
    }
}
