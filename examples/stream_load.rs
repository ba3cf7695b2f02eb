//! A load test of the stream listener (issue 49): the client opens N connections in a row
//! and keeps them all open, the server accepts them and keeps them open too, idle; each
//! side then prints what the N cost it. `scripts/stream-load` runs it, this crate's streams
//! (`rdma_verbs::stream`, blocking) against rsockets' (`-r`) on the same device.
//!
//! `cargo run --example stream_load -- -b ADDR [-p port] [-n N] [-r]` (server),
//! `... -s ADDR ...` (client). One line each, `load SIDE API n=N` and:
//!
//! - the client: `rate=`, N over the time from its first connect call to its Nth connect
//!   returning (a connect returns once the server's accept answered it);
//! - both: `rss_kib=` and `pinned_kib=`, the growth of `VmRSS` and of `VmPin` (memory that
//!   `ibv_reg_mr` pinned) in `/proc/self/status` from the first connection to the Nth,
//!   per connection (over N - 1: the first one's set-up, the device opened, stays out).
//!
//! `-r`: the same with rsockets (librdmacm's `rsocket`, `rbind`, `rlisten`, `raccept`,
//! `rconnect`, blocking, with their defaults), called as rdma-core's `rstream` calls them.
//! The rsockets server takes its first connection with `raccept` and then leaves the others
//! to librdmacm's listening thread, which accepts each (its rings registered, `rdma_accept`
//! done) whether `raccept` is called or not: in librdmacm before rdma-core 53, the thread
//! that `raccept` hands each connection to keeps polling a freed copy of its poll set once
//! the set grows (at the 4th connection), and a later `raccept` waits for that thread for
//! ever (seen here with 20; fixed by rdma-core's commit 24061f015). It measures its Nth
//! connection when a line comes on its standard input, which the script sends once the
//! client has all N.
//!
//! The client then holds its connections until a line comes on its standard input (the
//! script sends it once the server has printed), so that neither side measures while the
//! other closes.

use std::ffi::c_int;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Instant;

use rdma_verbs::stream::{RdmaListener, RdmaStream};
use rdma_verbs_tools::cli::{atoi, getopt_long, print_usage, Item};

// librdmacm's rsockets calls (`<rdma/rsocket.h>`), which rdmacm-sys does not bind.
#[link(name = "rdmacm")]
extern "C" {
    fn rsocket(domain: c_int, kind: c_int, protocol: c_int) -> c_int;
    fn rbind(socket: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> c_int;
    fn rlisten(socket: c_int, backlog: c_int) -> c_int;
    fn raccept(socket: c_int, addr: *mut libc::sockaddr, len: *mut libc::socklen_t) -> c_int;
    fn rconnect(socket: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> c_int;
    fn rclose(socket: c_int) -> c_int;
}

struct Options {
    dst: Option<String>,
    src: Option<String>,
    port: u16,
    count: usize,
    rsockets: bool,
}

fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("stream_load", String::as_str);
    let mut o = Options {
        dst: None,
        src: None,
        port: 7471,
        count: 1000,
        rsockets: false,
    };
    for item in getopt_long(&args[1.min(args.len())..], "s:b:p:n:r", &[]).items {
        let (opt, value) = match item {
            Item::Opt(opt, value) => (opt, value.unwrap_or_default()),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                let usage = [
                    "[-s server_address]",
                    "[-b bind_address]",
                    "[-p port_number]",
                ];
                print_usage(prog, &[&usage[..], &["[-n connections]", "[-r]"]].concat());
                return Err(ExitCode::from(1));
            }
        };
        match opt {
            's' => o.dst = Some(value),
            'b' => o.src = Some(value),
            'p' => o.port = u16::try_from(atoi(&value)).unwrap_or(0),
            'n' => o.count = usize::try_from(atoi(&value)).unwrap_or(0).max(2),
            _ => o.rsockets = true,
        }
    }
    Ok(o)
}

/// `VmRSS` and `VmPin` of this process, in KiB.
fn memory() -> Result<(u64, u64), String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or(format!("/proc/self/status has no {name}"))
    };
    Ok((field("VmRSS:")?, field("VmPin:")?))
}

/// An rsocket, closed (`rclose`) on drop.
struct RSocket(c_int);

impl RSocket {
    /// `rsocket(AF_INET, SOCK_STREAM, 0)`.
    fn new() -> io::Result<RSocket> {
        // SAFETY: plain integer arguments; the result is checked.
        let fd = unsafe { rsocket(libc::AF_INET, libc::SOCK_STREAM, 0) };
        check(fd).map(RSocket)
    }

    /// `raccept`, without the peer's address.
    fn raccept(&self) -> io::Result<RSocket> {
        // SAFETY: null address and length pointers ask for no address, as accept(2) allows.
        let fd = unsafe { raccept(self.0, std::ptr::null_mut(), std::ptr::null_mut()) };
        check(fd).map(RSocket)
    }
}

impl Drop for RSocket {
    fn drop(&mut self) {
        // SAFETY: the socket is this value's own, closed once.
        unsafe { rclose(self.0) };
    }
}

