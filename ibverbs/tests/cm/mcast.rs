//! UD multicast through rdma_cm (`rdma_join_multicast_ex`, `rdma_leave_multicast`) on the
//! CM device: a sender and a receiver id join a group, the sender sends datagrams through
//! the address handle, QP number and Q_Key of its join event, the receiver gets them byte
//! for byte, and gets none once it left; joins and leaves refused before librdmacm (and an
//! IPv6 group, which the kernel refuses, not counted as joined); an id dropped with joins
//! (done and under way) leaves them, so its QP is destroyed cleanly; a QP taken out of a
//! joined id takes its group along.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use rdma_verbs::cm::{CmEventKind, CmId, EventChannel, MulticastJoinFlag, PortSpace, UdPeer};
use rdma_verbs::{
    AccessFlags, AddressHandle, Error, Gid, MemoryRegion, QpType, RecvRequest, SendRequest,
    WorkCompletion, MULTICAST_QPN,
};
use rdma_verbs_test_kit::{assert_clean_drops, assert_empty, cm_addr, provider_has, Need};

use super::ud::GRH;
use super::{add_qp, next_event, one_completion, Side, TIMEOUT};

/// Bytes of each datagram.
const LEN: usize = 512;
/// Datagrams per burst.
const COUNT: usize = 8;

/// A UD id bound to the CM address (any port), on its own channel.
fn bound_ud_id() -> (EventChannel, CmId) {
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Udp).unwrap();
    id.bind(SocketAddr::new(cm_addr(), 0))
        .expect("rdma_bind_addr");
    (channel, id)
}

/// A UD id bound to the CM device by resolving `group` from the CM address (as rdma-core's
/// `mckey` does), on its own channel.
fn resolved_ud_id(group: IpAddr) -> (EventChannel, CmId) {
    let channel = EventChannel::new().unwrap();
    let id = channel.create_id(PortSpace::Udp).unwrap();
    id.resolve_addr(
        Some(SocketAddr::new(cm_addr(), 0)),
        SocketAddr::new(group, 0),
        TIMEOUT,
    )
    .expect("rdma_resolve_addr of the group");
    let ev = next_event(&channel);
    assert!(matches!(ev.kind, CmEventKind::AddrResolved), "{ev:?}");
    (channel, id)
}

/// The group's UD peer from the id's next event, which must be the join of `group`.
fn joined(channel: &EventChannel, id: &CmId, group: IpAddr) -> UdPeer {
    let ev = next_event(channel);
    assert!(ev.is_for(id), "{ev:?}");
    match ev.kind {
        CmEventKind::MulticastJoin { group: g, ud } if g == group => {
            assert_eq!(ev.status, 0);
            ud
        }
        other => panic!(
            "expected the join of {group}, got {other:?} (status {})",
            ev.status
        ),
    }
}

/// The RoCE GID of an IPv4 group (IPv4-mapped).
fn group_gid(group: Ipv4Addr) -> Gid {
    Gid::from(group.to_ipv6_mapped())
}

/// Byte `j` of datagram `i` of burst `burst`.
fn byte(burst: usize, i: usize, j: usize) -> u8 {
    (burst * 101 + i * 31 + j * 7 + (j >> 8)) as u8
}

/// A receive region for [`COUNT`] datagrams (each [`GRH`] + [`LEN`] bytes).
fn recv_region(side: &Side) -> MemoryRegion {
    side.pd
        .alloc_mr(COUNT * (GRH + LEN), AccessFlags::LOCAL_WRITE)
        .unwrap()
}

/// Posts the [`COUNT`] receives of `mr` on `id`'s QP (wr_id `i` at slot `i`).
fn post_receives(id: &CmId, mr: &MemoryRegion) {
    let qp = id.qp().expect("the receiver's QP");
    for i in 0..COUNT {
        let at = i * (GRH + LEN);
        let sge = [mr.sge(at..at + GRH + LEN).unwrap()];
        qp.post_recv(&mut [RecvRequest::new(i as u64, &sge)])
            .expect("ibv_post_recv");
    }
}

