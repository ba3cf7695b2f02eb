//! The command line of `ibv_devinfo` (getopt `d:i:lv` with long options): what it asks for,
//! as the C tool's option loop reads it, and the usage text.

use std::ffi::OsString;

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use crate::cli;

/// The options of `ibv_devinfo` (getopt `d:i:lv`, long `ib-dev`, `ib-port`, `list`, `verbose`).
#[derive(Parser, Debug)]
#[command(
    name = "ibv_devinfo",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true
)]
struct Args {
    /// Use IB device DEV (default: every device).
    #[arg(short = 'd', long = "ib-dev", action = ArgAction::Append, allow_hyphen_values = true)]
    ib_dev: Vec<String>,
    /// Use port PORT of the device (default: all ports).
    #[arg(short = 'i', long = "ib-port", action = ArgAction::Append, allow_hyphen_values = true)]
    ib_port: Vec<String>,
    /// Print only the device names.
    #[arg(short = 'l', long = "list", action = ArgAction::Append, num_args = 0, default_missing_value = "")]
    list: Vec<String>,
    /// Print all the attributes of the devices.
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    verbose: u8,
    /// Operands, which ibv_devinfo ignores.
    #[arg(hide = true)]
    operands: Vec<String>,
}

/// What `ibv_devinfo`'s arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `-l`: list the device names.
    List,
    /// Print the usage to stdout and exit with `status`, after `message` on stderr.
    Usage {
        /// The exit status.
        status: i32,
        /// The getopt message for a bad option.
        message: Option<String>,
    },
    /// Print devices.
    Show {
        /// `-d`: only this device.
        device: Option<String>,
        /// `-i`: only this port (0 for all), truncated to 8 bits as the C tool does.
        port: u8,
        /// `-v`.
        verbose: bool,
    },
}

/// The options of `ibv_devinfo` that take a value.
const WITH_VALUE: &[(char, &str)] = &[('d', "ib-dev"), ('i', "ib-port")];

/// Parses `ibv_devinfo`'s arguments (with the program name first) like its getopt loop:
/// `-l` acts where it stands, so a `-i` with a value that is not positive before it gives
/// the usage and status 1, after it is never read.
pub fn parse(args: &[OsString]) -> Command {
    let prog = cli::prog_name(args, "ibv_devinfo");
    let usage = |err: clap::Error| Command::Usage {
        status: -1,
        message: Some(cli::getopt_message(&prog, &Args::command(), args, &err)),
    };
    let matches = match Args::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err)
            if cli::acting_before_error(args, &err, &[('l', "list")], WITH_VALUE).is_some() =>
        {
            return Command::List
        }
        Err(err) => return usage(err),
    };
    let parsed = match Args::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(err) => return usage(err),
    };
    let first_list = matches.indices_of("list").and_then(|mut i| i.next());
    let ports: Vec<(usize, i32)> = matches
        .indices_of("ib_port")
        .map(|i| i.collect::<Vec<usize>>())
        .unwrap_or_default()
        .into_iter()
        // strtol into an int, as C assigns it.
        .zip(parsed.ib_port.iter().map(|v| cli::strtol(v) as i32))
        .collect();
    let first_bad_port = ports.iter().find(|(_, p)| *p <= 0).map(|(i, _)| *i);
    match (first_list, first_bad_port) {
        (Some(list), Some(bad)) if list < bad => return Command::List,
        (Some(_), None) => return Command::List,
        (_, Some(_)) => {
            return Command::Usage {
                status: 1,
                message: None,
            }
        }
        (None, None) => {}
    }
    Command::Show {
        device: parsed.ib_dev.last().cloned(),
        // print_hca_cap takes the port as uint8_t.
        port: ports.last().map_or(0, |(_, p)| *p as u8),
        verbose: parsed.verbose > 0,
    }
}

/// The usage `ibv_devinfo` prints to stdout.
pub fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog}             print the ca attributes\n\
         \n\
         Options:\n\
         \x20 -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n\
         \x20 -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n\
         \x20 -l, --list             print only the IB devices names\n\
         \x20 -v, --verbose          print all the attributes of the IB device(s)\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_text() {
        assert_eq!(usage("ibv_devinfo"), USAGE);
    }

    fn parsed(args: &[&str]) -> Command {
        let args: Vec<OsString> = std::iter::once("ibv_devinfo")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        parse(&args)
    }

    fn show(device: Option<&str>, port: u8, verbose: bool) -> Command {
        Command::Show {
            device: device.map(str::to_owned),
            port,
            verbose,
        }
    }

    #[test]
    fn arguments() {
        let usage1 = Command::Usage {
            status: 1,
            message: None,
        };
        assert_eq!(parsed(&[]), show(None, 0, false));
        assert_eq!(parsed(&["-v", "-d", "rxe0"]), show(Some("rxe0"), 0, true));
        assert_eq!(parsed(&["-drxe0", "-i1"]), show(Some("rxe0"), 1, false));
        assert_eq!(
            parsed(&["--ib-dev=a", "-d", "b"]),
            show(Some("b"), 0, false)
        );
        assert_eq!(parsed(&["--ib-port", "0x2"]), show(None, 2, false));
        assert_eq!(parsed(&["-i", "257"]), show(None, 1, false));
        assert_eq!(parsed(&["--verb", "operand"]), show(None, 0, true));
        assert_eq!(parsed(&["-i", "0"]), usage1);
        assert_eq!(parsed(&["-i", "-1"]), usage1);
        assert_eq!(parsed(&["-i", "x"]), usage1);
        assert_eq!(parsed(&["-l"]), Command::List);
        assert_eq!(parsed(&["-l", "-i", "0"]), Command::List);
        assert_eq!(parsed(&["-i", "0", "-l"]), usage1);
        assert_eq!(parsed(&["-vl", "-d", "x"]), Command::List);
        assert_eq!(
            parsed(&["-x"]),
            Command::Usage {
                status: -1,
                message: Some("ibv_devinfo: invalid option -- 'x'".to_owned()),
            }
        );
        assert_eq!(
            parsed(&["--help"]),
            Command::Usage {
                status: -1,
                message: Some("ibv_devinfo: unrecognized option '--help'".to_owned()),
            }
        );
    }

    const USAGE: &str = "\
        Usage: ibv_devinfo             print the ca attributes\n\
        \n\
        Options:\n\
        \x20 -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n\
        \x20 -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n\
        \x20 -l, --list             print only the IB devices names\n\
        \x20 -v, --verbose          print all the attributes of the IB device(s)\n\
    ";
}
