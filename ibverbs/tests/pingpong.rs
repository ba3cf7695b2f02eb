//! The `rc_pingpong` example against rdma-core's `ibv_rc_pingpong` (`/usr/bin`, package
//! ibverbs-utils) on a real device, in both roles, and against itself (run through
//! `scripts/with-rdma`; rxe0 on `lo` in CI).
//!
//! The device is `$IBVERBS_TEST_DEVICE` (default `rxe0`), with GID index 1 on port 1 (RoCE);
//! a missing device is a failure, not a skip. The example is the one `cargo build -p rdma-verbs
//! --examples` put beside this test (`target/<profile>/examples/`); `cargo test --test
//! pingpong` alone does not build it. Each test uses its own TCP port, so they run in
//! parallel; each program gets [`TIMEOUT`], then is killed and the test fails.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{c_tool, device, example, listening, open, Outcome, Running};

const TIMEOUT: Duration = Duration::from_secs(60);
const ITERS: u32 = 100;

#[derive(Clone, Copy)]
enum Program {
    Rust,
    C,
}

impl Program {
    fn path(self) -> PathBuf {
        match self {
            Program::Rust => example("rc_pingpong"),
            Program::C => c_tool("ibv_rc_pingpong"),
        }
    }
}

/// The text after `label` on the line that has it.
fn after<'a>(out: &'a str, label: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .map(str::trim)
}

/// Checks that a side succeeded with the two result lines of `size`-byte messages.
fn assert_success(side: &str, o: &Outcome, size: u64) {
    let context = format!("{side}\nstdout:\n{}\nstderr:\n{}", o.stdout, o.stderr);
    assert!(o.status.success(), "{side} failed: {}\n{context}", o.status);
    let bytes = 2 * size * u64::from(ITERS);
    let is_number = |s: &str| {
        s.split_once('.').is_some_and(|(i, f)| {
            !i.is_empty() && f.len() == 2 && i.bytes().chain(f.bytes()).all(|b| b.is_ascii_digit())
        })
    };
    let result_line = |head: &str, unit: &str| {
        o.stdout.lines().any(|l| {
            l.strip_prefix(head)
                .and_then(|l| l.strip_suffix(unit))
                .and_then(|l| l.split_once(" seconds = "))
                .is_some_and(|(secs, rate)| is_number(secs) && is_number(rate))
        })
    };
    assert!(
        result_line(&format!("{bytes} bytes in "), " Mbit/sec"),
        "no bytes line\n{context}"
    );
    assert!(
        result_line(&format!("{ITERS} iters in "), " usec/iter"),
        "no iters line\n{context}"
    );
    assert!(
        !o.stdout.contains("invalid data"),
        "-c found bad data\n{context}"
    );
}

/// Runs `server` and `client` on `port` with `extra` options on both, checks both
/// succeeded, and that each read the address the other printed.
fn pingpong(server: Program, client: Program, port: u16, size: u64, extra: &[&str]) {
    open();
    let mut args: Vec<String> = ["-d", &device(), "-g", "1", "-c", "-p", &port.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend([
        "-n".into(),
        ITERS.to_string(),
        "-s".into(),
        size.to_string(),
    ]);
    args.extend(extra.iter().map(|s| s.to_string()));

    let mut s = Running::spawn("server", &server.path(), &args);
    // Read from /proc, without connecting: the server takes the first connection as its peer.
    s.wait_until("listened", TIMEOUT, || listening(port));
    args.push("127.0.0.1".into());
    let c = Running::spawn("client", &client.path(), &args);
    let deadline = Instant::now() + TIMEOUT;
    let client_out = c.finish(deadline);
    let server_out = s.finish(deadline);
    assert_success("client", &client_out, size);
    assert_success("server", &server_out, size);

    for (a, b) in [(&server_out, &client_out), (&client_out, &server_out)] {
        let local = after(&a.stdout, "local address:").expect("a local address line");
        let remote = after(&b.stdout, "remote address:").expect("a remote address line");
        assert_eq!(local, remote, "the peer read another address than was sent");
    }
}

#[test]
fn rust_server_c_client() {
    pingpong(Program::Rust, Program::C, 18611, 4096, &[]);
}

#[test]
fn c_server_rust_client() {
    // Several pages to validate and a small receive queue to refill.
    pingpong(Program::C, Program::Rust, 18612, 10000, &["-r", "4"]);
}

#[test]
fn rust_server_rust_client() {
    pingpong(
        Program::Rust,
        Program::Rust,
        18613,
        8192,
        &["-m", "512", "-r", "8"],
    );
}

#[test]
fn rust_server_c_client_with_events() {
    pingpong(Program::Rust, Program::C, 18614, 4096, &["-e"]);
}

#[test]
fn c_server_rust_client_with_events() {
    pingpong(Program::C, Program::Rust, 18615, 100, &["-e"]);
}

#[test]
fn client_without_server_exits_1_as_c_does() {
    open();
    for program in [Program::C, Program::Rust] {
        let args: Vec<String> = ["-d", &device(), "-g", "1", "-p", "18616", "127.0.0.1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let out = Running::spawn("client", &program.path(), &args).finish(Instant::now() + TIMEOUT);
        assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
        assert!(out.stderr.contains("Couldn't connect"), "{}", out.stderr);
    }
}
