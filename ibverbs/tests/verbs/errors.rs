//! Misuse and failures: objects of another context, bad registrations, ports and GIDs,
//! wrong connect calls, window binds, atomic result sizes, inline limits, overfull queues,
//! protection and access errors, retries exceeded, CQ overrun.

use rdma_verbs_test_kit::{assert_clean_drops, assert_empty, open};
use rdma_verbs_test_kit::{provider, provider_has, Need, Provider};

use rdma_verbs::{
    AccessFlags, AsRaw, ConnectOptions, Error, Mtu, MwType, QpCreateFlags, QpState, QpType,
    RecvRequest, SendOps, SendRequest, WcStatus, WorkCompletion, WrError, WrOpcode,
};

use crate::common::{connect, poll_one, refusal, Pair, ALL};

#[test]
fn objects_of_another_context_are_rejected() {
    if !provider_has(Need::MemoryWindows) {
        return;
    }
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
    let (qp, _peer, _link) = connect(QpType::Rc, qp, peer);
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
    // Remote write without local write, which the kernel refuses, is refused before it.
    let err = pd.alloc_mr(4096, AccessFlags::REMOTE_WRITE).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "access flags",
                ..
            }
        ),
        "{err}"
    );
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
    // rxe's table is longer than any u8 index; an unused entry is refused (siw's holds
    // one entry: index 200 is out of its range).
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
            } | Error::OutOfRange {
                what: "GID index",
                value: 200,
                ..
            }
        ),
        "{err}"
    );
    let err = ctx.create_cq(u32::MAX, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DeviceLimit {
                what: "CQ entries",
                limit: "max_cqe",
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
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let ud = pd.create_qp(QpType::Ud, &cq, &cq).build().unwrap();
    let e = ud.endpoint();
    let err = ud.connect(&e, &ConnectOptions::new()).unwrap_err();
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
    // A path MTU the port does not have: the provider refuses the move to RTR, and the
    // error says which transition failed.
    let opts = ConnectOptions::new().path_mtu(Mtu::Unknown(9));
    let err = rc.connect(&e, &opts).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Transition {
                to: QpState::Rtr,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    assert!(
        err.to_string()
            .starts_with("ibv_modify_qp to RTR failed: Invalid argument"),
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

/// A type 1 bind from a QP of another protection domain than the window's: only the window
/// and region were compared, so it returned `Ok` and the provider then failed the bind.
/// Now the QP is compared too, and each window is bound only by the call of its type.
#[test]
fn window_binds_are_checked_before_the_provider() {
    if !provider_has(Need::MemoryWindows) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let other = Pair::new(QpType::Rc);
    let target = p.pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mut mw1 = p.pd.alloc_mw(MwType::Type1).unwrap();
    let mw2 = p.pd.alloc_mw(MwType::Type2).unwrap();
    let err = other
        .a
        .bind_mw(&mut mw1, &target, 0..64, AccessFlags::REMOTE_READ, 1)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Mismatch {
                what: "queue pair",
                owner: "protection domain"
            }
        ),
        "{err}"
    );
    assert_empty(&other.a_cq, "after the refused bind");
    let mut mw2_as_1 = p.pd.alloc_mw(MwType::Type2).unwrap();
    let err =
        p.a.bind_mw(&mut mw2_as_1, &target, 0..64, AccessFlags::REMOTE_READ, 2)
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "memory window",
                ..
            }
        ),
        "{err}"
    );
    let rkey = rdma_verbs::ffi::ibv_inc_rkey(mw1.rkey());
    let err = SendRequest::bind_mw(3, &mw1, &target, 0..64, AccessFlags::REMOTE_READ, rkey)
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "memory window",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!((mw1.kind(), mw2.kind()), (MwType::Type1, MwType::Type2));
    drop((mw1, mw2, mw2_as_1, target, p, other));
    assert_clean_drops();
}

