//! Socket addresses for the CM (IP ones, and AF_IB's in [`ib`]) and `rdma_getaddrinfo`;
//! their C forms are in `raw.rs`.

pub(crate) mod ib; // IbAddr: AF_IB's sockaddr_ib
mod raw; // the C forms of addresses and rdma_getaddrinfo: every unsafe block of the folder

use std::net::SocketAddr;

use rdmacm_sys as cm;

pub(crate) use self::raw::{from_c, to_c};
use super::PortSpace;
use crate::error::Result;
use crate::types::QpType;
use ib::IbAddr;

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
/// name that does not resolve is an [`Error::AddrInfo`](crate::Error::AddrInfo) with its
/// `EAI_*` code.
pub fn getaddrinfo(
    node: Option<&str>,
    service: Option<&str>,
    hints: &AddrHints,
) -> Result<Vec<AddrInfo>> {
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
    let c_hints = raw::Hints {
        flags,
        family: match hints.family {
            None => libc::AF_UNSPEC,
            Some(AddrFamily::Inet) => libc::AF_INET,
            Some(AddrFamily::Inet6) => libc::AF_INET6,
            Some(AddrFamily::Ib) => libc::AF_IB,
        },
        qp_type: hints.qp_type.map_or(0, |t| t.raw().0 as i32),
        port_space: hints.port_space.map_or(0, |ps| ps.raw().0 as i32),
        src: hints.src,
    };
    let entries = raw::getaddrinfo(node, service, &c_hints)?;
    Ok(entries
        .into_iter()
        .map(|e| AddrInfo {
            src: e.src.as_ref().and_then(from_c),
            dst: e.dst.as_ref().and_then(from_c),
            src_ib: e.src.as_ref().and_then(IbAddr::from_c),
            dst_ib: e.dst.as_ref().and_then(IbAddr::from_c),
            port_space: PortSpace::from_raw(e.port_space),
            qp_type: QpType::from_raw(e.qp_type),
            src_name: e.src_name,
            dst_name: e.dst_name,
            connect_data: e.connect_data,
        })
        .collect())
}
