//! The C forms of the CM's addresses and `rdma_getaddrinfo`: every unsafe block of `addr/`.
//!
//! Addresses travel in a whole `sockaddr_storage` (128 bytes, aligned for every sockaddr
//! type), which librdmacm reads by its family: so each conversion reads and writes within
//! it, and a caller can hand any storage to librdmacm.

use std::ffi::{CStr, CString};
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr::{self, NonNull};

use rdmacm_sys as cm;

use super::ib::IbAddr;
use crate::error::{Error, Result};

/// An empty (`AF_UNSPEC`) socket address.
fn zeroed_storage() -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid (AF_UNSPEC) value.
    unsafe { mem::zeroed() }
}

/// `addr` as a C socket address: a `sockaddr_storage` holding a `sockaddr_in` or
/// `sockaddr_in6`, which librdmacm reads by its family.
pub(crate) fn to_c(addr: SocketAddr) -> libc::sockaddr_storage {
    let mut storage = zeroed_storage();
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for every sockaddr type.
            unsafe {
                ptr::addr_of_mut!(storage)
                    .cast::<libc::sockaddr_in>()
                    .write(sin)
            };
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe {
                ptr::addr_of_mut!(storage)
                    .cast::<libc::sockaddr_in6>()
                    .write(sin6)
            };
        }
    }
    storage
}

/// The address in `sa`, if it is IPv4 or IPv6 (`None` for unset or other families).
pub(crate) fn from_c(sa: &libc::sockaddr_storage) -> Option<SocketAddr> {
    let sa = ptr::from_ref(sa);
    // SAFETY: a sockaddr_storage is larger than and aligned for every sockaddr type, and
    // its family says which one it holds.
    unsafe {
        match i32::from((*sa).ss_family) {
            libc::AF_INET => {
                let sin = sa.cast::<libc::sockaddr_in>().read();
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddrV4::new(ip, u16::from_be(sin.sin_port)).into())
            }
            libc::AF_INET6 => {
                let sin6 = sa.cast::<libc::sockaddr_in6>().read();
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                let port = u16::from_be(sin6.sin6_port);
                let flow = u32::from_be(sin6.sin6_flowinfo);
                Some(SocketAddrV6::new(ip, port, flow, sin6.sin6_scope_id).into())
            }
            _ => None,
        }
    }
}

const _: () =
    assert!(mem::size_of::<cm::sockaddr_ib>() <= mem::size_of::<libc::sockaddr_storage>());

impl IbAddr {
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
        let mut storage = zeroed_storage();
        // SAFETY: sockaddr_storage is larger than sockaddr_ib (checked above) and aligned
        // for every sockaddr type.
        unsafe {
            ptr::addr_of_mut!(storage)
                .cast::<cm::sockaddr_ib>()
                .write(sib)
        };
        storage
    }

    /// The address in `sa`, if it is an AF_IB one (`None` for other families).
    pub(crate) fn from_c(sa: &libc::sockaddr_storage) -> Option<IbAddr> {
        if i32::from(sa.ss_family) != libc::AF_IB {
            return None;
        }
        // SAFETY: the storage is larger than a sockaddr_ib (checked above) and aligned for
        // every sockaddr type, and an AF_IB address is a whole sockaddr_ib.
        let sib = unsafe { ptr::from_ref(sa).cast::<cm::sockaddr_ib>().read() };
        // SAFETY: ib_addr is 16 bytes (as above); any bytes are a valid byte array.
        let gid = unsafe { ptr::addr_of!(sib.sib_addr).cast::<[u8; 16]>().read() };
        Some(IbAddr {
            gid: gid.into(),
            pkey: u16::from_be(sib.sib_pkey),
            service_id: u64::from_be(sib.sib_sid),
            service_id_mask: u64::from_be(sib.sib_sid_mask),
            flow_label: u32::from_be(sib.sib_flowinfo),
            scope_id: sib.sib_scope_id,
        })
    }
}

