//! UD over rdma_cm: datagrams both ways between a client and a listener in the UDP port
//! space (the reply through an address handle built from the sender's address), and private
//! data over the UD limits refused before the call.

use std::net::IpAddr;
use std::time::Duration;

use rdma_verbs::cm::{
    private_data_limit, CmEventKind, CmId, ConnParam, EventChannel, Message, PortSpace, UDP_QKEY,
};
use rdma_verbs::{
    AccessFlags, AddressHandle, Endpoint, Gid, GidType, QpType, RecvRequest, SendRequest,
    WorkCompletion,
};
use rdma_verbs_test_kit::{delivered_private_data, provider_has, Need};

use super::{add_qp, client_in, is_too_long, listener_in, next_event, one_completion, Side};

/// The bytes before a UD receive's payload: the GRH (or, for RoCE v2 over IPv4, its
/// 20-byte IPv4 header at the end of that space).
pub(super) const GRH: usize = 40;

/// Posts a receive of [`GRH`] + 64 bytes of `mr` on `id`'s QP.
fn post_ud_recv(id: &CmId, mr: &rdma_verbs::MemoryRegion, wr_id: u64) {
    let sge = [mr.sge(..GRH + 64).unwrap()];
    id.qp()
        .expect("the id's QP")
        .post_recv(&mut [RecvRequest::new(wr_id, &sge)])
        .expect("ibv_post_recv");
}

/// Sends `msg` from `id`'s QP to `qpn` through `ah`, and waits for its completion.
fn send_ud(id: &CmId, side: &Side, ah: &AddressHandle, qpn: u32, msg: &[u8]) {
    let mut mr = side.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    mr.write(0, msg).unwrap();
    let sge = [mr.sge(..msg.len()).unwrap()];
    id.qp()
        .expect("the id's QP")
        .post_send(&mut [SendRequest::send(5, &sge).ud(ah, qpn, UDP_QKEY).signaled()])
        .expect("ibv_post_send");
    assert_eq!(one_completion(&side.cq).wr_id(), 5);
}

/// Waits for the datagram of receive `wr_id` and checks that it is `msg`; its completion.
fn recv_ud(side: &Side, mr: &rdma_verbs::MemoryRegion, wr_id: u64, msg: &[u8]) -> WorkCompletion {
    let wc = one_completion(&side.cq);
    assert_eq!(wc.wr_id(), wr_id);
    assert!(wc.has_grh(), "UD receives on RoCE carry a GRH");
    assert_eq!(wc.byte_len() as usize, GRH + msg.len());
    let mut got = vec![0; msg.len()];
    mr.read(GRH, &mut got).unwrap();
    assert_eq!(got, msg);
    wc
}

/// The RoCE GID of an IP address (IPv4-mapped for IPv4).
fn ip_gid(ip: IpAddr) -> Gid {
    match ip {
        IpAddr::V4(v4) => Gid::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => Gid::from(v6),
    }
}

/// The accepting side's handle back to a datagram's sender: the peer's GID from its
/// address, sent from our address's RoCE v2 GID.
fn reply_ah(sid: &CmId, side: &Side) -> AddressHandle {
    let port = sid.qp().expect("the id's QP").port();
    let local = ip_gid(sid.local_addr().expect("a local address").ip());
    let table = sid
        .context()
        .unwrap()
        .gid_table(port)
        .expect("the GID table");
    let entry = table
        .iter()
        .find(|e| e.gid == local && e.gid_type == GidType::RoceV2)
        .unwrap_or_else(|| panic!("no RoCE v2 GID {local} in {table:?}"));
    let peer = Endpoint::new(
        0,
        0,
        0,
        ip_gid(sid.peer_addr().expect("a peer address").ip()),
    );
    side.pd
        .create_ah(&peer)
        .port(port)
        .gid_index(entry.index)
        .build()
        .expect("ibv_create_ah")
}

