//! The QP of a CM id, from the same builder as any QP (`rdma_create_qp_ex`): what reaches
//! it (signalling, an SRQ, send operations), what rdma_cm decides and so refuses, and the
//! GID it sends from (its route's); a QP built on its own made the id's (`set_qp`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdma_verbs::cm::{CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::{
    AccessFlags, Context, Error, Gid, GidType, QpCreateFlags, QpType, RecvRequest, SendOps,
    SendRequest, Transport,
};
use rdma_verbs_test_kit::{cm_addr, cm_device, device, open, open_cm, provider_has, Need};

use super::{add_qp, both_established, listener, next_event, one_completion};

/// An id resolved (address and route) to `addr`, without a QP.
fn resolved(channel: &EventChannel, addr: SocketAddr) -> CmId {
    resolved_from(channel, None, addr)
}

/// An id resolved from `src` (the route's choice if `None`) to `addr`, without a QP.
fn resolved_from(channel: &EventChannel, src: Option<SocketAddr>, addr: SocketAddr) -> CmId {
    let id = channel.create_id(PortSpace::Tcp).unwrap();
    id.resolve_addr(src, addr, Duration::from_secs(2)).unwrap();
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
    // Creation flags rxe does not take: named, and the id keeps no QP.
    let err = id
        .create_qp(rc().create_flags(QpCreateFlags::BLOCK_SELF_MCAST_LB))
        .unwrap_err();
    assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
    assert!(id.qp().is_none());
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
    if !provider_has(Need::ExtendedQp) {
        return;
    }
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
    cid.connect(&ConnParam::new()).unwrap();

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
    sid.accept(&ConnParam::new()).unwrap();
    both_established(&cchan, &schan);

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

/// Held by the tests that add addresses: the kernel may give one test's address the slot
/// of the GID table another test's just freed, while a context's copy still holds the
/// other (which it may, for up to a second).
static ADDRESSES: Mutex<()> = Mutex::new(());

/// An address added to the CM device's network device, removed on drop (which waits, up
/// to 10 s, for its GID to leave the table).
struct AddedAddr {
    addr: Ipv4Addr,
    netdev: String,
    ctx: Context,
}

impl AddedAddr {
    /// Adds `addr`/24 and waits (up to 10 s) for the GID it makes in `ctx`'s port 1.
    fn add(ctx: &Context, addr: Ipv4Addr) -> Self {
        let ndev = format!(
            "/sys/class/infiniband/{}/ports/1/gid_attrs/ndevs/0",
            cm_device()
        );
        let netdev = std::fs::read_to_string(&ndev)
            .expect(&ndev)
            .trim()
            .to_owned();
        let ip = |args: &[&str]| {
            Command::new("ip")
                .args(args)
                .status()
                .expect("ip")
                .success()
        };
        assert!(ip(&["addr", "add", &format!("{addr}/24"), "dev", &netdev]));
        let added = AddedAddr {
            addr,
            netdev,
            ctx: ctx.clone(),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ctx
            .gid_table(1)
            .unwrap()
            .iter()
            .any(|e| e.gid == mapped(addr))
        {
            assert!(Instant::now() < deadline, "no GID for {addr} within 10 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        added
    }
}

impl Drop for AddedAddr {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args([
                "addr",
                "del",
                &format!("{}/24", self.addr),
                "dev",
                &self.netdev,
            ])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        let gone = || {
            self.ctx
                .gid_table(1)
                .is_ok_and(|table| table.iter().all(|e| e.gid != mapped(self.addr)))
        };
        while !gone() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The IPv4-mapped GID of `addr`.
fn mapped(addr: Ipv4Addr) -> Gid {
    Gid::from(addr.to_ipv6_mapped())
}

/// The index of `gid`'s RoCE v2 entry in port 1's table.
fn v2_index(ctx: &Context, gid: Gid) -> u8 {
    let table = ctx.gid_table(1).unwrap();
    let entry = table
        .iter()
        .find(|e| e.gid == gid && e.gid_type == GidType::RoceV2);
    entry
        .unwrap_or_else(|| panic!("no RoCE v2 entry for {gid:?}"))
        .index
}

#[test]
fn a_cm_qp_reports_the_gid_of_its_route_even_one_added_after_the_first_qp() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    // One thread: the ids share this thread's device context, and so its copy of the port
    // that the first QP filled; the second QP's route is from an address added after it.
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let _one_at_a_time = ADDRESSES.lock().unwrap_or_else(PoisonError::into_inner);
    let IpAddr::V4(first_addr) = cm_addr() else {
        panic!("the CM address is IPv4")
    };
    let mut first = resolved(&cchan, addr);
    let ctx = first.context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(4, None).unwrap());
    first.create_qp(pd.create_qp(QpType::Rc, &cq, &cq)).unwrap();
    let first_index = first.qp().unwrap().gid_index();
    assert_eq!(first_index, v2_index(&ctx, mapped(first_addr)));

    let extra = Ipv4Addr::new(198, 18, 1, 77);
    let _added = AddedAddr::add(&ctx, extra);
    let src = SocketAddr::new(IpAddr::V4(extra), 0);
    let mut second = resolved_from(&cchan, Some(src), addr);
    second
        .create_qp(pd.create_qp(QpType::Rc, &cq, &cq))
        .unwrap();
    let second_index = second.qp().unwrap().gid_index();
    assert_eq!(
        second_index,
        v2_index(&ctx, mapped(extra)),
        "the new address's GID"
    );
    assert_ne!(second_index, first_index);
}

#[test]
fn a_verbs_qp_finds_a_gid_added_after_the_first_qp_and_is_refused_one_removed() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    // The first QP fills the context's copy of port 1; the address added after it makes
    // an index the copy lacks, which the builder looks up afresh rather than refuse.
    let _one_at_a_time = ADDRESSES.lock().unwrap_or_else(PoisonError::into_inner);
    let ctx = open_cm();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(4, None).unwrap());
    let first = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let extra = Ipv4Addr::new(198, 18, 1, 78);
    let added = AddedAddr::add(&ctx, extra);
    let index = v2_index(&ctx, mapped(extra));
    assert_ne!(index, first.gid_index());
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .gid_index(index)
        .build()
        .unwrap();
    assert_eq!((qp.gid_index(), qp.endpoint().gid), (index, mapped(extra)));

    // Removed (the drop waits for the GID to leave the table): `default_gid` (which reads
    // the device) refreshes the copy, and the builder refuses the empty entry before
    // creating a QP.
    drop(added);
    assert!(ctx.gid_table(1).unwrap().iter().all(|e| e.index != index));
    ctx.default_gid(1).unwrap();
    let err = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .gid_index(index)
        .build()
        .unwrap_err();
    assert!(
        invalid(&err, "GID index", &format!("entry {index} ")),
        "{err}"
    );
}

/// A CM id's device context outlives the id: a PD, CQ and region made while the first id
/// lived keep working once it is gone (the context holds the device then), and a QP made
/// from them on the next id connects and sends.
#[test]
fn a_cm_context_outlives_its_ids_and_serves_the_next_one() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let first = resolved(&cchan, addr);
    let ctx = first.context().unwrap();
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(8, None).unwrap());
    drop(first);
    let mut smr = pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    smr.write(0, b"made after the first id").unwrap();
    let send_cq = ctx.create_cq(8, None).unwrap();

    let mut cid = resolved(&cchan, addr);
    cid.create_qp(pd.create_qp(QpType::Rc, &send_cq, &cq).max_send_wr(2))
        .expect("a QP on the next id from the first id's context");
    drop(ctx);
    cid.connect(&ConnParam::new()).unwrap();
    let ev = next_event(&schan);
    let CmEventKind::ConnectRequest { id: mut sid, .. } = ev.kind else {
        panic!("expected a connect request, got {ev:?}");
    };
    let sside = add_qp(&mut sid);
    let mut rmr = sside.pd.alloc_mr(64, AccessFlags::LOCAL_WRITE).unwrap();
    rmr.write(0, &[0; 64]).unwrap();
    {
        let sge = [rmr.sge(..).unwrap()];
        sid.qp()
            .unwrap()
            .post_recv(&mut [RecvRequest::new(2, &sge)])
            .unwrap();
    }
    sid.accept(&ConnParam::new()).unwrap();
    both_established(&cchan, &schan);
    {
        let sge = [smr.sge(..23).unwrap()];
        cid.qp()
            .unwrap()
            .post_send(&mut [SendRequest::send(1, &sge).signaled()])
            .unwrap();
    }
    assert_eq!(one_completion(&send_cq).wr_id(), 1);
    let wc = one_completion(&sside.cq);
    assert_eq!((wc.wr_id(), wc.byte_len()), (2, 23));
    let mut got = [0; 23];
    rmr.read(0, &mut got).unwrap();
    assert_eq!(&got, b"made after the first id");
}

