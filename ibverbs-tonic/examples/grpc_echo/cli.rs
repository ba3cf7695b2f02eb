//! The roles and options of `grpc_echo`, over a transport given by the program: this
//! example's `main.rs` (`rdma-verbs-tonic`) or `scripts/compare-grpc.d/rdma_io.rs` (the same
//! program on rdma-io-tonic, for `scripts/compare-grpc`).
//!
//! The server serves until it is killed (it prints `listening on ADDR:PORT` when it is
//! ready); `-k` sets the keepalive interval of its streams in seconds (0: none; the
//! transport's default otherwise). The client makes each call with messages of each SIZE
//! (default 1 B and 4 MiB), checking every byte, then runs CLIENTS connections at once
//! (default 64), each with a unary call; it prints `ok` and exits with 0 if all went well.
//! `bench` measures one thing (`bench.rs`) for `scripts/compare-grpc`; `--tcp` serves or
//! connects over TCP instead, the service unchanged.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use tonic::transport::server::Router;
use tonic::transport::{Channel, Server};

use crate::bench;
use crate::service::{self, echo_client::EchoClient};

/// An RDMA transport for tonic: how to serve a router and how to reach a server.
pub trait Transport {
    /// Serves `router` at `addr` until killed, after printing `listening on ADDR:PORT`.
    /// `keepalive`: `-k`, for the transports that have one.
    fn serve(
        router: Router,
        addr: SocketAddr,
        keepalive: Option<u64>,
    ) -> impl Future<Output = Result<(), String>> + Send;
    /// A client of the echo service at `addr`, with the service's message limits.
    fn connect(
        addr: SocketAddr,
    ) -> impl Future<Output = Result<EchoClient<Channel>, String>> + Send;
}

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
    server_pid: Option<u32>,
}

fn parse() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let role = args.next().ok_or("no role: server, client or bench")?;
    let (mut addr, mut port, mut sizes, mut clients) = (None, 0, Vec::new(), None);
    let (mut tcp, mut phase, mut secs, mut keepalive) = (false, String::new(), 5.0, None);
    let mut server_pid = None;
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
            "-c" => clients = Some(value.parse().map_err(|e| bad(&e))?),
            "--phase" => phase = value,
            "-t" => secs = value.parse().map_err(|e| bad(&e))?,
            "-k" => keepalive = Some(value.parse().map_err(|e| bad(&e))?),
            "--server-pid" => server_pid = Some(value.parse().map_err(|e| bad(&e))?),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if sizes.is_empty() {
        sizes = match (role.as_str(), phase.as_str()) {
            ("bench", "stream") => vec![64 << 10],
            ("bench", _) => vec![64],
            _ => vec![1, 4 << 20],
        };
    }
    let clients = match clients {
        Some(0) => return Err("-c 0: at least one".into()),
        Some(n) => n,
        None if role == "bench" => 1,
        None => 64,
    };
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
        server_pid,
    })
}

async fn serve<T: Transport>(args: &Args, addr: SocketAddr) -> Result<(), String> {
    let router = Server::builder().add_service(service::server(service::EchoService::default()));
    if !args.tcp {
        return T::serve(router, addr, args.keepalive).await;
    }
    if args.keepalive.is_some() {
        return Err("-k sets the keepalive of RDMA streams, not of TCP".into());
    }
    println!("listening on {addr} (TCP)");
    router
        .serve(addr)
        .await
        .map_err(|e| format!("serving: {e}"))
}

async fn connect<T: Transport>(
    args: &Args,
    addr: SocketAddr,
) -> Result<EchoClient<Channel>, String> {
    if !args.tcp {
        return T::connect(addr).await;
    }
    service::connect_tcp(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))
}

async fn bench<T: Transport>(args: &Args, addr: SocketAddr) -> Result<(), String> {
    let size = args.sizes[0];
    match args.phase.as_str() {
        "unary" => {
            bench::unary(
                connect::<T>(args, addr).await?,
                size,
                args.clients,
                args.secs,
            )
            .await
        }
        "stream" => bench::stream(connect::<T>(args, addr).await?, size, args.secs).await,
        "idle" => {
            let pid = args.server_pid.ok_or("--phase idle needs --server-pid")?;
            let connections = (0..=args.clients).map(|_| connect::<T>(args, addr));
            bench::idle(connections, pid).await
        }
        other => Err(format!("--phase {other:?}: unary, stream or idle")),
    }
}

async fn client<T: Transport>(
    addr: SocketAddr,
    sizes: &[usize],
    clients: usize,
) -> Result<(), String> {
    let mut client = T::connect(addr).await?;
    for &size in sizes {
        service::every_call(&mut client, size).await?;
        println!("calls of {size} bytes: ok");
    }
    let many = (0..clients).map(|i| async move {
        let mut client = T::connect(addr)
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

/// The program: parses the arguments and runs the role over `T` (or TCP).
pub fn main<T: Transport>() -> ExitCode {
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
            "server" => serve::<T>(&args, addr).await,
            "client" => client::<T>(addr, &args.sizes, args.clients).await,
            "bench" => bench::<T>(&args, addr).await,
            other => Err(format!("unknown role {other}: server, client or bench")),
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
