//! Socket addresses to and from C (`sockaddr_in`, `sockaddr_in6`) and `rdma_getaddrinfo`.

use std::ffi::{CStr, CString};
use std::io;
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr;

use rdmacm_sys as cm;

use super::PortSpace;
use crate::error::{Error, Result};

/// `addr` as a C socket address: a `sockaddr_storage` holding a `sockaddr_in` or
/// `sockaddr_in6`, which librdmacm reads by its family.
pub(crate) fn to_c(addr: SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid (AF_UNSPEC) value.
    let mut storage: libc::sockaddr_storage = unsafe { mem::zeroed() };
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

/// The address at `sa`, if it is IPv4 or IPv6 (`None` for null, unset or other families).
///
/// # Safety
/// `sa` is null or points to a socket address as long as its family says.
pub(crate) unsafe fn from_c(sa: *const libc::sockaddr) -> Option<SocketAddr> {
    if sa.is_null() {
        return None;
    }
    // SAFETY: sa points to at least a sockaddr (caller); the family says how much more.
    unsafe {
        match i32::from((*sa).sa_family) {
            libc::AF_INET => {
                let sin = sa.cast::<libc::sockaddr_in>().read_unaligned();
                let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                Some(SocketAddrV4::new(ip, u16::from_be(sin.sin_port)).into())
            }
            libc::AF_INET6 => {
                let sin6 = sa.cast::<libc::sockaddr_in6>().read_unaligned();
                let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                let port = u16::from_be(sin6.sin6_port);
                let flow = u32::from_be(sin6.sin6_flowinfo);
                Some(SocketAddrV6::new(ip, port, flow, sin6.sin6_scope_id).into())
            }
            _ => None,
        }
    }
}

/// One result of [`getaddrinfo`]: a source and/or destination address for a CM id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddrInfo {
    /// Where to bind (`ai_src_addr`), when there is one: with [`AddrHints::passive`], the
    /// address to listen on.
    pub src: Option<SocketAddr>,
    /// Where to connect (`ai_dst_addr`), when there is one.
    pub dst: Option<SocketAddr>,
    /// The port space the entry is for (`ai_port_space`); `None` for one this crate does not
    /// name.
    pub port_space: Option<PortSpace>,
}

/// What [`getaddrinfo`] looks for (the `hints` of `rdma_getaddrinfo`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddrHints {
    /// `RAI_PASSIVE`: the result is an address to bind and listen on.
    pub passive: bool,
    /// `RAI_NUMERICHOST`: the node is a numeric address; no name lookup.
    pub numeric_host: bool,
    /// The port space (`ai_port_space`); `None` leaves it to librdmacm.
    pub port_space: Option<PortSpace>,
}

/// `rdma_getaddrinfo`: resolves `node` and `service` (a port number) to CM addresses. A
/// name that does not resolve is an [`Error::Verb`] whose message is `gai_strerror`'s.
pub fn getaddrinfo(
    node: Option<&str>,
    service: Option<&str>,
    hints: &AddrHints,
) -> Result<Vec<AddrInfo>> {
    let cstr = |what, s: Option<&str>| {
        s.map(|s| {
            CString::new(s).map_err(|_| Error::InvalidArgument {
                what,
                reason: "contains a NUL byte".into(),
            })
        })
        .transpose()
    };
    let node = cstr("node", node)?;
    let service = cstr("service", service)?;
    let mut flags = 0;
    if hints.passive {
        flags |= cm::RAI_PASSIVE as i32;
    }
    if hints.numeric_host {
        flags |= cm::RAI_NUMERICHOST as i32;
    }
    let c_hints = cm::rdma_addrinfo {
        ai_flags: flags,
        ai_port_space: hints.port_space.map_or(0, |ps| ps.raw().0 as i32),
        ..Default::default()
    };
    let mut res = ptr::null_mut();
    let as_ptr = |s: &Option<CString>| s.as_ref().map_or(ptr::null(), |s| s.as_ptr());
    // SAFETY: the strings are NUL-terminated or null, the hints are initialised, and res is
    // a valid out pointer.
    let rc = unsafe { cm::rdma_getaddrinfo(as_ptr(&node), as_ptr(&service), &c_hints, &mut res) };
    if rc != 0 {
        if rc == -1 {
            return Err(Error::last("rdma_getaddrinfo"));
        }
        // A getaddrinfo error code (EAI_*).
        // SAFETY: gai_strerror returns a static NUL-terminated string for any code.
        let msg = unsafe { CStr::from_ptr(libc::gai_strerror(rc)) };
        return Err(Error::Verb {
            verb: "rdma_getaddrinfo",
            source: io::Error::other(msg.to_string_lossy().into_owned()),
        });
    }
    let mut out = Vec::new();
    let mut cur = res;
    while !cur.is_null() {
        // SAFETY: cur is an entry of the list rdma_getaddrinfo returned, not yet freed; its
        // addresses are null or as long as their family says.
        unsafe {
            out.push(AddrInfo {
                src: from_c((*cur).ai_src_addr),
                dst: from_c((*cur).ai_dst_addr),
                port_space: PortSpace::from_raw((*cur).ai_port_space),
            });
            cur = (*cur).ai_next;
        }
    }
    // SAFETY: res is the list rdma_getaddrinfo returned, freed once; nothing points into it.
    unsafe { cm::rdma_freeaddrinfo(res) };
    Ok(out)
}
