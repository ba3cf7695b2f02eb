//! RC ping-pong over send/receive that talks to rdma-core's `ibv_rc_pingpong` (package
//! ibverbs-utils): the same options, the same TCP exchange, the same result lines.
//!
//! ```text
//! rc_pingpong [OPTIONS]          server: wait for a client
//! rc_pingpong [OPTIONS] HOST     client: connect to the server on HOST
//!
//!   -p, --port=PORT       TCP port of the exchange (default 18515)
//!   -d, --ib-dev=DEV      RDMA device (default: the first one)
//!   -i, --ib-port=PORT    port of the device (default 1)
//!   -s, --size=SIZE       message size in bytes (default 4096)
//!   -m, --mtu=MTU         path MTU: 256, 512, 1024, 2048 or 4096 (default 1024)
//!   -r, --rx-depth=DEPTH  receives kept posted (default 500)
//!   -n, --iters=ITERS     round trips (default 1000)
//!   -l, --sl=SL           service level (default 0)
//!   -e, --events          sleep on completion events instead of polling
//!   -g, --gid-idx=INDEX   local GID index (required on RoCE)
//!   -c, --chk             validate the received buffer (the server checks it)
//! ```
//!
//! Against the C program (either side may be either program; on RoCE both need `-g`, and on
//! the rxe0 device of `scripts/with-rdma`'s VM, GID index 1 is `::ffff:127.0.0.1`):
//!
//! ```text
//! ibv_rc_pingpong -d rxe0 -g 1 -n 100 -c &                           # C server
//! target/debug/examples/rc_pingpong -d rxe0 -g 1 -n 100 -c 127.0.0.1  # Rust client
//! ```
//!
//! Both print their addresses and, on success, the two lines
//! `BYTES bytes in SECS seconds = RATE Mbit/sec` and `ITERS iters in SECS seconds = T usec/iter`,
//! and exit with status 0 (1 on any failure).
//!
//! How the two sides meet, as the C program does it:
//! 1. Both post `rx-depth` receives into their one buffer (filled with 0x7b).
//! 2. The client connects over TCP and sends its address as 52 bytes: the text
//!    `LLLL:QQQQQQ:PPPPPP:GGGG…` (LID, QP number and first PSN in hex, then the 16 GID bytes
//!    as 32 hex digits, all zero without `-g`) and a NUL. The server reads it, connects its
//!    QP (INIT → RTR → RTS), answers with its own address, and the client replies `done\0`.
//!    The client connects its QP after the exchange.
//! 3. The client sends first; each side sends again once its last send and a receive have
//!    completed, and refills its receives when one is left, until ITERS of each are done.
//! 4. With `-c`, the client writes the C program's pattern (the page number modulo
//!    `sizeof(char)`, that is 0, at the start of every page) before its first send, and the
//!    server reports `invalid data in page N` for each page start that did not arrive.
//!
//! It is written to be copied: every verbs object is created, used and dropped in the open,
//! with no `unsafe`.
#![forbid(unsafe_code)]

