//! `ibv_devices` of rdma-core's libibverbs utilities: the devices and their node GUIDs.

use std::ffi::OsString;
use std::fmt::{self, Write};
use std::process::ExitCode;

use rdma_verbs::DeviceList;

use crate::cli::{self, Output};

/// `ibv_devices`: lists the devices and their node GUIDs. Like the C tool, it takes no
/// arguments and ignores any; the status is 1 if the devices cannot be listed.
pub fn ibv_devices(_args: Vec<OsString>) -> ExitCode {
    let mut out = Output::new();
    let list = match DeviceList::new() {
        Ok(list) => list,
        Err(err) => {
            let text = cli::verbs_error_text(&err);
            out.error(&format!("Failed to get IB devices list: {text}"));
            return cli::exit_code(1);
        }
    };
    let devices: Vec<(&str, u64)> = list.iter().map(|d| (d.name(), d.guid())).collect();
    let _ = write(&mut out, &devices);
    out.flush();
    cli::exit_code(0)
}

/// The output of `ibv_devices` for these devices (name and node GUID).
pub fn write(out: &mut impl Write, devices: &[(&str, u64)]) -> fmt::Result {
    writeln!(out, "    {:<16}\t   node GUID", "device")?;
    writeln!(out, "    {:<16}\t----------------", "------")?;
    for (name, guid) in devices {
        writeln!(out, "    {name:<16}\t{guid:016x}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_of_rxe() {
        let mut out = String::new();
        write(&mut out, &[("rxe0", 0x0200_00ff_fe00_0000)]).unwrap();
        assert_eq!(out, DEVICES);
    }

    const DEVICES: &str = "\
        \x20   device          \t   node GUID\n\
        \x20   ------          \t----------------\n\
        \x20   rxe0            \t020000fffe000000\n\
    ";
}
