//! Byte streams (`rdma_verbs::tokio::stream`) on the CM device: bytes both ways checked one
//! by one (one and many messages, vectored writes, the rings' smallest sizes with both sides
//! writing at once), half-close, backpressure with a bounded ring, a peer that drops its
//! stream, and peers that break the protocol or speak none.

use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::time::Duration;

use rdma_verbs::cm::{ConnParam, PortSpace};
use rdma_verbs::stream::StreamConfig;
use rdma_verbs::tokio::cm::{AsyncCmChannel, Connected};
use rdma_verbs::tokio::stream::{RdmaListener, RdmaStream};
use rdma_verbs::SendRequest;
use rdma_verbs::{AccessFlags, CompletionQueue, MemoryRegion, ProtectionDomain, QpType};
use rdma_verbs_test_kit::{assert_clean_drops, cm_addr, pattern, stream_hello};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::timeout;

/// The hang guard of each step: generous, as scripts/memcheck runs these tests under
/// valgrind (tens of times slower), several at once.
const LIMIT: Duration = Duration::from_secs(90);

fn any_port() -> SocketAddr {
    SocketAddr::new(cm_addr(), 0)
}

/// A connected pair: (client, server).
async fn pair(config: &StreamConfig) -> (RdmaStream, RdmaStream) {
    let mut listener = RdmaListener::bind_with(any_port(), config).unwrap();
    let dst = listener.local_addr().unwrap();
    let (client, server) = timeout(LIMIT, async {
        tokio::join!(RdmaStream::connect_with(dst, config), listener.accept())
    })
    .await
    .expect("connected in time");
    (client.unwrap(), server.unwrap())
}

/// Writes `data` in pieces of the sizes in `sizes` (cycled), then shuts down.
async fn write_in_pieces(mut w: impl AsyncWrite + Unpin, data: &[u8], sizes: &[usize]) {
    let mut at = 0;
    for size in sizes.iter().cycle() {
        if at == data.len() {
            break;
        }
        let end = (at + size).min(data.len());
        w.write_all(&data[at..end]).await.unwrap();
        at = end;
    }
    w.shutdown().await.unwrap();
}

