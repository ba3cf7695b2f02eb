//! What queue pairs and address handles read of a port, kept per context: the port's
//! attributes and its GID table, so that creating a QP costs the calls C makes
//! (`ibv_create_qp`, `ibv_modify_qp`), not a port query and a GID table read each time.
//!
//! The copy of a port is read on first use and read again when it is older than
//! [`MAX_AGE`], when what is asked is not in it (nothing is refused on the copy's word:
//! an index or route it lacks is looked up afresh before any error), and after an
//! asynchronous event says a port or its tables changed (read through
//! [`Context::get_async_event`] or the tokio event stream; a read that began before such
//! an event is not kept). So in a program that reads no events, a GID table that changed
//! is seen at most [`MAX_AGE`] late: an index whose entry went empty meanwhile is refused
//! by the device when the handle is made or the QP connected
//! ([`Error::Verb`](crate::Error::Verb), [`Error::Transition`](crate::Error::Transition));
//! an index that now holds another address gives a QP whose endpoint names the old GID,
//! which its peer cannot reach.
//! The public queries ([`Context::query_port`], [`Context::gid_table`],
//! [`Context::default_gid`]) always ask the device; `default_gid` refreshes the copy.
//!
//! For a QP on a CM id, rdma_cm moves the QP through its states with the route's own
//! source GID (the kernel's GID attribute, not an index this crate picks), so the copy
//! only feeds what the QP reports of itself
//! ([`QueuePair::gid_index`](crate::QueuePair::gid_index), its LID, MTU and link layer).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::context::gid::{default_entry, no_gid_to_send_from, GidEntry};
use crate::context::port::PortAttr;
use crate::context::raw::coarse_now;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::types::AsyncEventKind;
#[cfg(feature = "cm")]
use crate::types::{Gid, GidType};

/// How long a port's copy is used before it is read again.
const MAX_AGE: Duration = Duration::from_secs(1);

/// One port's copy: its number, when it was read ([`coarse_now`]), its attributes and
/// GID table.
struct Port {
    num: u8,
    read: Option<Duration>,
    attr: PortAttr,
    table: Vec<GidEntry>,
}

/// The ports read so far.
#[derive(Default)]
pub(crate) struct PortCache(Mutex<Ports>);

/// The copies, and how many times events cleared them.
#[derive(Default)]
struct Ports {
    copies: Vec<Port>,
    /// Raised by every event that clears the copies: a read that began before one is not
    /// kept.
    generation: u64,
}

impl PortCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ports> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets every port if `kind` says a port's state, addresses or tables changed.
    pub(crate) fn event(&self, kind: AsyncEventKind) {
        use AsyncEventKind::*;
        if matches!(
            kind,
            PortActive | PortErr | LidChange | PkeyChange | SmChange | ClientReregister | GidChange
        ) {
            let mut ports = self.lock();
            ports.copies.clear();
            ports.generation += 1;
        }
    }
}

/// Which entry of a port's GID table a QP or address handle sends from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum SourceGid {
    /// The entry at this index, which must be in use.
    Index(u8),
    /// [`Context::default_gid`].
    Default,
    /// The entry rdma_cm sends from for a route whose source GID is this one; the
    /// default GID if no entry holds it (a route on a port with no such address).
    #[cfg(feature = "cm")]
    Route(Gid),
}

impl SourceGid {
    /// The entry in `table`, if it is there.
    fn pick(self, attr: &PortAttr, table: &[GidEntry]) -> Option<GidEntry> {
        match self {
            SourceGid::Index(index) => table.iter().find(|e| e.index == index).copied(),
            SourceGid::Default => default_entry(attr, table),
            #[cfg(feature = "cm")]
            SourceGid::Route(sgid) => route_entry(table, sgid),
        }
    }

    /// The entry in a freshly read `table`; if it lacks it, the default for a route, else
    /// the error naming what is missing.
    pub(crate) fn pick_or_missing(
        self,
        port: u8,
        attr: &PortAttr,
        table: &[GidEntry],
    ) -> Result<GidEntry> {
        if let Some(entry) = self.pick(attr, table) {
            return Ok(entry);
        }
        match self {
            SourceGid::Index(index) => {
                Context::check_gid_index(port, index, attr)?;
                Err(Error::InvalidArgument {
                    what: "GID index",
                    reason: format!("entry {index} of port {port}'s GID table is empty"),
                })
            }
            // A route's GID in no entry (a route on a port with no such address): the
            // port's default.
            _ => default_entry(attr, table).ok_or_else(|| no_gid_to_send_from(port)),
        }
    }
}

/// The entry of a port's GID table that rdma_cm sends from for the route's source GID
/// `sgid`: on RoCE the same GID is in the table once per RoCE version, and rdma_cm's
/// default is v2 (changeable only through configfs: the QP's `query` then shows the index
/// it really uses).
#[cfg(feature = "cm")]
fn route_entry(table: &[GidEntry], sgid: Gid) -> Option<GidEntry> {
    let of_route = table.iter().filter(|e| e.gid == sgid);
    of_route
        .clone()
        .find(|e| e.gid_type == GidType::RoceV2)
        .or_else(|| of_route.clone().next())
        .copied()
}

impl Context {
    /// `port`'s attributes and GID table, read from the device (`ibv_query_port`,
    /// `ibv_query_gid_table`). They replace the context's copy of the port unless an event
    /// cleared the copies while they were read, or another thread's read began later.
    pub(crate) fn read_port(&self, port: u8) -> Result<(PortAttr, Vec<GidEntry>)> {
        let (generation, began) = (self.inner.ports.lock().generation, coarse_now());
        let attr = self.query_port(port)?;
        let table = self.gid_table_of(port, &attr)?;
        let mut ports = self.inner.ports.lock();
        let newer = ports.copies.iter().any(|p| p.num == port && p.read > began);
        if ports.generation == generation && !newer {
            ports.copies.retain(|p| p.num != port);
            ports.copies.push(Port {
                num: port,
                read: began,
                attr,
                table: table.clone(),
            });
        }
        Ok((attr, table))
    }

    /// `port`'s attributes and the entry of its GID table `source` names, from the
    /// context's copy (see the module docs), or from the device when the copy is missing,
    /// old or lacks the entry. Fails as [`query_port`](Self::query_port) does for a port
    /// the device does not have, with [`Error::OutOfRange`] for an index past the table
    /// and [`Error::InvalidArgument`] for an empty entry or a port with no GID to send
    /// from.
    pub(crate) fn port_gid(&self, port: u8, source: SourceGid) -> Result<(PortAttr, GidEntry)> {
        {
            let now = coarse_now();
            let young = |read: Option<Duration>| match (read, now) {
                (Some(read), Some(now)) => now.saturating_sub(read) < MAX_AGE,
                _ => false,
            };
            let ports = self.inner.ports.lock();
            let fresh = ports.copies.iter().find(|p| p.num == port && young(p.read));
            if let Some(p) = fresh {
                if let Some(entry) = source.pick(&p.attr, &p.table) {
                    return Ok((p.attr, entry));
                }
            }
        }
        // Read outside the lock: other threads' QPs on the context are not held up.
        let (attr, table) = self.read_port(port)?;
        Ok((attr, source.pick_or_missing(port, &attr, &table)?))
    }
}
