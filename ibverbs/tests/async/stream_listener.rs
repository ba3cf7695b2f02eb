//! The tokio stream listener in a process out of resources: with no memory for a stream's
//! rings, or no file descriptor left, the accept returns the error and the listener
//! accepts the next client.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rdma_verbs::stream::StreamConfig;
use rdma_verbs::tokio::stream::{RdmaListener, RdmaStream};
use rdma_verbs_test_kit::{
    assert_clean_drops, child_test_with, cm_addr, cm_listening, errno, exhaust, free_port, Exhaust,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

/// The hang guard of each wait.
const LIMIT: Duration = Duration::from_secs(20);

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
