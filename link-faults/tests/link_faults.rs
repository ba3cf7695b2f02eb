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
//!   (the peer needs the same two device variables, and this binary and the examples at the
//!   same paths).
//!
//! Without them every test fails. The peer process is this binary re-executed on the peer
//! through `WITH_RDMA_PEER_EXEC`, as the ignored test `peer_process` with `LINK_FAULTS_PEER`
//! set to the address to connect back to. Over that TCP connection (on the link) it takes
//! one-line commands: set up a new QP, check what was written into it, receive a stream,
//! inject or clear a fault on its own side, run a perftest server. The tests share it
//! (starting a process on the other VM takes seconds) and take turns with it, so they run
//! one at a time, as they must: they share the link.
//!
//! Each test prints what it measured (for the faults, the time from the fault to the first
//! error completion and the status seen; run with `--nocapture` to see it), removes its
//! faults on every path (guards), and checks at its end that no destroy call failed in a
//! destructor, here or in the peer process.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, TcpListener, TcpStream};
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ibverbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, Endpoint, GidType, MemoryRegion,
    PortState, PreparedQueuePair, ProtectionDomain, QpState, QpType, QueuePair, RecvRequest,
    RemoteMemory, SendRequest, WcOpcode, WcStatus, WorkCompletion,
};

// ---------------------------------------------------------------- the link

const DEVICE_VAR: &str = "WITH_RDMA_LINK_DEVICE";
const NETDEV_VAR: &str = "WITH_RDMA_LINK_NETDEV";
const LOCAL_VAR: &str = "WITH_RDMA_LOCAL_ADDR";
const PEER_VAR: &str = "WITH_RDMA_PEER_ADDR";
const EXEC_VAR: &str = "WITH_RDMA_PEER_EXEC";
/// Set in the peer process to the `ADDR:PORT` it connects back to.
const PEER_ENV: &str = "LINK_FAULTS_PEER";

/// How long any one wait may last before the test declares a hang.
const GUARD: Duration = Duration::from_secs(60);
/// How long the peer waits for its next command.
const PEER_IDLE: Duration = Duration::from_secs(300);

fn env(name: &str) -> String {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value,
        _ => panic!(
            "{name} is not set: the link-fault tests need two hosts joined by a link. Run them \
             with WITH_RDMA_TOPOLOGY=pair (two VMs; `scripts/with-rdma --pair-start` boots \
             them), or describe your peer with {DEVICE_VAR}, {NETDEV_VAR}, {LOCAL_VAR}, \
             {PEER_VAR} and {EXEC_VAR} (see the README)"
        ),
    }
}

fn env_addr(name: &str) -> Ipv4Addr {
    let value = env(name);
    value
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name}={value:?} is not an IPv4 address"))
}

/// This host's side of the link and how to reach the peer.
struct Link {
    device: String,
    netdev: String,
    local: Ipv4Addr,
    peer: Ipv4Addr,
    peer_exec: Vec<String>,
}

