//! `ibnetdiscover`'s other reports: the node lists (`-l`, `-H`, `-S`, `-R`) and the ports
//! report (`-p`).

use std::fmt::Write as _;

use super::topology::{clean_desc, ext_speed, speed_name, width_name};
use crate::fabric::netdisc::{Fabric, Node, NODE_CA, NODE_ROUTER, NODE_SWITCH};
use crate::fabric::node_names::NodeNames;

/// `list_nodes`: one line per node of each type in `types`, channel adapters first, then
/// switches, then routers.
pub fn write_list(fabric: &Fabric, types: &[u8], names: &NodeNames, w: &mut String) {
    for node_type in [NODE_CA, NODE_SWITCH, NODE_ROUTER] {
        if !types.contains(&node_type) {
            continue;
        }
        for node in fabric.of_type(node_type) {
            let kind = match node_type {
                NODE_SWITCH => "Switch",
                NODE_CA => "Ca",
                _ => "Router",
            };
            let _ = writeln!(
                w,
                "{kind}\t : 0x{:016x} ports {} devid 0x{:x} vendid 0x{:x} \"{}\"",
                node.info.node_guid,
                node.info.num_ports,
                node.info.device_id,
                node.info.vendor_id,
                names.name(node.info.node_guid, clean_desc(node))
            );
        }
    }
}

/// `ports_nt_str_compat`: `SW`, `CA` or `RT`.
fn type_code(node: &Node) -> &'static str {
    match node.info.node_type {
        NODE_SWITCH => "SW",
        NODE_CA => "CA",
        NODE_ROUTER => "RT",
        _ => "??",
    }
}

/// `dump_ports_report`: every known port of every node (most recently found node first,
/// ports from the highest number down to 1), with its link's other end.
pub fn write_ports(fabric: &Fabric, names: &NodeNames, w: &mut String) {
    for node in fabric.nodes.iter().rev() {
        for port in node.ports.iter().skip(1).rev().flatten() {
            let caps = if node.is_switch() {
                node.port(0).map(|p0| p0.info.capability_mask)
            } else {
                Some(port.info.capability_mask)
            };
            let (width, speed, espeed) = match caps {
                Some(caps) => (
                    port.info.link_width_active,
                    port.info.link_speed_active,
                    ext_speed(port, caps),
                ),
                None => (0, 0, 0),
            };
            let name = names.name(node.info.node_guid, clean_desc(node));
            let _ = write!(
                w,
                "{:>2} {:5} {:2} 0x{:016x} {} {}",
                type_code(node),
                node.lid_of(port),
                port.num,
                port.guid,
                width_name(width),
                speed_name(port, speed, espeed)
            );
            match fabric.remote(port) {
                Some((rnode, rport)) => {
                    let _ = writeln!(
                        w,
                        " - {:>2} {:5} {:2} 0x{:016x} ( '{name}' - '{}' )",
                        type_code(rnode),
                        rnode.lid_of(rport),
                        rport.num,
                        rport.guid,
                        names.name(rnode.info.node_guid, clean_desc(rnode))
                    );
                }
                None => {
                    let _ = writeln!(w, "{:36}'{name}'", "");
                }
            }
        }
    }
}
