//! The echo service: its messages (prost, written by hand), its generated code (checked in,
//! `echo.Echo.rs`, kept equal to tonic-build's output by `tests/generated.rs`), its handlers,
//! and the pattern every byte is checked against. Shared by the example and the tests
//! (`#[path]`).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use std::net::SocketAddr;

use bytes::Bytes;
use rdma_verbs_tonic::RdmaConnector;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status, Streaming};

// The generated client and server: `echo_client::EchoClient`, `echo_server::EchoServer`.
include!("echo.Echo.rs");

use echo_client::EchoClient;
use echo_server::{Echo, EchoServer};

/// Bytes, in both directions.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Blob {
    #[prost(bytes = "bytes", tag = "1")]
    pub data: Bytes,
}

/// Asks for `count` messages of `size` bytes, message `k` of `pattern(seed + k, size)`.
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct StreamRequest {
    #[prost(uint64, tag = "1")]
    pub size: u64,
    #[prost(uint32, tag = "2")]
    pub count: u32,
    #[prost(uint32, tag = "3")]
    pub seed: u32,
}

/// tonic's limit on a decoded message, raised from its 4 MiB for 4 MiB payloads.
pub const MAX_MESSAGE: usize = 16 << 20;

/// `len` bytes that differ with `seed` and position.
pub fn pattern(seed: u32, len: usize) -> Bytes {
    (0..len)
        .map(|i| {
            (i as u32)
                .wrapping_mul(31)
                .wrapping_add(seed)
                .wrapping_add(i as u32 >> 13) as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// The handlers; counts the server streams its clients dropped before their end.
#[derive(Debug, Clone, Default)]
pub struct EchoService {
    pub cancelled: Arc<AtomicUsize>,
}

type Blobs = Pin<Box<dyn Stream<Item = Result<Blob, Status>> + Send>>;

#[tonic::async_trait]
impl Echo for EchoService {
    async fn unary(&self, request: Request<Blob>) -> Result<Response<Blob>, Status> {
        Ok(Response::new(request.into_inner()))
    }

    type ServerStreamStream = Blobs;

    async fn server_stream(
        &self,
        request: Request<StreamRequest>,
    ) -> Result<Response<Blobs>, Status> {
        let ask = request.into_inner();
        let size = usize::try_from(ask.size)
            .ok()
            .filter(|&s| s <= MAX_MESSAGE - 64)
            .ok_or_else(|| Status::invalid_argument(format!("size {} too large", ask.size)))?;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let cancelled = Arc::clone(&self.cancelled);
        tokio::spawn(async move {
            for k in 0..ask.count {
                let blob = Blob {
                    data: pattern(ask.seed.wrapping_add(k), size),
                };
                if tx.send(Ok(blob)).await.is_err() {
                    cancelled.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }

    type BidiStream = Blobs;

    async fn bidi(&self, request: Request<Streaming<Blob>>) -> Result<Response<Blobs>, Status> {
        Ok(Response::new(Box::pin(
            request.into_inner().map(|blob| blob),
        )))
    }
}

/// The service's server, with the raised message limits.
pub fn server(service: EchoService) -> EchoServer<EchoService> {
    EchoServer::new(service)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}

/// A client of the service on `channel`, with the raised message limits.
pub fn client(channel: Channel) -> EchoClient<Channel> {
    EchoClient::new(channel)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}

/// A client of the service at `addr` over RDMA, with the raised message limits.
pub async fn connect(addr: SocketAddr) -> Result<EchoClient<Channel>, tonic::transport::Error> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect_with_connector(RdmaConnector::new())
        .await?;
    Ok(client(channel))
}

/// A client of the service at `addr` over TCP (for comparison), with the raised limits.
pub async fn connect_tcp(addr: SocketAddr) -> Result<EchoClient<Channel>, tonic::transport::Error> {
    let channel = Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    Ok(client(channel))
}

/// Messages per streaming call of [`every_call`].
pub const STREAMED: u32 = 4;

/// A unary, a server-streaming and a bidirectional call with messages of `size` bytes,
/// every byte of every answer checked.
pub async fn every_call(client: &mut EchoClient<Channel>, size: usize) -> Result<(), String> {
    let seed = size as u32;
    let sent = pattern(seed, size);
    let back = client
        .unary(Blob { data: sent.clone() })
        .await
        .map_err(|s| format!("unary of {size} bytes: {s}"))?;
    if back.into_inner().data != sent {
        return Err(format!("unary of {size} bytes: the answer differs"));
    }
    let ask = StreamRequest {
        size: size as u64,
        count: STREAMED,
        seed,
    };
    let mut answers = client
        .server_stream(ask)
        .await
        .map_err(|s| format!("server stream of {size} bytes: {s}"))?
        .into_inner();
    let mut k = 0;
    while let Some(blob) = answers.next().await {
        let blob = blob.map_err(|s| format!("server stream of {size} bytes, message {k}: {s}"))?;
        if blob.data != pattern(seed.wrapping_add(k), size) {
            return Err(format!(
                "server stream of {size} bytes: message {k} differs"
            ));
        }
        k += 1;
    }
    if k != STREAMED {
        return Err(format!(
            "server stream of {size} bytes: {k} messages, not {STREAMED}"
        ));
    }
    let outgoing: Vec<Blob> = (0..STREAMED)
        .map(|k| Blob {
            data: pattern(seed ^ k, size),
        })
        .collect();
    let mut echoes = client
        .bidi(tokio_stream::iter(outgoing.clone()))
        .await
        .map_err(|s| format!("bidi of {size} bytes: {s}"))?
        .into_inner();
    let mut k = 0;
    while let Some(blob) = echoes.next().await {
        let blob = blob.map_err(|s| format!("bidi of {size} bytes, message {k}: {s}"))?;
        if outgoing.get(k).is_none_or(|sent| *sent != blob) {
            return Err(format!("bidi of {size} bytes: message {k} differs"));
        }
        k += 1;
    }
    if k != outgoing.len() {
        return Err(format!(
            "bidi of {size} bytes: {k} echoes, not {}",
            outgoing.len()
        ));
    }
    Ok(())
}
