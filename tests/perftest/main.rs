//! Our perftest tools (`ib_send_bw` ... `ib_atomic_lat`) against Debian's perftest and
//! against each other, on the device (run through `scripts/with-rdma`; rxe0 on `lo` in CI):
//! every test in both directions against C (our client to a C server, a C client to our
//! server) must finish with a result line on both sides, and bad input must fail with a
//! message and a nonzero status instead of hanging or panicking. Ours to ours is not run
//! for each test: perftest's wire protocol is one, and each of our two sides speaking it to
//! C's says the two speak it to each other; the tests that need both sides ours (mismatched
//! parameters, the duration mode, a peer killed mid-transfer) run them so.
//!
//! The C tools are run by absolute path (`rdma_verbs_test_kit::c_tool`), never from `PATH`,
//! which may hold ours. Ours are the package's binaries, which `cargo test` builds before
//! this test.
//! The device is `$IBVERBS_TEST_DEVICE` (default `rxe0`). Both sides run here and talk over
//! TCP on 127.0.0.1, each pair on a port of its own.
//!
//! With `IBVERBS_TEST_PROVIDER=siw` the `-R` tests run on soft-iWARP (the rdma_cm device is
//! then siw0): `ib_send_bw` with perftest's receive credits, UD skipped (iWARP has RC only),
//! and the atomic tools failing cleanly on both sides, as perftest's do (iWARP has no
//! atomics).
//!
//! `qos` holds the QoS options' tests (service level, traffic class, rate limiters).
//!
//! Debian's perftest measures the CPU frequency when it reports, and in a loaded virtual
//! machine that sometimes fails ("Correlation coefficient r^2 < 0.9", then "Can't produce
//! a report" or `inf`): a run where the C tool fails that way is repeated.

mod qos;

use rdma_verbs_test_kit::{
    c_tool, cm_addr, cm_device, cm_listening, device, free_port, listening, open_cm, provider,
    provider_has, Need, Provider,
};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long one program may run before it counts as hanging.
const HANG: Duration = Duration::from_secs(120);
/// Runs of a pair whose C side failed to measure its clock.
const ATTEMPTS: usize = 8;
/// One pair at a time: the data paths busy-poll and the VM has few CPUs.
static SERIAL: Mutex<()> = Mutex::new(());

/// Which implementation runs a side.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Rust,
    C,
}

fn program(side: Side, tool: &str) -> PathBuf {
    match side {
        Side::C => c_tool(tool),
        Side::Rust => rdma_verbs_test_kit::tool(tool),
    }
}

/// A started program whose output is being collected.
struct Running {
    what: String,
    started: Instant,
    child: Child,
    stdout: Collector,
    stderr: Collector,
}

/// The output of a pipe, read by a thread and readable while it runs.
struct Collector {
    text: Arc<Mutex<Vec<u8>>>,
    reader: JoinHandle<()>,
}

impl Collector {
    fn new(mut pipe: impl Read + Send + 'static) -> Collector {
        let text = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&text);
        let reader = thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&buf[..n]);
            }
        });
        Collector { text, reader }
    }

    /// What has arrived so far.
    fn so_far(&self) -> String {
        String::from_utf8_lossy(&self.text.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }

    /// Everything, once the pipe is closed.
    fn finish(self) -> String {
        let Collector { text, reader } = self;
        let _ = reader.join();
        let text = text.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&text).into_owned()
    }
}

/// How a program ended.
#[derive(Debug)]
struct Finished {
    what: String,
    status: ExitStatus,
    /// Killed after running for [`HANG`].
    hung: bool,
    stdout: String,
    stderr: String,
}

impl Finished {
    fn ok(&self) -> bool {
        self.status.success()
    }

    /// Lines of a perftest result table: size and iteration count, then a number.
    fn result_lines(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| {
                let mut f = l.split_whitespace();
                l.starts_with(' ')
                    && f.next().is_some_and(|s| s.parse::<u64>().is_ok())
                    && f.next().is_some_and(|s| s.parse::<u64>().is_ok())
                    && f.next()
                        .is_some_and(|s| s.parse::<f64>().is_ok_and(f64::is_finite))
            })
            .collect()
    }

    /// Whether Debian's perftest failed to measure its clock (see the module docs).
    fn c_clock_failure(&self) -> bool {
        self.stderr.contains("Can't produce a report")
            || self.stderr.contains("Correlation coefficient")
            || self.stdout.contains(" inf ")
            || self.stdout.contains("-nan")
    }

    fn describe(&self) -> String {
        let hung = if self.hung { ", HUNG: killed" } else { "" };
        format!(
            "--- {} ({}{hung})\n{}--- stderr\n{}",
            self.what, self.status, self.stdout, self.stderr
        )
    }

    fn assert_failed_cleanly(&self, message: &str) {
        assert!(!self.hung, "{} hung:\n{}", self.what, self.describe());
        assert!(
            !self.ok(),
            "{} should fail:\n{}",
            self.what,
            self.describe()
        );
        assert!(
            self.stderr.contains(message),
            "{}: expected {message:?} on stderr:\n{}",
            self.what,
            self.describe()
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.describe());
    }
}

