//! `ibdevices [CA]`: every device (or the device `CA` alone) with what identifies it and
//! how each of its ports links, in `ibstat`'s layout and spelling. No C tool of that name
//! exists; it prints the fields a guide asks for, for example rxe0 on `lo` (Linux 6.1):
//!
//! ```text
//! CA 'rxe0'
//!         CA type:
//!         Number of ports: 1
//!         Firmware version:
//!         Node GUID: 0x020000fffe000000
//!         System image GUID: 0x020000fffe000000
//!         Port 1:
//!                 State: Active
//!                 Physical state: LinkUp
//!                 Rate: 2.5
//!                 Width: 1X
//!                 Active speed: SDR (2.5 Gb/s per lane)
//! ```
//!
//! (indented with one tab, ports' fields with two). Every field but the last two is
//! `ibstat`'s, with its value: the same devices in the same order, a switch's header and
//! type line named `Switch` as there. The two it adds:
//!
//! - `Width`: the active width, its lanes followed by `X` as the kernel's sysfs `rate` file
//!   spells it: `1X`, `2X`, `4X`, `8X` or `12X`;
//! - `Active speed`: the active speed's IBTA name and the data rate of one lane in Gb/s as
//!   the kernel counts it for that `rate` file (and so for `Rate`): `SDR (2.5 Gb/s per
//!   lane)`, `DDR (5 ...)`, `QDR (10 ...)`, `FDR10 (10 ...)`, `FDR (14 ...)`, `EDR (25 ...)`,
//!   `HDR (50 ...)`, `NDR (100 ...)`. Width times that lane rate is the number `Rate`
//!   shows (FDR10's `Rate` adds `(FDR10)`).
//!
//! Either is `unknown` where its source does not tell (an `Active speed` verbs reports but
//! does not name is `unknown speed (N)`, N its raw value).
//!
//! The sources are `ibstat`'s ([`mod@crate::ibstat`]): verbs, with `ibv_query_port`'s active
//! width and speed, for the devices verbs lists; libibumad for InfiniBand devices and those
//! only libibumad lists (the simulated fabric of `scripts/with-ibsim`). libibumad gives a
//! port's rate as a number only; the width and speed are then those the port's sysfs `rate`
//! file names (`100 Gb/sec (4X EDR)`), read as `ibstat` reads it for FDR10 (so that the
//! simulator's preload answers). The simulator, as kernels before the speed was always
//! named, writes no speed for SDR (`10 Gb/sec (4X)`): a rate file without a speed is read as
//! SDR when its rate is SDR's at its width, else the speed is `unknown`.
//!
//! Exit status and messages as `ibstat`'s: 0 after printing; `-h` prints the usage on
//! stderr and exits with 2, as does a bad option or a second operand after a one-line
//! message; `-V` prints the version line on stderr and exits with 0; an unknown `CA`, or a
//! device that cannot be queried, is an `ibpanic` message and status 255.

use std::ffi::OsString;
use std::process::ExitCode;

use crate::cli::{self, getopt_long, Item, LongOpt, Output};
use crate::ibdiag;
use crate::ibstat::ca::{self, Layout};
use crate::ibstat::select;

/// The long options of `ibdevices`.
const LONG: &[LongOpt] = &[LongOpt::flag("help", 'h'), LongOpt::flag("version", 'V')];

/// What `ibdevices`' arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the usage to stderr (after `message`) and exit with status 2.
    Usage {
        /// Why: a bad option or operand; `None` for `-h`.
        message: Option<String>,
    },
    /// `-V`: print the version to stderr, exit 0.
    Version,
    /// Print the devices: `ca` alone, or every one.
    Show {
        /// The device operand.
        ca: Option<String>,
    },
}

/// Parses `ibdevices`' arguments (with the program name first): `-h` and `-V` act where
/// they stand, as in `ibstat`.
pub fn parse(args: &[OsString]) -> Command {
    let prog = cli::prog_name(args, "ibdevices");
    let parsed = getopt_long(&cli::arg_strings(args), "hV", LONG);
    // Every option acts at once: the first one decides.
    match parsed.items.into_iter().next() {
        Some(Item::Opt('V', _)) => return Command::Version,
        Some(Item::Opt(..)) => return Command::Usage { message: None },
        Some(Item::Error(err)) => {
            return Command::Usage {
                message: Some(err.message(&prog)),
            }
        }
        None => {}
    }
    let mut operands = parsed.operands.into_iter();
    let ca = operands.next();
    match operands.next() {
        Some(extra) => Command::Usage {
            message: Some(format!("{prog}: unexpected operand '{extra}'")),
        },
        None => Command::Show { ca },
    }
}

