//! The command line of `ibv_devinfo` (getopt `d:i:lv` with long options): what it asks for,
//! as the C tool's option loop reads it, and the usage text.

use std::ffi::OsString;

use crate::cli::{self, getopt_long, Item, LongOpt};

/// The long options of `ibv_devinfo`, in the C tool's order (the order of glibc's
/// ambiguity messages).
const LONG: &[LongOpt] = &[
    LongOpt::value("ib-dev", 'd'),
    LongOpt::value("ib-port", 'i'),
    LongOpt::flag("verbose", 'v'),
    LongOpt::flag("list", 'l'),
];

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

/// Parses `ibv_devinfo`'s arguments (with the program name first) like its getopt loop:
/// `-l` acts where it stands, and a `-i` whose value is not positive gives the usage and
/// status 1 where it stands.
pub fn parse(args: &[OsString]) -> Command {
    let prog = cli::prog_name(args, "ibv_devinfo");
    let parsed = getopt_long(&cli::arg_strings(args), "d:i:lv", LONG);
    let mut device = None;
    let mut port = 0;
    let mut verbose = false;
    for item in parsed.items {
        match item {
            Item::Opt('d', value) => device = value,
            Item::Opt('i', value) => {
                // strtol into an int, as C assigns it.
                let p = cli::strtol(value.as_deref().unwrap_or("")) as i32;
                if p <= 0 {
                    return Command::Usage {
                        status: 1,
                        message: None,
                    };
                }
                // print_hca_cap takes the port as uint8_t.
                port = p as u8;
            }
            Item::Opt('l', _) => return Command::List,
            Item::Opt(_, _) => verbose = true,
            Item::Error(err) => {
                return Command::Usage {
                    status: -1,
                    message: Some(err.message(&prog)),
                }
            }
        }
    }
    Command::Show {
        device,
        port,
        verbose,
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
