//! The echo service of `examples/grpc_echo` over RDMA on the CM device (run through
//! `scripts/with-rdma`): every call shape with messages of 1 B to 4 MiB, every byte checked;
//! 64 clients at once; a streaming call cancelled mid-stream; a server process killed
//! mid-stream; a client process killed mid-stream while the server serves on.

#[path = "../examples/grpc_echo/service.rs"]
#[allow(dead_code)] // the example's entry points this test does not use
mod service;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{
    assert_clean_drops, cm_addr, cm_listening, example, free_port, provider, Provider, Running,
};
use rdma_verbs_tonic::RdmaIncoming;
use service::{every_call, pattern, EchoService, StreamRequest};
use tokio::time::timeout;
use tokio_stream::StreamExt;
use tonic::transport::{Channel, Server};
use tonic::Streaming;

type Client = service::echo_client::EchoClient<Channel>;

/// How long any one step may take (seconds under TCG).
const LIMIT: Duration = Duration::from_secs(60);

/// Serves `service` over RDMA on a port the CM picks, in a task of the test's runtime.
fn start(service: EchoService) -> SocketAddr {
    let incoming = RdmaIncoming::bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    let addr = incoming.local_addr().unwrap();
    let router = Server::builder().add_service(service::server(service));
    tokio::spawn(router.serve_with_incoming(incoming));
    addr
}

/// A server stream of `size`-byte messages that does not end, its first 3 checked.
async fn endless_stream(client: &mut Client, size: u64, seed: u32) -> Streaming<service::Blob> {
    let ask = StreamRequest {
        size,
        count: u32::MAX,
        seed,
    };
    let mut answers = client.server_stream(ask).await.unwrap().into_inner();
    for k in 0..3 {
        let blob = timeout(LIMIT, answers.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(blob.data == pattern(seed + k, size as usize), "message {k}");
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_carries_1_byte_to_4_mib_intact() {
    let addr = start(EchoService::default());
    let mut client = timeout(LIMIT, service::connect(addr))
        .await
        .expect("connected in time")
        .unwrap();
    for size in [1, 100, 8191, 65536, 1 << 20, 4 << 20] {
        timeout(LIMIT, every_call(&mut client, size))
            .await
            .unwrap_or_else(|_| panic!("calls of {size} bytes in time"))
            .unwrap();
    }
    drop(client);
    assert_clean_drops();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_call_at_once() {
    let addr = start(EchoService::default());
    // siw (6.1) maps each CQ and work queue into the process at an offset of a key space
    // of 576 KiB per device context (SIW_UOBJ_MAX_KEY), which all of a process's streams
    // share: past about 48 streams (3 mappings each) its CQ creation fails ("libsiw: prepare
    // CQ mapping failed"), and here both ends are in one process.
    let clients = match provider() {
        Provider::Rxe => 64,
        Provider::Siw => {
            eprintln!("siw: 16 clients (both ends in one process, see the comment)");
            16
        }
    };
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..clients {
        calls.spawn(async move {
            let mut client = service::connect(addr).await.unwrap();
            let data = pattern(i, 1000 + i as usize);
            let back = client.unary(service::Blob { data: data.clone() }).await;
            assert_eq!(back.unwrap().into_inner().data, data, "client {i}");
        });
    }
    timeout(LIMIT, async {
        while let Some(done) = calls.join_next().await {
            done.unwrap();
        }
    })
    .await
    .expect("the clients served in time");
    assert_clean_drops();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_mid_stream_stops_the_server_and_the_connection_serves_on() {
    let service = EchoService::default();
    let cancelled = std::sync::Arc::clone(&service.cancelled);
    let addr = start(service);
    let mut client = service::connect(addr).await.unwrap();
    drop(endless_stream(&mut client, 65536, 9).await);
    timeout(LIMIT, async {
        while cancelled.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the server saw the cancel in time");
    timeout(LIMIT, every_call(&mut client, 1000))
        .await
        .expect("calls after the cancel in time")
        .unwrap();
    assert_clean_drops();
}

/// The example's server on a free port, once it listens.
fn example_server() -> (Running, SocketAddr) {
    let addr = SocketAddr::new(cm_addr(), free_port());
    let args = [
        "server",
        "-a",
        &addr.ip().to_string(),
        "-p",
        &addr.port().to_string(),
    ];
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut server = Running::spawn("server", &example("grpc_echo"), &args);
    server.wait_until("listening", LIMIT, || cm_listening(addr));
    (server, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_stream_fails_the_call_within_seconds() {
    let (server, addr) = example_server();
    let mut client = timeout(LIMIT, service::connect(addr))
        .await
        .unwrap()
        .unwrap();
    let mut answers = endless_stream(&mut client, 4096, 1).await;
    let killed = Instant::now();
    server.kill();
    let status = timeout(Duration::from_secs(10), async {
        loop {
            match answers.next().await {
                Some(Ok(_)) => continue, // what was in flight before the kill
                Some(Err(status)) => return status,
                None => panic!("the stream ended cleanly after the server was killed"),
            }
        }
    })
    .await
    .expect("an error within 10 s of the kill");
    eprintln!(
        "error {:?} {:?} after the kill",
        status.code(),
        killed.elapsed()
    );
    // The channel reconnects, and the server is gone: a new call fails too.
    let again = timeout(LIMIT, client.unary(service::Blob::default())).await;
    assert!(again.expect("an answer in time").is_err());
    drop(client);
    assert_clean_drops();
}

#[test]
fn a_client_killed_mid_stream_leaves_the_server_serving() {
    let (mut server, addr) = example_server();
    let (ip, port) = (addr.ip().to_string(), addr.port().to_string());
    // A client streaming 4 MiB messages, killed while they flow.
    let big = [
        "client", "-a", &ip, "-p", &port, "-s", "4194304", "-s", "4194304", "-c", "1",
    ];
    let big: Vec<String> = big.iter().map(|s| s.to_string()).collect();
    let victim = Running::spawn("victim", &example("grpc_echo"), &big);
    std::thread::sleep(Duration::from_millis(1500));
    victim.kill();
    let small = ["client", "-a", &ip, "-p", &port, "-s", "1000", "-c", "8"];
    let small: Vec<String> = small.iter().map(|s| s.to_string()).collect();
    let out =
        Running::spawn("client", &example("grpc_echo"), &small).finish(Instant::now() + LIMIT);
    assert!(
        out.status.success(),
        "a client after the kill failed\n{}",
        out.context()
    );
    assert!(out.stdout.contains("\nok\n"), "{}", out.context());
    server.wait_until("still up", Duration::from_secs(1), || cm_listening(addr));
}
