//! The traffic class on the wire: each way of setting it (a verbs RC QP's route, a UD
//! address handle's, rdma_cm's option, a byte stream's config, `ib_write_bw --tclass`,
//! C's and ours) makes every RoCE v2 packet of the traffic carry it in the IP header,
//! which a packet socket on this host's link device reads ([`Capture`]). Between two hosts, since rxe
//! hands the packets of one host's QPs back inside the kernel, where no device sees them.
//!
//! The class is 0x68 (DSCP 26, AF31), whose ECN bits are 0. The UD test also sends it with
//! each ECN codepoint set: the byte leaves whole, ECN bits as given (a router may change
//! those two bits on the way, so RoCE v2's invariant CRC leaves the byte out).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rdma_verbs::stream::{RdmaStream, StreamConfig};
use rdma_verbs::{
    AccessFlags, ConnectOptions, Endpoint, Gid, QpType, Route, SendRequest, DEFAULT_QKEY,
};
use rdma_verbs_test_kit::{example, poll_one, Capture, RocePacket, Running, GSI_QP};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::link::Link;
use crate::peer::PeerTurn;
use crate::traffic::{write_records, Host, RECORDS};
use crate::GUARD;

/// The traffic class set: DSCP 26 (AF31), ECN bits 0.
const CLASS: u8 = 0x68;

/// How long the capture waits for a packet after the last one before it stops reading.
const QUIET: Duration = Duration::from_millis(500);

/// Reads what `capture` saw of the traffic just run, and asserts that packets went out,
/// and came in too when `both_ways`, and that every one (the CM's datagrams to QP 1
/// included) carries `class`. Returns them.
fn assert_class(capture: &Capture, what: &str, class: u8, both_ways: bool) -> Vec<RocePacket> {
    let packets = capture.roce_packets(QUIET, Instant::now() + GUARD);
    let sent = packets.iter().filter(|p| p.outgoing).count();
    let cm = packets.iter().filter(|p| p.dest_qp == GSI_QP).count();
    let mut classes: Vec<u8> = packets.iter().map(|p| p.traffic_class).collect();
    classes.sort_unstable();
    classes.dedup();
    let classes: Vec<String> = classes.iter().map(|c| format!("{c:#04x}")).collect();
    eprintln!(
        "{what}: {} RoCE v2 packets ({sent} sent, {} received; {cm} of them the CM's, to QP \
         1), traffic classes {}",
        packets.len(),
        packets.len() - sent,
        classes.join(", ")
    );
    assert!(sent > 0, "{what}: no packet sent was captured");
    if both_ways {
        assert!(
            sent < packets.len(),
            "{what}: no packet received was captured"
        );
    }
    let wrong: Vec<_> = packets
        .iter()
        .filter(|p| p.traffic_class != class)
        .collect();
    assert!(
        wrong.is_empty(),
        "{what}: {} of {} packets do not carry {class:#04x}, e.g. {:?}",
        wrong.len(),
        packets.len(),
        wrong[0]
    );
    packets
}

/// An RC QP pair whose routes have the class, each way: 64 RDMA writes (one packet each),
/// every packet (the writes and the peer's acknowledgements) with it; this QP's attribute
/// read back.
#[test]
fn rc_qp_route_traffic_class_is_on_the_wire() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let host = Host::open(&link.device, link.local);
    let capture = Capture::open(&link.netdev);
    let opts = ConnectOptions::new().route(Route::new().traffic_class(CLASS));
    let (mut side, peer_mem) = peer.connect(&host, &opts, CLASS);
    assert_eq!(side.qp.query().unwrap().traffic_class, CLASS);
    write_records(&mut side, peer_mem, RECORDS as u64);
    let answer = peer.ask(&format!("records {} {RECORDS}", RECORDS - 1));
    assert_eq!(answer, format!("ok {RECORDS}"), "the peer's check");
    assert_class(&capture, "RC QP", CLASS, true);
    drop(side);
    peer.assert_clean_drops();
}

/// UD address handles whose routes have the class, then the class with each ECN codepoint
/// (ECT(1), ECT(0), CE) in its low bits: two datagrams each to the peer's address (to a QP
/// number nobody has there: the peer's rxe drops them; what counts is what left), each
/// with its handle's byte whole.
#[test]
fn ud_address_handle_traffic_class_is_on_the_wire() {
    let link = Link::from_env();
    let _turn = PeerTurn::take(&link);
    let host = Host::open(&link.device, link.local);
    let cq = host.ctx.create_cq(8, None).unwrap();
    let qp = host
        .pd
        .create_qp(QpType::Ud, &cq, &cq)
        .gid_index(host.gid_index)
        .build()
        .unwrap()
        .ready()
        .unwrap();
    let gid = Gid::from(link.peer.to_ipv6_mapped());
    let nobody = 0x00ab_cdef;
    let mem = host.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    let sge = [mem.sge(..64).unwrap()];
    for class in [CLASS, CLASS | 1, CLASS | 2, CLASS | 3] {
        let ah = host
            .pd
            .create_ah(&Endpoint::new(nobody, 0, 0, gid))
            .gid_index(host.gid_index)
            .route(Route::new().traffic_class(class))
            .build()
            .unwrap();
        let capture = Capture::open(&link.netdev);
        for n in 0..2 {
            let wr = SendRequest::send(n, &sge).ud(&ah, nobody, DEFAULT_QKEY);
            qp.post_send(&mut [wr.signaled()]).unwrap();
            poll_one(&cq).ok().unwrap();
        }
        let what = format!("UD address handle, class {class:#04x}");
        let packets = assert_class(&capture, &what, class, false);
        let to_nobody = packets.iter().filter(|p| p.dest_qp == nobody).count();
        assert_eq!(to_nobody, 2, "{what}: the two datagrams: {packets:?}");
    }
}