/// An atomic's result entry of 0, 4 or 16 bytes reached the provider, which failed the post
/// with `EINVAL`; it is refused first, naming the 8 bytes, through `post_send` and in a
/// batch.
#[test]
fn atomic_result_entries_are_8_bytes() {
    if !provider_has(Need::Atomics) {
        return;
    }
    let ops = SendOps::ATOMIC_CMP_AND_SWP | SendOps::ATOMIC_FETCH_AND_ADD;
    let mut p = Pair::with(QpType::Rc, |b| b.send_ops(ops), |_| {});
    let result = p.mr(16);
    let target_mr = p.mr(8);
    let target = target_mr.remote();
    for len in [0, 4, 16] {
        let sge = result.sge(..len).unwrap();
        for (wr, opcode) in [
            (
                SendRequest::compare_swap(1, &sge, target, 0, 1),
                WrOpcode::CompareSwap,
            ),
            (
                SendRequest::fetch_add(2, &sge, target, 1),
                WrOpcode::FetchAdd,
            ),
        ] {
            let want = WrError::AtomicResultSize {
                opcode,
                len: len as u64,
                required: 8,
            };
            assert_eq!(refusal(p.a.batch(|b| b.push(&wr))), want);
            assert_eq!(refusal(p.a.post_send(&mut [wr])), want);
        }
    }
    assert_empty(&p.a_cq, "after the refused atomics");
    let sge = result.sge(..8).unwrap();
    p.a.post_send(&mut [SendRequest::fetch_add(3, &sge, target, 5).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    p.a.batch(|b| b.push(&SendRequest::fetch_add(4, &sge, target, 5).signaled()))
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let mut got = [0; 8];
    result.read(0, &mut got).unwrap();
    assert_eq!(u64::from_ne_bytes(got), 5);
    drop((result, target_mr, p));
    assert_clean_drops();
}

/// More inline data than the provider takes came back as `ibv_create_qp`'s `EINVAL`; it is
/// [`Error::DeviceLimit`] naming the most the provider creates a QP with, which builds,
/// while one byte more is refused the same way.
#[test]
fn max_inline_data_over_the_limit_names_it() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let build = |n| {
        pd.create_qp(QpType::Rc, &cq, &cq)
            .max_inline_data(n)
            .build()
    };
    let max = match build(u32::MAX).unwrap_err() {
        Error::DeviceLimit {
            what: "max_inline_data",
            value,
            max,
            ..
        } if value == u64::from(u32::MAX) => u32::try_from(max).unwrap(),
        other => panic!("expected max_inline_data over the device's limit, got {other}"),
    };
    assert!(max > 0, "no inline data at all");
    let qp = build(max).unwrap();
    match build(max + 1).unwrap_err() {
        Error::DeviceLimit { max: m, .. } if m == u64::from(max) => {}
        other => panic!("expected the same limit, got {other}"),
    }
    drop((qp, cq, pd));
    assert_clean_drops();
}

/// Creation flags rxe does not take (it takes none) fail the creation as
/// [`Error::Unsupported`] naming them, found by creating the same QP without them; the
/// same QP without flags builds, and nothing is left behind.
#[test]
fn creation_flags_the_provider_does_not_take_are_named() {
    if !provider_has(Need::Ud) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    for flags in [
        QpCreateFlags::BLOCK_SELF_MCAST_LB,
        QpCreateFlags::SCATTER_FCS,
        QpCreateFlags::CVLAN_STRIPPING,
        QpCreateFlags::PCI_WRITE_END_PADDING,
        QpCreateFlags::all(),
    ] {
        let err = pd
            .create_qp(QpType::Ud, &cq, &cq)
            .create_flags(flags)
            .build()
            .unwrap_err();
        assert!(
            matches!(err, Error::Unsupported { what, .. } if what.contains("creation flags")),
            "{flags:?}: {err:?}"
        );
    }
    let qp = pd
        .create_qp(QpType::Ud, &cq, &cq)
        .create_flags(QpCreateFlags::empty())
        .build()
        .unwrap();
    drop((qp, cq, pd));
    assert_clean_drops();
}

/// The index a post stopped at when `err` says the queue was full: the variant names the
/// verb and the granted depth, and so does the message.
fn queue_full_at(err: Error, verb: &str, queue: &str, depth: u32) -> usize {
    let Error::QueueFull {
        verb: v,
        index,
        depth: d,
    } = err
    else {
        panic!("unexpected error: {err}");
    };
    assert_eq!((v, d), (verb, depth), "{err}");
    assert_eq!(
        err.to_string(),
        format!("{verb} failed at work request {index}: {queue} full (depth {depth})")
    );
    assert_eq!(err.raw_os_error(), Some(libc::ENOMEM), "{err}");
    index
}

#[test]
fn posting_more_than_the_queue_depth() {
    if !provider_has(Need::FillableSendQueue) {
        return;
    }
    let p = Pair::with(QpType::Rc, |b| b.max_send_wr(4).max_recv_wr(4), |_| {});
    let buf = p.mr(8);
    let sge = [buf.sge(..).unwrap()];
    // One list far longer than the queue: the provider fills the queue, then stops.
    let n = 64 * p.a.max_send_wr() as u64;
    let mut wrs: Vec<_> = (0..n)
        .map(|i| SendRequest::write(i, &sge, buf.remote()).signaled())
        .collect();
    let err = p.a.post_send(&mut wrs).unwrap_err().into_inner();
    let depth = p.a.max_send_wr();
    let index = queue_full_at(err, "ibv_post_send", "send queue", depth);
    assert!(index >= depth as usize && (index as u64) < n, "{index}");
    // The requests before the failing one were posted, and complete in order.
    for i in 0..index as u64 {
        assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), i);
    }
    assert_empty(&p.a_cq, "after the requests before the failing one");

    let n = 64 * p.b.max_recv_wr() as u64;
    let mut rs: Vec<_> = (0..n).map(|i| RecvRequest::new(i, &sge)).collect();
    let err = p.b.post_recv(&mut rs).unwrap_err().into_inner();
    let depth = p.b.max_recv_wr();
    let index = queue_full_at(err, "ibv_post_recv", "receive queue", depth);
    assert!(index >= depth as usize && (index as u64) < n, "{index}");
    // One more, alone (a QP's path for a single receive), finds it full too.
    let err = p.b.post_recv(&mut [RecvRequest::new(n, &sge)]).unwrap_err();
    let index = queue_full_at(err.into_inner(), "ibv_post_recv", "receive queue", depth);
    assert_eq!(index, 0);
    drop(p);
    assert_clean_drops();
}