/// A QP built on its own becomes the id's (`set_qp`, on RoCE built on the route's GID),
/// from a context of the id's device other than librdmacm's; refused before the id is
/// bound, a second time, and for a QP of another device.
#[test]
fn a_qp_built_on_its_own_becomes_the_ids_once() {
    let (schan, cchan) = (EventChannel::new().unwrap(), EventChannel::new().unwrap());
    let (_listen, addr) = listener(&schan);
    let ctx = Context::open(&cm_device()).expect("ibv_open_device");
    let (pd, cq) = (ctx.alloc_pd().unwrap(), ctx.create_cq(8, None).unwrap());
    let rc = || pd.create_qp(QpType::Rc, &cq, &cq);
    let mut unbound = cchan.create_id(PortSpace::Tcp).unwrap();
    let err = unbound.set_qp(rc().build().unwrap()).unwrap_err();
    assert!(invalid(&err, "CM id", "not bound"), "{err:?}");

    let mut id = resolved(&cchan, addr);
    let on_route = match (ctx.transport(), cm_addr()) {
        (Transport::Iwarp, _) => rc(),
        (_, IpAddr::V4(v4)) => rc().gid_index(v2_index(&ctx, mapped(v4))),
        (_, other) => panic!("the CM address {other} is not IPv4"),
    };
    let qp = on_route.build().unwrap();
    let qpn = qp.endpoint().qpn;
    assert_eq!(id.set_qp(qp).expect("CmId::set_qp").qp_num(), qpn);
    assert_eq!(id.qp().map(|qp| qp.qp_num()), Some(qpn));
    let err = id.set_qp(rc().build().unwrap()).unwrap_err();
    assert!(invalid(&err, "CM id", "already has a QP"), "{err:?}");

    // The test device, where it is another device than the CM device (rxe0 beside rxe_cm).
    if device() != cm_device() {
        let mut id = resolved(&cchan, addr);
        let other = open();
        let (opd, ocq) = (other.alloc_pd().unwrap(), other.create_cq(8, None).unwrap());
        let qp = opd.create_qp(QpType::Rc, &ocq, &ocq).build().unwrap();
        let err = id.set_qp(qp).unwrap_err();
        assert!(matches!(err, Error::Mismatch { .. }), "{err:?}");
        assert!(id.qp().is_none());
    }
}
