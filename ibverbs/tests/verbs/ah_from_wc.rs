//! Address handles from received completions (`ibv_init_ah_from_wc`,
//! `ibv_create_ah_from_wc`): a UD server that answers each datagram through the handle made
//! from it, over RoCE v2 on IPv4 and on IPv6, from a plain and an extended CQ; and what a
//! peer or a careless caller hands in: no GRH, a short buffer, garbage and crafted headers,
//! a failed completion, one that is not a receive, a bad port.

use rdma_verbs_test_kit::{provider_has, Need};
use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{assert_clean_drops, gid, mix, open};

use rdma_verbs::{
    AhFromWcError, CompletionQueue, Context, Error, Gid, GidType, MemoryRegion, QpType, QueuePair,
    RecvRequest, Route, SendRequest, WcFields, WcOpcode, WcStatus, WorkCompletion, DEFAULT_QKEY,
    GRH_LEN,
};

use crate::common::{poll_one, say, Pair, ALL};

/// The traffic class and hop limit the client sends with; the server's answer, whose
/// handle takes them from the datagram, carries them back (the hop limit where the device
/// sends the handle's).
const TRAFFIC_CLASS: u8 = 0x20;
const HOP_LIMIT: u8 = 17;

/// The index of RoCE v2 GID `gid` in port 1's table, if it has one.
fn v2_index(ctx: &Context, gid: Gid) -> Option<u8> {
    let table = ctx.gid_table(1).unwrap();
    table
        .iter()
        .find(|e| e.gid == gid && e.gid_type == GidType::RoceV2)
        .map(|e| e.index)
}

/// The first 40 bytes of `mr` from `at`: the GRH area of the receive there.
fn grh_at(mr: &MemoryRegion, at: usize) -> [u8; GRH_LEN] {
    let mut grh = [0; GRH_LEN];
    mr.read(at, &mut grh).unwrap();
    grh
}

/// The payload of the receive at `at` in `mr`, `len` bytes after its GRH.
fn payload_at(mr: &MemoryRegion, at: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    mr.read(at + GRH_LEN, &mut out).unwrap();
    out
}

/// Checks the GRH area of a datagram sent from and to `gid` (the same host) with
/// [`TRAFFIC_CLASS`], byte by byte, as the docs lay it out: the IPv4 header in the last 20
/// bytes for an IPv4-mapped GID, else an IPv6 header. Returns the hop limit (TTL) it
/// carries, which the device may have set itself (rxe on Linux 6.1 sends IPv4 with TTL 64,
/// whatever the handle says).
fn check_layout(grh: &[u8; GRH_LEN], gid: Gid) -> u8 {
    let addr = gid.to_bytes();
    if Ipv6Addr::from(gid).to_ipv4_mapped().is_some() {
        let ip = &grh[20..];
        assert_eq!(ip[0], 0x45, "IPv4, header of 5 words: {grh:02x?}");
        assert_eq!((ip[1], ip[9]), (TRAFFIC_CLASS, 17), "{grh:02x?}");
        assert_eq!((&ip[12..16], &ip[16..]), (&addr[12..], &addr[12..]));
        ip[8]
    } else {
        assert_eq!(grh[0] >> 4, 6, "IPv6: {grh:02x?}");
        let class = (grh[0] << 4) | (grh[1] >> 4);
        assert_eq!((class, grh[6]), (TRAFFIC_CLASS, 17), "{grh:02x?}");
        assert_eq!((&grh[8..24], &grh[24..]), (&addr[..], &addr[..]));
        grh[7]
    }
}

