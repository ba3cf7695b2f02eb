//! UD over rdma_cm (`RDMA_PS_UDP`): the peer a UD connect or a multicast join resolves to
//! (`struct rdma_ud_param`), and the address handle to send to it.

use std::fmt;

use rdmacm_sys as cm;

use crate::ah::AddressHandle;
use crate::error::Result;
use crate::ffi;
use crate::pd::ProtectionDomain;

/// The Q_Key of every UD QP librdmacm makes in the UDP port space (`RDMA_UDP_QKEY`).
pub const UDP_QKEY: u32 = cm::RDMA_UDP_QKEY;

/// Where a UD peer's datagrams go: what an `ESTABLISHED` event of a UD connect or a
/// `MULTICAST_JOIN` event carries (`rdma_ud_param`), copied. For a multicast group, the
/// address vector's destination GID is the group's, `qp_num` is
/// [`MULTICAST_QPN`](crate::MULTICAST_QPN) and `qkey` the group's Q_Key.
///
/// Send to it with [`SendRequest::ud`](crate::SendRequest::ud)`(&ah, peer.qp_num,
/// peer.qkey)`, `ah` from [`create_ah`](Self::create_ah) in the PD of the id's QP.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct UdPeer {
    ah_attr: ffi::ibv_ah_attr,
    /// The peer's QP number ([`MULTICAST_QPN`](crate::MULTICAST_QPN) for a group).
    pub qp_num: u32,
    /// The peer QP's Q_Key ([`UDP_QKEY`] in the UDP port space), or the group's.
    pub qkey: u32,
}

impl UdPeer {
    /// Copies the UD part of an event's parameters.
    pub(super) fn from_c(ud: &cm::rdma_ud_param) -> Self {
        UdPeer {
            ah_attr: ud.ah_attr,
            qp_num: ud.qp_num,
            qkey: ud.qkey,
        }
    }

    /// The address vector librdmacm resolved for the peer (`ah_attr`).
    pub fn ah_attr(&self) -> &ffi::ibv_ah_attr {
        &self.ah_attr
    }

    /// Creates the address handle to the peer in `pd` (`ibv_create_ah` on
    /// [`ah_attr`](Self::ah_attr)); `pd` must be of the id's device, as the QP's PD is
    /// (posting a send checks that the handle is in the QP's PD).
    pub fn create_ah(&self, pd: &ProtectionDomain) -> Result<AddressHandle> {
        let mut attr = self.ah_attr;
        AddressHandle::from_attr(pd, &mut attr)
    }
}

impl fmt::Debug for UdPeer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdPeer")
            .field("qp_num", &self.qp_num)
            .field("qkey", &format_args!("{:#x}", self.qkey))
            .field("port_num", &self.ah_attr.port_num)
            .field("is_global", &self.ah_attr.is_global)
            .finish()
    }
}
