//! The id's settings (`rdma_set_option`), its port (`port_num`) and its channel
//! (`rdma_migrate_id`).

use std::net::SocketAddr;
use std::time::Duration;

use rdma_verbs::cm::{CmEventKind, CmOption, ConnParam, EventChannel, PortSpace};
use rdma_verbs::Error;
use rdma_verbs_test_kit::{cm_addr, provider_has, Need};

use super::{add_qp, both_established, client, listener, next_event, wait_unread};

/// Whether `err` is the typed refusal of `option` (C's name) for the id's state.
fn refused_in_state(err: &Error, option: &str) -> bool {
    matches!(err, Error::InvalidArgument { what, reason } if *what == option && reason.contains("EINVAL"))
}

#[test]
fn traffic_class_and_ack_timeout_reach_the_connected_qp() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let mut cid = cchan.create_id(PortSpace::Tcp).unwrap();
    // Set before the route is resolved: the route (and so the QP's traffic class) takes
    // the TOS, the QP's RTS transition the ACK timeout.
    cid.set_option(CmOption::TrafficClass(32))
        .expect("RDMA_OPTION_ID_TOS");
    cid.set_option(CmOption::AckTimeout(17))
        .expect("RDMA_OPTION_ID_ACK_TIMEOUT");
    cid.resolve_addr(None, addr, Duration::from_secs(2))
        .unwrap();
    assert!(matches!(next_event(&cchan).kind, CmEventKind::AddrResolved));
    cid.resolve_route(Duration::from_secs(2)).unwrap();
    assert!(matches!(
        next_event(&cchan).kind,
        CmEventKind::RouteResolved
    ));
    let _cside = add_qp(&mut cid);
    cid.connect(&ConnParam::new()).unwrap();
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let _sside = add_qp(&mut sid);
    sid.accept(&ConnParam::new()).unwrap();
    both_established(&cchan, &schan);
    let attr = cid.qp().unwrap().query().unwrap();
    assert_eq!(attr.timeout, 17, "the ACK timeout set on the id");
    assert_eq!(
        attr.traffic_class, 32,
        "the TOS set on the id, as RoCE's traffic class"
    );
}

#[test]
fn options_out_of_range_or_port_space_are_refused_before_the_call() {
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    let err = id.set_option(CmOption::AckTimeout(32)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                value: 32,
                max: 31,
                ..
            }
        ),
        "{err:?}"
    );
    let ud = channel.create_id(PortSpace::Udp).unwrap();
    let err = ud.set_option(CmOption::AckTimeout(14)).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what, reason }
            if *what == "RDMA_OPTION_ID_ACK_TIMEOUT" && reason.contains("Udp")),
        "{err:?}"
    );
    // The UD id takes what UD has.
    ud.set_option(CmOption::TrafficClass(8))
        .expect("TOS on a UD id");
}

#[test]
fn options_in_the_wrong_state_are_typed_errors() {
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    id.set_option(CmOption::ReuseAddr(true))
        .expect("address reuse before bind");
    id.set_option(CmOption::AfOnly(false))
        .expect("AF-only before bind");
    id.bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    id.set_option(CmOption::AfOnly(true))
        .expect("AF-only while bound");
    let err = id.set_option(CmOption::ReuseAddr(false)).unwrap_err();
    assert!(
        refused_in_state(&err, "RDMA_OPTION_ID_REUSEADDR"),
        "{err:?}"
    );
    id.listen(1).unwrap();
    let err = id.set_option(CmOption::ReuseAddr(true)).unwrap_err();
    assert!(
        refused_in_state(&err, "RDMA_OPTION_ID_REUSEADDR"),
        "{err:?}"
    );
    let err = id.set_option(CmOption::AfOnly(false)).unwrap_err();
    assert!(refused_in_state(&err, "RDMA_OPTION_ID_AFONLY"), "{err:?}");
    // The refusals left the id working: a client still connects to it.
    let addr = id.local_addr().unwrap();
    let cchan = EventChannel::new().unwrap();
    let (cid, _cside) = client(&cchan, addr);
    cid.connect(&ConnParam::new()).unwrap();
    let ev = next_event(&channel);
    assert!(
        matches!(ev.kind, CmEventKind::ConnectRequest { .. }),
        "{ev:?}"
    );
}

#[test]
fn port_num_once_bound_to_a_device() {
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    assert_eq!(id.port_num(), None, "no device before bind");
    id.bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    assert_eq!(id.port_num(), Some(1), "rxe has one port");
    let ctx = id.context().unwrap();
    assert!(ctx.query_port(1).is_ok());
}