/// The hints of [`getaddrinfo`], as C's `rdma_addrinfo` numbers them.
pub(crate) struct Hints {
    /// `ai_flags` (`RAI_*`).
    pub(crate) flags: i32,
    /// `ai_family`.
    pub(crate) family: i32,
    /// `ai_qp_type`.
    pub(crate) qp_type: i32,
    /// `ai_port_space`.
    pub(crate) port_space: i32,
    /// `ai_src_addr`.
    pub(crate) src: Option<SocketAddr>,
}

/// One entry of `rdma_getaddrinfo`'s list, copied.
pub(crate) struct Entry {
    /// `ai_src_addr`, when there is one.
    pub(crate) src: Option<libc::sockaddr_storage>,
    /// `ai_dst_addr`, when there is one.
    pub(crate) dst: Option<libc::sockaddr_storage>,
    /// `ai_port_space`.
    pub(crate) port_space: i32,
    /// `ai_qp_type`.
    pub(crate) qp_type: i32,
    /// `ai_src_canonname`, when there is one.
    pub(crate) src_name: Option<String>,
    /// `ai_dst_canonname`, when there is one.
    pub(crate) dst_name: Option<String>,
    /// `ai_connect`'s bytes (none when null).
    pub(crate) connect_data: Vec<u8>,
}

/// The list `rdma_getaddrinfo` returned, freed on drop (`rdma_freeaddrinfo`).
struct List(NonNull<cm::rdma_addrinfo>);

impl Drop for List {
    fn drop(&mut self) {
        // SAFETY: the list rdma_getaddrinfo returned, freed once; nothing points into it.
        unsafe { cm::rdma_freeaddrinfo(self.0.as_ptr()) };
    }
}

