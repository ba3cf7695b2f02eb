//! rdma_cm on the CM device (run through `scripts/with-rdma`, which names it in
//! `$WITH_RDMA_CM_DEVICE` and its address in `$WITH_RDMA_CM_ADDR`): a loopback connect and
//! accept with private data both ways and a send over the connected QPs, a connect nobody
//! listens for, a reject with private data, private data over the limit, a port in use,
//! addresses that do not resolve (within the timeout), a peer process killed after the
//! connection is up, `rdma_getaddrinfo`; UD over rdma_cm (datagrams both ways; private
//! data over the UD limits: [`ud`]); the id's options, port and channel ([`options`]); its
//! QP ([`qp`]); UD multicast joins ([`mcast`]); iWARP's rules ([`iwarp`]); the blocking byte
//! stream ([`stream`]) and its listener against stalling peers and exhaustion
//! ([`stream_listener`]). A missing device
//! or address is a failure, not a skip.

mod af_ib;
mod iwarp;
mod mcast;
mod options;
mod qp;
mod stream;
mod stream_listener;
mod ud;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use rdma_verbs::cm::{
    getaddrinfo, private_data_limit, AddrFamily, AddrHints, CmEvent, CmEventKind, CmId, ConnParam,
    EventChannel, Message, PortSpace,
};
use rdma_verbs::{
    AccessFlags, AsRaw, CompletionQueue, Error, ProtectionDomain, QpType, RecvRequest, SendRequest,
    WcStatus, WorkCompletion,
};
use rdma_verbs_test_kit::{
    cm_addr, delivered_private_data, peer_reject_reason, provider, Provider, Running,
};

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
    listener_in(channel, PortSpace::Tcp)
}