fn spawn(path: &PathBuf, args: &[String]) -> Running {
    let what = format!("{} {}", path.display(), args.join(" "));
    let mut child = Command::new(path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| match e.kind() {
            ErrorKind::NotFound => panic!("{} is missing (install perftest): {e}", path.display()),
            _ => panic!("cannot run {what}: {e}"),
        });
    Running {
        what,
        started: Instant::now(),
        stdout: Collector::new(child.stdout.take().expect("piped stdout")),
        stderr: Collector::new(child.stderr.take().expect("piped stderr")),
        child,
    }
}

impl Running {
    /// Waits for the exit; a program still running [`HANG`] after its start is killed and
    /// marked as hung (which fails every check but a retry of a UD run).
    fn finish(mut self) -> Finished {
        let mut hung = false;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for a child") {
                break status;
            }
            if self.started.elapsed() > HANG {
                hung = true;
                let _ = self.child.kill();
                break self.child.wait().expect("waiting for a killed child");
            }
            thread::sleep(Duration::from_millis(20));
        };
        Finished {
            what: self.what,
            status,
            hung,
            stdout: self.stdout.finish(),
            stderr: self.stderr.finish(),
        }
    }

    /// Waits until the program has printed its result table's header (the measurement
    /// starts right after it); fails if it exits first.
    fn wait_measuring(&mut self) {
        let start = Instant::now();
        while !self.stdout.so_far().contains("#bytes") {
            if let Some(status) = self.child.try_wait().expect("waiting for a child") {
                panic!(
                    "{} ended ({status}) before measuring\n{}\n{}",
                    self.what,
                    self.stdout.so_far(),
                    self.stderr.so_far()
                );
            }
            assert!(
                start.elapsed() < HANG,
                "{} never started measuring",
                self.what
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until something listens on `port` (the server is up: on TCP, or with `-R` on
    /// rdma_cm), or the program exits.
    fn wait_listening(&mut self, port: u16, rdma_cm: bool) {
        let start = Instant::now();
        let up = || {
            if rdma_cm {
                cm_listening(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))
            } else {
                listening(port)
            }
        };
        while !up() {
            if self
                .child
                .try_wait()
                .expect("waiting for a child")
                .is_some()
            {
                return;
            }
            assert!(
                start.elapsed() < HANG,
                "{} never listened on {port}",
                self.what
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether a run uses rdma_cm (`-R`), and so the rdma_cm device and its address.
fn rdma_cm(extra: &[&str]) -> bool {
    extra.contains(&"-R")
}

fn args(port: u16, extra: &[&str], server: Option<&str>) -> Vec<String> {
    let dev = if rdma_cm(extra) {
        cm_device()
    } else {
        device()
    };
    let mut a = vec!["-d".to_owned(), dev, "-p".to_owned(), port.to_string()];
    a.extend(extra.iter().map(|s| s.to_string()));
    a.extend(server.map(str::to_owned));
    a
}

/// Runs `tool` with `extra` as a server and a client, of the given implementations.
fn pair(
    tool: &str,
    server: Side,
    client: Side,
    extra: &[&str],
    client_extra: &[&str],
) -> (Finished, Finished) {
    let port = free_port();
    let mut srv = spawn(&program(server, tool), &args(port, extra, None));
    srv.wait_listening(port, rdma_cm(extra));
    let mut cli_args = extra.to_vec();
    cli_args.extend_from_slice(client_extra);
    let host = if rdma_cm(extra) {
        cm_addr().to_string()
    } else {
        "127.0.0.1".to_owned()
    };
    let cli = spawn(&program(client, tool), &args(port, &cli_args, Some(&host)));
    let cli = cli.finish();
    let srv = srv.finish();
    (srv, cli)
}

/// Runs `tool` in one direction until the C side measured its clock, and checks that both
/// sides succeed and print their result lines.
fn interop(tool: &str, server: Side, client: Side, extra: &[&str]) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for attempt in 1..=ATTEMPTS {
        let (srv, cli) = pair(tool, server, client, extra, &[]);
        let c_failed = (server == Side::C && srv.c_clock_failure())
            || (client == Side::C && cli.c_clock_failure());
        if c_failed && attempt < ATTEMPTS {
            eprintln!("{tool} {server:?} server, {client:?} client: the C tool failed to measure its clock, again");
            continue;
        }
        let both = format!("{}\n{}", srv.describe(), cli.describe());
        // UD may drop a datagram, and perftest's UD ping-pong then waits forever (ours
        // stops after 20 s without progress): a lost datagram is not the tools' fault.
        if (srv.hung || cli.hung) && extra.contains(&"UD") && attempt < ATTEMPTS {
            eprintln!("{tool} {server:?} server, {client:?} client: a UD run hung, again\n{both}");
            continue;
        }
        assert!(!srv.hung && !cli.hung, "{tool}: a side hung\n{both}");
        assert!(srv.ok() && cli.ok(), "{tool}: a side failed\n{both}");
        for f in [&srv, &cli] {
            assert!(!f.stderr.contains("panicked"), "{both}");
        }
        assert_eq!(
            cli.result_lines().len(),
            1,
            "{tool}: client result line\n{both}"
        );
        // perftest's read and atomic latency servers only wait; they print no result.
        let server_lines = if matches!(tool, "ib_read_lat" | "ib_atomic_lat") {
            0
        } else {
            1
        };
        assert_eq!(
            srv.result_lines().len(),
            server_lines,
            "{tool}: server result line\n{both}"
        );
        if server_lines == 1 && !extra.contains(&"-D") {
            // A BW server reports the client's numbers (or, for send, its own of the same
            // size and count); latency servers their own, of the same size and count.
            let key = |l: &str| l.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
            assert_eq!(
                key(srv.result_lines()[0]),
                key(cli.result_lines()[0]),
                "{both}"
            );
        }
        return;
    }
}

/// Runs `tool` both ways against C's: a C server with our client, our server with C's client.
fn against_c(tool: &str, extra: &[&str]) {
    interop(tool, Side::C, Side::Rust, extra);
    interop(tool, Side::Rust, Side::C, extra);
}

/// Runs `tool` both ways against C's where the device cannot run it: the client fails with
/// `message` (perftest's words, which ours print too), the server fails when the exchange
/// breaks, and neither hangs or panics.
fn against_c_fail(tool: &str, extra: &[&str], message: &str) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (server, client) in [(Side::C, Side::Rust), (Side::Rust, Side::C)] {
        let (srv, cli) = pair(tool, server, client, extra, &[]);
        let both = format!("{}\n{}", srv.describe(), cli.describe());
        cli.assert_failed_cleanly(message);
        assert!(!srv.hung, "{tool}: the server hung\n{both}");
        assert!(!srv.ok(), "{tool}: the server should fail\n{both}");
        assert!(!srv.stderr.contains("panicked"), "{both}");
    }
}

#[test]
fn send_bw() {
    against_c("ib_send_bw", &["-n", "20", "-s", "1024"]);
}

#[test]
fn write_bw() {
    against_c("ib_write_bw", &["-n", "20", "-s", "1024"]);
}

#[test]
fn read_bw() {
    against_c("ib_read_bw", &["-n", "20", "-s", "1024"]);
}

#[test]
fn atomic_bw() {
    against_c("ib_atomic_bw", &["-n", "20"]);
}

#[test]
fn send_lat() {
    against_c("ib_send_lat", &["-n", "20"]);
}

#[test]
fn write_lat() {
    against_c("ib_write_lat", &["-n", "20"]);
}

#[test]
fn read_lat() {
    against_c("ib_read_lat", &["-n", "20"]);
}

#[test]
fn atomic_lat() {
    against_c("ib_atomic_lat", &["-n", "20"]);
}

/// `-R`: rdma_cm connects the QPs and carries the exchange (on the rdma_cm device, to its
/// address), RC and, for the send tests, UD.
#[test]
fn rdma_cm_send() {
    open_cm();
    against_c("ib_send_bw", &["-R", "-n", "20", "-s", "1024"]);
    // A receive queue of 16 for 300 messages: on iWARP the sender waits for credits.
    against_c(
        "ib_send_bw",
        &["-R", "-n", "300", "-r", "16", "-t", "8", "-s", "1024"],
    );
    against_c("ib_send_lat", &["-R", "-n", "20"]);
}

#[test]
fn rdma_cm_send_ud() {
    open_cm();
    if !provider_has(Need::Ud) {
        return;
    }
    against_c("ib_send_bw", &["-R", "-c", "UD", "-n", "20", "-s", "1024"]);
    against_c("ib_send_lat", &["-R", "-c", "UD", "-n", "20"]);
}

#[test]
fn rdma_cm_write() {
    open_cm();
    against_c("ib_write_bw", &["-R", "-n", "20", "-s", "1024"]);
    against_c("ib_write_lat", &["-R", "-n", "20"]);
}

#[test]
fn rdma_cm_read_atomic() {
    open_cm();
    against_c("ib_read_bw", &["-R", "-n", "20", "-s", "1024"]);
    against_c("ib_read_lat", &["-R", "-n", "20"]);
    if provider() == Provider::Siw {
        // iWARP has no atomics: the first post fails on the client (the crate refuses it;
        // siw's provider refuses perftest's), and the server's exchange breaks.
        against_c_fail("ib_atomic_bw", &["-R", "-n", "20"], "Couldn't post send");
        against_c_fail("ib_atomic_lat", &["-R", "-n", "20"], "Couldn't post send");
    } else {
        against_c("ib_atomic_bw", &["-R", "-n", "20"]);
        against_c("ib_atomic_lat", &["-R", "-n", "20"]);
    }
}

/// `-R` with several QPs; sends both ways through a receive queue smaller than the run (on
/// iWARP, many turns of the credits); and UD both ways (`-b`: the server learns the
/// client's QP number through a datagram).
#[test]
fn rdma_cm_options() {
    open_cm();
    against_c("ib_write_bw", &["-R", "-q", "2", "-n", "20", "-s", "1024"]);
    against_c(
        "ib_send_bw",
        &["-R", "-b", "-q", "2", "-n", "300", "-r", "16", "-s", "1024"],
    );
    if provider_has(Need::Ud) {
        against_c(
            "ib_send_bw",
            &["-R", "-c", "UD", "-b", "-n", "20", "-s", "1024"],
        );
    }
}

/// A few option combinations, ours against the C tool.
#[test]
fn options_against_c() {
    for (tool, extra) in [
        ("ib_write_bw", &["-n", "20", "-b", "-q", "2"][..]),
        ("ib_send_bw", &["-n", "20", "-c", "UD", "-s", "512", "-e"]),
        (
            "ib_send_bw",
            &["-n", "20", "-c", "UC", "-l", "5", "--report_gbits"],
        ),
        ("ib_send_lat", &["-n", "20", "-c", "UD"]),
        ("ib_atomic_bw", &["-n", "20", "-A", "CMP_AND_SWAP"]),
        ("ib_read_lat", &["-n", "20", "-s", "4096", "-H"]),
    ] {
        interop(tool, Side::Rust, Side::C, extra);
        interop(tool, Side::C, Side::Rust, extra);
    }
}

/// A duration run: the iteration count is measured, peak off.
#[test]
fn duration_mode() {
    interop(
        "ib_write_bw",
        Side::Rust,
        Side::Rust,
        &["-D", "2", "-s", "4096"],
    );
    interop("ib_send_lat", Side::C, Side::Rust, &["-D", "2"]);
}

fn run_alone(tool: &str, extra: &[&str], server: Option<&str>, port: u16) -> Finished {
    spawn(&program(Side::Rust, tool), &args(port, extra, server)).finish()
}

#[test]
fn unreachable_server() {
    let f = run_alone("ib_write_bw", &[], Some("127.0.0.1"), free_port());
    f.assert_failed_cleanly("Couldn't connect to 127.0.0.1");
}

#[test]
fn bad_options() {
    let port = free_port();
    run_alone("ib_write_bw", &["-n", "1"], None, port)
        .assert_failed_cleanly("Iteration num should be between 5");
    run_alone("ib_write_bw", &["--bogus"], None, port)
        .assert_failed_cleanly("unrecognized option '--bogus'");
    run_alone("ib_read_bw", &["-c", "UD"], None, port)
        .assert_failed_cleanly("UD connection only possible in SEND verb");
    run_alone("ib_write_bw", &["-d", "no-such-device"], None, port)
        .assert_failed_cleanly("IB device no-such-device not found");
}

/// A TCP peer played by the test: accepts one client and runs `script` on it.
fn fake_server(script: impl FnOnce(TcpStream) + Send + 'static) -> (u16, JoinHandle<()>) {
    let listener = TcpListener::bind("0.0.0.0:0").expect("a listening socket");
    let port = listener.local_addr().expect("its address").port();
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let handle = thread::spawn(move || {
        // The client may fail before it connects: give up with it.
        let start = Instant::now();
        while start.elapsed() < HANG {
            match listener.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).expect("a blocking socket");
                    stream.set_read_timeout(Some(HANG)).expect("a read timeout");
                    script(stream);
                    return;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(20))
                }
                Err(_) => return,
            }
        }
    });
    (port, handle)
}

