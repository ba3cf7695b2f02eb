//! RC ping-pong over send/receive, in the spirit of rdma-core's `ibv_rc_pingpong`.
//!
//! ```text
//! rc_pingpong [-d DEV] [-p PORT] [-s SIZE] [-n ITERS]            # server
//! rc_pingpong [-d DEV] [-p PORT] [-s SIZE] [-n ITERS] HOST       # client
//! ```
//!
//! The two sides swap their queue pair endpoints over TCP, connect, then bounce a message of
//! SIZE bytes back and forth ITERS times, and print the throughput and the round-trip time.
//! It is written to be copied: every verbs object is created, used and dropped in the
//! open, with no `unsafe`.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv6Addr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ibverbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, Endpoint, QpType, QueuePair,
    RecvRequest, SendRequest, WorkCompletion,
};

const RECV_ID: u64 = 1;
const SEND_ID: u64 = 2;

struct Args {
    device: Option<String>,
    port: u16,
    size: usize,
    iters: u64,
    host: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        device: None,
        port: 18515,
        size: 4096,
        iters: 1000,
        host: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "-d" => args.device = Some(value("-d")?),
            "-p" => args.port = value("-p")?.parse().map_err(|e| format!("-p: {e}"))?,
            "-s" => args.size = value("-s")?.parse().map_err(|e| format!("-s: {e}"))?,
            "-n" => args.iters = value("-n")?.parse().map_err(|e| format!("-n: {e}"))?,
            "-h" | "--help" => {
                return Err(
                    "usage: rc_pingpong [-d DEV] [-p PORT] [-s SIZE] [-n ITERS] [HOST]".into(),
                )
            }
            s if s.starts_with('-') => return Err(format!("unknown option {s}")),
            host => args.host = Some(host.to_owned()),
        }
    }
    if args.size == 0 || args.iters == 0 {
        return Err("size and iterations must be positive".into());
    }
    Ok(args)
}

