//! `ibv_devinfo` and `ibv_devices` of rdma-core's libibverbs utilities, with the same output
//! byte for byte and the same exit status.
//!
//! Everything comes from verbs except `board_id`, which `ibv_devinfo` reads from sysfs.
//! The program `ibv_devinfo` is here; its command line is in [`options`], the device block
//! in [`hca`], the port blocks in [`port`], the names of values in [`names`].

use std::ffi::OsString;
use std::fmt::Write;
use std::process::ExitCode;

use rdma_verbs::{Context, Device, DeviceList, Transport};

use crate::cli::{self, Output};
use crate::sysfs;

mod caps;
pub mod devices;
pub mod hca;
pub mod inet_ntop;
pub mod names;
pub mod options;
pub mod port;
#[cfg(test)]
mod tests;

pub use devices::ibv_devices;

use hca::Hca;
use options::Command;

/// `ibv_devinfo` with these arguments (program name first): prints device and port
/// attributes, as rdma-core's tool does, and exits as it does.
pub fn ibv_devinfo(args: Vec<OsString>) -> ExitCode {
    cli::exit_code(run(&args))
}

/// `ibv_devinfo`; returns the status C's `main` returns.
fn run(args: &[OsString]) -> i32 {
    let mut out = Output::new();
    let status = match options::parse(args) {
        Command::Usage { status, message } => {
            if let Some(message) = message {
                out.error(&message);
            }
            let prog = cli::prog_name(args, "ibv_devinfo");
            let _ = out.write_str(&options::usage(&prog));
            status
        }
        Command::List => list(&mut out),
        Command::Show {
            device,
            port,
            verbose,
        } => show(&mut out, device.as_deref(), port, verbose),
    };
    out.flush();
    status
}

/// The devices, or the status after saying why they cannot be listed.
fn devices(out: &mut Output) -> Result<DeviceList, i32> {
    DeviceList::new().map_err(|err| {
        let text = cli::verbs_error_text(&err);
        out.error(&format!("Failed to get IB devices list: {text}"));
        -1
    })
}

/// `-l`: the number of devices and their names.
fn list(out: &mut Output) -> i32 {
    let list = match devices(out) {
        Ok(list) => list,
        Err(status) => return status,
    };
    let n = list.len();
    let _ = writeln!(out, "{n} HCA{} found:", if n == 1 { "" } else { "s" });
    for dev in list.iter() {
        let _ = writeln!(out, "\t{}", dev.name());
    }
    let _ = writeln!(out);
    0
}

/// Prints `device` (every device if `None`), only `port` of it if not 0; the statuses of
/// the devices or'ed together, as the C tool does.
fn show(out: &mut Output, device: Option<&str>, port: u8, verbose: bool) -> i32 {
    let list = match devices(out) {
        Ok(list) => list,
        Err(status) => return status,
    };
    match device {
        Some(name) => match list.iter().find(|d| d.name() == name) {
            Some(dev) => print_hca(out, &dev, port, verbose),
            None => {
                out.error(&format!("IB device '{name}' wasn't found"));
                -1
            }
        },
        None if list.is_empty() => {
            out.error("No IB devices found");
            -1
        }
        None => list.iter().fold(0, |status, dev| {
            status | print_hca(out, &dev, port, verbose)
        }),
    }
}

/// Prints one device as `print_hca_cap` does; returns its status (0, or 1 to 4 as the C
/// tool, or the errno of a failed port query).
fn print_hca(out: &mut Output, dev: &Device<'_>, port: u8, verbose: bool) -> i32 {
    let Ok(ctx) = dev.open() else {
        out.error("Failed to open device");
        return 1;
    };
    let Ok(attr) = ctx.query_device() else {
        out.error("Failed to query device props");
        return 2;
    };
    if port != 0 && port > attr.phys_port_cnt {
        out.error("Invalid port requested for device");
        return 4;
    }
    let board_id = sysfs::read_ibv(dev.name(), "board_id");
    let hca = Hca {
        name: dev.name(),
        transport: dev.transport(),
        attr: &attr,
        board_id: board_id.as_deref(),
        num_comp_vectors: ctx.num_comp_vectors(),
    };
    let _ = hca::write(out, &hca, verbose);
    for p in 1..=attr.phys_port_cnt {
        if port != 0 && p != port {
            continue;
        }
        if let Err(status) = print_port(out, &ctx, p, hca.transport, verbose) {
            return status;
        }
    }
    0
}

/// Prints one port of an open device; the status on failure (the errno of a failed port
/// query, or -1).
fn print_port(
    out: &mut Output,
    ctx: &Context,
    port: u8,
    transport: Transport,
    verbose: bool,
) -> Result<(), i32> {
    let attr = ctx.query_port(port).map_err(|err| {
        out.error(&format!("Failed to query port {port} props"));
        err.raw_os_error().unwrap_or(-1)
    })?;
    let gids = if verbose {
        ctx.gid_table(port).map_err(|err| {
            let text = cli::verbs_error_text(&err);
            out.error(&format!("Failed to query gid to port {port}: {text}"));
            -1
        })?
    } else {
        Vec::new()
    };
    let _ = port::write(out, port, &attr, &gids, transport, verbose);
    Ok(())
}
