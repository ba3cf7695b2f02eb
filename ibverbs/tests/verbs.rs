//! The safe API on a real device (run through `scripts/with-rdma`; rxe in CI).
//!
//! Every test checks at its end that no destroy call failed in a destructor.

use std::time::{Duration, Instant};

use ibverbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, Error, MemoryRegion, MwType,
    PreparedQueuePair, ProtectionDomain, QpState, QpType, QueuePair, RecvRequest, Route,
    SendRequest, WcOpcode, WcStatus, WorkCompletion, WrError, WrOpcode,
};

fn device() -> String {
    std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned())
}

fn open() -> Context {
    Context::open(&device()).unwrap_or_else(|e| {
        panic!("cannot open the test device (run the tests through scripts/with-rdma): {e}")
    })
}

/// Asserts that no destroy call has failed in a destructor so far.
fn assert_clean_drops() {
    assert_eq!(ibverbs::drop_error::count(), 0, "a destroy call failed");
}

const ALL: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

/// Polls `cq` until one completion arrives, failing after 10 s instead of hanging.
fn poll_one(cq: &CompletionQueue) -> WorkCompletion {
    let mut wc = [WorkCompletion::default(); 1];
    let start = Instant::now();
    loop {
        if let [done] = cq.poll(&mut wc).expect("ibv_poll_cq") {
            return *done;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no completion within 10 s"
        );
        std::thread::yield_now();
    }
}

/// Asserts that `cq` stays empty for a moment.
fn assert_empty(cq: &CompletionQueue) {
    std::thread::sleep(Duration::from_millis(50));
    let mut wc = [WorkCompletion::default(); 4];
    let got = cq.poll(&mut wc).expect("ibv_poll_cq");
    assert!(got.is_empty(), "unexpected completions: {got:?}");
}

/// Two QPs of one type on one device, connected to each other.
struct Pair {
    pd: ProtectionDomain,
    a: QueuePair,
    a_cq: CompletionQueue,
    b: QueuePair,
    b_cq: CompletionQueue,
}

impl Pair {
    fn new(qp_type: QpType) -> Pair {
        Self::with(qp_type, |b| b, |_| {})
    }

