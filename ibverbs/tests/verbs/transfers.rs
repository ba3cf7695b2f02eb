//! Moving data: sends, RDMA writes and reads, atomics, on RC, UC and UD QPs, through an SRQ,
//! memory windows and address handles, completion events, and the extended send API.

use rdma_verbs_test_kit::{assert_clean_drops, assert_empty, open};
use rdma_verbs_test_kit::{provider_has, Need};

use rdma_verbs::{
    AccessFlags, Error, MemoryRegion, MwType, QpType, RecvRequest, SendRequest, WcOpcode, WcStatus,
    WrError, WrOpcode,
};

use crate::common::{connect, contents, poll_one, Pair, ALL};

#[test]
fn rc_send_recv_with_and_without_imm() {
    if !provider_has(Need::ImmediateData) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let mut src = p.mr(64);
    let dst = p.mr(128);
    src.fill(0xab);

    let rsge = [dst.sge(..64).unwrap()];
    let rsge2 = [dst.sge(64..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(10, &rsge), RecvRequest::new(11, &rsge2)])
        .unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [
        SendRequest::send(1, &sge).signaled(),
        SendRequest::send_with_imm(2, &sge, 0xdead_beef).signaled(),
    ])
    .unwrap();

    for want in [1, 2] {
        let wc = poll_one(&p.a_cq);
        assert_eq!(
            (wc.wr_id(), wc.status(), wc.opcode()),
            (want, WcStatus::SUCCESS, WcOpcode::Send)
        );
    }
    let r1 = poll_one(&p.b_cq);
    assert_eq!(
        (r1.wr_id(), r1.opcode(), r1.byte_len(), r1.imm_data()),
        (10, WcOpcode::Recv, 64, None)
    );
    let r2 = poll_one(&p.b_cq);
    assert_eq!((r2.wr_id(), r2.imm_data()), (11, Some(0xdead_beef)));
    assert_eq!(r2.qp_num(), p.b.qp_num());
    assert_eq!(contents(&dst), vec![0xab; 128]);
    drop(p);
    assert_clean_drops();
}