/// The usage `ibdevices` prints to stderr.
pub fn usage(prog: &str) -> String {
    format!(
        "\nUsage: {prog} [options] [<ca_name>]\n\n\
         Every device with its type, ports, firmware version and GUIDs, and each port's\n\
         state, physical state, rate, width and active speed.\n\n\
         Options:\n\
         \x20 --help, -h              print this help\n\
         \x20 --version, -V           print the version\n\n\
         Examples:\n\
         \x20 {prog}         # every device\n\
         \x20 {prog} mlx5_0  # mlx5_0 alone\n"
    )
}

/// `ibdevices` with these arguments (program name first): prints every device (or the one
/// named) with its ports' width and speed, in `ibstat`'s layout; exits as the module doc
/// says.
pub fn ibdevices(args: Vec<OsString>) -> ExitCode {
    cli::exit_code(run(&args))
}

/// `ibdevices`; returns the status to exit with.
fn run(args: &[OsString]) -> i32 {
    let prog = cli::prog_name(args, "ibdevices");
    let mut out = Output::new();
    let status = match parse(args) {
        Command::Usage { message } => {
            if let Some(message) = message {
                out.error(&message);
            }
            out.error(&usage(&prog));
            2
        }
        Command::Version => {
            out.error(&ibdiag::version_line(&prog));
            0
        }
        Command::Show { ca } => match select(&mut out, ca) {
            Err(status) => status,
            Ok(selected) => print_devices(&mut out, &selected),
        },
    };
    out.flush();
    status
}

/// The devices with their ports; the status.
fn print_devices(out: &mut Output, selected: &[crate::ibstat::Device]) -> i32 {
    for device in selected {
        let info = match device.info() {
            Ok(Some(info)) => info,
            Ok(None) => continue,
            Err(msg) => return ibdiag::panic(out, "main", &msg),
        };
        let _ = ca::write_header(out, &info, Layout::Ibdevices);
        for port in &info.ports {
            let _ = ca::write_port(out, port, false, Layout::Ibdevices);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Command {
        let args: Vec<OsString> = std::iter::once("ibdevices")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        parse(&args)
    }

    fn usage_after(message: &str) -> Command {
        Command::Usage {
            message: Some(message.to_owned()),
        }
    }

    #[test]
    fn arguments() {
        assert_eq!(parsed(&[]), Command::Show { ca: None });
        let rxe0 = Command::Show {
            ca: Some("rxe0".to_owned()),
        };
        assert_eq!(parsed(&["rxe0"]), rxe0);
        assert_eq!(parsed(&["--", "rxe0"]), rxe0);
        assert_eq!(parsed(&["-h"]), Command::Usage { message: None });
        assert_eq!(parsed(&["--help"]), Command::Usage { message: None });
        assert_eq!(parsed(&["-V"]), Command::Version);
        assert_eq!(parsed(&["--vers"]), Command::Version);
        assert_eq!(parsed(&["-V", "-h"]), Command::Version);
        assert_eq!(parsed(&["-hV"]), Command::Usage { message: None });
        assert_eq!(
            parsed(&["-x"]),
            usage_after("ibdevices: invalid option -- 'x'")
        );
        assert_eq!(
            parsed(&["rxe0", "-l"]),
            usage_after("ibdevices: invalid option -- 'l'")
        );
        assert_eq!(
            parsed(&["--short"]),
            usage_after("ibdevices: unrecognized option '--short'")
        );
        assert_eq!(
            parsed(&["rxe0", "1"]),
            usage_after("ibdevices: unexpected operand '1'")
        );
    }

    #[test]
    fn usage_names_the_program() {
        let text = usage("./ibdevices");
        assert!(text.starts_with("\nUsage: ./ibdevices [options] [<ca_name>]\n"));
        assert!(text.contains("  ./ibdevices mlx5_0  # mlx5_0 alone\n"));
    }
}
