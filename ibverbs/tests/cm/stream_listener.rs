//! The blocking stream listener against peers that stall it and a process out of
//! resources: ten clients that send a connect request with a stream hello and never
//! complete their connect hold none of a hundred good clients; a listener with no memory
//! for a stream's rings, or no file descriptor left, returns the error from `accept` and
//! accepts the next client.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};

use rdma_verbs::cm::{CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::stream::{RdmaListener, RdmaStream, StreamConfig};
use rdma_verbs::{CompletionQueue, ProtectionDomain, QpType};
use rdma_verbs_test_kit::{
    assert_clean_drops, child_test_with, cm_addr, cm_listening, errno, exhaust, free_port,
    provider_has, stream_hello, Exhaust, Need,
};

use super::next_event;

/// The hang guard of each wait.
const LIMIT: Duration = Duration::from_secs(20);

/// A client that sends a connect request with a stream hello and then never reads its CM
/// events: its librdmacm never answers the listener's accept (no ready-to-use message), so
/// the handshake never completes on the listener's side.
struct Stalled {
    channel: EventChannel,
    _id: CmId,
    _verbs: (CompletionQueue, ProtectionDomain),
}

impl Stalled {
    fn connect(dst: SocketAddr) -> Stalled {
        let channel = EventChannel::new().unwrap();
        let mut id = channel.create_id(PortSpace::Tcp).unwrap();
        id.resolve_addr(None, dst, Duration::from_secs(2)).unwrap();
        assert!(matches!(
            next_event(&channel).kind,
            CmEventKind::AddrResolved
        ));
        id.resolve_route(Duration::from_secs(2)).unwrap();
        assert!(matches!(
            next_event(&channel).kind,
            CmEventKind::RouteResolved
        ));
        let ctx = id.context().unwrap();
        let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(16, None).unwrap());
        let qp = pd
            .create_qp(QpType::Rc, &cq, &cq)
            .max_send_wr(8)
            .max_recv_wr(8);
        id.create_qp(qp).unwrap();
        id.connect(&ConnParam::new().private_data(&stream_hello(4096, 4, 4)))
            .unwrap();
        Stalled {
            channel,
            _id: id,
            _verbs: (cq, pd),
        }
    }

    /// Waits (up to [`LIMIT`]) until the listener's answer is queued on the channel, and
    /// leaves it there: readiness only, no event read.
    fn answered(&self) -> bool {
        // SAFETY: the descriptor is only polled for readiness; no event is read from it.
        let fd = unsafe { self.channel.raw_fd() };
        let mut pfd = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        let ms = LIMIT.as_millis() as i32;
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(pfd.as_mut_ptr(), 1, ms) == 1 }
    }
}

/// Ten stalled clients are accepted (each got the listener's answer), and while their
/// handshakes wait, a hundred good clients connect one after another, each within 1 s of
/// its request, and are served. Before, `accept` ran one handshake at a time and waited
/// for the first stalled one to be established (75 s, until the CM gave up), and every
/// other client with it.
///
/// The bound: a connect (address and route resolution, the request, the accept) takes
/// tens of milliseconds on rxe, and about 100 ms on the VM's emulated CPUs under the load
/// of other tests; a handshake serialised behind a stalled one waits for the handshake
/// timeout (here 60 s, longer than the test) or the CM's retries (seconds each).
#[test]
fn stalled_peers_hold_no_good_client() {
    // iWARP's kernel completes the handshake (the MPA exchange) without the peer's process.
    if !provider_has(Need::IbTransport) {
        return;
    }
    let config = StreamConfig::default().handshake_timeout(Duration::from_secs(60));
    let listener = RdmaListener::bind_with(SocketAddr::new(cm_addr(), 0), &config).unwrap();
    let addr = listener.local_addr().unwrap();
    const GOOD: u8 = 100;
    let server = thread::spawn(move || {
        for _ in 0..GOOD {
            let mut stream = listener.accept().unwrap();
            let mut byte = [0];
            stream.read_exact(&mut byte).unwrap();
            stream.write_all(&byte).unwrap();
            stream.shutdown().unwrap();
        }
    });
    let stalled: Vec<Stalled> = (0..10).map(|_| Stalled::connect(addr)).collect();
    for (i, peer) in stalled.iter().enumerate() {
        assert!(peer.answered(), "stalled peer {i} was never accepted");
    }
    let mut slowest = Duration::ZERO;
    for i in 0..GOOD {
        let start = Instant::now();
        let mut client = RdmaStream::connect(addr).unwrap();
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(1),
            "good client {i} connected {took:?} after its request"
        );
        slowest = slowest.max(took);
        client.write_all(&[i]).unwrap();
        client.flush().unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).unwrap();
        assert_eq!(back, [i], "good client {i} served");
    }
    server.join().unwrap();
    eprintln!("slowest of {GOOD} connects beside 10 stalled handshakes: {slowest:?}");
    drop(stalled);
    assert_clean_drops();
}

