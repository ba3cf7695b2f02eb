//! `perftest`: the guide's one command for a first measurement between two hosts. Without
//! `-s` it is the server; `-s HOST` makes it the client of the server on HOST. Both ends
//! run the same two tests in the same order: RC write bandwidth (`ib_write_bw`), then send
//! latency (`ib_send_lat`), each through perftest's own session (options, exchange, loops
//! and tables), so each prints its banner and table as that tool does.
//!
//! - `-n SIZE`: the message size of both tests (perftest's `-s`, with its K and M
//!   suffixes); default each tool's (64 KiB for bandwidth, 2 bytes for latency).
//! - `-t SECONDS`: run each test for that long (perftest's `-D`, the margins a quarter of
//!   it); default each tool's iteration count (5000 writes, 1000 round trips).
//! - `-d DEV`, `-i PORT`, `-x GID_INDEX`, `-p PORT`: perftest's device, device port, GID
//!   index and TCP port (default 18515).
//!
//! Both tests meet on the one TCP port: the server listens once, before the first test,
//! and takes the client's second connection from the same listener, so the client's second
//! connect finds it however the two ends' first tests end. The version exchange carries
//! the tests' parameters, so ends started with other sizes or durations fail at once.
//!
//! `-h` prints the usage on stdout and exits with 0. Every failure (a bad option or value,
//! an operand, a host that cannot be reached, a failed test) prints one line,
//! `perftest: WHY`, on stderr and exits with 2.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::net::TcpListener;
use std::process::ExitCode;

use crate::cli::{self, getopt_long, Item, LongOpt, Output};

use super::options::{Args, Options};
use super::peer::Peer;
use super::session;
use super::types::Test;

/// The tests `perftest` runs, in order.
const TESTS: [Test; 2] = [Test::WriteBw, Test::SendLat];

/// The options: each letter, its long name, its value's name and what it does.
const OPTIONS: &[(char, &str, &str, &str)] = &[
    (
        's',
        "server",
        "HOST",
        "be the client of the server on HOST (default: be the server)",
    ),
    (
        'n',
        "size",
        "SIZE",
        "message size in bytes, K and M suffixes (default: each test's)",
    ),
    (
        't',
        "time",
        "SECONDS",
        "run each test for SECONDS (default: each test's iterations)",
    ),
    (
        'd',
        "ib-dev",
        "DEV",
        "use RDMA device DEV (default: the first one)",
    ),
    (
        'i',
        "ib-port",
        "PORT",
        "use port PORT of the device (default 1)",
    ),
    (
        'x',
        "gid-index",
        "INDEX",
        "use GID index INDEX (default: the best one)",
    ),
    (
        'p',
        "port",
        "PORT",
        "TCP port of the exchange (default 18515)",
    ),
    ('h', "help", "", "print this help"),
];

/// What `perftest`'s arguments ask for.
#[derive(Debug)]
enum Command {
    /// `-h`: print the usage on stdout.
    Help,
    /// Run the tests with these options, in [`TESTS`]' order.
    Run(Vec<Options>),
}

/// The long options of `perftest`.
fn long_options() -> Vec<LongOpt> {
    OPTIONS
        .iter()
        .map(|&(letter, name, value, _)| {
            if value.is_empty() {
                LongOpt::flag(name, letter)
            } else {
                LongOpt::value(name, letter)
            }
        })
        .collect()
}

