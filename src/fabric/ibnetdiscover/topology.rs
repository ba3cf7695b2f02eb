//! The topology file `ibnetdiscover` writes by default (and with `-g`, `-f`, `-m`): a
//! header, then each switch and its linked ports, then each channel adapter and router.

use std::fmt::Write as _;

use ibumad::mad::NodeDescription;

use crate::fabric::mlnx_ext;
use crate::fabric::netdisc::{Fabric, Node, Port, NODE_CA, NODE_ROUTER, NODE_SWITCH};
use crate::fabric::node_names::NodeNames;
use crate::fabric::portinfo_text::CAP_HAS_EXT_SPEEDS;

/// How the topology is written.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// `-g`: grouping (no chassis are recognised: every node is a non-chassis node).
    pub group: bool,
    /// `-f`: speed, width and VLCap numbers after each link.
    pub full: bool,
    /// `-m`: the hop and MAD counts in the header.
    pub max_hops: bool,
}

/// `dump_topology`; `generated` is the `ctime` text (with its newline).
pub fn write_topology(
    fabric: &Fabric,
    style: Style,
    names: &NodeNames,
    generated: &str,
    w: &mut String,
) {
    let _ = write!(w, "#\n# Topology file: generated on {generated}#\n");
    if style.max_hops {
        let _ = write!(
            w,
            "# Reported max hops discovered: {}\n# Total MADs used: {}\n",
            fabric.max_hops, fabric.total_mads
        );
    }
    if let Some((n, _)) = fabric.from {
        let from = &fabric.nodes[n];
        let _ = writeln!(
            w,
            "# Initiated from node {:016x} port {:016x}",
            from.info.node_guid, from.info.port_guid
        );
    }
    if style.group {
        w.push_str("\nNon-Chassis Nodes\n");
    }
    let out = Out {
        fabric,
        style,
        names,
    };
    for node in fabric.of_type(NODE_SWITCH) {
        out.switch_header(node, "", "", w);
        for port in node.ports.iter().skip(1).flatten() {
            out.switch_port(node, port, "", w);
        }
    }
    for node_type in [NODE_CA, NODE_ROUTER] {
        for node in fabric.of_type(node_type) {
            out.ca_header(node, "", "", w);
            for port in node.ports.iter().skip(1).flatten() {
                out.ca_port(node, port, "", w);
            }
        }
    }
}

/// `node_name`: `"S-<guid>"`, `"H-<guid>"` or `"R-<guid>"`, quotes included.
pub fn node_name(node: &Node) -> String {
    let letter = match node.info.node_type {
        NODE_SWITCH => 'S',
        NODE_CA => 'H',
        NODE_ROUTER => 'R',
        _ => '?',
    };
    format!("\"{letter}-{:016x}\"", node.info.node_guid)
}

/// `clean_nodedesc`: the description up to its first NUL, each unprintable byte a space.
pub fn clean_desc(node: &Node) -> String {
    NodeDescription(node.desc).printable()
}

/// The compatibility width name (`dump_linkwidth_compat`).
pub fn width_name(width: u8) -> &'static str {
    match width {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 => "2x",
        _ => "??",
    }
}

/// The compatibility speed name of `port`'s link at `speed` (LinkSpeedActive) and
/// `ext_speed` (LinkSpeedExtActive where the port has extended speeds): `dump_linkspeed_compat`
/// and `dump_linkspeedext_compat`, FDR10 from Mellanox's ExtendedPortInfo.
pub fn speed_name(port: &Port, speed: u8, ext_speed: u8) -> &'static str {
    let base = |speed| match speed {
        1 => "SDR",
        2 => "DDR",
        4 => "QDR",
        _ => "???",
    };
    if speed != 4 && ext_speed == 0 {
        return base(speed);
    }
    match ext_speed {
        0 if port.mlnx_speed_active & mlnx_ext::FDR10 != 0 => "FDR10",
        0 => base(speed),
        1 => "FDR",
        2 => "EDR",
        4 => "HDR",
        8 => "NDR",
        _ => "???",
    }
}

/// LinkSpeedExtActive of `port` if `caps` (a CapabilityMask) has extended speeds, else 0.
pub fn ext_speed(port: &Port, caps: u32) -> u8 {
    if caps & CAP_HAS_EXT_SPEEDS != 0 {
        port.info.link_speed_ext_active
    } else {
        0
    }
}

/// Xsigo GUID families, which the C tool marks.
fn is_xsigo_hca(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9702_0000_0000
}

fn is_xsigo_tca(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9703_0000_0000
}

/// How the nodes and ports of one fabric are written: the C `out_*` functions, each line
/// after a prefix (`< ` and `> ` in `--diff`).
pub struct Out<'a> {
    /// The fabric the nodes and ports are in.
    pub fabric: &'a Fabric,
    /// `-f`, `-g`.
    pub style: Style,
    /// The node name map.
    pub names: &'a NodeNames,
}