impl Link {
    fn from_env() -> Link {
        Link {
            device: env(DEVICE_VAR),
            netdev: env(NETDEV_VAR),
            local: env_addr(LOCAL_VAR),
            peer: env_addr(PEER_VAR),
            peer_exec: env(EXEC_VAR)
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// Asserts that no destroy call has failed in a destructor so far.
fn assert_clean_drops() {
    assert_eq!(ibverbs::drop_error::count(), 0, "a destroy call failed");
}

/// Runs `argv`, returning its stdout, or its stderr as the error.
fn run(argv: &[&str]) -> Result<String, String> {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A fault on this host's side of the link: a netem qdisc on the network device (egress:
/// it acts on the packets this host sends), or the device taken down. Removed on drop.
struct Fault {
    netdev: String,
    kind: FaultKind,
    active: bool,
}

#[derive(Clone, Debug)]
enum FaultKind {
    /// `tc qdisc replace dev NETDEV root netem SPEC`
    Netem(String),
    /// `ip link set dev NETDEV down`
    LinkDown,
}

impl Fault {
    fn inject(netdev: &str, kind: FaultKind) -> Fault {
        let result = match &kind {
            FaultKind::Netem(spec) => {
                let mut argv = vec!["tc", "qdisc", "replace", "dev", netdev, "root", "netem"];
                argv.extend(spec.split_whitespace());
                run(&argv)
            }
            FaultKind::LinkDown => run(&["ip", "link", "set", "dev", netdev, "down"]),
        };
        if let Err(e) = result {
            panic!(
                "cannot inject {kind:?} on {netdev} (root and, for netem, sch_netem needed): {e}"
            );
        }
        Fault {
            netdev: netdev.to_owned(),
            kind,
            active: true,
        }
    }

    fn netem(netdev: &str, spec: &str) -> Fault {
        Fault::inject(netdev, FaultKind::Netem(spec.to_owned()))
    }

    /// The packets the netem qdisc has dropped (`tc -s qdisc show`).
    fn dropped(&self) -> u64 {
        let text = run(&["tc", "-s", "qdisc", "show", "dev", &self.netdev])
            .unwrap_or_else(|e| panic!("{e}"));
        let after = text
            .split_once("(dropped ")
            .unwrap_or_else(|| panic!("no drop count in `tc -s qdisc show`: {text}"))
            .1;
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("bad drop count in `tc -s qdisc show`: {text}"))
    }

    fn undo(&mut self) -> Result<String, String> {
        self.active = false;
        match self.kind {
            FaultKind::Netem(_) => run(&["tc", "qdisc", "del", "dev", &self.netdev, "root"]),
            FaultKind::LinkDown => run(&["ip", "link", "set", "dev", &self.netdev, "up"]),
        }
    }

    /// Removes the fault; panics if that fails.
    fn remove(mut self) {
        if let Err(e) = self.undo() {
            panic!("cannot remove {:?} from {}: {e}", self.kind, self.netdev);
        }
    }
}

impl Drop for Fault {
    fn drop(&mut self) {
        if self.active {
            if let Err(e) = self.undo() {
                eprintln!("link_faults: cannot remove {:?}: {e}", self.kind);
            }
        }
    }
}

// ---------------------------------------------------------------- data

/// Bytes per message slot; messages are 1..=SLOT bytes.
const SLOT: usize = 4096;
/// Bytes of a record of the outage tests (one packet).
const RECORD: usize = 256;
/// Record slots in the peer's memory.
const RECORDS: usize = 64;
/// Send queue depth of this side.
const DEPTH: u32 = 16;
/// Receive slots of the peer in the loss test, and how many receives it keeps posted.
///
/// The r-th message that takes a receive lands in slot r % RING: a send into the buffer of
/// its receive, a write with immediate by its address (placing its data before it takes
/// the receive: only its last packet needs one). A slot is not overwritten before the peer
/// has checked it: message k is posted once message k - DEPTH has completed, so received,
/// which needs the receive of about r - DEPTH * 2 / 3, which the peer posts once it has
/// checked r - AHEAD - DEPTH * 2 / 3 > r - RING.
const RING: usize = 64;
const AHEAD: usize = 32;
/// Messages of the loss test; every third is a plain RDMA write.
const MESSAGES: u64 = 1500;
/// Bytes of the peer's memory: the receive ring, then a slot for every plain write.
const INBOX: usize = (RING + MESSAGES as usize / 3 + 1) * SLOT;

/// The `len` bytes of message `id` (unique per message): each 8-byte word mixes the id with
/// the word's index, so stale, misplaced, shifted or torn data does not compare equal.
fn pattern(id: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 8);
    let mut word = 0u64;
    while out.len() < len {
        let w = (id ^ word.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        out.extend_from_slice(&w.to_le_bytes());
        word += 1;
    }
    out.truncate(len);
    out
}

/// A well-mixed hash of `x` (splitmix64's finaliser).
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Record `seq` of the outage tests: `seq`, then its pattern; it goes to slot
/// `seq % RECORDS` of the peer's memory.
fn record(seq: u64) -> Vec<u8> {
    let mut r = seq.to_le_bytes().to_vec();
    r.extend(pattern(seq, RECORD - 8));
    r
}

/// What message `k` of the loss test is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Send,
    WriteImm,
    Write,
}

impl Op {
    fn of(k: u64) -> Op {
        match k % 3 {
            0 => Op::Send,
            1 => Op::WriteImm,
            _ => Op::Write,
        }
    }
}

fn message_len(k: u64) -> usize {
    1 + (mix(k) % SLOT as u64) as usize
}

fn message(k: u64) -> Vec<u8> {
    pattern(k, message_len(k))
}

/// Of the messages that consume a receive at the peer (sends and writes with immediate),
/// the index of message `k`, and the message of index `r`.
fn recv_index(k: u64) -> u64 {
    k / 3 * 2 + k % 3
}

fn recv_message(r: u64) -> u64 {
    r / 2 * 3 + r % 2
}

/// Where in the peer's memory the receive `r` lands and the plain write `k` goes.
fn ring_offset(r: u64) -> usize {
    (r % RING as u64) as usize * SLOT
}

fn bulk_offset(k: u64) -> usize {
    (RING + (k / 3) as usize) * SLOT
}

// ---------------------------------------------------------------- verbs

/// This process's verbs objects on the link device.
struct Host {
    ctx: Context,
    pd: ProtectionDomain,
    gid_index: u8,
}

impl Host {
    fn open(device: &str, addr: Ipv4Addr) -> Host {
        let ctx = Context::open(device)
            .unwrap_or_else(|e| panic!("cannot open the link device {device}: {e}"));
        let gid_index = gid_index(&ctx, addr, Duration::ZERO);
        let pd = ctx.alloc_pd().unwrap();
        Host { ctx, pd, gid_index }
    }

    /// An RC QP on its own CQ and `mem_len` bytes of memory with `access`.
    fn prepare(
        &self,
        mem_len: usize,
        access: AccessFlags,
        recvs: u32,
    ) -> (PreparedQueuePair, CompletionQueue, MemoryRegion) {
        let cq = self.ctx.create_cq(DEPTH * 2 + recvs, None).unwrap();
        let qp = self
            .pd
            .create_qp(QpType::Rc, &cq, &cq)
            .gid_index(self.gid_index)
            .access(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)
            .max_send_wr(DEPTH)
            .max_recv_wr(recvs.max(1))
            .build()
            .unwrap();
        let mem = self.pd.alloc_mr(mem_len, access).unwrap();
        (qp, cq, mem)
    }
}

/// The index of the RoCE v2 GID of `addr` in the GID table of port 1, waiting up to `within`
/// for it (and for the port to be ACTIVE): after the link comes back up, the port and the
/// GID take a moment to return.
fn gid_index(ctx: &Context, addr: Ipv4Addr, within: Duration) -> u8 {
    let want = addr.to_ipv6_mapped();
    let start = Instant::now();
    loop {
        let active = ctx.query_port(1).unwrap().state == PortState::Active;
        let found =
            ctx.gid_table(1).unwrap().into_iter().find(|e| {
                e.gid_type == GidType::RoceV2 && Ipv6Addr::from(e.gid.to_bytes()) == want
            });
        if let (true, Some(entry)) = (active, found) {
            return u8::try_from(entry.index).expect("a GID index below 256");
        }
        assert!(
            start.elapsed() <= within,
            "port 1 of the link device is not ACTIVE with a RoCE v2 GID for {addr} \
             (active: {active}, GID found: {})",
            found.is_some()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The device's nonzero hardware counters (rxe counts retries, timeouts, send errors...),
/// for the messages of failed tests.
fn counters(device: &str) -> String {
    let dir = format!("/sys/class/infiniband/{device}/ports/1/hw_counters");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return format!("(no {dir})");
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let value = std::fs::read_to_string(e.path()).ok()?;
            let value = value.trim();
            (value != "0").then(|| format!("{}={value}", e.file_name().to_string_lossy()))
        })
        .collect();
    out.sort();
    out.join(" ")
}

/// One side's connected QP, its CQ and its memory.
struct Side {
    qp: QueuePair,
    cq: CompletionQueue,
    mem: MemoryRegion,
}

/// The text line a side sends about itself: its endpoint and the memory the peer may write.
fn hello(ep: &Endpoint, mem: &RemoteMemory) -> String {
    format!(
        "{} {} {} {} {} {} {} {} {}",
        ep.qpn, ep.psn, ep.lid, ep.gid, ep.port, ep.mtu, mem.addr, mem.len, mem.rkey
    )
}

fn parse_hello(line: &str) -> (Endpoint, RemoteMemory) {
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 9, "bad hello {line:?}");
    let num = |i: usize| -> u64 {
        f[i].parse()
            .unwrap_or_else(|_| panic!("bad hello {line:?}"))
    };
    let ep = Endpoint {
        qpn: num(0) as u32,
        psn: num(1) as u32,
        lid: num(2) as u16,
        gid: f[3]
            .parse::<Ipv6Addr>()
            .unwrap_or_else(|_| panic!("bad hello {line:?}")),
        port: num(4) as u8,
        mtu: num(5) as u32,
    };
    let mem = RemoteMemory {
        addr: num(6),
        len: num(7),
        rkey: num(8) as u32,
    };
    (ep, mem)
}

/// Polls `cq` once, asserting that nothing fails to poll.
fn poll<'w>(cq: &CompletionQueue, wc: &'w mut [WorkCompletion]) -> &'w mut [WorkCompletion] {
    cq.poll(wc).expect("ibv_poll_cq")
}

