//! iWARP's rules, on the iWARP device (soft-iWARP: `$WITH_RDMA_IWARP_DEVICE`, whatever the
//! provider under test): what iWARP forbids is refused by the crate before the provider,
//! naming the rule ([`IwarpRule`]): UD and UC QPs, atomics, a QP connected by hand, a read
//! into a region without remote write; what it has works over a connection rdma_cm set up.
//! What siw lacks is refused by name too: path migration, and packet pacing (the typed
//! `Unsupported`).

use std::net::SocketAddr;

use rdma_verbs::cm::{CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::{
    AccessFlags, AhAttr, AltPath, ConnectOptions, Context, DeviceCapFlags, Error, IwarpRule,
    QpType, QueuePair, RateLimit, RecvRequest, SendOps, SendRequest, Transport, WcStatus,
    WorkCompletion, WrError,
};
use rdma_verbs_test_kit::{iwarp_addr, iwarp_device};

use super::{both_established, client, next_event, one_completion, TIMEOUT};

fn open_iwarp() -> Context {
    let name = iwarp_device();
    let ctx = Context::open(&name).unwrap_or_else(|e| panic!("cannot open {name}: {e}"));
    assert_eq!(ctx.transport(), Transport::Iwarp, "{name}");
    ctx
}

#[test]
fn what_iwarp_has_not_is_refused_at_creation_and_connect_naming_the_rule() {
    let ctx = open_iwarp();
    let pd = ctx.alloc_pd().expect("ibv_alloc_pd");
    let cq = ctx.create_cq(8, None).expect("ibv_create_cq");
    for qp_type in [QpType::Ud, QpType::Uc] {
        let err = pd.create_qp(qp_type, &cq, &cq).build().unwrap_err();
        assert!(
            matches!(err, Error::Iwarp(IwarpRule::RcOnly { qp_type: t }) if t == qp_type),
            "{err:?}"
        );
        assert!(err.to_string().contains("RC"), "{err}");
    }
    for ops in [
        SendOps::ATOMIC_FETCH_AND_ADD,
        SendOps::ATOMIC_CMP_AND_SWP,
        SendOps::ATOMIC_WRITE,
    ] {
        let err = pd
            .create_qp(QpType::Rc, &cq, &cq)
            .send_ops(SendOps::SEND | ops)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, Error::Iwarp(IwarpRule::NoAtomics)),
            "{ops:?}: {err:?}"
        );
    }
    // Not a rule of iWARP, a lack of siw's provider (no create_qp_ex): named all the same.
    let err = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .send_ops(SendOps::SEND)
        .build()
        .unwrap_err();
    assert!(
        matches!(err, Error::Unsupported { what, .. } if what.contains("send_ops")),
        "{err:?}"
    );
    // An RC QP reaches INIT; connecting it by hand (to RTR and RTS) is refused.
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .build()
        .expect("an RC QP on iWARP");
    let peer = qp.endpoint();
    let err = qp.connect(&peer, &ConnectOptions::new()).unwrap_err();
    assert!(
        matches!(err, Error::Iwarp(IwarpRule::ConnectThroughRdmaCm)),
        "{err:?}"
    );
    assert!(err.to_string().contains("rdma_cm"), "{err}");
}

#[test]
fn a_multicast_join_on_iwarp_is_refused_naming_the_rule() {
    let channel = EventChannel::new().unwrap();
    let mut id = channel.create_id(PortSpace::Udp).expect("rdma_create_id");
    id.bind(SocketAddr::new(iwarp_addr(), 0))
        .expect("rdma_bind_addr");
    let err = id.join_multicast("239.1.9.1".parse().unwrap()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Iwarp(IwarpRule::RcOnly {
                qp_type: QpType::Ud
            })
        ),
        "{err:?}"
    );
}

/// A listening id (backlog 1) on the iWARP device's address, on a port the CM picks.
fn iwarp_listener(channel: &EventChannel) -> (CmId, SocketAddr) {
    let listen = channel.create_id(PortSpace::Tcp).expect("rdma_create_id");
    listen
        .bind(SocketAddr::new(iwarp_addr(), 0))
        .expect("rdma_bind_addr");
    listen.listen(1).expect("rdma_listen");
    let addr = listen.local_addr().expect("a bound id has an address");
    (listen, addr)
}