/// Plays perftest's side of the exchange up to (not including) the QP records.
fn fake_setup(s: &mut TcpStream) {
    let mut buf = [0u8; 16];
    s.read_exact(&mut buf).expect("the client's version");
    let mut version = [0u8; 16];
    version[..4].copy_from_slice(b"6.06");
    s.write_all(&version).expect("our version");
    for value in [4096u32, 64] {
        s.read_exact(&mut buf[..4])
            .expect("the client's system data");
        s.write_all(&value.to_be_bytes()).expect("our system data");
    }
    s.read_exact(&mut buf[..2]).expect("the client's MTU");
    s.write_all(b"5\0").expect("our MTU");
}

#[test]
fn server_closes_mid_exchange() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (port, server) = fake_server(|mut s| {
        let mut buf = [0u8; 16];
        s.read_exact(&mut buf).expect("the client's version");
        let mut version = [0u8; 16];
        version[..4].copy_from_slice(b"6.06");
        s.write_all(&version).expect("our version");
        s.read_exact(&mut buf[..4]).expect("the client's page size");
        // ...and hang up instead of answering.
    });
    let f = run_alone("ib_write_bw", &[], Some("127.0.0.1"), port);
    server.join().expect("the fake server");
    f.assert_failed_cleanly("the peer closed the connection");
}