#[test]
fn a_full_shared_receive_queue_names_its_depth() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let srq = pd.create_srq(4, 1).unwrap();
    let buf = pd.alloc_mr(8, ALL).unwrap();
    let sge = [buf.sge(..).unwrap()];
    // One request at a time, so that the full queue shows at index 0 of the failing post.
    let mut posted = 0;
    let err = loop {
        match srq.post_recv(&mut [RecvRequest::new(posted, &sge)]) {
            Ok(()) => posted += 1,
            Err(e) => break e.into_inner(),
        }
        assert!(posted <= 64 * u64::from(srq.max_wr()), "never full");
    };
    let depth = srq.max_wr();
    assert_eq!(
        queue_full_at(err, "ibv_post_srq_recv", "shared receive queue", depth),
        0
    );
    assert!(posted >= u64::from(depth), "{posted} posted");
    drop((buf, srq, pd, ctx));
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
    let bad = [unsafe { rdma_verbs::Sge::from_raw(buf.addr(), 4096, buf.lkey()) }];
    p.a.post_send(&mut [SendRequest::write(1, &bad, remote.remote()).signaled()])
        .unwrap();
    let wc = poll_one(&p.a_cq);
    // siw reports the overrun as a local QP operation error.
    let want = match provider() {
        Provider::Rxe => WcStatus::LOC_PROT_ERR,
        Provider::Siw => WcStatus::LOC_QP_OP_ERR,
    };
    assert_eq!(wc.status(), want, "{wc:?}");
    let err = wc.ok().unwrap_err();
    assert!(
        matches!(
            err,
            Error::Completion {
                wr_id: 1,
                status,
                ..
            } if status == want
        ),
        "{err}"
    );
    // siw's ibv_query_qp reports no state (every QP reads as RESET).
    if provider() == Provider::Rxe {
        assert_eq!(p.a.query().unwrap().state, QpState::Error);
    }
    drop(p);
    assert_clean_drops();
}