#[test]
fn migrated_ids_get_their_events_on_the_new_channel() {
    let (schan, old, new) = (
        EventChannel::new().unwrap(),
        EventChannel::new().unwrap(),
        EventChannel::new().unwrap(),
    );
    let (_listen, addr) = listener(&schan);
    let mut id = old.create_id(PortSpace::Tcp).unwrap();
    id.migrate_id(&new).expect("rdma_migrate_id");
    // The old channel may go: the id holds the new one.
    drop(old);
    id.resolve_addr(None, addr, Duration::from_secs(2)).unwrap();
    let ev = next_event(&new);
    assert!(matches!(ev.kind, CmEventKind::AddrResolved), "{ev:?}");
    assert!(ev.is_for(&id));
    // Back to a channel of its own, then a connection made on it.
    let back = EventChannel::new().unwrap();
    id.migrate_id(&back).unwrap();
    drop(new);
    id.resolve_route(Duration::from_secs(2)).unwrap();
    assert!(matches!(next_event(&back).kind, CmEventKind::RouteResolved));
    let _side = add_qp(&mut id);
    id.connect(&ConnParam::new()).unwrap();
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let _sside = add_qp(&mut sid);
    sid.accept(&ConnParam::new()).unwrap();
    assert!(matches!(
        next_event(&back).kind,
        CmEventKind::Established { .. }
    ));
}

/// A connect request pending on a listener's channel is lost if the listener migrates
/// (the kernel leaves the request's new id on the old channel): the migration is refused
/// until the request is read, and a request after the migration arrives on the new channel.
#[test]
fn a_listener_with_a_request_pending_migrates_only_once_it_is_read() {
    let (old, new, cchan) = (
        EventChannel::new().unwrap(),
        EventChannel::new().unwrap(),
        EventChannel::new().unwrap(),
    );
    let (mut listen, addr) = listener(&old);
    let (cid, _cside) = client(&cchan, addr);
    cid.connect(&ConnParam::new()).unwrap();
    wait_unread(&old);
    let err = listen.migrate_id(&new).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what: "CM id", reason } if reason.contains("unread event")),
        "{err:?}"
    );
    // Still on the old channel: the request is there, and accepted.
    let ev = next_event(&old);
    assert!(ev.is_for(&listen), "{ev:?}");
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let _sside = add_qp(&mut sid);
    sid.accept(&ConnParam::new()).unwrap();
    both_established(&cchan, &old);
    // Nothing unread now: the listener moves, and the next request comes on the new channel.
    listen.migrate_id(&new).expect("rdma_migrate_id");
    let (cid2, _cside2) = client(&cchan, addr);
    cid2.connect(&ConnParam::new()).unwrap();
    let ev = next_event(&new);
    assert!(ev.is_for(&listen), "{ev:?}");
    let CmEventKind::ConnectRequest { id: mut sid2, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let _sside2 = add_qp(&mut sid2);
    sid2.accept(&ConnParam::new()).unwrap();
    both_established(&cchan, &new);
}

#[test]
fn notify_comm_est_establishes_an_accepted_connection_the_peer_never_confirmed() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    use rdma_verbs::AsyncEventKind;

    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (listen, addr) = listener(&schan);
    // Kinds rdma_cm does not take, before librdmacm; an id with no connection under way,
    // by the kernel.
    let err = listen.notify(AsyncEventKind::PortActive).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidArgument {
                what: "rdma_notify event",
                ..
            }
        ),
        "{err:?}"
    );
    let err = listen.notify(AsyncEventKind::CommEst).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { what: "CM id", reason } if reason.contains("EINVAL")),
        "{err:?}"
    );

    // A client with no QP: its side gets ConnectResponse and sends no RTU (it would with
    // rdma_establish), so only the server's notify establishes the connection.
    let cid = cchan.create_id(PortSpace::Tcp).unwrap();
    cid.resolve_addr(None, addr, Duration::from_secs(2))
        .unwrap();
    assert!(matches!(next_event(&cchan).kind, CmEventKind::AddrResolved));
    cid.resolve_route(Duration::from_secs(2)).unwrap();
    assert!(matches!(
        next_event(&cchan).kind,
        CmEventKind::RouteResolved
    ));
    cid.connect(&ConnParam::new()).unwrap();
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let _sside = add_qp(&mut sid);
    sid.accept(&ConnParam::new()).unwrap();
    let ev = next_event(&cchan);
    assert!(
        matches!(ev.kind, CmEventKind::ConnectResponse { .. }),
        "{ev:?}"
    );
    assert!(
        schan
            .get_event_timeout(Duration::from_millis(200))
            .unwrap()
            .is_none(),
        "no RTU, no Established"
    );
    sid.notify(AsyncEventKind::CommEst)
        .expect("rdma_notify(IBV_EVENT_COMM_EST)");
    let ev = next_event(&schan);
    assert!(matches!(ev.kind, CmEventKind::Established { .. }), "{ev:?}");
    assert!(ev.is_for(&sid));
}
