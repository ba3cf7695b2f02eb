//! `grpc_echo` (ibverbs-tonic/examples/grpc_echo: the same service, roles and bench) on
//! rdma-io-tonic 0.0.2 instead of rdma-verbs-tonic, for `scripts/compare-grpc`: its
//! `RdmaIncoming` and `RdmaConnector` with `SendRecvConfig::stream()`, the configuration
//! its documentation gives for gRPC. Built by compare-grpc in a scratch project outside the
//! workspace (target/compare-grpc/).

#[path = "../../ibverbs-tonic/examples/grpc_echo/bench.rs"]
mod bench;
#[path = "../../ibverbs-tonic/examples/grpc_echo/cli.rs"]
mod cli;
// `connect` (ours) unused: this program connects with rdma-io-tonic.
#[allow(dead_code)]
#[path = "../../ibverbs-tonic/examples/grpc_echo/service.rs"]
mod service;

use std::net::SocketAddr;
use std::process::ExitCode;

use rdma_io::send_recv_transport::SendRecvConfig;
use rdma_io_tonic::{RdmaConnector, RdmaIncoming};
use tonic::transport::server::Router;
use tonic::transport::{Channel, Endpoint};

use crate::service::echo_client::EchoClient;

/// rdma-io-tonic: `RdmaIncoming` and `RdmaConnector`.
struct RdmaIo;

impl cli::Transport for RdmaIo {
    async fn serve(router: Router, addr: SocketAddr, keepalive: Option<u64>) -> Result<(), String> {
        if keepalive.is_some() {
            return Err("-k: rdma-io-tonic's streams have no keepalive".into());
        }
        let incoming = RdmaIncoming::bind(&addr, SendRecvConfig::stream())
            .map_err(|e| format!("listening on {addr}: {e}"))?;
        let at = incoming.local_addr().unwrap_or(addr);
        println!("listening on {at}");
        router
            .serve_with_incoming(incoming)
            .await
            .map_err(|e| format!("serving: {e}"))
    }

    async fn connect(addr: SocketAddr) -> Result<EchoClient<Channel>, String> {
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| format!("{addr}: {e}"))?
            .connect_with_connector(RdmaConnector::new(SendRecvConfig::stream()))
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        Ok(service::client(channel))
    }
}

fn main() -> ExitCode {
    cli::main::<RdmaIo>()
}
