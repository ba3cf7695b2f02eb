//! Where `ibstat`'s values come from for an InfiniBand device, or one that only libibumad
//! lists (as on the simulated fabric of `scripts/with-ibsim`): libibumad's `umad_get_ca`
//! (the `ibumad` crate), as infiniband-diags reads them. Its one sysfs read of its own (a
//! port's `rate`, for FDR10, and for the width and speed `ibdevices` shows, which libibumad
//! does not give) goes through `libc::open`, which the simulator's preload interposes.

use std::ffi::CString;

use ibumad::{Ca, CaPort};
use rdma_verbs::{Speed, Width};

use super::ca::{CaInfo, PortInfo};
use super::names;

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

/// One port as `port_dump` prints it, with the width and speed its sysfs `rate` names.
fn port_info(ca_name: &str, p: &CaPort) -> PortInfo {
    let path = format!("/sys/class/infiniband/{ca_name}/ports/{}/rate", p.port_num);
    // As the C tool reads it: at most 31 bytes, nothing if it cannot be read.
    let rate_file = read_libc(&path, 32).unwrap_or_default();
    let rate = if is_fdr10(&rate_file) {
        format!("{} (FDR10)", p.rate)
    } else if p.rate != 2 {
        p.rate.to_string()
    } else {
        "2.5".to_owned()
    };
    let (width, speed) = width_and_speed(&rate_file);
    PortInfo {
        port: u8::try_from(p.port_num).unwrap_or(u8::MAX),
        state: name(&STATES, p.state),
        phys_state: name(&PHYS_STATES, p.phys_state),
        rate,
        width,
        speed,
        lid: p.base_lid as u16,
        lmc: p.lmc as u8,
        sm_lid: p.sm_lid as u16,
        cap_mask: p.capmask,
        port_guid: p.port_guid,
        link_layer: p.link_layer.clone(),
    }
}

/// `is_fdr10`: whether a port's sysfs `rate` ends its speed with `FDR10)`.
fn is_fdr10(rate: &[u8]) -> bool {
    match rate.iter().position(|&b| b == b')') {
        Some(paren) if paren >= 5 => rate[paren - 5..paren].eq_ignore_ascii_case(b"fdr10"),
        _ => false,
    }
}

/// The active width and speed a port's sysfs `rate` names, such as `100 Gb/sec (4X EDR)`;
/// `None` for what it does not tell. Older kernels, and the simulator's preload, name no
/// speed for SDR (`10 Gb/sec (4X)`): without a name, SDR's rate at that width (2.5 Gb/s a
/// lane) is SDR, any other rate an unknown speed.
fn width_and_speed(rate: &[u8]) -> (Option<Width>, Option<Speed>) {
    let text = String::from_utf8_lossy(rate);
    let Some((gbps, rest)) = text.split_once(" Gb/sec (") else {
        return (None, None);
    };
    let Some((link, _)) = rest.split_once(')') else {
        return (None, None);
    };
    let mut words = link.split(' ');
    let lanes = words.next().and_then(|w| w.strip_suffix('X'));
    let lanes = lanes.and_then(|n| n.parse::<u32>().ok());
    // The widths and speeds verbs names: one bit each.
    let width = lanes.and_then(|n| {
        (0..5)
            .map(|bit| Width::from_raw(1 << bit))
            .find(|w| w.lanes() == Some(n))
    });
    let speed = match words.next() {
        Some(speed) => (0..8)
            .map(|bit| Speed::from_raw(1 << bit))
            .find(|s| s.to_string() == speed),
        None => width
            .filter(|&w| names::rate(w, Speed::Sdr).as_deref() == Some(gbps))
            .map(|_| Speed::Sdr),
    };
    (width, speed)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(rate: &str) -> (Option<Width>, Option<Speed>) {
        width_and_speed(rate.as_bytes())
    }

    #[test]
    fn rate_files() {
        // The kernel's, Linux 6.1.
        assert_eq!(
            parsed("100 Gb/sec (4X EDR)\n"),
            (Some(Width::X4), Some(Speed::Edr))
        );
        assert_eq!(
            parsed("2.5 Gb/sec (1X SDR)\n"),
            (Some(Width::X1), Some(Speed::Sdr))
        );
        assert_eq!(
            parsed("40 Gb/sec (4X FDR10)\n"),
            (Some(Width::X4), Some(Speed::Fdr10))
        );
        assert_eq!(
            parsed("300 Gb/sec (12X EDR)\n"),
            (Some(Width::X12), Some(Speed::Edr))
        );
        assert_eq!(
            parsed("100 Gb/sec (2X HDR)\n"),
            (Some(Width::X2), Some(Speed::Hdr))
        );
        // The simulator's (and older kernels'): no name for SDR.
        assert_eq!(
            parsed("10 Gb/sec (4X)\n"),
            (Some(Width::X4), Some(Speed::Sdr))
        );
        assert_eq!(
            parsed("30 Gb/sec (12X)\n"),
            (Some(Width::X12), Some(Speed::Sdr))
        );
        assert_eq!(
            parsed("40 Gb/sec (4X QDR)\n"),
            (Some(Width::X4), Some(Speed::Qdr))
        );
        // What they do not tell: no name at another rate, an unnamed width, a speed verbs
        // does not name, nothing readable.
        assert_eq!(parsed("104 Gb/sec (4X)\n"), (Some(Width::X4), None));
        assert_eq!(parsed("0 Gb/sec (0X)\n"), (None, None));
        assert_eq!(parsed("800 Gb/sec (4X XDR)\n"), (Some(Width::X4), None));
        assert_eq!(parsed(""), (None, None));
        assert_eq!(parsed("10 Gb/sec (4X"), (None, None));
    }

    #[test]
    fn fdr10() {
        assert!(is_fdr10(b"40 Gb/sec (4X FDR10)\n"));
        assert!(is_fdr10(b"40 Gb/sec (4X fdr10)"));
        assert!(!is_fdr10(b"56 Gb/sec (4X FDR)\n"));
        assert!(!is_fdr10(b"FDR)"));
        assert!(!is_fdr10(b""));
    }
}
