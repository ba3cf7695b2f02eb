//! What reaches a provider function: a batch's dispatch from opcode to `ibv_wr_*` call, a
//! verb whose provider function is missing (`Error::Unsupported`, never a call through a
//! null pointer), inline data, which the provider copies with the CPU and so never takes
//! from device memory, and what a batch refuses at `push` that the provider would refuse
//! later: an atomic off 8-byte alignment, more requests than the send queue holds.

use rdma_verbs_test_kit::{provider_has, Need};
use std::ffi::c_int;

use rdma_verbs_test_kit::{assert_clean_drops, assert_empty};

use rdma_verbs::{
    ffi, AccessFlags, AsRaw, Context, DeviceMemory, DmaBufRegion, Error, MwType, QpType,
    RecvRequest, SendOps, SendRequest, Sge, WcOpcode, WcStatus, WorkCompletion, WrError, WrOpcode,
};

use crate::common::{poll_one, refusal, refusal_at, Pair, ALL};

/// A memory window bind pushed into a batch of a QP that enables sends. Its request was
/// built as a send and then given the bind's opcode, so its requirement word was a send's:
/// it passed the batch's fast check, and the dispatch's catch-all arm called
/// `ibv_wr_atomic_fetch_add`, a pointer rxe leaves null (SIGSEGV). No `ibv_wr_*` call of
/// the batch binds a window: it is refused, and `post_send` binds it.
#[test]
fn a_window_bind_in_a_batch_is_refused() {
    if !provider_has(Need::MemoryWindows) {
        return;
    }
    let Pair {
        pd, mut a, a_cq, ..
    } = Pair::with(QpType::Rc, |b| b.send_ops(SendOps::SEND), |_| {});
    let target = pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mw = pd.alloc_mw(MwType::Type2).unwrap();
    let rkey = ffi::ibv_inc_rkey(mw.rkey());
    let bind = SendRequest::bind_mw(1, &mw, &target, 0..64, AccessFlags::REMOTE_WRITE, rkey)
        .unwrap()
        .signaled();
    assert_eq!(
        refusal(a.batch(|batch| batch.push(&bind))),
        WrError::NotInBatch {
            opcode: WrOpcode::BindMw
        }
    );
    a.post_send(&mut [bind]).unwrap();
    assert_eq!(poll_one(&a_cq).ok().unwrap().opcode(), WcOpcode::BindMw);
    drop((mw, a, target, pd));
    assert_clean_drops();
}

/// Runs `f` while the provider function that `slot` picks out of `ctx`'s ops table is
/// `with` (`None`: as a provider without the verb leaves it), then puts the provider's back.
fn with_op<T: Copy, R>(
    ctx: &Context,
    slot: impl FnOnce(&mut ffi::ibv_context_ops) -> &mut Option<T>,
    with: Option<T>,
    f: impl FnOnce() -> R,
) -> R {
    // SAFETY: the context is open, and used by this thread only; its ops table is plain
    // memory that the provider filled when it opened. The reference lives for this
    // statement only: the ports read the table through raw pointers at each call.
    let slot: *mut Option<T> = slot(unsafe { &mut (*ctx.as_raw().as_ptr()).ops });
    // SAFETY: `slot` points into the live table (above), and no reference to it is alive.
    let provider = unsafe { slot.replace(with) };
    let out = f();
    // SAFETY: as above.
    unsafe { slot.write(provider) };
    out
}

/// Asserts that `result` failed with [`Error::Unsupported`] of `what`.
#[track_caller]
fn assert_unsupported<T: std::fmt::Debug, E: Into<Error>>(result: Result<T, E>, what: &str) {
    match result.map_err(Into::into) {
        Err(Error::Unsupported { what: w, .. }) if w == what => {}
        other => panic!("expected {what} unsupported, got {other:?}"),
    }
}

