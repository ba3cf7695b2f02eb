//! Link faults between two hosts: RC queue pairs between this process and a peer process on
//! the other host, while the link between the hosts loses every packet, goes down, or loses
//! 5% of the packets each way.
//!
//! The hosts: run with `WITH_RDMA_TOPOLOGY=pair` (`scripts/with-rdma` runs this binary in VM
//! a of two VMs joined by a virtual Ethernet link), or on hosts of your own described by:
//!
//! - `WITH_RDMA_LINK_DEVICE`: the RDMA device on the link (RoCE), e.g. `rxe1`;
//! - `WITH_RDMA_LINK_NETDEV`: its network device, where the faults are injected
//!   (`tc qdisc ... netem`, `ip link set ... down`: this needs root);
//! - `WITH_RDMA_LOCAL_ADDR`, `WITH_RDMA_PEER_ADDR`: this host's and the peer's IPv4 addresses
//!   on the link;
//! - `WITH_RDMA_PEER_EXEC`: a command prefix (split at whitespace) that runs a command on the
//!   peer, e.g. `ssh root@peer env WITH_RDMA_LINK_DEVICE=rxe0 WITH_RDMA_LINK_NETDEV=eth1`
//!   (the peer needs the same two device variables, and this binary and our tools at the
//!   same paths).
//!
//! Without them every test fails. The peer process is this binary re-executed on the peer
//! through `WITH_RDMA_PEER_EXEC`, as the ignored test `peer::peer_process` with
//! `LINK_FAULTS_PEER` set to the address to connect back to. Over that TCP connection (on
//! the link) it takes one-line commands: set up a new QP, check what was written into it,
//! receive a stream, inject or clear a fault on its own side, run a perftest (ours or
//! C's), rping, ucmatose or gRPC server. The tests share it (starting a process on the other VM takes seconds) and take
//! turns with it, so they run one at a time, as they must: they share the link.
//!
//! Each test prints what it measured (for the faults, the time from the fault to the first
//! error completion and the status seen; run with `--nocapture` to see it), removes its
//! faults on every path (guards), and checks at its end that no destroy call failed in a
//! destructor, here or in the peer process.
//!
//! Here: the tests of faults. `link`: the link's configuration and the faults injected on
//! it. `peer`: the peer process, from here and there. `qos`: the traffic class on the wire,
//! captured on the link (no fault). `traffic`: the data layout, this host's verbs objects
//! and the streams of writes.

mod link;
mod peer;
mod qos;
mod traffic;

use std::io::Read;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rdma_verbs::stream::{RdmaStream, StreamConfig};
use rdma_verbs::{ConnectOptions, QpState, SendRequest, WcOpcode, WcStatus, WorkCompletion};
use rdma_verbs_test_kit::{
    assert_clean_drops, assert_empty, c_tool, example, rping_ended_well, tool, Running,
};
use tokio::io::AsyncReadExt;

use link::{gid_index, Fault, FaultKind, Link};
use peer::{Peer, PeerTurn};
use traffic::{
    bulk_offset, message, poll, recv_index, ring_offset, stream_into_fault, write_records, Host,
    Op, DEPTH, MESSAGES, RECORDS, SLOT,
};

/// How long any one wait may last before the test declares a hang.
const GUARD: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------- outages

/// Local ACK timeout of the outage tests: 4.096 µs × 2^14 ≈ 67 ms per try.
const TIMEOUT: u8 = 14;
/// Transport retries of the outage tests: 7 tries in all. Not 7 retries: rxe (Linux 6.1,
/// and later kernels alike) takes a `retry_cnt` of 7 to mean "retry forever", as the
/// InfiniBand spec has it only for `rnr_retry` (rxe_comp.c, COMPST_ERROR_RETRY decrements
/// the count only when it is not 7), so on rxe a QP with retry_cnt 7 (perftest's and
/// `ConnectOptions`' default) never gives up on a dead link.
const RETRY_CNT: u8 = 6;

