//! gRPC over RDMA with an unchanged tonic service (the echo service of `service.rs`: a
//! unary, a server-streaming and a bidirectional call), on `rdma-verbs-tonic`.
//!
//! ```text
//! grpc_echo server -a ADDR [-p PORT] [-k SECS] [--tcp]
//! grpc_echo client -a ADDR -p PORT [-s SIZE]... [-c CLIENTS]
//! grpc_echo bench -a ADDR -p PORT [--tcp] --phase unary|stream|idle [-t SECS] [-s SIZE]
//!                 [-c CALLS] [--server-pid PID]
//! ```
//!
//! The roles and options are `cli.rs`'s (shared with `scripts/compare-grpc.d/rdma_io.rs`,
//! the same program on rdma-io-tonic); this file is the transport.

mod bench;
mod cli;
mod service;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use rdma_verbs::stream::StreamConfig;
use rdma_verbs_tonic::RdmaIncoming;
use tonic::transport::server::Router;
use tonic::transport::Channel;

use crate::service::echo_client::EchoClient;

/// `rdma-verbs-tonic`: `RdmaIncoming` and `RdmaConnector`.
struct Ours;

impl cli::Transport for Ours {
    async fn serve(router: Router, addr: SocketAddr, keepalive: Option<u64>) -> Result<(), String> {
        let config = match keepalive {
            None => StreamConfig::default(),
            Some(0) => StreamConfig::default().keepalive(None),
            Some(secs) => StreamConfig::default().keepalive(Some(Duration::from_secs(secs))),
        };
        let incoming = RdmaIncoming::bind_with(addr, &config)
            .map_err(|e| format!("listening on {addr}: {e}"))?;
        let at = incoming.local_addr().unwrap_or(addr);
        println!("listening on {at}");
        router
            .serve_with_incoming(incoming)
            .await
            .map_err(|e| format!("serving: {e}"))
    }

    async fn connect(addr: SocketAddr) -> Result<EchoClient<Channel>, String> {
        service::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))
    }
}

fn main() -> ExitCode {
    cli::main::<Ours>()
}