/// libibverbs's stub for a provider without `poll_cq`: `EOPNOTSUPP`, positive, as if that
/// many completions had been polled.
unsafe extern "C" fn poll_cq_stub(_: *mut ffi::ibv_cq, _: c_int, _: *mut ffi::ibv_wc) -> c_int {
    libc::EOPNOTSUPP
}

/// A verb whose provider function is missing (null in the ops table; rdma-verbs-sys called
/// it through `unwrap_unchecked`, SIGSEGV) fails with [`Error::Unsupported`] naming it, and
/// the positive `EOPNOTSUPP` of libibverbs's `poll_cq` stub is no count of completions (it
/// made `poll` return 95 entries of a 4-entry buffer).
#[test]
fn a_missing_provider_function_is_unsupported() {
    if !provider_has(Need::MemoryWindows) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let ctx = p.pd.context();
    let src = p.mr(64);
    let sge = [src.sge(..).unwrap()];
    let target = p.pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mut mw = p.pd.alloc_mw(MwType::Type1).unwrap();
    let srq = p.pd.create_srq(4, 1).unwrap();
    let mut wc = [WorkCompletion::default(); 4];

    let bind = with_op(
        ctx,
        |ops| &mut ops.bind_mw,
        None,
        || {
            p.b.bind_mw(&mut mw, &target, 0..64, AccessFlags::REMOTE_READ, 1)
        },
    );
    assert_unsupported(bind, "type 1 memory window binds (ibv_bind_mw)");
    let post = with_op(
        ctx,
        |ops| &mut ops.post_send,
        None,
        || p.a.post_send(&mut [SendRequest::send(1, &sge)]),
    );
    assert_unsupported(post, "ibv_post_send");
    let post = with_op(
        ctx,
        |ops| &mut ops.post_recv,
        None,
        || {
            p.a.post_recv(&mut [RecvRequest::new(1, &sge), RecvRequest::new(2, &sge)])
        },
    );
    assert_unsupported(post, "ibv_post_recv");
    let post = with_op(
        ctx,
        |ops| &mut ops.post_srq_recv,
        None,
        || srq.post_recv(&mut [RecvRequest::new(1, &sge)]),
    );
    assert_unsupported(post, "ibv_post_srq_recv");
    let poll = with_op(
        ctx,
        |ops| &mut ops.poll_cq,
        None,
        || p.a_cq.poll(&mut wc).map(|done| done.len()),
    );
    assert_unsupported(poll, "ibv_poll_cq");
    let stub = Some(poll_cq_stub as unsafe extern "C" fn(_, _, _) -> _);
    let poll = with_op(
        ctx,
        |ops| &mut ops.poll_cq,
        stub,
        || p.a_cq.poll(&mut wc).map(|done| done.len()),
    );
    assert_unsupported(poll, "ibv_poll_cq");
    let notify = with_op(
        ctx,
        |ops| &mut ops.req_notify_cq,
        None,
        || p.a_cq.req_notify(false),
    );
    assert_unsupported(notify, "ibv_req_notify_cq");

    // The provider's functions back: the same calls work.
    p.b.bind_mw(&mut mw, &target, 0..64, AccessFlags::REMOTE_READ, 1)
        .unwrap();
    assert_eq!(poll_one(&p.b_cq).ok().unwrap().opcode(), WcOpcode::BindMw);
    p.a_cq.req_notify(false).unwrap();
    drop((mw, target, srq, src, p));
    assert_clean_drops();
}