/// How long the transport tries before it gives up: the ACK timeout times the tries.
fn retry_time(timeout: u8, retry_cnt: u8) -> Duration {
    Duration::from_nanos(4096 << timeout) * (u32::from(retry_cnt) + 1)
}

/// A stream of RC writes to the peer meets `kind` on this host's side of the link: the
/// oldest outstanding write fails with one of `expected` within the retry time
/// (generously bounded), every later one is flushed, the QP is in ERROR, and what the
/// peer holds is whole. Once the fault is gone, a new QP pair between the same processes
/// carries writes that the peer verifies.
fn outage(kind: FaultKind, name: &str, expected: &[WcStatus]) {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let mut host = Host::open(&link.device, link.local);
    let opts = ConnectOptions::new().timeout(TIMEOUT).retry_cnt(RETRY_CNT);
    let nominal = retry_time(TIMEOUT, RETRY_CNT);
    // Generous for an emulated machine: timers fire late when the host is busy.
    let bound = nominal * 4 + Duration::from_secs(2);

    let (mut side, peer_mem) = peer.connect(&host, &opts, 0);
    let (out, fault) = stream_into_fault(&mut side, peer_mem, &link, kind);
    let (status, wr_id, after) = out.first_error;
    eprintln!(
        "{name}: {status} on write {wr_id} {after:.2?} after the fault was injected (in \
         place after {:.2?}); then {} flushed (WR_FLUSH_ERR); retry time {nominal:.2?} \
         (timeout {TIMEOUT}, retry_cnt {RETRY_CNT}), bound {bound:.2?}",
        out.in_place, out.flushed
    );
    assert!(expected.contains(&status), "the first error is {status}");
    assert_eq!(
        out.flushed,
        out.posted - wr_id - 1,
        "every later write is flushed"
    );
    assert!(
        after <= bound,
        "the error came after {after:?}, beyond {bound:?}"
    );
    assert_eq!(side.qp.query().unwrap().state, QpState::Error);
    assert_empty(&side.cq, "after the drain");

    let cleared = Instant::now();
    fault.remove();
    // After a link down, the port and the GID come back a moment after the link.
    let gid = gid_index(&host.ctx, link.local, GUARD);
    if gid != host.gid_index {
        eprintln!(
            "{name}: the GID moved from index {} to {gid}",
            host.gid_index
        );
        host.gid_index = gid;
    }
    let last_ok = out.last_ok.map_or("-".to_owned(), |n| n.to_string());
    let answer = peer.ask(&format!("records {last_ok} {}", out.posted));
    assert!(answer.starts_with("ok "), "peer: {answer}");
    drop(side);

    let (mut side, peer_mem) = peer.connect(&host, &opts, 0);
    write_records(&mut side, peer_mem, RECORDS as u64);
    let answer = peer.ask(&format!("records {} {RECORDS}", RECORDS - 1));
    assert_eq!(
        answer,
        format!("ok {RECORDS}"),
        "the peer's check of the new QP's writes"
    );
    assert_eq!(side.qp.query().unwrap().state, QpState::Rts);
    eprintln!(
        "{name}: a new QP pair wrote {RECORDS} records, verified by the peer, {:.2?} after \
         the fault was removed",
        cleared.elapsed()
    );
    drop(side);
    peer.assert_clean_drops();
    drop(host);
    assert_clean_drops();
}

/// Nothing this host sends reaches the peer: the retries run out (`RETRY_EXC_ERR`).
#[test]
fn total_loss_fails_outstanding_writes_then_a_new_qp_works() {
    let kind = FaultKind::Netem("loss 100%".into());
    outage(kind, "netem loss 100%", &[WcStatus::RETRY_EXC_ERR]);
}

