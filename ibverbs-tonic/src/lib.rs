//! gRPC over RDMA: a [tonic] transport on the byte streams of [`rdma_verbs::tokio::stream`]
//! (one RC connection per gRPC connection, set up by rdma_cm). The services, clients and
//! generated code stay tonic's; only where the bytes go changes.
//!
//! - Server: [`RdmaIncoming`] listens on an rdma_cm address and yields connections for
//!   `Server::serve_with_incoming`.
//! - Client: [`RdmaConnector`] is the tower connector for `Endpoint::connect_with_connector`:
//!   it connects to the endpoint URI's host and port over RDMA.
//!
//! ```no_run
//! use rdma_verbs_tonic::{RdmaConnector, RdmaIncoming};
//! use tonic::transport::server::Router;
//! use tonic::transport::Endpoint;
//!
//! # async fn f(router: Router) -> Result<(), Box<dyn std::error::Error>> {
//! // The server: `router` is `Server::builder().add_service(...)` of any tonic service.
//! let incoming = RdmaIncoming::bind("192.168.1.10:50051".parse()?)?;
//! tokio::spawn(router.serve_with_incoming(incoming));
//!
//! // A client: a channel made by the RDMA connector, for any generated client.
//! let channel = Endpoint::from_static("http://192.168.1.10:50051")
//!     .connect_with_connector(RdmaConnector::new())
//!     .await?;
//! # let _ = channel;
//! # Ok(()) }
//! ```
//!
//! The channel reconnects through the connector as over TCP. A peer that goes away ends
//! the connection's stream with an error (see [`rdma_verbs::stream`]'s Closing): calls in
//! flight fail with a gRPC status (`Unavailable` or `Unknown`, as tonic maps a broken
//! connection), not a hang.
//!
//! tonic's message size limits are its own: 4 MiB decoded by default on both sides
//! (`max_decoding_message_size` on the generated client and server raises them).
//!
//! # From tonic's TCP transport
//! The services, the generated clients and servers, interceptors, message limits and
//! timeouts do not change: two calls do. Over TCP, with tonic alone (`router` is any
//! `Server::builder().add_service(...)`, and the channel goes to any generated client, as
//! `EchoClient::new(channel)`):
//! ```no_run
//! use std::net::SocketAddr;
//!
//! use tonic::transport::server::{Router, TcpIncoming};
//! use tonic::transport::{Channel, Endpoint};
//!
//! async fn serve_and_connect(
//!     router: Router,
//!     addr: SocketAddr,
//! ) -> Result<Channel, Box<dyn std::error::Error>> {
//!     let incoming = TcpIncoming::bind(addr)?;
//!     tokio::spawn(router.serve_with_incoming(incoming));
//!     let channel = Endpoint::from_shared(format!("http://{addr}"))?
//!         .connect()
//!         .await?;
//!     Ok(channel)
//! }
//! ```
//! Over RDMA:
//! ```no_run
//! use std::net::SocketAddr;
//!
//! use rdma_verbs_tonic::{RdmaConnector, RdmaIncoming};
//! use tonic::transport::server::Router;
//! use tonic::transport::{Channel, Endpoint};
//!
//! async fn serve_and_connect(
//!     router: Router,
//!     addr: SocketAddr,
//! ) -> Result<Channel, Box<dyn std::error::Error>> {
//!     let incoming = RdmaIncoming::bind(addr)?;
//!     tokio::spawn(router.serve_with_incoming(incoming));
//!     let channel = Endpoint::from_shared(format!("http://{addr}"))?
//!         .connect_with_connector(RdmaConnector::new())
//!         .await?;
//!     Ok(channel)
//! }
//! ```
//! The example `grpc_echo` (`ibverbs-tonic/examples/grpc_echo/`) is a whole program that
//! serves and calls one service either way (`--tcp`).
//!
//! | tonic over TCP | over RDMA |
//! |---|---|
//! | `Router::serve(addr)`, `serve_with_incoming(TcpIncoming::bind(addr)?)` | `serve_with_incoming(`[`RdmaIncoming::bind`]`(addr)?)`, [`RdmaIncoming::bind_with`]`(addr, &config)` |
//! | a handler's `request.extensions().get::<TcpConnectInfo>()` | `get::<`[`RdmaConnectInfo`]`>()`: the `local` and `peer` addresses |
//! | `Endpoint::connect`, `connect_lazy` | `connect_with_connector(`[`RdmaConnector::new`]`())`, `connect_with_connector_lazy` |
//! | `Endpoint::tcp_nodelay`, `tcp_keepalive`, `local_address` (used by tonic's own TCP connector only) | [`RdmaConnector::with_config`]: the rings, keepalive and traffic class of [`StreamConfig`] |
//! | `Server::tcp_nodelay`, `tcp_keepalive` (used by `serve` only) | the `config` of [`RdmaIncoming::bind_with`] |
//! | a socket's `IP_TOS` (DSCP and ECN) | [`StreamConfig::traffic_class`] (the connecting side's class is the one both ends use) |
//! | `Endpoint::connect_timeout`, `timeout`, HTTP/2 settings | the same, unchanged |
//!
//! What differs:
//! - **The address** is one of an RDMA device's netdev (RoCE: the Ethernet interface the
//!   NIC or SoftRoCE is on; InfiniBand: IPoIB), for the server and in the client's URI.
//!   rdma_cm resolves no route on `lo`: with SoftRoCE on `lo`, `127.0.0.1` fails where TCP
//!   works. [`rdma_verbs::docs::async_io`] has the details and a set-up for one machine.
//! - **Memory**: each gRPC connection is one RC connection whose two sides register (pin)
//!   their rings, 1.25 MiB each with the default [`StreamConfig`]; a process without
//!   `CAP_IPC_LOCK` or on siw is bounded by `RLIMIT_MEMLOCK` (an `OutOfMemory` error when
//!   connecting): raise it, or give smaller rings to both sides.
//! - **Rust 1.88** (tonic 0.14's), and `rdma-verbs` with its features `cm` and `tokio`,
//!   which this crate turns on.

