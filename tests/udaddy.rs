//! Our `udaddy` (the package's example) against rdma-core's (`/usr/bin`, package
//! rdmacm-utils) in both roles, and against itself, on the rdma_cm device (run through
//! `scripts/with-rdma`, which names its address in `$WITH_RDMA_CM_ADDR`; a missing one is a
//! failure, not a skip): the client's datagrams reach the server, which answers each
//! connection through the address handle made from the first datagram's completion, and
//! both print C's lines and end with status 0 (each waits for all its datagrams, so the
//! lines say they all arrived); a message larger than the MTU and a bad option get C's
//! output and status.
//!
//! udaddy has no port option (its port is 7174), so the tests that run a server take turns.

use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{cm_addr, cm_listening, open_cm, strings, Program, Running};

const TIMEOUT: Duration = Duration::from_secs(60);
/// udaddy's port.
const PORT: u16 = 7174;
/// The server of one test at a time: they all listen on [`PORT`].
static PORT_IN_USE: Mutex<()> = Mutex::new(());

/// `program` as the server on the CM address with `args`, once it listens.
fn server(program: Program, args: &[&str]) -> Running {
    open_cm();
    let addr = cm_addr().to_string();
    let mut all = vec!["-b", addr.as_str()];
    all.extend(args);
    let mut s = Running::spawn("server", &program.example("udaddy"), &strings(&all));
    let at = SocketAddr::new(cm_addr(), PORT);
    s.wait_until("listened", TIMEOUT, || cm_listening(at));
    s
}

/// A server and a client of `args` (connections, messages, sizes, the same on both
/// sides), each done with all its datagrams.
fn exchange(server_program: Program, client_program: Program, args: &[&str], bind: bool) {
    let _turn = PORT_IN_USE.lock().unwrap_or_else(PoisonError::into_inner);
    let s = server(server_program, args);
    let addr = cm_addr().to_string();
    let mut all = vec!["-s", addr.as_str()];
    if bind {
        all.extend(["-b", addr.as_str()]);
    }
    all.extend(args);
    let c = Running::spawn("client", &client_program.example("udaddy"), &strings(&all))
        .finish_by(Instant::now() + TIMEOUT);
    let server_out = s.finish_by(Instant::now() + TIMEOUT);
    let what = format!("{server_program:?} server, {client_program:?} client, {args:?}");
    let c = c.unwrap_or_else(|out| panic!("{what}: the client hung\n{out}"));
    let s = server_out
        .unwrap_or_else(|out| panic!("{what}: the server hung\n{out}\nclient:\n{}", c.context()));
    c.assert_clean(
        &format!("{what}: client"),
        &[
            "udaddy: starting client",
            "udaddy: connecting",
            "initiating data transfers",
            "receiving data transfers",
            "data transfers complete",
            "test complete",
            "return status 0",
        ],
    );
    s.assert_clean(
        &format!("{what}: server"),
        &[
            "udaddy: starting server",
            "receiving data transfers",
            "sending replies",
            "data transfers complete",
            "test complete",
            "return status 0",
        ],
    );
}

#[test]
fn rust_server_c_client() {
    exchange(Program::Rust, Program::C, &[], false);
}

#[test]
fn c_server_rust_client() {
    exchange(Program::C, Program::Rust, &[], false);
}

#[test]
fn rust_server_c_client_two_connections_of_full_size_datagrams() {
    exchange(
        Program::Rust,
        Program::C,
        &["-c", "2", "-C", "50", "-S", "1024"],
        false,
    );
}

#[test]
fn c_server_rust_client_two_connections_from_a_bound_source_with_a_tos() {
    // The TOS is the client's (set once each address is resolved); the server ignores it.
    exchange(
        Program::C,
        Program::Rust,
        &["-c", "2", "-C", "30", "-t", "0x20"],
        true,
    );
}

#[test]
fn rust_server_rust_client_three_connections_from_a_bound_source() {
    exchange(
        Program::Rust,
        Program::Rust,
        &["-c", "3", "-C", "40", "-S", "512"],
        true,
    );
}

/// What `program` prints and returns for `args`, its path written as `udaddy`.
fn run_alone(program: Program, args: &[&str]) -> (Option<i32>, String, String) {
    rdma_verbs_test_kit::run_alone(&program.example("udaddy"), "udaddy", args, TIMEOUT)
}

#[test]
fn a_message_over_the_mtu_fails_as_in_c() {
    // The client checks the size once the route is resolved, before it connects: no server.
    open_cm();
    let addr = cm_addr().to_string();
    let args = ["-s", addr.as_str(), "-S", "100000"];
    let (ours, c) = (
        run_alone(Program::Rust, &args),
        run_alone(Program::C, &args),
    );
    assert_eq!(ours, c);
    assert!(
        c.1.contains("message_size 100000 is larger than active mtu"),
        "{c:?}"
    );
    assert_eq!(c.0, Some(234), "-EINVAL");
}

#[test]
fn a_bad_option_gets_cs_usage() {
    let (ours, c) = (
        run_alone(Program::Rust, &["-h"]),
        run_alone(Program::C, &["-h"]),
    );
    assert_eq!(ours, c);
    assert_eq!(c.0, Some(1));
}
