//! GIDs and the GID table: `union ibv_gid`, `struct ibv_gid_entry`, `ibv_query_gid`,
//! `ibv_query_gid_ex` and `ibv_query_gid_table`.

use std::net::Ipv6Addr;

use crate::context::port::{LinkLayer, PortAttr};
use crate::context::{raw, Context};
use crate::error::{Error, Result};
use crate::ffi;
use crate::types::{Gid, GidType};

/// One valid entry of a GID table (`struct ibv_gid_entry`). Indexes are `u8` throughout
/// the crate, as in `struct ibv_ah_attr` (an address vector cannot name a higher one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct GidEntry {
    /// The GID.
    pub gid: Gid,
    /// Its index in the port's table.
    pub index: u8,
    /// The port, from 1.
    pub port: u8,
    /// Its kind.
    pub gid_type: GidType,
    /// Interface index of the network device it belongs to (RoCE); 0 for none.
    pub ifindex: u32,
}

impl GidEntry {
    /// Converts the C structure; `None` if its index or port does not fit in a `u8` (no
    /// address vector can use such an entry).
    pub fn from_raw(raw: &ffi::ibv_gid_entry) -> Option<Self> {
        Some(GidEntry {
            gid: Gid::from_raw(raw.gid),
            index: u8::try_from(raw.gid_index).ok()?,
            port: u8::try_from(raw.port_num).ok()?,
            gid_type: GidType::from_raw(raw.gid_type),
            ifindex: raw.ndev_ifindex,
        })
    }

    /// The name of the network device it belongs to, such as `eth0` (`if_indextoname`);
    /// `None` if it has none or the device is gone.
    pub fn netdev(&self) -> Option<String> {
        if self.ifindex == 0 {
            return None;
        }
        raw::if_name(self.ifindex)
    }
}

impl Context {
    /// Checks `index` against the table size of `port`, which must exist.
    fn gid_port(&self, port: u8, index: u8) -> Result<PortAttr> {
        let attr = self.query_port(port)?;
        Self::check_gid_index(port, index, &attr)?;
        Ok(attr)
    }

    /// Checks `index` against the table size in `port`'s attributes `attr`: past it is
    /// [`Error::OutOfRange`], naming the last index; no table at all is
    /// [`Error::InvalidArgument`].
    pub(crate) fn check_gid_index(port: u8, index: u8, attr: &PortAttr) -> Result<()> {
        if u32::from(index) < attr.gid_tbl_len {
            return Ok(());
        }
        Err(match attr.gid_tbl_len {
            0 => Error::InvalidArgument {
                what: "GID index",
                reason: format!("port {port} has no GID table"),
            },
            len => Error::OutOfRange {
                what: "GID index",
                value: index.into(),
                min: 0,
                max: u64::from(len) - 1,
            },
        })
    }

    /// Reads entry `index` of the GID table of `port` (`ibv_query_gid`); an empty entry reads
    /// as the zero GID.
    ///
    /// Fails with [`Error::OutOfRange`] for a port the device does not have or an index
    /// beyond the table.
    pub fn query_gid(&self, port: u8, index: u8) -> Result<Gid> {
        self.gid_port(port, index)?;
        Ok(Gid::from_raw(self.inner.raw.query_gid(port, index)?))
    }

    /// Reads entry `index` of the GID table of `port` with its type and network device
    /// (`ibv_query_gid_ex`); `None` if the entry is empty.
    ///
    /// Fails with [`Error::OutOfRange`] for a port the device does not have or an index
    /// beyond the table.
    pub fn query_gid_ex(&self, port: u8, index: u8) -> Result<Option<GidEntry>> {
        self.gid_port(port, index)?;
        let raw = self.inner.raw.query_gid_ex(port, index)?;
        Ok(raw.as_ref().and_then(GidEntry::from_raw))
    }

    /// The GID a queue pair or address handle sends from unless told otherwise. On RoCE:
    /// the first RoCE v2 GID holding an IPv4 address, else the first RoCE v2 GID, else the
    /// first valid one (never the link-local entry 0 when there is a routable one). On
    /// InfiniBand: entry 0.
    ///
    /// Read from the device (`ibv_query_port`, `ibv_query_gid_table`), which also
    /// refreshes the context's copy of the port that queue pairs and address handles read
    /// (see [`QueuePairBuilder::build`](crate::QueuePairBuilder::build)).
    pub fn default_gid(&self, port: u8) -> Result<GidEntry> {
        let (attr, table) = self.read_port(port)?;
        default_entry(&attr, &table).ok_or_else(|| no_gid_to_send_from(port))
    }

    /// The valid entries of the GID table of `port`, by index (`ibv_query_gid_table`).
    ///
    /// Fails with [`Error::OutOfRange`] for a port the device does not have.
    pub fn gid_table(&self, port: u8) -> Result<Vec<GidEntry>> {
        self.query_port(port)?;
        // The call returns the entries of all ports: size the array for all tables.
        let mut capacity = 0usize;
        for p in 1..=self.port_count()? {
            capacity += usize::try_from(self.query_port(p)?.gid_tbl_len).unwrap_or(0);
        }
        self.gid_table_sized(port, capacity)
    }

    /// [`gid_table`](Self::gid_table) of `port`, whose attributes `attr` the caller has:
    /// on a device of one port (whose table is the device's), one call less.
    pub(crate) fn gid_table_of(&self, port: u8, attr: &PortAttr) -> Result<Vec<GidEntry>> {
        if self.port_count()? != 1 {
            return self.gid_table(port);
        }
        self.gid_table_sized(port, usize::try_from(attr.gid_tbl_len).unwrap_or(0))
    }

    /// The valid entries of `port`'s table, from `ibv_query_gid_table` with room for
    /// `capacity` entries (the sum of every port's table).
    fn gid_table_sized(&self, port: u8, capacity: usize) -> Result<Vec<GidEntry>> {
        if capacity == 0 {
            return Ok(Vec::new());
        }
        let mut raw = vec![ffi::ibv_gid_entry::default(); capacity];
        let n = self.inner.raw.query_gid_table(&mut raw)?;
        let mut entries: Vec<GidEntry> = raw
            .iter()
            .take(n)
            .filter(|e| e.port_num == u32::from(port))
            .filter_map(GidEntry::from_raw)
            .collect();
        entries.sort_by_key(|e| e.index);
        Ok(entries)
    }
}

/// The default GID (see [`Context::default_gid`]) in `table`, the valid entries of a port
/// whose attributes are `attr`.
pub(crate) fn default_entry(attr: &PortAttr, table: &[GidEntry]) -> Option<GidEntry> {
    if attr.link_layer != LinkLayer::Ethernet {
        return table.iter().find(|e| e.index == 0).copied();
    }
    let v2 = |e: &&GidEntry| e.gid_type == GidType::RoceV2;
    table
        .iter()
        .filter(v2)
        .find(|e| Ipv6Addr::from(e.gid).to_ipv4_mapped().is_some())
        .or_else(|| table.iter().find(v2))
        .or_else(|| table.first())
        .copied()
}

/// The error of a port whose table holds no GID to send from.
pub(crate) fn no_gid_to_send_from(port: u8) -> Error {
    Error::InvalidArgument {
        what: "GID index",
        reason: format!("port {port} has no GID to send from"),
    }
}