/// The entries of a dma-buf region hold device addresses, and a provider copies inline
/// data with the CPU from the entry's address: from a device address, it would read (and
/// send to the peer) whatever the process has mapped there. So a request with entries of
/// [`DeviceMemory`] is refused inline, through `post_send` and in a batch, before the
/// provider; posted without inline data, it goes through as any request.
///
/// rxe cannot register a dma-buf (`ibv_reg_dmabuf_mr` is `EOPNOTSUPP`), so the entries are
/// made with `Sge::device_from_raw` over a region of host memory: on rxe its device
/// addresses are the host addresses, which keeps the non-inline send correct. That
/// [`DmaBufRegion::sge`] gives [`DeviceMemory`] entries is the signature below, checked by
/// the compiler.
#[test]
fn inline_data_from_device_memory_is_refused() {
    if !provider_has(Need::ExtendedQp) {
        return;
    }
    fn _dmabuf_entries_are_device_memory(region: &DmaBufRegion) -> Sge<'_, DeviceMemory> {
        region.sge(..).unwrap()
    }
    let ops = SendOps::SEND | SendOps::RDMA_WRITE;
    let Pair {
        pd,
        mut a,
        a_cq,
        b,
        b_cq,
        link: _link,
    } = Pair::with(QpType::Rc, |q| q.max_inline_data(64).send_ops(ops), |_| {});
    let mut src = pd.alloc_mr(64, ALL).unwrap();
    src.fill(0x5a);
    let dst = pd.alloc_mr(64, ALL).unwrap();
    // SAFETY: the range is the whole of `src`, which outlives every request below.
    let device = [unsafe { Sge::device_from_raw(src.addr(), 48, src.lkey()) }];
    let inline = [
        (SendRequest::send(1, &device).inline(), WrOpcode::Send),
        (
            SendRequest::write(2, &device, dst.remote()).inline(),
            WrOpcode::RdmaWrite,
        ),
    ];
    for (wr, opcode) in inline {
        let want = WrError::InlineFromDeviceMemory { opcode };
        assert_eq!(refusal(a.batch(|batch| batch.push(&wr))), want);
        assert_eq!(refusal(a.post_send(&mut [wr])), want);
    }
    assert_empty(&a_cq, "after the refused requests");

    let rsge = [dst.sge(..).unwrap()];
    b.post_recv(&mut [RecvRequest::new(3, &rsge)]).unwrap();
    a.post_send(&mut [SendRequest::send(3, &device).signaled()])
        .unwrap();
    poll_one(&a_cq).ok().unwrap();
    assert_eq!(poll_one(&b_cq).ok().unwrap().byte_len(), 48);
    let mut got = [0; 48];
    dst.read(0, &mut got).unwrap();
    assert_eq!(got, [0x5a; 48]);
    drop((a, b, src, dst, pd));
    assert_clean_drops();
}

