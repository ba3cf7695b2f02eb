//! What a first program runs into (`rdma_verbs::docs::objects`, "Connecting and polling"):
//! GID indexes and address handles, an endpoint with only what the peer sends, errors that
//! name the transition or the limit, polling until completions arrive, and the small helpers.

use rdma_verbs_test_kit::{provider_has, Need};
use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{assert_clean_drops, gid, open};

use rdma_verbs::{
    ffi, page_size, AsRaw, ConnectOptions, Endpoint, Error, Gid, Mtu, QpType, QueuePair,
    RecvRequest, SendRequest, WcStatus, WorkCompletion,
};

use crate::common::{contents, poll_one, Pair, ALL};

/// The path MTU the QP was moved to RTR with (`ibv_query_qp`).
fn path_mtu(qp: &QueuePair) -> Mtu {
    let mut attr = ffi::ibv_qp_attr::default();
    let mut init = ffi::ibv_qp_init_attr::default();
    let mask = ffi::ibv_qp_attr_mask::IBV_QP_PATH_MTU.0 as i32;
    // SAFETY: the QP is live and the out structs are writable.
    let rc = unsafe { ffi::ibv_query_qp(qp.as_raw().as_ptr(), &mut attr, mask, &mut init) };
    assert_eq!(rc, 0, "ibv_query_qp");
    Mtu::from_raw(attr.path_mtu)
}

#[test]
fn a_qp_tells_its_gid_index_and_connect_keeps_the_route_s() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, None).unwrap();
    // The default GID is the RoCE v2 IPv4 one (index 1 on the test device), never the
    // link-local entry 0; one u8 index type in the builder, the QP, the table and the route.
    let default = ctx.default_gid(1).unwrap();
    assert_eq!((default.index, default.gid), (1u8, gid()));
    let a = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let b = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    assert_eq!((a.port(), a.gid_index()), (1, 1));
    assert_eq!(a.endpoint().gid, gid());
    assert_eq!(ctx.query_gid(1, a.gid_index()).unwrap(), a.endpoint().gid);
    // Gid and Ipv6Addr convert both ways.
    let addr: Ipv6Addr = a.endpoint().gid.into();
    assert_eq!(addr, "::ffff:127.0.0.1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(Gid::from(addr), gid());

    // The QP's index is given once, to its builder: an empty entry is refused before the
    // QP is created (rxe's table is longer than any u8, so every index is in range), and
    // `connect` sends from the QP's own.
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let err = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .gid_index(200)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "GID index",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("entry 200"), "{err}");
    let a = a.connect(&eb, &ConnectOptions::new()).unwrap();
    let b = b.connect(&ea, &ConnectOptions::new()).unwrap();
    assert_eq!((a.gid_index(), b.gid_index()), (1, 1));
    drop((a, b, cq, pd));
    assert_clean_drops();
}

#[test]
fn create_ah_defaults_to_a_routable_gid_and_checks_port_and_index() {
    if !provider_has(Need::Ud) {
        return;
    }
    let p = Pair::new(QpType::Ud);
    let remote = p.b.endpoint();
    // Port 9 and an empty GID entry: typed errors before ibv_create_ah, naming the limit.
    let err = p.pd.create_ah(&remote).port(9).build().unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "port",
                value: 9,
                min: 1,
                max: 1,
            }
        ),
        "{err}"
    );
    assert_eq!(err.to_string(), "port 9 is out of range (valid: 1..=1)");
    let err = p.pd.create_ah(&remote).gid_index(200).build().unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "GID index",
                ..
            }
        ),
        "{err}"
    );

    // Route::new() sends from the port's default GID, which reaches the peer.
    let ah = p.pd.create_ah(&remote).build().unwrap();
    let mut src = p.mr(32);
    src.fill(0x77);
    let dst = p.mr(40 + 32);
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send(2, &sge)
        .ud(&ah, remote.qpn, rdma_verbs::DEFAULT_QKEY)
        .signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let wc = poll_one(&p.b_cq);
    assert_eq!((wc.status(), wc.byte_len()), (WcStatus::SUCCESS, 40 + 32));
    assert_eq!(contents(&dst)[40..], [0x77; 32]);
    drop((ah, src, dst, p));
    assert_clean_drops();
}

#[test]
fn an_endpoint_is_what_the_c_exchange_carries() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, None).unwrap();
    let active = ctx.query_port(1).unwrap().active_mtu;
    let a = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let b = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    // Built from the four fields ibv_rc_pingpong sends, as a peer's message is read.
    let ea = a.endpoint();
    let eb = Endpoint::new(
        b.endpoint().qpn,
        b.endpoint().psn,
        b.endpoint().lid,
        b.endpoint().gid,
    );
    // The path MTU is a local choice: the port's active MTU unless given.
    let a = a.connect(&eb, &ConnectOptions::new()).unwrap();
    let opts = ConnectOptions::new().path_mtu(Mtu::Mtu512);
    let b = b.connect(&ea, &opts).unwrap();
    assert_eq!((path_mtu(&a), path_mtu(&b)), (active, Mtu::Mtu512));
    drop((a, b, cq, pd));
    assert_clean_drops();
}