use std::fmt::Display;
use std::io::{Read, Write};
use std::net::{Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::Instant;

use rdma_verbs::{
    AccessFlags, ConnectOptions, Context, Endpoint, Gid, LinkLayer, Mtu, QpType, RecvRequest,
    Route, SendRequest, Sge, WorkCompletion,
};

const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;
/// `"0000:000000:000000:" + 32 GID hex digits + NUL`: the C program's address message.
const MSG_LEN: usize = 52;
const DONE: &[u8] = b"done\0";

/// The command line, with the C program's defaults.
struct Options {
    port: u16,
    ib_dev: Option<String>,
    ib_port: u8,
    size: u32,
    mtu: Mtu,
    rx_depth: u32,
    iters: u32,
    sl: u8,
    events: bool,
    gid_idx: Option<u8>,
    validate: bool,
    /// The server to connect to: set on the client.
    host: Option<String>,
}

/// (short, long, takes a value) for every option `ibv_rc_pingpong` has that this one does.
const OPTIONS: &[(char, &str, bool)] = &[
    ('p', "port", true),
    ('d', "ib-dev", true),
    ('i', "ib-port", true),
    ('s', "size", true),
    ('m', "mtu", true),
    ('r', "rx-depth", true),
    ('n', "iters", true),
    ('l', "sl", true),
    ('e', "events", false),
    ('g', "gid-idx", true),
    ('c', "chk", false),
];

/// Parses the arguments as getopt_long does (`-n 5`, `-n5`, `-ec`, `--iters=5`,
/// `--iters 5`, options after the host); numbers as strtol, so `0x10` and `010` work.
fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        port: 18515,
        ib_dev: None,
        ib_port: 1,
        size: 4096,
        mtu: Mtu::Mtu1024,
        rx_depth: 500,
        iters: 1000,
        sl: 0,
        events: false,
        gid_idx: None,
        validate: false,
        host: None,
    };
    let mut hosts = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        // Each option found in this argument, with its value if it is attached to it.
        let mut found: Vec<(char, Option<String>)> = Vec::new();
        if let Some(long) = arg.strip_prefix("--") {
            if long.is_empty() {
                hosts.extend(it.by_ref().cloned());
                break;
            }
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let &(short, _, _) = OPTIONS
                .iter()
                .find(|(_, l, _)| *l == name)
                .ok_or(format!("unrecognized option '--{name}'"))?;
            found.push((short, value));
        } else if let Some(shorts) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (i, c) in shorts.char_indices() {
                let &(_, _, has_value) = OPTIONS
                    .iter()
                    .find(|(s, _, _)| *s == c)
                    .ok_or(format!("invalid option -- '{c}'"))?;
                let rest = &shorts[i + c.len_utf8()..];
                if has_value && !rest.is_empty() {
                    found.push((c, Some(rest.to_owned())));
                    break;
                }
                found.push((c, None));
            }
        } else {
            hosts.push(arg.clone());
            continue;
        }
        for (c, value) in found {
            let has_value = OPTIONS.iter().any(|&(s, _, v)| s == c && v);
            let value = match value {
                Some(v) if has_value => v,
                Some(_) => return Err(format!("option '{c}' doesn't allow an argument")),
                None if has_value => it
                    .next()
                    .cloned()
                    .ok_or(format!("option requires an argument -- '{c}'"))?,
                None => String::new(),
            };
            set_option(&mut o, c, &value)?;
        }
    }
    match hosts.len() {
        0 => {}
        1 => o.host = hosts.pop(),
        _ => return Err("more than one host given".into()),
    }
    Ok(o)
}

fn set_option(o: &mut Options, c: char, value: &str) -> Result<(), String> {
    let bad = || format!("invalid value for -{c}: {value:?}");
    let num = |v: &str| parse_c_number(v).ok_or_else(bad);
    match c {
        'p' => o.port = u16::try_from(num(value)?).map_err(|_| bad())?,
        'd' => o.ib_dev = Some(value.to_owned()),
        'i' => {
            o.ib_port = u8::try_from(num(value)?)
                .ok()
                .filter(|&p| p >= 1)
                .ok_or_else(bad)?
        }
        's' => o.size = u32::try_from(num(value)?).map_err(|_| bad())?,
        'm' => {
            let mtu = u32::try_from(num(value)?).map_err(|_| bad())?;
            o.mtu = Mtu::from_bytes(mtu).ok_or_else(bad)?;
        }
        'r' => o.rx_depth = u32::try_from(num(value)?).map_err(|_| bad())?,
        'n' => o.iters = u32::try_from(num(value)?).map_err(|_| bad())?,
        'l' => o.sl = u8::try_from(num(value)?).map_err(|_| bad())?,
        'e' => o.events = true,
        'g' => {
            // A negative index means "no GID", as in C.
            let n = num(value)?;
            o.gid_idx = match n {
                ..=-1 => None,
                _ => Some(u8::try_from(n).map_err(|_| bad())?),
            };
        }
        'c' => o.validate = true,
        _ => unreachable!("every option in OPTIONS is handled"),
    }
    Ok(())
}

