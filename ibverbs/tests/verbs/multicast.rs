//! UD multicast: one send to a group reaches every QP attached to it, until detached; the
//! misuses of attach and detach are typed errors.
//!
//! rxe's `ibv_attach_mcast` only adds the group to the netdev's link-layer filter: the IP
//! stack still drops a RoCE v2 datagram to a group the host has not joined (lo needs no
//! MULTICAST flag, and the all-hosts group 224.0.0.1 is always joined). rdma_cm's
//! `rdma_join_multicast` joins it for its users; here a UDP socket joined to the group on
//! the test netdev's address does.

use rdma_verbs_test_kit::{provider_has, Need};
use std::net::{Ipv4Addr, Ipv6Addr, UdpSocket};

use rdma_verbs_test_kit::{assert_clean_drops, assert_empty, gid, open};

use rdma_verbs::{
    AhFromWcError, CompletionQueue, Endpoint, Error, Gid, QpType, QueuePair, RecvRequest,
    SendRequest, WcOpcode, WcStatus, DEFAULT_QKEY, MULTICAST_QPN,
};

use crate::common::{contents, poll_one, Pair, ALL};

/// The group of these tests: an administratively scoped IPv4 group, as a GID.
const GROUP: &str = "::ffff:239.7.7.7";

/// A UDP socket joined to IPv4-mapped `group` on the test GID's address, so that the IP
/// stack takes the group's datagrams (while it lives).
fn join_ip_group(group: Gid) -> UdpSocket {
    let v4 = |g: Gid| {
        Ipv6Addr::from(g)
            .to_ipv4_mapped()
            .expect("an IPv4-mapped GID")
    };
    let sock = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    sock.join_multicast_v4(&v4(group), &v4(gid())).unwrap();
    sock
}

#[test]
fn one_send_reaches_every_attached_qp_until_detached() {
    if !provider_has(Need::Ud) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cqs: Vec<CompletionQueue> = (0..3).map(|_| ctx.create_cq(16, None).unwrap()).collect();
    let qps: Vec<QueuePair> = cqs
        .iter()
        .map(|cq| {
            pd.create_qp(QpType::Ud, cq, cq)
                .build()
                .unwrap()
                .ready()
                .unwrap()
        })
        .collect();
    let group: Gid = GROUP.parse().unwrap();
    let _member = join_ip_group(group);
    for qp in &qps[1..] {
        qp.attach_mcast(group, 0).unwrap();
        assert_eq!(qp.mcast(), vec![(group, 0)]);
    }

    let mut mr = pd.alloc_mr(4096, ALL).unwrap();
    mr.write(3000, b"to the whole group").unwrap();
    let to_group = Endpoint::new(MULTICAST_QPN, 0, 0, group);
    let ah = pd.create_ah(&to_group).build().unwrap();
    let payload = [mr.sge(3000..3018).unwrap()];
    let send = |wr_id| {
        qps[0]
            .post_send(&mut [SendRequest::send(wr_id, &payload)
                .ud(&ah, MULTICAST_QPN, DEFAULT_QKEY)
                .signaled()])
            .unwrap();
        poll_one(&cqs[0]).ok().unwrap();
    };
    // Receives start with the 40-byte GRH.
    let (r1, r2) = ([mr.sge(0..100).unwrap()], [mr.sge(100..200).unwrap()]);
    qps[1].post_recv(&mut [RecvRequest::new(1, &r1)]).unwrap();
    qps[2].post_recv(&mut [RecvRequest::new(2, &r2)]).unwrap();
    send(10);
    for (i, at) in [(1, 0), (2, 100)] {
        let wc = poll_one(&cqs[i]);
        assert_eq!(
            (wc.wr_id(), wc.status(), wc.opcode(), wc.byte_len()),
            (i as u64, WcStatus::SUCCESS, WcOpcode::Recv, 40 + 18)
        );
        assert_eq!(wc.src_qp(), qps[0].qp_num());
        assert_eq!(&contents(&mr)[at + 40..at + 58], b"to the whole group");
        // The datagram's destination is the group, no GID to answer from.
        let err = pd
            .create_ah_from_wc(1, &wc, &contents(&mr)[at..at + 40])
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::AhFromWc {
                    reason: AhFromWcError::MulticastDestination { group: g }
                } if g == group
            ),
            "{err}"
        );
    }

    // Detached, the second QP gets nothing; the first still does.
    qps[2].detach_mcast(group, 0).unwrap();
    assert!(qps[2].mcast().is_empty());
    qps[1].post_recv(&mut [RecvRequest::new(3, &r1)]).unwrap();
    qps[2].post_recv(&mut [RecvRequest::new(4, &r2)]).unwrap();
    send(11);
    assert_eq!(poll_one(&cqs[1]).wr_id(), 3);
    assert_empty(&cqs[2], "after detaching");

    // Dropping a QP that is still attached detaches it first.
    drop(ah);
    drop(qps);
    assert_clean_drops();
}

#[test]
fn multicast_misuse_is_a_typed_error() {
    if !provider_has(Need::Ud) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, None).unwrap();
    let ud = pd
        .create_qp(QpType::Ud, &cq, &cq)
        .build()
        .unwrap()
        .ready()
        .unwrap();
    let group: Gid = GROUP.parse().unwrap();

    // Not a multicast GID: the port's own unicast GID, a link-local one.
    for unicast in [gid(), "fe80::1".parse().unwrap()] {
        match ud.attach_mcast(unicast, 0) {
            Err(Error::InvalidArgument { what, .. }) => assert_eq!(what, "multicast GID"),
            other => panic!("attach to {unicast}: {other:?}"),
        }
        assert!(matches!(
            ud.detach_mcast(unicast, 0),
            Err(Error::InvalidArgument { .. })
        ));
    }
    // Not attached yet: detaching is refused before the call.
    match ud.detach_mcast(group, 0) {
        Err(Error::InvalidArgument { reason, .. }) => assert!(reason.contains("not attached")),
        other => panic!("{other:?}"),
    }
    // Twice: refused the second time, and the group is listed once.
    ud.attach_mcast(group, 0).unwrap();
    match ud.attach_mcast(group, 0) {
        Err(Error::InvalidArgument { reason, .. }) => assert!(reason.contains("already")),
        other => panic!("{other:?}"),
    }
    assert_eq!(ud.mcast(), vec![(group, 0)]);
    ud.detach_mcast(group, 0).unwrap();
    assert!(ud.detach_mcast(group, 0).is_err());

    // Connected QPs do not join groups.
    for qp_type in [QpType::Rc, QpType::Uc] {
        let p = Pair::new(qp_type);
        match p.a.attach_mcast(group, 0) {
            Err(Error::InvalidArgument { what, .. }) => assert_eq!(what, "queue pair type"),
            other => panic!("{qp_type}: {other:?}"),
        }
        assert!(p.a.mcast().is_empty());
    }
    drop(ud);
    assert_clean_drops();
}