/// The network device goes down (administratively, which also takes its routes away). A
/// device whose port goes down retries until the retries run out (`RETRY_EXC_ERR`); rxe
/// fails the first packet it cannot route, sent or resent after the timeout, with
/// `LOC_QP_OP_ERR`.
///
/// Ignored: on rxe over virtio-net (Linux 6.1) about one run in five the QP never completes
/// anything after the link goes down: it stays in RTS, its hardware counters stop moving
/// (no retry, no send error, no retry exceeded) and nothing arrives within the guard. The
/// likely cause is rxe's limit on packets in flight per QP (the requester waits for the
/// destructors of its sent packets, and those still in the down device's transmit ring
/// are not freed, so it never sends again, and its retransmit timer is not rearmed).
/// Run it with `--ignored` to reproduce.
#[test]
#[ignore = "rxe over virtio-net sometimes hangs forever when the link goes down (see the doc)"]
fn link_down_fails_outstanding_writes_then_a_new_qp_works() {
    let expected = [WcStatus::RETRY_EXC_ERR, WcStatus::LOC_QP_OP_ERR];
    outage(FaultKind::LinkDown, "link down", &expected);
}

// ---------------------------------------------------------------- loss

/// Loss on both sides of the link (netem acts on what a host sends): data packets and
/// acknowledgements are lost.
const LOSS: &str = "loss 5%";

/// With 5% of the packets lost each way, a stream of sends, RDMA writes with immediate and
/// plain RDMA writes of 1..=4096 bytes (1 to 4 packets) all complete successfully, in
/// order, and the peer receives each one whole and in order; the plain writes are all in
/// its memory at the end. The netem drop counters show that packets were lost.
///
/// Run once more, on new QPs with a new peer process, when the peer's rxe refuses one of
/// the requests as invalid (`REM_INV_REQ_ERR` here, the peer's receives flushed). That
/// happened once in the project's CI (Linux 6.1 on both VMs of the pair), to message 1441
/// of 1500, a write with immediate; 28 runs in the same pair (20 of this test alone, 8 of
/// the whole binary) did not repeat it. The requests are the same in every run and each is
/// valid (the runs that pass carry them all), so the refusal comes from the two kernels'
/// retransmission, not from what this host posted. A likely cause: in 6.1's rxe a retry
/// (`req_retry`, run by the requester's tasklet after a timeout or an RNR NAK) reads the
/// completer's state (its PSN, the send queue's consumer index) while the completer's
/// tasklet may be changing it on the other CPU, and can resend a message from the wrong
/// packet. Any other failure, or this one twice, fails the test.
#[test]
fn five_percent_loss_each_way_delivers_every_message_intact() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    if let Err(refused) = exchange_under_loss(&link, &mut peer) {
        eprintln!(
            "{LOSS} each way: the peer's rxe refused a request as invalid ({refused}); \
             running once more on new QPs with a new peer process"
        );
        peer.restart(&link);
        if let Err(again) = exchange_under_loss(&link, &mut peer) {
            panic!("the peer's rxe refused a request as invalid twice: {refused}; {again}");
        }
    }
}

