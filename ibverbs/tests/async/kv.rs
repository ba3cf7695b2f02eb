//! The `kv` example (features `tokio` and `cm`, built by `cargo build --examples`) on the
//! CM device: one server process, two client processes of 32 connections each, every
//! connection with 4 requests in flight. The server shuts down once all 64 connected and
//! 2048 requests were answered; every program must end with status 0, which says that
//! every value was checked byte for byte, every connection was closed by the server's
//! disconnect after its last answer, and no destroy call failed in a destructor.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{cm_addr, cm_listening, example, free_port, open_cm, Outcome, Running};

/// How long the whole run may take (a few seconds under TCG).
const TIMEOUT: Duration = Duration::from_secs(60);

/// The number after `label ` in `line` (`requests 2048` gives 2048 for `requests`).
fn count(line: &str, label: &str) -> u64 {
    let after = line.split(&format!("{label} ")).nth(1);
    let word = after.and_then(|rest| rest.split_whitespace().next());
    word.and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no number after {label:?} in {line:?}"))
}

/// The line of `out`'s stdout that starts with `prefix`.
fn line<'a>(out: &'a Outcome, prefix: &str) -> &'a str {
    let found = out.stdout.lines().find(|l| l.starts_with(prefix));
    found.unwrap_or_else(|| panic!("no {prefix:?} line\n{}", out.context()))
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_server_task_serves_64_clients_and_shuts_down_cleanly() {
    open_cm();
    let (addr, port) = (cm_addr().to_string(), free_port().to_string());
    let kv = example("kv");
    let start = Instant::now();
    let mut server = Running::spawn(
        "server",
        &kv,
        &args(&[
            "server",
            "-a",
            &addr,
            "-p",
            &port,
            "--clients",
            "64",
            "--requests",
            "2048",
        ]),
    );
    let at = SocketAddr::new(cm_addr(), port.parse().unwrap());
    server.wait_until("listened", TIMEOUT, || cm_listening(at));
    let client = &args(&[
        "client",
        "-a",
        &addr,
        "-p",
        &port,
        "--connections",
        "32",
        "--depth",
        "4",
        "--max-value",
        "20000",
    ]);
    let clients: Vec<Running> = (0..2)
        .map(|_| Running::spawn("client", &kv, client))
        .collect();
    let deadline = start + TIMEOUT;
    for client in clients {
        let out = client.finish(deadline);
        assert!(out.status.success(), "a client failed\n{}", out.context());
        let done = line(&out, "client:");
        assert_eq!(count(done, "connections"), 32, "{done}");
        // Each slot's first request is a get of a key not put yet, answered before the
        // disconnect; later gets were checked against the puts.
        assert!(count(done, "not_found") >= 32 * 4, "{done}");
        assert!(count(done, "gets") > count(done, "not_found"), "{done}");
        assert!(
            count(done, "puts") > 0 && count(done, "checked") > 0,
            "{done}"
        );
    }
    let out = server.finish(deadline);
    assert!(out.status.success(), "the server failed\n{}", out.context());
    let done = line(&out, "server:");
    assert!(count(done, "requests") >= 2048, "{done}");
    assert_eq!(count(done, "connections"), 64, "{done}");
    eprintln!("64 clients served in {:?}", start.elapsed());
}
