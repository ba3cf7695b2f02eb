//! Our `cmtime` (the package's example) against rdma-core's (`/usr/bin`, package
//! rdmacm-utils) in both roles, and against itself, on the rdma_cm device (run through
//! `scripts/with-rdma`, which names its address in `$WITH_RDMA_CM_ADDR`; a missing one is a
//! failure, not a skip): every client connects and disconnects all its connections and
//! prints C's table, every step timed for every connection; a bad option gets C's usage.
//! Each test uses its own port, so they run in parallel.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{cm_addr, cm_listening, open_cm, run_alone, Outcome, Program, Running};

const TIMEOUT: Duration = Duration::from_secs(120);
const CONNECTIONS: usize = 20;

/// `program` as the server on `port` of the CM address, once it listens.
fn server(program: Program, port: u16) -> Running {
    open_cm();
    let args = [
        "-b".into(),
        cm_addr().to_string(),
        "-p".into(),
        port.to_string(),
    ];
    let mut s = Running::spawn("server", &program.example("cmtime"), &args);
    let at = SocketAddr::new(cm_addr(), port);
    s.wait_until("listened", TIMEOUT, || cm_listening(at));
    s
}

/// The rows of a client's table: step name and its four figures.
fn table(out: &Outcome) -> Vec<(String, [f64; 4])> {
    let header = "step              total ms     max ms     min us  us / conn";
    let start = out
        .stdout
        .lines()
        .position(|l| l == header)
        .unwrap_or_else(|| panic!("no table\n{}", out.context()));
    out.stdout
        .lines()
        .skip(start + 1)
        .map(|line| {
            let (name, figures) = line.split_once(':').expect("step: figures");
            let figures: Vec<f64> = figures
                .split_whitespace()
                .map(|f| f.parse().expect("a figure"))
                .collect();
            let figures: [f64; 4] = figures.try_into().expect("four figures");
            (name.trim_end().to_owned(), figures)
        })
        .collect()
}

fn connect(server_program: Program, client_program: Program, port: u16, bind: bool) {
    let s = server(server_program, port);
    let addr = cm_addr().to_string();
    let mut args = vec![
        "-s".to_owned(),
        addr.clone(),
        "-p".into(),
        port.to_string(),
        "-c".into(),
        CONNECTIONS.to_string(),
    ];
    if bind {
        args.extend(["-b".to_owned(), addr]);
    }
    let c = Running::spawn("client", &client_program.example("cmtime"), &args)
        .finish(Instant::now() + TIMEOUT);
    let what = format!("{server_program:?} server, {client_program:?} client");
    let server_out = s.finish_by(Instant::now()).err().unwrap_or_default();
    assert!(
        c.status.success(),
        "{what}: client {}\n{}\nserver:\n{server_out}",
        c.status,
        c.context()
    );
    assert!(
        !c.stdout.contains("error") && !c.stderr.contains("fail"),
        "{what}: {}\nserver:\n{server_out}",
        c.context()
    );
    let mut steps = vec!["create id"];
    if bind {
        steps.push("bind addr");
    }
    steps.extend([
        "resolve addr",
        "resolve route",
        "create qp",
        "connect",
        "disconnect",
        "destroy",
    ]);
    let rows = table(&c);
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, steps, "{what}: {}", c.context());
    for (name, [total, max, min, per_conn]) in &rows {
        // Every connection went through the step: its fastest is no slower than its
        // slowest, and the total is the time per connection times their number.
        assert!(
            *min <= max * 1000.0 + 0.01,
            "{what}: {name}: {}",
            c.context()
        );
        // The total is printed to 0.01 ms and the time per connection to 0.01 µs: the
        // first's rounding, spread over the connections, is the larger (0.25 µs for a
        // step of 20 µs per connection, over 1%).
        let expect = total * 1000.0 / CONNECTIONS as f64;
        let rounding = 0.005 * 1000.0 / CONNECTIONS as f64 + 0.005;
        assert!(
            (per_conn - expect).abs() <= 0.01 * expect.max(1.0) + rounding,
            "{what}: {name}: {}",
            c.context()
        );
    }
}

#[test]
fn rust_server_c_client() {
    connect(Program::Rust, Program::C, 47510, false);
}

#[test]
fn c_server_rust_client() {
    connect(Program::C, Program::Rust, 47511, false);
}

#[test]
fn rust_server_rust_client_with_a_bound_source() {
    connect(Program::Rust, Program::Rust, 47512, true);
}

#[test]
fn c_server_rust_client_with_a_bound_source() {
    connect(Program::C, Program::Rust, 47513, true);
}

#[test]
fn a_bad_option_gets_cs_usage() {
    let run = |program: Program| run_alone(&program.example("cmtime"), "cmtime", &["-h"], TIMEOUT);
    let (ours, c) = (run(Program::Rust), run(Program::C));
    assert_eq!(ours, c);
    assert_eq!(c.0, Some(1));
}
