//! `perftest`, the guide's one command (`perftest -s 192.168.1.2 -n 1024 -t 60`), on the
//! device (run through `scripts/with-rdma`; rxe0 on `lo` in CI): a server and a client,
//! shortened to `-t 1`, each print the write bandwidth table and then the send latency
//! table, with the size asked for, and exit 0; `-h` lists every flag; a bad flag and a host
//! nobody answers on fail with one line on stderr and status 2, within a deadline.
//!
//! Ours is the package's binary, which `cargo test` builds before this test. The device is
//! `$IBVERBS_TEST_DEVICE` (default `rxe0`); without it the tests fail. Both ends run here
//! and meet over TCP on 127.0.0.1, on a port of their own.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{device, free_port, listening, open, tool, Outcome, Running};

/// How long a run of two one-second tests (or a failure) may take before it counts as hung:
/// each test's setup, its second and its closing exchange, in a loaded VM.
const DEADLINE: Duration = Duration::from_secs(60);

/// Starts our `perftest` with `args` (its `argv[0]` `perftest`, as installed), as `name`.
fn perftest(name: &str, args: &[&str]) -> Running {
    Running::start(
        name,
        Command::new(tool("perftest")).arg0("perftest").args(args),
    )
}

/// The lines of `text` from the one equal to `header` (trimmed) on, up to the separator
/// after it: a result table's header and its result lines.
fn table<'a>(text: &'a str, header: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| l.trim() != header)
        .take_while(|l| !l.starts_with("----"))
        .collect()
}

/// Asserts that `out` shows the write bandwidth table, then the send latency table (the
/// duration mode's), each with one result line for `size`-byte messages.
fn assert_both_tables(what: &str, out: &Outcome, size: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        out.status,
        out.context()
    );
    let text = &out.stdout;
    let bw = text.find("RDMA_Write BW Test");
    let lat = text.find("Send Latency Test");
    assert!(
        bw.is_some() && lat.is_some() && bw < lat,
        "{what}: not the bandwidth test then the latency test\n{}",
        out.context()
    );
    for header in [
        "#bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
        "#bytes        #iterations       t_avg[usec]    tps average",
    ] {
        let lines = table(text, header);
        assert_eq!(
            lines.len(),
            2,
            "{what}: no table {header:?} with one result\n{}",
            out.context()
        );
        let fields: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(fields.first(), Some(&size), "{what}: {}", lines[1]);
        let iterations = fields.get(1).and_then(|f| f.parse::<u64>().ok());
        assert!(iterations > Some(0), "{what}: no iterations: {}", lines[1]);
    }
    assert!(
        !out.stderr.contains("panicked"),
        "{what}: {}",
        out.context()
    );
}

/// Asserts that `out` failed with status 2 and exactly one line on stderr, starting with
/// `perftest: ` and containing `why`.
fn assert_one_line_failure(what: &str, out: &Outcome, why: &str) {
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        out.status.code() == Some(2)
            && lines.len() == 1
            && lines[0].starts_with("perftest: ")
            && lines[0].contains(why),
        "{what}: expected status 2 and one line with {why:?}\n{}",
        out.context()
    );
}

/// The guide's line with `-t 1`: a server, then a client to it on 127.0.0.1.
#[test]
fn server_and_client_print_both_tables() {
    drop(open());
    let dev = device();
    let port = free_port().to_string();
    let common = ["-d", &dev, "-p", &port, "-n", "1024", "-t", "1"];
    let mut server = perftest("server", &common);
    server.wait_until("listened", DEADLINE, || listening(port.parse().unwrap()));
    let client_args = [&["-s", "127.0.0.1"][..], &common].concat();
    let deadline = Instant::now() + DEADLINE;
    let client = perftest("client", &client_args).finish(deadline);
    let server = server.finish(deadline);
    assert_both_tables("client", &client, "1024");
    assert_both_tables("server", &server, "1024");
    println!("server:\n{}\nclient:\n{}", server.stdout, client.stdout);
}

/// `-h`: the usage on stdout, naming every flag, and status 0.
#[test]
fn help_lists_every_flag() {
    let out = perftest("perftest -h", &["-h"]).finish(Instant::now() + DEADLINE);
    assert!(out.status.success(), "{}", out.context());
    for flag in ["-s", "-n", "-t", "-d", "-i", "-x", "-p", "-h"] {
        assert!(
            out.stdout.contains(&format!("  {flag}, --")),
            "-h does not list {flag}\n{}",
            out.context()
        );
    }
}

/// A bad flag fails before anything starts; a client whose server does not answer (nobody
/// listens on the port; an address with no route, RFC 5737's TEST-NET-1) fails at its
/// connect, once (within the connect timeout of 20 s where the address is routed).
#[test]
fn bad_flag_and_unreachable_host_fail_in_one_line() {
    drop(open());
    let dev = device();
    let port = free_port().to_string();
    let deadline = || Instant::now() + DEADLINE;
    let out = perftest("bad flag", &["-z"]).finish(deadline());
    assert_one_line_failure("perftest -z", &out, "invalid option -- 'z'");
    for host in ["127.0.0.1", "192.0.2.1"] {
        let args = ["-d", &dev, "-p", &port, "-n", "1024", "-t", "1", "-s", host];
        let out = perftest(host, &args).finish(deadline());
        let why = format!("Couldn't connect to {host}:{port}");
        assert_one_line_failure(&format!("perftest -s {host}"), &out, &why);
    }
}
