//! The block of one port in `ibv_devinfo` (rdma-core's `print_hca_cap`, per port): its
//! state and addresses, and with `-v` its limits, link and GID table.

use std::fmt::{self, Write};

use rdma_verbs::{GidEntry, GidType, LinkLayer, PortAttr, Transport};

use super::inet_ntop;
use super::names;

/// The block of port `port` in `ibv_devinfo` (`-v` for `verbose`, which adds the GIDs in
/// `gids`), with the empty line after it.
pub fn write(
    out: &mut impl Write,
    port: u8,
    attr: &PortAttr,
    gids: &[GidEntry],
    transport: Transport,
    verbose: bool,
) -> fmt::Result {
    writeln!(out, "\t\tport:\t{port}")?;
    let state = attr.state;
    writeln!(
        out,
        "\t\t\tstate:\t\t\t{} ({})",
        names::port_state(state),
        state.raw() as i32
    )?;
    let (max, active) = (attr.max_mtu, attr.active_mtu);
    writeln!(
        out,
        "\t\t\tmax_mtu:\t\t{} ({})",
        names::mtu(max),
        max.raw() as i32
    )?;
    writeln!(
        out,
        "\t\t\tactive_mtu:\t\t{} ({})",
        names::mtu(active),
        active.raw() as i32
    )?;
    writeln!(out, "\t\t\tsm_lid:\t\t\t{}", attr.sm_lid)?;
    writeln!(out, "\t\t\tport_lid:\t\t{}", attr.lid)?;
    writeln!(out, "\t\t\tport_lmc:\t\t0x{:02x}", attr.lmc)?;
    writeln!(
        out,
        "\t\t\tlink_layer:\t\t{}",
        names::link_layer(attr.link_layer)
    )?;
    if verbose {
        write_verbose(out, attr, gids, transport)?;
    }
    writeln!(out)
}

/// What `-v` adds to a port block: the rest of its attributes, then its GIDs.
fn write_verbose(
    out: &mut impl Write,
    attr: &PortAttr,
    gids: &[GidEntry],
    transport: Transport,
) -> fmt::Result {
    writeln!(out, "\t\t\tmax_msg_sz:\t\t0x{:x}", attr.max_msg_sz)?;
    writeln!(
        out,
        "\t\t\tport_cap_flags:\t\t0x{:08x}",
        attr.port_cap_flags.bits()
    )?;
    writeln!(
        out,
        "\t\t\tport_cap_flags2:\t0x{:04x}",
        attr.port_cap_flags2.bits()
    )?;
    let vl = attr.max_vl_num;
    writeln!(out, "\t\t\tmax_vl_num:\t\t{} ({vl})", names::vl(vl))?;
    writeln!(out, "\t\t\tbad_pkey_cntr:\t\t0x{:x}", attr.bad_pkey_cntr)?;
    writeln!(out, "\t\t\tqkey_viol_cntr:\t\t0x{:x}", attr.qkey_viol_cntr)?;
    writeln!(out, "\t\t\tsm_sl:\t\t\t{}", attr.sm_sl)?;
    writeln!(out, "\t\t\tpkey_tbl_len:\t\t{}", attr.pkey_tbl_len)?;
    writeln!(out, "\t\t\tgid_tbl_len:\t\t{}", attr.gid_tbl_len)?;
    writeln!(out, "\t\t\tsubnet_timeout:\t\t{}", attr.subnet_timeout)?;
    writeln!(out, "\t\t\tinit_type_reply:\t{}", attr.init_type_reply)?;
    let width = attr.active_width;
    writeln!(
        out,
        "\t\t\tactive_width:\t\t{}X ({})",
        names::width(width),
        width.raw()
    )?;
    let speed = attr.active_speed;
    writeln!(
        out,
        "\t\t\tactive_speed:\t\t{} ({})",
        names::speed(speed),
        speed.raw()
    )?;
    if transport == Transport::InfiniBand {
        let phys = attr.phys_state;
        writeln!(
            out,
            "\t\t\tphys_state:\t\t{} ({})",
            names::phys_state(phys),
            phys.raw()
        )?;
    }
    for entry in gids {
        if let Some(line) = gid_line(entry, attr.link_layer) {
            out.write_str(&line)?;
        }
    }
    Ok(())
}

/// The line `ibv_devinfo -v` prints for a GID table entry, or `None` if it skips it (the
/// interface ID is 0).
pub fn gid_line(entry: &GidEntry, link_layer: LinkLayer) -> Option<String> {
    if entry.gid.interface_id() == 0 {
        return None;
    }
    let bytes = entry.gid.to_bytes();
    // ibv_devinfo reads the type as sysfs shows it: IB and RoCE v1 alike, else RoCE v2.
    let v1 = matches!(entry.gid_type, GidType::Ib | GidType::RoceV1);
    let suffix = match (link_layer, v1) {
        (LinkLayer::Ethernet, true) => ", RoCE v1",
        (LinkLayer::Ethernet, false) => ", RoCE v2",
        _ => "",
    };
    let text = if v1 {
        let mut hex = String::new();
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let sep = if i == 0 { "" } else { ":" };
            let _ = write!(hex, "{sep}{:02x}{:02x}", pair[0], pair[1]);
        }
        hex
    } else {
        inet_ntop::ipv6(bytes)
    };
    Some(format!("\t\t\tGID[{:3}]:\t\t{text}{suffix}\n", entry.index))
}
