//! The full `ibv_query_qp`: what a QP reports matches how it was built and connected; the
//! connect settings and routes out of their ranges, refused by name.

use rdma_verbs_test_kit::{assert_clean_drops, open};
use rdma_verbs_test_kit::{provider_has, Need};

use rdma_verbs::{ConnectOptions, Error, LinkLayer, Mtu, QpState, QpType, Route, DEFAULT_QKEY};

use crate::common::{Pair, ALL};

#[test]
fn query_qp_reports_an_rc_connection() {
    if !provider_has(Need::QpQuery) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let (a, b) = (p.a.query().unwrap(), p.b.query().unwrap());
    let port = p.pd.context().query_port(1).unwrap();
    assert_eq!((a.qp_type, a.state, a.port), (QpType::Rc, QpState::Rts, 1));
    assert_eq!(a.dest_qp_num, p.b.qp_num());
    assert_eq!(b.dest_qp_num, p.a.qp_num());
    // The PSNs each side chose: what the peer expects is what this side sends.
    assert_eq!(a.sq_psn, p.a.endpoint().psn);
    assert_eq!(a.rq_psn, p.b.endpoint().psn);
    assert_eq!(a.path_mtu, port.active_mtu);
    assert_eq!(a.access, ALL);
    // The route: RoCE, so a GRH to the peer's GID from the QP's GID index.
    assert!(a.is_global);
    assert_eq!(a.dest_gid, p.b.endpoint().gid);
    assert_eq!(a.sgid_index, p.a.gid_index());
    // ConnectOptions::new's: ACK timeout 14, 7 retries of each kind, RNR timer 12.
    assert_eq!(
        (a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer),
        (14, 7, 7, 12)
    );
    assert!(a.max_rd_atomic >= 1 && a.max_dest_rd_atomic >= 1);
    // The capabilities, at least what the create granted (rxe's query reports its whole
    // rings: 255 entries for 128).
    assert!(a.max_send_wr >= p.a.max_send_wr() && a.max_recv_wr >= p.a.max_recv_wr());
    assert_eq!(
        (a.max_send_sge, a.max_recv_sge),
        (p.a.max_send_sge(), p.a.max_recv_sge())
    );
    assert_eq!(a.max_inline_data, p.a.max_inline_data());
    assert!(!a.sq_sig_all && !a.sq_draining);

    // A state change shows at once.
    p.a.to_error().unwrap();
    assert_eq!(p.a.query().unwrap().state, QpState::Error);
    drop(p);
    assert_clean_drops();
}

#[test]
fn query_qp_reports_a_ud_qp_in_init_and_rts() {
    if !provider_has(Need::Ud) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let qp = pd
        .create_qp(QpType::Ud, &cq, &cq)
        .qkey(0x4242)
        .max_send_wr(8)
        .sq_sig_all(true)
        .build()
        .unwrap();
    let init = qp.query().unwrap();
    assert_eq!(
        (init.qp_type, init.state, init.qkey),
        (QpType::Ud, QpState::Init, 0x4242)
    );
    assert!(init.sq_sig_all && init.max_send_wr >= 8);
    let qp = qp.ready().unwrap();
    let rts = qp.query().unwrap();
    assert_eq!((rts.state, rts.qkey, rts.port), (QpState::Rts, 0x4242, 1));
    assert_eq!(rts.sq_psn, qp.endpoint().psn);
    drop(qp);

    let default_qkey = pd.create_qp(QpType::Ud, &cq, &cq).build().unwrap();
    assert_eq!(default_qkey.query().unwrap().qkey, DEFAULT_QKEY);
    drop(default_qkey);
    drop(pd);
    assert_clean_drops();
}