async fn read_all(mut r: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut out = Vec::new();
    r.read_to_end(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn bytes_go_both_ways_whole_and_in_order() {
    let (client, server) = pair(&StreamConfig::default()).await;
    // The server echoes everything back, then ends its side when the client's ends.
    let echo = async move {
        let (mut r, mut w) = tokio::io::split(server);
        let copied = tokio::io::copy(&mut r, &mut w).await.unwrap();
        w.shutdown().await.unwrap();
        // The stream drops next (abortively): the client has every byte first.
        w.flush().await.unwrap();
        copied
    };
    let data = pattern(1, 1 << 20);
    let (r, w) = tokio::io::split(client);
    let sizes = [1, 7, 4096, 65536, 100_000, 3];
    let (copied, (), back) = timeout(LIMIT, async {
        tokio::join!(echo, write_in_pieces(w, &data, &sizes), read_all(r))
    })
    .await
    .expect("echoed in time");
    assert_eq!(copied, data.len() as u64);
    assert_eq!(back.len(), data.len());
    assert!(back == data, "the echo differs from what was written");
    assert_clean_drops();
}

#[tokio::test]
async fn the_smallest_rings_carry_both_directions_at_once() {
    // One data slot of 9 bytes (1 byte per message) each way: every message waits for the
    // peer's credit, both sides write while they read.
    for (slots, slot) in [(1, 9), (2, 16), (3, 100)] {
        let config = StreamConfig::default().slots(slots).slot_size(slot);
        let (a, b) = pair(&config).await;
        // Up to 60 full messages each way, each one waiting for a credit in the one-slot
        // ring (a round trip per byte there: slow under valgrind's DRD).
        let len = (slot - 8) * 60;
        let (a_data, b_data) = (pattern(2, len), pattern(3, len - len / 7));
        let (ar, aw) = tokio::io::split(a);
        let (br, bw) = tokio::io::split(b);
        let (a_got, b_got, (), ()) = timeout(LIMIT, async {
            tokio::join!(
                read_all(ar),
                read_all(br),
                write_in_pieces(aw, &a_data, &[5, 1, 300]),
                write_in_pieces(bw, &b_data, &[64, 2]),
            )
        })
        .await
        .unwrap_or_else(|_| panic!("{slots} slots of {slot} bytes: done in time"));
        assert!(a_got == b_data && b_got == a_data, "{slots} x {slot}");
    }
    assert_clean_drops();
}

#[tokio::test]
async fn a_vectored_write_gathers_its_slices_into_one_message() {
    let (mut client, mut server) = pair(&StreamConfig::default()).await;
    let parts: [&[u8]; 4] = [b"head ", b"", b"body ", b"tail"];
    let slices = parts.map(IoSlice::new);
    assert!(client.is_write_vectored());
    let n = client.write_vectored(&slices).await.unwrap();
    assert_eq!(n, 14, "every slice fits one slot");
    client.flush().await.unwrap();
    let mut got = [0; 14];
    timeout(LIMIT, server.read_exact(&mut got))
        .await
        .expect("read in time")
        .unwrap();
    assert_eq!(&got, b"head body tail");
    assert_clean_drops();
}

#[tokio::test]
async fn a_half_closed_stream_reads_on_and_refuses_writes() {
    let (mut client, mut server) = pair(&StreamConfig::default()).await;
    client.write_all(b"question").await.unwrap();
    timeout(LIMIT, client.shutdown())
        .await
        .expect("shut down in time")
        .unwrap();
    let err = client.write_all(b"more").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
    let asked = timeout(LIMIT, read_all(&mut server)).await.unwrap();
    assert_eq!(asked, b"question");
    // At the end, reads keep saying so.
    assert_eq!(server.read(&mut [0; 8]).await.unwrap(), 0);
    server.write_all(b"answer").await.unwrap();
    server.shutdown().await.unwrap();
    let answer = timeout(LIMIT, read_all(&mut client)).await.unwrap();
    assert_eq!(answer, b"answer");
    assert_clean_drops();
}

#[tokio::test]
async fn both_ends_shut_down_before_either_reads() {
    // Each end's bytes take the peer's only data slot, unread until after the shutdown:
    // the ends go on control credits, so neither shutdown waits for the other's reader.
    for slots in [1, 2] {
        let config = StreamConfig::default().slots(slots).slot_size(64);
        let (a, b) = pair(&config).await;
        let end = |mut stream: RdmaStream, say: &'static [u8]| async move {
            stream.write_all(say).await.unwrap();
            stream.shutdown().await.unwrap();
            read_all(&mut stream).await
        };
        let (heard_by_a, heard_by_b) = timeout(LIMIT, async {
            tokio::join!(end(a, b"from a"), end(b, b"from b"))
        })
        .await
        .unwrap_or_else(|_| panic!("{slots} slots: both shut down and read in time"));
        assert_eq!(
            (&heard_by_a[..], &heard_by_b[..]),
            (&b"from b"[..], &b"from a"[..])
        );
    }
    assert_clean_drops();
}

#[tokio::test]
async fn a_reader_that_does_not_read_stops_the_writer_within_the_rings() {
    let (slots, slot) = (4, 1024);
    let config = StreamConfig::default().slots(slots).slot_size(slot);
    let (mut client, mut server) = pair(&config).await;
    let data = pattern(4, 64 << 10);
    let mut written = 0;
    // The writer gets as far as the reader's ring and its own open slot, then waits.
    while written < data.len() {
        let chunk = &data[written..(written + 100).min(data.len())];
        match timeout(Duration::from_millis(300), client.write(chunk)).await {
            Ok(n) => written += n.unwrap(),
            Err(_) => break,
        }
    }
    let payload = slot - 8;
    let bound = (usize::from(slots) + 1) * payload;
    assert!(
        written < data.len() && written <= bound,
        "{written} bytes written before the writer waited (bound {bound})"
    );
    // Reading lets it go on.
    let rest = &data[written..];
    let (got, ()) = timeout(LIMIT, async {
        tokio::join!(
            read_all(&mut server),
            write_in_pieces(&mut client, rest, &[777])
        )
    })
    .await
    .expect("the rest in time");
    assert!(got == data, "the stream after the wait differs");
    assert_clean_drops();
}

#[tokio::test]
async fn a_peer_that_drops_its_stream_ends_reads_and_writes_with_errors() {
    let (mut client, server) = pair(&StreamConfig::default()).await;
    let mut server = server;
    server.write_all(b"last words").await.unwrap();
    server.flush().await.unwrap();
    // Let the bytes land before the peer goes.
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(server);
    let mut got = [0; 10];
    timeout(LIMIT, client.read_exact(&mut got))
        .await
        .expect("read in time")
        .unwrap();
    assert_eq!(&got, b"last words");
    let err = timeout(LIMIT, client.read(&mut [0; 16]))
        .await
        .expect("the disconnect in time")
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    let err = client.write_all(b"anyone?").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
    drop(client);
    assert_clean_drops();
}

/// A stream whose runtime was dropped fails its reads and writes in another runtime with
/// `Other` naming the runtime shut down (as tokio's own sockets do), never with a peer's
/// `ConnectionReset` or `BrokenPipe`: the peer is still there.
#[test]
fn a_stream_whose_runtime_was_dropped_fails_with_a_local_error() {
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let first = runtime();
    let (mut client, server) = first.block_on(pair(&StreamConfig::default()));
    drop(first);
    let second = runtime();
    second.block_on(async {
        let err = timeout(LIMIT, client.read(&mut [0; 16]))
            .await
            .expect("the read failed in time")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Other, "{err}");
        assert!(err.to_string().contains("shut"), "{err}");
        let err = timeout(LIMIT, client.write_all(b"anyone?"))
            .await
            .expect("the write failed in time")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Other, "{err}");
    });
    drop((client, server, second));
    assert_clean_drops();
}

