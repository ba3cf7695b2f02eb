//! The failover stream (`rdma_verbs::stream::failover`) on the CM device, one host: a
//! transfer whose first path has no listener (the stream takes the second), a stream whose
//! peer was dropped (its path breaks, and the join on another path meets a listener that no
//! longer knows the group: `InvalidData`), and hostile peers speaking the frames by hand
//! over a plain byte stream: an oversize frame, a resume beyond what was sent, a hello of a
//! group nobody made. The cuts of a link (a path moving, nothing lost) need two hosts: the
//! link-faults tests.

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use rdma_verbs::stream::failover::{FailoverConfig, FailoverListener, FailoverStream, Path};
use rdma_verbs::stream::{RdmaListener, RdmaStream, StreamConfig};
use rdma_verbs_test_kit::{assert_clean_drops, cm_addr, free_port, pattern};

/// A frame as the protocol has it: kind, three zero bytes, the body's length, the body.
fn frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind, 0, 0, 0];
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// A hello: token, 0 (a new group) or 1 (join), the bytes received.
fn hello(token: [u8; 16], join: bool, received: u64) -> Vec<u8> {
    let mut body = token.to_vec();
    body.push(u8::from(join));
    body.extend_from_slice(&received.to_le_bytes());
    frame(4, &body)
}

fn config() -> FailoverConfig {
    FailoverConfig::default()
        .buffer(256 << 10)
        .frame(16 << 10)
        .failover_timeout(Duration::from_secs(5))
}

fn listener() -> (FailoverListener, SocketAddr) {
    let listener = FailoverListener::bind(&[SocketAddr::new(cm_addr(), 0)], &config()).unwrap();
    let addr = listener.local_addrs()[0];
    (listener, addr)
}

#[test]
fn a_failover_stream_takes_the_path_that_answers_and_moves_bytes_both_ways() {
    let (listener, addr) = listener();
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        got.reverse();
        stream.write_all(&got).unwrap();
        stream.shutdown().unwrap();
        got.len()
    });
    // Nobody listens on the first path's port: its connect is refused.
    let dead = SocketAddr::new(cm_addr(), free_port());
    let paths = [Path::new(None, dead), Path::new(Some(cm_addr()), addr)];
    let mut client = FailoverStream::connect(&paths, &config()).unwrap();
    assert_eq!(client.path(), Some(paths[1].to_string().as_str()));
    assert_eq!(client.failures().len(), 1, "{:?}", client.failures());
    assert_eq!(client.failures()[0].0, paths[0].to_string());
    // Four times the buffer: the writes wait for acks.
    let data = pattern(11, 1 << 20);
    for piece in data.chunks(50_000) {
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

#[test]
fn a_stream_whose_peer_was_dropped_fails_on_the_unknown_group() {
    let (listener, addr) = listener();
    let server = thread::spawn(move || {
        let stream = listener.accept().unwrap();
        drop(stream);
        // The listener stays to answer the client's join.
        thread::sleep(Duration::from_secs(3));
    });
    let paths = [Path::new(None, addr)];
    let mut client = FailoverStream::connect(&paths, &config()).unwrap();
    let mut buf = [0; 8];
    let err = client.read(&mut buf).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("does not know"), "{err}");
    // Broken for good: the same error again.
    let again = client.write(b"x").unwrap_err();
    assert_eq!(again.kind(), ErrorKind::InvalidData, "{again}");
    server.join().unwrap();
    drop(client);
    assert_clean_drops();
}

#[test]
fn a_hostile_client_is_invalid_data_to_the_listening_stream() {
    let (listener, addr) = listener();
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        let mut buf = [0; 64];
        let first = stream.read(&mut buf).unwrap();
        let err = stream.read(&mut buf).unwrap_err();
        (first, err)
    });
    let mut raw = RdmaStream::connect_with(addr, &StreamConfig::default()).unwrap();
    raw.write_all(&hello([7; 16], false, 0)).unwrap();
    let mut resume = [0; 16];
    raw.read_exact(&mut resume).unwrap();
    assert_eq!(resume.to_vec(), frame(5, &0u64.to_le_bytes()));
    raw.write_all(&frame(1, b"ok")).unwrap();
    // A data frame over the 16 KiB limit (its header is enough).
    raw.write_all(&(frame(1, &[])[..4])).unwrap();
    raw.write_all(&(1u32 << 20).to_le_bytes()).unwrap();
    raw.flush().unwrap();
    let (first, err) = server.join().unwrap();
    assert_eq!(first, 2);
    assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("16384"), "{err}");
    drop(raw);
    assert_clean_drops();
}

#[test]
fn a_hostile_listener_is_invalid_data_to_the_connecting_stream() {
    let config = StreamConfig::default();
    let raw = RdmaListener::bind_with(SocketAddr::new(cm_addr(), 0), &config).unwrap();
    let addr = raw.local_addr().unwrap();
    let server = thread::spawn(move || {
        // The first client gets a resume at 99 for its new group (nothing was sent).
        let mut stream = raw.accept().unwrap();
        let mut hello = [0; 8 + 25];
        stream.read_exact(&mut hello).unwrap();
        stream.write_all(&frame(5, &99u64.to_le_bytes())).unwrap();
        // Fails if the client took the answer and dropped its stream first.
        let _ = stream.shutdown();
    });
    let err = FailoverStream::connect(&[Path::new(None, addr)], &self::config()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidData, "{err}");
    assert!(err.to_string().contains("99"), "{err}");
    server.join().unwrap();
    assert_clean_drops();
}

#[test]
fn a_join_of_an_unknown_group_is_answered_and_dropped() {
    let (listener, addr) = listener();
    let mut raw = RdmaStream::connect_with(addr, &StreamConfig::default()).unwrap();
    raw.write_all(&hello([3; 16], true, 5)).unwrap();
    let mut answer = Vec::new();
    let end = raw.read_to_end(&mut answer);
    assert_eq!(answer, frame(6, &[]), "{end:?}");
    drop((raw, listener));
    assert_clean_drops();
}

#[test]
fn failover_settings_out_of_range_are_refused() {
    let addr = SocketAddr::new(cm_addr(), 1);
    let cases = [
        (FailoverConfig::default().frame(0), "frame size"),
        (FailoverConfig::default().frame(17 << 20), "frame size"),
        (FailoverConfig::default().buffer(100), "buffer"),
        (
            FailoverConfig::default().failover_timeout(Duration::ZERO),
            "failover timeout",
        ),
        (
            FailoverConfig::default().stream(StreamConfig::default().ack_timeout(Some(32))),
            "ACK timeout",
        ),
    ];
    for (config, what) in cases {
        let err = FailoverStream::connect(&[Path::new(None, addr)], &config).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
        assert!(err.to_string().contains(what), "{what}: {err}");
    }
    let err = FailoverStream::connect(&[], &FailoverConfig::default()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
}
