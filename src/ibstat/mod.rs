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
//! The program is here; its command line is in [`options`], where the values come from in
//! [`verbs`], what it prints in [`ca`] and [`names`].

use std::ffi::OsString;
use std::fmt::Write;
use std::process::ExitCode;

use crate::cli::{self, Output};
use crate::ibdiag;

pub mod ca;
pub mod names;
pub mod options;
pub mod verbs;

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
                for (name, _) in &selected {
                    let _ = writeln!(out, "{name}");
                }
                0
            }
            Ok(selected) => print_cas(&mut out, &selected, port, short),
        },
    };
    out.flush();
    status
}

/// The devices to show, with their node type names: `ca`, or every device if `None`; the
/// status after saying why not if they cannot be listed or `ca` is not one of them.
fn select(out: &mut Output, ca: Option<String>) -> Result<Vec<(String, &'static str)>, i32> {
    let names = verbs::ca_names()
        .map_err(|err| ibdiag::panic(out, "main", &format!("can't list IB device names: {err}")))?;
    let Some(ca) = ca else {
        return Ok(names);
    };
    match names.into_iter().find(|(name, _)| *name == ca) {
        Some(found) => Ok(vec![found]),
        None => Err(ibdiag::panic(
            out,
            "main",
            &format!("'{ca}' IB device can't be found"),
        )),
    }
}

/// `-p`: the non-zero port GUIDs of the devices.
fn print_port_guids(out: &mut Output, selected: &[(String, &'static str)]) -> i32 {
    for (name, _) in selected {
        match verbs::port_guids(name) {
            Ok(guids) => {
                for guid in guids.into_iter().filter(|&g| g != 0) {
                    let _ = writeln!(out, "0x{guid:016x}");
                }
            }
            Err(err) => return ibdiag::panic(out, "main", &format!("can't list ports: {err}")),
        }
    }
    0
}

/// The devices with their ports; without ports if `short`; only port `port` if it is not
/// negative (and not `short`).
fn print_cas(out: &mut Output, selected: &[(String, &'static str)], port: i32, short: bool) -> i32 {
    for (name, node_type) in selected {
        let info = match verbs::query_ca(name, node_type) {
            Ok(info) => info,
            Err(err) => {
                let msg = format!("stat of IB device '{name}' failed: {err}");
                return ibdiag::panic(out, "main", &msg);
            }
        };
        if !short && port >= 0 {
            let Some(p) = info.ports.iter().find(|p| i32::from(p.port) == port) else {
                let max = info.num_ports;
                let msg = format!("{node_type}: '{name}' has no port number {port} - max ({max})");
                ibdiag::warn(out, "ca_stat", &msg);
                let msg = format!("stat of IB device '{name}' failed");
                return ibdiag::panic(out, "main", &msg);
            };
            let _ = writeln!(out, "{node_type}: '{name}'");
            let _ = ca::write_port(out, p, true);
            continue;
        }
        let _ = ca::write_header(out, &info);
        if !short {
            for p in &info.ports {
                let _ = ca::write_port(out, p, false);
            }
        }
    }
    0
}