/// Sends our endpoint as one text line and reads the peer's.
fn exchange(stream: &mut BufReader<TcpStream>, local: &Endpoint) -> Result<Endpoint, String> {
    writeln!(
        stream.get_mut(),
        "{} {} {} {} {}",
        local.qpn,
        local.psn,
        local.lid,
        local.gid,
        local.mtu
    )
    .map_err(|e| format!("sending the endpoint: {e}"))?;
    let mut line = String::new();
    stream
        .read_line(&mut line)
        .map_err(|e| format!("reading the peer's endpoint: {e}"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let bad = || format!("malformed endpoint from the peer: {line:?}");
    if f.len() != 5 {
        return Err(bad());
    }
    Ok(Endpoint {
        qpn: f[0].parse().map_err(|_| bad())?,
        psn: f[1].parse().map_err(|_| bad())?,
        lid: f[2].parse().map_err(|_| bad())?,
        gid: f[3].parse::<Ipv6Addr>().map_err(|_| bad())?,
        port: local.port,
        mtu: f[4].parse().map_err(|_| bad())?,
    })
}

/// Waits for the next completion; fails on an error status or after 10 s of silence.
fn next_completion(cq: &CompletionQueue) -> Result<WorkCompletion, String> {
    let mut wc = [WorkCompletion::default()];
    let start = Instant::now();
    loop {
        if let [done] = cq.poll(&mut wc).map_err(|e| e.to_string())? {
            done.ok().map_err(|e| e.to_string())?;
            return Ok(*done);
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err("no completion for 10 s: is the peer alive?".into());
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let ctx = match &args.device {
        Some(name) => Context::open(name),
        None => Context::open_first(),
    }
    .map_err(|e| e.to_string())?;
    let pd = ctx.alloc_pd().map_err(|e| e.to_string())?;
    let send_cq = ctx.create_cq(1, None).map_err(|e| e.to_string())?;
    let recv_cq = ctx.create_cq(1, None).map_err(|e| e.to_string())?;
    let mut mr = pd
        .alloc_mr(2 * args.size, AccessFlags::LOCAL_WRITE)
        .map_err(|e| e.to_string())?;
    mr.write(args.size, &vec![0x5a; args.size])
        .map_err(|e| e.to_string())?;
    let qp = pd
        .create_qp(QpType::Rc, &send_cq, &recv_cq)
        .max_send_wr(1)
        .max_recv_wr(1)
        .build()
        .map_err(|e| e.to_string())?;

    // The first half of the buffer receives, the second half sends.
    let recv_sge = [mr.sge(..args.size).map_err(|e| e.to_string())?];
    let send_sge = [mr.sge(args.size..).map_err(|e| e.to_string())?];
    qp.post_recv(&mut [RecvRequest::new(RECV_ID, &recv_sge)])
        .map_err(|e| e.to_string())?;

    let stream = match &args.host {
        Some(host) => connect(host, args.port)?,
        None => {
            let listener = TcpListener::bind(("0.0.0.0", args.port))
                .map_err(|e| format!("listening on port {}: {e}", args.port))?;
            listener.accept().map_err(|e| e.to_string())?.0
        }
    };
    // One buffered reader for the whole session, so that no line is read ahead and lost.
    let mut stream = BufReader::new(stream);
    let local = qp.endpoint();
    let remote = exchange(&mut stream, &local)?;
    println!(
        "  local address:  QPN {:#08x}, PSN {:#08x}, GID {}",
        local.qpn, local.psn, local.gid
    );
    println!(
        "  remote address: QPN {:#08x}, PSN {:#08x}, GID {}",
        remote.qpn, remote.psn, remote.gid
    );
    let qp = qp
        .connect(&remote, &ConnectOptions::default())
        .map_err(|e| e.to_string())?;
    // Both sides have posted their receive and connected before the first send.
    exchange(&mut stream, &local)?;

    // The client sends first; each side re-posts its receive before the message that the
    // peer answers, so a receive is always waiting.
    let client = args.host.is_some();
    let start = Instant::now();
    for i in 0..args.iters {
        if client {
            send(&qp, &send_cq, &send_sge)?;
        }
        let wc = next_completion(&recv_cq)?;
        if wc.byte_len() as usize != args.size {
            return Err(format!(
                "received {} bytes, expected {}",
                wc.byte_len(),
                args.size
            ));
        }
        if i + 1 < args.iters {
            qp.post_recv(&mut [RecvRequest::new(RECV_ID, &recv_sge)])
                .map_err(|e| e.to_string())?;
        }
        if !client {
            send(&qp, &send_cq, &send_sge)?;
        }
    }
    let elapsed = start.elapsed().as_secs_f64();

    let bytes = 2 * args.size as u64 * args.iters;
    println!(
        "{bytes} bytes in {elapsed:.2} seconds = {:.2} Mbit/sec",
        bytes as f64 * 8.0 / elapsed / 1e6
    );
    println!(
        "{} iters in {elapsed:.2} seconds = {:.2} usec/iter",
        args.iters,
        elapsed * 1e6 / args.iters as f64
    );
    Ok(())
}

/// Connects to the server, retrying for 10 s while it is not listening yet.
fn connect(host: &str, port: u16) -> Result<TcpStream, String> {
    let start = Instant::now();
    loop {
        match TcpStream::connect((host, port)) {
            Ok(stream) => return Ok(stream),
            Err(e)
                if e.kind() == std::io::ErrorKind::ConnectionRefused
                    && start.elapsed() < Duration::from_secs(10) =>
            {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(format!("connecting to {host}:{port}: {e}")),
        }
    }
}

fn send(qp: &QueuePair, cq: &CompletionQueue, sge: &[ibverbs::Sge<'_>]) -> Result<(), String> {
    qp.post_send(&mut [SendRequest::send(SEND_ID, sge).signaled()])
        .map_err(|e| e.to_string())?;
    next_completion(cq).map(drop)
}

fn main() -> ExitCode {
    let result = parse_args().and_then(|args| run(&args));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("rc_pingpong: {msg}");
            ExitCode::FAILURE
        }
    }
}
