//! `ibstat` of infiniband-diags, with the same standard output byte for byte and the same
//! exit status.
//!
//! The C tool reads everything from sysfs through libibumad. Here the values come from verbs,
//! except the three that verbs does not give the same way, read from the same sysfs files with
//! libibumad's rules: `CA type` (`hca_type`), `Firmware version` (`fw_ver`; verbs formats its
//! own, such as `0.0.0` on rxe where sysfs has an empty string) and `Hardware version`
//! (`hw_rev`). `Rate` is computed from the active width and speed as the kernel computes the
//! sysfs `rate` file that libibumad reads.
//!
//! A device whose ports libibumad shows with the InfiniBand link layer, or that only
//! libibumad lists (the simulated fabric of `scripts/with-ibsim`, whose preload fakes sysfs
//! for libibumad alone), is read through libibumad as the C tool reads it ([`umad`]).
//!
//! The program is here; its command line is in [`options`], where the values come from in
//! [`verbs`] and [`umad`], what it prints in [`ca`] and [`names`]. `ibdevices`
//! ([`mod@crate::ibdevices`]) shows the same devices from the same sources.

use std::ffi::OsString;
use std::fmt::Write;
use std::process::ExitCode;

use crate::cli::{self, Output};
use crate::ibdiag;

pub mod ca;
pub mod names;
pub mod options;
pub mod umad;
pub mod verbs;

use ca::{CaInfo, Layout};
use options::Command;

/// `ibstat` with these arguments (program name first): prints device and port status, as
/// infiniband-diags' tool does, and exits as it does.
pub fn ibstat(args: Vec<OsString>) -> ExitCode {
    cli::exit_code(run(&args))
}

/// `ibstat`; returns the status the C tool exits with.
fn run(args: &[OsString]) -> i32 {
    let prog = cli::prog_name(args, "ibstat");
    let mut out = Output::new();
    let status = match options::parse(args) {
        Command::Usage { message } => {
            if let Some(message) = message {
                out.error(&message);
            }
            out.error(&options::usage(&prog));
            2
        }
        Command::Version => {
            out.error(&ibdiag::version_line(&prog));
            0
        }
        Command::Show {
            ca,
            port,
            list,
            short,
            port_list,
        } => match select(&mut out, ca) {
            Err(status) => status,
            Ok(selected) if port_list => print_port_guids(&mut out, &selected),
            Ok(selected) if list => {
                for device in &selected {
                    let _ = writeln!(out, "{}", device.name());
                }
                0
            }
            Ok(selected) => print_cas(&mut out, &selected, port, short),
        },
    };
    out.flush();
    status
}

/// A device `ibstat` shows, and where its values come from.
pub(crate) enum Device {
    /// Verbs (and sysfs): a device verbs lists, not InfiniBand (rxe, RoCE).
    Verbs {
        /// Its name.
        name: String,
        /// Its node type name.
        node_type: &'static str,
    },
    /// libibumad: an InfiniBand device, or one only libibumad lists.
    Umad(ibumad::Ca),
}

impl Device {
    /// Its name.
    pub(crate) fn name(&self) -> &str {
        match self {
            Device::Verbs { name, .. } => name,
            Device::Umad(ca) => &ca.name,
        }
    }

    /// Its values; `None` for a device `ibstat` skips silently (node type 0); why they
    /// cannot be read, as `ibstat`'s fatal message.
    pub(crate) fn info(&self) -> Result<Option<CaInfo>, String> {
        match self {
            Device::Verbs { name, node_type } => verbs::query_ca(name, node_type)
                .map(Some)
                .map_err(|err| format!("stat of IB device '{name}' failed: {err}")),
            Device::Umad(ca) => Ok(umad::ca_info(ca)),
        }
    }
}

/// The devices to show, sorted by name: `ca`, or every device if `None`; the status after
/// saying why not if they cannot be listed or `ca` is not one of them.
pub(crate) fn select(out: &mut Output, ca: Option<String>) -> Result<Vec<Device>, i32> {
    let umad: Vec<ibumad::Ca> = ibumad::ca_names()
        .unwrap_or_default()
        .iter()
        .filter_map(|name| ibumad::Ca::get(Some(name)).ok())
        .collect();
    let verbs = match verbs::ca_names() {
        Ok(names) => names,
        Err(_) if !umad.is_empty() => Vec::new(),
        Err(err) => {
            let msg = format!("can't list IB device names: {err}");
            return Err(ibdiag::panic(out, "main", &msg));
        }
    };
    let by_umad = |name: &str| {
        let ca = umad.iter().find(|ca| ca.name == name);
        ca.is_some_and(umad::is_infiniband)
    };
    let mut devices: Vec<Device> = verbs
        .into_iter()
        .filter(|(name, _)| !by_umad(name))
        .map(|(name, node_type)| Device::Verbs { name, node_type })
        .collect();
    for ca in umad {
        if umad::is_infiniband(&ca) || !devices.iter().any(|d| d.name() == ca.name) {
            devices.push(Device::Umad(ca));
        }
    }
    devices.sort_by(|a, b| a.name().cmp(b.name()));
    let Some(ca) = ca else {
        return Ok(devices);
    };
    match devices.into_iter().find(|d| d.name() == ca) {
        Some(found) => Ok(vec![found]),
        None => Err(ibdiag::panic(
            out,
            "main",
            &format!("'{ca}' IB device can't be found"),
        )),
    }
}

/// `-p`: the non-zero port GUIDs of the devices.
fn print_port_guids(out: &mut Output, selected: &[Device]) -> i32 {
    for device in selected {
        let guids = match device {
            Device::Verbs { name, .. } => match verbs::port_guids(name) {
                Ok(guids) => guids,
                Err(err) => return ibdiag::panic(out, "main", &format!("can't list ports: {err}")),
            },
            Device::Umad(ca) => ca.ports.iter().map(|p| p.port_guid).collect(),
        };
        for guid in guids.into_iter().filter(|&g| g != 0) {
            let _ = writeln!(out, "0x{guid:016x}");
        }
    }
    0
}

/// The devices with their ports; without ports if `short`; only port `port` if it is not
/// negative (and not `short`).
fn print_cas(out: &mut Output, selected: &[Device], port: i32, short: bool) -> i32 {
    for device in selected {
        let name = device.name();
        let info = match device.info() {
            Ok(Some(info)) => info,
            Ok(None) => continue,
            Err(msg) => return ibdiag::panic(out, "main", &msg),
        };
        let node_type = info.node_type;
        if !short && port >= 0 {
            let Some(p) = info.ports.iter().find(|p| i32::from(p.port) == port) else {
                let max = info.num_ports;
                let msg = format!("{node_type}: '{name}' has no port number {port} - max ({max})");
                ibdiag::warn(out, "ca_stat", &msg);
                let msg = format!("stat of IB device '{name}' failed");
                return ibdiag::panic(out, "main", &msg);
            };
            let _ = writeln!(out, "{node_type}: '{name}'");
            let _ = ca::write_port(out, p, true, Layout::Ibstat);
            continue;
        }
        let _ = ca::write_header(out, &info, Layout::Ibstat);
        if !short {
            for p in &info.ports {
                let _ = ca::write_port(out, p, false, Layout::Ibstat);
            }
        }
    }
    0
}