#[test]
fn malformed_qp_record() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (port, server) = fake_server(|mut s| {
        fake_setup(&mut s);
        let mut record = [0u8; 108];
        s.read_exact(&mut record).expect("the client's QP record");
        let mut garbage = [b'z'; 108];
        garbage[107] = 0;
        s.write_all(&garbage).expect("a malformed record");
        let _ = s.read(&mut record);
    });
    let f = run_alone("ib_send_lat", &[], Some("127.0.0.1"), port);
    server.join().expect("the fake server");
    f.assert_failed_cleanly("malformed QP record");
}

#[test]
fn malformed_version_from_a_client() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = free_port();
    let mut srv = spawn(&program(Side::Rust, "ib_write_bw"), &args(port, &[], None));
    srv.wait_listening(port, false);
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connecting to our server");
    s.write_all(b"hello, perftest!").expect("a bad version");
    let f = srv.finish();
    f.assert_failed_cleanly("not compatible with versions older than 5.70");
}

#[test]
fn mismatched_parameters_between_our_tools() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (srv, cli) = pair(
        "ib_send_bw",
        Side::Rust,
        Side::Rust,
        &["-n", "20"],
        &["-s", "4096", "-q", "2"],
    );
    srv.assert_failed_cleanly("the peer runs with different parameters");
    cli.assert_failed_cleanly("message size (-s): 4096 here, 65536 at the peer");
    cli.assert_failed_cleanly("number of QPs (-q): 2 here, 1 at the peer");
    let (srv, cli) = pair(
        "ib_write_lat",
        Side::Rust,
        Side::Rust,
        &["-n", "20"],
        &["-n", "30"],
    );
    srv.assert_failed_cleanly("iterations (-n) or duration (-D) differ");
    cli.assert_failed_cleanly("iterations (-n) or duration (-D) differ");
}

