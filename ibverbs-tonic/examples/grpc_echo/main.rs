//! gRPC over RDMA with an unchanged tonic service (the echo service of `service.rs`: a
//! unary, a server-streaming and a bidirectional call).
//!
//! ```text
//! grpc_echo server -a ADDR [-p PORT] [-k SECS] [--tcp]
//! grpc_echo client -a ADDR -p PORT [-s SIZE]... [-c CLIENTS]
//! grpc_echo bench -a ADDR -p PORT [--tcp] --phase unary|stream [-t SECS] [-s SIZE]
//! ```
//!
//! The server serves until it is killed (it prints `listening on ADDR:PORT` when it is
//! ready); `-k` sets the keepalive interval of its streams in seconds (0: none; the
//! default is `StreamConfig`'s). The client makes each call with messages of each SIZE
//! (default 1 B and 4 MiB), checking every byte, then runs CLIENTS connections at once
//! (default 64), each with a unary call; it prints `ok` and exits with 0 if all went well.
//! `bench` measures one thing (`bench.rs`) for `scripts/compare-grpc`; `--tcp` serves or
//! connects over TCP instead of RDMA, the service unchanged.

mod bench;
mod service;

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use rdma_verbs::stream::StreamConfig;
use rdma_verbs_tonic::RdmaIncoming;
use tonic::transport::Server;

struct Args {
    role: String,
    addr: IpAddr,
    port: u16,
    sizes: Vec<usize>,
    clients: usize,
    tcp: bool,
    phase: String,
    secs: f64,
    keepalive: Option<u64>,
}

fn parse() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let role = args.next().ok_or("no role: server or client")?;
    let (mut addr, mut port, mut sizes, mut clients) = (None, 0, Vec::new(), 64);
    let (mut tcp, mut phase, mut secs, mut keepalive) = (false, String::new(), 5.0, None);
    while let Some(flag) = args.next() {
        if flag == "--tcp" {
            tcp = true;
            continue;
        }
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "-a" => addr = Some(value.parse().map_err(|e| bad(&e))?),
            "-p" => port = value.parse().map_err(|e| bad(&e))?,
            "-s" => sizes.push(value.parse().map_err(|e| bad(&e))?),
            "-c" => clients = value.parse().map_err(|e| bad(&e))?,
            "--phase" => phase = value,
            "-t" => secs = value.parse().map_err(|e| bad(&e))?,
            "-k" => keepalive = Some(value.parse().map_err(|e| bad(&e))?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if sizes.is_empty() {
        sizes = match role.as_str() {
            "bench" => vec![64],
            _ => vec![1, 4 << 20],
        };
    }
    let addr = addr.ok_or("-a ADDR is required")?;
    Ok(Args {
        role,
        addr,
        port,
        sizes,
        clients,
        tcp,
        phase,
        secs,
        keepalive,
    })
}

async fn serve(addr: SocketAddr, tcp: bool, keepalive: Option<u64>) -> Result<(), String> {
    let router = Server::builder().add_service(service::server(service::EchoService::default()));
    if tcp {
        if keepalive.is_some() {
            return Err("-k sets the keepalive of RDMA streams, not of TCP".into());
        }
        println!("listening on {addr} (TCP)");
        return router
            .serve(addr)
            .await
            .map_err(|e| format!("serving: {e}"));
    }
    let config = match keepalive {
        None => StreamConfig::default(),
        Some(0) => StreamConfig::default().keepalive(None),
        Some(secs) => StreamConfig::default().keepalive(Some(Duration::from_secs(secs))),
    };
    let incoming =
        RdmaIncoming::bind_with(addr, &config).map_err(|e| format!("listening on {addr}: {e}"))?;
    let at = incoming.local_addr().unwrap_or(addr);
    println!("listening on {at}");
    router
        .serve_with_incoming(incoming)
        .await
        .map_err(|e| format!("serving: {e}"))
}

async fn bench(args: &Args, addr: SocketAddr) -> Result<(), String> {
    let mut client = if args.tcp {
        service::connect_tcp(addr).await
    } else {
        service::connect(addr).await
    }
    .map_err(|e| format!("connecting to {addr}: {e}"))?;
    match args.phase.as_str() {
        "unary" => bench::unary(&mut client, args.sizes[0], args.secs).await,
        "stream" => bench::stream(&mut client, args.secs).await,
        other => Err(format!("--phase {other:?}: unary or stream")),
    }
}

async fn client(addr: SocketAddr, sizes: &[usize], clients: usize) -> Result<(), String> {
    let mut client = service::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    for &size in sizes {
        service::every_call(&mut client, size).await?;
        println!("calls of {size} bytes: ok");
    }
    let many = (0..clients).map(|i| async move {
        let mut client = service::connect(addr)
            .await
            .map_err(|e| format!("client {i}: {e}"))?;
        let data = service::pattern(i as u32, 100);
        let back = client
            .unary(service::Blob { data: data.clone() })
            .await
            .map_err(|s| format!("client {i}: {s}"))?;
        (back.into_inner().data == data)
            .then_some(())
            .ok_or(format!("client {i}: the answer differs"))
    });
    let mut tasks = tokio::task::JoinSet::new();
    for call in many {
        tasks.spawn(call);
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| format!("a client task: {e}"))??;
    }
    println!("{clients} clients at once: ok");
    println!("ok");
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("grpc_echo: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let addr = SocketAddr::new(args.addr, args.port);
    let done = runtime.block_on(async {
        match args.role.as_str() {
            "server" => serve(addr, args.tcp, args.keepalive).await,
            "client" => client(addr, &args.sizes, args.clients).await,
            "bench" => bench(&args, addr).await,
            other => Err(format!("unknown role {other}: server or client")),
        }
    });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("grpc_echo: {e}");
            ExitCode::FAILURE
        }
    }
}
