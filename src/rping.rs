//! RDMA ping over rdma_cm that talks to rdma-core's `rping` (package rdmacm-utils): the same
//! options, the same connection parameters, the same buffer advertisements and the same
//! output lines, over the `cm` feature of `rdma-verbs`.
//!
//! ```text
//! rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]             server
//! rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]     client
//!
//!   -s, -c     server or client side
//!   -a ADDR    address to listen on (server, default any) or to connect to (client)
//!   -I ADDR    source address of the client
//!   -p PORT    port (default 7174)
//!   -S SIZE    ping data size, 23..=65535 (default 64)
//!   -C COUNT   pings (default 0: until interrupted)
//!   -v         print the ping data: `ping data: ...` (client), `server ping data: ...`
//!   -V         the client checks that the data came back unchanged (`data mismatch!`)
//!   -d         print the CM events
//! ```
//!
//! Against the C program, on the rdma_cm device of `scripts/with-rdma` (its address is
//! `$WITH_RDMA_CM_ADDR`, 198.18.1.1):
//!
//! ```text
//! rping -s -a 198.18.1.1 -v &                                               # C server
//! target/debug/rping -c -a 198.18.1.1 -C 10 -S 100 -v -V                    # Rust client
//! ```
//!
//! How one ping goes, as the C program does it. Every message is 16 bytes: a buffer's
//! address (64 bits), its rkey and the ping size (32 bits each), big-endian.
//! 1. The client fills its source buffer with `rdma-ping-N: ` and a run of letters (from
//!    `A` + N modulo 58, cycling `A`..=`z`) ending in a NUL, and advertises it.
//! 2. The server RDMA-reads it into its own buffer, prints it with `-v`, and sends a
//!    "go ahead" message (16 zero bytes).
//! 3. The client advertises its sink buffer; the server RDMA-writes the string it read
//!    (up to its NUL) into it and sends another "go ahead".
//! 4. The client checks the sink against the source with `-V` and prints it with `-v`.
//!
//! The client disconnects after COUNT pings; the server ends on the disconnect
//! (`server DISCONNECT EVENT...` on stderr) with status 0. Failures exit with status 1.
//!
//! It is written to be copied: every object is created, used and dropped in the open, with
//! no `unsafe`.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::fmt::Display;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{getopt_long, Item};
use rdma_verbs::cm::{CmEvent, CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::{
    AccessFlags, CompletionQueue, MemoryRegion, ProtectionDomain, QpType, RecvRequest,
    RemoteMemory, SendRequest, WcOpcode, WcStatus, WorkCompletion,
};

const DEFAULT_PORT: u16 = 7174;
const DEFAULT_SIZE: usize = 64;
/// The C program's smallest size.
const MIN_SIZE: usize = 23;
/// The C program's buffer size, 64 KiB; the largest ping is one byte less.
const BUF_SIZE: usize = 64 * 1024;
/// The advertisement: address, rkey, size.
const MSG_LEN: usize = 16;
/// The C program's queue sizes.
const SQ_DEPTH: u32 = 16;
const RQ_DEPTH: u32 = 2;
/// The resolution timeouts the C program gives.
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// How long the completion wait sleeps before looking at the CM channel again.
const CM_CHECK: Duration = Duration::from_millis(20);

const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;
const RDMA_WRID: u64 = 3;

/// The command line, with the C program's defaults.
struct Options {
    server: bool,
    addr: Option<String>,
    source: Option<String>,
    port: u16,
    size: usize,
    count: u64,
    verbose: bool,
    validate: bool,
    debug: bool,
}

fn usage() {
    println!("rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]");
    println!("rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]");
    for (opt, what) in [
        ("-c\t", "client side"),
        ("-I\t", "Source address to bind to for client."),
        (
            "-s\t",
            "server side.  To bind to any address with IPv6 use -a ::0",
        ),
        ("-v\t", "display ping data to stdout"),
        ("-V\t", "validate ping data"),
        ("-d\t", "debug printfs"),
        ("-S size ", "ping data size"),
        ("-C count", "ping count times"),
        ("-a addr\t", "address"),
        ("-p port\t", "port"),
    ] {
        println!("\t{opt}\t{what}");
    }
}

/// Parses the C program's options (`args` after the program name) with its getopt string:
/// `-vV`, `-C5` and `-C 5` all work; a bad option gets glibc's message, as `prog` says it.
fn parse(prog: &str, args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        server: false,
        addr: None,
        source: None,
        port: DEFAULT_PORT,
        size: DEFAULT_SIZE,
        count: 0,
        verbose: false,
        validate: false,
        debug: false,
    };
    let mut side = None;
    let parsed = getopt_long(args, "vVdsca:I:p:C:S:", &[]);
    for item in parsed.items {
        let (flag, value) = match item {
            Item::Opt(flag, value) => (flag, value.unwrap_or_default()),
            Item::Error(err) => return Err(err.message(prog)),
        };
        match flag {
            's' => side = Some(true),
            'c' => side = Some(false),
            'v' => o.verbose = true,
            'V' => o.validate = true,
            'd' => o.debug = true,
            'a' => o.addr = Some(value),
            'I' => o.source = Some(value),
            'p' => o.port = number(&value, "port")?,
            'C' => o.count = number(&value, "count")?,
            _ => {
                o.size = number(&value, "size")?;
                if !(MIN_SIZE..BUF_SIZE).contains(&o.size) {
                    return Err(format!(
                        "Invalid size {value} (valid range is {MIN_SIZE} to {BUF_SIZE})"
                    ));
                }
            }
        }
    }
    if let Some(operand) = parsed.operands.first() {
        return Err(format!("unexpected argument {operand}"));
    }
    o.server = side.ok_or("either -s or -c")?;
    if !o.server && o.addr.is_none() {
        return Err("the client needs -a".into());
    }
    Ok(o)
}

