//! UD multicast over rdma_cm: `rdma_join_multicast_ex` and `rdma_leave_multicast`.
//!
//! An id remembers the groups it joined, each as a [`Join`](super::raw::Join) whose address
//! is the context librdmacm hands back in the join's events: the events name their group by
//! it ([`CmEventKind::MulticastJoin`](crate::cm::CmEventKind::MulticastJoin)). A join is
//! freed only after `rdma_leave_multicast` returned, after every event of the join that was
//! read has been acknowledged; an id leaves the groups it is still in when it is dropped,
//! before its QP is destroyed (a QP attached to a group cannot be: `EBUSY`).
//!
//! When a join's `MULTICAST_JOIN` event is read, librdmacm attaches the id's QP to the
//! group (`ibv_attach_mcast`), unless the join is send-only or the id has no QP then; its
//! `rdma_leave_multicast` detaches it. Reading an event, leaving a group, and setting or
//! clearing the QP pointer of an id with joins are serialized by the id table lock
//! ([`id_table`](crate::cm::raw::id_table)), in the id's raw layer (`raw.rs`, which keeps
//! each join and makes the calls): so a leave never detaches the QP while a join's event
//! is attaching it, and a QP that leaves the id ([`CmId::take_qp`]) is never attached
//! behind its back, and takes along the groups it was attached to, which it detaches
//! itself before it is destroyed. An event is acknowledged right after its copy, outside
//! the lock, so the leave's wait for the acknowledgements is short and needs no lock.

use std::net::IpAddr;

use rdmacm_sys as cm;

use super::CmId;
use crate::cm::PortSpace;
use crate::error::{Error, IwarpRule, Result};
use crate::types::QpType;

/// The kernel's `ENOTSUPP` (524, not a POSIX errno: C's `strerror` says "Unknown error
/// 524"), which its rdma_cm returns for a join of an IPv6 group on a RoCE v2 port.
const ENOTSUPP: i32 = 524;

/// How a join takes part in its group (`enum rdma_cm_mc_join_flags`), for
/// [`CmId::join_multicast_ex`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MulticastJoinFlag {
    /// `RDMA_MC_JOIN_FLAG_FULLMEMBER`: sends to the group and receives from it (the id's
    /// QP is attached to the group). What [`CmId::join_multicast`] joins as.
    #[default]
    FullMember,
    /// `RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER`: sends to the group only; the id's QP is not
    /// attached, and on RoCE the host does not join the group at the IP level.
    SendOnlyFullMember,
}

impl MulticastJoinFlag {
    /// The C value.
    pub fn raw(self) -> cm::rdma_cm_mc_join_flags {
        match self {
            MulticastJoinFlag::FullMember => {
                cm::rdma_cm_mc_join_flags::RDMA_MC_JOIN_FLAG_FULLMEMBER
            }
            MulticastJoinFlag::SendOnlyFullMember => {
                cm::rdma_cm_mc_join_flags::RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
            }
        }
    }
}

impl CmId {
    /// `rdma_join_multicast`: joins the multicast group `group` as a full member
    /// ([`join_multicast_ex`](Self::join_multicast_ex) with
    /// [`MulticastJoinFlag::FullMember`]).
    ///
    /// A UD id bound to a local address, whose QP receives the group's datagrams and sends
    /// one to the group:
    /// ```no_run
    /// # fn f(channel: &rdma_verbs::cm::EventChannel, id: &mut rdma_verbs::cm::CmId,
    /// #      pd: &rdma_verbs::ProtectionDomain, mr: &rdma_verbs::MemoryRegion)
    /// #      -> rdma_verbs::Result<()> {
    /// use rdma_verbs::cm::CmEventKind;
    /// use rdma_verbs::SendRequest;
    ///
    /// id.join_multicast("239.1.2.3".parse().unwrap())?;
    /// let ev = channel.get_event()?.expect_kind("rdma_join_multicast", |k| {
    ///     matches!(k, CmEventKind::MulticastJoin { .. })
    /// })?;
    /// let CmEventKind::MulticastJoin { group, ud } = ev.kind else { unreachable!() };
    /// let ah = ud.create_ah(pd)?; // the PD of the id's QP
    /// let sge = [mr.sge(..)?];
    /// let send = SendRequest::send(1, &sge).ud(&ah, ud.qp_num, ud.qkey);
    /// id.qp().expect("created before the join").post_send(&mut [send.signaled()])?;
    /// id.leave_multicast(group)?;
    /// # Ok(()) }
    /// ```
    pub fn join_multicast(&mut self, group: IpAddr) -> Result<()> {
        self.join_multicast_ex(group, MulticastJoinFlag::FullMember)
    }

