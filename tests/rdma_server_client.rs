//! Our `rdma_server` and `rdma_client` (the package's examples) against rdma-core's
//! (`/usr/bin`, package rdmacm-utils) in both roles, and against each other, on the rdma_cm
//! device (run through `scripts/with-rdma`, which names its address in
//! `$WITH_RDMA_CM_ADDR`; a missing one is a failure, not a skip): the client sends its 16
//! bytes, the server answers, both end with status 0 and print exactly C's lines; a client
//! that nobody answers fails as C's does; a bad option gets C's usage. Each test uses its
//! own port, so they run in parallel.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{cm_addr, cm_listening, open_cm, run_alone, Outcome, Program, Running};

const TIMEOUT: Duration = Duration::from_secs(60);

/// The client `program` against the CM address on `port`, run to its end.
fn client(program: Program, port: u16) -> Outcome {
    open_cm();
    let args = [
        "-s".into(),
        cm_addr().to_string(),
        "-p".into(),
        port.to_string(),
    ];
    Running::spawn("client", &program.example("rdma_client"), &args)
        .finish(Instant::now() + TIMEOUT)
}

fn exchange(server_program: Program, client_program: Program, port: u16) {
    open_cm();
    let args = [
        "-s".into(),
        cm_addr().to_string(),
        "-p".into(),
        port.to_string(),
    ];
    let mut s = Running::spawn("server", &server_program.example("rdma_server"), &args);
    let at = SocketAddr::new(cm_addr(), port);
    s.wait_until("listened", TIMEOUT, || cm_listening(at));
    let c = client(client_program, port);
    let what = format!("{server_program:?} server, {client_program:?} client");
    let s = match s.finish_by(Instant::now() + TIMEOUT) {
        Ok(s) => s,
        Err(output) => panic!(
            "{what}: the server did not end\n{output}\nclient:\n{}",
            c.context()
        ),
    };
    for (out, role) in [(&c, "client"), (&s, "server")] {
        assert!(
            out.status.success(),
            "{what}: {role} {}\n{}\nthe other:\n{}",
            out.status,
            out.context(),
            if role == "client" { &s } else { &c }.context()
        );
        assert_eq!(
            out.stdout,
            format!("rdma_{role}: start\nrdma_{role}: end 0\n"),
            "{what}: {role}"
        );
        assert_eq!(out.stderr, "", "{what}: {role}");
    }
}

#[test]
fn rust_server_c_client() {
    exchange(Program::Rust, Program::C, 47520);
}

#[test]
fn c_server_rust_client() {
    exchange(Program::C, Program::Rust, 47521);
}

#[test]
fn rust_server_rust_client() {
    exchange(Program::Rust, Program::Rust, 47522);
}

/// Nobody listens on the port: the connect is rejected, and both clients say so alike
/// (`rdma_connect: Connection refused`, `end -1`, status 255).
#[test]
fn a_client_nobody_answers_fails_as_cs() {
    let run = |program: Program| {
        let out = client(program, 47523);
        (out.status.code(), out.stdout, out.stderr)
    };
    let (ours, c) = (run(Program::Rust), run(Program::C));
    assert_eq!(ours, c);
    assert_eq!(c.0, Some(255), "{}\n{}", c.1, c.2);
}

#[test]
fn a_bad_option_gets_cs_usage() {
    for name in ["rdma_server", "rdma_client"] {
        let run = |program: Program| run_alone(&program.example(name), name, &["-h"], TIMEOUT);
        let (ours, c) = (run(Program::Rust), run(Program::C));
        assert_eq!(ours, c, "{name}");
        assert_eq!(c.0, Some(1), "{name}");
    }
}