/// A listening id in `ps` on the CM address, on a port the CM picks.
fn listener_in(channel: &EventChannel, ps: PortSpace) -> (CmId, SocketAddr) {
    let id = channel.create_id(ps).expect("rdma_create_id");
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

/// PD, CQ and a QP on `id`'s device: RC, or UD in the UDP port space.
fn add_qp(id: &mut CmId) -> Side {
    let ctx = id.context().expect("the id's device context");
    let pd = ctx.alloc_pd().expect("ibv_alloc_pd");
    let cq = ctx.create_cq(16, None).expect("ibv_create_cq");
    let qp_type = match id.port_space() {
        PortSpace::Udp => QpType::Ud,
        _ => QpType::Rc,
    };
    let qp = pd
        .create_qp(qp_type, &cq, &cq)
        .max_send_wr(8)
        .max_recv_wr(8);
    id.create_qp(qp).expect("rdma_create_qp_ex");
    Side { pd, cq }
}

/// A client id resolved (address and route) to `dst`, with a QP.
fn client(channel: &EventChannel, dst: SocketAddr) -> (CmId, Side) {
    client_in(channel, dst, PortSpace::Tcp)
}

/// A client id in `ps` resolved (address and route) to `dst`, with a QP (UD in UDP).
fn client_in(channel: &EventChannel, dst: SocketAddr, ps: PortSpace) -> (CmId, Side) {
    let mut id = channel.create_id(ps).expect("rdma_create_id");
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

/// The `Established` events of a connection, the client's (on `client`) then the server's
/// (on `server`), each within [`TIMEOUT`].
fn both_established(client: &EventChannel, server: &EventChannel) {
    for (side, channel) in [("client", client), ("server", server)] {
        let ev = next_event(channel);
        assert!(
            matches!(ev.kind, CmEventKind::Established { .. }),
            "{side}: {ev:?}"
        );
    }
}

/// Waits (up to 10 s) until `channel` has an unread event, without taking it.
fn wait_unread(channel: &EventChannel) {
    let mut pfd = libc::pollfd {
        // SAFETY: only polled; the event is taken by the channel.
        fd: unsafe { channel.raw_fd() },
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: pfd is a valid pollfd for the duration of the call.
    let ready = unsafe { libc::poll(&mut pfd, 1, 10_000) };
    assert_eq!(ready, 1, "no event in 10 s");
}

/// One completion of `cq`, successful, within [`TIMEOUT`].
fn one_completion(cq: &CompletionQueue) -> WorkCompletion {
    let mut wc = [WorkCompletion::default()];
    let done = cq.poll_wait(&mut wc, Some(TIMEOUT)).expect("ibv_poll_cq");
    assert_eq!(done.len(), 1, "a completion within {TIMEOUT:?}");
    done[0].ok().expect("a successful completion");
    wc[0]
}

#[test]
fn connect_accept_with_private_data_then_send() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let (cid, cside) = client(&cchan, addr);
    let hello = b"hello from the client";
    cid.connect(&ConnParam::new().private_data(hello))
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
    assert_eq!(private_data, delivered_private_data(hello, connect_limit));
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
    sid.accept(&ConnParam::new().private_data(welcome))
        .expect("rdma_accept");

    let ev = next_event(&cchan);
    let CmEventKind::Established { private_data, .. } = ev.kind else {
        panic!("expected established on the client, got {ev:?}");
    };
    let accept_limit = private_data_limit(Message::Accept, PortSpace::Tcp);
    assert_eq!(private_data, delivered_private_data(welcome, accept_limit));
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
    if provider() == Provider::Siw {
        // iWARP's connect is a TCP connect, refused at once by the peer's stack.
        let err = cid.connect(&ConnParam::new()).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ECONNREFUSED), "{err}");
        return;
    }
    cid.connect(&ConnParam::new()).expect("rdma_connect");
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
    cid.connect(&ConnParam::new()).expect("rdma_connect");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    sid.reject(b"not today").expect("rdma_reject");
    let err = next_event(&cchan)
        .expect_kind("rdma_connect", |k| {
            matches!(k, CmEventKind::Established { .. })
        })
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ECONNREFUSED), "{err}");
    let Error::Rejected {
        verb,
        reason,
        reason_text,
        private_data,
    } = err
    else {
        panic!("expected a reject, got {err:?}");
    };
    assert_eq!((verb, reason), ("rdma_connect", peer_reject_reason()));
    assert!(
        reason_text.contains("rejected by the peer"),
        "{reason_text}"
    );
    let reject_limit = private_data_limit(Message::Reject, PortSpace::Tcp);
    assert_eq!(
        private_data,
        delivered_private_data(b"not today", reject_limit)
    );
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
        .connect(&ConnParam::new().private_data(&long[..57]))
        .unwrap_err();
    assert!(is_too_long(&err, 57, 56), "{err}");
    let err = cid.connect(&ConnParam::new().retry_cnt(8)).unwrap_err();
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
    cid.connect(&ConnParam::new().private_data(&long[..56]))
        .expect("rdma_connect with 56 bytes");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let err = sid
        .accept(&ConnParam::new().private_data(&long[..197]))
        .unwrap_err();
    assert!(is_too_long(&err, 197, 196), "{err}");
    let err = sid.reject(&long[..149]).unwrap_err();
    assert!(is_too_long(&err, 149, 148), "{err}");
    // The request is still pending: it can be rejected properly.
    sid.reject(&long[..148])
        .expect("rdma_reject with 148 bytes");
    let ev = next_event(&cchan);
    assert!(
        matches!(ev.kind, CmEventKind::Rejected { reason, .. } if reason == peer_reject_reason()),
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
    let hints = AddrHints::new()
        .passive(true)
        .numeric_host(true)
        .port_space(PortSpace::Tcp)
        .qp_type(QpType::Rc);
    let ip = cm_addr().to_string();
    let found = getaddrinfo(Some(&ip), Some("7471"), &hints).expect("rdma_getaddrinfo");
    let want = SocketAddr::new(cm_addr(), 7471);
    let entry = found.iter().find(|ai| ai.src == Some(want));
    let entry = entry.unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(entry.port_space, Some(PortSpace::Tcp));
    assert_eq!(entry.qp_type, Some(QpType::Rc));

    // A destination paired with a source given as a hint, as C programs do for `-b`.
    let active = hints.passive(false).src(SocketAddr::new(cm_addr(), 0));
    let found = getaddrinfo(Some(&ip), Some("7471"), &active).expect("rdma_getaddrinfo");
    assert!(
        found
            .iter()
            .any(|ai| ai.dst == Some(want) && ai.src.map(|s| s.ip()) == Some(cm_addr())),
        "{found:?}"
    );

    // The family: the CM address (IPv4) is not an IPv6 one.
    let v6 = hints.family(AddrFamily::Inet6);
    assert!(
        getaddrinfo(Some(&ip), Some("7471"), &v6).is_err(),
        "an IPv4 address found as IPv6"
    );
    let v4 = hints.family(AddrFamily::Inet);
    getaddrinfo(Some(&ip), Some("7471"), &v4).expect("found as IPv4");

    let err = getaddrinfo(
        Some("no-such-host.invalid"),
        Some("7471"),
        &AddrHints::new(),
    )
    .unwrap_err();
    // Typed with glibc's code and text: EAI_NONAME where the VM has no resolver, EAI_AGAIN
    // where one does not answer.
    match &err {
        Error::AddrInfo { code, message } => {
            assert!(
                [libc::EAI_NONAME, libc::EAI_AGAIN].contains(code),
                "EAI code {code}: {message}"
            );
            assert!(!message.is_empty());
        }
        other => panic!("not an AddrInfo error: {other}"),
    }
}

