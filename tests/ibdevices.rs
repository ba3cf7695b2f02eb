//! `ibdevices` on the test device (run through `scripts/with-rdma`; rxe0 on `lo` in CI),
//! read through verbs, against infiniband-diags' `ibstat` field by field
//! (`rdma_verbs_test_kit::ibdevices`): every device, the test device alone, an unknown
//! device; and its options, which exit as `ibstat`'s do. (tests/fabric/ibdevices.rs
//! compares the libibumad path on the simulated fabric.)
//!
//! C `ibstat` is run by absolute path (`rdma_verbs_test_kit::c_tool`), never from `PATH`.
//! Ours is the package's binary, which `cargo test` builds before this test. The device is
//! `$IBVERBS_TEST_DEVICE` (default `rxe0`); without it the tests fail.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use rdma_verbs_test_kit::fabric::Run;
use rdma_verbs_test_kit::ibdevices::assert_agrees;
use rdma_verbs_test_kit::{c_tool, device, open, tool};

/// Runs `program` as `name` with `args`.
fn run(program: PathBuf, name: &str, args: &[&str]) -> Run {
    Command::new(&program)
        .arg0(name)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
        .into()
}

/// Runs C `ibstat` and our `ibdevices` with `args` on the test device (failing if it is not
/// there) and compares them; returns the number of devices they show.
fn agrees(args: &[&str]) -> usize {
    drop(open());
    let c = run(c_tool("ibstat"), "ibstat", args);
    let ours = run(tool("ibdevices"), "ibdevices", args);
    let call = [&["ibdevices"], args].concat().join(" ");
    let devices = assert_agrees(&call, &c, &ours);
    println!("{call}:\n{}", ours.text());
    devices
}

#[test]
fn every_device() {
    assert!(agrees(&[]) >= 1, "no device shown");
}

#[test]
fn the_test_device() {
    assert_eq!(agrees(&[&device()]), 1);
}

#[test]
fn unknown_device() {
    assert_eq!(agrees(&["no-such-device"]), 0);
}

/// `-h`, `-V`, a bad option and a second operand: the status of `ibstat` with the same
/// option (2, 0, 2; `ibstat` takes a port operand, so a bad option stands in for it), nothing
/// on stdout, and on stderr the usage after a one-line message, or the version line.
#[test]
fn options() {
    for (args, ibstat_args, first_line) in [
        (&["-h"][..], &["-h"][..], ""),
        (
            &["-V"],
            &["-V"],
            "ibdevices BUILD VERSION: rdma-verbs-tools ",
        ),
        (&["-x"], &["-x"], "ibdevices: invalid option -- 'x'"),
        (
            &["--port_list"],
            &["--nosuch"],
            "ibdevices: unrecognized option '--port_list'",
        ),
        (&["rxe0", "1"], &["-x"], "ibdevices: unexpected operand '1'"),
    ] {
        let c = run(c_tool("ibstat"), "ibstat", ibstat_args);
        let ours = run(tool("ibdevices"), "ibdevices", args);
        let call = [&["ibdevices"], args].concat().join(" ");
        assert_eq!(ours.status, c.status, "{call}: {}", ours.stderr);
        assert!(ours.stdout.is_empty(), "{call}: prints {}", ours.text());
        let mut lines = ours.stderr.lines();
        assert!(
            lines.next().is_some_and(|l| l.starts_with(first_line)),
            "{call}: stderr does not start with {first_line:?}:\n{}",
            ours.stderr
        );
        if args != ["-V"] {
            let usage = "Usage: ibdevices [options] [<ca_name>]";
            assert!(
                lines.any(|l| l == usage),
                "{call}: no usage:\n{}",
                ours.stderr
            );
        }
    }
}
