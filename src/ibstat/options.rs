//! The command line of `ibstat` (getopt `lspz:vdhV` with infiniband-diags' long names):
//! what it asks for, as the C tool's option loop reads it, and the usage text.

use std::ffi::OsString;

use crate::cli::{self, getopt_long, Item, LongOpt};

/// The long options of `ibstat` (its own, then the common ones it keeps, as
/// infiniband-diags orders them).
const LONG: &[LongOpt] = &[
    LongOpt::flag("list_of_cas", 'l'),
    LongOpt::flag("short", 's'),
    LongOpt::flag("port_list", 'p'),
    LongOpt::value("config", 'z'),
    LongOpt::flag("verbose", 'v'),
    LongOpt::flag("debug", 'd'),
    LongOpt::flag("help", 'h'),
    LongOpt::flag("version", 'V'),
];

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

/// Parses `ibstat`'s arguments (with the program name first) like its getopt loop: `-h`
/// and `-V` act where they stand.
pub fn parse(args: &[OsString]) -> Command {
    let prog = cli::prog_name(args, "ibstat");
    let parsed = getopt_long(&cli::arg_strings(args), "lspz:vdhV", LONG);
    let (mut list, mut short, mut port_list) = (false, false, false);
    for item in parsed.items {
        match item {
            Item::Opt('l', _) => list = true,
            Item::Opt('s', _) => short = true,
            Item::Opt('p', _) => port_list = true,
            Item::Opt('h', _) => return Command::Usage { message: None },
            Item::Opt('V', _) => return Command::Version,
            // -z (a config file), -v and -d change nothing ibstat prints.
            Item::Opt(..) => {}
            Item::Error(err) => {
                return Command::Usage {
                    message: Some(err.message(&prog)),
                }
            }
        }
    }
    let mut operands = parsed.operands.into_iter();
    let ca = operands.next();
    // strtol into an int, as C assigns it.
    let port = operands.next().map_or(-1, |p| cli::strtol(&p) as i32);
    Command::Show {
        ca,
        port,
        list,
        short,
        port_list,
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