/// One run of the loss test; `Err` (naming the message) when the peer's rxe refused one of
/// the requests as invalid (the peer process is then in a state no test can vouch for).
fn exchange_under_loss(link: &Link, peer: &mut Peer) -> Result<(), String> {
    let host = Host::open(&link.device, link.local);
    let (mut side, peer_mem) = peer.connect(&host, &ConnectOptions::new(), 0);
    assert_eq!(peer.ask(&format!("netem {LOSS}")), "ok");
    let fault = Fault::netem(&link.netdev, LOSS);
    assert_eq!(peer.ask(&format!("receive {MESSAGES}")), "ready");

    let depth = u64::from(DEPTH);
    let (mut posted, mut done, mut bytes) = (0u64, 0u64, 0u64);
    let mut wc = [WorkCompletion::default(); 16];
    let start = Instant::now();
    let mut last = start;
    while done < MESSAGES {
        while posted < MESSAGES && posted - done < depth {
            let k = posted;
            let data = message(k);
            let at = (k % depth) as usize * SLOT;
            side.mem.write(at, &data).unwrap();
            let sge = [side.mem.sge(at..at + data.len()).unwrap()];
            let len = data.len() as u64;
            let wr = match Op::of(k) {
                Op::Send => SendRequest::send(k, &sge),
                Op::WriteImm => {
                    let to = peer_mem.slice(ring_offset(recv_index(k)) as u64, len);
                    SendRequest::write_with_imm(k, &sge, to.unwrap(), k as u32)
                }
                Op::Write => {
                    let to = peer_mem.slice(bulk_offset(k) as u64, len).unwrap();
                    SendRequest::write(k, &sge, to)
                }
            };
            side.qp.post_send(&mut [wr.signaled()]).unwrap();
            bytes += len;
            posted += 1;
        }
        for c in poll(&side.cq, &mut wc).iter() {
            let k = done;
            assert_eq!(c.wr_id(), k, "completions out of order: {c:?}");
            if c.status() == WcStatus::REM_INV_REQ_ERR {
                return Err(format!("message {k} of {MESSAGES}: {c:?}"));
            }
            assert_eq!(c.status(), WcStatus::SUCCESS, "message {k}: {c:?}");
            let opcode = match Op::of(k) {
                Op::Send => WcOpcode::Send,
                _ => WcOpcode::RdmaWrite,
            };
            assert_eq!(c.opcode(), opcode, "message {k}: {c:?}");
            done += 1;
            last = Instant::now();
        }
        assert!(
            last.elapsed() < GUARD,
            "hung: no completion for {GUARD:?}, {done} of {MESSAGES} done"
        );
        std::thread::yield_now();
    }
    let elapsed = start.elapsed();
    let recvs = (0..MESSAGES).filter(|&k| Op::of(k) != Op::Write).count();
    assert_eq!(
        peer.wire().recv("the end of the peer's receives"),
        format!("received {recvs}")
    );
    let writes = MESSAGES as usize - recvs;
    assert_eq!(
        peer.ask(&format!("bulk {MESSAGES}")),
        format!("ok {writes}")
    );
    let dropped_here = fault.dropped();
    fault.remove();
    let answer = peer.ask("clear");
    let dropped_there: u64 = answer
        .strip_prefix("ok ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("peer: {answer}"));
    eprintln!(
        "{LOSS} each way: {MESSAGES} messages ({recvs} received, {writes} plain writes), {} \
         KiB, all intact, in {elapsed:.2?}; netem dropped {dropped_here} packets here and \
         {dropped_there} at the peer",
        bytes >> 10
    );
    assert!(
        dropped_here > 0 && dropped_there > 0,
        "no packet was lost: the test tested nothing"
    );
    assert_eq!(side.qp.query().unwrap().state, QpState::Rts);
    drop(side);
    peer.assert_clean_drops();
    drop(host);
    assert_clean_drops();
    Ok(())
}

/// Our `ib_write_bw` and `ib_send_bw` complete a run between the hosts with
/// 5% of the packets lost each way: server on the peer, client here.
#[test]
fn perftest_bandwidth_runs_complete_under_five_percent_loss() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let host = Host::open(&link.device, link.local);
    let run_args = ["-s", "4096", "-n", "400"];
    assert_eq!(peer.ask(&format!("netem {LOSS}")), "ok");
    let fault = Fault::netem(&link.netdev, LOSS);
    for name in ["ib_write_bw", "ib_send_bw"] {
        let client_path = tool(name);
        let answer = peer.ask(&format!("tool {name} {}", run_args.join(" ")));
        let port = answer
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("peer: {answer}"));
        let start = Instant::now();
        let mut client = Command::new(&client_path)
            .args(["-d", &link.device])
            .args(["-x", &host.gid_index.to_string()])
            .args(["-p", port])
            .args(run_args)
            .arg(link.peer.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut pipe = client.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        });
        let status = loop {
            if let Some(status) = client.try_wait().unwrap() {
                break status;
            }
            if start.elapsed() > GUARD {
                let _ = client.kill();
                let _ = client.wait();
                panic!("{name}: the client hung");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stdout = reader.join().unwrap();
        let elapsed = start.elapsed();
        assert!(status.success(), "{name} client: {status}\n{stdout}");
        let result = stdout
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([run_args[1], run_args[3]]))
            .unwrap_or_else(|| panic!("{name}: no result line in\n{stdout}"));
        let end = peer.wire().recv("the end of the server");
        assert_eq!(end, "exit 0", "{name} server");
        eprintln!(
            "{name} with {LOSS} each way: {} x {} bytes in {elapsed:.2?}; result: {}",
            run_args[3],
            run_args[1],
            result.trim()
        );
    }
    let dropped_here = fault.dropped();
    fault.remove();
    let answer = peer.ask("clear");
    eprintln!(
        "perftest with {LOSS} each way: netem dropped {dropped_here} packets here and {} at \
         the peer",
        answer.trim_start_matches("ok ")
    );
    assert!(dropped_here > 0, "no packet was lost here");
    peer.assert_clean_drops();
    drop(host);
    assert_clean_drops();
}

