//! A CM id on AF_IB addresses ([`IbAddr`]): `rdma_bind_addr` and `rdma_resolve_addr` with
//! them, and the id's addresses read back as them.

use std::time::Duration;

use super::CmId;
use crate::cm::IbAddr;
use crate::error::{Error, Result};

impl CmId {
    /// `rdma_bind_addr` with an AF_IB address: binds to the port of `addr.gid` (any port
    /// for [`Gid::ZERO`](crate::Gid::ZERO)) and to its service ID (port 0 of a port space:
    /// one the CM picks), where a listener then listens. Only ports with InfiniBand's
    /// connection manager take AF_IB: a GID no such port has (a RoCE or iWARP port's) is
    /// an [`Error::InvalidArgument`] naming it, and a listener bound to any port listens
    /// on the InfiniBand ones only.
    pub fn bind_ib(&self, addr: &IbAddr) -> Result<()> {
        self.bind_c(addr.to_c()).map_err(no_ib_port(addr))
    }

    /// `rdma_resolve_addr` with AF_IB addresses: finds the port that reaches `dst` (from
    /// `src` if given) within `timeout`; ends with an `AddrResolved` or `AddrError` event.
    /// The route ([`resolve_route`](Self::resolve_route)) exists only between InfiniBand
    /// ports: from a RoCE port the address resolves (by GID) but the route fails with
    /// `ENODEV`.
    pub fn resolve_ib_addr(
        &self,
        src: Option<&IbAddr>,
        dst: &IbAddr,
        timeout: Duration,
    ) -> Result<()> {
        self.resolve_addr_c(src.map(|a| a.to_c()), dst.to_c(), timeout)
    }

    /// The local address (`rdma_get_local_addr`) when it is an AF_IB one: the id was bound
    /// or resolved with one ([`local_addr`](Self::local_addr) gives IP addresses).
    pub fn local_ib_addr(&self) -> Option<IbAddr> {
        IbAddr::from_c(&self.raw.local_addr())
    }

    /// The peer's address (`rdma_get_peer_addr`) when it is an AF_IB one.
    pub fn peer_ib_addr(&self) -> Option<IbAddr> {
        IbAddr::from_c(&self.raw.peer_addr())
    }
}

/// `ENODEV` from a bind: no port with InfiniBand's connection manager has the address's
/// GID (a RoCE or iWARP port's GID among them). Named so.
fn no_ib_port(addr: &IbAddr) -> impl FnOnce(Error) -> Error + '_ {
    move |err| match err.raw_os_error() {
        Some(libc::ENODEV) => Error::InvalidArgument {
            what: "AF_IB address",
            reason: format!(
                "no port with InfiniBand's connection manager has GID {} (ENODEV); RoCE and \
                 iWARP ports take IP addresses",
                addr.gid
            ),
        },
        _ => err,
    }
}
