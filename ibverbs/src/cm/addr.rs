//! Socket addresses to and from C (`sockaddr_in`, `sockaddr_in6`; AF_IB's in [`ib`]) and
//! `rdma_getaddrinfo`.

pub(crate) mod ib; // IbAddr: AF_IB's sockaddr_ib

use std::ffi::{CStr, CString};
use std::mem;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::ptr;

use rdmacm_sys as cm;

use super::PortSpace;
use crate::error::{Error, Result};
use crate::types::QpType;
use ib::IbAddr;

/// The length of `addr`'s C form (`socklen_t`).
fn sockaddr_len(addr: SocketAddr) -> libc::socklen_t {
    let len = match addr {
        SocketAddr::V4(_) => mem::size_of::<libc::sockaddr_in>(),
        SocketAddr::V6(_) => mem::size_of::<libc::sockaddr_in6>(),
    };
    len as libc::socklen_t
}

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
#[non_exhaustive]
pub struct AddrInfo {
    /// Where to bind (`ai_src_addr`), when there is one: with [`AddrHints::passive`], the
    /// address to listen on.
    pub src: Option<SocketAddr>,
    /// Where to connect (`ai_dst_addr`), when there is one.
    pub dst: Option<SocketAddr>,
    /// Where to bind, when it is an AF_IB address ([`AddrFamily::Ib`]).
    pub src_ib: Option<IbAddr>,
    /// Where to connect, when it is an AF_IB address ([`AddrFamily::Ib`]).
    pub dst_ib: Option<IbAddr>,
    /// The port space the entry is for (`ai_port_space`); `None` for one this crate does not
    /// name.
    pub port_space: Option<PortSpace>,
    /// The QP type the entry is for (`ai_qp_type`), when librdmacm names one this crate
    /// does.
    pub qp_type: Option<QpType>,
    /// The canonical names of the source and destination (`ai_src_canonname`,
    /// `ai_dst_canonname`), when the lookup gave them.
    pub src_name: Option<String>,
    /// See [`src_name`](Self::src_name).
    pub dst_name: Option<String>,
    /// Private data to send with the connect request (`ai_connect`: what an address
    /// service such as ibacm asks the server to be sent); empty when none. C programs pass
    /// it as `rdma_connect`'s private data ([`ConnParam::private_data`](super::ConnParam)).
    pub connect_data: Vec<u8>,
}

/// The address family [`getaddrinfo`] resolves a name to (`ai_family`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddrFamily {
    /// `AF_INET`: IPv4 only.
    Inet,
    /// `AF_INET6`: IPv6 only.
    Inet6,
    /// `AF_IB` (with `RAI_FAMILY`): the node is a GID written as an IPv6 address, and the
    /// results are AF_IB addresses ([`AddrInfo::src_ib`], [`AddrInfo::dst_ib`]) of the
    /// service's port in the port space asked for, in the default partition.
    Ib,
}

/// What [`getaddrinfo`] looks for (the `hints` of `rdma_getaddrinfo`). Start from
/// [`AddrHints::new`] (nothing asked) and set what is wanted:
/// `AddrHints::new().passive(true).port_space(PortSpace::Tcp)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddrHints {
    passive: bool,
    numeric_host: bool,
    no_route: bool,
    family: Option<AddrFamily>,
    port_space: Option<PortSpace>,
    qp_type: Option<QpType>,
    src: Option<SocketAddr>,
}

impl AddrHints {
    /// Nothing asked: any family, port space and QP type, names looked up, routes resolved.
    pub fn new() -> Self {
        Self::default()
    }

    /// `RAI_PASSIVE`: the result is an address to bind and listen on.
    pub fn passive(mut self, on: bool) -> Self {
        self.passive = on;
        self
    }

    /// `RAI_NUMERICHOST`: the node is a numeric address; no name lookup.
    pub fn numeric_host(mut self, on: bool) -> Self {
        self.numeric_host = on;
        self
    }

    /// `RAI_NOROUTE`: no route lookup (an address service may otherwise resolve a path).
    pub fn no_route(mut self, on: bool) -> Self {
        self.no_route = on;
        self
    }

