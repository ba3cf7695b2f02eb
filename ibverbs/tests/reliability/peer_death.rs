//! A peer process killed in the middle of a transfer: what the survivor sees.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{
    assert_clean_drops, assert_empty, hello, mix, open, parse_hello, pattern, record, Wire,
};

use rdma_verbs::{
    AccessFlags, CompletionQueue, ConnectOptions, MemoryRegion, QpState, QpType, QueuePair,
    RecvRequest, RemoteMemory, SendRequest, Sge, WcStatus, WorkCompletion,
};

use crate::{serial, REMOTE};

/// Set in a child process to `MODE ADDR`: the child does the peer side of a peer-death test
/// in `MODE`, connecting to the parent at `ADDR`.
const CHILD_ENV: &str = "IBVERBS_RELIABILITY_CHILD";
/// How long either side waits for the other before failing, and how long a child lives at
/// most if nobody kills it.
const PEER_GUARD: Duration = Duration::from_secs(60);
/// Slots of the memory the peers write into, and their size.
const RECORDS: usize = 64;
const RECORD: usize = 64;
/// Receive buffers of the receiver whose peer is killed, and their size.
const RECVS: usize = 64;
const RECV_BUF: usize = 4096;
/// The send queue depth of both sides.
const PEER_DEPTH: u32 = 16;

/// What the child of a peer-death test does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChildMode {
    /// RDMA-writes records into the parent's memory, forever.
    Writer,
    /// Sends messages to the parent's receives, forever.
    Sender,
}

impl ChildMode {
    fn name(self) -> &'static str {
        match self {
            ChildMode::Writer => "writer",
            ChildMode::Sender => "sender",
        }
    }

    fn parse(s: &str) -> ChildMode {
        match s {
            "writer" => ChildMode::Writer,
            "sender" => ChildMode::Sender,
            _ => panic!("unknown child mode {s:?}"),
        }
    }
}

/// One side's verbs objects: a QP on its own CQ, memory the peer may write (`inbox`) and
/// memory to send from (`outbox`).
struct Side {
    qp: QueuePair,
    cq: CompletionQueue,
    inbox: MemoryRegion,
    outbox: MemoryRegion,
}

