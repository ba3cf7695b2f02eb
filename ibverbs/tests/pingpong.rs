//! The `rc_pingpong` example against rdma-core's `ibv_rc_pingpong` (`/usr/bin`, package
//! ibverbs-utils) on a real device, in both roles, and against itself (run through
//! `scripts/with-rdma`; rxe0 on `lo` in CI).
//!
//! The device is `$IBVERBS_TEST_DEVICE` (default `rxe0`), with GID index 1 on port 1 (RoCE);
//! a missing device is a failure, not a skip. The example is the one `cargo build -p ibverbs
//! --examples` put beside this test (`target/<profile>/examples/`); `cargo test --test
//! pingpong` alone does not build it. Each test uses its own TCP port, so they run in
//! parallel; each program gets [`TIMEOUT`], then is killed and the test fails.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ibverbs_test_kit::{c_tool, device, example, listening, open};

const TIMEOUT: Duration = Duration::from_secs(60);
const ITERS: u32 = 100;

/// One side of a run: the program, its output read by two threads, killed when dropped.
struct Side {
    name: String,
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
}

/// What a side printed and how it ended.
struct Outcome {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

impl Side {
    fn spawn(name: &str, program: &PathBuf, args: &[String]) -> Side {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        let stdout = child.stdout.take().map(read_all);
        let stderr = child.stderr.take().map(read_all);
        Side {
            name: format!("{name} ({} {})", program.display(), args.join(" ")),
            child,
            stdout,
            stderr,
        }
    }

    /// Waits for the exit until `deadline`; kills the program and fails after it.
    fn finish(mut self, deadline: Instant) -> Outcome {
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for a child") {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let text = |h: Option<JoinHandle<String>>| h.map(|h| h.join().unwrap()).unwrap_or_default();
        let (stdout, stderr) = (text(self.stdout.take()), text(self.stderr.take()));
        let Some(status) = status else {
            panic!(
                "{} did not finish in {TIMEOUT:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                self.name
            );
        };
        Outcome {
            status,
            stdout,
            stderr,
        }
    }

    /// Waits until something listens on TCP `port` (read from /proc, without connecting:
    /// the server takes the first connection as its peer).
    fn wait_listening(&mut self, port: u16) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if listening(port) {
                return;
            }
            if let Some(status) = self.child.try_wait().expect("waiting for a child") {
                panic!("{} exited with {status} before listening", self.name);
            }
            assert!(Instant::now() < deadline, "{} never listened", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        // A side left running by a failed test must not outlive it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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

    let mut s = Side::spawn("server", &server.path(), &args);
    s.wait_listening(port);
    args.push("127.0.0.1".into());
    let c = Side::spawn("client", &client.path(), &args);
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
        let out = Side::spawn("client", &program.path(), &args).finish(Instant::now() + TIMEOUT);
        assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
        assert!(out.stderr.contains("Couldn't connect"), "{}", out.stderr);
    }
}