/// The address of `len` bytes at `sa` in a storage (`None` for null); bytes past the
/// storage's 128 are not copied.
///
/// # Safety
/// `sa` is null or valid for `len` bytes.
unsafe fn copy_addr(
    sa: *const libc::sockaddr,
    len: libc::socklen_t,
) -> Option<libc::sockaddr_storage> {
    if sa.is_null() {
        return None;
    }
    let mut storage = zeroed_storage();
    let len = (len as usize).min(mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: sa is valid for len bytes (caller), the storage for its size, and they are
    // apart.
    unsafe {
        ptr::copy_nonoverlapping(
            sa.cast::<u8>(),
            ptr::addr_of_mut!(storage).cast::<u8>(),
            len,
        )
    };
    Some(storage)
}

/// `rdma_getaddrinfo` of `node` and `service` with `hints`, each entry copied; a name that
/// does not resolve is an [`Error::AddrInfo`] with its `EAI_*` code. An `AF_IB` lookup
/// takes only a GID written as an IPv6 address, and neither string a NUL byte
/// ([`Error::InvalidArgument`], before librdmacm).
pub(crate) fn getaddrinfo(
    node: Option<&str>,
    service: Option<&str>,
    hints: &Hints,
) -> Result<Vec<Entry>> {
    let cstr = |what, s: Option<&str>| {
        s.map(|s| {
            CString::new(s).map_err(|_| Error::InvalidArgument {
                what,
                reason: "contains a NUL byte".into(),
            })
        })
        .transpose()
    };
    if hints.family == libc::AF_IB && node.and_then(|n| n.parse::<Ipv6Addr>().ok()).is_none() {
        // librdmacm reads what getaddrinfo gives as an IPv6 address: an IPv4 one or a
        // name would be read past its end.
        return Err(Error::InvalidArgument {
            what: "node",
            reason: format!(
                "{node:?}: AF_IB results need a GID written as an IPv6 address (AddrFamily::Ib)"
            ),
        });
    }
    let node = cstr("node", node)?;
    let service = cstr("service", service)?;
    let mut src = hints.src.map(to_c);
    let mut c_hints = cm::rdma_addrinfo {
        ai_flags: hints.flags,
        ai_family: hints.family,
        ai_qp_type: hints.qp_type,
        ai_port_space: hints.port_space,
        ..Default::default()
    };
    if let (Some(storage), Some(addr)) = (src.as_mut(), hints.src) {
        c_hints.ai_src_addr = ptr::addr_of_mut!(*storage).cast();
        c_hints.ai_src_len = match addr {
            SocketAddr::V4(_) => mem::size_of::<libc::sockaddr_in>(),
            SocketAddr::V6(_) => mem::size_of::<libc::sockaddr_in6>(),
        } as libc::socklen_t;
    }
    let mut res = ptr::null_mut();
    let as_ptr = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
    // SAFETY: the strings are NUL-terminated or null, the hints are initialised (their
    // source address a whole storage of ai_src_len or more), and res is a valid out pointer.
    let rc = unsafe { cm::rdma_getaddrinfo(as_ptr(&node), as_ptr(&service), &c_hints, &mut res) };
    if rc != 0 {
        if rc == -1 {
            return Err(Error::last("rdma_getaddrinfo"));
        }
        // A getaddrinfo error code (EAI_*).
        // SAFETY: gai_strerror returns a static NUL-terminated string for any code.
        let msg = unsafe { CStr::from_ptr(libc::gai_strerror(rc)) };
        return Err(Error::AddrInfo {
            code: rc,
            message: msg.to_string_lossy().into_owned(),
        });
    }
    let Some(list) = NonNull::new(res).map(List) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let mut cur = list.0.as_ptr();
    while !cur.is_null() {
        // SAFETY: cur is an entry of the list, not yet freed (list lives); its addresses are
        // null or ai_*_len bytes, its names null or NUL-terminated, its connect data null or
        // ai_connect_len bytes.
        unsafe {
            let ai = &*cur;
            let name = |p: *const libc::c_char| {
                (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
            };
            out.push(Entry {
                src: copy_addr(ai.ai_src_addr, ai.ai_src_len),
                dst: copy_addr(ai.ai_dst_addr, ai.ai_dst_len),
                port_space: ai.ai_port_space,
                qp_type: ai.ai_qp_type,
                src_name: name(ai.ai_src_canonname),
                dst_name: name(ai.ai_dst_canonname),
                connect_data: if ai.ai_connect.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(ai.ai_connect.cast::<u8>(), ai.ai_connect_len)
                        .to_vec()
                },
            });
            cur = ai.ai_next;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ib_addr_round_trips_through_c() {
        let a = IbAddr {
            gid: "fe80::2:c903:a:b0c1".parse().unwrap(),
            pkey: 0x8001,
            service_id: 0x0123_4567_89ab_cdef,
            service_id_mask: 0xffff_ffff_ffff_0000,
            flow_label: 0x000a_bcde,
            scope_id: 3,
        };
        let storage = a.to_c();
        assert_eq!(IbAddr::from_c(&storage), Some(a));
        let raw = ptr::addr_of!(storage).cast::<u8>();
        // SAFETY: storage is 128 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(raw, 48) };
        assert_eq!(&bytes[0..2], &(libc::AF_IB as u16).to_ne_bytes());
        assert_eq!(&bytes[2..4], &[0x80, 0x01], "P_Key in network order");
        assert_eq!(&bytes[8..10], &[0xfe, 0x80], "GID");
        assert_eq!(&bytes[24..26], &[0x01, 0x23], "service ID in network order");
        // Not AF_IB: none.
        let ip = to_c("10.0.0.1:1".parse().unwrap());
        assert_eq!(IbAddr::from_c(&ip), None);
        // Unset: none.
        assert_eq!(IbAddr::from_c(&zeroed_storage()), None);
    }

    #[test]
    fn ip_addrs_round_trip_through_c() {
        for addr in ["10.0.0.1:7471", "[fe80::1%3]:1"] {
            let addr: SocketAddr = addr.parse().unwrap();
            assert_eq!(from_c(&to_c(addr)), Some(addr));
        }
        assert_eq!(from_c(&zeroed_storage()), None);
    }
}