#[test]
fn timeouts_are_bounded() {
    let channel = EventChannel::new().unwrap();
    let t0 = Instant::now();
    assert!(channel
        .get_event_timeout(Duration::from_millis(200))
        .unwrap()
        .is_none());
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(200) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    // A timeout with no end in the clock's range (it panicked adding it to the clock): an
    // event already there is returned.
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve_addr(
        None,
        SocketAddr::new(cm_addr(), 7471),
        Duration::from_secs(2),
    )
    .unwrap();
    let event = channel.get_event_timeout(Duration::MAX).unwrap().unwrap();
    assert!(
        matches!(event.kind, CmEventKind::AddrResolved),
        "{:?}",
        event.kind
    );
}

/// Each id has a handle of its own: ids made where dropped ones were (librdmacm reuses
/// their memory) match none of the dropped ones' handles. Before, a handle was the id's
/// address, and a stale handle (or event) matched the new id.
#[test]
fn a_new_id_never_matches_a_dropped_ids_handle() {
    let channel = EventChannel::new().unwrap();
    let mut dropped = Vec::new();
    let mut same_address = 0;
    for _ in 0..32 {
        let id = channel.create_id(PortSpace::Tcp).unwrap();
        assert!(dropped.iter().all(|&(_, handle)| handle != id.handle()));
        same_address += dropped
            .iter()
            .filter(|&&(at, _)| at == id.as_raw().as_ptr())
            .count();
        dropped.push((id.as_raw().as_ptr(), id.handle()));
    }
    assert!(
        same_address > 0,
        "no id reused a dropped one's memory: nothing was tested"
    );
}

/// What `EventChannel::raw_fd` is for: a poll loop of the caller's waits for its
/// readiness, and the channel takes (and acknowledges) the event.
#[test]
fn the_raw_fd_waits_for_readiness_and_the_channel_takes_the_event() {
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    let dst = SocketAddr::new(cm_addr(), 7471);
    id.resolve_addr(None, dst, TIMEOUT).unwrap();
    wait_unread(&channel);
    // SAFETY: only its descriptor flags are read.
    let flags = unsafe { libc::fcntl(channel.raw_fd(), libc::F_GETFD) };
    assert!(
        flags >= 0 && flags & libc::FD_CLOEXEC != 0,
        "closed on exec: {flags}"
    );
    let event = channel.get_event_timeout(Duration::ZERO).unwrap();
    let event = event.expect("the event the fd was readable for");
    assert!(event.is_for(&id) && matches!(event.kind, CmEventKind::AddrResolved));
    drop((id, channel));
}