/// Sends burst `burst` of [`COUNT`] datagrams to the group through `ah`, with the QP number
/// and Q_Key of the group's `peer`, each completion awaited.
fn send_burst(id: &CmId, side: &Side, ah: &AddressHandle, peer: &UdPeer, burst: usize) {
    let mut mr = side.pd.alloc_mr(LEN, AccessFlags::LOCAL_WRITE).unwrap();
    let qp = id.qp().expect("the sender's QP");
    for i in 0..COUNT {
        let data: Vec<u8> = (0..LEN).map(|j| byte(burst, i, j)).collect();
        mr.write(0, &data).unwrap();
        let sge = [mr.sge(..).unwrap()];
        let wr_id = 100 + i as u64;
        qp.post_send(&mut [SendRequest::send(wr_id, &sge)
            .ud(ah, peer.qp_num, peer.qkey)
            .signaled()])
            .expect("ibv_post_send to the group");
        assert_eq!(one_completion(&side.cq).wr_id(), wr_id);
    }
}

/// Receives burst `burst` on `side`'s CQ, checking every byte; each came from `src_qp`.
fn receive_burst(side: &Side, mr: &MemoryRegion, burst: usize, src_qp: u32) {
    let mut got = Vec::new();
    while got.len() < COUNT {
        let mut wc = [WorkCompletion::default(); COUNT];
        let done = side
            .cq
            .poll_wait(&mut wc, Some(TIMEOUT))
            .expect("ibv_poll_cq");
        assert!(
            !done.is_empty(),
            "{} of {COUNT} datagrams within {TIMEOUT:?}",
            got.len()
        );
        for wc in done {
            wc.ok().expect("a successful receive");
            assert!(wc.has_grh(), "a multicast receive carries a GRH");
            assert_eq!(wc.byte_len() as usize, GRH + LEN);
            assert_eq!(wc.src_qp(), src_qp);
            got.push(wc.wr_id() as usize);
        }
    }
    got.sort_unstable();
    assert_eq!(got, (0..COUNT).collect::<Vec<_>>(), "each receive once");
    // The datagrams arrive in order: receive i holds datagram i.
    for i in 0..COUNT {
        let mut data = vec![0; LEN];
        mr.read(i * (GRH + LEN) + GRH, &mut data).unwrap();
        let want: Vec<u8> = (0..LEN).map(|j| byte(burst, i, j)).collect();
        assert!(data == want, "datagram {i} of burst {burst} differs");
    }
}

/// Two ids join one group (the receiver, bound to the CM address, as a full member, whose QP
/// librdmacm attaches; the sender, bound by resolving the group, as `sender_flag`), the
/// sender sends to it through its join event's address
/// vector, QP number and Q_Key, the receiver receives every byte. Once the receiver left,
/// it receives nothing more.
fn datagrams_to_a_group(group: Ipv4Addr, sender_flag: MulticastJoinFlag) {
    let ip = IpAddr::V4(group);
    let (rchan, mut rid) = bound_ud_id();
    let rside = add_qp(&mut rid);
    let rmr = recv_region(&rside);
    post_receives(&rid, &rmr);
    rid.join_multicast(ip).expect("rdma_join_multicast");
    assert_eq!(rid.multicast_groups(), [ip]);
    let rpeer = joined(&rchan, &rid, ip);
    assert_eq!(rpeer.qp_num, MULTICAST_QPN);
    assert_eq!(Gid::from_raw(rpeer.ah_attr().grh.dgid), group_gid(group));

    let (schan, mut sid) = resolved_ud_id(ip);
    let sside = add_qp(&mut sid);
    sid.join_multicast_ex(ip, sender_flag)
        .expect("rdma_join_multicast_ex");
    let speer = joined(&schan, &sid, ip);
    assert_eq!(speer.qp_num, MULTICAST_QPN);
    assert_eq!(speer.qkey, rpeer.qkey, "one group, one Q_Key");
    assert_eq!(Gid::from_raw(speer.ah_attr().grh.dgid), group_gid(group));
    eprintln!("{group}: {speer:?}");

    let ah = speer
        .create_ah(&sside.pd)
        .expect("ibv_create_ah to the group");
    let sqpn = sid.qp().unwrap().qp_num();
    send_burst(&sid, &sside, &ah, &speer, 0);
    receive_burst(&rside, &rmr, 0, sqpn);

    // A second burst after the receiver left: its QP is detached, nothing arrives.
    post_receives(&rid, &rmr);
    rid.leave_multicast(ip).expect("rdma_leave_multicast");
    assert!(rid.multicast_groups().is_empty());
    send_burst(&sid, &sside, &ah, &speer, 1);
    assert_empty(&rside.cq, "after the receiver left the group");

    sid.leave_multicast(ip).expect("the sender leaves");
    drop((ah, sid, rid));
    assert_clean_drops();
}