/// Asserts that `cq` stays empty for a moment.
fn assert_empty(cq: &CompletionQueue, what: &str) {
    std::thread::sleep(Duration::from_millis(100));
    let mut wc = [WorkCompletion::default(); 4];
    let got = poll(cq, &mut wc);
    assert!(got.is_empty(), "{what}: unexpected completions: {got:?}");
}

// ---------------------------------------------------------------- the wire

/// A TCP connection carrying one-line messages.
struct Wire {
    out: TcpStream,
    lines: BufReader<TcpStream>,
}

impl Wire {
    fn new(stream: TcpStream, timeout: Duration) -> Wire {
        stream.set_read_timeout(Some(timeout)).unwrap();
        stream.set_nodelay(true).unwrap();
        Wire {
            out: stream.try_clone().unwrap(),
            lines: BufReader::new(stream),
        }
    }

    fn send(&mut self, line: &str) {
        self.out
            .write_all(format!("{line}\n").as_bytes())
            .unwrap_or_else(|e| panic!("sending {line:?}: {e}"));
    }

    /// The next line, or `None` at the end of the connection.
    fn recv_opt(&mut self, what: &str) -> Option<String> {
        let mut line = String::new();
        match self.lines.read_line(&mut line) {
            Ok(0) => None,
            Ok(_) => Some(line.trim_end().to_owned()),
            Err(e) => panic!("reading {what}: {e}"),
        }
    }