#[test]
fn mismatched_sizes_against_c() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Our client writes past the C server's buffer: the HCA refuses, both sides stop.
    let (srv, cli) = pair(
        "ib_write_bw",
        Side::C,
        Side::Rust,
        &["-n", "20", "-s", "1024"],
        &["-s", "65536"],
    );
    cli.assert_failed_cleanly("remote access error");
    assert!(!srv.ok(), "{}", srv.describe());
    // The C client does that to our server: it notices the client is gone.
    let (srv, cli) = pair(
        "ib_write_bw",
        Side::Rust,
        Side::C,
        &["-n", "20", "-s", "1024"],
        &["-s", "65536"],
    );
    srv.assert_failed_cleanly("the peer closed the connection");
    assert!(!cli.ok(), "{}", cli.describe());
}

#[test]
fn sizes_beyond_the_device() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ctx = rdma_verbs::Context::open(&device()).expect("the test device");
    let port_attr = ctx.query_port(1).expect("port 1");
    let max = u64::from(port_attr.max_msg_sz);
    if max < u64::from(u32::MAX / 2) {
        let size = (max + 1).to_string();
        let f = run_alone(
            "ib_write_bw",
            &["-s", &size],
            Some("127.0.0.1"),
            free_port(),
        );
        f.assert_failed_cleanly("is larger than the largest message");
    }
    // UD messages cannot exceed the path MTU: asked for explicitly, both sides refuse.
    let (srv, cli) = pair(
        "ib_send_bw",
        Side::Rust,
        Side::Rust,
        &["-c", "UD", "-s", "8192", "-n", "20"],
        &[],
    );
    srv.assert_failed_cleanly("Max message size in UD cannot be greater than MTU");
    cli.assert_failed_cleanly("Max message size in UD cannot be greater than MTU");
}

