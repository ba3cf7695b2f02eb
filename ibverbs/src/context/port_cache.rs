//! What a QP on a CM id reads of its port, kept per context: the port's attributes and
//! its GID table, so that creating the QP is the three calls C's `rdma_create_qp` makes.
//!
//! rdma_cm moves a CM QP through its states with the route's own source GID (the kernel's
//! GID attribute, not an index this crate picks), so the copy only feeds what the QP
//! reports of itself ([`QueuePair::gid_index`](crate::QueuePair::gid_index), its LID,
//! MTU and link layer). It is read again when a route's source GID is not in it, and
//! dropped when an asynchronous event says a port or its tables changed (read through
//! [`Context::get_async_event`] or the tokio event stream).

use std::sync::{Mutex, PoisonError};

use crate::context::async_event::AsyncEventKind;
use crate::context::gid::{Gid, GidEntry, GidType};
use crate::context::port::PortAttr;
use crate::context::Context;
use crate::error::Result;

/// The ports read so far: their number, attributes and GID table.
#[derive(Default)]
pub(crate) struct PortCache(Mutex<Vec<(u8, PortAttr, Vec<GidEntry>)>>);

impl PortCache {
    /// Forgets every port if `kind` says a port's state, addresses or tables changed.
    pub(crate) fn event(&self, kind: AsyncEventKind) {
        use AsyncEventKind::*;
        if matches!(
            kind,
            PortActive | PortErr | LidChange | PkeyChange | SmChange | ClientReregister | GidChange
        ) {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
    }
}

/// The entry of a port's GID table that rdma_cm sends from for the route's source GID
/// `sgid`: on RoCE the same GID is in the table once per RoCE version, and rdma_cm's
/// default is v2 (changeable only through configfs: the QP's `query` then shows the index
/// it really uses).
fn route_entry(table: &[GidEntry], sgid: Gid) -> Option<GidEntry> {
    let of_route = table.iter().filter(|e| e.gid == sgid);
    of_route
        .clone()
        .find(|e| e.gid_type == GidType::RoceV2)
        .or_else(|| of_route.clone().next())
        .copied()
}

impl Context {
    /// `port`'s attributes and the entry of its GID table for a route from `sgid`, from
    /// the context's copy (read on first use, and again if `sgid` is not in it). A GID in
    /// no entry (a route on a port with no such address) gives the port's default GID.
    pub(crate) fn route_port(&self, port: u8, sgid: Gid) -> Result<(PortAttr, GidEntry)> {
        let cache = &self.inner.ports.0;
        {
            let ports = cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, attr, table)) = ports.iter().find(|(p, _, _)| *p == port) {
                if let Some(entry) = route_entry(table, sgid) {
                    return Ok((*attr, entry));
                }
            }
        }
        // Read outside the lock: other threads' QPs on the context are not held up.
        let attr = self.query_port(port)?;
        let table = self.gid_table_of_single_port(port, &attr)?;
        let entry = route_entry(&table, sgid);
        let mut ports = cache.lock().unwrap_or_else(PoisonError::into_inner);
        ports.retain(|(p, _, _)| *p != port);
        ports.push((port, attr, table));
        drop(ports);
        match entry {
            Some(entry) => Ok((attr, entry)),
            None => Ok((attr, self.default_gid(port)?)),
        }
    }
}