    fn with(
        qp_type: QpType,
        config: impl Fn(ibverbs::QueuePairBuilder<'_>) -> ibverbs::QueuePairBuilder<'_>,
        before_connect: impl Fn(&PreparedQueuePair),
    ) -> Pair {
        let ctx = open();
        let pd = ctx.alloc_pd().unwrap();
        let a_cq = ctx.create_cq(64, None).unwrap();
        let b_cq = ctx.create_cq(64, None).unwrap();
        let a = config(pd.create_qp(qp_type, &a_cq, &a_cq).access(ALL))
            .build()
            .unwrap();
        let b = config(pd.create_qp(qp_type, &b_cq, &b_cq).access(ALL))
            .build()
            .unwrap();
        before_connect(&a);
        before_connect(&b);
        let (a, b) = if qp_type == QpType::Ud {
            (a.ready().unwrap(), b.ready().unwrap())
        } else {
            let (ea, eb) = (a.endpoint(), b.endpoint());
            let opts = ConnectOptions::default();
            (
                a.connect(&eb, &opts).unwrap(),
                b.connect(&ea, &opts).unwrap(),
            )
        };
        Pair {
            pd,
            a,
            a_cq,
            b,
            b_cq,
        }
    }

    fn mr(&self, len: usize) -> MemoryRegion {
        self.pd.alloc_mr(len, ALL).unwrap()
    }
}

fn filled(mr: &mut MemoryRegion, byte: u8) {
    let len = mr.len();
    mr.write(0, &vec![byte; len]).unwrap();
}

fn contents(mr: &MemoryRegion) -> Vec<u8> {
    let mut out = vec![0; mr.len()];
    mr.read(0, &mut out).unwrap();
    out
}

#[test]
fn rc_send_recv_with_and_without_imm() {
    let p = Pair::new(QpType::Rc);
    let mut src = p.mr(64);
    let dst = p.mr(128);
    filled(&mut src, 0xab);

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
    let none: [ibverbs::Sge<'_>; 0] = [];
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
    assert_empty(&p.a_cq);
    assert_eq!(&contents(&dst)[..128], &[b'a'; 128]);
    drop(p);
    assert_clean_drops();
}

#[test]
fn uc_send_and_write() {
    let p = Pair::new(QpType::Uc);
    let mut src = p.mr(32);
    filled(&mut src, 7);
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
    let p = Pair::new(QpType::Ud);
    let mut src = p.mr(100);
    filled(&mut src, 0x5a);
    // UD receives start with a 40-byte GRH.
    let dst = p.mr(40 + 100);
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();

    let remote = p.b.endpoint();
    let route = Route {
        sgid_index: 1,
        ..Route::default()
    };
    let ah = p.pd.create_ah(1, &remote, &route).unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send(1, &sge)
        .ud(&ah, remote.qpn, ibverbs::DEFAULT_QKEY)
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
    let opts = ConnectOptions::default();
    let (er1, er2, es1, es2) = (r1.endpoint(), r2.endpoint(), s1.endpoint(), s2.endpoint());
    let r1 = r1.connect(&es1, &opts).unwrap();
    let r2 = r2.connect(&es2, &opts).unwrap();
    let s1 = s1.connect(&er1, &opts).unwrap();
    let s2 = s2.connect(&er2, &opts).unwrap();

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
    let p = Pair::new(QpType::Rc);
    let target = p.pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mut src = p.mr(16);
    filled(&mut src, 0x33);
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
    let rkey = ibverbs::ffi::ibv_inc_rkey(mw2.rkey());
    let bind = SendRequest::bind_mw(2, &mw2, &target, 0..64, AccessFlags::REMOTE_WRITE, rkey)
        .unwrap()
        .signaled();
    p.b.post_send(&mut [bind]).unwrap();
    assert_eq!(poll_one(&p.b_cq).ok().unwrap().opcode(), WcOpcode::BindMw);
    let window2 = ibverbs::RemoteMemory {
        addr: target.addr(),
        len: 64,
        rkey,
    };
    p.a.post_send(&mut [SendRequest::write(3, &sge, window2).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    target.read(0, &mut got).unwrap();
    assert_eq!(got, [0x33; 16]);

    // The key the window had before the bind grants nothing. (rxe checks a window's
    // accesses against the whole underlying region, so a range test would not tell.)
    let stale = ibverbs::RemoteMemory {
        addr: target.addr(),
        len: 16,
        rkey: mw2.rkey(),
    };
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
    let mut cq = ctx.create_cq(16, Some(&channel)).unwrap();
    let scq = ctx.create_cq(16, None).unwrap();
    let a = pd.create_qp(QpType::Rc, &scq, &scq).build().unwrap();
    let b = pd.create_qp(QpType::Rc, &scq, &cq).build().unwrap();
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let a = a.connect(&eb, &ConnectOptions::default()).unwrap();
    let b = b.connect(&ea, &ConnectOptions::default()).unwrap();
    let buf = pd.alloc_mr(64, ALL).unwrap();
    let rs = [buf.sge(..).unwrap()];

    // Non-blocking: no event yet.
    channel.set_nonblocking(true).unwrap();
    cq.req_notify(false).unwrap();
    assert!(!cq.wait().unwrap());
    channel.set_nonblocking(false).unwrap();

    for round in 0..3 {
        b.post_recv(&mut [RecvRequest::new(round, &rs)]).unwrap();
        a.post_send(&mut [SendRequest::send(round, &rs[..]).signaled()])
            .unwrap();
        // The channel's fd becomes readable.
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&channel),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: pfd is a valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, 10_000) };
        assert_eq!(n, 1, "no completion event within 10 s");
        assert!(cq.wait().unwrap());
        cq.req_notify(false).unwrap();
        assert_eq!(poll_one(&cq).wr_id(), round);
        poll_one(&scq).ok().unwrap();
    }
    drop((a, b, cq));
    assert_clean_drops();
}

#[test]
fn objects_of_another_context_are_rejected() {
    let ctx1 = open();
    let ctx2 = open();
    let pd = ctx1.alloc_pd().unwrap();
    let foreign = ctx2.create_cq(4, None).unwrap();
    let own = ctx1.create_cq(4, None).unwrap();
    let err = pd
        .create_qp(QpType::Rc, &own, &foreign)
        .build()
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                what: "receive completion queue",
                owner: "device context"
            }
        ),
        "{err}"
    );
    let chan = ctx2.create_comp_channel().unwrap();
    let err = ctx1.create_cq(4, Some(&chan)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                what: "completion channel",
                ..
            }
        ),
        "{err}"
    );
    let pd2 = ctx1.alloc_pd().unwrap();
    let mr = pd2.alloc_mr(64, ALL | AccessFlags::MW_BIND).unwrap();
    let qp = pd.create_qp(QpType::Rc, &own, &own).build().unwrap();
    let peer = pd.create_qp(QpType::Rc, &own, &own).build().unwrap();
    let (e1, e2) = (qp.endpoint(), peer.endpoint());
    let qp = qp.connect(&e2, &ConnectOptions::default()).unwrap();
    let _peer = peer.connect(&e1, &ConnectOptions::default()).unwrap();
    let mut mw = pd.alloc_mw(MwType::Type1).unwrap();
    let err = qp
        .bind_mw(&mut mw, &mr, .., AccessFlags::REMOTE_READ, 1)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                what: "memory region",
                owner: "protection domain"
            }
        ),
        "{err}"
    );
    drop((mw, qp, _peer, mr));
    assert_clean_drops();
}

