//! What `ibportstate` prints of a port (`show_port_info`) and the warnings it gives when
//! an active link runs below what both ends enable (`validate_width`, `validate_speed`,
//! `validate_extended_speed`).

use std::fmt::Write as _;

use ibumad::mad::PortInfo;

use crate::cli::Output;
use crate::fabric::portinfo_text::{
    field, link_speed, link_speed_ext, link_speed_ext_enabled, link_speed_ext_set, link_speed_set,
    link_width, link_width_enabled, link_width_supported, phys_state, port_state,
};
use crate::ibdiag;

/// How a port is printed.
pub struct Shown<'a> {
    /// The destination as `portid2str` writes it.
    pub dest: &'a str,
    /// The port number asked for.
    pub port: i32,
    /// Whether the port has extended speeds (its, or its switch's port 0's, CapabilityMask).
    pub espeed_cap: bool,
    /// Whether the node is a switch (its external ports show no M_Key fields).
    pub switch: bool,
    /// `-K`: show the M_Key.
    pub show_keys: bool,
}

/// `show_port_info`: `# Port info: <dest> port <n>` and the state, LID, width and speed
/// lines (and the M_Key ones on a CA, router or switch port 0).
pub fn show(shown: &Shown, info: &PortInfo, out: &mut Output) {
    let mut lines = vec![
        field("LinkState", &port_state(info.port_state)),
        field("PhysLinkState", &phys_state(info.port_physical_state)),
        field("Lid", &info.lid.to_string()),
        field("SMLid", &info.master_sm_lid.to_string()),
        field("LMC", &info.lmc.to_string()),
        field(
            "LinkWidthSupported",
            &link_width_supported(info.link_width_supported),
        ),
        field(
            "LinkWidthEnabled",
            &link_width_enabled(info.link_width_enabled),
        ),
    ];
    let active = link_width(info.link_width_active).unwrap_or_else(|text| {
        let msg = format!("bad width {}", info.link_width_active);
        ibdiag::warn(out, "mad_dump_linkwidth", &msg);
        text
    });
    lines.push(field("LinkWidthActive", &active));
    lines.push(field(
        "LinkSpeedSupported",
        &link_speed_set(info.link_speed_supported),
    ));
    lines.push(field(
        "LinkSpeedEnabled",
        &link_speed_set(info.link_speed_enabled),
    ));
    lines.push(field(
        "LinkSpeedActive",
        &link_speed(info.link_speed_active),
    ));
    if shown.espeed_cap {
        lines.push(field(
            "LinkSpeedExtSupported",
            &link_speed_ext_set(info.link_speed_ext_supported),
        ));
        lines.push(field(
            "LinkSpeedExtEnabled",
            &link_speed_ext_enabled(info.link_speed_ext_enabled),
        ));
        lines.push(field(
            "LinkSpeedExtActive",
            &link_speed_ext(info.link_speed_ext_active),
        ));
    }
    if !shown.switch || shown.port == 0 {
        let key = if shown.show_keys {
            format!("0x{:016x}", info.m_key)
        } else {
            "<not displayed>".to_owned()
        };
        lines.push(field("Mkey", &key));
        lines.push(field(
            "MkeyLeasePeriod",
            &info.m_key_lease_period.to_string(),
        ));
        lines.push(field("ProtectBits", &info.m_key_protect_bits.to_string()));
    }
    let _ = writeln!(out, "# Port info: {} port {}", shown.dest, shown.port);
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}

/// An enabled set of widths or speeds: `value`, or the supported set when all are enabled
/// (`get_link_width`, `get_link_speed`, `get_link_speed_ext`).
pub fn enabled(value: u8, supported: u8, all: u8) -> u8 {
    if value == all {
        supported
    } else {
        value
    }
}

/// The checks of an active switch port against its peer: each warns when the fastest
/// width (speed) both ends enable is not the active one.
pub fn validate(ours: &PortInfo, peer: &PortInfo, ext: bool, out: &mut Output) {
    let width = enabled(ours.link_width_enabled, ours.link_width_supported, 255)
        & enabled(peer.link_width_enabled, peer.link_width_supported, 255);
    let widths = [(8, "12x"), (4, "8x"), (2, "4x"), (16, "2x"), (1, "1x")];
    if let Some(&(bit, name)) = widths.iter().find(|(bit, _)| width & bit != 0) {
        let lwa = ours.link_width_active;
        if lwa != bit {
            let msg =
                format!("Peer ports operating at active width {lwa} rather than {bit} ({name})");
            ibdiag::warn(out, "validate_width", &msg);
        }
    }
    let speed = enabled(ours.link_speed_enabled, ours.link_speed_supported, 15)
        & enabled(peer.link_speed_enabled, peer.link_speed_supported, 15);
    let speeds = [(4, "10.0 Gbps"), (2, "5.0 Gbps"), (1, "2.5 Gbps")];
    if let Some(&(bit, name)) = speeds.iter().find(|(bit, _)| speed & bit != 0) {
        let lsa = ours.link_speed_active;
        if lsa != bit {
            let msg =
                format!("Peer ports operating at active speed {lsa} rather than {bit} ({name})");
            ibdiag::warn(out, "validate_speed", &msg);
        }
    }
    if !ext {
        return;
    }
    let espeed = enabled(
        ours.link_speed_ext_enabled,
        ours.link_speed_ext_supported,
        31,
    ) & enabled(
        peer.link_speed_ext_enabled,
        peer.link_speed_ext_supported,
        31,
    );
    let espeeds = [
        (8, "106.25 Gbps"),
        (4, "53.125 Gbps"),
        (2, "25.78125 Gbps"),
        (1, "14.0625 Gbps"),
    ];
    if let Some(&(bit, name)) = espeeds.iter().find(|(bit, _)| espeed & bit != 0) {
        let lsea = ours.link_speed_ext_active;
        if lsea != bit {
            let msg = format!(
                "Peer ports operating at active extended speed {lsea} rather than {bit} ({name})"
            );
            ibdiag::warn(out, "validate_extended_speed", &msg);
        }
    }
}
