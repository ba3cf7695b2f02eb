//! rdma_cm on the CM device (run through `scripts/with-rdma`, which names it in
//! `$WITH_RDMA_CM_DEVICE` and its address in `$WITH_RDMA_CM_ADDR`): a loopback connect and
//! accept with private data both ways and a send over the connected QPs, a connect nobody
//! listens for, a reject with private data, private data over the limit, a port in use and
//! `rdma_getaddrinfo`. A missing device or address is a failure, not a skip.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ibverbs::cm::{
    getaddrinfo, private_data_limit, AddrHints, CmEvent, CmEventKind, CmId, ConnParam,
    EventChannel, Message, PortSpace,
};
use ibverbs::{
    AccessFlags, CompletionQueue, Error, ProtectionDomain, RecvRequest, SendRequest, WorkCompletion,
};
use ibverbs_test_kit::cm_addr;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The next event on `channel`, within [`TIMEOUT`].
fn next_event(channel: &EventChannel) -> CmEvent {
    channel
        .get_event_timeout(TIMEOUT)
        .expect("rdma_get_cm_event")
        .expect("an event within the timeout")
}

/// A listening id on the CM address, on a port the CM picks.
fn listener(channel: &EventChannel) -> (CmId, SocketAddr) {
    let id = channel.create_id(PortSpace::Tcp).expect("rdma_create_id");
    id.bind(SocketAddr::new(cm_addr(), 0))
        .expect("rdma_bind_addr");
    id.listen(4).expect("rdma_listen");
    let addr = id.local_addr().expect("a bound id has an address");
    assert_ne!(addr.port(), 0, "bind picks a port");
    (id, addr)
}

/// The verbs objects of one side of a connection.
struct Side {
    pd: ProtectionDomain,
    cq: CompletionQueue,
}

/// PD, CQ and an RC QP on `id`'s device.
fn add_qp(id: &mut CmId) -> Side {
    let ctx = id.context().expect("the id's device context");
    let pd = ctx.alloc_pd().expect("ibv_alloc_pd");
    let cq = ctx.create_cq(16, None).expect("ibv_create_cq");
    let caps = ibverbs::ffi::ibv_qp_cap {
        max_send_wr: 8,
        max_recv_wr: 8,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    id.create_qp(&pd, &cq, &cq, caps).expect("rdma_create_qp");
    Side { pd, cq }
}

/// A client id resolved (address and route) to `dst`, with a QP.
fn client(channel: &EventChannel, dst: SocketAddr) -> (CmId, Side) {
    let mut id = channel.create_id(PortSpace::Tcp).expect("rdma_create_id");
    id.resolve_addr(None, dst, Duration::from_secs(2))
        .expect("rdma_resolve_addr");
    let ev = next_event(channel);
    assert!(matches!(ev.kind, CmEventKind::AddrResolved), "{ev:?}");
    assert!(ev.is_for(&id));
    id.resolve_route(Duration::from_secs(2))
        .expect("rdma_resolve_route");
    let ev = next_event(channel);
    assert!(matches!(ev.kind, CmEventKind::RouteResolved), "{ev:?}");
    let side = add_qp(&mut id);
    (id, side)
}

/// One completion of `cq`, successful, within [`TIMEOUT`].
fn one_completion(cq: &CompletionQueue) -> WorkCompletion {
    let mut wc = [WorkCompletion::default()];
    let done = cq.poll_wait(&mut wc, Some(TIMEOUT)).expect("ibv_poll_cq");
    assert_eq!(done.len(), 1, "a completion within {TIMEOUT:?}");
    done[0].ok().expect("a successful completion");
    wc[0]
}

/// `data` padded with zeroes to `len` bytes: how IB and RoCE deliver private data.
fn padded(data: &[u8], len: usize) -> Vec<u8> {
    let mut v = data.to_vec();
    v.resize(len, 0);
    v
}

#[test]
fn connect_accept_with_private_data_then_send() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let (cid, cside) = client(&cchan, addr);
    let hello = b"hello from the client";
    cid.connect(&ConnParam {
        private_data: hello,
        ..ConnParam::default()
    })
    .expect("rdma_connect");

    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest {
        id: mut sid,
        private_data,
        ..
    } = ev.kind
    else {
        panic!("expected a connect request, got {ev:?}");
    };
    let connect_limit = private_data_limit(Message::Connect, PortSpace::Tcp);
    assert_eq!(private_data, padded(hello, connect_limit));
    assert_eq!(sid.peer_addr().map(|a| a.ip()), Some(cm_addr()));
    let sside = add_qp(&mut sid);
    let mut rmr = sside.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    rmr.write(0, &[0; 64]).unwrap();
    {
        let sge = [rmr.sge(..).unwrap()];
        let qp = sid.qp().expect("the QP just made");
        qp.post_recv(&mut [RecvRequest::new(7, &sge)])
            .expect("ibv_post_recv");
    }
    let welcome = b"welcome from the server";
    sid.accept(&ConnParam {
        private_data: welcome,
        ..ConnParam::default()
    })
    .expect("rdma_accept");

    let ev = next_event(&cchan);
    let CmEventKind::Established { private_data } = ev.kind else {
        panic!("expected established on the client, got {ev:?}");
    };
    let accept_limit = private_data_limit(Message::Accept, PortSpace::Tcp);
    assert_eq!(private_data, padded(welcome, accept_limit));
    let ev = next_event(&schan);
    assert!(matches!(ev.kind, CmEventKind::Established { .. }), "{ev:?}");
    assert!(ev.is_for(&sid));

    let mut smr = cside.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    smr.write(0, b"over the connected QPs").unwrap();
    {
        let sge = [smr.sge(..22).unwrap()];
        let qp = cid.qp().expect("the client's QP");
        qp.post_send(&mut [SendRequest::send(9, &sge).signaled()])
            .expect("ibv_post_send");
    }
    assert_eq!(one_completion(&cside.cq).wr_id(), 9);
    let wc = one_completion(&sside.cq);
    assert_eq!((wc.wr_id(), wc.byte_len()), (7, 22));
    let mut got = [0; 22];
    rmr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"over the connected QPs");

    // The client's DREQ reaches the server, whose disconnect (the DREP) completes the
    // client's.
    cid.disconnect().expect("rdma_disconnect");
    let ev = next_event(&schan);
    assert!(matches!(ev.kind, CmEventKind::Disconnected), "{ev:?}");
    sid.disconnect().expect("rdma_disconnect on the server");
    let ev = next_event(&cchan);
    assert!(matches!(ev.kind, CmEventKind::Disconnected), "{ev:?}");
}