#[test]
fn rc_write_read_and_write_with_imm() {
    if !provider_has(Need::ImmediateData) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let mut local = p.mr(4096);
    let remote = p.mr(4096);
    local.write(0, b"hello, rdma").unwrap();

    let sge = [local.sge(0..11).unwrap()];
    let target = remote.remote().slice(100, 11).unwrap();
    p.a.post_send(&mut [SendRequest::write(1, &sge, target).signaled()])
        .unwrap();
    assert_eq!(
        poll_one(&p.a_cq).ok().unwrap().opcode(),
        WcOpcode::RdmaWrite
    );
    let mut got = [0; 11];
    remote.read(100, &mut got).unwrap();
    assert_eq!(&got, b"hello, rdma");

    // Read it back into another part of the local region.
    let back = [local.sge(2000..2011).unwrap()];
    p.a.post_send(&mut [SendRequest::read(2, &back, target).signaled()])
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(
        (wc.status(), wc.opcode(), wc.byte_len()),
        (WcStatus::SUCCESS, WcOpcode::RdmaRead, 11)
    );
    local.read(2000, &mut got).unwrap();
    assert_eq!(&got, b"hello, rdma");

    // Write with immediate consumes a receive at the target.
    let none: [rdma_verbs::Sge<'_>; 0] = [];
    p.b.post_recv(&mut [RecvRequest::new(7, &none)]).unwrap();
    p.a.post_send(&mut [SendRequest::write_with_imm(3, &sge, remote.remote(), 42).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let wc = poll_one(&p.b_cq);
    assert_eq!(
        (wc.wr_id(), wc.opcode(), wc.imm_data(), wc.byte_len()),
        (7, WcOpcode::RecvRdmaWithImm, Some(42), 11)
    );
    drop(p);
    assert_clean_drops();
}

#[test]
fn rc_atomics() {
    if !provider_has(Need::Atomics) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let mut remote = p.mr(8);
    remote.write(0, &5u64.to_ne_bytes()).unwrap();
    let result = p.mr(8);
    let sge = result.sge(..).unwrap();

    p.a.post_send(&mut [SendRequest::fetch_add(1, &sge, remote.remote(), 10).signaled()])
        .unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().opcode(), WcOpcode::FetchAdd);
    let read_u64 = |mr: &MemoryRegion| {
        let mut b = [0; 8];
        mr.read(0, &mut b).unwrap();
        u64::from_ne_bytes(b)
    };
    assert_eq!(read_u64(&result), 5);
    assert_eq!(read_u64(&remote), 15);

    // A compare that fails leaves the value; one that matches swaps it.
    p.a.post_send(&mut [SendRequest::compare_swap(2, &sge, remote.remote(), 99, 1).signaled()])
        .unwrap();
    assert_eq!(
        poll_one(&p.a_cq).ok().unwrap().opcode(),
        WcOpcode::CompareSwap
    );
    assert_eq!((read_u64(&result), read_u64(&remote)), (15, 15));
    p.a.post_send(&mut [SendRequest::compare_swap(3, &sge, remote.remote(), 15, 1).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    assert_eq!((read_u64(&result), read_u64(&remote)), (15, 1));
    drop(p);
    assert_clean_drops();
}

#[test]
fn inline_sends_scatter_gather_and_post_lists() {
    let p = Pair::with(
        QpType::Rc,
        |b| b.max_inline_data(64).max_send_sge(3).max_recv_sge(2),
        |_| {},
    );
    assert!(p.a.max_inline_data() >= 64);
    let mut src = p.mr(300);
    for (i, chunk) in [(0, b'a'), (100, b'b'), (200, b'c')] {
        src.write(i, &[chunk; 100]).unwrap();
    }
    let dst = p.mr(300);

    // Three SGEs gathered into one message, scattered into two receive SGEs.
    let rsge = [dst.sge(..150).unwrap(), dst.sge(150..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();
    let gather = [
        src.sge(200..300).unwrap(),
        src.sge(0..100).unwrap(),
        src.sge(100..200).unwrap(),
    ];
    p.a.post_send(&mut [SendRequest::send(1, &gather).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    assert_eq!(poll_one(&p.b_cq).byte_len(), 300);
    let got = contents(&dst);
    assert_eq!(&got[..100], &[b'c'; 100]);
    assert_eq!(&got[100..200], &[b'a'; 100]);
    assert_eq!(&got[200..], &[b'b'; 100]);

    // A post list of 16 inline writes, only the last signaled: one completion.
    let one = [src.sge(0..8).unwrap()];
    let mut list: Vec<_> = (0..16)
        .map(|i| SendRequest::write(i, &one, dst.remote().slice(i * 8, 8).unwrap()).inline())
        .collect();
    let last = list.pop().unwrap().signaled();
    list.push(last);
    p.a.post_send(&mut list).unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 15);
    assert_empty(&p.a_cq, "after the one signaled request of the list");
    assert_eq!(&contents(&dst)[..128], &[b'a'; 128]);
    drop(p);
    assert_clean_drops();
}

#[test]
fn uc_send_and_write() {
    if !provider_has(Need::Uc) {
        return;
    }
    let p = Pair::new(QpType::Uc);
    let mut src = p.mr(32);
    src.fill(7);
    let dst = p.mr(64);
    let rsge = [dst.sge(..32).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [
        SendRequest::send(1, &sge).signaled(),
        SendRequest::write(2, &sge, dst.remote().slice(32, 32).unwrap()).signaled(),
    ])
    .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    assert_eq!(poll_one(&p.b_cq).byte_len(), 32);
    assert_eq!(contents(&dst), vec![7; 64]);
    drop(p);
    assert_clean_drops();
}

#[test]
fn ud_send_recv_through_an_address_handle() {
    if !provider_has(Need::Ud) {
        return;
    }
    let p = Pair::new(QpType::Ud);
    let mut src = p.mr(100);
    src.fill(0x5a);
    // UD receives start with a 40-byte GRH.
    let dst = p.mr(40 + 100);
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();

    let remote = p.b.endpoint();
    let ah = p.pd.create_ah(&remote).gid_index(1).build().unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send(1, &sge)
        .ud(&ah, remote.qpn, rdma_verbs::DEFAULT_QKEY)
        .signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let wc = poll_one(&p.b_cq);
    assert_eq!(
        (wc.status(), wc.byte_len(), wc.src_qp()),
        (WcStatus::SUCCESS, 140, p.a.qp_num())
    );
    assert!(wc.has_grh());
    assert_eq!(&contents(&dst)[40..], &[0x5a; 100]);
    drop(ah);
    drop(p);
    assert_clean_drops();
}

#[test]
fn srq_feeds_two_queue_pairs() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let srq = pd.create_srq(16, 1).unwrap();
    let cq = ctx.create_cq(16, None).unwrap();
    let scq = ctx.create_cq(16, None).unwrap();
    let mk = |with_srq: bool| {
        let b = pd.create_qp(QpType::Rc, &scq, &cq);
        if with_srq { b.srq(&srq) } else { b }.build().unwrap()
    };
    let (r1, r2, s1, s2) = (mk(true), mk(true), mk(false), mk(false));
    let (s1, r1, _link1) = connect(QpType::Rc, s1, r1);
    let (s2, r2, _link2) = connect(QpType::Rc, s2, r2);

    let buf = pd.alloc_mr(64, ALL).unwrap();
    let rs = [buf.sge(..32).unwrap()];
    let rs2 = [buf.sge(32..).unwrap()];
    srq.post_recv(&mut [RecvRequest::new(100, &rs), RecvRequest::new(101, &rs2)])
        .unwrap();
    let mut msg = pd.alloc_mr(8, ALL).unwrap();
    msg.write(0, b"to-srq!!").unwrap();
    let sge = [msg.sge(..).unwrap()];
    s1.post_send(&mut [SendRequest::send(1, &sge).signaled()])
        .unwrap();
    s2.post_send(&mut [SendRequest::send(2, &sge).signaled()])
        .unwrap();
    let mut qps = vec![poll_one(&cq).qp_num(), poll_one(&cq).qp_num()];
    qps.sort_unstable();
    let mut want = vec![r1.qp_num(), r2.qp_num()];
    want.sort_unstable();
    assert_eq!(qps, want);
    poll_one(&scq).ok().unwrap();
    poll_one(&scq).ok().unwrap();
    drop((r1, r2, s1, s2, srq));
    assert_clean_drops();
}

#[test]
fn memory_windows_type_1_and_2() {
    if !provider_has(Need::MemoryWindows) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let target = p.pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mut src = p.mr(16);
    src.fill(0x33);
    let sge = [src.sge(..).unwrap()];

    // Type 1: bound by a verb on the target side's QP.
    let mut mw1 = p.pd.alloc_mw(MwType::Type1).unwrap();
    let window =
        p.b.bind_mw(&mut mw1, &target, 1024..2048, AccessFlags::REMOTE_WRITE, 9)
            .unwrap();
    assert_eq!(poll_one(&p.b_cq).ok().unwrap().opcode(), WcOpcode::BindMw);
    p.a.post_send(&mut [SendRequest::write(1, &sge, window).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let mut got = [0; 16];
    target.read(1024, &mut got).unwrap();
    assert_eq!(got, [0x33; 16]);

    // Type 2: bound by a work request, with a fresh key.
    let mw2 = p.pd.alloc_mw(MwType::Type2).unwrap();
    let rkey = rdma_verbs::ffi::ibv_inc_rkey(mw2.rkey());
    let bind = SendRequest::bind_mw(2, &mw2, &target, 0..64, AccessFlags::REMOTE_WRITE, rkey)
        .unwrap()
        .signaled();
    p.b.post_send(&mut [bind]).unwrap();
    assert_eq!(poll_one(&p.b_cq).ok().unwrap().opcode(), WcOpcode::BindMw);
    let window2 = rdma_verbs::RemoteMemory::new(target.addr(), 64, rkey);
    p.a.post_send(&mut [SendRequest::write(3, &sge, window2).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    target.read(0, &mut got).unwrap();
    assert_eq!(got, [0x33; 16]);

    // The key the window had before the bind grants nothing. (rxe checks a window's
    // accesses against the whole underlying region, so a range test would not tell.)
    let stale = rdma_verbs::RemoteMemory::new(target.addr(), 16, mw2.rkey());
    assert_ne!(stale.rkey, rkey);
    p.a.post_send(&mut [SendRequest::write(4, &sge, stale).signaled()])
        .unwrap();
    assert_eq!(poll_one(&p.a_cq).status(), WcStatus::REM_ACCESS_ERR);
    drop((mw1, mw2));
    drop(target);
    drop(p);
    assert_clean_drops();
}

#[test]
fn event_driven_completion() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, Some(&channel)).unwrap();
    let scq = ctx.create_cq(16, None).unwrap();
    let a = pd.create_qp(QpType::Rc, &scq, &scq).build().unwrap();
    let b = pd.create_qp(QpType::Rc, &scq, &cq).build().unwrap();
    let (a, b, _link) = connect(QpType::Rc, a, b);
    let buf = pd.alloc_mr(64, ALL).unwrap();
    let rs = [buf.sge(..).unwrap()];

    // No event yet.
    cq.req_notify(false).unwrap();
    assert!(!cq.wait_timeout(std::time::Duration::ZERO).unwrap());

    for round in 0..3 {
        b.post_recv(&mut [RecvRequest::new(round, &rs)]).unwrap();
        a.post_send(&mut [SendRequest::send(round, &rs[..]).signaled()])
            .unwrap();
        // The channel's fd becomes readable.
        let mut pfd = libc::pollfd {
            // SAFETY: only polled; the event is taken by wait.
            fd: unsafe { channel.raw_fd() },
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: pfd is a valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, 10_000) };
        assert_eq!(n, 1, "no completion event within 10 s");
        cq.wait().unwrap();
        cq.req_notify(false).unwrap();
        assert_eq!(poll_one(&cq).wr_id(), round);
        poll_one(&scq).ok().unwrap();
    }
    drop((a, b, cq));
    assert_clean_drops();
}

#[test]
fn extended_send_api_batches() {
    if !provider_has(Need::Atomics) {
        return;
    }
    use rdma_verbs::SendOps;
    let ops =
        SendOps::SEND | SendOps::RDMA_WRITE | SendOps::RDMA_READ | SendOps::ATOMIC_FETCH_AND_ADD;
    let mut p = Pair::with(QpType::Rc, |b| b.send_ops(ops).max_inline_data(32), |_| {});
    assert_eq!(p.a.send_ops(), ops);
    let mut src = p.mr(64);
    src.write(0, b"batched!").unwrap();
    let dst = p.mr(64);
    let counter = p.mr(8);
    let rsge = [dst.sge(32..40).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(9, &rsge)]).unwrap();

    let sge = [src.sge(0..8).unwrap()];
    let result = src.sge(56..64).unwrap();
    p.a.batch(|batch| {
        batch.push(&SendRequest::write(1, &sge, dst.remote()).signaled())?;
        batch.push(
            &SendRequest::write(2, &sge, dst.remote().slice(8, 8).unwrap())
                .inline()
                .signaled(),
        )?;
        batch.push(&SendRequest::send(3, &sge).signaled())?;
        batch.push(&SendRequest::fetch_add(4, &result, counter.remote(), 3).signaled())?;
        // Not enabled at creation: refused, and the rest of the batch still posts.
        let err = batch
            .push(&SendRequest::send_with_imm(5, &sge, 1))
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::Request {
                    index: 4,
                    reason: WrError::OpcodeNotEnabled {
                        opcode: WrOpcode::SendWithImm
                    }
                }
            ),
            "{err}"
        );
        Ok(())
    })
    .unwrap();
    for want in 1..=4 {
        assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), want);
    }
    assert_eq!(poll_one(&p.b_cq).ok().unwrap().byte_len(), 8);
    let got = contents(&dst);
    assert_eq!(&got[..8], b"batched!");
    assert_eq!(&got[8..16], b"batched!");
    assert_eq!(&got[32..40], b"batched!");
    assert_eq!(contents(&counter), 3u64.to_ne_bytes());

    // The same through the batch's per-operation requests, plus a read; one dropped
    // without push adds nothing.
    p.b.post_recv(&mut [RecvRequest::new(19, &rsge)]).unwrap();
    let back = src.sge(16..24).unwrap();
    let back = [back];
    p.a.batch(|batch| {
        batch
            .write(11, &sge, dst.remote().slice(16, 8).unwrap())
            .signaled()
            .push()?;
        let _dropped = batch.write(99, &sge, dst.remote()).signaled();
        batch
            .write(12, &sge, dst.remote().slice(24, 8).unwrap())
            .inline()
            .signaled()
            .push()?;
        batch.send(13, &sge).signaled().push()?;
        batch
            .fetch_add(14, &result, counter.remote(), 4)
            .signaled()
            .push()?;
        batch
            .read(15, &back, dst.remote().slice(0, 8).unwrap())
            .signaled()
            .push()?;
        let err = batch.send_with_imm(16, &sge, 1).push().unwrap_err();
        assert!(
            matches!(
                err,
                Error::Request {
                    index: 5,
                    reason: WrError::OpcodeNotEnabled {
                        opcode: WrOpcode::SendWithImm
                    }
                }
            ),
            "{err}"
        );
        assert_eq!(batch.len(), 5);
        Ok(())
    })
    .unwrap();
    for want in 11..=15 {
        assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), want);
    }
    assert_empty(&p.a_cq, "after the batch of requests");
    assert_eq!(poll_one(&p.b_cq).ok().unwrap().wr_id(), 19);
    let got = contents(&dst);
    assert_eq!(&got[16..24], b"batched!");
    assert_eq!(&got[24..32], b"batched!");
    assert_eq!(&contents(&src)[16..24], b"batched!");
    assert_eq!(contents(&counter), 7u64.to_ne_bytes());

    // An aborted batch (the closure fails) posts nothing.
    let err =
        p.a.batch(|batch| {
            batch.push(&SendRequest::write(6, &sge, dst.remote()).signaled())?;
            batch.push(&SendRequest::send_with_imm(7, &sge, 1))
        })
        .unwrap_err();
    assert!(matches!(err, Error::Request { index: 1, .. }), "{err}");
    assert_empty(&p.a_cq, "after an aborted batch");

    // A QP built without send ops has no batch.
    let mut plain = Pair::new(QpType::Rc);
    let err = plain.a.batch(|_| Ok(())).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "queue pair",
                ..
            }
        ),
        "{err}"
    );
    drop((p, plain));
    assert_clean_drops();
}
