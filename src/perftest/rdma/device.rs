//! The device and the port the test runs on, opened and checked as perftest does, and
//! perftest's choice of GID index in the port's table.

use std::net::Ipv6Addr;

use rdma_verbs::{Context, DeviceList, GidType, LinkLayer, PortAttr, PortState, Transport};

use crate::perftest::options::DeviceOptions;
use crate::perftest::types::{Ctx as _, Error, Result};

/// An open device and the port the test runs on.
pub struct Device {
    /// The open context.
    pub ctx: Context,
    /// Its name.
    pub name: String,
    /// `IB`, `IW` or `Unknown`, as perftest names the transport.
    pub transport: &'static str,
    /// The port's number.
    pub port_num: u8,
    /// The port's attributes.
    pub port: PortAttr,
    /// Whether the link layer is Ethernet (RoCE).
    pub ethernet: bool,
    /// Outstanding RDMA reads a QP can take (`max_qp_rd_atom`).
    pub max_qp_rd_atom: u32,
    /// IEEE vendor ID.
    pub vendor_id: u32,
}

impl Device {
    /// Opens the device of `-d` (or the first one) and checks its port (`-i`) as perftest
    /// does.
    pub fn open(o: &DeviceOptions) -> Result<Device> {
        let list = DeviceList::new().ctx("ibv_get_device_list")?;
        if list.is_empty() {
            return Err(Error::new(
                " Did not detect devices \n If device exists, check if driver is up",
            ));
        }
        let dev = match &o.ib_dev {
            Some(name) => list
                .find(name)
                .map_err(|_| Error::new(format!("IB device {name} not found")))?,
            None => list.first().ctx("ibv_get_device_list")?,
        };
        let transport = match dev.transport() {
            Transport::InfiniBand => "IB",
            Transport::Iwarp => "IW",
            _ => "Unknown",
        };
        let name = dev.name().to_owned();
        let ctx = dev
            .open()
            .ctx(format_args!(" Couldn't get context for the device {name}"))?;
        let port_num = o.ib_port;
        let port = ctx
            .query_port(port_num)
            .ctx(format_args!(" Unable to query port {port_num} attributes"))?;
        if port.state != PortState::Active {
            return Err(Error::new(format!(
                " Port number {port_num} state is {}",
                port.state
            )));
        }
        let ethernet = match port.link_layer {
            LinkLayer::Ethernet => true,
            LinkLayer::InfiniBand | LinkLayer::Unspecified => false,
            _ => {
                return Err(Error::new(format!(
                    "Link layer on port {port_num} is Unknown"
                )))
            }
        };
        let attr = ctx.query_device().ctx("ibv_query_device")?;
        Ok(Device {
            name,
            transport,
            port_num,
            port,
            ethernet,
            max_qp_rd_atom: attr.max_qp_rd_atom,
            vendor_id: attr.vendor_id,
            ctx,
        })
    }

    /// `IB` or `Ethernet`.
    pub fn link(&self) -> &'static str {
        if self.ethernet {
            "Ethernet"
        } else {
            "IB"
        }
    }

    /// The port's active MTU in bytes.
    pub fn active_mtu(&self) -> u32 {
        self.port.active_mtu.bytes().unwrap_or(1024)
    }

    /// The GID index of the test: `asked` (`-x`), else on RoCE perftest's pick in the port's
    /// table (preferring IPv6 GIDs with `ipv6`), else none (InfiniBand).
    pub fn gid_index(&self, asked: Option<u8>, ipv6: bool) -> Result<Option<u8>> {
        if asked.is_some() || !self.ethernet {
            return Ok(asked);
        }
        let len = self.port.gid_tbl_len as usize;
        let mut table = vec![(Ipv6Addr::UNSPECIFIED, None); len];
        let entries = self
            .ctx
            .gid_table(self.port_num)
            .ctx("reading the GID table")?;
        for e in entries {
            if let Some(slot) = table.get_mut(usize::from(e.index)) {
                *slot = (Ipv6Addr::from(e.gid), Some(e.gid_type));
            }
        }
        pick_gid_index(&table, ipv6).map(Some)
    }
}