// ---------------------------------------------------------------- gRPC across the link

/// gRPC over RDMA between the hosts (rdma-verbs-tonic's `grpc_echo` example, server on the
/// peer): every call shape with messages of 1 B and 1 MiB, every byte checked, then 8
/// clients at once, by the peer's address on the link (about 15 s between two TCG VMs).
#[test]
fn grpc_over_rdma_runs_across_the_link() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let port = 7311;
    assert_eq!(peer.ask(&format!("grpc {port}")), "listening");
    let args = [
        "client",
        "-a",
        &link.peer.to_string(),
        "-p",
        &port.to_string(),
    ]
    .into_iter()
    .chain(["-s", "1", "-s", "1048576", "-c", "8"])
    .map(String::from)
    .collect::<Vec<_>>();
    let started = Instant::now();
    let out =
        Running::spawn("gRPC client", &example("grpc_echo"), &args).finish(Instant::now() + GUARD);
    assert!(out.status.success(), "{}\n{}", out.status, out.context());
    assert!(out.stdout.lines().any(|l| l == "ok"), "{}", out.context());
    eprintln!("gRPC across the link: {:?}", started.elapsed());
    assert_eq!(peer.ask("stop"), "stopped");
}

/// A gRPC stream whose server host goes silent (every packet this host sends is lost, so no
/// ACK and no disconnect gets through): the call fails within the transport's retries (7
/// tries of the CM's ACK timeout on both ends), never a hang.
#[test]
fn grpc_over_rdma_fails_when_the_link_goes_silent() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let port = 7312;
    assert_eq!(peer.ask(&format!("grpc {port}")), "listening");
    // A server stream of 64 KiB messages read for 10 minutes: it must end long before.
    let args = [
        "bench",
        "-a",
        &link.peer.to_string(),
        "-p",
        &port.to_string(),
    ]
    .into_iter()
    .chain(["--phase", "stream", "-t", "600"])
    .map(String::from)
    .collect::<Vec<_>>();
    let client = Running::spawn("gRPC client", &example("grpc_echo"), &args);
    std::thread::sleep(Duration::from_secs(3));
    let fault = Fault::netem(&link.netdev, "loss 100%");
    let silent = Instant::now();
    let out = client
        .finish_by(silent + GUARD)
        .unwrap_or_else(|e| panic!("the call did not fail within {GUARD:?} of the silence: {e}"));
    let took = silent.elapsed();
    fault.remove();
    assert!(
        !out.status.success(),
        "the call ended well: {}",
        out.context()
    );
    assert!(
        out.stderr.contains("stream:"),
        "not the stream's error: {}",
        out.context()
    );
    eprintln!(
        "gRPC over a silent link: failed after {took:?}: {}",
        out.stderr.trim()
    );
    assert_eq!(peer.ask("stop"), "stopped");
}