// ---------------------------------------------------------------------------------------
// Bad input: each gives the error named.

#[test]
fn bad_memory_registrations() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let err = pd.alloc_mr(0, ALL).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "buffer length",
                ..
            }
        ),
        "{err}"
    );
    let err = pd.register(Vec::new(), ALL).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "memory region length",
                ..
            }
        ),
        "{err}"
    );
    // Larger than the address space can hold.
    let err = pd.alloc_mr(usize::MAX - 4095, ALL).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "buffer length",
                ..
            }
        ),
        "{err}"
    );
    // Larger than memory: the allocation fails cleanly.
    let err = pd.alloc_mr(1 << 46, ALL).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOMEM), "{err}");
    // Remote write without local write is refused by the verb.
    let err = pd.alloc_mr(4096, AccessFlags::REMOTE_WRITE).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Verb {
                verb: "ibv_reg_mr",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    // Ranges outside the region.
    let mr = pd.alloc_mr(64, ALL).unwrap();
    let err = mr.sge(60..65).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "range end",
                value: 65,
                max: 64,
                ..
            }
        ),
        "{err}"
    );
    let err = mr.read(64, &mut [0]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "range end",
                ..
            }
        ),
        "{err}"
    );
    let err = mr.remote().slice(60, 5).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "remote range end",
                ..
            }
        ),
        "{err}"
    );
    // A deregistered buffer comes back intact.
    let mut mr = pd.register(vec![1u8; 16], ALL).unwrap();
    mr.write(0, &[9; 4]).unwrap();
    assert_eq!(
        mr.deregister().unwrap(),
        [9, 9, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    );
    assert_clean_drops();
}

#[test]
fn bad_ports_and_gid_indexes() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    for port in [0, 2] {
        let err = pd
            .create_qp(QpType::Rc, &cq, &cq)
            .port(port)
            .build()
            .unwrap_err();
        assert!(
            matches!(
                err,
                Error::OutOfRange {
                    what: "port",
                    min: 1,
                    max: 1,
                    ..
                }
            ),
            "port {port}: {err}"
        );
    }
    // rxe's table is longer than any u8 index; an unused entry is refused.
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
    let err = ctx.create_cq(u32::MAX, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "CQ entries",
                ..
            }
        ),
        "{err}"
    );
    drop((cq, pd));
    assert_clean_drops();
}

#[test]
fn wrong_connect_calls_and_mtu() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let ud = pd.create_qp(QpType::Ud, &cq, &cq).build().unwrap();
    let e = ud.endpoint();
    let err = ud.connect(&e, &ConnectOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "queue pair type",
                ..
            }
        ),
        "{err}"
    );
    let rc = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let e = rc.endpoint();
    let opts = ConnectOptions {
        path_mtu: Some(1500),
        ..Default::default()
    };
    let err = rc.connect(&e, &opts).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "path MTU",
                ..
            }
        ),
        "{err}"
    );
    let rc = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let err = rc.ready().unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "queue pair type",
                ..
            }
        ),
        "{err}"
    );
    drop(cq);
    assert_clean_drops();
}

