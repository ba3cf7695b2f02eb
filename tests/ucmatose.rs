//! Our `ucmatose` (the package's example) against rdma-core's (`/usr/bin`, package
//! rdmacm-utils) in both roles, and against itself, on the rdma_cm device (run through
//! `scripts/with-rdma`, which names its address in `$WITH_RDMA_CM_ADDR`; a missing one is a
//! failure, not a skip): several connections, messages both ways, all disconnected; with
//! the options that change the protocol (a bound client, TOS, ACK timeout, migration to a
//! new event channel, no messages, the IB port space); both sides end with status 0 and
//! print exactly C's lines; a client nobody answers fails as C's does; a bad option gets
//! C's usage. Each test uses its own port, so they run in parallel.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{cm_addr, cm_listening, open_cm, run_alone, Program, Running};

const TIMEOUT: Duration = Duration::from_secs(120);

/// A run's options beyond the addresses and port.
#[derive(Clone, Copy)]
struct Run {
    connections: u32,
    messages: u32,
    size: u32,
    /// The client binds to the CM address (`-b`).
    bound: bool,
    /// Both sides move their ids to a new channel before disconnecting (`-m`).
    migrate: bool,
    /// The client's TOS (`-t`) and both sides' ACK timeout (`-a`).
    tos_and_timeout: Option<(u8, u8)>,
    /// Both sides in the IB port space (`-P ib`), with IP addresses.
    ib: bool,
}

impl Run {
    fn args(self, port: u16) -> Vec<String> {
        let mut args = vec![
            "-p".to_owned(),
            port.to_string(),
            "-c".into(),
            self.connections.to_string(),
            "-C".into(),
            self.messages.to_string(),
            "-S".into(),
            self.size.to_string(),
        ];
        if self.migrate {
            args.push("-m".into());
        }
        if self.ib {
            args.extend(["-P".into(), "ib".into()]);
        }
        if let Some((_, timeout)) = self.tos_and_timeout {
            args.extend(["-a".into(), timeout.to_string()]);
        }
        args
    }

    /// What each side prints, line by line, when all goes well.
    fn expected(self, server: bool) -> String {
        let mut lines = vec![if server {
            "cmatose: starting server"
        } else {
            "cmatose: starting client"
        }];
        if !server {
            lines.push("cmatose: connecting");
        }
        match (self.messages, server) {
            (0, _) => {}
            (_, true) => lines.extend([
                "initiating data transfers",
                "completing sends",
                "receiving data transfers",
                "data transfers complete",
            ]),
            (_, false) => lines.extend([
                "receiving data transfers",
                "sending replies",
                "data transfers complete",
            ]),
        }
        if self.migrate {
            lines.push("migrating to new event channel");
        }
        if server {
            lines.extend(["cmatose: disconnecting", "disconnected"]);
        }
        lines.extend(["test complete", "return status 0", ""]);
        lines.join("\n")
    }
}

fn connect(server_program: Program, client_program: Program, port: u16, run: Run) {
    open_cm();
    let addr = cm_addr().to_string();
    let mut server_args = vec!["-b".to_owned(), addr.clone()];
    server_args.extend(run.args(port));
    let mut s = Running::spawn("server", &server_program.example("ucmatose"), &server_args);
    let at = SocketAddr::new(cm_addr(), port);
    s.wait_until("listened", TIMEOUT, || cm_listening(at));

    let mut client_args = vec!["-s".to_owned(), addr.clone()];
    if run.bound {
        client_args.extend(["-b".to_owned(), addr]);
    }
    if let Some((tos, _)) = run.tos_and_timeout {
        client_args.extend(["-t".to_owned(), tos.to_string()]);
    }
    client_args.extend(run.args(port));
    let c = Running::spawn("client", &client_program.example("ucmatose"), &client_args)
        .finish(Instant::now() + TIMEOUT);
    let what = format!("{server_program:?} server, {client_program:?} client");
    let s = match s.finish_by(Instant::now() + TIMEOUT) {
        Ok(s) => s,
        Err(output) => panic!(
            "{what}: the server did not end\n{output}\nclient:\n{}",
            c.context()
        ),
    };
    for (out, other, server) in [(&c, &s, false), (&s, &c, true)] {
        let role = if server { "server" } else { "client" };
        assert!(
            out.status.success(),
            "{what}: {role} {}\n{}\nthe other:\n{}",
            out.status,
            out.context(),
            other.context()
        );
        assert_eq!(out.stdout, run.expected(server), "{what}: {role}");
        assert_eq!(out.stderr, "", "{what}: {role}");
    }
}

/// Several connections with messages both ways.
const MESSAGES: Run = Run {
    connections: 4,
    messages: 20,
    size: 1000,
    bound: false,
    migrate: false,
    tos_and_timeout: None,
    ib: false,
};

/// And the options: a bound client, TOS and ACK timeout, migration.
const OPTIONS: Run = Run {
    connections: 3,
    messages: 10,
    size: 100,
    bound: true,
    migrate: true,
    tos_and_timeout: Some((32, 18)),
    ib: false,
};

#[test]
fn rust_server_c_client() {
    connect(Program::Rust, Program::C, 47530, MESSAGES);
}

#[test]
fn c_server_rust_client() {
    connect(Program::C, Program::Rust, 47531, MESSAGES);
}

#[test]
fn rust_server_rust_client() {
    connect(Program::Rust, Program::Rust, 47532, MESSAGES);
}

#[test]
fn rust_server_c_client_with_options() {
    connect(Program::Rust, Program::C, 47533, OPTIONS);
}

#[test]
fn c_server_rust_client_with_options() {
    connect(Program::C, Program::Rust, 47534, OPTIONS);
}

#[test]
fn rust_server_c_client_without_messages() {
    let run = Run {
        messages: 0,
        ..MESSAGES
    };
    connect(Program::Rust, Program::C, 47535, run);
}

#[test]
fn rust_server_c_client_in_the_ib_port_space() {
    let run = Run {
        ib: true,
        ..MESSAGES
    };
    connect(Program::Rust, Program::C, 47536, run);
}

#[test]
fn c_server_rust_client_in_the_ib_port_space() {
    let run = Run {
        ib: true,
        ..MESSAGES
    };
    connect(Program::C, Program::Rust, 47537, run);
}

/// Nobody listens on the port: each connect is rejected (reason 8, invalid service ID), and
/// both clients say so alike, ending with the reason as their status.
#[test]
fn a_client_nobody_answers_fails_as_cs() {
    open_cm();
    let run = |program: Program| {
        let args = ["-s", &cm_addr().to_string(), "-p", "47538", "-c", "2"].map(String::from);
        let out = Running::spawn("client", &program.example("ucmatose"), &args)
            .finish(Instant::now() + TIMEOUT);
        (out.status.code(), out.stdout, out.stderr)
    };
    let (ours, c) = (run(Program::Rust), run(Program::C));
    assert_eq!(ours, c);
    assert!(
        c.1.contains("cmatose: event: RDMA_CM_EVENT_REJECTED, error: 8\n"),
        "{}",
        c.1
    );
}

#[test]
fn a_bad_option_gets_cs_usage() {
    let run =
        |program: Program| run_alone(&program.example("ucmatose"), "ucmatose", &["-h"], TIMEOUT);
    let (ours, c) = (run(Program::Rust), run(Program::C));
    assert_eq!(ours, c);
    assert_eq!(c.0, Some(1));
}
