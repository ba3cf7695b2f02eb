//! Address handles: `struct ibv_ah`, the route to a peer for UD sends.

pub(crate) mod attr; // AhAttr: struct ibv_ah_attr, ibv_create_ah from one
pub(crate) mod from_wc; // ibv_init_ah_from_wc, ibv_create_ah_from_wc; the GRH's layout

use std::fmt;
use std::ptr::NonNull;

use crate::context::port::LinkLayer;
use crate::context::port_cache::SourceGid;
use crate::drop_error;
use crate::error::{check_ptr, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::route::{Endpoint, Route};

/// An address handle (`ibv_create_ah`): where UD sends go.
///
/// Made to a peer's [`Endpoint`] along a [`Route`] ([`ProtectionDomain::create_ah`]), from
/// an address vector ([`ProtectionDomain::create_ah_from_attr`]), or back to the sender of a
/// received datagram ([`ProtectionDomain::create_ah_from_wc`]).
pub struct AddressHandle {
    raw: NonNull<ffi::ibv_ah>,
    pd: ProtectionDomain,
}

// SAFETY: address handles may be used from any thread.
unsafe impl Send for AddressHandle {}
// SAFETY: the AH is immutable after creation.
unsafe impl Sync for AddressHandle {}

impl ProtectionDomain {
    /// Creates an address handle for `remote`, leaving from local port `port` and its GID
    /// `gid_index` along `route` (`ibv_create_ah`).
    ///
    /// The source GID is the entry `gid_index` of the port's table, or the port's
    /// [`Context::default_gid`](crate::Context::default_gid) when that is `None` (for a UD
    /// queue pair's datagrams, give its [`QueuePair::gid_index`](crate::QueuePair::gid_index)). Before
    /// the call, the port is checked against the device's port count and the index
    /// against the port's GID table ([`Error::OutOfRange`](crate::Error::OutOfRange),
    /// naming the limit; an empty entry is [`Error::InvalidArgument`](crate::Error::InvalidArgument)).
    /// On RoCE the handle always carries a GRH.
    pub fn create_ah(
        &self,
        port: u8,
        gid_index: Option<u8>,
        remote: &Endpoint,
        route: &Route,
    ) -> Result<AddressHandle> {
        let source = match gid_index {
            Some(index) => SourceGid::Index(index),
            None => SourceGid::Default,
        };
        let (attr, sgid) = self.context().port_gid(port, source)?;
        let mut route = *route;
        route.force_grh |= attr.link_layer == LinkLayer::Ethernet;
        let mut attr = route.ah_attr(port, sgid.index, remote);
        AddressHandle::from_attr(self, &mut attr)
    }
}

impl AddressHandle {
    /// `ibv_create_ah` in `pd` with an attribute the caller filled (a route, or
    /// librdmacm's for a UD peer).
    pub(crate) fn from_attr(pd: &ProtectionDomain, attr: &mut ffi::ibv_ah_attr) -> Result<Self> {
        // SAFETY: the PD is live and attr is fully initialised.
        let raw = unsafe { ffi::ibv_create_ah(pd.ptr(), attr) };
        Ok(AddressHandle {
            raw: check_ptr("ibv_create_ah", raw)?,
            pd: pd.clone(),
        })
    }

    /// The raw `ibv_ah`, valid while the handle lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_ah {
        self.raw.as_ptr()
    }

    /// The protection domain of the handle.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }
}

impl Drop for AddressHandle {
    fn drop(&mut self) {
        // SAFETY: the AH is live and posted sends that use it are the caller's to complete
        // first (a destroyed AH makes later sends fail, it does not touch memory).
        let rc = unsafe { ffi::ibv_destroy_ah(self.raw.as_ptr()) };
        drop_error::report("ibv_destroy_ah", rc);
    }
}

impl fmt::Debug for AddressHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the AH is live.
        let handle = unsafe { (*self.ptr()).handle };
        f.debug_struct("AddressHandle")
            .field("handle", &handle)
            .finish()
    }
}
