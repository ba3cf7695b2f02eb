//! Where `ibstat`'s values come from for an InfiniBand device, or one that only libibumad
//! lists (as on the simulated fabric of `scripts/with-ibsim`): libibumad's `umad_get_ca`
//! (the `ibumad` crate), as infiniband-diags reads them. Its one sysfs read of its own (a
//! port's `rate`, for FDR10) goes through `libc::open`, which the simulator's preload
//! interposes.

use std::ffi::CString;

use ibumad::{Ca, CaPort};

use super::ca::{CaInfo, PortInfo};

/// `node_type_str` of the C tool, by node type.
const NODE_TYPES: [&str; 5] = ["???", "CA", "Switch", "Router", "iWARP RNIC"];
/// `port_state_str`, by state.
const STATES: [&str; 5] = ["???", "Down", "Initializing", "Armed", "Active"];
/// `port_phy_state_str`, by physical state.
const PHYS_STATES: [&str; 8] = [
    "No state change",
    "Sleep",
    "Polling",
    "Disabled",
    "PortConfigurationTraining",
    "LinkUp",
    "LinkErrorRecovery",
    "PhyTest",
];

/// Whether libibumad shows a port of `ca` with the InfiniBand link layer.
pub fn is_infiniband(ca: &Ca) -> bool {
    ca.ports
        .iter()
        .any(|p| p.link_layer == "InfiniBand" || p.link_layer == "IB")
}

/// A name from `table` by index, `???` past its end.
fn name(table: &[&'static str], index: u32) -> &'static str {
    usize::try_from(index)
        .ok()
        .and_then(|i| table.get(i))
        .copied()
        .unwrap_or("???")
}

/// The node type name of `ca`; `None` for node type 0, which `ibstat` skips silently.
pub fn node_type(ca: &Ca) -> Option<&'static str> {
    (ca.node_type != 0).then(|| name(&NODE_TYPES, ca.node_type))
}

/// Everything `ibstat` prints about `ca` (`ca_dump` and `port_dump`); `None` for node type 0.
pub fn ca_info(ca: &Ca) -> Option<CaInfo> {
    Some(CaInfo {
        name: ca.name.clone(),
        node_type: node_type(ca)?,
        ca_type: ca.ca_type.clone(),
        num_ports: u8::try_from(ca.num_ports).unwrap_or(u8::MAX),
        fw_ver: ca.fw_ver.clone(),
        hw_ver: ca.hw_ver.clone(),
        node_guid: ca.node_guid,
        sys_image_guid: ca.system_guid,
        ports: ca.ports.iter().map(|p| port_info(&ca.name, p)).collect(),
    })
}

/// One port as `port_dump` prints it.
fn port_info(ca_name: &str, p: &CaPort) -> PortInfo {
    let rate = if is_fdr10(ca_name, p.port_num) {
        format!("{} (FDR10)", p.rate)
    } else if p.rate != 2 {
        p.rate.to_string()
    } else {
        "2.5".to_owned()
    };
    PortInfo {
        port: u8::try_from(p.port_num).unwrap_or(u8::MAX),
        state: name(&STATES, p.state),
        phys_state: name(&PHYS_STATES, p.phys_state),
        rate,
        lid: p.base_lid as u16,
        lmc: p.lmc as u8,
        sm_lid: p.sm_lid as u16,
        cap_mask: p.capmask,
        port_guid: p.port_guid,
        link_layer: p.link_layer.clone(),
    }
}

/// `is_fdr10`: whether the port's sysfs `rate` (read as the C tool reads it, at most 31
/// bytes) ends its speed with `FDR10)`.
fn is_fdr10(ca_name: &str, port: u32) -> bool {
    let path = format!("/sys/class/infiniband/{ca_name}/ports/{port}/rate");
    let Some(rate) = read_libc(&path, 32) else {
        return false;
    };
    match rate.iter().position(|&b| b == b')') {
        Some(paren) if paren >= 5 => rate[paren - 5..paren].eq_ignore_ascii_case(b"fdr10"),
        _ => false,
    }
}

/// Up to `max - 1` bytes of the file at `path`, read with `open` and `read` as C's
/// `sys_read_string` does (so that an `LD_PRELOAD` interposing them sees the read).
fn read_libc(path: &str, max: usize) -> Option<Vec<u8>> {
    let path = CString::new(path).ok()?;
    // SAFETY: path is NUL-terminated; the flags ask for nothing unusual.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
    if fd < 0 {
        return None;
    }
    let mut buf = vec![0u8; max];
    // SAFETY: fd is open; buf has `max - 1` writable bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), max - 1) };
    // SAFETY: fd is open and closed once.
    unsafe { libc::close(fd) };
    buf.truncate(usize::try_from(n).ok()?);
    Some(buf)
}