fn number<T: std::str::FromStr>(v: &str, what: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("Invalid {what} {v}"))
}

/// `host` (an address or a name) with `port`, as `getaddrinfo` gives it.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("getaddrinfo failed - invalid hostname or IP address: {host}"))
}

/// Adds what failed to an error.
trait Say<T> {
    fn or_say(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Say<T> for Result<T, E> {
    fn or_say(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// The 16-byte advertisement of `mr`'s first `size` bytes.
fn advert(mr: &MemoryRegion, size: usize) -> [u8; MSG_LEN] {
    let mut msg = [0; MSG_LEN];
    msg[..8].copy_from_slice(&mr.addr().to_be_bytes());
    msg[8..12].copy_from_slice(&mr.rkey().to_be_bytes());
    msg[12..].copy_from_slice(&(size as u32).to_be_bytes());
    msg
}

/// The peer's buffer an advertisement names.
fn parse_advert(msg: &[u8; MSG_LEN]) -> RemoteMemory {
    let word = |r: std::ops::Range<usize>| u32::from_be_bytes(msg[r].try_into().expect("4"));
    RemoteMemory::new(
        u64::from_be_bytes(msg[..8].try_into().expect("8")),
        word(12..16).into(),
        word(8..12),
    )
}

/// Ping `n`'s data: `rdma-ping-N: `, then letters from `A` + N mod 58 cycling through
/// `A`..=`z`, then a NUL at the end of the `size` bytes.
fn ping_data(n: u64, size: usize) -> Vec<u8> {
    let mut data = format!("rdma-ping-{n}: ").into_bytes();
    let mut c = b'A' + (n % 58) as u8;
    while data.len() < size {
        data.push(c);
        c = if c == b'z' { b'A' } else { c + 1 };
    }
    data.truncate(size);
    data[size - 1] = 0;
    data
}

/// The text before the first NUL of `buf`.
fn c_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The CM event channel, and how its events are printed.
struct Events {
    channel: EventChannel,
    /// `server` or `client`, for the disconnect line.
    side: &'static str,
    /// `-d`: print every event.
    debug: bool,
}

impl Events {
    fn new(o: &Options) -> Result<Events, String> {
        Ok(Events {
            channel: EventChannel::new().or_say("rdma_create_event_channel")?,
            side: if o.server { "server" } else { "client" },
            debug: o.debug,
        })
    }

    /// The next event within `timeout` (`None`: wait for it).
    fn next(&self, timeout: Option<Duration>) -> Result<Option<CmEvent>, String> {
        let ev = match timeout {
            Some(t) => self.channel.get_event_timeout(t),
            None => self.channel.get_event().map(Some),
        }
        .or_say("rdma_get_cm_event")?;
        if let Some(ev) = &ev {
            if self.debug {
                println!("cma_event type {}", describe(ev));
            }
            if matches!(ev.kind, CmEventKind::Disconnected) {
                eprintln!("{} DISCONNECT EVENT...", self.side);
            }
        }
        Ok(ev)
    }

    /// The event that must come next, or an error naming the one that came.
    fn expect(&self, want: &str, ok: fn(&CmEventKind) -> bool) -> Result<CmEvent, String> {
        let ev = self.next(None)?.expect("waits for an event");
        if ok(&ev.kind) {
            Ok(ev)
        } else {
            Err(format!("cma event {} (waiting for {want})", describe(&ev)))
        }
    }
}

/// What a wait for a completion ended with.
enum Step {
    Done(WorkCompletion),
    Disconnected,
}

/// One side's connection: the CM id and its verbs objects, and the messages' buffers.
struct Conn {
    events: Events,
    id: CmId,
    pd: ProtectionDomain,
    cq: CompletionQueue,
    recv: MemoryRegion,
    send: MemoryRegion,
    /// The RDMA sink (client) or the buffer the server reads into and writes from.
    rdma: MemoryRegion,
}

impl Conn {
    /// PD, completion channel and CQ on `id`'s device, its QP and the registered buffers,
    /// with the first receive posted.
    fn new(events: Events, mut id: CmId, o: &Options) -> Result<Conn, String> {
        let ctx = id.context().or_say("the id's device")?;
        let pd: ProtectionDomain = ctx.alloc_pd().or_say("ibv_alloc_pd failed")?;
        let comp = ctx
            .create_comp_channel()
            .or_say("ibv_create_comp_channel failed")?;
        let cq = ctx
            .create_cq(SQ_DEPTH * 2, Some(&comp))
            .or_say("ibv_create_cq failed")?;
        let qp = pd
            .create_qp(QpType::Rc, &cq, &cq)
            .max_send_wr(SQ_DEPTH)
            .max_recv_wr(RQ_DEPTH);
        id.create_qp(qp).or_say("rdma_create_qp")?;
        let remote =
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE;
        let conn = Conn {
            recv: pd
                .alloc_mr(MSG_LEN, AccessFlags::LOCAL_WRITE)
                .or_say("recv_buf reg_mr failed")?,
            send: pd
                .alloc_mr(MSG_LEN, AccessFlags::empty())
                .or_say("send_buf reg_mr failed")?,
            rdma: pd
                .alloc_mr(o.size, remote)
                .or_say("rdma_buf reg_mr failed")?,
            events,
            id,
            pd,
            cq,
        };
        conn.post_recv()?;
        Ok(conn)
    }

    fn qp(&self) -> &rdma_verbs::QueuePair {
        self.id.qp().expect("created in Conn::new")
    }

    fn post_recv(&self) -> Result<(), String> {
        let sge = [self.recv.sge(..).or_say("recv sge")?];
        self.qp()
            .post_recv(&mut [RecvRequest::new(RECV_WRID, &sge)])
            .or_say("post recv error")
    }

    /// Sends the 16 bytes in the send buffer.
    fn send_msg(&mut self, msg: &[u8; MSG_LEN]) -> Result<(), String> {
        self.send.write(0, msg).or_say("send_buf")?;
        let sge = [self.send.sge(..).or_say("send sge")?];
        self.qp()
            .post_send(&mut [SendRequest::send(SEND_WRID, &sge).signaled()])
            .or_say("post send error")
    }

    /// Waits for the next completion of `want` (the sends' completions pass by), or for
    /// the disconnect: flushed requests are skipped as the C program skips them, and the
    /// CM channel is looked at whenever the CQ is idle.
    fn wait(&self, want: WcOpcode) -> Result<Step, String> {
        let mut wc = [WorkCompletion::default()];
        loop {
            let got = self
                .cq
                .poll_wait(&mut wc, Some(CM_CHECK))
                .or_say("poll error")?;
            if let Some(wc) = got.first() {
                if wc.status() == WcStatus::WR_FLUSH_ERR {
                    continue;
                }
                wc.ok().or_say("cq completion failed")?;
                match wc.opcode() {
                    op if op == want => return Ok(Step::Done(*wc)),
                    WcOpcode::Send => continue,
                    op => return Err(format!("unexpected completion {op:?}")),
                }
            }
            match self.events.next(Some(Duration::ZERO))?.map(|ev| ev.kind) {
                Some(CmEventKind::Disconnected) => return Ok(Step::Disconnected),
                Some(CmEventKind::DeviceRemoval) => {
                    return Err("cma detected device removal!!!!".into())
                }
                Some(other) => eprintln!("unhandled event: {}, ignoring", other.c_name()),
                None => {}
            }
        }
    }

    /// Waits for the peer's next message and posts the next receive.
    fn recv_msg(&self) -> Result<Option<[u8; MSG_LEN]>, String> {
        let Step::Done(wc) = self.wait(WcOpcode::Recv)? else {
            return Ok(None);
        };
        if wc.byte_len() as usize != MSG_LEN {
            return Err(format!("Received bogus data, size {}", wc.byte_len()));
        }
        let mut msg = [0; MSG_LEN];
        self.recv.read(0, &mut msg).or_say("recv_buf")?;
        self.post_recv()?;
        Ok(Some(msg))
    }

    /// RDMA-reads (`read`) or -writes `len` bytes between the start of the RDMA buffer and
    /// `remote`, and waits for the completion; false on a disconnect.
    fn rdma(&self, read: bool, remote: RemoteMemory, len: usize) -> Result<bool, String> {
        if len > self.rdma.len() {
            return Err(format!(
                "the peer's size {len} is over ours, {}",
                self.rdma.len()
            ));
        }
        let sge = [self.rdma.sge(..len).or_say("rdma sge")?];
        let wr = if read {
            SendRequest::read(RDMA_WRID, &sge, remote)
        } else {
            SendRequest::write(RDMA_WRID, &sge, remote)
        };
        self.qp()
            .post_send(&mut [wr.signaled()])
            .or_say("post send error")?;
        let want = if read {
            WcOpcode::RdmaRead
        } else {
            WcOpcode::RdmaWrite
        };
        Ok(matches!(self.wait(want)?, Step::Done(_)))
    }
}

/// An event as C prints it (`NAME, error STATUS`), with what a reject reason means.
fn describe(ev: &CmEvent) -> String {
    let text = format!("{}, error {}", ev.kind.c_name(), ev.status);
    match &ev.kind {
        CmEventKind::Rejected { reason_text, .. } => format!("{text} ({reason_text})"),
        _ => text,
    }
}

/// Binds, listens, accepts one client and answers its pings until it disconnects.
fn run_server(o: &Options) -> Result<(), String> {
    let events = Events::new(o)?;
    let listener = events
        .channel
        .create_id(PortSpace::Tcp)
        .or_say("rdma_create_id")?;
    let addr = match &o.addr {
        Some(host) => resolve(host, o.port)?,
        None => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), o.port),
    };
    listener.bind(addr).or_say("rdma_bind_addr")?;
    listener.listen(3).or_say("rdma_listen")?;
    let ev = events.expect("CONNECT_REQUEST", |k| {
        matches!(k, CmEventKind::ConnectRequest { .. })
    })?;
    let CmEventKind::ConnectRequest { id, .. } = ev.kind else {
        unreachable!("checked by expect");
    };
    let mut conn = Conn::new(events, id, o)?;
    conn.id.accept(&ConnParam::new()).or_say("rdma_accept")?;
    conn.events.expect("ESTABLISHED", |k| {
        matches!(k, CmEventKind::Established { .. })
    })?;

    let go_ahead = [0; MSG_LEN];
    while let Some(msg) = conn.recv_msg()? {
        let source = parse_advert(&msg);
        if !conn.rdma(true, source, source.len as usize)? {
            break;
        }
        let mut data = vec![0; source.len as usize];
        conn.rdma.read(0, &mut data).or_say("rdma_buf")?;
        if o.verbose {
            println!("server ping data: {}", c_string(&data));
        }
        conn.send_msg(&go_ahead)?;
        let Some(msg) = conn.recv_msg()? else { break };
        // The string and its NUL, as C's strlen + 1.
        let len = data
            .iter()
            .position(|&b| b == 0)
            .map_or(data.len(), |n| n + 1);
        if !conn.rdma(false, parse_advert(&msg), len)? {
            break;
        }
        conn.send_msg(&go_ahead)?;
    }
    // The client has disconnected already (or the run failed): as C, whatever this says.
    let _ = conn.id.disconnect();
    Ok(())
}

/// Resolves the server's address and route, connects, pings COUNT times, disconnects.
fn run_client(o: &Options) -> Result<(), String> {
    let events = Events::new(o)?;
    let id = events
        .channel
        .create_id(PortSpace::Tcp)
        .or_say("rdma_create_id")?;
    let dst = resolve(o.addr.as_deref().expect("checked by parse"), o.port)?;
    let src = o.source.as_deref().map(|s| resolve(s, 0)).transpose()?;
    id.resolve_addr(src, dst, RESOLVE_TIMEOUT)
        .or_say("rdma_resolve_addr")?;
    events.expect("ADDR_RESOLVED", |k| matches!(k, CmEventKind::AddrResolved))?;
    id.resolve_route(RESOLVE_TIMEOUT)
        .or_say("rdma_resolve_route")?;
    events.expect("ROUTE_RESOLVED", |k| {
        matches!(k, CmEventKind::RouteResolved)
    })?;

    let mut conn = Conn::new(events, id, o)?;
    let remote = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE;
    let mut start = conn
        .pd
        .alloc_mr(o.size, remote)
        .or_say("start_buf reg_mr failed")?;
    // A connect the peer refuses at once (iWARP's TCP connect): C's perror and message.
    conn.id.connect(&ConnParam::new()).map_err(|e| {
        format!(
            "rdma_connect: {}\nconnect error -1",
            crate::cli::verbs_error_text(&e)
        )
    })?;
    conn.events.expect("ESTABLISHED", |k| {
        matches!(k, CmEventKind::Established { .. })
    })?;

    let mut sink = vec![0; o.size];
    let mut ping = 0;
    while o.count == 0 || ping < o.count {
        let data = ping_data(ping, o.size);
        start.write(0, &data).or_say("start_buf")?;
        conn.send_msg(&advert(&start, o.size))?;
        if conn.recv_msg()?.is_none() {
            return Ok(()); // the server went away: as C, not a failure
        }
        let msg = advert(&conn.rdma, o.size);
        conn.send_msg(&msg)?;
        if conn.recv_msg()?.is_none() {
            return Ok(());
        }
        conn.rdma.read(0, &mut sink).or_say("rdma_buf")?;
        if o.validate && sink != data {
            return Err("data mismatch!".into());
        }
        if o.verbose {
            println!("ping data: {}", c_string(&sink));
        }
        ping += 1;
    }
    conn.id.disconnect().or_say("rdma_disconnect")
}

/// Runs `rping` with the command line `args` (`argv[0]` first).
pub fn rping(args: Vec<OsString>) -> ExitCode {
    let prog = crate::cli::prog_name(&args, "rping");
    let o = match parse(&prog, &crate::cli::arg_strings(&args)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            if !e.starts_with("Invalid") {
                usage();
            }
            // The C program's status for a bad command line (EINVAL).
            return ExitCode::from(22);
        }
    };
    let result = if o.server {
        run_server(&o)
    } else {
        run_client(&o)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let side = if o.server { "server" } else { "client" };
            eprintln!("rping {side} failed: {e}");
            ExitCode::FAILURE
        }
    }
}
