//! Address handles: `struct ibv_ah`, the route to a peer for UD sends.

pub(crate) mod attr; // AhAttr: struct ibv_ah_attr, ibv_create_ah from one
pub(crate) mod from_wc; // ibv_init_ah_from_wc, ibv_create_ah_from_wc; the GRH's layout
mod raw; // the FFI calls of address handles: every unsafe block of the folder

use std::fmt;

use crate::context::port::LinkLayer;
use crate::context::port_cache::SourceGid;
use crate::error::Result;
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::route::{Endpoint, Route};

/// An address handle (`ibv_create_ah`): where UD sends go.
///
/// Made to a peer's [`Endpoint`] along a [`Route`] ([`ProtectionDomain::create_ah`]), from
/// an address vector ([`ProtectionDomain::create_ah_from_attr`]), or back to the sender of a
/// received datagram ([`ProtectionDomain::create_ah_from_wc`]).
pub struct AddressHandle {
    /// The `ibv_ah`, destroyed first: the fields are dropped in order.
    raw: raw::RawAh,
    pd: ProtectionDomain,
}

impl ProtectionDomain {
    /// Starts an address handle to `remote` (`ibv_create_ah`): from port 1 and its default
    /// GID along the default [`Route`], until the builder says otherwise.
    pub fn create_ah<'a>(&'a self, remote: &Endpoint) -> AddressHandleBuilder<'a> {
        AddressHandleBuilder {
            pd: self,
            remote: *remote,
            port: 1,
            gid_index: None,
            route: Route::new(),
        }
    }
}

/// The settings of an address handle to a peer's [`Endpoint`], from
/// [`ProtectionDomain::create_ah`]: `pd.create_ah(&remote).port(1).gid_index(1).build()?`.
#[derive(Debug)]
#[must_use = "an address handle is made by build()"]
pub struct AddressHandleBuilder<'a> {
    pd: &'a ProtectionDomain,
    remote: Endpoint,
    port: u8,
    gid_index: Option<u8>,
    route: Route,
}

impl AddressHandleBuilder<'_> {
    /// The local port the datagrams leave from (`port_num`; default 1).
    pub fn port(mut self, port: u8) -> Self {
        self.port = port;
        self
    }

    /// The entry of the port's GID table the datagrams leave from (`sgid_index`); by
    /// default the port's [`Context::default_gid`](crate::Context::default_gid). For a UD
    /// queue pair's datagrams, give its [`QueuePair::gid_index`](crate::QueuePair::gid_index).
    pub fn gid_index(mut self, index: u8) -> Self {
        self.gid_index = Some(index);
        self
    }

    /// The route: service level, traffic class, hop limit, flow label.
    pub fn route(mut self, route: Route) -> Self {
        self.route = route;
        self
    }

    /// Creates the address handle (`ibv_create_ah`).
    ///
    /// Before the call, the port is checked against the device's port count, the GID
    /// index against the port's table and the route's fields against their ranges
    /// ([`Error::OutOfRange`](crate::Error::OutOfRange), naming the limit; an empty entry is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument)). On RoCE the handle always
    /// carries a GRH.
    pub fn build(self) -> Result<AddressHandle> {
        self.route.check()?;
        let source = match self.gid_index {
            Some(index) => SourceGid::Index(index),
            None => SourceGid::Default,
        };
        let (attr, sgid) = self.pd.context().port_gid(self.port, source)?;
        let mut route = self.route;
        route.force_grh |= attr.link_layer == LinkLayer::Ethernet;
        let mut attr = route.ah_attr(self.port, sgid.index, &self.remote);
        AddressHandle::from_attr(self.pd, &mut attr)
    }
}

impl AddressHandle {
    /// `ibv_create_ah` in `pd` with an attribute the caller filled (a route, or
    /// librdmacm's for a UD peer).
    pub(crate) fn from_attr(pd: &ProtectionDomain, attr: &mut ffi::ibv_ah_attr) -> Result<Self> {
        Ok(AddressHandle {
            raw: raw::RawAh::create(pd, attr)?,
            pd: pd.clone(),
        })
    }

    /// The raw `ibv_ah`, valid while the handle lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_ah {
        self.raw.ptr()
    }

    /// The protection domain of the handle.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }
}

impl fmt::Debug for AddressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressHandle")
            .field("handle", &self.raw.handle())
            .finish()
    }
}