/// An rdma_cm connection whose id has the option (our `ucmatose -t`, the client, as the
/// test's own rdma_cm program) to rdma-core's `ucmatose` server on the peer, which sets
/// none: both ways of the connection carry the class (the CM's datagrams too), the passive
/// side's QP taking it from the connect request.
#[test]
fn rdma_cm_traffic_class_option_is_on_the_wire() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let port = 7321;
    assert_eq!(peer.ask(&format!("ucmatose {port}")), "listening");
    let capture = Capture::open(&link.netdev);
    let args = ["-s", &link.peer.to_string(), "-p", &port.to_string()]
        .into_iter()
        .chain(["-C", "4", "-t", &CLASS.to_string()])
        .map(String::from)
        .collect::<Vec<_>>();
    let out = Running::spawn("ucmatose client", &example("ucmatose"), &args)
        .finish(Instant::now() + GUARD);
    assert!(out.status.success(), "{}\n{}", out.status, out.context());
    assert_eq!(
        peer.wire().recv("the end of ucmatose"),
        "exit 0",
        "C ucmatose server"
    );
    assert_class(&capture, "rdma_cm, TOS option", CLASS, true);
}

/// Byte streams, blocking and tokio, whose config has the class, to the peer's gRPC
/// server (a stream listener with the default config): each sends HTTP/2's preface and
/// reads the server's first frame; both ways carry the class.
#[test]
fn byte_stream_traffic_class_is_on_the_wire() {
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let port = 7322;
    assert_eq!(peer.ask(&format!("grpc {port}")), "listening");
    let at = SocketAddr::new(link.peer.into(), port);
    let config = StreamConfig::default().traffic_class(CLASS);
    // HTTP/2's client preface and an empty SETTINGS frame: the server answers with its
    // SETTINGS frame (9 bytes of header at least).
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    let capture = Capture::open(&link.netdev);
    let mut blocking = RdmaStream::connect_with(at, &config).expect("connect to the peer");
    let first = within(move || {
        blocking.write_all(PREFACE)?;
        let mut frame = [0; 9];
        blocking.read_exact(&mut frame).map(|()| frame)
    });
    assert_eq!(
        first[3], 4,
        "the server's first frame is its SETTINGS: {first:?}"
    );
    assert_class(&capture, "blocking byte stream", CLASS, true);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("a runtime");
    let first = within(move || {
        runtime.block_on(async {
            let mut stream =
                rdma_verbs::tokio::stream::RdmaStream::connect_with(at, &config).await?;
            stream.write_all(PREFACE).await?;
            let mut frame = [0; 9];
            stream.read_exact(&mut frame).await.map(|_| frame)
        })
    });
    assert_eq!(
        first[3], 4,
        "the server's first frame is its SETTINGS: {first:?}"
    );
    assert_class(&capture, "tokio byte stream", CLASS, true);
    assert_eq!(peer.ask("stop"), "stopped");
}

/// rdma-core's perftest: `ib_write_bw --tclass` (server on the peer, client here, both
/// with the flag), a short run.
#[test]
fn c_ib_write_bw_tclass_is_on_the_wire() {
    ib_write_bw_tclass_is_on_the_wire(true);
}

/// Our `ib_write_bw --tclass`, the same run: the same byte on the wire as C's.
#[test]
fn our_ib_write_bw_tclass_is_on_the_wire() {
    ib_write_bw_tclass_is_on_the_wire(false);
}

/// `ib_write_bw --tclass` between the hosts, rdma-core's (`c`) or ours on both ends.
fn ib_write_bw_tclass_is_on_the_wire(c: bool) {
    let (name, tool) = if c {
        ("C ib_write_bw", rdma_verbs_test_kit::c_tool("ib_write_bw"))
    } else {
        ("our ib_write_bw", rdma_verbs_test_kit::tool("ib_write_bw"))
    };
    let link = Link::from_env();
    let mut peer = PeerTurn::take(&link);
    let host = Host::open(&link.device, link.local);
    let class = format!("--tclass={CLASS}");
    let run = ["-s", "4096", "-n", "50", &class];
    let peer_tool = if c { "c:ib_write_bw" } else { "ib_write_bw" };
    let answer = peer.ask(&format!("tool {peer_tool} {}", run.join(" ")));
    let port = answer
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("peer: {answer}"))
        .to_owned();
    let capture = Capture::open(&link.netdev);
    let args = [
        "-d",
        &link.device,
        "-x",
        &host.gid_index.to_string(),
        "-p",
        &port,
    ]
    .into_iter()
    .chain(run)
    .chain([link.peer.to_string().as_str()])
    .map(String::from)
    .collect::<Vec<_>>();
    let out =
        Running::spawn(&format!("{name} client"), &tool, &args).finish(Instant::now() + GUARD);
    assert!(out.status.success(), "{}\n{}", out.status, out.context());
    assert_eq!(
        peer.wire().recv("the end of the server"),
        "exit 0",
        "{name} server"
    );
    assert_class(&capture, &format!("{name} --tclass"), CLASS, true);
}

/// Runs `work` on a thread of its own and returns its result, failing the test if it
/// fails or takes longer than [`GUARD`] (a read that never ends).
fn within<T: Send + 'static>(work: impl FnOnce() -> std::io::Result<T> + Send + 'static) -> T {
    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(work());
    });
    result
        .recv_timeout(GUARD)
        .unwrap_or_else(|_| panic!("no answer within {GUARD:?}"))
        .unwrap_or_else(|e| panic!("the stream failed: {e}"))
}
