//! Connection management over librdmacm (feature `cm`): resolve an IP address, connect and
//! accept the way sockets do, with private data in the handshake, instead of exchanging
//! QP numbers over a side channel.
//!
//! ```no_run
//! use std::time::Duration;
//! use rdma_verbs::cm::{CmEventKind, ConnParam, EventChannel, PortSpace};
//!
//! # fn main() -> rdma_verbs::Result<()> {
//! let channel = EventChannel::new()?;
//! let mut id = channel.create_id(PortSpace::Tcp)?;
//! id.resolve_addr(None, "198.18.1.1:7471".parse().unwrap(), Duration::from_secs(2))?;
//! assert!(matches!(channel.get_event()?.kind, CmEventKind::AddrResolved));
//! id.resolve_route(Duration::from_secs(2))?;
//! assert!(matches!(channel.get_event()?.kind, CmEventKind::RouteResolved));
//! let ctx = id.context()?;
//! let (pd, cq) = (ctx.alloc_pd()?, ctx.create_cq(16, None)?);
//! id.create_qp(pd.create_qp(rdma_verbs::QpType::Rc, &cq, &cq).max_send_wr(16).max_recv_wr(16))?;
//! id.connect(&ConnParam::new().private_data(b"hello"))?;
//! match channel.get_event()?.kind {
//!     CmEventKind::Established { private_data, .. } => println!("accepted: {private_data:?}"),
//!     other => println!("not connected: {other:?}"),
//! }
//! # Ok(()) }
//! ```
//!
//! # Objects
//! | type | C object | created by | keeps alive |
//! |---|---|---|---|
//! | [`EventChannel`] | `rdma_event_channel` | `rdma_create_event_channel` | |
//! | [`CmId`] | `rdma_cm_id` | `rdma_create_id`, or a connect request | its channel, its QP, its device context (once asked for) |
//! | [`Context`](crate::Context) of [`CmId::context`] | librdmacm's `ibv_context` | librdmacm, for the first id bound to the device | the ids that asked for it, then librdmacm's device list (so the context stays open) |
//! | [`QueuePair`](crate::QueuePair) of [`CmId::create_qp`] | `ibv_qp` | `rdma_create_qp_ex` | PD, CQs, SRQ (as any QP) |
//! | [`UdPeer`] of a UD [`CmEventKind::Established`] or a [`CmEventKind::MulticastJoin`] | `rdma_ud_param` (copied) | a UD connect's accept, a multicast join | nothing (plain data) |
//! | [`AddressHandle`](crate::AddressHandle) of [`UdPeer::create_ah`] | `ibv_ah` | `ibv_create_ah` | its PD (as any AH) |
//! | a multicast join of [`CmId::join_multicast`] (part of its [`CmId`]) | librdmacm's record of the join, the kernel's group membership, the QP's attachment | `rdma_join_multicast_ex` | the id's record of the group, the context of the join's events |
//!
//! - The channel is destroyed after the last id on it: each id holds it.
//! - An id owns its QP and destroys it first on drop (clearing librdmacm's pointer to it),
//!   then the id (`rdma_destroy_id`). The QP holds its PD and CQs, which hold the
//!   context; so the id outlives nothing it needs, and the PD and CQs may be shared by
//!   many ids on the device.
//! - The context of an id is librdmacm's, never closed here. librdmacm keeps it open while
//!   an id bound to the device lives; a [`Context`](crate::Context) made from it counts the
//!   ids that asked for it, and when the last of them is dropped while the context (a
//!   handle, or a PD, CQ or QP made from it) still lives, the context takes librdmacm's
//!   device list (`rdma_get_devices`, once), which keeps the device open until the context
//!   and everything made from it are gone. If the device is no longer listed then (it was
//!   removed), the context keeps that last id instead and destroys it when it goes.
//!   Contexts made from two ids on the same device are the same device context for the
//!   `Mismatch` checks.
//! - UD (the UDP port space): the connecting side's `Established` event carries the peer
//!   ([`UdPeer`]: address vector, QP number, Q_Key); its address handle is made in the PD of
//!   the id's QP and lives apart from the id (drop it after the sends that use it complete).
//!   The accepting side gets no `Established`: it answers a datagram's sender (the
//!   completion's source QP and GRH), with the same Q_Key ([`UDP_QKEY`]).
//! - Multicast (a UD id): [`CmId::join_multicast`] joins a group, whose
//!   [`CmEventKind::MulticastJoin`] carries the group's [`UdPeer`] (address vector, QP
//!   number [`MULTICAST_QPN`](crate::MULTICAST_QPN), Q_Key); librdmacm attaches the id's QP
//!   to the group when it reads that event. The id remembers its groups: a join on an
//!   address that is not multicast, on an id that is not UD or not bound, or of a group
//!   joined already, and a leave of a group not joined, are errors before librdmacm. Each
//!   join's events carry a context the id keeps until the group is left, after its last
//!   event was acknowledged. The id leaves the groups it is still in when it is dropped,
//!   before its QP is destroyed (librdmacm detaches the QP; a QP still attached could not
//!   be destroyed). A QP taken out of the id ([`CmId::take_qp`]) takes its groups along and
//!   detaches from them on its own drop.
//! - The new id of a connect request belongs to the [`CmEventKind::ConnectRequest`] that
//!   carries it: accept or reject it, and drop it to destroy it.
//! - Addresses are IP ones ([`SocketAddr`](std::net::SocketAddr)) or, on InfiniBand,
//!   AF_IB ones ([`IbAddr`]: a GID and a service ID; [`CmId::bind_ib`],
//!   [`CmId::resolve_ib_addr`], [`getaddrinfo`] with [`AddrFamily::Ib`]). Both are plain
//!   data copied into C's form for the call.
//!
//! # Events
//! [`EventChannel::get_event`] copies what an event says (its private data too) and
//! acknowledges it (`rdma_ack_cm_event`) before returning it, so every event is
//! acknowledged exactly once, and `rdma_destroy_id`, which waits for the id's
//! unacknowledged events, never blocks.
//!
//! # Checked before the call
//! [`ConnParam`]'s private data must fit the CM message ([`private_data_limit`]: 56 bytes
//! for an RC connect, 196 for an accept, 148 for a reject, 180 / 136 for UD), and its
//! retry counts 0..=7; out of range is an [`Error::OutOfRange`](crate::Error::OutOfRange)
//! and nothing reaches librdmacm.