    /// The address family to resolve names to (`ai_family`); by default any.
    pub fn family(mut self, family: AddrFamily) -> Self {
        self.family = Some(family);
        self
    }

    /// The port space (`ai_port_space`); by default librdmacm's choice.
    pub fn port_space(mut self, ps: PortSpace) -> Self {
        self.port_space = Some(ps);
        self
    }

    /// The QP type (`ai_qp_type`); by default librdmacm's choice.
    pub fn qp_type(mut self, qp_type: QpType) -> Self {
        self.qp_type = Some(qp_type);
        self
    }

    /// The source address to pair with the destination (`ai_src_addr`): C programs pass
    /// the result of a passive lookup of their `-b` address, so that each result has both.
    pub fn src(mut self, addr: SocketAddr) -> Self {
        self.src = Some(addr);
        self
    }
}

/// `rdma_getaddrinfo`: resolves `node` and `service` (a port number) to CM addresses. A
/// name that does not resolve is an [`Error::AddrInfo`] with its `EAI_*` code.
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
    if hints.family == Some(AddrFamily::Ib)
        && node.and_then(|n| n.parse::<Ipv6Addr>().ok()).is_none()
    {
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
    let mut flags = 0;
    if hints.passive {
        flags |= cm::RAI_PASSIVE as i32;
    }
    if hints.numeric_host {
        flags |= cm::RAI_NUMERICHOST as i32;
    }
    if hints.no_route {
        flags |= cm::RAI_NOROUTE as i32;
    }
    if hints.family == Some(AddrFamily::Ib) {
        flags |= (cm::RAI_FAMILY | cm::RAI_NUMERICHOST) as i32;
    }
    let mut src = hints.src.map(to_c);
    let mut c_hints = cm::rdma_addrinfo {
        ai_flags: flags,
        ai_family: match hints.family {
            None => libc::AF_UNSPEC,
            Some(AddrFamily::Inet) => libc::AF_INET,
            Some(AddrFamily::Inet6) => libc::AF_INET6,
            Some(AddrFamily::Ib) => libc::AF_IB,
        },
        ai_qp_type: hints.qp_type.map_or(0, |t| t.raw().0 as i32),
        ai_port_space: hints.port_space.map_or(0, |ps| ps.raw().0 as i32),
        ..Default::default()
    };
    if let (Some(storage), Some(addr)) = (src.as_mut(), hints.src) {
        c_hints.ai_src_addr = ptr::addr_of_mut!(*storage).cast();
        c_hints.ai_src_len = sockaddr_len(addr);
    }
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
        return Err(Error::AddrInfo {
            code: rc,
            message: msg.to_string_lossy().into_owned(),
        });
    }
    let mut out = Vec::new();
    let mut cur = res;
    while !cur.is_null() {
        // SAFETY: cur is an entry of the list rdma_getaddrinfo returned, not yet freed; its
        // addresses are null or as long as their family says, its names null or
        // NUL-terminated, its connect data null or ai_connect_len bytes.
        unsafe {
            let ai = &*cur;
            let name = |p: *const libc::c_char| {
                (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
            };
            out.push(AddrInfo {
                src: from_c(ai.ai_src_addr),
                dst: from_c(ai.ai_dst_addr),
                src_ib: IbAddr::from_c(ai.ai_src_addr),
                dst_ib: IbAddr::from_c(ai.ai_dst_addr),
                port_space: PortSpace::from_raw(ai.ai_port_space),
                qp_type: QpType::from_raw(ai.ai_qp_type),
                src_name: name(ai.ai_src_canonname),
                dst_name: name(ai.ai_dst_canonname),
                connect_data: if ai.ai_connect.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(ai.ai_connect.cast::<u8>(), ai.ai_connect_len)
                        .to_vec()
                },
            });
            cur = (*cur).ai_next;
        }
    }
    // SAFETY: res is the list rdma_getaddrinfo returned, freed once; nothing points into it.
    unsafe { cm::rdma_freeaddrinfo(res) };
    Ok(out)
}