/// Rounds of ping (client `a` to server `b`, through a handle to `gid` from GID index
/// `index`) and pong (the server's answer, through the handle made from the ping's
/// completion, to its `src_qp`); each side checks the datagram and the vector
/// `init_ah_from_wc` derives from it.
fn pingpong(p: &Pair, index: u8, gid: Gid, rounds: u64) {
    let ctx = p.pd.context();
    let (client_buf, server_buf) = (p.mr(GRH_LEN + 64), p.mr(GRH_LEN + 64));
    let mut msg = p.mr(64);
    let mut server = p.b.endpoint();
    server.gid = gid;
    let route = Route::new()
        .traffic_class(TRAFFIC_CLASS)
        .hop_limit(HOP_LIMIT);
    let to_server =
        p.pd.create_ah(&server)
            .gid_index(index)
            .route(route)
            .build()
            .unwrap();
    let recv = |qp: &QueuePair, mr: &MemoryRegion, wr_id| {
        let sge = [mr.sge(..).unwrap()];
        qp.post_recv(&mut [RecvRequest::new(wr_id, &sge)]).unwrap();
    };
    // What the receiving side derives: back to `gid`, from the entry holding `gid`, with
    // the traffic class and hop limit of the datagram.
    let check_attr = |wc: &WorkCompletion, grh: &[u8; GRH_LEN]| {
        let hops = check_layout(grh, gid);
        let attr = ctx.init_ah_from_wc(1, wc, grh).unwrap();
        let route = attr.grh.expect("RoCE: a global route");
        assert_eq!(attr.port, 1);
        assert_eq!((route.dgid, route.sgid_index), (gid, index));
        assert_eq!(
            (route.traffic_class, route.hop_limit),
            (TRAFFIC_CLASS, hops)
        );
        if Ipv6Addr::from(gid).to_ipv4_mapped().is_some() {
            assert_eq!(route.flow_label, 0, "IPv4 has no flow label");
        }
    };
    for round in 0..rounds {
        recv(&p.b, &server_buf, round);
        recv(&p.a, &client_buf, round);
        let ping = format!("ping {round:3}");
        msg.write(0, ping.as_bytes()).unwrap();
        let sge = [msg.sge(..ping.len()).unwrap()];
        p.a.post_send(&mut [SendRequest::send(round, &sge)
            .ud(&to_server, server.qpn, DEFAULT_QKEY)
            .signaled()])
            .unwrap();
        poll_one(&p.a_cq).ok().unwrap();

        // The server: the datagram, and the handle back to its sender.
        let wc = poll_one(&p.b_cq);
        wc.ok().unwrap();
        assert!(wc.has_grh());
        assert_eq!(wc.src_qp(), p.a.qp_num());
        assert_eq!(payload_at(&server_buf, 0, ping.len()), ping.as_bytes());
        let grh = grh_at(&server_buf, 0);
        check_attr(&wc, &grh);
        // The whole buffer does as well as its first 40 bytes.
        let mut whole = vec![0; server_buf.len()];
        server_buf.read(0, &mut whole).unwrap();
        let back = p.pd.create_ah_from_wc(p.b.port(), &wc, &whole).unwrap();
        let pong = format!("pong {round:3}");
        msg.write(0, pong.as_bytes()).unwrap();
        let sge = [msg.sge(..pong.len()).unwrap()];
        p.b.post_send(&mut [SendRequest::send(round, &sge)
            .ud(&back, wc.src_qp(), DEFAULT_QKEY)
            .signaled()])
            .unwrap();
        poll_one(&p.b_cq).ok().unwrap();

        // The client: the answer came from the server's QP, over the same route.
        let wc = poll_one(&p.a_cq);
        wc.ok().unwrap();
        assert_eq!(wc.src_qp(), p.b.qp_num());
        assert_eq!(payload_at(&client_buf, 0, pong.len()), pong.as_bytes());
        let grh = grh_at(&client_buf, 0);
        check_attr(&wc, &grh);
    }
}

#[test]
fn ud_server_answers_each_sender_through_the_handle_of_its_datagram() {
    if !provider_has(Need::Ud) {
        return;
    }
    let p = Pair::new(QpType::Ud);
    let ctx = p.pd.context();
    // RoCE v2 over IPv4: the test GID (index 1).
    let v4 = gid();
    let index = v2_index(ctx, v4).expect("the test GID is RoCE v2");
    pingpong(&p, index, v4, 8);
    // RoCE v2 over IPv6: the netdev's ::1, where it has it (rxe on lo does).
    let v6: Gid = "::1".parse().unwrap();
    match v2_index(ctx, v6) {
        Some(index) => pingpong(&p, index, v6, 8),
        None => say(format!(
            "ah_from_wc: no RoCE v2 GID {v6} on port 1: IPv6 not run"
        )),
    }
    drop(p);
    assert_clean_drops();
}