/// Whether a GID is an IPv4-mapped address (or IPv4-encoded multicast), as perftest tests.
pub fn v4_mapped(gid: &Ipv6Addr) -> bool {
    let s = gid.segments();
    let w = [
        u32::from(s[0]) << 16 | u32::from(s[1]),
        u32::from(s[2]) << 16 | u32::from(s[3]),
        u32::from(s[4]) << 16 | u32::from(s[5]),
    ];
    (w[0] | w[1] | (w[2] ^ 0x0000_ffff)) == 0
        || (w[0] == 0xff0e_0000 && (w[1] | (w[2] ^ 0x0000_ffff)) == 0)
}

/// perftest's preference among RoCE versions: v2 over v1, the rest unranked.
fn roce_rank(t: Option<GidType>) -> i32 {
    match t {
        Some(GidType::RoceV1) => 1,
        Some(GidType::RoceV2) => 2,
        _ => -1,
    }
}

/// The GID index perftest (6.06) picks without `-x`: walking the table, an entry replaces the
/// best so far if it is IPv4-mapped and the best is not (IPv6 with `--ipv6`), or else if both
/// entries have a type and its RoCE version is higher. `table` holds each index's GID and
/// type (none for an empty entry).
fn best_gid_index(table: &[(Ipv6Addr, Option<GidType>)], ipv6: bool) -> usize {
    let mut best = 0;
    for i in 1..table.len() {
        let (gid, kind) = table[best];
        let (rival, rival_kind) = table[i];
        let (v4, rival_v4) = (v4_mapped(&gid), v4_mapped(&rival));
        // The preferred family beats the other; in every other case (perftest's walk,
        // including the other family beating the preferred one) the higher RoCE version.
        let family_wins = rival_v4 != v4 && rival_v4 != ipv6;
        let version_wins =
            kind.is_some() && rival_kind.is_some() && roce_rank(rival_kind) > roce_rank(kind);
        if family_wins || version_wins {
            best = i;
        }
    }
    best
}

/// [`best_gid_index`] as the index QPs take, an error beyond 255.
fn pick_gid_index(table: &[(Ipv6Addr, Option<GidType>)], ipv6: bool) -> Result<u8> {
    let best = best_gid_index(table, ipv6);
    u8::try_from(best).map_err(|_| Error::new(format!("GID index {best} is out of range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_choice_like_perftest() {
        let v2 = Some(GidType::RoceV2);
        let v1 = Some(GidType::RoceV1);
        let g = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        // rxe on lo: fe80 (v2), ::ffff:127.0.0.1 (v2), ::1 (v2), an empty entry.
        let rxe = [
            (g("fe80::200:ff:fe00:0"), v2),
            (g("::ffff:127.0.0.1"), v2),
            (g("::1"), v2),
            (Ipv6Addr::UNSPECIFIED, None),
        ];
        assert_eq!(best_gid_index(&rxe, false), 1);
        assert_eq!(best_gid_index(&rxe, true), 0);
        // A NIC with v1 and v2 entries per address: the v2 IPv4 one.
        let nic = [
            (g("fe80::1"), v1),
            (g("fe80::1"), v2),
            (g("::ffff:10.0.0.1"), v1),
            (g("::ffff:10.0.0.1"), v2),
        ];
        assert_eq!(best_gid_index(&nic, false), 3);
        // perftest's walk lets a v2 IPv6 entry replace a v1 IPv4 one.
        let odd = [(g("::ffff:10.0.0.1"), v1), (g("fe80::1"), v2)];
        assert_eq!(best_gid_index(&odd, false), 1);
        assert!(v4_mapped(&g("ff0e::ffff:239.1.1.1")));
        assert!(!v4_mapped(&g("::1")));
    }

    #[test]
    fn gid_pick_fits_a_qp() {
        let v1 = Some(GidType::RoceV1);
        let v2 = Some(GidType::RoceV2);
        let link_local = ("fe80::1".parse::<Ipv6Addr>().unwrap(), v1);
        let v4 = ("::ffff:10.0.0.1".parse::<Ipv6Addr>().unwrap(), v2);
        // An empty table (or one entry) is index 0.
        assert_eq!(pick_gid_index(&[], false).unwrap(), 0);
        let mut table = vec![link_local; 256];
        table[255] = v4;
        assert_eq!(pick_gid_index(&table, false).unwrap(), 255);
        // perftest's pick past 255 is no index a QP takes.
        table.push(v4);
        table[255] = link_local;
        let err = pick_gid_index(&table, false).unwrap_err();
        assert_eq!(err.to_string(), "GID index 256 is out of range");
    }
}
