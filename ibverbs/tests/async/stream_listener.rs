//! The tokio stream listener against peers that stall it and in a process out of
//! resources: handshakes that never complete are dropped after the handshake timeout; with
//! no memory for a stream's rings, or no file descriptor left, the accept returns the error
//! and the listener accepts the next client.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs::cm::{ConnParam, PortSpace};
use rdma_verbs::stream::StreamConfig;
use rdma_verbs::tokio::cm::{AsyncCmChannel, AsyncCmId};
use rdma_verbs::tokio::stream::{RdmaListener, RdmaStream};
use rdma_verbs::{CompletionQueue, ProtectionDomain, QpType};
use rdma_verbs_test_kit::{
    assert_clean_drops, child_test_with, cm_addr, cm_listening, errno, exhaust, free_port,
    provider_has, stream_hello, Exhaust, Need,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

/// The hang guard of each wait.
const LIMIT: Duration = Duration::from_secs(20);

/// A client that sends a connect request with a stream hello on a channel of its own and
/// never polls it: its CM events are never read, so its librdmacm never answers the
/// listener's accept (no ready-to-use message).
async fn stalled(dst: SocketAddr) -> (AsyncCmId, CompletionQueue, ProtectionDomain) {
    let channel = AsyncCmChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve(None, dst, Duration::from_secs(2)).await.unwrap();
    let ctx = id.id().context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(16, None).unwrap());
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .max_send_wr(8)
        .max_recv_wr(8);
    id.create_qp(qp).unwrap();
    let hello = stream_hello(4096, 4, 4);
    id.id()
        .connect(&ConnParam::new().private_data(&hello))
        .unwrap();
    (id, cq, pd)
}

/// The 64 handshake places all taken by stalled clients: a good client's request waits in
/// the backlog until the handshake timeout (200 ms here) drops them, then gets in.
#[tokio::test]
async fn stalled_handshakes_are_dropped_after_their_timeout() {
    // iWARP's kernel completes the handshake (the MPA exchange) without the peer's process.
    if !provider_has(Need::IbTransport) {
        return;
    }
    let config = StreamConfig::default().handshake_timeout(Duration::from_millis(200));
    let mut listener = RdmaListener::bind_with(SocketAddr::new(cm_addr(), 0), &config).unwrap();
    let dst = listener.local_addr().unwrap();
    let mut stalled_peers = Vec::new();
    for _ in 0..64 {
        stalled_peers.push(stalled(dst).await);
    }
    let (client, server) = timeout(LIMIT, async {
        tokio::join!(RdmaStream::connect(dst), listener.accept())
    })
    .await
    .expect("the good client got in once the stalled handshakes timed out");
    let (mut client, mut server) = (client.unwrap(), server.unwrap());
    server.write_all(b"in").await.unwrap();
    server.shutdown().await.unwrap();
    let mut got = Vec::new();
    timeout(LIMIT, client.read_to_end(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, b"in");
    drop((client, server, listener, stalled_peers));
    assert_clean_drops();
}

/// The child's variable: the port its listener binds.
const CHILD: &str = "IBVERBS_TEST_ASYNC_STREAM_EXHAUSTED_PORT";

/// In a child process (the limits are the process's), a listener whose first accept finds
/// the process out of `what`: the accept returns the error (with `errno`), the client is
/// turned away, and the next accept (the limit given back) serves the next client.
async fn out_of(name: &str, what: Exhaust, config: &StreamConfig, want: i32) {
    if let Some(port) = std::env::var_os(CHILD) {
        let port = port.to_str().unwrap().parse().unwrap();
        let mut listener =
            RdmaListener::bind_with(SocketAddr::new(cm_addr(), port), config).unwrap();
        let exhausted = exhaust(what);
        let err = timeout(LIMIT, listener.accept())
            .await
            .unwrap()
            .unwrap_err();
        drop(exhausted);
        assert_eq!(errno(&err), Some(want), "{err}");
        println!("accept: {err}");
        let mut stream = timeout(LIMIT, listener.accept()).await.unwrap().unwrap();
        stream.write_all(b"served").await.unwrap();
        stream.shutdown().await.unwrap();
        let mut rest = Vec::new();
        timeout(LIMIT, stream.read_to_end(&mut rest))
            .await
            .unwrap()
            .unwrap();
        return;
    }
    let port = free_port();
    let addr = SocketAddr::new(cm_addr(), port);
    let mut child = child_test_with(name, CHILD, &port.to_string());
    child.wait_until("listens", LIMIT, || cm_listening(addr));
    let refused = timeout(LIMIT, RdmaStream::connect(addr)).await.unwrap();
    assert!(refused.is_err(), "the first client is turned away");
    let mut client = timeout(LIMIT, RdmaStream::connect(addr))
        .await
        .unwrap()
        .unwrap();
    let mut got = [0; 6];
    timeout(LIMIT, client.read_exact(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&got, b"served");
    client.shutdown().await.unwrap();
    let out = child.finish(Instant::now() + LIMIT);
    assert!(out.status.success(), "{}", out.context());
    assert!(out.stdout.contains("accept: "), "{}", out.context());
    drop(client);
    assert_clean_drops();
}

/// Rings of 4 slots of 16 MiB (192 MiB) in an address space with 32 MiB of room left.
#[tokio::test]
async fn accept_returns_out_of_memory_for_rings_and_serves_on() {
    out_of(
        "stream_listener::accept_returns_out_of_memory_for_rings_and_serves_on",
        Exhaust::Memory { room: 32 << 20 },
        &StreamConfig::default().slots(4).slot_size(16 << 20),
        libc::ENOMEM,
    )
    .await;
}

#[tokio::test]
async fn accept_returns_too_many_open_files_and_serves_on() {
    out_of(
        "stream_listener::accept_returns_too_many_open_files_and_serves_on",
        Exhaust::Files,
        &StreamConfig::default(),
        libc::EMFILE,
    )
    .await;
}