#[test]
fn sizes_over_the_device_caps_name_the_cap() {
    let ctx = open();
    let attr = ctx.query_device().unwrap();
    let err = ctx.create_cq(1 << 30, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DeviceLimit {
                what: "CQ entries",
                value: 0x4000_0000,
                limit: "max_cqe",
                max,
            } if max == u64::from(attr.max_cqe)
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "CQ entries 1073741824 is more than the device's max_cqe ({})",
            attr.max_cqe
        )
    );
    let pd = ctx.alloc_pd().unwrap();
    let err = pd.create_srq(1 << 30, 1).unwrap_err();
    assert!(
        matches!(err, Error::DeviceLimit { limit: "max_srq_wr", max, .. } if max == u64::from(attr.max_srq_wr)),
        "{err}"
    );
    let err = pd.create_srq(16, 1 << 30).unwrap_err();
    assert!(
        matches!(err, Error::DeviceLimit { limit: "max_srq_sge", max, .. } if max == u64::from(attr.max_srq_sge)),
        "{err}"
    );
    // At the caps, the device takes them.
    let srq = pd.create_srq(16, attr.max_srq_sge).unwrap();
    assert!(srq.max_sge() >= attr.max_srq_sge);
    drop((srq, pd, ctx));
    assert_clean_drops();
}

#[test]
fn an_inverted_range_says_so() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let mr = pd.alloc_mr(64, ALL).unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    let err = mr.sge(10..5).unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { what: "range", .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "invalid range: 10..5 is inverted: it starts after its end"
    );
    // An end past the region still names the region's length.
    let err = mr.sge(10..65).unwrap_err();
    assert_eq!(
        err.to_string(),
        "range end 65 is out of range (valid: 0..=64)"
    );
    drop((mr, pd));
    assert_clean_drops();
}

#[test]
fn a_flushed_completion_prints_like_every_other() {
    let p = Pair::new(QpType::Rc);
    let buf = p.mr(64);
    let sge = [buf.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(7, &sge)]).unwrap();
    p.b.to_error().unwrap();
    let wc = poll_one(&p.b_cq);
    assert_eq!(wc.status(), WcStatus::WR_FLUSH_ERR);
    assert_eq!(
        wc.status().to_string(),
        "work request flushed error (WR_FLUSH_ERR)"
    );
    assert_eq!(
        wc.ok().unwrap_err().to_string(),
        format!(
            "work request 7 completed with work request flushed error (WR_FLUSH_ERR) \
             (vendor error {:#x})",
            wc.vendor_err()
        )
    );
    drop((buf, p));
    assert_clean_drops();
}

#[test]
fn poll_until_returns_the_completions_in_a_loop() {
    let p = Pair::new(QpType::Rc);
    let mut src = p.mr(64);
    src.fill(3);
    let dst = p.mr(64);
    let sge = [src.sge(..).unwrap()];
    let mut wc = [WorkCompletion::default(); 8];
    let wait = Some(Duration::from_secs(10));
    // The loop that returns poll's slice would not compile (E0499); this one does.
    let mut done = 0;
    for round in 0..3u64 {
        let mut wrs: Vec<_> = (0..4)
            .map(|i| SendRequest::write(round * 4 + i, &sge, dst.remote()).signaled())
            .collect();
        p.a.post_send(&mut wrs).unwrap();
        let got = p.a_cq.poll_until(&mut wc, 4, wait).unwrap();
        assert_eq!(got.len(), 4);
        for c in got.iter() {
            c.ok().unwrap();
            assert_eq!(c.wr_id(), round * 4 + done % 4);
            done += 1;
        }
    }
    assert_eq!(contents(&dst), vec![3; 64]);
    // Nothing more comes: the timeout returns what there is (nothing), not an error.
    let start = Instant::now();
    let got = p
        .a_cq
        .poll_until(&mut wc, 1, Some(Duration::from_millis(50)))
        .unwrap();
    assert!(got.is_empty());
    assert!(start.elapsed() >= Duration::from_millis(50));
    // More than the buffer holds is refused.
    let err = p.a_cq.poll_until(&mut wc, 9, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "minimum completions",
                value: 9,
                max: 8,
                ..
            }
        ),
        "{err}"
    );
    drop((src, dst, p));
    assert_clean_drops();
}

#[test]
fn recv_requests_clone_regions_fill_and_the_page_size_is_public() {
    let p = Pair::new(QpType::Rc);
    let mut src = p.mr(16);
    src.fill(0xc3);
    let dst = p.mr(32);
    assert_eq!(contents(&src), vec![0xc3; 16]);
    assert_eq!(dst.addr() % page_size() as u64, 0);
    assert!(page_size().is_power_of_two() && page_size() >= 4096);

    // One request, posted twice through clones.
    let rsge = [dst.sge(..16).unwrap()];
    let wr = RecvRequest::new(5, &rsge);
    p.b.post_recv(&mut [wr.clone(), wr.clone()]).unwrap();
    assert_eq!(wr.clone().wr_id(), 5);
    assert!(wr.clone().as_raw().next.is_null());
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [
        SendRequest::send(1, &sge).signaled(),
        SendRequest::send(2, &sge).signaled(),
    ])
    .unwrap();
    for _ in 0..2 {
        poll_one(&p.a_cq).ok().unwrap();
        let r = poll_one(&p.b_cq);
        assert_eq!((r.wr_id(), r.byte_len()), (5, 16));
    }
    assert_eq!(contents(&dst)[..16], [0xc3; 16]);
    drop((src, dst, p));
    assert_clean_drops();
}