#[test]
fn multicast_datagrams_reach_a_group_joined_through_rdma_cm() {
    if !provider_has(Need::Ud) {
        return;
    }
    datagrams_to_a_group(Ipv4Addr::new(239, 1, 2, 3), MulticastJoinFlag::FullMember);
}

#[test]
fn a_send_only_member_sends_to_the_group() {
    if !provider_has(Need::Ud) {
        return;
    }
    datagrams_to_a_group(
        Ipv4Addr::new(239, 1, 2, 4),
        MulticastJoinFlag::SendOnlyFullMember,
    );
}

fn invalid(err: &Error, what_is: &str, reason_has: &str) -> bool {
    matches!(err, Error::InvalidArgument { what, reason } if *what == what_is && reason.contains(reason_has))
}

#[test]
fn bad_joins_and_leaves_are_refused_before_librdmacm() {
    if !provider_has(Need::Ud) {
        return;
    }
    let group = IpAddr::V4(Ipv4Addr::new(239, 1, 2, 5));
    let (channel, mut id) = bound_ud_id();
    for unicast in [
        cm_addr(),
        "198.18.1.2".parse().unwrap(),
        "::1".parse().unwrap(),
    ] {
        let err = id.join_multicast(unicast).unwrap_err();
        assert!(
            invalid(&err, "multicast group address", "not a multicast address"),
            "{unicast}: {err:?}"
        );
    }
    let err = id.leave_multicast(group).unwrap_err();
    assert!(
        invalid(&err, "multicast group", "has not joined 239.1.2.5"),
        "{err:?}"
    );

    // A connected (TCP) id, and a UD id bound to no device.
    let mut tcp = channel.create_id(PortSpace::Tcp).unwrap();
    tcp.bind(SocketAddr::new(cm_addr(), 0)).unwrap();
    let err = tcp.join_multicast(group).unwrap_err();
    assert!(invalid(&err, "CM id", "port space is Tcp"), "{err:?}");
    let mut unbound = channel.create_id(PortSpace::Udp).unwrap();
    let err = unbound.join_multicast(group).unwrap_err();
    assert!(invalid(&err, "CM id", "not bound to a device"), "{err:?}");

    // Joined once: a second join of the group is refused, a leave goes through, and a
    // second leave is refused.
    id.join_multicast(group).expect("rdma_join_multicast");
    let err = id
        .join_multicast_ex(group, MulticastJoinFlag::SendOnlyFullMember)
        .unwrap_err();
    assert!(
        invalid(&err, "multicast group", "already joined 239.1.2.5"),
        "{err:?}"
    );
    joined(&channel, &id, group);
    id.leave_multicast(group).expect("rdma_leave_multicast");
    let err = id.leave_multicast(group).unwrap_err();
    assert!(
        invalid(&err, "multicast group", "has not joined"),
        "{err:?}"
    );
    // Nothing reached librdmacm for the refused calls: no event came.
    let none = channel
        .get_event_timeout(std::time::Duration::from_millis(300))
        .unwrap();
    assert!(none.is_none(), "{none:?}");

    // An IPv6 group on the IPv4-bound id: the kernel's rdma_cm (6.1 and 7.3) refuses it
    // on RoCE v2 (ENOTSUPP, 524; C's mckey fails the same way, IPv6-bound too), which is
    // Error::Unsupported, not the raw errno. A join that librdmacm refused is not the
    // id's: leaving it is refused too.
    let v6: IpAddr = "ff0e::1:9".parse().unwrap();
    match id.join_multicast(v6) {
        Ok(()) => id.leave_multicast(v6).expect("leaving the IPv6 group"),
        Err(err) => {
            assert!(
                matches!(
                    err,
                    Error::Unsupported {
                        what: "joining an IPv6 multicast group (rdma_join_multicast_ex)",
                        ..
                    }
                ),
                "{err:?}"
            );
            eprintln!("IPv6 group {v6}: {err}");
            assert!(id.multicast_groups().is_empty());
            let err = id.leave_multicast(v6).unwrap_err();
            assert!(
                invalid(&err, "multicast group", "has not joined"),
                "{err:?}"
            );
        }
    }
    assert_clean_drops();
}