#[test]
fn wrong_rkey_is_a_remote_access_error_and_errors_the_qp() {
    if !provider_has(Need::AckedWrites) {
        return;
    }
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
    assert_eq!(p.a.query().unwrap().state, QpState::Error);
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
            rdma_verbs::ffi::ibv_post_send(
                raw_qp,
                (&mut wr as *mut SendRequest<'_>).cast(),
                &mut bad,
            )
        }
    };
    let mut post_raw = post_raw;
    // rxe returns EINVAL; siw -1 (with errno set), as some providers do.
    let refused = match provider() {
        Provider::Rxe => libc::EINVAL,
        Provider::Siw => -1,
    };
    assert_eq!(post_raw(qp.as_raw().as_ptr()), refused, "post_send in INIT");
    // ...and in RESET.
    let mut attr = rdma_verbs::ffi::ibv_qp_attr {
        qp_state: rdma_verbs::ffi::ibv_qp_state::IBV_QPS_RESET,
        ..Default::default()
    };
    // SAFETY: the QP is live; attr is initialised.
    let rc = unsafe {
        rdma_verbs::ffi::ibv_modify_qp(
            qp.as_raw().as_ptr(),
            &mut attr,
            rdma_verbs::ffi::ibv_qp_attr_mask::IBV_QP_STATE.0 as i32,
        )
    };
    assert_eq!(rc, 0);
    // siw takes a post in RESET (it returns 0); rxe refuses it.
    if provider() == Provider::Rxe {
        assert_eq!(
            post_raw(qp.as_raw().as_ptr()),
            refused,
            "post_send in RESET"
        );
    }
    drop((qp, buf, cq));
    assert_clean_drops();
}

#[test]
fn connecting_to_a_missing_qpn_exceeds_retries() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let qp = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let mut ghost = qp.endpoint();
    ghost.qpn = 0xfff_fff;
    // 4.096 µs × 2^10 ≈ 4 ms per try, 1 retry.
    let opts = ConnectOptions::new().timeout(10).retry_cnt(1);
    let qp = qp.connect(&ghost, &opts).unwrap();
    let buf = pd.alloc_mr(8, ALL).unwrap();
    let sge = [buf.sge(..).unwrap()];
    qp.post_send(&mut [SendRequest::send(1, &sge).signaled()])
        .unwrap();
    let wc = poll_one(&cq);
    assert_eq!(wc.status(), WcStatus::RETRY_EXC_ERR, "{wc:?}");
    assert_eq!(qp.query().unwrap().state, QpState::Error);
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
    let (qp, _peer, _link) = connect(QpType::Rc, qp, peer);
    let buf = p.mr(8);
    let sge = [buf.sge(..).unwrap()];
    let mut wrs: Vec<_> = (0..cap as u64 + 4)
        .map(|i| SendRequest::write(i, &sge, buf.remote()).signaled())
        .collect();
    qp.post_send(&mut wrs).unwrap();

    // The overrun is reported as an asynchronous CQ error; nothing is written past the queue.
    // SAFETY: the context is open; the fd is its async event fd.
    let fd = unsafe { (*ctx.as_raw().as_ptr()).async_fd };
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: pfd is valid for the call.
    let ready = unsafe { libc::poll(&mut pfd, 1, 10_000) };
    assert_eq!(ready, 1, "no async event within 10 s");
    let mut event = std::mem::MaybeUninit::<rdma_verbs::ffi::ibv_async_event>::zeroed();
    // SAFETY: the context is open and event is writable.
    let rc =
        unsafe { rdma_verbs::ffi::ibv_get_async_event(ctx.as_raw().as_ptr(), event.as_mut_ptr()) };
    assert_eq!(rc, 0);
    // SAFETY: ibv_get_async_event filled it.
    let mut event = unsafe { event.assume_init() };
    assert_eq!(
        event.event_type,
        rdma_verbs::ffi::ibv_event_type::IBV_EVENT_CQ_ERR
    );
    // SAFETY: for a CQ event the union holds the CQ.
    assert_eq!(unsafe { event.element.cq }, small.as_raw().as_ptr());
    // SAFETY: the event was returned by ibv_get_async_event and is acknowledged once.
    unsafe { rdma_verbs::ffi::ibv_ack_async_event(&mut event) };

    let mut wc = vec![WorkCompletion::default(); cap + 8];
    let got = small.poll(&mut wc).unwrap().len();
    assert!(got <= cap, "{got} completions from a CQ of {cap}");
    drop((qp, _peer, small));
    drop(p);
    assert_clean_drops();
}