use std::future::Future;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use hyper_util::rt::TokioIo;
use rdma_verbs::stream::StreamConfig;
use rdma_verbs::tokio::stream::{RdmaListener, RdmaStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;
use tonic::transport::Uri;

/// A gRPC connection over RDMA: an [`RdmaStream`] with what tonic's server asks of a
/// connection ([`Connected`]).
#[derive(Debug)]
pub struct RdmaConnection(pub RdmaStream);

/// What a tonic handler finds in its request's extensions
/// (`request.extensions().get::<RdmaConnectInfo>()`) for a connection over RDMA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RdmaConnectInfo {
    /// The server's address.
    pub local: Option<SocketAddr>,
    /// The client's address.
    pub peer: Option<SocketAddr>,
}

impl Connected for RdmaConnection {
    type ConnectInfo = RdmaConnectInfo;

    fn connect_info(&self) -> RdmaConnectInfo {
        RdmaConnectInfo {
            local: self.0.local_addr(),
            peer: self.0.peer_addr(),
        }
    }
}

impl AsyncRead for RdmaConnection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RdmaConnection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

/// The connections of an [`RdmaListener`], for `Server::serve_with_incoming`.
#[derive(Debug)]
pub struct RdmaIncoming {
    listener: RdmaListener,
}

impl RdmaIncoming {
    /// Listens on `addr` (an address of an RDMA device's netdev; port 0: one the CM picks)
    /// with the default rings. Must be called inside a tokio runtime.
    pub fn bind(addr: SocketAddr) -> io::Result<RdmaIncoming> {
        Self::bind_with(addr, &StreamConfig::default())
    }

    /// Listens on `addr` with the rings (and traffic class) of `config` for every
    /// connection.
    pub fn bind_with(addr: SocketAddr, config: &StreamConfig) -> io::Result<RdmaIncoming> {
        Ok(RdmaIncoming {
            listener: RdmaListener::bind_with(addr, config)?,
        })
    }

    /// The address listened on.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }
}

impl From<RdmaListener> for RdmaIncoming {
    fn from(listener: RdmaListener) -> Self {
        RdmaIncoming { listener }
    }
}

impl Stream for RdmaIncoming {
    type Item = io::Result<RdmaConnection>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let accepted = self.get_mut().listener.poll_accept(cx);
        accepted.map(|stream| Some(stream.map(RdmaConnection)))
    }
}

/// The tower connector of a tonic `Endpoint` over RDMA: each call connects a new
/// [`RdmaStream`] to the URI's host and port (a name is looked up as the system does; the
/// port is required).
#[derive(Debug, Clone, Default)]
pub struct RdmaConnector {
    config: StreamConfig,
}

impl RdmaConnector {
    /// A connector with the default rings.
    pub fn new() -> Self {
        Self::default()
    }

    /// A connector whose connections have the rings, keepalive and traffic class of
    /// `config`.
    pub fn with_config(config: StreamConfig) -> Self {
        RdmaConnector { config }
    }
}

impl tower_service::Service<Uri> for RdmaConnector {
    type Response = TokioIo<RdmaConnection>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let config = self.config;
        Box::pin(async move {
            let addr = resolve(&uri).await?;
            let stream = RdmaStream::connect_with(addr, &config).await?;
            Ok(TokioIo::new(RdmaConnection(stream)))
        })
    }
}

/// The first address of `uri`'s host and port.
async fn resolve(uri: &Uri) -> io::Result<SocketAddr> {
    let invalid = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{uri}: {why}"));
    let host = uri.host().ok_or_else(|| invalid("no host"))?;
    let port = uri.port_u16().ok_or_else(|| invalid("no port"))?;
    // An IPv6 literal comes bracketed.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut addrs = tokio::net::lookup_host((host, port)).await?;
    addrs
        .next()
        .ok_or_else(|| invalid("the host has no address"))
}
