//! The blocking byte stream (`rdma_verbs::stream::RdmaStream`, `Read` + `Write`) on the CM
//! device: a megabyte each way through a server thread that reads to the end and answers,
//! vectored writes, a listener that turns away a peer speaking no stream and serves on, a
//! peer that drops its stream, and an echo client whose shutdown does not wait for the
//! echoing peer to read.

use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rdma_verbs::cm::{ConnParam, EventChannel, PortSpace};
use rdma_verbs::stream::{RdmaListener, RdmaStream, StreamConfig};
use rdma_verbs::QpType;
use rdma_verbs_test_kit::{assert_clean_drops, cm_addr, pattern};

fn listener(config: &StreamConfig) -> (RdmaListener, SocketAddr) {
    let listener = RdmaListener::bind_with(SocketAddr::new(cm_addr(), 0), config).unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

#[test]
fn a_megabyte_goes_there_and_back_through_a_server_thread() {
    let config = StreamConfig::default().slots(4).slot_size(16 << 10);
    let (listener, addr) = listener(&config);
    // The server reads to the client's end, then answers with what it read, reversed.
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        got.reverse();
        stream.write_all(&got).unwrap();
        stream.shutdown().unwrap();
        // The stream drops next (abortively): the client has every byte first.
        stream.flush().unwrap();
        got.len()
    });
    let mut client = RdmaStream::connect_with(addr, &config).unwrap();
    assert_eq!(client.peer_addr(), Some(addr));
    let data = pattern(7, 1 << 20);
    for piece in data.chunks(40_000) {
        client.write_all(piece).unwrap();
    }
    client.shutdown().unwrap();
    let err = client.write(b"late").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
    let mut back = Vec::new();
    client.read_to_end(&mut back).unwrap();
    assert_eq!(server.join().unwrap(), data.len());
    let mut want = data;
    want.reverse();
    assert!(back == want, "the answer differs");
    drop(client);
    assert_clean_drops();
}

/// Keepalive probes while a side waits (a zero-length RDMA write with no address and no
/// key, here after every 10 ms of waiting) are taken by the peer's device without a trace:
/// after each side waited 30 intervals in turn, the bytes went both ways whole.
#[test]
fn keepalive_probes_while_waiting_leave_the_stream_whole() {
    let config = StreamConfig::default().keepalive(Some(Duration::from_millis(10)));
    let (listener, addr) = listener(&config);
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        let mut got = [0; 5];
        // Waits while the client sleeps: probes.
        stream.read_exact(&mut got).unwrap();
        thread::sleep(Duration::from_millis(300));
        stream.write_all(&got).unwrap();
        stream.shutdown().unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        rest.is_empty()
    });
    let mut client = RdmaStream::connect_with(addr, &config).unwrap();
    thread::sleep(Duration::from_millis(300));
    client.write_all(b"hello").unwrap();
    client.flush().unwrap();
    // Waits while the server sleeps: probes.
    let mut back = Vec::new();
    client.read_to_end(&mut back).unwrap();
    assert_eq!(back, b"hello");
    client.shutdown().unwrap();
    assert!(
        server.join().unwrap(),
        "the server read bytes after the end"
    );
    drop(client);
    assert_clean_drops();
}

#[test]
fn a_vectored_write_is_one_message_and_flush_posts_it() {
    let (listener, addr) = listener(&StreamConfig::default());
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        let mut got = [0; 11];
        stream.read_exact(&mut got).unwrap();
        got
    });
    let mut client = RdmaStream::connect(addr).unwrap();
    let n = client
        .write_vectored(&[
            IoSlice::new(b"one "),
            IoSlice::new(b"two "),
            IoSlice::new(b"3"),
        ])
        .unwrap();
    assert_eq!(n, 9, "every slice fits one slot");
    client.write_all(b"!!").unwrap();
    client.flush().unwrap();
    assert_eq!(&server.join().unwrap(), b"one two 3!!");
    assert_clean_drops();
}

#[test]
fn a_peer_speaking_no_stream_is_turned_away_and_the_listener_serves_on() {
    let (listener, addr) = listener(&StreamConfig::default());
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        stream.write_all(b"served").unwrap();
        stream.shutdown().unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
    });
    // A plain rdma_cm client whose private data is no stream hello.
    let channel = EventChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve_addr(None, addr, std::time::Duration::from_secs(2))
        .unwrap();
    channel.get_event().unwrap();
    id.resolve_route(std::time::Duration::from_secs(2)).unwrap();
    channel.get_event().unwrap();
    let ctx = id.context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(4, None).unwrap());
    id.create_qp(pd.create_qp(QpType::Rc, &cq, &cq)).unwrap();
    let param = ConnParam::new().private_data(b"SSH-2.0");
    id.connect(&param).unwrap();
    let event = channel.get_event().unwrap();
    assert!(
        event.expect_kind("rdma_connect", |_| false).is_err(),
        "not established"
    );
    drop((id, cq, pd, channel));
    let mut client = RdmaStream::connect(addr).unwrap();
    let mut got = [0; 6];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"served");
    client.shutdown().unwrap();
    server.join().unwrap();
    assert_clean_drops();
}

#[test]
fn a_peer_that_drops_its_stream_ends_reads_with_a_reset() {
    let (listener, addr) = listener(&StreamConfig::default());
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        stream.write_all(b"bye").unwrap();
        stream.flush().unwrap();
        // Gone without a shutdown, once the client has the bytes.
        let mut ack = [0; 1];
        stream.read_exact(&mut ack).unwrap();
    });
    let mut client = RdmaStream::connect(addr).unwrap();
    let mut got = [0; 3];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"bye");
    client.write_all(b"k").unwrap();
    client.flush().unwrap();
    server.join().unwrap();
    let err = client.read(&mut [0; 8]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    let err = client.write_all(b"hello?").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
    drop(client);
    assert_clean_drops();
}

/// An echo client with 16 KiB rings (4 slots of 4 KiB: 4088 bytes each) writes 10 full
/// messages and 1000 bytes, shuts down, then reads the echo. The server echoes one
/// message at a time: it takes 6 (4 in the client's ring, 1 in its open slot, 1 waiting
/// to be written back) and blocks writing; 4 more fill its ring, and the last 1000 bytes
/// wait in the client's open slot for a credit the server returns only when it reads
/// again. The shutdown queues the end behind them and returns; the client's reads let the
/// server go on, and the bytes and the end arrive in order. Before, the shutdown waited
/// for that credit, while the server waited for the client to read.
#[test]
fn shutdown_does_not_wait_for_an_echoing_peer_to_read() {
    let config = StreamConfig::default().slots(4).slot_size(4096);
    let (listener, addr) = listener(&config);
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        let mut buf = vec![0; 4088];
        loop {
            let n = stream.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            stream.write_all(&buf[..n]).unwrap();
        }
        stream.shutdown().unwrap();
        // The stream drops next (abortively): the client has every byte first.
        stream.flush().unwrap();
    });
    let data = pattern(9, 10 * 4088 + 1000);
    let (done, finished) = mpsc::channel();
    let sent = data.clone();
    thread::spawn(move || {
        let mut client = RdmaStream::connect_with(addr, &config).unwrap();
        client.write_all(&sent).unwrap();
        client.shutdown().unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).unwrap();
        let _ = done.send(back);
    });
    let back = finished
        .recv_timeout(Duration::from_secs(30))
        .expect("the echo client finished in time");
    assert!(back == data, "the echo differs");
    server.join().unwrap();
    assert_clean_drops();
}
