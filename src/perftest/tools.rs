//! The entry points of the eight programs: parse the command line, run the test, print
//! what failed, exit with perftest's status.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;

use crate::cli::Output;

use super::options::{Command, Options};
use super::session;
use super::types::Test;

/// Runs `test` with the command line `argv` (program name first): the whole program
/// behind each example. Exits with status 0 on success and 1 on any failure (and, as
/// perftest, after `-h` and `-V`).
fn run(test: Test, argv: Vec<OsString>) -> ExitCode {
    let mut out = Output::new();
    let ok = match Options::parse(test, &argv) {
        Ok(Command::Print(text)) => {
            out.write_str(&text).ok();
            false
        }
        Ok(Command::Run(o)) => match session::run(*o, None, &mut out) {
            Ok(()) => true,
            Err(e) => {
                out.error(&e.to_string());
                false
            }
        },
        Err(e) => {
            out.error(&e.to_string());
            false
        }
    };
    out.flush();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `ib_send_bw` with the command line `args` (program name first).
pub fn ib_send_bw(args: Vec<OsString>) -> ExitCode {
    run(Test::SendBw, args)
}

/// `ib_write_bw` with the command line `args` (program name first).
pub fn ib_write_bw(args: Vec<OsString>) -> ExitCode {
    run(Test::WriteBw, args)
}

/// `ib_read_bw` with the command line `args` (program name first).
pub fn ib_read_bw(args: Vec<OsString>) -> ExitCode {
    run(Test::ReadBw, args)
}

/// `ib_atomic_bw` with the command line `args` (program name first).
pub fn ib_atomic_bw(args: Vec<OsString>) -> ExitCode {
    run(Test::AtomicBw, args)
}

/// `ib_send_lat` with the command line `args` (program name first).
pub fn ib_send_lat(args: Vec<OsString>) -> ExitCode {
    run(Test::SendLat, args)
}

/// `ib_write_lat` with the command line `args` (program name first).
pub fn ib_write_lat(args: Vec<OsString>) -> ExitCode {
    run(Test::WriteLat, args)
}

/// `ib_read_lat` with the command line `args` (program name first).
pub fn ib_read_lat(args: Vec<OsString>) -> ExitCode {
    run(Test::ReadLat, args)
}

/// `ib_atomic_lat` with the command line `args` (program name first).
pub fn ib_atomic_lat(args: Vec<OsString>) -> ExitCode {
    run(Test::AtomicLat, args)
}
