//! Each of our tools against the C tool it replaces, side by side on the same device (run through
//! `scripts/with-rdma`; rxe0 on `lo` in CI): same stdout byte for byte, same exit status, a
//! message on stderr exactly when the C tool writes one, and never a panic.
//!
//! The C tools (rdma-core's `ibv_devices` and `ibv_devinfo`, infiniband-diags' `ibstat`) are
//! run by absolute path (`rdma_verbs_test_kit::c_tool`), never from `PATH`, which may hold ours. Ours are the package's binaries, which `cargo test`
//! builds before this test.
//! The device is `$IBVERBS_TEST_DEVICE` (default `rxe0`).

use rdma_verbs_test_kit::{c_tool, device, open};
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

/// Runs `cmd`, failing with `what` if it cannot start.
fn run(mut cmd: Command, what: &str) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// Fails unless the test device is there: without one both tools would fail alike, and
/// matching failures prove nothing.
fn require_device() {
    drop(open());
}

/// Runs the C tool `tool` and ours of the same name with `args` (both with `tool` as
/// `argv[0]`, as it appears in usage texts) and compares them, on the test device.
fn compare(tool: &str, args: &[&str]) {
    require_device();
    let ours_path = rdma_verbs_test_kit::tool(tool);
    let mut c_cmd = Command::new(c_tool(tool));
    c_cmd.arg0(tool).args(args);
    let c = run(c_cmd, &format!("the C tool {tool}"));
    let mut ours_cmd = Command::new(&ours_path);
    ours_cmd.arg0(tool).args(args);
    let ours = run(ours_cmd, &ours_path.display().to_string());

    let call = format!("{tool} {}", args.join(" "));
    let ours_err = String::from_utf8_lossy(&ours.stderr);
    assert!(
        !ours_err.contains("panicked"),
        "{call}: ours panicked:\n{ours_err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&c.stdout),
        "{call}: stdout differs (left: ours, right: C)"
    );
    assert_eq!(ours.stdout, c.stdout, "{call}: stdout bytes differ");
    assert_eq!(
        ours.status.code(),
        c.status.code(),
        "{call}: exit status differs (left: ours, right: C); stderr:\nours: {ours_err}\nC: {}",
        String::from_utf8_lossy(&c.stderr)
    );
    assert_eq!(
        ours.stderr.is_empty(),
        c.stderr.is_empty(),
        "{call}: one writes to stderr, the other not:\nours: {ours_err}\nC: {}",
        String::from_utf8_lossy(&c.stderr)
    );
}

#[test]
fn ibv_devices() {
    compare("ibv_devices", &[]);
}

#[test]
fn ibv_devinfo() {
    compare("ibv_devinfo", &[]);
}

#[test]
fn ibv_devinfo_device() {
    compare("ibv_devinfo", &["-d", &device()]);
}

#[test]
fn ibv_devinfo_port() {
    compare("ibv_devinfo", &["-i", "1"]);
}

#[test]
fn ibv_devinfo_list() {
    compare("ibv_devinfo", &["-l"]);
}

#[test]
fn ibv_devinfo_verbose() {
    compare("ibv_devinfo", &["-v"]);
}

#[test]
fn ibv_devinfo_device_port_verbose_long() {
    let dev = format!("--ib-dev={}", device());
    compare("ibv_devinfo", &[&dev, "--ib-port", "1", "--verbose"]);
}

#[test]
fn ibv_devinfo_unknown_device() {
    compare("ibv_devinfo", &["-d", "no-such-device"]);
}

#[test]
fn ibv_devinfo_port_past_the_device() {
    compare("ibv_devinfo", &["-i", "2"]);
}

#[test]
fn ibv_devinfo_port_zero() {
    compare("ibv_devinfo", &["-i", "0"]);
}

#[test]
fn ibv_devinfo_unknown_option() {
    compare("ibv_devinfo", &["-x"]);
}

#[test]
fn ibv_devinfo_unknown_option_after_list() {
    // getopt acts on -l before it reaches the bad option; before -l, the bad option wins.
    compare("ibv_devinfo", &["-l", "-x"]);
    compare("ibv_devinfo", &["-lx"]);
    compare("ibv_devinfo", &["-x", "-l"]);
    compare("ibv_devinfo", &["-d", "-l", "-x"]);
}

#[test]
fn ibv_devinfo_missing_argument() {
    compare("ibv_devinfo", &["-d"]);
}

#[test]
fn ibstat() {
    compare("ibstat", &[]);
}

#[test]
fn ibstat_device() {
    compare("ibstat", &[&device()]);
}

#[test]
fn ibstat_device_port() {
    compare("ibstat", &[&device(), "1"]);
}

#[test]
fn ibstat_list() {
    compare("ibstat", &["-l"]);
}

#[test]
fn ibstat_short() {
    compare("ibstat", &["-s"]);
}

#[test]
fn ibstat_ports() {
    compare("ibstat", &["-p"]);
}

#[test]
fn ibstat_unknown_device() {
    compare("ibstat", &["no-such-device"]);
}

#[test]
fn ibstat_port_past_the_device() {
    compare("ibstat", &[&device(), "2"]);
}

#[test]
fn ibstat_port_zero() {
    compare("ibstat", &[&device(), "0"]);
}

#[test]
fn ibstat_unknown_option() {
    compare("ibstat", &["-x"]);
}

#[test]
fn ibstat_unknown_option_after_version_or_help() {
    compare("ibstat", &["-V", "-x"]);
    compare("ibstat", &["-h", "-x"]);
    compare("ibstat", &["-x", "-V"]);
}
