//! The full `ibv_query_qp`: what a QP reports matches how it was built and connected.

use rdma_verbs_test_kit::{assert_clean_drops, open};
use rdma_verbs_test_kit::{provider_has, Need};

use rdma_verbs::{QpState, QpType, DEFAULT_QKEY};

use crate::common::{Pair, ALL};

#[test]
fn query_qp_reports_an_rc_connection() {
    if !provider_has(Need::HandConnect) {
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