#[test]
fn posting_more_than_the_queue_depth() {
    let p = Pair::with(QpType::Rc, |b| b.max_send_wr(4).max_recv_wr(4), |_| {});
    let buf = p.mr(8);
    let sge = [buf.sge(..).unwrap()];
    // One list far longer than the queue: the provider fills the queue, then stops.
    let n = 64 * p.a.max_send_wr() as u64;
    let mut wrs: Vec<_> = (0..n)
        .map(|i| SendRequest::write(i, &sge, buf.remote()).signaled())
        .collect();
    let err = p.a.post_send(&mut wrs).unwrap_err();
    let Error::Post {
        verb: "ibv_post_send",
        index,
        ref source,
    } = err
    else {
        panic!("unexpected error: {err}");
    };
    assert_eq!(source.raw_os_error(), Some(libc::ENOMEM), "{err}");
    assert!(
        index >= p.a.max_send_wr() as usize && (index as u64) < n,
        "{err}"
    );
    // The requests before the failing one were posted, and complete in order.
    for i in 0..index as u64 {
        assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), i);
    }
    assert_empty(&p.a_cq);

    let n = 64 * p.b.max_recv_wr() as u64;
    let mut rs: Vec<_> = (0..n).map(|i| RecvRequest::new(i, &sge)).collect();
    let err = p.b.post_recv(&mut rs).unwrap_err();
    let Error::Post {
        verb: "ibv_post_recv",
        index,
        ref source,
    } = err
    else {
        panic!("unexpected error: {err}");
    };
    assert_eq!(source.raw_os_error(), Some(libc::ENOMEM), "{err}");
    assert!(
        index >= p.b.max_recv_wr() as usize && (index as u64) < n,
        "{err}"
    );
    drop(p);
    assert_clean_drops();
}

