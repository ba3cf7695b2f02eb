//! Two RC QPs of one device connected to each other, however the device connects them: by
//! hand (`ibv_modify_qp` to RTR and RTS) on InfiniBand and RoCE, through rdma_cm on iWARP,
//! which connects QPs no other way. A test does not see which: it gets the two QPs and a
//! [`Link`] to keep while it uses them.

use std::net::SocketAddr;
use std::time::Duration;

use rdma_verbs::cm::{CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::{ConnectOptions, PreparedQueuePair, QueuePair, Transport};

use crate::device::cm_addr;

/// How long each rdma_cm step may take.
const STEP: Duration = Duration::from_secs(10);

/// What keeps a connection up: on iWARP, the rdma_cm ids that connected the QPs (their
/// destruction closes the connection, which moves the QPs to ERROR); nothing on the other
/// transports. Keep it while the QPs are used.
#[must_use = "the QPs of an iWARP connection go to ERROR when its Link drops"]
pub struct Link {
    /// The listener, the client's id and the server's, and their channels.
    _ids: Option<([CmId; 3], [EventChannel; 2])>,
}

impl Link {
    /// A link that holds nothing: for QPs that need none (UD QPs, QPs connected by hand).
    pub fn none() -> Link {
        Link { _ids: None }
    }
}

/// Connects two RC (or UC) QPs of one device to each other with the default options: by
/// hand on InfiniBand and RoCE ([`PreparedQueuePair::connect`]); on iWARP through rdma_cm
/// on the address of [`cm_addr`] (the device's), `a` as the client and `b` as the server,
/// with as many reads outstanding each way as the device allows. Panics if a step fails.
pub fn connect_pair(a: PreparedQueuePair, b: PreparedQueuePair) -> (QueuePair, QueuePair, Link) {
    if a.pd().context().transport() != Transport::Iwarp {
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let opts = ConnectOptions::new();
        let a = a
            .connect(&eb, &opts)
            .expect("connecting the first QP (RTR, RTS)");
        let b = b
            .connect(&ea, &opts)
            .expect("connecting the second QP (RTR, RTS)");
        return (a, b, Link::none());
    }
    let attr = a.pd().context().query_device().expect("ibv_query_device");
    let depth = |n: u32| u8::try_from(n).unwrap_or(u8::MAX);
    let params = ConnParam::new()
        .max_rd_atomic(depth(attr.max_qp_init_rd_atom.min(attr.max_qp_rd_atom)))
        .max_dest_rd_atomic(depth(attr.max_qp_rd_atom.min(attr.max_qp_init_rd_atom)));

    let (cchan, schan) = (channel(), channel());
    let listen = schan.create_id(PortSpace::Tcp).expect("rdma_create_id");
    listen
        .bind(SocketAddr::new(cm_addr(), 0))
        .expect("rdma_bind_addr");
    listen.listen(1).expect("rdma_listen");
    let addr = listen.local_addr().expect("a bound id has an address");

    let mut client = cchan.create_id(PortSpace::Tcp).expect("rdma_create_id");
    client
        .resolve_addr(None, addr, STEP)
        .expect("rdma_resolve_addr");
    expect(&cchan, "the address resolved", |k| {
        matches!(k, CmEventKind::AddrResolved)
    });
    client.resolve_route(STEP).expect("rdma_resolve_route");
    expect(&cchan, "the route resolved", |k| {
        matches!(k, CmEventKind::RouteResolved)
    });
    client.set_qp(a).expect("the first QP as the client's");
    client.connect(&params).expect("rdma_connect");

    let ev = next(&schan, "the connect request");
    let CmEventKind::ConnectRequest { id: mut server, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    server.set_qp(b).expect("the second QP as the server's");
    server.accept(&params).expect("rdma_accept");
    expect(&cchan, "the client's connection established", |k| {
        matches!(k, CmEventKind::Established { .. })
    });
    expect(&schan, "the server's connection established", |k| {
        matches!(k, CmEventKind::Established { .. })
    });
    let a = client.take_qp().expect("the client's QP");
    let b = server.take_qp().expect("the server's QP");
    let link = Link {
        _ids: Some(([listen, client, server], [cchan, schan])),
    };
    (a, b, link)
}

/// A new event channel (`rdma_create_event_channel`).
fn channel() -> EventChannel {
    EventChannel::new().expect("rdma_create_event_channel")
}

/// The next event of `channel` (`rdma_get_cm_event`), within [`STEP`]; `what` names it.
fn next(channel: &EventChannel, what: &str) -> rdma_verbs::cm::CmEvent {
    channel
        .get_event_timeout(STEP)
        .expect("rdma_get_cm_event")
        .unwrap_or_else(|| panic!("no event within {STEP:?}: expected {what}"))
}

/// Takes the next event of `channel`, which must be `what` (`is`).
fn expect(channel: &EventChannel, what: &str, is: impl Fn(&CmEventKind) -> bool) {
    let ev = next(channel, what);
    assert!(is(&ev.kind), "expected {what}, got {ev:?}");
}