/// Sets up one side, tells the peer about it over `wire`, connects to the peer with `opts`
/// once both have their QPs, and waits until the peer's QP is connected too. `inbox_len`
/// is what the peer may write; `recvs` receives over `inbox` are posted before connecting.
fn connect_side(
    wire: &mut Wire,
    opts: &ConnectOptions,
    inbox_len: usize,
    recvs: usize,
) -> (Side, RemoteMemory) {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(64, None).unwrap();
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .access(REMOTE)
        .max_send_wr(PEER_DEPTH)
        .max_recv_wr(RECVS as u32)
        .build()
        .unwrap();
    let inbox = pd.alloc_mr(inbox_len, REMOTE).unwrap();
    // One slot per request a full send queue can hold.
    let outbox = pd
        .alloc_mr(PEER_DEPTH as usize * RECV_BUF, AccessFlags::LOCAL_WRITE)
        .unwrap();
    {
        let sges: Vec<[Sge<'_>; 1]> = (0..recvs)
            .map(|i| [inbox.sge(i * RECV_BUF..(i + 1) * RECV_BUF).unwrap()])
            .collect();
        let mut wrs: Vec<RecvRequest<'_>> = sges
            .iter()
            .enumerate()
            .map(|(i, sge)| RecvRequest::new(i as u64, sge))
            .collect();
        qp.post_recv(&mut wrs).unwrap();
    }

    wire.send(&hello(&qp.endpoint(), &inbox.remote()));
    let (peer, peer_mem) = parse_hello(&wire.recv("its endpoint"));
    let qp = qp.connect(&peer, opts).unwrap();
    wire.send("connected");
    assert_eq!(wire.recv("that it is connected"), "connected");
    let side = Side {
        qp,
        cq,
        inbox,
        outbox,
    };
    (side, peer_mem)
}

/// Checks the memory a writer wrote into until it died: every slot is untouched (zero) or
/// holds a whole record that belongs there. Returns how many slots hold one.
fn check_records(mr: &MemoryRegion) -> usize {
    let mut written = 0;
    for slot in 0..RECORDS {
        let mut got = vec![0; RECORD];
        mr.read(slot * RECORD, &mut got).unwrap();
        if got.iter().all(|&b| b == 0) {
            continue;
        }
        let seq = u64::from_le_bytes(got[..8].try_into().unwrap());
        assert_eq!(seq as usize % RECORDS, slot, "record {seq} in slot {slot}");
        assert_eq!(
            got,
            record(seq, RECORD),
            "record {seq} in slot {slot} is corrupt"
        );
        written += 1;
    }
    written
}

/// The length of the `seq`-th message of a sender: 8..=RECV_BUF bytes.
fn message_len(seq: u64) -> usize {
    8 + (mix(seq) % (RECV_BUF as u64 - 7)) as usize
}

/// The `seq`-th message of a sender: `seq` in the first 8 bytes, then its pattern.
fn message(seq: u64) -> Vec<u8> {
    let mut m = seq.to_le_bytes().to_vec();
    m.extend(pattern(!seq, message_len(seq) - 8));
    m
}

/// Posts the request for `seq` of a streaming side: a record written into the peer's
/// memory, or a message sent to its receives.
fn post_stream(side: &mut Side, mode: ChildMode, seq: u64, peer_mem: RemoteMemory) {
    let slot = (seq % u64::from(PEER_DEPTH)) as usize * RECV_BUF;
    let data = match mode {
        ChildMode::Writer => record(seq, RECORD),
        ChildMode::Sender => message(seq),
    };
    side.outbox.write(slot, &data).unwrap();
    let sge = [side.outbox.sge(slot..slot + data.len()).unwrap()];
    let wr = match mode {
        ChildMode::Writer => {
            let at = (seq % RECORDS as u64) * RECORD as u64;
            SendRequest::write(seq, &sge, peer_mem.slice(at, RECORD as u64).unwrap())
        }
        ChildMode::Sender => SendRequest::send(seq, &sge),
    };
    side.qp.post_send(&mut [wr.signaled()]).unwrap();
}

/// The child's side: stream in `mode` to the parent until killed.
fn run_child(mode: ChildMode, parent: &str) {
    let mut wire = Wire::new(TcpStream::connect(parent).unwrap(), PEER_GUARD);
    let inbox_len = RECORDS * RECORD;
    let (mut side, peer_mem) = connect_side(&mut wire, &ConnectOptions::new(), inbox_len, 0);
    let depth = u64::from(PEER_DEPTH);
    let (mut posted, mut done) = (0u64, 0u64);
    let mut told = false;
    let mut wc = [WorkCompletion::default(); 16];
    let start = Instant::now();
    loop {
        while posted - done < depth {
            post_stream(&mut side, mode, posted, peer_mem);
            posted += 1;
        }
        for c in side.cq.poll(&mut wc).unwrap().iter() {
            assert_eq!((c.wr_id(), c.status()), (done, WcStatus::SUCCESS), "{c:?}");
            done += 1;
        }
        if !told && done >= 2 * depth {
            wire.send("streaming");
            told = true;
        }
        assert!(
            start.elapsed() < PEER_GUARD,
            "child {mode:?}: not killed in time"
        );
        std::thread::yield_now();
    }
}

/// Child process of the peer-death tests; does nothing unless started by one of them.
#[test]
#[ignore = "the peer process of the peer-death tests, which start it with IBVERBS_RELIABILITY_CHILD"]
fn child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        eprintln!("{CHILD_ENV} is not set: nothing to do");
        return;
    };
    let (mode, parent) = spec
        .split_once(' ')
        .unwrap_or_else(|| panic!("{CHILD_ENV}={spec:?}: want MODE ADDR"));
    run_child(ChildMode::parse(mode), parent);
}

/// A child process running `child_process`, killed and reaped on drop if still running.
struct Peer {
    child: Child,
}