/// Compare-and-swap and fetch-and-add to a remote address off 8-byte alignment were pushed
/// into a batch (and posted by `post_send`), for the provider to fail or the peer to
/// refuse; the verbs require the 8 bytes aligned, as for an atomic write. Refused at
/// `push`, by the batch's methods and by `post_send`, naming the address; an aligned one
/// still lands.
#[test]
fn atomics_off_8_byte_alignment_are_refused() {
    if !provider_has(Need::Atomics) {
        return;
    }
    let ops = SendOps::ATOMIC_CMP_AND_SWP | SendOps::ATOMIC_FETCH_AND_ADD;
    // The whole pair is kept: the peer answers the atomics that are posted.
    let mut p = Pair::with(QpType::Rc, |b| b.send_ops(ops), |_| {});
    let (pd, a, a_cq) = (&p.pd, &mut p.a, &p.a_cq);
    let result_mr = pd.alloc_mr(8, ALL).unwrap();
    let target_mr = pd.alloc_mr(64, ALL).unwrap();
    let result = result_mr.sge(..).unwrap();
    for offset in [1, 4, 12, 63] {
        let odd = target_mr.remote().slice(offset, 1).unwrap();
        let misaligned = |opcode| WrError::Misaligned {
            opcode,
            addr: odd.addr,
        };
        let cas = SendRequest::compare_swap(1, &result, odd, 0, 1);
        let faa = SendRequest::fetch_add(2, &result, odd, 1);
        let (cas_error, faa_error) = (
            misaligned(WrOpcode::CompareSwap),
            misaligned(WrOpcode::FetchAdd),
        );
        assert_eq!(refusal(a.batch(|batch| batch.push(&cas))), cas_error);
        assert_eq!(refusal(a.batch(|batch| batch.push(&faa))), faa_error);
        let cas_built = a.batch(|batch| batch.compare_swap(3, &result, odd, 0, 1).push());
        assert_eq!(refusal(cas_built), cas_error);
        let faa_built = a.batch(|batch| batch.fetch_add(4, &result, odd, 1).push());
        assert_eq!(refusal(faa_built), faa_error);
        assert_eq!(refusal(a.post_send(&mut [cas])), cas_error);
        assert_eq!(refusal(a.post_send(&mut [faa])), faa_error);
    }
    assert_empty(a_cq, "after the refused atomics");
    // Aligned, through each way: 5 + 6 + 7 = 18 lands at offset 8.
    let aligned = target_mr.remote().slice(8, 8).unwrap();
    a.batch(|batch| batch.fetch_add(5, &result, aligned, 5).signaled().push())
        .unwrap();
    a.batch(|batch| batch.push(&SendRequest::fetch_add(6, &result, aligned, 6).signaled()))
        .unwrap();
    a.post_send(&mut [SendRequest::fetch_add(7, &result, aligned, 7).signaled()])
        .unwrap();
    for id in 5..=7 {
        let wc = poll_one(a_cq);
        assert_eq!(
            (wc.wr_id(), wc.status(), wc.opcode()),
            (id, WcStatus::SUCCESS, WcOpcode::FetchAdd)
        );
    }
    let mut got = [0; 8];
    target_mr.read(8, &mut got).unwrap();
    assert_eq!(u64::from_ne_bytes(got), 18);
    drop((result_mr, target_mr, p));
    assert_clean_drops();
}

/// 200 requests pushed into a batch of a QP whose send queue holds 16 were all accepted,
/// and the provider failed the whole batch at `ibv_wr_complete` (rxe: `ENOSPC`). The push
/// past the granted `max_send_wr` is refused, naming it, by both ways of pushing, and the
/// batch is aborted with nothing posted; a batch of exactly the depth is posted whole.
#[test]
fn a_batch_holds_at_most_the_send_queue() {
    if !provider_has(Need::ExtendedQp) {
        return;
    }
    let mut p = Pair::with(
        QpType::Rc,
        |b| b.max_send_wr(16).send_ops(SendOps::RDMA_WRITE),
        |_| {},
    );
    let (pd, a, a_cq) = (&p.pd, &mut p.a, &p.a_cq);
    let depth = a.max_send_wr();
    assert!((16..200).contains(&depth), "{depth}");
    let buf = pd.alloc_mr(8, ALL).unwrap();
    let sge = [buf.sge(..).unwrap()];
    let full = WrError::BatchFull { depth };
    let pushed = a.batch(|batch| {
        for i in 0..200 {
            batch.push(&SendRequest::write(i, &sge, buf.remote()).signaled())?;
        }
        Ok(())
    });
    assert_eq!(refusal_at(pushed, depth as usize), full);
    let built = a.batch(|batch| {
        for i in 0..200 {
            batch.write(i, &sge, buf.remote()).signaled().push()?;
        }
        Ok(())
    });
    assert_eq!(refusal_at(built, depth as usize), full);
    assert_empty(a_cq, "after the refused batches");
    // Exactly the depth fits, and every request of it completes.
    let n = a
        .batch(|batch| {
            for i in 0..u64::from(depth) {
                batch.write(i, &sge, buf.remote()).signaled().push()?;
            }
            Ok(batch.len())
        })
        .unwrap();
    assert_eq!(n, depth as usize);
    for i in 0..u64::from(depth) {
        assert_eq!(poll_one(a_cq).ok().unwrap().wr_id(), i);
    }
    assert_empty(a_cq, "after the batch of the queue's depth");
    drop((buf, p));
    assert_clean_drops();
}