impl Out<'_> {
    /// A node's name: the map's, else its description.
    fn name(&self, node: &Node) -> String {
        self.names.name(node.info.node_guid, clean_desc(node))
    }

    /// `out_ids`: the vendor, device and system image lines.
    fn ids(&self, node: &Node, prefix: &str, w: &mut String) {
        let _ = write!(
            w,
            "\n{prefix}vendid=0x{:x}\n{prefix}devid=0x{:x}\n",
            node.info.vendor_id, node.info.device_id
        );
        if node.info.system_image_guid != 0 {
            let _ = writeln!(w, "{prefix}sysimgguid=0x{:x}", node.info.system_image_guid);
        }
    }

    /// `out_switch`: the ids, `switchguid` and `Switch` lines.
    pub fn switch_header(&self, node: &Node, id_prefix: &str, prefix: &str, w: &mut String) {
        self.ids(node, id_prefix, w);
        let _ = write!(
            w,
            "{id_prefix}switchguid=0x{:x}({:x})",
            node.info.node_guid, node.info.port_guid
        );
        if self.style.group {
            w.push_str("\t# ");
        }
        w.push('\n');
        self.switch_detail(node, prefix, w);
        w.push('\n');
    }

    /// `out_switch_detail`: the `Switch` line, without its newline.
    pub fn switch_detail(&self, node: &Node, prefix: &str, w: &mut String) {
        let _ = write!(
            w,
            "{prefix}Switch\t{} {}\t\t# \"{}\" {} port 0 lid {} lmc {}",
            node.info.num_ports,
            node_name(node),
            self.name(node),
            if node.enhanced_port0 {
                "enhanced"
            } else {
                "base"
            },
            node.sma_lid,
            node.sma_lmc
        );
    }

    /// `out_switch_port`: a switch port and the port it is linked to (nothing if none).
    pub fn switch_port(&self, node: &Node, port: &Port, prefix: &str, w: &mut String) {
        let Some((rnode, rport)) = self.fabric.remote(port) else {
            return;
        };
        let info = &port.info;
        let (speed, espeed) = match node.port(0) {
            None => (0, 0),
            Some(p0) => (
                info.link_speed_active,
                ext_speed(port, p0.info.capability_mask),
            ),
        };
        let _ = write!(
            w,
            "{prefix}[{}]\t{}[{}]",
            port.num,
            node_name(rnode),
            rport.num
        );
        if !rnode.is_switch() {
            let _ = write!(w, "({:x}) ", rport.guid);
        }
        let _ = write!(
            w,
            "\t\t# \"{}\" lid {} {}{}",
            self.name(rnode),
            rnode.lid_of(rport),
            width_name(info.link_width_active),
            speed_name(port, speed, espeed)
        );
        self.full(port, speed, w);
        if is_xsigo_tca(rport.guid) {
            let _ = write!(w, " slot {}", port.num);
        } else if is_xsigo_hca(rport.guid) {
            w.push_str(" (scp)");
        }
        w.push('\n');
    }

    /// The ` s=.. w=.. v=..` of `-f`.
    fn full(&self, port: &Port, speed: u8, w: &mut String) {
        if self.style.full {
            let info = &port.info;
            let _ = write!(
                w,
                " s={speed} w={} v={}",
                info.link_width_active, info.vl_cap
            );
        }
    }

    /// `out_ca`: the ids, `caguid` (or `rtguid`) and `Ca` (or `Rt`) lines.
    pub fn ca_header(&self, node: &Node, id_prefix: &str, prefix: &str, w: &mut String) {
        self.ids(node, id_prefix, w);
        let kind = if node.info.node_type == NODE_CA {
            "ca"
        } else {
            "rt"
        };
        let _ = writeln!(w, "{id_prefix}{kind}guid=0x{:x}", node.info.node_guid);
        self.ca_detail(node, prefix, w);
        if self.style.group && is_xsigo_hca(node.info.node_guid) {
            w.push_str(" (scp)");
        }
        w.push('\n');
    }

    /// `out_ca_detail`: the `Ca` (or `Rt`) line, without its newline.
    pub fn ca_detail(&self, node: &Node, prefix: &str, w: &mut String) {
        let kind = match node.info.node_type {
            NODE_CA => "Ca",
            NODE_ROUTER => "Rt",
            _ => "???",
        };
        let _ = write!(
            w,
            "{prefix}{kind}\t{} {}\t\t# \"{}\"",
            node.info.num_ports,
            node_name(node),
            clean_desc(node)
        );
    }

    /// `out_ca_port`: a CA (or router) port and the port it is linked to (nothing if none).
    pub fn ca_port(&self, node: &Node, port: &Port, prefix: &str, w: &mut String) {
        let Some((rnode, rport)) = self.fabric.remote(port) else {
            return;
        };
        let info = &port.info;
        let _ = write!(w, "{prefix}[{}]", port.num);
        if !node.is_switch() {
            let _ = write!(w, "({:x}) ", port.guid);
        }
        let _ = write!(w, "\t{}[{}]", node_name(rnode), rport.num);
        if !rnode.is_switch() {
            let _ = write!(w, " ({:x}) ", rport.guid);
        }
        let espeed = ext_speed(port, info.capability_mask);
        let _ = write!(
            w,
            "\t\t# lid {} lmc {} \"{}\" lid {} {}{}",
            port.base_lid,
            port.lmc,
            self.name(rnode),
            rnode.lid_of(rport),
            width_name(info.link_width_active),
            speed_name(port, info.link_speed_active, espeed)
        );
        self.full(port, info.link_speed_active, w);
        w.push('\n');
    }
}
