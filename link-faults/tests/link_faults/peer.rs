//! The peer process on the other host: started and driven from here (`Peer`, shared by
//! the tests through `PeerTurn`), and what it does there (`peer_process` and its commands).

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::ops::{Deref, DerefMut};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rdma_verbs::{
    AccessFlags, ConnectOptions, RecvRequest, RemoteMemory, Route, WcOpcode, WcStatus,
    WorkCompletion,
};
use rdma_verbs_test_kit::{
    assert_clean_drops, c_tool, cm_listening, example, free_port, hello, listening, parse_hello,
    record, rping_ended_well, Running, Wire,
};

use crate::link::{env, Fault, Link, DEVICE_VAR, EXEC_VAR, LOCAL_VAR, NETDEV_VAR, PEER_VAR};
use crate::traffic::{
    bulk_offset, message, message_len, poll, recv_message, ring_offset, Host, Op, Side, AHEAD,
    DEPTH, INBOX, RECORD, RECORDS, SLOT,
};
use crate::GUARD;

/// Set in the peer process to the `ADDR:PORT` it connects back to.
const PEER_ENV: &str = "LINK_FAULTS_PEER";

/// How long the peer waits for its next command.
const PEER_IDLE: Duration = Duration::from_secs(300);

/// The peer process, on the other host, and the connection to it. Dropping it closes the
/// connection (the peer exits when it sees that), then makes sure the process is gone.
pub struct Peer {
    wire: Option<Wire>,
    child: Child,
}