/// An id dropped with one join done (its QP attached to the group) and one under way leaves
/// both before its QP is destroyed: no destroy call fails (an attached QP cannot be
/// destroyed), and the groups can be joined and used again by a new id.
#[test]
fn an_id_dropped_with_joins_leaves_them() {
    if !provider_has(Need::Ud) {
        return;
    }
    let done = IpAddr::V4(Ipv4Addr::new(239, 1, 2, 6));
    let pending = IpAddr::V4(Ipv4Addr::new(239, 1, 2, 7));
    for round in 0..3 {
        let (channel, mut id) = bound_ud_id();
        let side = add_qp(&mut id);
        id.join_multicast(done).unwrap();
        joined(&channel, &id, done);
        id.join_multicast(pending).unwrap();
        assert_eq!(id.multicast_groups(), [done, pending]);
        drop(id);
        drop(side);
        assert_clean_drops();
        // The channel outlives the id; no event of the id is left to read.
        let ev = channel
            .get_event_timeout(std::time::Duration::ZERO)
            .unwrap();
        assert!(
            ev.is_none(),
            "round {round}: an event after the drop: {ev:?}"
        );
    }

    // The group still works for a new receiver.
    let (rchan, mut rid) = bound_ud_id();
    let rside = add_qp(&mut rid);
    let rmr = recv_region(&rside);
    post_receives(&rid, &rmr);
    rid.join_multicast(done).unwrap();
    joined(&rchan, &rid, done);
    let (schan, mut sid) = bound_ud_id();
    let sside = add_qp(&mut sid);
    sid.join_multicast(done).unwrap();
    let speer = joined(&schan, &sid, done);
    let ah = speer.create_ah(&sside.pd).unwrap();
    send_burst(&sid, &sside, &ah, &speer, 2);
    receive_burst(&rside, &rmr, 2, sid.qp().unwrap().qp_num());
    drop((ah, sid, rid));
    assert_clean_drops();
}

/// A QP taken out of an id whose join attached it takes the group along: it is in the
/// QP's groups, the id's leave no longer detaches it, and the QP detaches itself when it is
/// dropped (so no destroy call fails), before or after the id.
#[test]
fn a_qp_taken_from_a_joined_id_takes_its_group() {
    if !provider_has(Need::Ud) {
        return;
    }
    let group = Ipv4Addr::new(239, 1, 2, 8);
    for qp_first in [true, false] {
        let (channel, mut id) = bound_ud_id();
        let side = add_qp(&mut id);
        id.join_multicast(group.into()).unwrap();
        let peer = joined(&channel, &id, group.into());
        let qp = id.take_qp().expect("the id's QP");
        assert_eq!(qp.qp_type(), QpType::Ud);
        assert_eq!(qp.mcast(), [(group_gid(group), peer.ah_attr().dlid)]);
        if qp_first {
            drop(qp);
            drop(id);
        } else {
            id.leave_multicast(group.into()).unwrap();
            assert_eq!(qp.mcast().len(), 1, "still attached after the id left");
            drop(id);
            qp.detach_mcast(group_gid(group), peer.ah_attr().dlid)
                .expect("the QP detaches itself");
            assert!(qp.mcast().is_empty());
            drop(qp);
        }
        drop(side);
        assert_clean_drops();
    }
}