mod addr;
mod channel;
mod device;
mod param;
mod raw; // the id table lock and librdmacm's device list (each part's FFI is in its raw.rs)
mod ud;

pub use addr::ib::IbAddr;
pub use addr::{getaddrinfo, AddrFamily, AddrHints, AddrInfo};
pub use channel::event::{reject_reason_text, CmEvent, CmEventKind};
pub use channel::id::mcast::MulticastJoinFlag;
pub use channel::id::option::CmOption;
pub use channel::id::raw::IdHandle;
pub use channel::id::CmId;
pub use channel::EventChannel;
pub use param::{private_data_limit, ConnParam, Message};
/// The raw librdmacm bindings (`rdmacm-sys`).
pub use rdmacm_sys as ffi;
pub use ud::{UdPeer, UDP_QKEY};

use rdmacm_sys as cm;

/// The port space of a CM id (`enum rdma_port_space`): which transport it connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortSpace {
    /// `RDMA_PS_TCP`: reliable connected (RC) QPs.
    Tcp,
    /// `RDMA_PS_UDP`: unreliable datagram (UD) QPs.
    Udp,
    /// `RDMA_PS_IPOIB`: UD, sharing IPoIB's port space.
    Ipoib,
    /// `RDMA_PS_IB`: any QP type, InfiniBand addressing.
    Ib,
}

impl PortSpace {
    /// The C value.
    pub fn raw(self) -> cm::rdma_port_space {
        match self {
            PortSpace::Tcp => cm::rdma_port_space::RDMA_PS_TCP,
            PortSpace::Udp => cm::rdma_port_space::RDMA_PS_UDP,
            PortSpace::Ipoib => cm::rdma_port_space::RDMA_PS_IPOIB,
            PortSpace::Ib => cm::rdma_port_space::RDMA_PS_IB,
        }
    }

    /// The port space with C value `raw`, if it is one of these.
    pub fn from_raw(raw: i32) -> Option<Self> {
        [
            PortSpace::Tcp,
            PortSpace::Udp,
            PortSpace::Ipoib,
            PortSpace::Ib,
        ]
        .into_iter()
        .find(|ps| ps.raw().0 as i32 == raw)
    }
}