/// A server on an extended CQ with `fields`, answering one datagram from inside the poll
/// session that read it.
fn answer_from_a_poll_session(fields: WcFields) {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, None).unwrap();
    let mut server_cq = ctx.create_cq_ex(16, fields, None).unwrap();
    let ud = |scq: &CompletionQueue, rcq: &CompletionQueue| {
        pd.create_qp(QpType::Ud, scq, rcq)
            .build()
            .unwrap()
            .ready()
            .unwrap()
    };
    let client = ud(&cq, &cq);
    let server = ud(&server_cq, &server_cq);
    let (client_buf, server_buf) = (
        pd.alloc_mr(GRH_LEN + 16, ALL).unwrap(),
        pd.alloc_mr(GRH_LEN + 16, ALL).unwrap(),
    );
    let mut msg = pd.alloc_mr(16, ALL).unwrap();
    msg.write(0, b"hello").unwrap();
    let sge = [msg.sge(..5).unwrap()];
    let (csge, ssge) = ([client_buf.sge(..).unwrap()], [server_buf.sge(..).unwrap()]);
    server.post_recv(&mut [RecvRequest::new(1, &ssge)]).unwrap();
    client.post_recv(&mut [RecvRequest::new(2, &csge)]).unwrap();
    let to_server = pd.create_ah(&server.endpoint()).build().unwrap();
    client
        .post_send(&mut [SendRequest::send(3, &sge)
            .ud(&to_server, server.qp_num(), DEFAULT_QKEY)
            .signaled()])
        .unwrap();
    poll_one(&cq).ok().unwrap();

    let mut answered = None;
    let n = server_cq
        .poll_each_until(1, Some(Duration::from_secs(10)), |wc| {
            wc.ok()?;
            assert!(wc.has_grh());
            let grh = grh_at(&server_buf, 0);
            let attr = ctx.init_ah_from_wc(1, wc, &grh)?;
            assert_eq!(attr.grh.map(|g| g.dgid), Some(client.endpoint().gid));
            let ah = pd.create_ah_from_wc(1, wc, &grh)?;
            answered = Some((ah, wc.src_qp().expect("the CQ has SRC_QP")));
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 1);
    let (ah, qpn) = answered.unwrap();
    assert_eq!(qpn, client.qp_num());
    server
        .post_send(&mut [SendRequest::send(4, &sge)
            .ud(&ah, qpn, DEFAULT_QKEY)
            .signaled()])
        .unwrap();
    let wc = poll_one(&cq);
    assert_eq!((wc.wr_id(), wc.src_qp()), (2, server.qp_num()));
    assert_eq!(payload_at(&client_buf, 0, 5), b"hello");
    drop((ah, to_server, client, server, server_cq));
}

#[test]
fn ud_server_answers_from_an_extended_cq() {
    if !provider_has(Need::Ud) {
        return;
    }
    answer_from_a_poll_session(WcFields::STANDARD);
    // On RoCE the LID, SL and path bits are not needed: a CQ without them will do.
    answer_from_a_poll_session(WcFields::BYTE_LEN | WcFields::SRC_QP);
    assert_clean_drops();
}

/// The reason of an [`Error::AhFromWc`].
#[track_caller]
fn reason<T: std::fmt::Debug>(got: rdma_verbs::Result<T>) -> AhFromWcError {
    match got {
        Err(Error::AhFromWc { reason }) => reason,
        other => panic!("expected Error::AhFromWc, got {other:?}"),
    }
}

/// A GRH / IPv6 header with next header `next` from `sgid` to `dgid`.
fn grh(next: u8, sgid: &str, dgid: &str) -> [u8; GRH_LEN] {
    let mut b = [0; GRH_LEN];
    b[0] = 0x60;
    (b[6], b[7]) = (next, 64);
    b[8..24].copy_from_slice(&sgid.parse::<Gid>().unwrap().to_bytes());
    b[24..].copy_from_slice(&dgid.parse::<Gid>().unwrap().to_bytes());
    b
}

