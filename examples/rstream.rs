//! `rstream`'s transfer test over this crate's byte stream (`rdma_verbs::stream`, blocking)
//! instead of rsockets: rdma-core's librdmacm example of the same name with a transfer size
//! (`-S`), a count (`-C`) and iterations (`-I`): per iteration the client sends COUNT
//! transfers of SIZE bytes and the server sends as many back; both print C's result line
//! (`custom`, size, count, iterations, bytes moved both ways, seconds, Gb/sec, µs per
//! transfer). The streams speak this crate's protocol, not rsockets', so its peer is
//! itself; `scripts/compare-rstream` runs it and C's rstream with the same transfer.
//!
//! `cargo run --example rstream -- -b ADDR [-p port] [-S size] [-C count] [-I iterations]`
//! (server), `... -s ADDR ...` (client).

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Instant;

use rdma_verbs::stream::{RdmaListener, RdmaStream};
use rdma_verbs_tools::cli::{atoi, getopt_long, print_usage, Item};

struct Options {
    dst: Option<String>,
    src: Option<String>,
    port: u16,
    size: usize,
    count: usize,
    iterations: usize,
}

fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("rstream", String::as_str);
    let mut o = Options {
        dst: None,
        src: None,
        port: 7471,
        size: 1000,
        count: 1000,
        iterations: 1,
    };
    for item in getopt_long(&args[1.min(args.len())..], "s:b:p:S:C:I:", &[]).items {
        let (opt, value) = match item {
            Item::Opt(opt, value) => (opt, value.unwrap_or_default()),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                print_usage(
                    prog,
                    &[
                        "[-s server_address]",
                        "[-b bind_address]",
                        "[-p port_number]",
                        "[-S transfer_size]",
                        "[-C transfer_count]",
                        "[-I iterations]",
                    ],
                );
                return Err(ExitCode::from(1));
            }
        };
        let number = |v: &str| usize::try_from(atoi(v)).unwrap_or(0).max(1);
        match opt {
            's' => o.dst = Some(value),
            'b' => o.src = Some(value),
            'p' => o.port = u16::try_from(atoi(&value)).unwrap_or(0),
            'S' => o.size = number(&value),
            'C' => o.count = number(&value),
            _ => o.iterations = number(&value),
        }
    }
    Ok(o)
}

/// C's `size_str`: 1.5k, 64k, 2m.
fn size_str(size: u64) -> String {
    let (base, mag) = match size {
        s if s >= 1 << 30 => (1 << 30, "g"),
        s if s >= 1 << 20 => (1 << 20, "m"),
        s if s >= 1 << 10 => (1 << 10, "k"),
        _ => (1, ""),
    };
    let fraction = if size / base < 10 {
        (size % base) * 10 / base
    } else {
        0
    };
    match fraction {
        0 => format!("{}{mag}", size / base),
        f => format!("{}.{f}{mag}", size / base),
    }
}

/// C's `cnt_str`: 100, 10k, 1m.
fn cnt_str(cnt: u64) -> String {
    match cnt {
        c if c >= 1_000_000_000 => format!("{}b", c / 1_000_000_000),
        c if c >= 1_000_000 => format!("{}m", c / 1_000_000),
        c if c >= 1000 => format!("{}k", c / 1000),
        c => c.to_string(),
    }
}

fn run(o: &Options) -> Result<(), String> {
    let addr = |host: &str| -> Result<SocketAddr, String> {
        let ip: IpAddr = host.parse().map_err(|e| format!("{host}: {e}"))?;
        Ok(SocketAddr::new(ip, o.port))
    };
    let client = o.dst.is_some();
    let mut stream = match (&o.dst, &o.src) {
        (Some(dst), _) => RdmaStream::connect(addr(dst)?).map_err(|e| format!("connect: {e}"))?,
        (None, Some(src)) => RdmaListener::bind(addr(src)?)
            .and_then(|l| l.accept())
            .map_err(|e| format!("accept: {e}"))?,
        (None, None) => return Err("-b bind_address is required for the server".into()),
    };
    let mut buf = vec![0u8; o.size.max(16)];
    let mut xfer = |send: bool, size: usize| -> Result<(), String> {
        // A write returns once its bytes are in a send slot (posted, or coalesced with the
        // next while the peer has no room), as rsockets' send returns once they are in its
        // send buffer; a read sends what waits.
        let done = if send {
            stream.write_all(&buf[..size])
        } else {
            stream.read_exact(&mut buf[..size])
        };
        done.map_err(|e| format!("{}: {e}", if send { "send" } else { "recv" }))
    };
    // C's sync_test: 16 bytes each way.
    xfer(client, 16)?;
    xfer(!client, 16)?;
    let start = Instant::now();
    for _ in 0..o.iterations {
        for _ in 0..o.count {
            xfer(client, o.size)?;
        }
        for _ in 0..o.count {
            xfer(!client, o.size)?;
        }
    }
    let usec = start.elapsed().as_secs_f64() * 1e6;
    // Dropping a stream is abortive: each side ends its bytes and waits for the peer's end,
    // so that neither goes while the other may still be sending or ending.
    stream.shutdown().map_err(|e| format!("shutdown: {e}"))?;
    let mut rest = Vec::new();
    stream
        .read_to_end(&mut rest)
        .map_err(|e| format!("waiting for the peer's end: {e}"))?;
    let bytes = (o.iterations * o.count * o.size * 2) as u64;
    println!(
        "{:<10}{:<8}{:<8}{:<8}{:<8}{:8.2}s{:10.2}{:11.2}",
        "custom",
        size_str(o.size as u64),
        cnt_str(o.count as u64),
        cnt_str(o.iterations as u64),
        size_str(bytes),
        usec / 1e6,
        (bytes * 8) as f64 / (1000.0 * usec),
        (usec / o.iterations as f64) / (o.count * 2) as f64
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    println!(
        "{:<10}{:<8}{:<8}{:<8}{:<8}{:>8} {:>10}{:>13}",
        "name", "bytes", "xfers", "iters", "total", "time", "Gb/sec", "usec/xfer"
    );
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rstream: {e}");
            ExitCode::FAILURE
        }
    }
}
