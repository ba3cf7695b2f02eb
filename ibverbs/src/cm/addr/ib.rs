//! AF_IB addresses (`struct sockaddr_ib`, `<infiniband/ib.h>`): an InfiniBand port's GID
//! and a service ID where IP has an address and a port. rdma_cm takes them on devices with
//! InfiniBand's connection manager (InfiniBand ports, not RoCE or iWARP ones). Their C form
//! (`to_c`, `from_c`) is in `raw.rs`.

use crate::cm::PortSpace;
use crate::types::Gid;

/// An AF_IB socket address (`struct sockaddr_ib`), for [`CmId::bind_ib`] and
/// [`CmId::resolve_ib_addr`]. Build one with [`IbAddr::new`] (a port of one of rdma_cm's
/// port spaces, as the kernel maps IP ports to service IDs), then set the fields wanted with
/// the `with_*` setters: `IbAddr::new(gid, PortSpace::Tcp, 7471).with_pkey(0x8001)`.
///
/// [`CmId::bind_ib`]: crate::cm::CmId::bind_ib
/// [`CmId::resolve_ib_addr`]: crate::cm::CmId::resolve_ib_addr
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct IbAddr {
    /// `sib_addr`: the port's GID; [`Gid::ZERO`] binds to any port.
    pub gid: Gid,
    /// `sib_pkey`: the partition key ([`IbAddr::DEFAULT_PKEY`]: the default partition).
    pub pkey: u16,
    /// `sib_sid`: the service ID, what a listener listens on.
    pub service_id: u64,
    /// `sib_sid_mask`: the bits of [`service_id`](Self::service_id) that count (all ones:
    /// the whole ID).
    pub service_id_mask: u64,
    /// `sib_flowinfo`: the flow label.
    pub flow_label: u32,
    /// `sib_scope_id`.
    pub scope_id: u64,
}

impl IbAddr {
    /// The default partition's P_Key (full membership).
    pub const DEFAULT_PKEY: u16 = 0xffff;

    /// Port `port` of port space `ps` on the port of `gid`, in the default partition: the
    /// service ID rdma_cm gives an IP port there, `ps`'s number in bits 16 to 31 and
    /// `port` in bits 0 to 15 (`0x0106_1b5f` for TCP's port 7007), all of it significant.
    pub fn new(gid: Gid, ps: PortSpace, port: u16) -> IbAddr {
        IbAddr {
            gid,
            pkey: Self::DEFAULT_PKEY,
            service_id: (u64::from(ps.raw().0) << 16) | u64::from(port),
            service_id_mask: !0,
            flow_label: 0,
            scope_id: 0,
        }
    }

    /// With partition key `pkey`.
    pub fn with_pkey(mut self, pkey: u16) -> Self {
        self.pkey = pkey;
        self
    }

    /// With service ID `id` (all of it significant unless a mask follows).
    pub fn with_service_id(mut self, id: u64) -> Self {
        self.service_id = id;
        self
    }

    /// With service ID mask `mask`.
    pub fn with_service_id_mask(mut self, mask: u64) -> Self {
        self.service_id_mask = mask;
        self
    }

    /// With flow label `label`.
    pub fn with_flow_label(mut self, label: u32) -> Self {
        self.flow_label = label;
        self
    }

    /// With scope ID `scope`.
    pub fn with_scope_id(mut self, scope: u64) -> Self {
        self.scope_id = scope;
        self
    }

    /// The port space named by bits 16 to 63 of the service ID, when it is one of
    /// rdma_cm's (as [`IbAddr::new`] makes it).
    pub fn port_space(&self) -> Option<PortSpace> {
        let ps = self.service_id >> 16;
        i32::try_from(ps).ok().and_then(PortSpace::from_raw)
    }

    /// The port: bits 0 to 15 of the service ID.
    pub fn port(&self) -> u16 {
        self.service_id as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_ids_are_the_kernels() {
        // RDMA_IB_IP_PS_TCP | 7007, as the kernel's cma_select_ib_ps builds it.
        let a = IbAddr::new(Gid::ZERO, PortSpace::Tcp, 7007);
        assert_eq!(a.service_id, 0x0000_0000_0106_1b5f);
        assert_eq!(a.port(), 7007);
        assert_eq!(a.port_space(), Some(PortSpace::Tcp));
        let b = IbAddr::new(Gid::ZERO, PortSpace::Ib, 1);
        assert_eq!(b.service_id, 0x0000_0000_013f_0001);
        assert_eq!(b.port_space(), Some(PortSpace::Ib));
        let other = IbAddr {
            service_id: 0x1000_0000_0000_0001,
            ..a
        };
        assert_eq!(other.port_space(), None);
    }
}