impl Peer {
    /// Starts the peer process through `WITH_RDMA_PEER_EXEC` and accepts its connection.
    pub fn spawn(link: &Link) -> Peer {
        let listener = TcpListener::bind((link.local, 0))
            .unwrap_or_else(|e| panic!("cannot listen on {} ({LOCAL_VAR}): {e}", link.local));
        let addr = listener.local_addr().unwrap();
        let exe = std::env::current_exe().unwrap();
        let child = Command::new(&link.peer_exec[0])
            .args(&link.peer_exec[1..])
            .arg("env")
            .arg(format!("{PEER_ENV}={addr}"))
            .arg(exe)
            .args(["peer::peer_process", "--exact", "--ignored", "--nocapture"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {EXEC_VAR} ({:?}): {e}", link.peer_exec));
        let mut peer = Peer { wire: None, child };
        listener.set_nonblocking(true).unwrap();
        let start = Instant::now();
        let stream = loop {
            match listener.accept() {
                Ok((stream, from)) => {
                    assert_eq!(
                        from.ip(),
                        IpAddr::V4(link.peer),
                        "the peer connected from an address that is not {PEER_VAR}"
                    );
                    break stream;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if let Some(status) = peer.child.try_wait().unwrap() {
                        panic!("the peer process exited before connecting: {status}");
                    }
                    assert!(
                        start.elapsed() < GUARD,
                        "the peer process did not connect within {GUARD:?}"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        peer.wire = Some(Wire::new(stream, GUARD));
        peer
    }

    pub fn wire(&mut self) -> &mut Wire {
        self.wire.as_mut().unwrap()
    }

    /// Sends a command and returns the peer's answer.
    pub fn ask(&mut self, command: &str) -> String {
        self.wire().send(command);
        let what = format!("the peer's answer to {command:?}");
        self.wire().recv(&what)
    }

    /// Tells the peer to set up a new QP (dropping its old one) whose route has
    /// `traffic_class`, and connects `side` to it.
    pub fn connect(
        &mut self,
        host: &Host,
        opts: &ConnectOptions,
        traffic_class: u8,
    ) -> (Side, RemoteMemory) {
        let (qp, cq, mem) = host.prepare(DEPTH as usize * SLOT, AccessFlags::LOCAL_WRITE, 0);
        let none = RemoteMemory::new(0, 0, 0);
        let hello = hello(&qp.endpoint(), &none);
        let answer = self.ask(&format!("qp {traffic_class} {hello}"));
        let (ep, peer_mem) = parse_hello(&answer);
        let qp = qp.connect(&ep, opts).unwrap();
        (Side { qp, cq, mem }, peer_mem)
    }

    /// Asserts that no destroy call has failed in a destructor in the peer process so far.
    pub fn assert_clean_drops(&mut self) {
        assert_eq!(
            self.ask("drops"),
            "ok 0",
            "a destroy call failed in the peer"
        );
    }
}

/// The peer process, shared by the tests of this binary, which take turns with it (so they
/// also run one at a time: they share the link). The first test starts it; a test that
/// fails during its turn ends it (its state is unknown then), and the next test starts
/// another. It ends when this process does: it sees its connection close.
pub static PEER: Mutex<Option<Peer>> = Mutex::new(None);

/// A test's turn with the peer process.
pub struct PeerTurn {
    slot: MutexGuard<'static, Option<Peer>>,
}

impl PeerTurn {
    /// Waits for the turn, starting the peer process if there is none.
    pub fn take(link: &Link) -> PeerTurn {
        let mut slot = PEER.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(Peer::spawn(link));
        }
        PeerTurn { slot }
    }

    /// Ends the peer process, whose state the test cannot vouch for, and starts another,
    /// keeping the turn (no other test runs between the two).
    pub fn restart(&mut self, link: &Link) {
        *self.slot = None;
        *self.slot = Some(Peer::spawn(link));
    }
}

impl Deref for PeerTurn {
    type Target = Peer;

    fn deref(&self) -> &Peer {
        self.slot.as_ref().unwrap()
    }
}

impl DerefMut for PeerTurn {
    fn deref_mut(&mut self) -> &mut Peer {
        self.slot.as_mut().unwrap()
    }
}

impl Drop for PeerTurn {
    fn drop(&mut self) {
        if std::thread::panicking() {
            *self.slot = None;
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.wire = None;
        let start = Instant::now();
        while let Ok(None) = self.child.try_wait() {
            if start.elapsed() > Duration::from_secs(10) {
                // SIGTERM lets `with-rdma --on-peer` cancel the job on the peer.
                let _ = Command::new("kill")
                    .args(["-TERM", &self.child.id().to_string()])
                    .status();
                std::thread::sleep(Duration::from_secs(2));
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

// ---------------------------------------------------------------- the peer, there

/// The peer's state between commands.
struct PeerState {
    host: Host,
    netdev: String,
    side: Option<Side>,
    fault: Option<Fault>,
}

/// Child process of the tests; does nothing unless started by one of them.
#[test]
#[ignore = "the peer process of the link-fault tests, which start it on the peer host"]
pub fn peer_process() {
    let Ok(controller) = std::env::var(PEER_ENV) else {
        eprintln!("{PEER_ENV} is not set: nothing to do");
        return;
    };
    let stream = TcpStream::connect(&controller)
        .unwrap_or_else(|e| panic!("peer: cannot connect to {controller}: {e}"));
    let IpAddr::V4(local) = stream.local_addr().unwrap().ip() else {
        panic!("peer: not an IPv4 connection");
    };
    let mut wire = Wire::new(stream, PEER_IDLE);
    let mut state = PeerState {
        host: Host::open(&env(DEVICE_VAR), local),
        netdev: env(NETDEV_VAR),
        side: None,
        fault: None,
    };
    while let Some(line) = wire.recv_opt("a command") {
        let (command, args) = line.split_once(' ').unwrap_or((&line, ""));
        let answer = match command {
            "qp" => peer_qp(&mut state, args),
            "records" => peer_records(&state, args),
            "receive" => peer_receive(&state, args, &mut wire),
            "bulk" => peer_bulk(&state, args),
            "netem" => {
                state.fault = None;
                state.fault = Some(Fault::netem(&state.netdev, args));
                "ok".to_owned()
            }
            "clear" => match state.fault.take() {
                Some(fault) => {
                    let dropped = fault.dropped();
                    fault.remove();
                    format!("ok {dropped}")
                }
                None => panic!("peer: no fault to clear"),
            },
            "tool" => peer_tool(&state, args, &mut wire),
            "rping" => peer_rping(args, &mut wire),
            "ucmatose" => peer_ucmatose(args, &mut wire),
            "grpc" => peer_grpc(args, &mut wire),
            "drops" => format!("ok {}", rdma_verbs::drop_error::count()),
            _ => panic!("peer: unknown command {line:?}"),
        };
        wire.send(&answer);
    }
    drop(state);
    assert_clean_drops();
}

/// `qp TCLASS HELLO`: a new QP with memory the peer may write (and receives to post),
/// connected to the QP of HELLO by a route of traffic class TCLASS; answers with its own
/// hello.
fn peer_qp(state: &mut PeerState, args: &str) -> String {
    state.side = None;
    let (class, line) = args.split_once(' ').expect("qp TCLASS HELLO");
    let (remote, _) = parse_hello(line);
    let route = Route::new().traffic_class(class.parse().expect("a traffic class"));
    let remote_write = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let (qp, cq, mem) = state.host.prepare(INBOX, remote_write, AHEAD as u32);
    let qp = qp
        .connect(&remote, &ConnectOptions::new().route(route))
        .unwrap();
    let answer = hello(&qp.endpoint(), &mem.remote());
    state.side = Some(Side { qp, cq, mem });
    answer
}

/// `records LAST_OK POSTED`: checks the records written into this side's memory, when
/// records 0..POSTED were posted and 0..=LAST_OK ("-" for none) succeeded: each slot holds
/// the last successful record for it or a later one, whole, or is untouched if none was
/// successful. Answers `ok N` with N the slots written.
fn peer_records(state: &PeerState, args: &str) -> String {
    let side = state.side.as_ref().expect("peer: no QP");
    let (last_ok, posted) = args.split_once(' ').expect("records LAST_OK POSTED");
    let last_ok: Option<u64> = (last_ok != "-").then(|| last_ok.parse().unwrap());
    let posted: u64 = posted.parse().unwrap();
    let mut written = 0;
    for slot in 0..RECORDS as u64 {
        // The last successful record of this slot, if any.
        let due =
            last_ok.and_then(|last| (slot <= last).then(|| last - (last - slot) % RECORDS as u64));
        let mut got = vec![0; RECORD];
        side.mem.read(slot as usize * RECORD, &mut got).unwrap();
        if got.iter().all(|&b| b == 0) {
            assert_eq!(due, None, "peer: record {due:?} of slot {slot} is missing");
            continue;
        }
        let seq = u64::from_le_bytes(got[..8].try_into().unwrap());
        assert!(
            seq % RECORDS as u64 == slot && seq < posted,
            "peer: slot {slot} holds record {seq}"
        );
        assert!(
            got == record(seq, RECORD),
            "peer: record {seq} in slot {slot} is corrupt"
        );
        if let Some(due) = due {
            assert!(
                seq >= due,
                "peer: slot {slot} holds record {seq}, older than {due}"
            );
        }
        written += 1;
    }
    format!("ok {written}")
}

/// `receive COUNT`: receives the messages of the loss test that consume a receive, of
/// messages 0..COUNT, keeping AHEAD receives posted, and checks each one (in order, whole,
/// the right kind and immediate data). Answers `ready` once the first receives are
/// posted, then `received N` at the end.
fn peer_receive(state: &PeerState, args: &str, wire: &mut Wire) -> String {
    let side = state.side.as_ref().expect("peer: no QP");
    let count: u64 = args.parse().unwrap();
    let recvs = (0..count).filter(|&k| Op::of(k) != Op::Write).count() as u64;
    let post = |r: u64| {
        let at = ring_offset(r);
        let sge = [side.mem.sge(at..at + SLOT).unwrap()];
        side.qp.post_recv(&mut [RecvRequest::new(r, &sge)]).unwrap();
    };
    for r in 0..recvs.min(AHEAD as u64) {
        post(r);
    }
    wire.send("ready");
    let mut wc = [WorkCompletion::default(); 16];
    let mut done = 0;
    let mut last = Instant::now();
    while done < recvs {
        for c in poll(&side.cq, &mut wc).iter() {
            let r = done;
            let k = recv_message(r);
            assert_eq!(c.wr_id(), r, "peer: receives completed out of order: {c:?}");
            assert_eq!(c.status(), WcStatus::SUCCESS, "peer: message {k}: {c:?}");
            match Op::of(k) {
                Op::Send => {
                    assert_eq!((c.opcode(), c.imm_data()), (WcOpcode::Recv, None), "{c:?}");
                    assert_eq!(c.byte_len() as usize, message_len(k), "peer: {c:?}");
                }
                _ => assert_eq!(
                    (c.opcode(), c.imm_data()),
                    (WcOpcode::RecvRdmaWithImm, Some(k as u32)),
                    "peer: message {k}: {c:?}"
                ),
            }
            let mut got = vec![0; message_len(k)];
            side.mem.read(ring_offset(r), &mut got).unwrap();
            assert!(got == message(k), "peer: message {k} is corrupt");
            done += 1;
            if r + (AHEAD as u64) < recvs {
                post(r + AHEAD as u64);
            }
            last = Instant::now();
        }
        assert!(
            last.elapsed() < GUARD,
            "peer: no message for {GUARD:?}: {done} of {recvs} received"
        );
        std::thread::yield_now();
    }
    format!("received {done}")
}

/// `bulk COUNT`: checks the plain writes of messages 0..COUNT of the loss test; answers
/// `ok N`.
fn peer_bulk(state: &PeerState, args: &str) -> String {
    let side = state.side.as_ref().expect("peer: no QP");
    let count: u64 = args.parse().unwrap();
    let mut checked = 0;
    for k in (0..count).filter(|&k| Op::of(k) == Op::Write) {
        let mut got = vec![0; message_len(k)];
        side.mem.read(bulk_offset(k), &mut got).unwrap();
        assert!(got == message(k), "peer: written message {k} is corrupt");
        checked += 1;
    }
    format!("ok {checked}")
}

/// `tool NAME ARGS...`: runs our tool NAME (`c:NAME`: rdma-core's) as a perftest server on
/// a free port with ARGS, on this side's device and GID; answers `listening PORT` when it
/// listens, then `exit CODE` when it has finished.
fn peer_tool(state: &PeerState, args: &str, wire: &mut Wire) -> String {
    let mut words = args.split_whitespace();
    let name = words.next().expect("tool NAME ARGS");
    let tool = match name.strip_prefix("c:") {
        Some(c) => c_tool(c),
        None => rdma_verbs_test_kit::tool(name),
    };
    let port = free_port();
    let mut server = Command::new(&tool)
        .args(["-d", &env(DEVICE_VAR)])
        .args(["-x", &state.host.gid_index.to_string()])
        .args(["-p", &port.to_string()])
        .args(words)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("peer: {}: {e}", tool.display()));
    let start = Instant::now();
    while !listening(port) {
        if let Some(status) = server.try_wait().unwrap() {
            panic!(
                "peer: the {} server exited before listening: {status}",
                tool.display()
            );
        }
        assert!(start.elapsed() < GUARD, "peer: the server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    wire.send(&format!("listening {port}"));
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > GUARD {
            let _ = server.kill();
            let _ = server.wait();
            panic!("peer: the {} server hung", tool.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    format!("exit {}", status.code().map_or(-1, |c| c))
}

/// `rping c|rust PORT`: runs rdma-core's `rping` or ours as the server on PORT of
/// this side's link address, with `-v`; answers `listening` once its CM id listens, then
/// `exit CODE PINGS` when it has finished (PINGS: its `server ping data:` lines; CODE 0 also
/// for C `rping`'s known teardown race, see [`rping_ended_well`]).
fn peer_rping(args: &str, wire: &mut Wire) -> String {
    let (program, port) = args.split_once(' ').expect("rping c|rust PORT");
    let path = match program {
        "c" => c_tool("rping"),
        "rust" => rdma_verbs_test_kit::tool("rping"),
        _ => panic!("peer: rping {program}?"),
    };
    let local: IpAddr = env(LOCAL_VAR).parse().expect("an address");
    let at = SocketAddr::new(local, port.parse().expect("a port"));
    let args = ["-s", "-v", "-a", &local.to_string(), "-p", port].map(String::from);
    let mut server = Running::spawn("peer rping server", &path, &args);
    server.wait_until("listened", GUARD, || cm_listening(at));
    wire.send("listening");
    let out = server.finish(Instant::now() + GUARD);
    let pings = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("server ping data: "))
        .count();
    let code = if rping_ended_well(&out) {
        0
    } else {
        out.status.code().map_or(-1, |c| c)
    };
    format!("exit {code} {pings}")
}

/// `ucmatose PORT`: runs rdma-core's `ucmatose` as the server (one connection, 4 messages
/// each way) on PORT of this side's link address; answers `listening` once its CM id
/// listens, then `exit CODE` when it has finished.
fn peer_ucmatose(args: &str, wire: &mut Wire) -> String {
    let local: IpAddr = env(LOCAL_VAR).parse().expect("an address");
    let at = SocketAddr::new(local, args.parse().expect("a port"));
    let args = ["-b", &local.to_string(), "-p", args, "-C", "4"].map(String::from);
    let mut server = Running::spawn("peer ucmatose server", &c_tool("ucmatose"), &args);
    server.wait_until("listened", GUARD, || cm_listening(at));
    wire.send("listening");
    let out = server.finish(Instant::now() + GUARD);
    format!("exit {}", out.status.code().map_or(-1, |c| c))
}

/// `grpc PORT [KEEPALIVE]`: runs the `grpc_echo` example's server (rdma-verbs-tonic: gRPC
/// over an RDMA byte stream) on PORT of this side's link address, with the keepalive
/// interval KEEPALIVE (seconds, 0 for none) if given; answers `listening` once its CM id
/// listens, then waits for `stop`, stops it and answers `stopped`.
fn peer_grpc(args: &str, wire: &mut Wire) -> String {
    let local: IpAddr = env(LOCAL_VAR).parse().expect("an address");
    let (port, keepalive) = args.split_once(' ').unwrap_or((args, ""));
    let at = SocketAddr::new(local, port.parse().expect("a port"));
    let mut args = ["server", "-a", &local.to_string(), "-p", port]
        .map(String::from)
        .to_vec();
    if !keepalive.is_empty() {
        args.extend(["-k".to_owned(), keepalive.to_owned()]);
    }
    let mut server = Running::spawn("peer gRPC server", &example("grpc_echo"), &args);
    server.wait_until("listened", GUARD, || cm_listening(at));
    wire.send("listening");
    let stop = wire.recv("stop");
    assert_eq!(stop, "stop", "peer: grpc waits for stop");
    server.kill();
    "stopped".to_owned()
}