/// Every setting of `ConnectOptions` and its `Route` reaches the QP: `ibv_query_qp` reads
/// each back as given (on RoCE, less the two the kernel or rxe replaces: see below).
#[test]
fn query_qp_reads_back_every_connect_setting() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, None).unwrap();
    let build = || pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let (a, b) = (build(), build());
    let route = Route::new()
        .sl(2)
        .traffic_class(0x68)
        .hop_limit(32)
        .flow_label(0x1234);
    let opts = ConnectOptions::new()
        .path_mtu(Mtu::Mtu1024)
        .timeout(10)
        .retry_cnt(5)
        .rnr_retry(4)
        .min_rnr_timer(8)
        .max_rd_atomic(1)
        .max_dest_rd_atomic(1)
        .route(route);
    let peer = b.endpoint();
    let a = a.connect(&peer, &opts).unwrap();
    let q = a.query().unwrap();
    assert_eq!(q.path_mtu, Mtu::Mtu1024);
    assert_eq!(
        (q.timeout, q.retry_cnt, q.rnr_retry, q.min_rnr_timer),
        (10, 5, 4, 8)
    );
    assert_eq!((q.max_rd_atomic, q.max_dest_rd_atomic), (1, 1));
    assert_eq!((q.traffic_class, q.flow_label), (0x68, 0x1234));
    // On RoCE the kernel takes the hop limit from the IP route to the peer (its TTL), and
    // rxe's address vector has no service level (it reads back 0): both are InfiniBand's.
    let port = ctx.query_port(1).unwrap();
    if port.link_layer == LinkLayer::InfiniBand {
        assert_eq!((q.sl, q.hop_limit), (2, 32));
    }
    assert_eq!((q.dest_qp_num, q.dest_gid), (peer.qpn, peer.gid));
    drop((a, b));
    drop(pd);
    assert_clean_drops();
}

/// A setting out of its range is refused by name, with its limit, before any transition.
#[test]
fn connect_refuses_each_setting_out_of_range() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, None).unwrap();
    let build = || pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let peer = build();
    let cases = [
        (ConnectOptions::new().timeout(32), "ACK timeout", 32, 31),
        (ConnectOptions::new().retry_cnt(8), "retry count", 8, 7),
        (ConnectOptions::new().rnr_retry(8), "RNR retry count", 8, 7),
        (
            ConnectOptions::new().min_rnr_timer(32),
            "minimum RNR timer",
            32,
            31,
        ),
        (
            ConnectOptions::new().route(Route::new().sl(16)),
            "service level",
            16,
            15,
        ),
        (
            ConnectOptions::new().route(Route::new().flow_label(1 << 20)),
            "flow label",
            1 << 20,
            0xf_ffff,
        ),
    ];
    for (opts, what, value, max) in cases {
        let qp = build();
        match qp.connect(&peer.endpoint(), &opts) {
            Err(Error::OutOfRange {
                what: w,
                value: v,
                max: m,
                ..
            }) => assert_eq!((w, v, m), (what, value, max)),
            other => panic!("{what} {value}: {other:?}"),
        }
    }
    drop(peer);
    drop(pd);
    assert_clean_drops();
}

/// The address handle builder checks its route as `connect` does, and its GID index against
/// the port's table.
#[test]
fn address_handle_builder_refuses_a_bad_route() {
    if !provider_has(Need::Ud) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let qp = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let remote = qp.endpoint();
    let err = pd
        .create_ah(&remote)
        .route(Route::new().sl(16))
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "service level",
                value: 16,
                max: 15,
                ..
            }
        ),
        "{err}"
    );
    // An entry past the table is out of range; one inside it but empty is refused too.
    let err = pd.create_ah(&remote).gid_index(255).build().unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "GID index",
                ..
            } | Error::InvalidArgument {
                what: "GID index",
                ..
            }
        ),
        "{err}"
    );
    let ah = pd
        .create_ah(&remote)
        .route(Route::new().sl(15).traffic_class(0x68))
        .build()
        .unwrap();
    drop(ah);
    drop(qp);
    drop(pd);
    assert_clean_drops();
}