#[tokio::test]
async fn a_writer_whose_peer_drops_mid_transfer_gets_an_error_not_a_hang() {
    let (mut client, server) = pair(&StreamConfig::default().slots(4).slot_size(4096)).await;
    let writer = async {
        let data = pattern(5, 256 << 10);
        loop {
            if let Err(e) = client.write_all(&data).await {
                return e;
            }
        }
    };
    let dropper = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(server);
    };
    let (err, ()) = timeout(LIMIT, async { tokio::join!(writer, dropper) })
        .await
        .expect("the writer failed in time");
    assert_eq!(err.kind(), ErrorKind::BrokenPipe, "{err}");
    assert_clean_drops();
}

/// Keepalive probes while a side waits (a zero-length RDMA write with no address and no
/// key, here after every 10 ms of waiting; tokio's form ticks on a timerfd) are taken by
/// the peer's device without a trace: after each side waited 30 intervals in turn, the
/// bytes went both ways whole.
#[tokio::test]
async fn keepalive_probes_while_waiting_leave_the_stream_whole() {
    let config = StreamConfig::default().keepalive(Some(Duration::from_millis(10)));
    let (mut client, mut server) = pair(&config).await;
    let pause = Duration::from_millis(300);
    let (back, ()) = timeout(LIMIT, async {
        let client = async {
            tokio::time::sleep(pause).await;
            client.write_all(b"hello").await.unwrap();
            client.flush().await.unwrap();
            // Waits while the server sleeps: probes.
            let mut back = [0; 5];
            client.read_exact(&mut back).await.unwrap();
            back
        };
        let server = async {
            // Waits while the client sleeps: probes.
            let mut got = [0; 5];
            server.read_exact(&mut got).await.unwrap();
            tokio::time::sleep(pause).await;
            server.write_all(&got).await.unwrap();
            server.flush().await.unwrap();
        };
        tokio::join!(client, server)
    })
    .await
    .unwrap();
    assert_eq!(&back, b"hello");
    drop((client, server));
    assert_clean_drops();
}

#[tokio::test]
async fn bad_configs_are_refused_before_anything_is_made() {
    for config in [
        StreamConfig::default().slot_size(8),
        StreamConfig::default().slot_size((16 << 20) + 1),
        StreamConfig::default().slots(0),
        StreamConfig::default().slots(1025),
        StreamConfig::default().keepalive(Some(Duration::ZERO)),
        StreamConfig::default().keepalive(Some(Duration::from_millis(1 << 31))),
        StreamConfig::default().handshake_timeout(Duration::ZERO),
        StreamConfig::default().handshake_timeout(Duration::MAX),
    ] {
        let err = RdmaListener::bind_with(any_port(), &config).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{config:?}: {err}");
        assert!(err.to_string().contains("out of range"), "{err}");
    }
}

#[tokio::test]
async fn a_client_that_speaks_no_stream_is_rejected_and_the_listener_serves_on() {
    let mut listener = RdmaListener::bind(any_port()).unwrap();
    let dst = listener.local_addr().unwrap();
    let channel = AsyncCmChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve(None, dst, Duration::from_secs(2)).await.unwrap();
    let ctx = id.id().context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(8, None).unwrap());
    id.create_qp(pd.create_qp(QpType::Rc, &cq, &cq)).unwrap();
    let param = ConnParam::new().private_data(b"GET / HTTP/1.1");
    let (refused, accepted) = timeout(LIMIT, async {
        let refused = async { id.connect(&param).await };
        let good = async {
            // After the bad one is turned away, a stream client gets through.
            tokio::time::sleep(Duration::from_millis(100)).await;
            RdmaStream::connect(dst).await
        };
        let accept = async {
            let stream = listener.accept().await;
            stream
        };
        let (refused, good, accepted) = tokio::join!(refused, good, accept);
        good.unwrap();
        (refused, accepted)
    })
    .await
    .expect("answered in time");
    let err = refused.unwrap_err();
    assert!(matches!(err, rdma_verbs::Error::Rejected { .. }), "{err}");
    accepted.unwrap();
    drop((pd, cq));
    assert_clean_drops();
}