#[test]
fn addresses_that_do_not_resolve_fail_within_the_timeout() {
    // No route at all (TEST-NET-3), and a neighbour on the CM device's subnet that nobody
    // answers ARP for.
    let IpAddr::V4(own) = cm_addr() else {
        panic!("the CM address is not IPv4");
    };
    let mut silent = own.octets();
    silent[3] = if silent[3] == 77 { 78 } else { 77 };
    let timeout = Duration::from_millis(500);
    for dst in [Ipv4Addr::new(203, 0, 113, 1), Ipv4Addr::from(silent)] {
        let channel = EventChannel::new().unwrap();
        let id = channel.create_id(PortSpace::Tcp).unwrap();
        let t0 = Instant::now();
        let outcome = match id.resolve_addr(None, SocketAddr::new(dst.into(), 7471), timeout) {
            // Refused at once: a typed error naming the call.
            Err(Error::Verb {
                verb: "rdma_resolve_addr",
                source,
            }) => {
                assert!(source.raw_os_error().is_some(), "{dst}: {source}");
                format!("rdma_resolve_addr: {source}")
            }
            Err(other) => panic!("{dst}: {other}"),
            // Or an address error event, within the timeout (and a scheduling margin).
            Ok(()) => {
                let ev = next_event(&channel);
                assert!(matches!(ev.kind, CmEventKind::AddrError), "{dst}: {ev:?}");
                assert!(ev.status < 0, "{dst}: an errno: {ev:?}");
                format!("{} {}", ev.kind.c_name(), ev.status)
            }
        };
        let took = t0.elapsed();
        eprintln!("{dst}: {outcome} after {took:?}");
        assert!(took < timeout + Duration::from_secs(1), "{dst}: {took:?}");
    }
}

/// The variable that gives [`killed_peer_connects`] the server's address.
const PEER_SERVER: &str = "CM_TEST_PEER_SERVER";

/// The client of [`peer_killed_after_establishment_disconnects_and_flushes`], which runs
/// it in a process of its own and kills it once connected; nothing without its variable.
#[test]
#[ignore = "the peer process of peer_killed_after_establishment_disconnects_and_flushes"]
fn killed_peer_connects() {
    let Ok(server) = std::env::var(PEER_SERVER) else {
        return;
    };
    let channel = EventChannel::new().unwrap();
    let (id, _side) = client(&channel, server.parse().expect("an address"));
    id.connect(&ConnParam::new()).expect("rdma_connect");
    let ev = next_event(&channel);
    assert!(matches!(ev.kind, CmEventKind::Established { .. }), "{ev:?}");
    // Killed here.
    std::thread::sleep(TIMEOUT * 6);
    panic!("not killed");
}

#[test]
fn peer_killed_after_establishment_disconnects_and_flushes() {
    let channel = EventChannel::new().unwrap();
    let (_listen, addr) = listener(&channel);
    let exe = std::env::current_exe().expect("this test binary");
    let peer = Running::start(
        "peer",
        Command::new(exe)
            .args([
                "--ignored",
                "--exact",
                "killed_peer_connects",
                "--nocapture",
            ])
            .env(PEER_SERVER, addr.to_string()),
    );
    let ev = next_event(&channel);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let side = add_qp(&mut sid);
    let mr = side.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    {
        let sge = [mr.sge(..).unwrap()];
        let qp = sid.qp().expect("the QP just made");
        for wr_id in [1, 2] {
            qp.post_recv(&mut [RecvRequest::new(wr_id, &sge)])
                .expect("ibv_post_recv");
        }
    }
    sid.accept(&ConnParam::new()).expect("rdma_accept");
    let ev = next_event(&channel);
    assert!(matches!(ev.kind, CmEventKind::Established { .. }), "{ev:?}");

    peer.kill();
    // The kernel destroys the dead process's id, which sends the DREQ.
    let ev = next_event(&channel);
    assert!(matches!(ev.kind, CmEventKind::Disconnected), "{ev:?}");
    assert!(ev.is_for(&sid));
    // Our side of the disconnect moves the QP to the error state: the receives flush.
    sid.disconnect().expect("rdma_disconnect");
    let mut flushed = Vec::new();
    while flushed.len() < 2 {
        let mut wc = [WorkCompletion::default(); 2];
        let got = side
            .cq
            .poll_wait(&mut wc, Some(TIMEOUT))
            .expect("ibv_poll_cq");
        assert!(!got.is_empty(), "the receives flushed within {TIMEOUT:?}");
        flushed.extend(got.iter().map(|wc| (wc.wr_id(), wc.status())));
    }
    assert_eq!(
        flushed,
        [(1, WcStatus::WR_FLUSH_ERR), (2, WcStatus::WR_FLUSH_ERR)]
    );
}
