//! Our `rping` against rdma-core's `rping` (`/usr/bin`, package rdmacm-utils) in
//! both roles, and against itself, on the rdma_cm device (run through `scripts/with-rdma`,
//! which names its address in `$WITH_RDMA_CM_ADDR`; a missing one is a failure, not a skip).
//!
//! Every run has `-v` on both sides and `-V` on the client: each side's ping lines are
//! checked against the data rping's client sends (so both read and wrote every byte), and
//! their number against `-C`. Ours is the package's binary, which `cargo test` builds
//! before this test. Each test uses its own port, so they run in
//! parallel; each program gets [`TIMEOUT`], then is killed and the test fails.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{
    cm_addr, cm_listening, open_cm, provider, rping_ended_well, Outcome, Program, Provider, Running,
};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The data of ping `n` of `size` bytes as rping's client makes it, up to its NUL:
/// `rdma-ping-N: ` and letters from `A` + N modulo 58, cycling through `A`..=`z`.
fn ping_text(n: usize, size: usize) -> String {
    let mut text = format!("rdma-ping-{n}: ");
    let letters: Vec<char> = ('A'..='z').collect();
    let first = n % letters.len();
    text.extend((0..size).map(|i| letters[(first + i) % letters.len()]));
    text.truncate(size - 1);
    text
}

/// The lines of `out` that start with `prefix`, without it.
fn lines_after<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
}

/// Starts `program` as the server on `port` of the CM address, with `-v`, and waits until
/// it listens.
fn server(program: Program, port: u16, extra: &[&str]) -> Running {
    open_cm();
    let addr = cm_addr().to_string();
    let mut args: Vec<String> = ["-s", "-v", "-a", &addr, "-p", &port.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut s = Running::spawn("server", &program.tool("rping"), &args);
    let at = SocketAddr::new(cm_addr(), port);
    s.wait_until("listened", TIMEOUT, || cm_listening(at));
    s
}

/// Runs `program` as the client of the server on `port` with `extra` options.
fn client(program: Program, port: u16, extra: &[&str]) -> Outcome {
    let addr = cm_addr().to_string();
    let mut args: Vec<String> = ["-c", "-a", &addr, "-p", &port.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    Running::spawn("client", &program.tool("rping"), &args).finish(Instant::now() + TIMEOUT)
}

/// `count` pings of `size` bytes from `client` to `server`, both with `-v` and the client
/// with `-V`: both succeed and print every ping, intact.
fn ping(server_program: Program, client_program: Program, port: u16, count: usize, size: usize) {
    let s = server(server_program, port, &["-S", &size.to_string()]);
    let (count_arg, size_arg) = (count.to_string(), size.to_string());
    let c = client(
        client_program,
        port,
        &["-v", "-V", "-C", &count_arg, "-S", &size_arg],
    );
    let s = s.finish(Instant::now() + TIMEOUT);
    let what = format!("{server_program:?} server, {client_program:?} client");
    assert!(
        rping_ended_well(&c),
        "{what}: client {}\n{}\nserver:\n{}",
        c.status,
        c.context(),
        s.context()
    );
    assert!(
        rping_ended_well(&s),
        "{what}: server {}\n{}",
        s.status,
        s.context()
    );
    let want: Vec<String> = (0..count).map(|n| ping_text(n, size)).collect();
    assert_eq!(
        lines_after(&c.stdout, "ping data: "),
        want,
        "{what}: client"
    );
    assert_eq!(
        lines_after(&s.stdout, "server ping data: "),
        want,
        "{what}: server"
    );
    assert!(
        s.stderr.contains("server DISCONNECT EVENT"),
        "{what}: {}",
        s.context()
    );
}

#[test]
fn rust_server_c_client() {
    ping(Program::Rust, Program::C, 7201, 10, 100);
}

#[test]
fn c_server_rust_client() {
    // Past 58 pings the first letter wraps; the smallest size rping takes.
    ping(Program::C, Program::Rust, 7202, 60, 23);
}

#[test]
fn rust_server_c_client_largest_size() {
    ping(Program::Rust, Program::C, 7203, 3, 65535);
}

#[test]
fn c_server_rust_client_largest_size() {
    ping(Program::C, Program::Rust, 7204, 3, 65535);
}

#[test]
fn rust_server_rust_client() {
    ping(Program::Rust, Program::Rust, 7205, 20, 64);
}

#[test]
fn sizes_out_of_range_are_refused_as_c_does_with_its_status() {
    open_cm();
    for program in [Program::C, Program::Rust] {
        for size in ["22", "65536"] {
            let args = ["-c", "-a", "127.0.0.1", "-S", size].map(String::from);
            let out = Running::spawn("client", &program.tool("rping"), &args)
                .finish(Instant::now() + TIMEOUT);
            // EINVAL, the C program's status for a bad command line.
            assert_eq!(out.status.code(), Some(22), "{program:?} -S {size}");
            assert!(
                out.stderr.contains(&format!("Invalid size {size}")),
                "{program:?} -S {size}: {}",
                out.context()
            );
        }
    }
}

#[test]
fn client_without_server_is_rejected_as_c_is() {
    open_cm();
    // IB and RoCE: the CM's reject; iWARP: the TCP connect refused at once.
    let said = match provider() {
        Provider::Rxe => "cma event RDMA_CM_EVENT_REJECTED, error 8",
        Provider::Siw => "rdma_connect: Connection refused\nconnect error -1",
    };
    let addr = cm_addr().to_string();
    let args = ["-c", "-a", &addr, "-p", "7206", "-C", "1"].map(String::from);
    for program in [Program::C, Program::Rust] {
        let run = Running::spawn("client", &program.tool("rping"), &args);
        match run.finish_by(Instant::now() + Duration::from_secs(10)) {
            Ok(out) => {
                assert!(!out.status.success(), "{program:?}");
                assert!(out.stderr.contains(said), "{program:?}: {}", out.context());
            }
            // C's rping waits forever after that error on iWARP: what it printed is compared.
            Err(output) if program == Program::C && provider() == Provider::Siw => {
                assert!(output.contains(said), "{output}");
            }
            Err(output) => panic!("{program:?} did not finish: {output}"),
        }
    }
}