/// How long a tool whose peer died may take to notice and exit once the peer is gone: well
/// under the data path's 20 s stall limit, which it must not need (a dead peer shows as a
/// closed connection or as error completions).
const PEER_DEATH: Duration = Duration::from_secs(10);

/// Runs `tool` (ours on both sides, or `victim_side` for the one killed) in duration mode,
/// SIGKILLs one side once both measure, and checks that the other exits with a message
/// and a nonzero status within [`PEER_DEATH`].
fn survives_peer_death(tool: &str, kill_server: bool, victim_side: Side) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let extra = ["-D", "60"];
    let port = free_port();
    let (server_side, client_side) = if kill_server {
        (victim_side, Side::Rust)
    } else {
        (Side::Rust, victim_side)
    };
    let mut srv = spawn(&program(server_side, tool), &args(port, &extra, None));
    srv.wait_listening(port, false);
    let mut cli = spawn(
        &program(client_side, tool),
        &args(port, &extra, Some("127.0.0.1")),
    );
    // Wait for the survivor's header (C tools' stdout is block-buffered in a pipe), or the
    // client's where the server prints none (perftest's read and atomic latency servers).
    let quiet_server = matches!(tool, "ib_read_lat" | "ib_atomic_lat");
    if kill_server || quiet_server {
        assert!(client_side == Side::Rust || !quiet_server);
        cli.wait_measuring();
    } else {
        srv.wait_measuring();
    }
    // Into the data path.
    thread::sleep(Duration::from_millis(500));
    let (mut victim, survivor) = if kill_server { (srv, cli) } else { (cli, srv) };
    victim.child.kill().expect("SIGKILL for the peer");
    let killed = Instant::now();
    let _ = victim.child.wait();
    let died = killed.elapsed();
    let f = survivor.finish();
    let took = killed.elapsed();
    let side = if kill_server { "client" } else { "server" };
    eprintln!(
        "{tool}: peer dead after {:.2} s; {side} exited {:.2} s after the kill: {}",
        died.as_secs_f64(),
        took.as_secs_f64(),
        f.stderr.trim().replace('\n', " | ")
    );
    // From the end of the killed process (its socket closes only when it is gone).
    assert!(
        took.saturating_sub(died) < PEER_DEATH,
        "{tool} {side} took {took:?} to notice its peer's death\n{}",
        f.describe()
    );
    assert!(!f.ok(), "{tool} {side} should fail:\n{}", f.describe());
    assert!(
        f.stderr.contains("the peer") || f.stderr.contains("completion"),
        "{tool} {side}: no clear message\n{}",
        f.describe()
    );
    assert!(!f.stderr.contains("panicked"), "{}", f.describe());
}

/// Each tool's server and client, ours, outlive a killed peer (ours, or the C tool for the
/// send tests).
#[test]
fn peer_killed_mid_transfer() {
    for tool in [
        "ib_send_bw",
        "ib_write_bw",
        "ib_read_bw",
        "ib_atomic_bw",
        "ib_send_lat",
        "ib_write_lat",
        "ib_read_lat",
        "ib_atomic_lat",
    ] {
        survives_peer_death(tool, true, Side::Rust);
        survives_peer_death(tool, false, Side::Rust);
    }
    survives_peer_death("ib_send_bw", true, Side::C);
    survives_peer_death("ib_send_lat", false, Side::C);
}