fn check(ret: c_int) -> io::Result<c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `addr` as a `sockaddr_in` for rsockets' `rbind` and `rconnect`.
fn sockaddr_in(addr: SocketAddr) -> io::Result<libc::sockaddr_in> {
    let SocketAddr::V4(v4) = addr else {
        let why = "rsockets side: IPv4 addresses only";
        return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
    };
    Ok(libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    })
}

/// Calls `call` (`rbind` or `rconnect`) with `addr`.
fn with_addr(
    fd: &RSocket,
    addr: SocketAddr,
    call: unsafe extern "C" fn(c_int, *const libc::sockaddr, libc::socklen_t) -> c_int,
) -> io::Result<()> {
    let sin = sockaddr_in(addr)?;
    let len = std::mem::size_of_val(&sin) as libc::socklen_t;
    // SAFETY: `sin` is a whole sockaddr_in of `len` bytes, which lives across the call.
    check(unsafe { call(fd.0, (&sin as *const libc::sockaddr_in).cast(), len) }).map(drop)
}

/// What holding the connections cost one side.
struct Measure {
    elapsed: f64,
    rss_kib: f64,
    pinned_kib: f64,
}

impl Measure {
    /// From `before` (with the first connection) to now (with `count`), over `elapsed`.
    fn since(before: (u64, u64), count: usize, elapsed: f64) -> Result<Measure, String> {
        let after = memory()?;
        let per = |a: u64, b: u64| a.saturating_sub(b) as f64 / (count - 1) as f64;
        Ok(Measure {
            elapsed,
            rss_kib: per(after.0, before.0),
            pinned_kib: per(after.1, before.1),
        })
    }
}

/// Every this many connections, a side says on its standard error how far it got (a run
/// that stalls then shows where).
const PROGRESS: usize = 100;

/// Makes `count` connections with `next` (`call` names it in errors) and holds them.
fn hold<T>(
    count: usize,
    call: &str,
    mut next: impl FnMut() -> io::Result<T>,
) -> Result<(Vec<T>, Measure), String> {
    let mut held = Vec::with_capacity(count);
    let start = Instant::now();
    let mut one = |held: &mut Vec<T>| {
        let made = next().map_err(|e| format!("{call} {}: {e}", held.len() + 1))?;
        held.push(made);
        Ok::<_, String>(())
    };
    one(&mut held)?;
    let before = memory()?;
    while held.len() < count {
        one(&mut held)?;
        if held.len() % PROGRESS == 0 {
            let secs = start.elapsed().as_secs_f64();
            eprintln!("{call}: {} after {secs:.1} s", held.len());
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok((held, Measure::since(before, count, elapsed)?))
}

/// The line of `side` (`client` or `server`).
fn report(side: &str, api: &str, n: usize, m: &Measure) {
    let (rss, pinned) = (m.rss_kib, m.pinned_kib);
    let rate = match side {
        "client" => format!(" rate={:.2}", n as f64 / m.elapsed),
        _ => String::new(),
    };
    println!("load {side} {api} n={n}{rate} rss_kib={rss:.1} pinned_kib={pinned:.1}");
}

/// Waits for a line on the standard input (the script's go-ahead).
fn wait_line() -> Result<(), String> {
    let line = io::stdin().read_line(&mut String::new());
    line.map(drop).map_err(|e| format!("standard input: {e}"))
}

fn run(o: &Options) -> Result<(), String> {
    let host = o
        .dst
        .as_ref()
        .or(o.src.as_ref())
        .ok_or("-s or -b ADDR is required")?;
    let ip: IpAddr = host.parse().map_err(|e| format!("{host}: {e}"))?;
    let addr = SocketAddr::new(ip, o.port);
    let n = o.count;
    let err = |what: &'static str| move |e: io::Error| format!("{what}: {e}");
    match (o.dst.is_some(), o.rsockets) {
        (true, false) => {
            let (_held, m) = hold(n, "connect", || RdmaStream::connect(addr))?;
            report("client", "ours", n, &m);
            wait_line()
        }
        (true, true) => {
            let (held, m) = hold(n, "rconnect", || {
                let fd = RSocket::new()?;
                with_addr(&fd, addr, rconnect)?;
                Ok(fd)
            })?;
            report("client", "rsockets", n, &m);
            wait_line()?;
            // Not closed: the server is gone by now, and rsockets' rclose waits for its
            // disconnect message's completion, which rxe then retries for ever. The
            // process's exit releases them, as a killed one's does.
            std::mem::forget(held);
            Ok(())
        }
        (false, false) => {
            let listener = RdmaListener::bind(addr).map_err(err("bind"))?;
            let (_held, m) = hold(n, "accept", || listener.accept())?;
            report("server", "ours", n, &m);
            Ok(())
        }
        (false, true) => {
            let listener = RSocket::new().map_err(err("rsocket"))?;
            with_addr(&listener, addr, rbind).map_err(err("rbind"))?;
            // SAFETY: plain integer arguments; the result is checked.
            check(unsafe { rlisten(listener.0, 128) }).map_err(err("rlisten"))?;
            let _first = listener.raccept().map_err(err("raccept"))?;
            let before = memory()?;
            // The listening thread accepts the others; the script says when the client has
            // all N.
            wait_line()?;
            report("server", "rsockets", n, &Measure::since(before, n, 0.0)?);
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("stream_load: {e}");
            ExitCode::FAILURE
        }
    }
}
