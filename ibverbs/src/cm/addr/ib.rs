//! AF_IB addresses (`struct sockaddr_ib`, `<infiniband/ib.h>`): an InfiniBand port's GID
//! and a service ID where IP has an address and a port. rdma_cm takes them on devices with
//! InfiniBand's connection manager (InfiniBand ports, not RoCE or iWARP ones).

use std::mem;
use std::ptr;

use rdmacm_sys as cm;

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

    /// The C form, in a `sockaddr_storage` (which librdmacm reads by its family).
    pub(crate) fn to_c(self) -> libc::sockaddr_storage {
        // SAFETY: sockaddr_ib is plain data; all zeroes is a valid value.
        let mut sib: cm::sockaddr_ib = unsafe { mem::zeroed() };
        sib.sib_family = libc::AF_IB as libc::c_ushort;
        sib.sib_pkey = self.pkey.to_be();
        sib.sib_flowinfo = self.flow_label.to_be();
        // SAFETY: struct ib_addr is a union of views of the same 16 bytes (its size is
        // checked by the bindings' layout test).
        unsafe {
            ptr::addr_of_mut!(sib.sib_addr)
                .cast::<[u8; 16]>()
                .write(self.gid.into())
        };
        sib.sib_sid = self.service_id.to_be();
        sib.sib_sid_mask = self.service_id_mask.to_be();
        sib.sib_scope_id = self.scope_id;
        // SAFETY: as above for sockaddr_storage.
        let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
        const { assert!(mem::size_of::<cm::sockaddr_ib>() <= mem::size_of::<libc::sockaddr_storage>()) };
        // SAFETY: sockaddr_storage is larger than sockaddr_ib (checked above) and aligned
        // for every sockaddr type.
        unsafe {
            ptr::addr_of_mut!(storage)
                .cast::<cm::sockaddr_ib>()
                .write(sib)
        };
        storage
    }

    /// The address at `sa`, if it is an AF_IB one (`None` for null or other families).
    ///
    /// # Safety
    /// `sa` is null or points to a socket address as long as its family says.
    pub(crate) unsafe fn from_c(sa: *const libc::sockaddr) -> Option<IbAddr> {
        // SAFETY: sa is null or points to at least a sockaddr (caller).
        if sa.is_null() || i32::from(unsafe { (*sa).sa_family }) != libc::AF_IB {
            return None;
        }
        // SAFETY: an AF_IB address is a whole sockaddr_ib (caller).
        let sib = unsafe { sa.cast::<cm::sockaddr_ib>().read_unaligned() };
        // SAFETY: ib_addr is 16 bytes (as above); any bytes are a valid byte array.
        let gid = unsafe { ptr::addr_of!(sib.sib_addr).cast::<[u8; 16]>().read() };
        Some(IbAddr {
            gid: Gid::from(gid),
            pkey: u16::from_be(sib.sib_pkey),
            service_id: u64::from_be(sib.sib_sid),
            service_id_mask: u64::from_be(sib.sib_sid_mask),
            flow_label: u32::from_be(sib.sib_flowinfo),
            scope_id: sib.sib_scope_id,
        })
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

    #[test]
    fn round_trips_through_c() {
        let a = IbAddr {
            gid: "fe80::2:c903:a:b0c1".parse().unwrap(),
            pkey: 0x8001,
            service_id: 0x0123_4567_89ab_cdef,
            service_id_mask: 0xffff_ffff_ffff_0000,
            flow_label: 0x000a_bcde,
            scope_id: 3,
        };
        let storage = a.to_c();
        // SAFETY: storage holds an AF_IB sockaddr_ib.
        let back = unsafe { IbAddr::from_c(ptr::addr_of!(storage).cast()) };
        assert_eq!(back, Some(a));
        let raw = ptr::addr_of!(storage).cast::<u8>();
        // SAFETY: storage is 128 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(raw, 48) };
        assert_eq!(&bytes[0..2], &(libc::AF_IB as u16).to_ne_bytes());
        assert_eq!(&bytes[2..4], &[0x80, 0x01], "P_Key in network order");
        assert_eq!(&bytes[8..10], &[0xfe, 0x80], "GID");
        assert_eq!(&bytes[24..26], &[0x01, 0x23], "service ID in network order");
        // Not AF_IB: none.
        let ip = crate::cm::addr::to_c("10.0.0.1:1".parse().unwrap());
        // SAFETY: ip holds a sockaddr_in.
        assert_eq!(unsafe { IbAddr::from_c(ptr::addr_of!(ip).cast()) }, None);
        // SAFETY: null is allowed.
        assert_eq!(unsafe { IbAddr::from_c(ptr::null()) }, None);
    }
}