/// RoCE v2 over IPv4: `first` in bytes 0..20, then an IPv4 header from `saddr` to `daddr`
/// with type of service `tos` and time to live `ttl`, with a valid checksum.
fn ipv4(first: u8, saddr: [u8; 4], daddr: [u8; 4], tos: u8, ttl: u8) -> [u8; GRH_LEN] {
    let mut b = [first; GRH_LEN];
    let h = &mut b[20..];
    h[..12].copy_from_slice(&[0x45, tos, 0, 60, 0, 1, 0x40, 0, ttl, 17, 0, 0]);
    h[12..16].copy_from_slice(&saddr);
    h[16..].copy_from_slice(&daddr);
    let sum: u32 = (0..20)
        .step_by(2)
        .map(|i| u32::from(u16::from_be_bytes([h[i], h[i + 1]])))
        .sum();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    b
}

/// One datagram received by `p.b` from `p.a`: its completion and its 40 bytes.
fn one_datagram(p: &Pair) -> (WorkCompletion, [u8; GRH_LEN]) {
    let (buf, mut msg) = (p.mr(GRH_LEN + 8), p.mr(8));
    msg.fill(1);
    let rsge = [buf.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();
    let ah = p.pd.create_ah(&p.b.endpoint()).build().unwrap();
    let sge = [msg.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send(2, &sge)
        .ud(&ah, p.b.qp_num(), DEFAULT_QKEY)
        .signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let wc = poll_one(&p.b_cq);
    wc.ok().unwrap();
    (wc, grh_at(&buf, 0))
}

#[test]
fn completions_that_answer_no_one_are_typed_errors() {
    if !provider_has(Need::Ud) {
        return;
    }
    let p = Pair::new(QpType::Ud);
    let ctx = p.pd.context();
    let (wc, grh) = one_datagram(&p);
    ctx.init_ah_from_wc(1, &wc, &grh).unwrap();

    // Ports the device does not have.
    for port in [0, 2] {
        let err = p.pd.create_ah_from_wc(port, &wc, &grh).unwrap_err();
        assert!(
            matches!(err, Error::OutOfRange { what: "port", value, min: 1, max: 1 } if value == u64::from(port)),
            "{err}"
        );
    }
    // Fewer than 40 bytes: the payload without its GRH, or nothing.
    for len in [0, 8, 39] {
        assert_eq!(
            reason(p.pd.create_ah_from_wc(1, &wc, &grh[..len])),
            AhFromWcError::ShortBuffer { len, required: 40 }
        );
    }
    let err = ctx.init_ah_from_wc(1, &wc, &grh[..39]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no address handle from the completion: 39 received bytes, fewer than the 40-byte \
         GRH they start with"
    );
    // A send's completion, and an empty one (IBV_WC_SEND, success): no sender.
    let ah = p.pd.create_ah(&p.b.endpoint()).build().unwrap();
    let empty: &[rdma_verbs::Sge] = &[];
    p.a.post_send(&mut [SendRequest::send(9, empty)
        .ud(&ah, p.b.qp_num(), DEFAULT_QKEY)
        .signaled()])
        .unwrap();
    let send = poll_one(&p.a_cq);
    send.ok().unwrap();
    drop(ah);
    for wc in [send, WorkCompletion::default()] {
        assert_eq!(
            reason(ctx.init_ah_from_wc(1, &wc, &grh)),
            AhFromWcError::NotReceive {
                opcode: WcOpcode::Send
            }
        );
    }

    // A receive without a GRH on RoCE. rxe flags every receive with IBV_WC_GRH, so the
    // flag of a real UD one is cleared.
    let mut raw = *wc.as_raw();
    raw.wc_flags &= !rdma_verbs::ffi::ibv_wc_flags::IBV_WC_GRH.0;
    // SAFETY: WorkCompletion is repr(transparent) over ibv_wc (CompletionQueue::poll fills
    // it as one), and its accessors take any ibv_wc.
    let no_grh = unsafe { std::mem::transmute::<rdma_verbs::ffi::ibv_wc, WorkCompletion>(raw) };
    assert!(!no_grh.has_grh());
    assert_eq!(
        reason(p.pd.create_ah_from_wc(1, &no_grh, &grh)),
        AhFromWcError::NoGrh { port: 1 }
    );
    // A receive on a connected QP, whose buffer holds payload from byte 0 (here 0x11s, then
    // zeros): no GRH, or (rxe, which flags it all the same) no header in the bytes.
    let rc = Pair::new(QpType::Rc);
    let (buf, mut src) = (rc.mr(64), rc.mr(8));
    src.fill(0x11);
    rc.b.post_recv(&mut [RecvRequest::new(1, &[buf.sge(..).unwrap()])])
        .unwrap();
    rc.a.post_send(&mut [SendRequest::send(2, &[src.sge(..).unwrap()]).signaled()])
        .unwrap();
    poll_one(&rc.a_cq).ok().unwrap();
    let rc_wc = poll_one(&rc.b_cq);
    assert_eq!(rc_wc.opcode(), WcOpcode::Recv);
    let got = reason(rc.pd.create_ah_from_wc(1, &rc_wc, &grh_at(&buf, 0)));
    if rc_wc.has_grh() {
        assert_eq!(
            got,
            AhFromWcError::UnknownHeader {
                version: 1,
                ipv4_version: 0
            }
        );
    } else {
        assert_eq!(got, AhFromWcError::NoGrh { port: 1 });
    }

    // A failed completion: its fields are undefined; the status is the error.
    let buf = p.mr(GRH_LEN + 8);
    p.b.post_recv(&mut [RecvRequest::new(5, &[buf.sge(..).unwrap()])])
        .unwrap();
    p.b.to_error().unwrap();
    let flushed = poll_one(&p.b_cq);
    let err = p.pd.create_ah_from_wc(1, &flushed, &grh).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Completion {
                wr_id: 5,
                status: WcStatus::WR_FLUSH_ERR,
                ..
            }
        ),
        "{err}"
    );
    drop((p, rc));
    assert_clean_drops();
}

