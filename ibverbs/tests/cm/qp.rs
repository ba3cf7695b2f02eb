//! The QP of a CM id, from the same builder as any QP (`rdma_create_qp_ex`): what reaches
//! it (signalling, an SRQ, send operations), what rdma_cm decides and so refuses, and the
//! GID it sends from (its route's).

use std::time::Duration;

use rdma_verbs::cm::{CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::{AccessFlags, Error, QpType, RecvRequest, SendOps, SendRequest};
use rdma_verbs_test_kit::open;

use super::{listener, next_event, one_completion};

/// An id resolved (address and route) to `addr`, without a QP.
fn resolved(channel: &EventChannel, addr: std::net::SocketAddr) -> CmId {
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve_addr(None, addr, Duration::from_secs(2)).unwrap();
    assert!(matches!(
        next_event(channel).kind,
        CmEventKind::AddrResolved
    ));
    id.resolve_route(Duration::from_secs(2)).unwrap();
    assert!(matches!(
        next_event(channel).kind,
        CmEventKind::RouteResolved
    ));
    id
}

fn invalid(err: &Error, what_is: &str, reason_has: &str) -> bool {
    matches!(err, Error::InvalidArgument { what, reason } if *what == what_is && reason.contains(reason_has))
}

#[test]
fn settings_rdma_cm_decides_and_misfits_are_refused_before_the_call() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let mut id = resolved(&cchan, addr);
    let ctx = id.context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(8, None).unwrap());
    let rc = || pd.create_qp(QpType::Rc, &cq, &cq);
    let builder = "queue pair builder for a CM id";
    let err = id.create_qp(rc().port(1)).unwrap_err();
    assert!(invalid(&err, builder, "port is rdma_cm's"), "{err:?}");
    let err = id.create_qp(rc().gid_index(0)).unwrap_err();
    assert!(invalid(&err, builder, "gid_index is rdma_cm's"), "{err:?}");
    let err = id
        .create_qp(rc().access(AccessFlags::REMOTE_WRITE))
        .unwrap_err();
    assert!(invalid(&err, builder, "access is rdma_cm's"), "{err:?}");
    let err = id.create_qp(rc().qkey(7)).unwrap_err();
    assert!(invalid(&err, builder, "qkey is rdma_cm's"), "{err:?}");
    let err = id
        .create_qp(pd.create_qp(QpType::Ud, &cq, &cq))
        .unwrap_err();
    assert!(
        invalid(&err, "queue pair type", "port space Tcp"),
        "{err:?}"
    );
    // A PD of another context (the test device, opened by us, not librdmacm's).
    let other = open();
    let (opd, ocq) = (other.alloc_pd().unwrap(), other.create_cq(8, None).unwrap());
    let err = id
        .create_qp(opd.create_qp(QpType::Rc, &ocq, &ocq))
        .unwrap_err();
    assert!(matches!(err, Error::Mismatch { .. }), "{err:?}");
    // CQs of another context than the PD's.
    let err = id
        .create_qp(pd.create_qp(QpType::Rc, &ocq, &cq))
        .unwrap_err();
    assert!(matches!(err, Error::Mismatch { .. }), "{err:?}");
    // None of it left a QP behind: the id takes one, once.
    id.create_qp(rc()).expect("a QP after the refusals");
    let err = id.create_qp(rc()).unwrap_err();
    assert!(invalid(&err, "CM id", "already has a QP"), "{err:?}");
    let udp = cchan.create_id(PortSpace::Udp).unwrap();
    let mut udp_id = udp;
    udp_id
        .resolve_addr(None, addr, Duration::from_secs(2))
        .unwrap();
    assert!(matches!(next_event(&cchan).kind, CmEventKind::AddrResolved));
    let uctx = udp_id.context().unwrap();
    let (upd, ucq) = (uctx.alloc_pd().unwrap(), uctx.create_cq(8, None).unwrap());
    let err = udp_id
        .create_qp(upd.create_qp(QpType::Rc, &ucq, &ucq))
        .unwrap_err();
    assert!(
        invalid(&err, "queue pair type", "port space Udp"),
        "{err:?}"
    );
}

#[test]
fn signal_all_srq_and_send_ops_reach_the_cm_qp_which_sends_from_its_routes_gid() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let mut cid = resolved(&cchan, addr);
    let cctx = cid.context().unwrap();
    let (cpd, ccq) = (cctx.alloc_pd().unwrap(), cctx.create_cq(8, None).unwrap());
    let qp = cpd
        .create_qp(QpType::Rc, &ccq, &ccq)
        .max_send_wr(4)
        .sq_sig_all(true)
        .send_ops(SendOps::SEND);
    cid.create_qp(qp).expect("rdma_create_qp_ex with send ops");
    cid.connect(&ConnParam::default()).unwrap();

    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let sctx = sid.context().unwrap();
    let (spd, scq) = (sctx.alloc_pd().unwrap(), sctx.create_cq(8, None).unwrap());
    let srq = spd.create_srq(4, 1).unwrap();
    sid.create_qp(spd.create_qp(QpType::Rc, &scq, &scq).srq(&srq))
        .expect("rdma_create_qp_ex on an SRQ");
    // Receives go to the SRQ before the connection is up.
    let mut rmr = spd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    rmr.write(0, &[0; 64]).unwrap();
    {
        let sge = [rmr.sge(..).unwrap()];
        srq.post_recv(&mut [RecvRequest::new(5, &sge)]).unwrap();
    }
    sid.accept(&ConnParam::default()).unwrap();
    assert!(matches!(
        next_event(&cchan).kind,
        CmEventKind::Established { .. }
    ));
    assert!(matches!(
        next_event(&schan).kind,
        CmEventKind::Established { .. }
    ));

    // Batches need the QP by `&mut`, which the id never hands out: take it (connected).
    let mut cqp = cid.take_qp().unwrap();
    let attr = cqp.query().unwrap();
    assert!(attr.sq_sig_all, "sq_sig_all reached the QP");
    assert_eq!(cqp.send_ops(), SendOps::SEND);
    // The QP sends from the GID rdma_cm put in its address vector: its route's.
    assert_eq!(cqp.gid_index(), attr.sgid_index, "the route's GID index");
    let sqp = sid.qp().unwrap();
    assert_eq!(sqp.gid_index(), sqp.query().unwrap().sgid_index);

    let mut smr = cpd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    smr.write(0, b"through ibv_wr_send").unwrap();
    let sge = [smr.sge(..19).unwrap()];
    // Not marked signaled: sq_sig_all signals it.
    cqp.batch(|b| b.push(&SendRequest::send(3, &sge)))
        .expect("ibv_wr_send");
    assert_eq!(one_completion(&ccq).wr_id(), 3);
    let wc = one_completion(&scq);
    assert_eq!((wc.wr_id(), wc.byte_len()), (5, 19));
    let mut got = [0; 19];
    rmr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"through ibv_wr_send");
}