/// Byte streams whose readers have nothing in flight when the peer host goes silent (every
/// packet this host sends is lost): nothing of the streams' own would fail, so only their
/// keepalive probes (a zero-length RDMA write after each second of waiting) can find the
/// peer gone. Both forms, each reading on a thread of its own: the blocking stream, and
/// the tokio stream in a runtime with the I/O driver only (no timers). Each read fails with
/// `ConnectionReset` naming the probe's transport error, within the interval plus the
/// retries, never a hang. The peer is the gRPC server (a stream listener that says
/// nothing until its client speaks), whose streams do not probe. With their default
/// interval (10 s) this test failed once in 11 runs of the binary: the peer closed the
/// connection (its disconnect gets through, only this host's packets are lost) before the
/// probes here ran out of retries (about 16 s with the CM's ACK timeout); the peer's own
/// probes, failing first, are the likely cause.
#[test]
fn stream_readers_find_a_silent_peer_by_their_keepalive() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let port = 7313;
    assert_eq!(peer.ask(&format!("grpc {port} 0")), "listening");
    let config = StreamConfig::default().keepalive(Some(Duration::from_secs(1)));
    let at = SocketAddr::new(link.peer.into(), port);
    let mut blocking = RdmaStream::connect_with(at, &config).expect("connect to the peer");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("a runtime");
    let mut nonblocking = runtime
        .block_on(rdma_verbs::tokio::stream::RdmaStream::connect_with(
            at, &config,
        ))
        .expect("connect to the peer (tokio)");
    let fault = Fault::netem(&link.netdev, "loss 100%");
    let silent = Instant::now();
    let (done, ended) = mpsc::channel();
    let blocking_done = done.clone();
    // Each reads to the peer's end or an error.
    std::thread::spawn(move || {
        let end = blocking.read_to_end(&mut Vec::new());
        let _ = blocking_done.send(("blocking", end, silent.elapsed()));
    });
    std::thread::spawn(move || {
        let end = runtime.block_on(nonblocking.read_to_end(&mut Vec::new()));
        let _ = done.send(("tokio", end, silent.elapsed()));
    });
    let ends = [(); 2].map(|()| {
        ended
            .recv_timeout(GUARD)
            .unwrap_or_else(|_| panic!("a read did not fail within {GUARD:?} of the silence"))
    });
    fault.remove();
    for (form, end, took) in ends {
        let err = end.expect_err("the read ended with the peer's end, not an error");
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::ConnectionReset,
            "{form}: {err}"
        );
        assert!(
            err.to_string().contains("RETRY_EXC_ERR"),
            "{form}: not the probe's transport error: {err}"
        );
        eprintln!("{form} stream reader over a silent link: failed after {took:?}: {err}");
    }
    assert_eq!(peer.ask("stop"), "stopped");
}

// ---------------------------------------------------------------- rdma_cm across the link

/// rping between the hosts, connecting by the peer's address on the link, so that rdma_cm
/// resolves it through a real route and neighbour (not loopback): ours against
/// rdma-core's `rping` each way, server on the peer.
#[test]
fn rping_connects_across_the_link_by_address() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let count = 10;
    for (server, client, port) in [("c", "rust", 7301), ("rust", "c", 7302)] {
        assert_eq!(peer.ask(&format!("rping {server} {port}")), "listening");
        let path = if client == "c" {
            c_tool("rping")
        } else {
            tool("rping")
        };
        let args = ["-c", "-v", "-V", "-C", &count.to_string()]
            .into_iter()
            .chain(["-a", &link.peer.to_string(), "-p", &port.to_string()])
            .map(String::from)
            .collect::<Vec<_>>();
        let out = Running::spawn("rping client", &path, &args).finish(Instant::now() + GUARD);
        assert!(
            rping_ended_well(&out),
            "{client} client, {server} server: {}\n{}",
            out.status,
            out.context()
        );
        let pings = out
            .stdout
            .lines()
            .filter(|l| l.starts_with("ping data: rdma-ping-"))
            .count();
        assert_eq!(pings, count, "{client} client: {}", out.context());
        let end = peer.wire().recv("the end of the rping server");
        assert_eq!(end, format!("exit 0 {count}"), "{server} server");
    }
}
