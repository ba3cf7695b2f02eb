//! The command line of `ibstat` (getopt `lspz:vdhV` with infiniband-diags' long names):
//! what it asks for, as the C tool's option loop reads it, and the usage text.

use std::ffi::OsString;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use crate::cli;

/// The options of `ibstat` (getopt `lspz:vdhV` with infiniband-diags' long names).
#[derive(Parser, Debug)]
#[command(
    name = "ibstat",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true
)]
struct Args {
    /// List the device names only.
    #[arg(short = 'l', long = "list_of_cas", action = ArgAction::Count)]
    list: u8,
    /// Print the devices without their ports.
    #[arg(short = 's', long = "short", action = ArgAction::Count)]
    short: u8,
    /// Print the port GUIDs only.
    #[arg(short = 'p', long = "port_list", action = ArgAction::Count)]
    port_list: u8,
    /// An ibdiag config file (read by the C tool; no setting of it affects ibstat).
    #[arg(short = 'z', long = "config", action = ArgAction::Append, allow_hyphen_values = true)]
    config: Vec<String>,
    /// More verbose (no effect on ibstat).
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    verbose: u8,
    /// More debug output (no effect on stdout).
    #[arg(short = 'd', long = "debug", action = ArgAction::Count)]
    debug: u8,
    /// Print the usage.
    #[arg(short = 'h', long = "help", action = ArgAction::Append, num_args = 0, default_missing_value = "")]
    help: Vec<String>,
    /// Print the version.
    #[arg(short = 'V', long = "version", action = ArgAction::Append, num_args = 0, default_missing_value = "")]
    version: Vec<String>,
    /// `<ca_name> [portnum]`; more are ignored.
    #[arg(hide = true)]
    operands: Vec<String>,
}

/// What `ibstat`'s arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Print the usage to stderr (after `message`) and exit with status 2.
    Usage {
        /// The getopt message for a bad option.
        message: Option<String>,
    },
    /// `-V`: print the version to stderr, exit 0.
    Version,
    /// Print devices.
    Show {
        /// The device operand.
        ca: Option<String>,
        /// The port operand (`strtol`, as an int); -1 without one.
        port: i32,
        /// `-l`.
        list: bool,
        /// `-s`.
        short: bool,
        /// `-p`.
        port_list: bool,
    },
}

/// Parses `ibstat`'s arguments (with the program name first) like its getopt loop: the first
/// of `-h` and `-V` acts.
pub fn parse(args: &[OsString]) -> Command {
    let prog = cli::prog_name(args, "ibstat");
    let usage = |err: clap::Error| Command::Usage {
        message: Some(cli::getopt_message(&prog, &Args::command(), args, &err)),
    };
    let matches = match Args::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err) => {
            let acting = [('h', "help"), ('V', "version")];
            return match cli::acting_before_error(args, &err, &acting, &[]) {
                Some('V') => Command::Version,
                Some(_) => Command::Usage { message: None },
                None => usage(err),
            };
        }
    };
    let parsed = match Args::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(err) => return usage(err),
    };
    let first = |id: &str| matches.indices_of(id).and_then(|mut i| i.next());
    match (first("help"), first("version")) {
        (Some(h), Some(v)) if v < h => return Command::Version,
        (Some(_), _) => return Command::Usage { message: None },
        (None, Some(_)) => return Command::Version,
        (None, None) => {}
    }
    let mut operands = parsed.operands.into_iter();
    let ca = operands.next();
    // strtol into an int, as C assigns it.
    let port = operands.next().map_or(-1, |p| cli::strtol(&p) as i32);
    Command::Show {
        ca,
        port,
        list: parsed.list > 0,
        short: parsed.short > 0,
        port_list: parsed.port_list > 0,
    }
}

/// The usage `ibstat` prints to stderr.
pub fn usage(prog: &str) -> String {
    format!(
        "\nUsage: {prog} [options] [<ca_name> [portnum]]\n\n\
         Options:\n\
         \x20 --list_of_cas, -l       print only the names of the devices\n\
         \x20 --short, -s             print the devices without their ports\n\
         \x20 --port_list, -p         print only the port GUIDs\n\
         \x20 --config, -z <config>   an ibdiag config file (accepted; ibstat uses none of it)\n\
         \x20 --verbose, -v           more verbose (no effect)\n\
         \x20 --debug, -d             raise the debug level (no effect)\n\
         \x20 --help, -h              print this help\n\
         \x20 --version, -V           print the version\n\n\
         Examples:\n\
         \x20 {prog} -l        # the device names\n\
         \x20 {prog} mlx5_0 1  # port 1 of mlx5_0\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Command {
        let args: Vec<OsString> = std::iter::once("ibstat")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        parse(&args)
    }

    fn show(ca: Option<&str>, port: i32, flags: &str) -> Command {
        Command::Show {
            ca: ca.map(str::to_owned),
            port,
            list: flags.contains('l'),
            short: flags.contains('s'),
            port_list: flags.contains('p'),
        }
    }

    #[test]
    fn arguments() {
        assert_eq!(parsed(&[]), show(None, -1, ""));
        assert_eq!(parsed(&["rxe0"]), show(Some("rxe0"), -1, ""));
        assert_eq!(parsed(&["rxe0", "1", "more"]), show(Some("rxe0"), 1, ""));
        assert_eq!(parsed(&["rxe0", "x"]), show(Some("rxe0"), 0, ""));
        assert_eq!(parsed(&["rxe0", "--", "-1"]), show(Some("rxe0"), -1, ""));
        assert_eq!(
            parsed(&["-ls", "-p", "-z", "cfg", "-vd"]),
            show(None, -1, "lsp")
        );
        assert_eq!(parsed(&["--short", "--list_of_cas"]), show(None, -1, "ls"));
        assert_eq!(parsed(&["-h"]), Command::Usage { message: None });
        assert_eq!(parsed(&["-V"]), Command::Version);
        assert_eq!(parsed(&["-V", "-h"]), Command::Version);
        assert_eq!(parsed(&["-h", "-V"]), Command::Usage { message: None });
        assert_eq!(
            parsed(&["rxe0", "-1"]),
            Command::Usage {
                message: Some("ibstat: invalid option -- '1'".to_owned()),
            }
        );
        assert_eq!(
            parsed(&["--ver"]),
            Command::Usage {
                message: Some(
                    "ibstat: option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
                        .to_owned()
                ),
            }
        );
    }
}