#[test]
fn connect_where_nobody_listens_is_rejected() {
    let cchan = EventChannel::new().unwrap();
    // A port of ours that nobody listens on: bound, then dropped.
    let addr = {
        let schan = EventChannel::new().unwrap();
        listener(&schan).1
    };
    let (cid, _side) = client(&cchan, addr);
    cid.connect(&ConnParam::default()).expect("rdma_connect");
    let ev = next_event(&cchan);
    match ev.kind {
        CmEventKind::Rejected {
            reason,
            reason_text,
            ..
        } => {
            assert_eq!(reason, 8, "{reason_text}");
            assert_eq!(ev.status, reason);
        }
        other => panic!("expected a reject, got {other:?}"),
    }
}

#[test]
fn reject_with_private_data() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let (cid, _side) = client(&cchan, addr);
    cid.connect(&ConnParam::default()).expect("rdma_connect");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    sid.reject(b"not today").expect("rdma_reject");
    let ev = next_event(&cchan);
    let CmEventKind::Rejected {
        reason,
        private_data,
        ..
    } = ev.kind
    else {
        panic!("expected a reject, got {ev:?}");
    };
    assert_eq!(reason, 28, "consumer defined");
    let reject_limit = private_data_limit(Message::Reject, PortSpace::Tcp);
    assert_eq!(private_data, padded(b"not today", reject_limit));
}

/// Whether `err` is the private data length check with `value` over `max`.
fn is_too_long(err: &Error, value: u64, max: u64) -> bool {
    matches!(err, Error::OutOfRange { what: "private data length", value: v, max: m, .. }
        if *v == value && *m == max)
}

#[test]
fn private_data_over_the_limit_is_refused_before_the_call() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let (cid, _side) = client(&cchan, addr);
    let long = [0x5a; 300];
    for (msg, max) in [
        (Message::Connect, 56),
        (Message::Accept, 196),
        (Message::Reject, 148),
    ] {
        assert_eq!(private_data_limit(msg, PortSpace::Tcp), max);
    }
    let err = cid
        .connect(&ConnParam {
            private_data: &long[..57],
            ..ConnParam::default()
        })
        .unwrap_err();
    assert!(is_too_long(&err, 57, 56), "{err}");
    let err = cid
        .connect(&ConnParam {
            retry_count: 8,
            ..ConnParam::default()
        })
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "retry count",
                value: 8,
                ..
            }
        ),
        "{err}"
    );
    // Nothing reached the peer: no connect request within a second.
    let none = schan.get_event_timeout(Duration::from_secs(1)).unwrap();
    assert!(none.is_none(), "{none:?}");

    // Exactly at the limit goes through; the server's accept and reject are checked too.
    cid.connect(&ConnParam {
        private_data: &long[..56],
        ..ConnParam::default()
    })
    .expect("rdma_connect with 56 bytes");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let err = sid
        .accept(&ConnParam {
            private_data: &long[..197],
            ..ConnParam::default()
        })
        .unwrap_err();
    assert!(is_too_long(&err, 197, 196), "{err}");
    let err = sid.reject(&long[..149]).unwrap_err();
    assert!(is_too_long(&err, 149, 148), "{err}");
    // The request is still pending: it can be rejected properly.
    sid.reject(&long[..148])
        .expect("rdma_reject with 148 bytes");
    let ev = next_event(&cchan);
    assert!(
        matches!(ev.kind, CmEventKind::Rejected { reason: 28, .. }),
        "{ev:?}"
    );
}

#[test]
fn listening_on_a_port_in_use_fails() {
    let channel = EventChannel::new().unwrap();
    let (_listen, addr) = listener(&channel);
    let other = channel.create_id(PortSpace::Tcp).unwrap();
    let err = other.bind(addr).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Verb {
                verb: "rdma_bind_addr",
                ..
            }
        ) && err.raw_os_error() == Some(libc::EADDRINUSE),
        "{err}"
    );
}

#[test]
fn getaddrinfo_resolves_numeric_and_fails_on_unknown_names() {
    let hints = AddrHints {
        passive: true,
        numeric_host: true,
        port_space: Some(PortSpace::Tcp),
    };
    let ip = cm_addr().to_string();
    let found = getaddrinfo(Some(&ip), Some("7471"), &hints).expect("rdma_getaddrinfo");
    let want = SocketAddr::new(cm_addr(), 7471);
    assert!(found.iter().any(|ai| ai.src == Some(want)), "{found:?}");

    let err = getaddrinfo(
        Some("no-such-host.invalid"),
        Some("7471"),
        &AddrHints::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Verb {
                verb: "rdma_getaddrinfo",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn timeouts_are_bounded() {
    let channel = EventChannel::new().unwrap();
    let t0 = Instant::now();
    assert!(channel
        .get_event_timeout(Duration::from_millis(200))
        .unwrap()
        .is_none());
    assert!(t0.elapsed() < Duration::from_secs(2));
}