    fn recv(&mut self, what: &str) -> String {
        self.recv_opt(what)
            .unwrap_or_else(|| panic!("the connection ended before {what}"))
    }
}

// ---------------------------------------------------------------- the peer, from here

/// The peer process, on the other host, and the connection to it. Dropping it closes the
/// connection (the peer exits when it sees that), then makes sure the process is gone.
struct Peer {
    wire: Option<Wire>,
    child: Child,
}

impl Peer {
    /// Starts the peer process through `WITH_RDMA_PEER_EXEC` and accepts its connection.
    fn spawn(link: &Link) -> Peer {
        let listener = TcpListener::bind((link.local, 0))
            .unwrap_or_else(|e| panic!("cannot listen on {} ({LOCAL_VAR}): {e}", link.local));
        let addr = listener.local_addr().unwrap();
        let exe = std::env::current_exe().unwrap();
        let child = Command::new(&link.peer_exec[0])
            .args(&link.peer_exec[1..])
            .arg("env")
            .arg(format!("{PEER_ENV}={addr}"))
            .arg(exe)
            .args(["peer_process", "--exact", "--ignored", "--nocapture"])
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

    fn wire(&mut self) -> &mut Wire {
        self.wire.as_mut().unwrap()
    }

    /// Sends a command and returns the peer's answer.
    fn ask(&mut self, command: &str) -> String {
        self.wire().send(command);
        let what = format!("the peer's answer to {command:?}");
        self.wire().recv(&what)
    }

    /// Tells the peer to set up a new QP (dropping its old one) and connects `side` to it.
    fn connect(&mut self, host: &Host, opts: &ConnectOptions) -> (Side, RemoteMemory) {
        let (qp, cq, mem) = host.prepare(DEPTH as usize * SLOT, AccessFlags::LOCAL_WRITE, 0);
        let none = RemoteMemory {
            addr: 0,
            len: 0,
            rkey: 0,
        };
        let answer = self.ask(&format!("qp {}", hello(&qp.endpoint(), &none)));
        let (ep, peer_mem) = parse_hello(&answer);
        let qp = qp.connect(&ep, opts).unwrap();
        (Side { qp, cq, mem }, peer_mem)
    }

    /// Asserts that no destroy call has failed in a destructor in the peer process so far.
    fn assert_clean_drops(&mut self) {
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
static PEER: Mutex<Option<Peer>> = Mutex::new(None);

/// A test's turn with the peer process.
struct PeerTurn {
    slot: MutexGuard<'static, Option<Peer>>,
}

impl PeerTurn {
    /// Waits for the turn, starting the peer process if there is none.
    fn take(link: &Link) -> PeerTurn {
        let mut slot = PEER.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(Peer::spawn(link));
        }
        PeerTurn { slot }
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
fn peer_process() {
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
            "drops" => format!("ok {}", ibverbs::drop_error::count()),
            _ => panic!("peer: unknown command {line:?}"),
        };
        wire.send(&answer);
    }
    drop(state);
    assert_clean_drops();
}

/// `qp HELLO`: a new QP with memory the peer may write (and receives to post), connected to
/// the QP of HELLO; answers with its own hello.
fn peer_qp(state: &mut PeerState, args: &str) -> String {
    state.side = None;
    let (remote, _) = parse_hello(args);
    let remote_write = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let (qp, cq, mem) = state.host.prepare(INBOX, remote_write, AHEAD as u32);
    let qp = qp.connect(&remote, &ConnectOptions::default()).unwrap();
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
            got == record(seq),
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

/// `tool NAME ARGS...`: runs the example NAME as a perftest server on a free port with
/// ARGS, on this side's device and GID; answers `listening PORT` when it listens, then
/// `exit CODE` when it has finished.
fn peer_tool(state: &PeerState, args: &str, wire: &mut Wire) -> String {
    let mut words = args.split_whitespace();
    let tool = example(words.next().expect("tool NAME ARGS"));
    let port = TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
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

/// Whether a socket listens on TCP `port` (`/proc/net/tcp`, state 0A).
fn listening(port: u16) -> bool {
    let needle = format!(":{port:04X} 00000000:0000 0A");
    std::fs::read_to_string("/proc/net/tcp").is_ok_and(|t| t.contains(&needle))
}

/// The example binary `tool`, from `target/<profile>/examples/` beside this test
/// (`target/<profile>/deps/<test>-<hash>`).
fn example(tool: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join(tool))
        .expect("the test executable is in target/<profile>/deps");
    assert!(
        path.is_file(),
        "{} is missing: build the examples first (`cargo build --examples`)",
        path.display()
    );
    path
}

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

/// Posts record `seq` as a signaled RDMA write into the peer's slot for it.
fn post_record(side: &mut Side, seq: u64, peer_mem: RemoteMemory) {
    let at = (seq % u64::from(DEPTH)) as usize * RECORD;
    side.mem.write(at, &record(seq)).unwrap();
    let sge = [side.mem.sge(at..at + RECORD).unwrap()];
    let to = peer_mem
        .slice((seq % RECORDS as u64) * RECORD as u64, RECORD as u64)
        .unwrap();
    side.qp
        .post_send(&mut [SendRequest::write(seq, &sge, to).signaled()])
        .unwrap();
}

/// A `tc -batch -` (netem) or `ip -o -batch -` (link down) process started ahead of a
/// fault, so that injecting it does not wait for a program to start (slow in an emulated
/// machine) and the stream of writes goes on meanwhile. After each command it is asked to
/// show `lo` (`tc qdisc show dev lo`, `ip -o link show dev lo`: one line); that line tells
/// that the command has been carried out.
struct Injector {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    netdev: String,
    kind: FaultKind,
    fired: bool,
}

impl Injector {
    /// Starts the program and waits until it answers.
    fn start(netdev: &str, kind: FaultKind) -> Injector {
        let argv: &[&str] = match kind {
            FaultKind::Netem(_) => &["tc", "-batch", "-"],
            FaultKind::LinkDown => &["ip", "-o", "-batch", "-"],
        };
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {argv:?}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut injector = Injector {
            stdin: child.stdin.take(),
            child,
            lines,
            netdev: netdev.to_owned(),
            kind,
            fired: false,
        };
        injector.show();
        if let Err(e) = injector.lines.recv_timeout(GUARD) {
            panic!("{argv:?} does not answer: {e}");
        }
        injector
    }

    fn command(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot send {line:?} to tc/ip: {e}"));
    }

    /// Asks for one line of output (about `lo`, which has one qdisc).
    fn show(&mut self) {
        self.command(match self.kind {
            FaultKind::Netem(_) => "qdisc show dev lo",
            FaultKind::LinkDown => "link show dev lo",
        });
    }

    /// Injects the fault (without waiting for it).
    fn fire(&mut self) {
        let command = match &self.kind {
            FaultKind::Netem(spec) => {
                format!("qdisc replace dev {} root netem {spec}", self.netdev)
            }
            FaultKind::LinkDown => format!("link set dev {} down", self.netdev),
        };
        self.fired = true;
        self.command(&command);
        self.show();
    }

    /// Whether the fault is in place; panics if the program failed.
    fn in_place(&self) -> bool {
        match self.lines.try_recv() {
            Ok(_) => true,
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Disconnected) => {
                panic!(
                    "injecting {:?} on {} failed (see its error above)",
                    self.kind, self.netdev
                )
            }
        }
    }

    /// The fault, once in place; ends the program.
    fn into_fault(mut self) -> Fault {
        self.fired = false;
        Fault {
            netdev: self.netdev.clone(),
            kind: self.kind.clone(),
            active: true,
        }
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.fired {
            // Dropped between injecting the fault and taking it over: undo it here.
            drop(Fault {
                netdev: self.netdev.clone(),
                kind: self.kind.clone(),
                active: true,
            });
        }
    }
}

/// What the stream of writes saw.
struct Outcome {
    posted: u64,
    last_ok: Option<u64>,
    /// The status of the first error, its write, and when it came after the fault was
    /// injected.
    first_error: (WcStatus, u64, Duration),
    flushed: u64,
    /// How long the fault took to be in place after it was injected.
    in_place: Duration,
}

/// Streams RDMA writes of records with the send queue full; injects `kind` once 4 queues'
/// worth have completed, without pausing; stops posting at the first error completion
/// and drains the queue. Asserts that the completions come in order, each once, and that
/// an error is followed by flushes only.
fn stream_into_fault(
    side: &mut Side,
    peer_mem: RemoteMemory,
    link: &Link,
    kind: FaultKind,
) -> (Outcome, Fault) {
    let device = &link.device;
    let depth = u64::from(DEPTH);
    let (mut posted, mut done, mut flushed) = (0u64, 0u64, 0u64);
    let mut last_ok = None;
    let mut injector = Some(Injector::start(&link.netdev, kind));
    let mut fired: Option<Instant> = None;
    let mut fault: Option<(Fault, Duration)> = None;
    let mut first_error: Option<(WcStatus, u64, Duration)> = None;
    let mut wc = [WorkCompletion::default(); 16];
    let start = Instant::now();
    while done < posted || first_error.is_none() || fault.is_none() {
        if first_error.is_none() {
            while posted - done < depth {
                post_record(side, posted, peer_mem);
                posted += 1;
            }
        }
        for c in poll(&side.cq, &mut wc).iter() {
            assert_eq!(c.wr_id(), done, "completions out of order: {c:?}");
            done += 1;
            match (first_error, c.status()) {
                (None, WcStatus::SUCCESS) => last_ok = Some(c.wr_id()),
                (None, status) => {
                    let at = fired.unwrap_or_else(|| panic!("an error before the fault: {c:?}"));
                    first_error = Some((status, c.wr_id(), at.elapsed()));
                }
                (Some(_), WcStatus::WR_FLUSH_ERR) => flushed += 1,
                (Some(_), _) => {
                    panic!("after the first error, a completion that is not a flush: {c:?}")
                }
            }
        }
        match (fired, &fault) {
            (None, _) if done >= 4 * depth => {
                injector.as_mut().unwrap().fire();
                fired = Some(Instant::now());
            }
            (Some(at), None) if injector.as_ref().unwrap().in_place() => {
                let took = at.elapsed();
                fault = Some((injector.take().unwrap().into_fault(), took));
            }
            _ => {}
        }
        let since = fired.unwrap_or(start);
        assert!(
            since.elapsed() < GUARD,
            "hung: {done} of {posted} writes completed, fault injected: {}, in place: {}, \
             first error: {first_error:?}; counters of {device}: {}",
            fired.is_some(),
            fault.is_some(),
            counters(device),
        );
        std::thread::yield_now();
    }
    let (fault, in_place) = fault.unwrap();
    let outcome = Outcome {
        posted,
        last_ok,
        first_error: first_error.unwrap(),
        flushed,
        in_place,
    };
    (outcome, fault)
}

/// Writes `count` records on a fresh QP, each completing successfully.
fn write_records(side: &mut Side, peer_mem: RemoteMemory, count: u64) {
    let mut wc = [WorkCompletion::default(); 16];
    let (mut posted, mut done) = (0, 0);
    let start = Instant::now();
    while done < count {
        while posted < count && posted - done < u64::from(DEPTH) {
            post_record(side, posted, peer_mem);
            posted += 1;
        }
        for c in poll(&side.cq, &mut wc).iter() {
            assert_eq!((c.wr_id(), c.status()), (done, WcStatus::SUCCESS), "{c:?}");
            done += 1;
        }
        assert!(
            start.elapsed() < GUARD,
            "hung: {done} of {count} writes on the new QP completed"
        );
        std::thread::yield_now();
    }
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
    let opts = ConnectOptions {
        timeout: TIMEOUT,
        retry_cnt: RETRY_CNT,
        ..Default::default()
    };
    let nominal = retry_time(TIMEOUT, RETRY_CNT);
    // Generous for an emulated machine: timers fire late when the host is busy.
    let bound = nominal * 4 + Duration::from_secs(2);

    let (mut side, peer_mem) = peer.connect(&host, &opts);
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
    assert_eq!(side.qp.state().unwrap(), QpState::Error);
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

    let (mut side, peer_mem) = peer.connect(&host, &opts);
    write_records(&mut side, peer_mem, RECORDS as u64);
    let answer = peer.ask(&format!("records {} {RECORDS}", RECORDS - 1));
    assert_eq!(
        answer,
        format!("ok {RECORDS}"),
        "the peer's check of the new QP's writes"
    );
    assert_eq!(side.qp.state().unwrap(), QpState::Rts);
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
#[test]
fn five_percent_loss_each_way_delivers_every_message_intact() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let host = Host::open(&link.device, link.local);
    let (mut side, peer_mem) = peer.connect(&host, &ConnectOptions::default());
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
    assert_eq!(side.qp.state().unwrap(), QpState::Rts);
    drop(side);
    peer.assert_clean_drops();
    drop(host);
    assert_clean_drops();
}

/// Our `ib_write_bw` and `ib_send_bw` (the examples) complete a run between the hosts with
/// 5% of the packets lost each way: server on the peer, client here.
#[test]
fn perftest_bandwidth_runs_complete_under_five_percent_loss() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let host = Host::open(&link.device, link.local);
    let run_args = ["-s", "4096", "-n", "400"];
    assert_eq!(peer.ask(&format!("netem {LOSS}")), "ok");
    let fault = Fault::netem(&link.netdev, LOSS);
    for tool in ["ib_write_bw", "ib_send_bw"] {
        let client_path = example(tool);
        let answer = peer.ask(&format!("tool {tool} {}", run_args.join(" ")));
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
                panic!("{tool}: the client hung");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let stdout = reader.join().unwrap();
        let elapsed = start.elapsed();
        assert!(status.success(), "{tool} client: {status}\n{stdout}");
        let result = stdout
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([run_args[1], run_args[3]]))
            .unwrap_or_else(|| panic!("{tool}: no result line in\n{stdout}"));
        let end = peer.wire().recv("the end of the server");
        assert_eq!(end, "exit 0", "{tool} server");
        eprintln!(
            "{tool} with {LOSS} each way: {} x {} bytes in {elapsed:.2?}; result: {}",
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