/// Parses `perftest`'s arguments (program name first); the error is the message, without
/// the program name. `-h` acts where it stands.
fn parse(args: &[OsString]) -> Result<Command, String> {
    let long = long_options();
    let parsed = getopt_long(&cli::arg_strings(args), &cli::optstring_of(&long), &long);
    let mut a = Args::default();
    for item in parsed.items {
        let (letter, value) = match item {
            Item::Opt(letter, value) => (letter, value),
            Item::Error(err) => return Err(err.to_string()),
        };
        match letter {
            'h' => return Ok(Command::Help),
            's' => a.hosts = value.into_iter().collect(),
            'n' => a.size = value,
            't' => a.duration = value,
            'd' => a.ib_dev = value,
            'i' => a.ib_port = value,
            'x' => a.gid_index = value,
            'p' => a.port = value,
            _ => {}
        }
    }
    if let Some(extra) = parsed.operands.first() {
        return Err(format!("unexpected operand '{extra}'"));
    }
    let tests = TESTS
        .iter()
        .map(|&test| Options::from_args(test, &a).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok(Command::Run(tests))
}

/// The usage `-h` prints: every option.
fn usage(prog: &str) -> String {
    let mut text = format!(
        "Usage: {prog} [options]\n\n\
         RC write bandwidth, then send latency, between this host and another: without -s\n\
         the server, with -s HOST the client. Both ends take the same -n and -t.\n\n\
         Options:\n"
    );
    for &(letter, name, value, help) in OPTIONS {
        let left = format!("-{letter}, --{name} {value}");
        let _ = writeln!(text, "  {left:<26}{help}");
    }
    let _ = write!(
        text,
        "\nExample, 1 KiB messages for 60 s per test:\n\
         \x20 {prog}                                # on 192.168.1.2, the server\n\
         \x20 {prog} -s 192.168.1.2 -n 1024 -t 60   # on the other host, the client\n"
    );
    text
}

/// Runs the tests of `tests` one after the other; a server listens once for both.
fn run_tests(tests: Vec<Options>, out: &mut Output) -> super::types::Result<()> {
    let listener: Option<TcpListener> = match tests.first() {
        Some(o) if !o.connection.is_client() => Some(Peer::listen(o.connection.port)?),
        _ => None,
    };
    for o in tests {
        session::run(o, listener.as_ref(), out)?;
    }
    Ok(())
}

/// `perftest` with these arguments (program name first): runs both tests as the server or
/// the client; exits as the module doc says.
pub fn perftest(args: Vec<OsString>) -> ExitCode {
    let prog = cli::prog_name(&args, "perftest");
    let mut out = Output::new();
    let failure = match parse(&args) {
        Ok(Command::Help) => {
            out.write_str(&usage(&prog)).ok();
            None
        }
        Ok(Command::Run(tests)) => run_tests(tests, &mut out).err().map(|e| e.to_string()),
        Err(message) => Some(message),
    };
    let status = match failure {
        None => 0,
        Some(message) => {
            // One line: perftest's messages may span several, or start with blanks.
            let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
            out.error(&format!("{prog}: {line}"));
            2
        }
    };
    out.flush();
    cli::exit_code(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Result<Command, String> {
        let args: Vec<OsString> = std::iter::once("perftest")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        parse(&args)
    }

    fn tests_of(args: &[&str]) -> Vec<Options> {
        match parsed(args) {
            Ok(Command::Run(tests)) => tests,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn the_guides_line() {
        let tests = tests_of(&["-s", "192.168.1.2", "-n", "1024", "-t", "60"]);
        let names: Vec<Test> = tests.iter().map(|o| o.test).collect();
        assert_eq!(names, TESTS);
        for o in &tests {
            assert_eq!(o.connection.server.as_deref(), Some("192.168.1.2"));
            assert_eq!(o.connection.port, 18515);
            assert_eq!(o.size.size, 1024);
            assert_eq!(o.traffic.duration.map(|d| d.seconds), Some(60));
        }
    }

    #[test]
    fn server_and_device_options() {
        let tests = tests_of(&["-d", "rxe0", "-i", "1", "-x", "1", "-p", "20000"]);
        for o in &tests {
            assert!(!o.connection.is_client());
            assert_eq!(o.connection.port, 20000);
            assert_eq!(o.device.ib_dev.as_deref(), Some("rxe0"));
            assert_eq!(o.device.gid_index, Some(1));
            assert_eq!(o.traffic.duration, None);
        }
    }

    #[test]
    fn help_and_errors() {
        assert!(matches!(parsed(&["-h"]), Ok(Command::Help)));
        assert!(matches!(parsed(&["-n", "1", "--help"]), Ok(Command::Help)));
        let error = |args: &[&str]| parsed(args).unwrap_err();
        assert_eq!(error(&["-z"]), "invalid option -- 'z'");
        assert_eq!(error(&["--bogus"]), "unrecognized option '--bogus'");
        assert_eq!(error(&["-t"]), "option requires an argument -- 't'");
        assert_eq!(error(&["host"]), "unexpected operand 'host'");
        assert!(error(&["-t", "x"]).contains("should be an integer"));
        assert!(error(&["-n", "0"]).contains("Message Size"));
        assert!(error(&["-p", "70000"]).contains("Port should be between"));
    }

    #[test]
    fn usage_lists_every_option() {
        let text = usage("perftest");
        for &(letter, name, _, _) in OPTIONS {
            assert!(text.contains(&format!("-{letter}, --{name}")), "{text}");
        }
    }
}