#[test]
fn crafted_and_garbage_headers_are_typed_errors_or_a_handle() {
    if !provider_has(Need::Ud) {
        return;
    }
    let p = Pair::new(QpType::Ud);
    let ctx = p.pd.context();
    let (wc, _) = one_datagram(&p);
    let local = gid();
    let local_v4: [u8; 4] = local.to_bytes()[12..].try_into().unwrap();
    let index = v2_index(ctx, local).unwrap();
    let g = |s: &str| s.parse::<Gid>().unwrap();
    let table = ctx.gid_table(1).unwrap();
    let init = |bytes: &[u8]| ctx.init_ah_from_wc(1, &wc, bytes);

    // Neither header.
    assert_eq!(
        reason(init(&[0; GRH_LEN])),
        AhFromWcError::UnknownHeader {
            version: 0,
            ipv4_version: 0
        }
    );
    assert_eq!(
        reason(init(&[0xff; GRH_LEN])),
        AhFromWcError::UnknownHeader {
            version: 15,
            ipv4_version: 15
        }
    );
    // A GRH with a next header that is neither InfiniBand's nor UDP (TCP here).
    assert_eq!(
        reason(init(&grh(6, "::1", "::1"))),
        AhFromWcError::UnknownNextHeader { next_header: 6 }
    );
    // Multicast destinations, IPv6 and IPv4.
    assert_eq!(
        reason(init(&grh(17, "::1", "ff02::1"))),
        AhFromWcError::MulticastDestination {
            group: g("ff02::1")
        }
    );
    assert_eq!(
        reason(init(&ipv4(0, local_v4, [224, 0, 0, 1], 0, 64))),
        AhFromWcError::MulticastDestination {
            group: g("::ffff:224.0.0.1")
        }
    );
    // Destinations that are no GID of the port: zero (which would match an empty entry),
    // an address of nobody's, IPv6 and IPv4.
    for (bytes, dest) in [
        (grh(17, "::1", "::"), "::"),
        (grh(17, "::1", "2001:db8::1"), "2001:db8::1"),
        (
            ipv4(0, local_v4, [10, 255, 255, 1], 0, 64),
            "::ffff:10.255.255.1",
        ),
    ] {
        assert_eq!(
            reason(init(&bytes)),
            AhFromWcError::GidNotFound {
                gid: g(dest),
                gid_type: GidType::RoceV2,
                port: 1
            },
            "{dest}"
        );
    }
    // Next header 0x1B asks for a RoCE v1 entry of the destination.
    let v1 = table
        .iter()
        .any(|e| e.gid == local && e.gid_type == GidType::RoceV1);
    let got = init(&grh(0x1b, "::1", &local.to_string()));
    if v1 {
        got.unwrap();
    } else {
        assert_eq!(
            reason(got),
            AhFromWcError::GidNotFound {
                gid: local,
                gid_type: GidType::RoceV1,
                port: 1
            }
        );
    }

    // A forged IPv4 sender: the vector goes back to it, from the entry of the destination,
    // with its type of service and time to live. Bytes 0..20 say IP version 6, and are not
    // taken for a GRH since the IPv4 header's checksum holds; nor for the flow label.
    let forged = ipv4(0x6f, [127, 0, 0, 9], local_v4, 0x48, 3);
    let attr = init(&forged).unwrap();
    let route = attr.grh.unwrap();
    assert_eq!(
        (
            route.dgid,
            route.sgid_index,
            route.traffic_class,
            route.hop_limit,
            route.flow_label
        ),
        (g("::ffff:127.0.0.9"), index, 0x48, 3, 0)
    );
    let ah = p.pd.create_ah_from_attr(&attr).unwrap();
    drop(ah);
    // The vector checked again when it is changed by hand.
    let mut bad = attr;
    bad.grh.as_mut().unwrap().sgid_index = 255;
    let err = p.pd.create_ah_from_attr(&bad).unwrap_err();
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
    let mut bad = attr;
    bad.grh = None;
    assert!(matches!(
        p.pd.create_ah_from_attr(&bad),
        Err(Error::InvalidArgument {
            what: "address vector",
            ..
        })
    ));

    // Garbage: random bytes, some steered into each branch. Each is a vector or a typed
    // error, never a crash; a few of the vectors are made into handles, which the provider
    // may refuse (a typed error too).
    let start = Instant::now();
    let (mut made, mut refused, mut kinds) = (0, 0, std::collections::BTreeMap::new());
    for i in 0..2000u64 {
        let mut b = [0u8; GRH_LEN];
        for (j, chunk) in b.chunks_mut(8).enumerate() {
            chunk.copy_from_slice(&mix(i * 8 + j as u64).to_ne_bytes());
        }
        match i % 4 {
            0 => b[0] = 0x60 | (b[0] & 0xf),
            1 => {
                b[0] = 0x60 | (b[0] & 0xf);
                b[6] = 17;
                b[24..].copy_from_slice(&local.to_bytes());
            }
            2 => {
                b[0] &= 0x5f;
                b[20] = 0x45;
                b[36..].copy_from_slice(&local_v4);
            }
            _ => {}
        }
        let kind = match ctx.init_ah_from_wc(1, &wc, &b) {
            Ok(attr) => {
                if made + refused < 16 {
                    match p.pd.create_ah_from_attr(&attr) {
                        Ok(_) => made += 1,
                        Err(Error::Verb {
                            verb: "ibv_create_ah",
                            ..
                        }) => refused += 1,
                        Err(e) => panic!("creating {attr:?}: {e}"),
                    }
                }
                "a vector".to_owned()
            }
            Err(Error::AhFromWc { reason }) => format!("{reason:?}")
                .split([' ', '{'])
                .next()
                .unwrap()
                .to_owned(),
            Err(e) => panic!("{b:02x?}: {e}"),
        };
        *kinds.entry(kind).or_insert(0) += 1;
    }
    say(format!(
        "ah_from_wc: 2000 garbage headers in {:?}: {kinds:?}; handles made {made}, refused \
         by the provider {refused}",
        start.elapsed()
    ));
    assert!(kinds.len() >= 4, "the branches were reached: {kinds:?}");
    drop(p);
    assert_clean_drops();
}