#[test]
fn ud_datagrams_both_ways() {
    if !provider_has(Need::Ud) {
        return;
    }
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener_in(&schan, PortSpace::Udp);
    let (cid, cside) = client_in(&cchan, addr, PortSpace::Udp);
    assert_eq!(cid.qp().unwrap().qp_type(), QpType::Ud);
    let cmr = cside
        .pd
        .alloc_mr(GRH + 64, AccessFlags::LOCAL_WRITE)
        .unwrap();
    post_ud_recv(&cid, &cmr, 11);
    cid.connect(&ConnParam::new().private_data(b"ud hello"))
        .expect("rdma_connect (SIDR REQ)");

    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest {
        id: mut sid,
        private_data,
        ..
    } = ev.kind
    else {
        panic!("expected a connect request, got {ev:?}");
    };
    let connect_limit = private_data_limit(Message::Connect, PortSpace::Udp);
    assert_eq!(
        private_data,
        delivered_private_data(b"ud hello", connect_limit)
    );
    assert_eq!(sid.port_space(), PortSpace::Udp);
    let sside = add_qp(&mut sid);
    let smr = sside
        .pd
        .alloc_mr(GRH + 64, AccessFlags::LOCAL_WRITE)
        .unwrap();
    post_ud_recv(&sid, &smr, 21);
    sid.accept(&ConnParam::new().private_data(b"ud welcome"))
        .expect("rdma_accept (SIDR REP)");

    let ev = next_event(&cchan);
    let CmEventKind::Established {
        private_data,
        ud: Some(peer),
    } = ev.kind
    else {
        panic!("expected established with the UD peer, got {ev:?}");
    };
    let accept_limit = private_data_limit(Message::Accept, PortSpace::Udp);
    assert_eq!(
        private_data,
        delivered_private_data(b"ud welcome", accept_limit)
    );
    let sqp = sid.qp().unwrap();
    assert_eq!((peer.qp_num, peer.qkey), (sqp.qp_num(), UDP_QKEY));

    // Client to server, through the peer's address handle.
    let ah = peer
        .create_ah(&cside.pd)
        .expect("ibv_create_ah from ud_param");
    send_ud(&cid, &cside, &ah, peer.qp_num, b"datagram to the server");
    let wc = recv_ud(&sside, &smr, 21, b"datagram to the server");
    assert_eq!(wc.src_qp(), cid.qp().unwrap().qp_num());

    // Server to client, back to the datagram's sender.
    let back = reply_ah(&sid, &sside);
    send_ud(&sid, &sside, &back, wc.src_qp(), b"datagram to the client");
    let wc = recv_ud(&cside, &cmr, 11, b"datagram to the client");
    assert_eq!(wc.src_qp(), peer.qp_num);
}

#[test]
fn ud_private_data_over_the_limit_is_refused_before_the_call() {
    if !provider_has(Need::Ud) {
        return;
    }
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener_in(&schan, PortSpace::Udp);
    let (cid, _side) = client_in(&cchan, addr, PortSpace::Udp);
    let long = [0xa5; 200];
    let err = cid
        .connect(&ConnParam::new().private_data(&long[..181]))
        .unwrap_err();
    assert!(is_too_long(&err, 181, 180), "{err}");
    // Nothing reached the peer: no connect request within a second.
    let none = schan.get_event_timeout(Duration::from_secs(1)).unwrap();
    assert!(none.is_none(), "{none:?}");

    cid.connect(&ConnParam::new().private_data(&long[..180]))
        .expect("rdma_connect with 180 bytes");
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let err = sid
        .accept(&ConnParam::new().private_data(&long[..137]))
        .unwrap_err();
    assert!(is_too_long(&err, 137, 136), "{err}");
    let err = sid.reject(&long[..137]).unwrap_err();
    assert!(is_too_long(&err, 137, 136), "{err}");
    // The request is still pending: it can be rejected within the limit.
    sid.reject(&long[..136])
        .expect("rdma_reject with 136 bytes");
    let ev = next_event(&cchan);
    // A UD reject is a SIDR REP with a failure status, reported as unreachable.
    assert!(matches!(ev.kind, CmEventKind::Unreachable), "{ev:?}");
}