    /// `rdma_join_multicast_ex`: joins the multicast group `group` as `flag` says. The id
    /// must be a UD one (port space [`Udp`](PortSpace::Udp) or [`Ipoib`](PortSpace::Ipoib))
    /// bound to a device ([`bind`](Self::bind) to a local address, or
    /// [`resolve_addr`](Self::resolve_addr) of the group itself, which the routing table
    /// resolves to a device).
    ///
    /// The join ends with a [`MulticastJoin`](crate::cm::CmEventKind::MulticastJoin) event
    /// naming `group` and carrying the group's [`UdPeer`](crate::cm::UdPeer): send to the
    /// group with an address handle from
    /// [`UdPeer::create_ah`](crate::cm::UdPeer::create_ah), its `qp_num`
    /// ([`MULTICAST_QPN`](crate::MULTICAST_QPN)) and `qkey`. Or with a
    /// [`MulticastError`](crate::cm::CmEventKind::MulticastError) (`status` says why): the
    /// id stays joined until it leaves the group, which it should do before joining it
    /// again. When the `MulticastJoin` event is read, librdmacm attaches the id's QP to the
    /// group (not for a send-only join), and detaches it when the id leaves: create the QP
    /// ([`create_qp`](Self::create_qp)) before joining, since a QP made after the event is
    /// not attached (leave and join again then), and do not attach the QP to the group
    /// yourself ([`QueuePair::attach_mcast`](crate::QueuePair::attach_mcast)): librdmacm's
    /// leave would detach it behind the QP's back. The id leaves the group with
    /// [`leave_multicast`](Self::leave_multicast), or when it is dropped; a QP taken out of
    /// the id ([`take_qp`](Self::take_qp)) takes the groups it is attached to along, and
    /// detaches from them when it is dropped.
    ///
    /// Checked before librdmacm, each an [`Error::InvalidArgument`] naming what was wrong:
    /// `group` is a multicast address (IPv4 `224.0.0.0/4`, IPv6 `ff00::/8`), the id's port
    /// space is a UD one, the id is bound to a device, and it has not joined `group`
    /// already; and the device is not iWARP, which has no UD and so no multicast
    /// ([`Error::Iwarp`], [`IwarpRule::RcOnly`](crate::IwarpRule::RcOnly)). An IPv6
    /// group on a RoCE v2 port, which the kernel's rdma_cm refuses (`ENOTSUPP`, whatever
    /// the id's own family), is [`Error::Unsupported`].
    pub fn join_multicast_ex(&mut self, group: IpAddr, flag: MulticastJoinFlag) -> Result<()> {
        if !group.is_multicast() {
            return Err(Error::InvalidArgument {
                what: "multicast group address",
                reason: format!(
                    "{group} is not a multicast address (IPv4 224.0.0.0/4, IPv6 ff00::/8)"
                ),
            });
        }
        if !matches!(self.port_space(), PortSpace::Udp | PortSpace::Ipoib) {
            return Err(Error::InvalidArgument {
                what: "CM id",
                reason: format!(
                    "multicast groups are joined by UD ids (port space Udp or Ipoib); this \
                     id's port space is {:?}",
                    self.port_space()
                ),
            });
        }
        if self.raw.verbs().is_none() {
            return Err(Error::InvalidArgument {
                what: "CM id",
                reason: "not bound to a device yet (bind or resolve_addr first)".into(),
            });
        }
        if self.raw.is_iwarp() {
            return Err(Error::Iwarp(IwarpRule::RcOnly {
                qp_type: QpType::Ud,
            }));
        }
        if self.joined(group).is_some() {
            return Err(Error::InvalidArgument {
                what: "multicast group",
                reason: format!("the id has already joined {group}"),
            });
        }
        self.raw
            .join(group, flag.raw())
            .map_err(|err| match err.raw_os_error() {
                Some(ENOTSUPP) if group.is_ipv6() => Error::Unsupported {
                    what: "joining an IPv6 multicast group (rdma_join_multicast_ex)",
                    missing: "IPv6 multicast on a RoCE v2 port: the kernel's rdma_cm joins \
                              only IPv4 groups there (ENOTSUPP, 524)",
                },
                _ => err,
            })
    }

    /// `rdma_leave_multicast`: leaves the group `group` the id joined (a join still under
    /// way is cancelled), which detaches the id's QP from it. Datagrams of the group may
    /// still be on the QP's receive queue afterwards. A group the id has not joined (or
    /// has left) is an [`Error::InvalidArgument`], before librdmacm.
    ///
    /// If librdmacm fails to leave, it has forgotten the join all the same: the id no
    /// longer counts it as joined.
    pub fn leave_multicast(&mut self, group: IpAddr) -> Result<()> {
        let Some(at) = self.joined(group) else {
            return Err(Error::InvalidArgument {
                what: "multicast group",
                reason: format!("the id has not joined {group}"),
            });
        };
        self.raw.leave(at)
    }

    /// The groups the id has joined and not left (joins under way and failed ones too).
    pub fn multicast_groups(&self) -> Vec<IpAddr> {
        self.raw.joins().iter().map(|join| join.group()).collect()
    }

    /// Where `group` is in the id's joins.
    fn joined(&self, group: IpAddr) -> Option<usize> {
        self.raw
            .joins()
            .iter()
            .position(|join| join.group() == group)
    }
}