/// A number as C's `strtol(s, NULL, 0)` reads it: decimal, `0x` hex or `0` octal.
fn parse_c_number(s: &str) -> Option<i64> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let value = if let Some(hex) = digits.strip_prefix("0x").or(digits.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// The address message: `LID:QPN:PSN:GID` in hex, NUL-padded to [`MSG_LEN`] bytes.
fn encode(me: &Endpoint) -> [u8; MSG_LEN] {
    let text = format!(
        "{:04x}:{:06x}:{:06x}:{:032x}",
        me.lid,
        me.qpn,
        me.psn,
        u128::from_be_bytes(me.gid.to_bytes())
    );
    let mut msg = [0; MSG_LEN];
    msg[..text.len()].copy_from_slice(text.as_bytes());
    msg
}

/// Reads the peer's address message: all an [`Endpoint`] holds (port and path MTU are
/// local choices, `-i` and `-m`, as in C).
fn decode(msg: &[u8; MSG_LEN]) -> Result<Endpoint, String> {
    let bad = || {
        format!(
            "malformed address from the peer: {:?}",
            String::from_utf8_lossy(msg)
        )
    };
    let end = msg.iter().position(|&b| b == 0).ok_or_else(bad)?;
    let text = std::str::from_utf8(&msg[..end]).map_err(|_| bad())?;
    let mut fields = text.splitn(4, ':');
    let mut next = || fields.next().ok_or_else(bad);
    let (lid, qpn, psn, gid) = (next()?, next()?, next()?, next()?);
    if gid.len() != 32 {
        return Err(bad());
    }
    Ok(Endpoint::new(
        u32::from_str_radix(qpn, 16).map_err(|_| bad())?,
        u32::from_str_radix(psn, 16).map_err(|_| bad())?,
        u16::from_str_radix(lid, 16).map_err(|_| bad())?,
        Gid::from(
            u128::from_str_radix(gid, 16)
                .map_err(|_| bad())?
                .to_be_bytes(),
        ),
    ))
}

/// Adds what failed to an error, like the C program's messages.
trait Say<T> {
    fn or_say(self, what: &str) -> Result<T, String>;
}

impl<T, E: Display> Say<T> for Result<T, E> {
    fn or_say(self, what: &str) -> Result<T, String> {
        self.map_err(|e| format!("{what}: {e}"))
    }
}

/// Posts up to `n` receives one by one, as C does, and returns how many were posted.
fn post_recvs(
    post: impl Fn(&mut [RecvRequest<'_>]) -> rdma_verbs::Result<()>,
    sge: &[Sge<'_>],
    n: u32,
) -> u32 {
    (0..n)
        .take_while(|_| post(&mut [RecvRequest::new(RECV_WRID, sge)]).is_ok())
        .count() as u32
}

fn print_address(which: &str, e: &Endpoint) {
    println!(
        "  {which} LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        e.lid, e.qpn, e.psn, e.gid
    );
}

fn run(o: &Options) -> Result<(), String> {
    let ctx = match &o.ib_dev {
        Some(name) => Context::open(name),
        None => Context::open_first(),
    }
    .or_say("Couldn't get context")?;
    let port = ctx.query_port(o.ib_port).or_say("Couldn't get port info")?;
    if port.link_layer != LinkLayer::Ethernet && port.lid == 0 {
        return Err("Couldn't get local LID".into());
    }
    if port.link_layer == LinkLayer::Ethernet && o.gid_idx.is_none() {
        return Err("the port is RoCE: give a GID index with -g (1 on rxe: its IPv4 GID)".into());
    }

    let channel = match o.events {
        true => Some(
            ctx.create_comp_channel()
                .or_say("Couldn't create completion channel")?,
        ),
        false => None,
    };
    let pd = ctx.alloc_pd().or_say("Couldn't allocate PD")?;
    let size = o.size as usize;
    // One buffer both sends and receives, as in C (a region cannot be empty: -s 0 gets one
    // byte and sends none of it).
    let mut mr = pd
        .alloc_mr(size.max(1), AccessFlags::LOCAL_WRITE)
        .or_say("Couldn't register MR")?;
    mr.write(0, &vec![0x7b; size])
        .or_say("Couldn't fill the buffer")?;
    let client = o.host.is_some();
    let page = rdma_verbs::page_size();
    if o.validate && client {
        for offset in (0..size).step_by(page) {
            mr.write(offset, &[0])
                .or_say("Couldn't write the pattern")?;
        }
    }
    // One CQ for both queues, with room for every receive and the one send.
    let cq = ctx
        .create_cq(o.rx_depth + 1, channel.as_ref())
        .or_say("Couldn't create CQ")?;
    let mut builder = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .max_send_wr(1)
        .max_recv_wr(o.rx_depth)
        .max_send_sge(1)
        .max_recv_sge(1)
        .port(o.ib_port)
        .access(AccessFlags::empty());
    if let Some(index) = o.gid_idx {
        builder = builder.gid_index(index);
    }
    let qp = builder.build().or_say("Couldn't create QP")?;

    let sge = [mr.sge(..size).or_say("Couldn't describe the buffer")?];
    let mut routs = post_recvs(|wr| Ok(qp.post_recv(wr)?), &sge, o.rx_depth);
    if routs < o.rx_depth {
        return Err(format!("Couldn't post receive ({routs})"));
    }
    if o.events {
        cq.req_notify(false)
            .or_say("Couldn't request CQ notification")?;
    }

    // Without -g the C program sends an all-zero GID (and expects no GRH on InfiniBand).
    let mut me = qp.endpoint();
    if o.gid_idx.is_none() {
        me.gid = Gid::ZERO;
    }
    print_address("local address: ", &me);
    // The RTR and RTS attributes of the C program. The QP sends from its own GID (the one
    // given to gid_index above).
    let opts = ConnectOptions::new()
        .path_mtu(o.mtu)
        .timeout(14)
        .retry_cnt(7)
        .rnr_retry(7)
        .min_rnr_timer(12)
        .max_rd_atomic(1)
        .max_dest_rd_atomic(1)
        .route(Route::new().hop_limit(1).sl(o.sl));
    let mut msg = [0; MSG_LEN];
    let (peer, qp) = match &o.host {
        Some(host) => {
            let mut tcp = TcpStream::connect((host.as_str(), o.port))
                .or_say(&format!("Couldn't connect to {host}:{}", o.port))?;
            tcp.write_all(&encode(&me))
                .or_say("Couldn't send local address")?;
            tcp.read_exact(&mut msg)
                .or_say("Couldn't read remote address")?;
            tcp.write_all(DONE).or_say("Couldn't send done")?;
            let peer = decode(&msg)?;
            let qp = qp
                .connect(&peer, &opts)
                .or_say("Couldn't connect to remote QP")?;
            (peer, qp)
        }
        None => {
            // Both the IPv6 and the IPv4 wildcard, as getaddrinfo(NULL) offers them.
            let any = [
                SocketAddr::from((Ipv6Addr::UNSPECIFIED, o.port)),
                SocketAddr::from(([0, 0, 0, 0], o.port)),
            ];
            let listener = TcpListener::bind(&any[..])
                .or_say(&format!("Couldn't listen to port {}", o.port))?;
            let (mut tcp, _) = listener.accept().or_say("accept() failed")?;
            drop(listener);
            tcp.read_exact(&mut msg)
                .or_say("Couldn't read remote address")?;
            let peer = decode(&msg)?;
            let qp = qp
                .connect(&peer, &opts)
                .or_say("Couldn't connect to remote QP")?;
            tcp.write_all(&encode(&me))
                .or_say("Couldn't send local address")?;
            let mut done = [0; DONE.len()];
            tcp.read_exact(&mut done).or_say("Couldn't read done")?;
            (peer, qp)
        }
    };
    print_address("remote address:", &peer);

    // As in C: inline sends when the QP can take the whole message inline.
    let send = || {
        let wr = SendRequest::send(SEND_WRID, &sge).signaled();
        let wr = if qp.max_inline_data() >= o.size {
            wr.inline()
        } else {
            wr
        };
        qp.post_send(&mut [wr]).or_say("Couldn't post send")
    };
    // Which of our last send and a receive are still outstanding; a new send goes out when
    // neither is. The client sends first; the server's first send answers it.
    let mut pending = RECV_WRID;
    if client {
        send()?;
        pending |= SEND_WRID;
    }

    let start = Instant::now();
    let (mut rcnt, mut scnt) = (0, 0);
    let mut wc = [WorkCompletion::default(); 2];
    while rcnt < o.iters || scnt < o.iters {
        if o.events {
            cq.wait().or_say("Failed to get cq_event")?;
            cq.req_notify(false)
                .or_say("Couldn't request CQ notification")?;
        }
        // With events, one poll after each event (as C does); else spin until something
        // completes.
        let done = if o.events {
            cq.poll(&mut wc)
        } else {
            cq.poll_until(&mut wc, 1, None)
        }
        .or_say("poll CQ failed")?;
        for c in done.iter() {
            if !c.is_success() {
                return Err(format!(
                    "Failed status {} for wr_id {}",
                    c.status(),
                    c.wr_id()
                ));
            }
            match c.wr_id() {
                SEND_WRID => scnt += 1,
                RECV_WRID => {
                    routs -= 1;
                    if routs <= 1 {
                        routs += post_recvs(|wr| Ok(qp.post_recv(wr)?), &sge, o.rx_depth - routs);
                        if routs < o.rx_depth {
                            return Err(format!("Couldn't post receive ({routs})"));
                        }
                    }
                    rcnt += 1;
                }
                id => return Err(format!("Completion for unknown wr_id {id}")),
            }
            pending &= !c.wr_id();
            if scnt < o.iters && pending == 0 {
                send()?;
                pending = RECV_WRID | SEND_WRID;
            }
        }
    }
    let usec = start.elapsed().as_secs_f64() * 1e6;

    let bytes = 2 * u64::from(o.size) * u64::from(o.iters);
    println!(
        "{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec",
        usec / 1e6,
        bytes as f64 * 8.0 / usec
    );
    println!(
        "{} iters in {:.2} seconds = {:.2} usec/iter",
        o.iters,
        usec / 1e6,
        usec / f64::from(o.iters)
    );
    if o.validate && !client {
        for offset in (0..size).step_by(page) {
            let mut byte = [0];
            mr.read(offset, &mut byte)
                .or_say("Couldn't read the buffer")?;
            if byte[0] != 0 {
                println!("invalid data in page {}", offset / page);
            }
        }
    }
    Ok(())
}

fn usage(argv0: &str) {
    println!("Usage: {argv0} [OPTIONS]         wait for a client");
    println!("       {argv0} [OPTIONS] HOST    connect to the server on HOST");
    println!("Options: -p PORT (18515) -d DEV -i IB_PORT (1) -s SIZE (4096) -m MTU (1024)");
    println!("         -r RX_DEPTH (500) -n ITERS (1000) -l SL (0) -e (events) -g GID_INDEX");
    println!("         -c (validate the buffer); long forms as ibv_rc_pingpong's");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let argv0 = args.first().map_or("rc_pingpong", String::as_str);
    let options = match parse_args(args.get(1..).unwrap_or_default()) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("{argv0}: {msg}");
            usage(argv0);
            return ExitCode::FAILURE;
        }
    };
    match run(&options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("{argv0}: {msg}");
            ExitCode::FAILURE
        }
    }
}