impl Peer {
    /// Starts the child in `mode` and accepts its connection.
    fn spawn(mode: ChildMode) -> (Peer, Wire) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "peer_death::child_process",
                "--exact",
                "--ignored",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{} {addr}", mode.name()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut peer = Peer { child };
        listener.set_nonblocking(true).unwrap();
        let start = Instant::now();
        let stream = loop {
            match listener.accept() {
                Ok((stream, _)) => break stream,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if let Some(status) = peer.child.try_wait().unwrap() {
                        panic!("the child exited before connecting: {status}");
                    }
                    assert!(start.elapsed() < PEER_GUARD, "the child did not connect");
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        (peer, Wire::new(stream, PEER_GUARD))
    }

    /// Sends SIGKILL; returns when it was sent.
    fn kill(&mut self) -> Instant {
        self.child.kill().unwrap();
        Instant::now()
    }

    /// Waits for the killed child and asserts that SIGKILL is what ended it.
    fn reap(&mut self) {
        let status = self.child.wait().unwrap();
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "child ended by {status}"
        );
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A QP that streams RDMA writes to a peer process is told of the peer's death by one error
/// completion, the rest of its queue is flushed, and the TCP connection sees the end too.
/// The records the dead peer wrote are all whole.
///
/// The error is `RETRY_EXC_ERR` (after timeout × retries) when the writes find the peer's
/// QP gone, or `REM_ACCESS_ERR` when one arrives while the dying peer's QP still answers
/// but its memory region is already deregistered: the kernel tears a process's verbs
/// objects down newest first, and the child registers its memory after creating its QP.
/// Both are seen on rxe, so a survivor must treat either as a possible peer death.
#[test]
fn writer_whose_peer_is_killed_gets_an_error_completion() {
    let _serial = serial();
    let (mut peer, mut wire) = Peer::spawn(ChildMode::Writer);
    // 4.096 µs × 2^16 ≈ 268 ms per try, 3 retries: the error is due about 1 s after the
    // death. Shorter tries risk timing out the live peer while an emulated machine is busy.
    let opts = ConnectOptions::new().timeout(16).retry_cnt(3);
    let (mut side, peer_mem) = connect_side(&mut wire, &opts, RECORDS * RECORD, 0);
    assert_eq!(wire.recv("that it streams"), "streaming");

    let depth = u64::from(PEER_DEPTH);
    let (mut posted, mut done) = (0u64, 0u64);
    let mut killed: Option<Instant> = None;
    let mut first_error: Option<(WcStatus, u64, Duration)> = None;
    let mut tcp_end: Option<(String, Duration)> = None;
    let mut flushed = 0;
    let mut wc = [WorkCompletion::default(); 16];
    let start = Instant::now();
    // Stream until an error completion, keeping the queue full; then drain it.
    while done < posted || first_error.is_none() {
        if first_error.is_none() {
            while posted - done < depth {
                post_stream(&mut side, ChildMode::Writer, posted, peer_mem);
                posted += 1;
            }
        }
        for c in side.cq.poll(&mut wc).unwrap().iter() {
            assert_eq!(c.wr_id(), done, "completions out of order: {c:?}");
            done += 1;
            match (first_error, c.status()) {
                (None, WcStatus::SUCCESS) => {}
                (None, status) => {
                    let kill = killed.unwrap_or_else(|| panic!("error before the kill: {c:?}"));
                    first_error = Some((status, c.wr_id(), kill.elapsed()));
                }
                (Some(_), WcStatus::WR_FLUSH_ERR) => flushed += 1,
                (Some(_), _) => {
                    panic!("after the first error, a completion that is not a flush: {c:?}")
                }
            }
        }
        if killed.is_none() && done >= 4 * depth {
            killed = Some(peer.kill());
        }
        if let (Some(kill), None) = (killed, &tcp_end) {
            if let Some(how) = wire.closed() {
                tcp_end = Some((how, kill.elapsed()));
            }
        }
        assert!(
            start.elapsed() < PEER_GUARD,
            "hung: {done} of {posted} completions, killed: {}, first error: {first_error:?}",
            killed.is_some()
        );
        std::thread::yield_now();
    }
    let kill = killed.unwrap();
    while tcp_end.is_none() {
        tcp_end = wire.closed().map(|how| (how, kill.elapsed()));
        assert!(kill.elapsed() < PEER_GUARD, "TCP did not see the child die");
        std::thread::sleep(Duration::from_millis(1));
    }
    peer.reap();

    let (status, wr_id, after) = first_error.unwrap();
    let (how, tcp_after) = tcp_end.unwrap();
    eprintln!(
        "writer, peer killed: {status} on write {wr_id} after {after:.2?}, then {flushed} \
         flushed; TCP {how} after {tcp_after:.2?}"
    );
    assert!(
        status == WcStatus::RETRY_EXC_ERR || status == WcStatus::REM_ACCESS_ERR,
        "peer death reported as {status}"
    );
    assert_eq!(
        flushed as u64,
        posted - wr_id - 1,
        "every later write is flushed"
    );
    assert!(
        how == "EOF" || how == "ConnectionReset",
        "TCP ended by {how}"
    );
    assert_eq!(side.qp.query().unwrap().state, QpState::Error);
    assert_empty(&side.cq, "after the drain");
    let records = check_records(&side.inbox);
    assert!(records > 0, "the child wrote no record");
    drop(side);
    assert_clean_drops();
}

/// The parent's side of the receiver test. Receive n is the n-th posted, into buffer
/// n % RECVS, and takes message n.
struct Receiver {
    side: Side,
    posted: u64,
    done: u64,
    flushed: u64,
    wc: [WorkCompletion; 16],
}

impl Receiver {
    /// Polls once and returns how many completions came. Every message received must be
    /// whole and in order; with `repost` its receive is posted again, as by an application
    /// that has not noticed anything, so that RECVS receives stay posted. Flushes are
    /// counted; nothing may succeed after one.
    fn poll(&mut self, repost: bool) -> usize {
        let got = self.side.cq.poll(&mut self.wc).unwrap();
        for c in got.iter() {
            let seq = self.done;
            assert_eq!(c.wr_id(), seq, "receives completed out of order: {c:?}");
            self.done += 1;
            if c.status() == WcStatus::WR_FLUSH_ERR {
                assert!(
                    !repost,
                    "a receive was flushed while the QP is in use: {c:?}"
                );
                self.flushed += 1;
                continue;
            }
            assert_eq!(c.status(), WcStatus::SUCCESS, "{c:?}");
            assert_eq!(self.flushed, 0, "a receive succeeded after a flush: {c:?}");
            let buf = (seq % RECVS as u64) as usize * RECV_BUF;
            assert_eq!(c.byte_len() as usize, message_len(seq), "{c:?}");
            let mut data = vec![0; message_len(seq)];
            self.side.inbox.read(buf, &mut data).unwrap();
            assert!(data == message(seq), "message {seq} is corrupt");
            if repost {
                let sge = [self.side.inbox.sge(buf..buf + RECV_BUF).unwrap()];
                self.side
                    .qp
                    .post_recv(&mut [RecvRequest::new(self.posted, &sge)])
                    .unwrap();
                self.posted += 1;
            }
        }
        got.len()
    }
}

/// How long the receiver's CQ must stay quiet before the dead peer's last messages count
/// as all in: packets it sent before it died may wait in the receiver's queue for a while
/// when the (emulated) machine is busy.
const QUIET: Duration = Duration::from_millis(500);

/// A QP that only receives from a peer process notices nothing when the peer is killed: the
/// messages the peer sent arrive whole, then its posted receives stay pending, with no
/// error and the QP in RTS, until the QP is moved to ERROR, which flushes each of them once
/// with `WR_FLUSH_ERR`.
#[test]
fn receiver_whose_peer_is_killed_keeps_receives_until_flushed() {
    let _serial = serial();
    let (mut peer, mut wire) = Peer::spawn(ChildMode::Sender);
    let (side, _) = connect_side(&mut wire, &ConnectOptions::new(), RECVS * RECV_BUF, RECVS);
    assert_eq!(wire.recv("that it streams"), "streaming");
    let mut rx = Receiver {
        side,
        posted: RECVS as u64,
        done: 0,
        flushed: 0,
        wc: [WorkCompletion::default(); 16],
    };

    let start = Instant::now();
    while rx.done < 4 * RECVS as u64 {
        rx.poll(true);
        assert!(start.elapsed() < PEER_GUARD, "hung: {} received", rx.done);
        std::thread::yield_now();
    }
    let kill = peer.kill();
    let (how, tcp_after) = loop {
        rx.poll(true);
        if let Some(how) = wire.closed() {
            break (how, kill.elapsed());
        }
        assert!(kill.elapsed() < PEER_GUARD, "TCP did not see the child die");
        std::thread::yield_now();
    };
    peer.reap();
    let reaped_at = Instant::now();
    let reaped = reaped_at - kill;
    let mut last = reaped_at;
    while last.elapsed() < QUIET {
        if rx.poll(true) > 0 {
            last = Instant::now();
        }
        assert!(
            kill.elapsed() < PEER_GUARD,
            "messages kept coming from a dead peer"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let late = last - reaped_at;
    let received = rx.done;
    assert_eq!(rx.posted - rx.done, RECVS as u64);
    assert_eq!(
        rx.side.qp.query().unwrap().state,
        QpState::Rts,
        "the receiver noticed something"
    );

    let flush = Instant::now();
    rx.side.qp.to_error().unwrap();
    while rx.done < rx.posted {
        rx.poll(false);
        assert!(
            flush.elapsed() < PEER_GUARD,
            "receives not flushed: {} of {}",
            rx.done,
            rx.posted
        );
        std::thread::yield_now();
    }
    let flushed_after = flush.elapsed();
    eprintln!(
        "receiver, peer killed: TCP {how} after {tcp_after:.2?}, child reaped after \
         {reaped:.2?}, last message {late:.2?} after that; {received} messages received \
         whole; {} receives pending with the QP in RTS, {} flushed (WR_FLUSH_ERR) \
         {flushed_after:.2?} after the move to ERROR",
        RECVS, rx.flushed
    );
    assert!(rx.flushed > 0, "nothing was flushed");
    assert!(
        how == "EOF" || how == "ConnectionReset",
        "TCP ended by {how}"
    );
    assert_eq!(rx.side.qp.query().unwrap().state, QpState::Error);
    assert_empty(&rx.side.cq, "after the flush");
    drop(rx);
    assert_clean_drops();
}