/// The 64 handshake places all taken by stalled clients: a good client's request waits in
/// the backlog until the handshake timeout (200 ms here) drops them, then gets in.
#[test]
fn stalled_handshakes_are_dropped_after_their_timeout() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let config = StreamConfig::default().handshake_timeout(Duration::from_millis(200));
    let listener = RdmaListener::bind_with(SocketAddr::new(cm_addr(), 0), &config).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = thread::spawn(move || {
        let mut stream = listener.accept().unwrap();
        stream.write_all(b"in").unwrap();
        stream.shutdown().unwrap();
    });
    let stalled: Vec<Stalled> = (0..64).map(|_| Stalled::connect(addr)).collect();
    let mut client = RdmaStream::connect(addr).unwrap();
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"in");
    server.join().unwrap();
    drop(stalled);
    assert_clean_drops();
}

/// The child's variable: the port its listener binds.
const CHILD: &str = "IBVERBS_TEST_STREAM_EXHAUSTED_PORT";

/// In a child process (the limits are the process's), a listener whose first accept finds
/// the process out of `what`: `accept` returns the error (with `errno`), the client is
/// turned away, and the next accept (the limit given back) serves the next client.
fn out_of(name: &str, what: Exhaust, config: &StreamConfig, want: i32) {
    if let Some(port) = std::env::var_os(CHILD) {
        let port = port.to_str().unwrap().parse().unwrap();
        let listener = RdmaListener::bind_with(SocketAddr::new(cm_addr(), port), config).unwrap();
        let exhausted = exhaust(what);
        let err = listener.accept().unwrap_err();
        drop(exhausted);
        assert_eq!(errno(&err), Some(want), "{err}");
        println!("accept: {err}");
        let mut stream = listener.accept().unwrap();
        stream.write_all(b"served").unwrap();
        stream.shutdown().unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        return;
    }
    let port = free_port();
    let addr = SocketAddr::new(cm_addr(), port);
    let mut child = child_test_with(name, CHILD, &port.to_string());
    child.wait_until("listens", LIMIT, || cm_listening(addr));
    let refused = RdmaStream::connect(addr);
    assert!(refused.is_err(), "the first client is turned away");
    let mut client = RdmaStream::connect(addr).unwrap();
    let mut got = [0; 6];
    client.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"served");
    client.shutdown().unwrap();
    let out = child.finish(Instant::now() + LIMIT);
    assert!(out.status.success(), "{}", out.context());
    assert!(out.stdout.contains("accept: "), "{}", out.context());
    drop(client);
    assert_clean_drops();
}

/// Rings of 4 slots of 16 MiB (192 MiB) in an address space with 32 MiB of room left.
#[test]
fn accept_returns_out_of_memory_for_rings_and_serves_on() {
    out_of(
        "stream_listener::accept_returns_out_of_memory_for_rings_and_serves_on",
        Exhaust::Memory { room: 32 << 20 },
        &StreamConfig::default().slots(4).slot_size(16 << 20),
        libc::ENOMEM,
    );
}

#[test]
fn accept_returns_too_many_open_files_and_serves_on() {
    out_of(
        "stream_listener::accept_returns_too_many_open_files_and_serves_on",
        Exhaust::Files,
        &StreamConfig::default(),
        libc::EMFILE,
    );
}