#[test]
fn sge_outside_its_region_is_a_local_protection_error() {
    let p = Pair::new(QpType::Rc);
    let buf = p.mr(64);
    let remote = p.mr(4096);
    // The safe API refuses the range up front; the raw path shows what the HCA does.
    // SAFETY: the lkey is a live region's; the range overruns it on purpose, which the HCA
    // checks and reports as a completion error without touching memory.
    let bad = [unsafe { ibverbs::Sge::from_raw(buf.addr(), 4096, buf.lkey()) }];
    p.a.post_send(&mut [SendRequest::write(1, &bad, remote.remote()).signaled()])
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(wc.status(), WcStatus::LOC_PROT_ERR, "{wc:?}");
    let err = wc.ok().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Completion {
                wr_id: 1,
                status: WcStatus::LOC_PROT_ERR,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(p.a.state().unwrap(), QpState::Error);
    drop(p);
    assert_clean_drops();
}

#[test]
fn wrong_rkey_is_a_remote_access_error_and_errors_the_qp() {
    let p = Pair::new(QpType::Rc);
    let buf = p.mr(64);
    let remote = p.mr(64);
    let sge = [buf.sge(..).unwrap()];
    let mut wrong = remote.remote();
    wrong.rkey ^= 0x100;
    p.a.post_send(&mut [
        SendRequest::write(1, &sge, wrong).signaled(),
        SendRequest::write(2, &sge, remote.remote()).signaled(),
    ])
    .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!((wc.wr_id(), wc.status()), (1, WcStatus::REM_ACCESS_ERR));
    assert_eq!(wc.status().as_str(), "remote access error");
    let wc = poll_one(&p.a_cq);
    assert_eq!((wc.wr_id(), wc.status()), (2, WcStatus::WR_FLUSH_ERR));
    assert_eq!(p.a.state().unwrap(), QpState::Error);
    drop(p);
    assert_clean_drops();
}

#[test]
fn posting_in_reset_and_init_fails() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let buf = pd.alloc_mr(64, ALL).unwrap();
    let qp = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    // The safe API has no send on a prepared QP; the raw verb refuses it in INIT...
    let sge = [buf.sge(..).unwrap()];
    let mut wr = SendRequest::write(1, &sge, buf.remote()).signaled();
    let post_raw = |raw_qp| {
        let mut bad = std::ptr::null_mut();
        // SAFETY: the QP is live; the request references a live region.
        unsafe {
            ibverbs::ffi::ibv_post_send(raw_qp, (&mut wr as *mut SendRequest<'_>).cast(), &mut bad)
        }
    };
    let mut post_raw = post_raw;
    assert_eq!(post_raw(qp.as_raw()), libc::EINVAL, "post_send in INIT");
    // ...and in RESET.
    let mut attr = ibverbs::ffi::ibv_qp_attr {
        qp_state: ibverbs::ffi::ibv_qp_state::IBV_QPS_RESET,
        ..Default::default()
    };
    // SAFETY: the QP is live; attr is initialised.
    let rc = unsafe {
        ibverbs::ffi::ibv_modify_qp(
            qp.as_raw(),
            &mut attr,
            ibverbs::ffi::ibv_qp_attr_mask::IBV_QP_STATE.0 as i32,
        )
    };
    assert_eq!(rc, 0);
    assert_eq!(post_raw(qp.as_raw()), libc::EINVAL, "post_send in RESET");
    drop((qp, buf, cq));
    assert_clean_drops();
}

#[test]
fn connecting_to_a_missing_qpn_exceeds_retries() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let qp = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let mut ghost = qp.endpoint();
    ghost.qpn = 0xfff_fff;
    // 4.096 µs × 2^10 ≈ 4 ms per try, 1 retry.
    let opts = ConnectOptions {
        timeout: 10,
        retry_cnt: 1,
        ..Default::default()
    };
    let qp = qp.connect(&ghost, &opts).unwrap();
    let buf = pd.alloc_mr(8, ALL).unwrap();
    let sge = [buf.sge(..).unwrap()];
    qp.post_send(&mut [SendRequest::send(1, &sge).signaled()])
        .unwrap();
    let wc = poll_one(&cq);
    assert_eq!(wc.status(), WcStatus::RETRY_EXC_ERR, "{wc:?}");
    assert_eq!(qp.state().unwrap(), QpState::Error);
    drop((qp, buf, cq));
    assert_clean_drops();
}

#[test]
fn cq_overrun_raises_a_cq_error_event() {
    let p = Pair::new(QpType::Rc);
    let ctx = p.pd.context().clone();
    let small = ctx.create_cq(1, None).unwrap();
    let cap = small.capacity() as usize;
    let qp =
        p.pd.create_qp(QpType::Rc, &small, &small)
            .access(ALL)
            .build()
            .unwrap();
    let peer =
        p.pd.create_qp(QpType::Rc, &p.b_cq, &p.b_cq)
            .access(ALL)
            .build()
            .unwrap();
    let (e1, e2) = (qp.endpoint(), peer.endpoint());
    let qp = qp.connect(&e2, &ConnectOptions::default()).unwrap();
    let _peer = peer.connect(&e1, &ConnectOptions::default()).unwrap();
    let buf = p.mr(8);
    let sge = [buf.sge(..).unwrap()];
    let mut wrs: Vec<_> = (0..cap as u64 + 4)
        .map(|i| SendRequest::write(i, &sge, buf.remote()).signaled())
        .collect();
    qp.post_send(&mut wrs).unwrap();

    // The overrun is reported as an asynchronous CQ error; nothing is written past the queue.
    // SAFETY: the context is open; the fd is its async event fd.
    let fd = unsafe { (*ctx.as_raw()).async_fd };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: pfd is valid for the call.
    assert_eq!(
        unsafe { libc::poll(&mut pfd, 1, 10_000) },
        1,
        "no async event within 10 s"
    );
    let mut event = std::mem::MaybeUninit::<ibverbs::ffi::ibv_async_event>::zeroed();
    // SAFETY: the context is open and event is writable.
    assert_eq!(
        unsafe { ibverbs::ffi::ibv_get_async_event(ctx.as_raw(), event.as_mut_ptr()) },
        0
    );
    // SAFETY: ibv_get_async_event filled it.
    let mut event = unsafe { event.assume_init() };
    assert_eq!(
        event.event_type,
        ibverbs::ffi::ibv_event_type::IBV_EVENT_CQ_ERR
    );
    // SAFETY: for a CQ event the union holds the CQ.
    assert_eq!(unsafe { event.element.cq }, small.as_raw());
    // SAFETY: the event was returned by ibv_get_async_event and is acknowledged once.
    unsafe { ibverbs::ffi::ibv_ack_async_event(&mut event) };

    let mut wc = vec![WorkCompletion::default(); cap + 8];
    let got = small.poll(&mut wc).unwrap().len();
    assert!(got <= cap, "{got} completions from a CQ of {cap}");
    drop((qp, _peer, small));
    drop(p);
    assert_clean_drops();
}

#[test]
fn extended_send_api_batches() {
    use ibverbs::SendOps;
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

    // An aborted batch (the closure fails) posts nothing.
    let err =
        p.a.batch(|batch| {
            batch.push(&SendRequest::write(6, &sge, dst.remote()).signaled())?;
            batch.push(&SendRequest::send_with_imm(7, &sge, 1))
        })
        .unwrap_err();
    assert!(matches!(err, Error::Request { index: 1, .. }), "{err}");
    assert_empty(&p.a_cq);

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