#[test]
fn atomics_are_refused_and_reads_and_writes_run_over_an_rdma_cm_connection() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = iwarp_listener(&schan);
    let (cid, cside) = client(&cchan, addr);
    assert_eq!(
        cid.context().expect("the id's context").transport(),
        Transport::Iwarp
    );
    let params = ConnParam::new().max_dest_rd_atomic(1).max_rd_atomic(1);
    cid.connect(&params).expect("rdma_connect");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let sside = super::add_qp(&mut sid);
    // The peer's region: the client writes into it and reads it back.
    let rights = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    let target = sside.pd.alloc_mr(64, rights).expect("ibv_reg_mr");
    sid.accept(&params).expect("rdma_accept");
    both_established(&cchan, &schan);

    let qp = cid.qp().expect("the client's QP");
    // siw reports no packet pacing: a rate limit is refused before the call.
    let err = qp
        .modify_rate_limit(&RateLimit::new().rate_limit(1_000_000))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unsupported {
                missing: "qp_rate_limit_max in packet_pacing_caps",
                ..
            }
        ),
        "{err:?}"
    );
    // A read's sink is written by the peer's read response: it has remote write too
    // (IwarpRule::ReadSinkNeedsRemoteWrite).
    let mut local = cside.pd.alloc_mr(64, rights).expect("ibv_reg_mr");
    local.write(0, b"written over iWARP").unwrap();
    let remote = target.remote();
    {
        let sge = [local.sge(..18).unwrap()];
        let result = local.sge(32..40).unwrap();
        for (i, wr) in [
            SendRequest::fetch_add(1, &result, remote.slice(0, 8).unwrap(), 1),
            SendRequest::compare_swap(2, &result, remote.slice(0, 8).unwrap(), 0, 1),
        ]
        .into_iter()
        .enumerate()
        {
            let err = qp.post_send(&mut [wr.signaled()]).unwrap_err();
            let err = Error::from(err);
            assert!(
                matches!(
                    err,
                    Error::Request {
                        index: 0,
                        reason: WrError::Iwarp {
                            rule: IwarpRule::NoAtomics,
                            ..
                        }
                    }
                ),
                "atomic {i}: {err:?}"
            );
        }
        qp.post_send(&mut [SendRequest::write(3, &sge, remote).signaled()])
            .expect("ibv_post_send (write)");
        assert_eq!(one_completion(&cside.cq).wr_id(), 3);
    }
    // A read into a region without remote write, alone or second in a list, is refused.
    let plain = cside
        .pd
        .alloc_mr(64, AccessFlags::LOCAL_WRITE)
        .expect("ibv_reg_mr");
    {
        let good = [local.sge(..18).unwrap()];
        let bad = [local.sge(..8).unwrap(), plain.sge(..10).unwrap()];
        let from = remote.slice(0, 18).unwrap();
        let err = qp
            .post_send(&mut [
                SendRequest::read(5, &good, from),
                SendRequest::read(6, &bad, from),
            ])
            .unwrap_err();
        let err = Error::from(err);
        assert!(
            matches!(
                err,
                Error::Request {
                    index: 1,
                    reason: WrError::Iwarp {
                        rule: IwarpRule::ReadSinkNeedsRemoteWrite,
                        ..
                    }
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("REMOTE_WRITE"), "{err}");
    }
    drop(plain);
    local.write(0, &[0; 18]).unwrap();
    {
        let sink = [local.sge(..18).unwrap()];
        qp.post_send(&mut [SendRequest::read(4, &sink, remote.slice(0, 18).unwrap()).signaled()])
            .expect("ibv_post_send (read)");
        assert_eq!(one_completion(&cside.cq).wr_id(), 4);
    }
    let mut back = [0; 18];
    local.read(0, &mut back).unwrap();
    assert_eq!(&back, b"written over iWARP");
}

/// Whether `err` is the crate's refusal of a post on a siw QP it stopped.
fn refused_once_stopped(err: &Error) -> bool {
    matches!(
        err,
        Error::Unsupported {
            what: "posting on a siw queue pair moved to ERROR or disconnected",
            ..
        }
    )
}

/// A send and a receive posted on `qp`, stopped, are both refused (siw would complete
/// neither: they would sit in its queues until the QP is destroyed).
fn posts_refused(qp: &QueuePair, mr: &rdma_verbs::MemoryRegion, side: &str) {
    let sge = [mr.sge(..8).unwrap()];
    let err = qp
        .post_send(&mut [SendRequest::send(7, &sge).signaled()])
        .unwrap_err();
    assert!(refused_once_stopped(&err), "{side}, send: {err:?}");
    let err = qp.post_recv(&mut [RecvRequest::new(8, &sge)]).unwrap_err();
    assert!(refused_once_stopped(&err), "{side}, receive: {err:?}");
}

/// On siw, a request posted on a QP in ERROR or disconnected never completes (its provider
/// writes it into the queue the kernel flushed once, at the move): the crate refuses the
/// post on a QP it moved to ERROR, and on one whose id it disconnected (here in answer to
/// the peer's disconnect); what was posted before the move completes flushed.
#[test]
fn a_post_on_a_stopped_siw_qp_is_refused_not_left_to_hang() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = iwarp_listener(&schan);
    let (cid, cside) = client(&cchan, addr);
    cid.connect(&ConnParam::new()).expect("rdma_connect");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let sside = super::add_qp(&mut sid);
    sid.accept(&ConnParam::new()).expect("rdma_accept");
    both_established(&cchan, &schan);

    // This side moves its QP to ERROR: the receive posted before is flushed, the posts
    // after are refused.
    let qp = cid.qp().expect("the client's QP");
    let mr = cside.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    let sge = [mr.sge(..8).unwrap()];
    qp.post_recv(&mut [RecvRequest::new(1, &sge)]).unwrap();
    qp.to_error().expect("to ERROR");
    let mut wc = [WorkCompletion::default()];
    let done = cside.cq.poll_wait(&mut wc, Some(TIMEOUT)).unwrap();
    assert_eq!(done.len(), 1, "the receive posted before ERROR is flushed");
    assert_eq!(
        (done[0].wr_id(), done[0].status()),
        (1, WcStatus::WR_FLUSH_ERR)
    );
    posts_refused(qp, &mr, "client");

    // The connection dropped: the peer answers its Disconnected with disconnect, and its
    // posts are refused too.
    let ev = next_event(&schan);
    assert!(matches!(ev.kind, CmEventKind::Disconnected), "{ev:?}");
    let _ = sid.disconnect();
    let smr = sside.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    posts_refused(sid.qp().expect("the server's QP"), &smr, "server");
}

/// siw reports no `IBV_DEVICE_AUTO_PATH_MIG`: an alternate path and a migration request on
/// a QP rdma_cm connected are refused naming the flag, before `ibv_modify_qp`.
#[test]
fn path_migration_on_siw_is_refused_naming_the_missing_flag() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = iwarp_listener(&schan);
    let (cid, _cside) = client(&cchan, addr);
    cid.connect(&ConnParam::new()).expect("rdma_connect");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let _sside = super::add_qp(&mut sid);
    sid.accept(&ConnParam::new()).expect("rdma_accept");
    both_established(&cchan, &schan);

    let qp = cid.qp().expect("the client's QP");
    let flags = qp.pd().context().query_device().unwrap().device_cap_flags;
    assert!(!flags.contains(DeviceCapFlags::AUTO_PATH_MIG), "{flags:?}");
    for err in [
        qp.load_alt_path(&AltPath::new(AhAttr::new(1))).unwrap_err(),
        qp.migrate_path().unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                Error::Unsupported {
                    missing: "IBV_DEVICE_AUTO_PATH_MIG in device_cap_flags",
                    ..
                }
            ),
            "{err:?}"
        );
    }
}