/// A hand-made client that speaks the hello, then sends `messages`, one send each.
async fn hostile(dst: SocketAddr, messages: &[Vec<u8>]) -> Hostile {
    let channel = AsyncCmChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve(None, dst, Duration::from_secs(2)).await.unwrap();
    let ctx = id.id().context().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, None).unwrap();
    id.create_qp(pd.create_qp(QpType::Rc, &cq, &cq)).unwrap();
    // 64-byte slots, 2 data and 4 control slots.
    let hello = stream_hello(64, 2, 4);
    let param = ConnParam::new().private_data(&hello);
    let connected = id.connect(&param).await.unwrap();
    let bytes = messages.concat();
    let mut mr = pd.alloc_mr(bytes.len(), AccessFlags::LOCAL_WRITE).unwrap();
    mr.write(0, &bytes).unwrap();
    let qp = connected.id.id().qp().unwrap();
    let mut at = 0;
    for message in messages {
        let sges = [mr.sge(at..at + message.len()).unwrap()];
        qp.post_send(&mut [SendRequest::send(1, &sges).signaled()])
            .unwrap();
        at += message.len();
    }
    let mut wc = [rdma_verbs::WorkCompletion::default(); 4];
    cq.poll_until(&mut wc, messages.len(), Some(LIMIT)).unwrap();
    (connected, mr, cq, pd, channel)
}

/// What a hostile client keeps until the test is done with it.
type Hostile = (
    Connected,
    MemoryRegion,
    CompletionQueue,
    ProtectionDomain,
    AsyncCmChannel,
);

#[tokio::test]
async fn a_peer_that_breaks_the_protocol_gets_invalid_data() {
    let end = vec![0, 0, 0, 0, 0, 0, 2, 0];
    let cases: [(&str, Vec<Vec<u8>>); 6] = [
        ("short", vec![vec![1, 2, 3]]),
        ("unknown kind", vec![vec![0, 0, 0, 0, 0, 0, 9, 0]]),
        ("credits beyond the slots", {
            let mut m = 1000u32.to_le_bytes().to_vec();
            m.extend_from_slice(&[0, 0, 1, 0, b'x']);
            vec![m]
        }),
        (
            "an end with bytes",
            vec![vec![0, 0, 0, 0, 0, 0, 2, 0, b'x']],
        ),
        (
            "a control message with bytes",
            vec![vec![0, 0, 0, 0, 0, 0, 3, 0, b'x']],
        ),
        ("a second end", vec![end.clone(), end]),
    ];
    for (what, messages) in cases {
        let mut listener = RdmaListener::bind(any_port()).unwrap();
        let dst = listener.local_addr().unwrap();
        let (bad, server) = timeout(LIMIT, async {
            tokio::join!(hostile(dst, &messages), listener.accept())
        })
        .await
        .expect("connected in time");
        let mut server = server.unwrap();
        let read = timeout(LIMIT, server.read(&mut [0; 64]))
            .await
            .expect("refused in time");
        if what == "a second end" {
            // The first end is the end of the peer's bytes; what breaks comes after it.
            assert_eq!(read.unwrap(), 0, "{what}: the first end reads as the end");
        } else {
            let err = read.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidData, "{what}: {err}");
            assert!(err.to_string().contains("protocol"), "{what}: {err}");
        }
        // Writing fails too (the peer's 2 data slots fill, then the violation is seen).
        let err = timeout(LIMIT, server.write_all(&[0; 4096]))
            .await
            .expect("refused in time")
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidData, "{what}: {err}");
        assert!(err.to_string().contains("protocol"), "{what}: {err}");
        drop((bad, server));
    }
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
#[tokio::test]
async fn shutdown_does_not_wait_for_an_echoing_peer_to_read() {
    let config = StreamConfig::default().slots(4).slot_size(4096);
    let (mut client, mut server) = pair(&config).await;
    let echo = async move {
        let mut buf = vec![0; 4088];
        loop {
            let n = server.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            server.write_all(&buf[..n]).await.unwrap();
        }
        server.shutdown().await.unwrap();
        // The stream drops next (abortively): the client has every byte first.
        server.flush().await.unwrap();
    };
    let data = pattern(9, 10 * 4088 + 1000);
    let echo_client = async {
        client.write_all(&data).await.unwrap();
        client.shutdown().await.unwrap();
        read_all(&mut client).await
    };
    let ((), back) = timeout(LIMIT, async { tokio::join!(echo, echo_client) })
        .await
        .expect("the echo client finished in time");
    assert!(back == data, "the echo differs");
    drop(client);
    assert_clean_drops();
}
