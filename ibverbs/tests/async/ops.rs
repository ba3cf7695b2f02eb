//! `AsyncQp`: operations that own their regions, and what dropping or forgetting their
//! futures (or a waker that panics) does while the HCA may still use the memory; the QPs
//! and CQs it refuses to wrap.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use rdma_verbs::tokio::{AsyncCq, AsyncQp, Op};
use rdma_verbs::{
    AlignedBuffer, ConnectOptions, Error, MemoryRegion, ProtectionDomain, QpType,
    RegistrableMemory, SendRequest, WcOpcode, WcStatus,
};
use rdma_verbs_test_kit::{assert_clean_drops, open, ALL};
use tokio::time::timeout;

use crate::common::{panicking_waker, Pair, LIMIT};

/// A buffer that counts its drops, to tell when a region's memory is freed.
struct Tracked {
    buf: Vec<u8>,
    freed: Arc<AtomicUsize>,
}

// SAFETY: a Vec's heap buffer does not move when the Vec moves, and the region holds it
// exclusively; leaking a Tracked leaks the Vec.
unsafe impl RegistrableMemory for Tracked {
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.buf.len()
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.freed.fetch_add(1, Ordering::SeqCst);
    }
}

/// A `len`-byte tracked region on `pd` counting into `freed`.
fn tracked(pd: &ProtectionDomain, len: usize, freed: &Arc<AtomicUsize>) -> MemoryRegion<Tracked> {
    let buf = Tracked {
        buf: vec![0; len],
        freed: Arc::clone(freed),
    };
    pd.register(buf, ALL).unwrap()
}

/// The pair's QPs as async QPs (the PD is returned for regions).
fn async_pair<B: RegistrableMemory>(p: Pair) -> (ProtectionDomain, AsyncQp<B>, AsyncQp<B>) {
    let a = AsyncQp::new(p.a, p.a_cq).unwrap();
    let b = AsyncQp::new(p.b, p.b_cq).unwrap();
    (p.pd, a, b)
}

/// An op's region and completion, within [`LIMIT`].
async fn done<B: RegistrableMemory>(op: Op<B>) -> (MemoryRegion<B>, rdma_verbs::WorkCompletion) {
    timeout(LIMIT, op).await.expect("a completion").unwrap()
}

#[tokio::test]
async fn every_operation_gives_its_region_back_with_its_completion() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let (pd, a, b) = async_pair(Pair::new(&ctx, &channel, 16));
    let target = pd.alloc_mr(64, ALL).unwrap();
    let mut msg = pd.alloc_mr(64, ALL).unwrap();
    msg.write(0, b"hello, async").unwrap();

    let recv = b.recv(pd.alloc_mr(64, ALL).unwrap(), ..).unwrap();
    let (msg, sent) = done(a.send(msg, 0..12).unwrap()).await;
    let (inbox, got) = done(recv).await;
    sent.ok().unwrap();
    assert_eq!((got.opcode(), got.byte_len()), (WcOpcode::Recv, 12));
    let mut text = [0; 12];
    inbox.read(0, &mut text).unwrap();
    assert_eq!(&text, b"hello, async");

    let (msg, wc) = done(a.write(msg, 0..12, target.remote()).unwrap()).await;
    assert_eq!(wc.ok().unwrap().opcode(), WcOpcode::RdmaWrite);
    let (back, wc) = done(a.read(inbox, 20..32, target.remote()).unwrap()).await;
    assert_eq!(wc.ok().unwrap().opcode(), WcOpcode::RdmaRead);
    back.read(20, &mut text).unwrap();
    assert_eq!(&text, b"hello, async");

    let counter = target.remote().slice(16, 8).unwrap();
    let (msg, wc) = done(a.fetch_add(msg, 0, counter, 5).unwrap()).await;
    assert_eq!(wc.ok().unwrap().opcode(), WcOpcode::FetchAdd);
    let (msg, wc) = done(a.compare_swap(msg, 8, counter, 5, 9).unwrap()).await;
    assert_eq!(wc.ok().unwrap().opcode(), WcOpcode::CompareSwap);
    let mut old = [0; 16];
    msg.read(0, &mut old).unwrap();
    assert_eq!(old, [0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0]);
    let mut now = [0; 8];
    target.read(16, &mut now).unwrap();
    assert_eq!(u64::from_ne_bytes(now), 9);

    // Refused before posting: nothing in flight.
    let err = a.send(msg, 0..65).unwrap_err();
    assert!(matches!(err, Error::OutOfRange { .. }), "{err}");
    assert_eq!(a.in_flight(), 0);
    drop((a, b, back, target, pd, channel, ctx));
    assert_clean_drops();
}

/// Receives whose futures are dropped keep their memory until their completion: some
/// complete with data, the rest when the QP is killed (flushed).
#[tokio::test]
async fn dropped_receives_are_freed_only_by_their_completion_or_flush() {
    const N: usize = 16;
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let (pd, a, b) = async_pair::<Tracked>(Pair::new(&ctx, &channel, 0));
    let freed = Arc::new(AtomicUsize::new(0));
    for _ in 0..N {
        drop(b.recv(tracked(&pd, 64, &freed), ..).unwrap());
    }
    assert_eq!((freed.load(Ordering::SeqCst), b.in_flight()), (0, N));
    // Four messages arrive: their receives complete.
    for i in 0..4 {
        let (_, wc) = done(a.send(tracked(&pd, 64, &freed), 0..8).unwrap()).await;
        assert_eq!(wc.ok().unwrap().wr_id(), i);
    }
    assert_eq!(
        freed.load(Ordering::SeqCst),
        4,
        "the senders' regions came back"
    );
    // Nothing polled b's CQ yet: still held.
    assert_eq!(b.in_flight(), N);
    // Settling takes the four completions, then waits for the rest (given up).
    assert!(timeout(Duration::from_millis(200), b.settle())
        .await
        .is_err());
    assert_eq!((freed.load(Ordering::SeqCst), b.in_flight()), (8, N - 4));
    // Killed: the other receives are flushed, and only then freed.
    b.to_error().unwrap();
    timeout(LIMIT, b.settle()).await.expect("flushed").unwrap();
    assert_eq!((freed.load(Ordering::SeqCst), b.in_flight()), (4 + N, 0));
    drop((a, b, pd, channel, ctx));
    assert_clean_drops();
}

/// Many writes in flight, every other one dropped at once, the others awaited; then sends
/// that the peer has no receives for (held by RNR retries, forever with `rnr_retry` 7),
/// half dropped, and the QP killed under them: every region comes back with
/// `WR_FLUSH_ERR` or is freed after its flush, none before.
#[tokio::test]
async fn dropped_writes_under_load_and_a_killed_qp_lose_nothing() {
    const N: usize = 32;
    const LEN: usize = 64 * 1024;
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 4);
    let target = p.pd.alloc_mr(LEN, ALL).unwrap();
    let (pd, a, b) = async_pair::<Tracked>(p);
    let freed = Arc::new(AtomicUsize::new(0));
    let mut kept = Vec::new();
    for i in 0..N {
        let op = a
            .write(tracked(&pd, LEN, &freed), .., target.remote())
            .unwrap();
        if i % 2 == 0 {
            kept.push(op);
        } else {
            drop(op);
        }
    }
    assert_eq!(
        freed.load(Ordering::SeqCst),
        0,
        "freed before any completion was polled"
    );
    let mut back = Vec::new();
    for op in kept {
        let (mr, wc) = done(op).await;
        wc.ok().unwrap();
        back.push(mr);
    }
    timeout(LIMIT, a.settle()).await.expect("settled").unwrap();
    assert_eq!((freed.load(Ordering::SeqCst), a.in_flight()), (N / 2, 0));

    // Sends the peer cannot take, and the QP is killed with them in flight.
    let mut kept = Vec::new();
    for (i, mr) in back.into_iter().enumerate() {
        let op = a.send(mr, 0..1024).unwrap();
        if i % 2 == 0 {
            kept.push(op);
        }
    }
    assert!(timeout(Duration::from_millis(100), a.settle())
        .await
        .is_err());
    assert_eq!(
        (freed.load(Ordering::SeqCst), a.in_flight()),
        (N / 2, N / 2)
    );
    a.to_error().unwrap();
    for op in kept {
        let (mr, wc) = done(op).await;
        assert_eq!(wc.status(), WcStatus::WR_FLUSH_ERR);
        drop(mr);
    }
    timeout(LIMIT, a.settle()).await.expect("flushed").unwrap();
    assert_eq!((freed.load(Ordering::SeqCst), a.in_flight()), (N, 0));
    drop((a, b, target, pd, channel, ctx));
    assert_clean_drops();
}

/// Where the forgotten op stays reachable, so that the leak check (valgrind) tells the
/// intended leak from a lost block. `ManuallyDrop` is what `mem::forget` does.
static FORGOTTEN: Mutex<Vec<ManuallyDrop<Op<Tracked>>>> = Mutex::new(Vec::new());

/// Forgetting an op leaks its region (and the QP, which the op keeps): nothing is freed.
/// Two receives of one QP, each on its own task: the second, polled once after the first
/// waits and then kept but never polled again, does not keep the first from its
/// completion.
#[tokio::test]
async fn an_idle_op_does_not_stall_the_other_ops_of_its_qp() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let (pd, a, b) = async_pair(Pair::new(&ctx, &channel, 0));
    let first = b.recv(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap();
    // No timer in the waiting task (its wake would poll the op and hide a stall).
    let waiter = tokio::spawn(async move { first.await.unwrap() });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut idle = b.recv(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap();
    let polled = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut idle).poll(cx))).await;
    assert!(polled.is_pending(), "nothing was sent yet");
    let (msg, sent) = done(a.send(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap()).await;
    sent.ok().unwrap();
    let (_, got) = timeout(LIMIT, waiter).await.expect("first woken").unwrap();
    assert_eq!(got.ok().unwrap().opcode(), WcOpcode::Recv);
    drop((idle, msg, a, b, pd, channel, ctx));
    assert_clean_drops();
}

#[tokio::test]
async fn a_forgotten_op_only_leaks() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let (pd, a, b) = async_pair::<Tracked>(Pair::new(&ctx, &channel, 0));
    let freed = Arc::new(AtomicUsize::new(0));
    let op = ManuallyDrop::new(b.recv(tracked(&pd, 64, &freed), ..).unwrap());
    FORGOTTEN.lock().unwrap().push(op);
    let (_, wc) = done(a.send(tracked(&pd, 64, &freed), ..).unwrap()).await;
    wc.ok().unwrap();
    timeout(LIMIT, b.settle()).await.expect("settled").unwrap();
    drop((a, b));
    assert_eq!(freed.load(Ordering::SeqCst), 1, "only the sender's region");
    drop((pd, channel, ctx));
    assert_clean_drops();
}

/// Asserts that `wrapped` is the refusal of a QP whose `reason` mentions `why`.
fn assert_refused(wrapped: rdma_verbs::Result<AsyncQp>, why: &str) {
    match wrapped {
        Err(Error::InvalidArgument {
            what: "async queue pair",
            reason,
        }) => assert!(reason.contains(why), "{reason}"),
        Err(other) => panic!("{other}"),
        Ok(qp) => panic!("wrapped: {qp:?}"),
    }
}

#[tokio::test]
async fn a_qp_of_another_cq_is_refused() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 0);
    assert_refused(AsyncQp::new(p.a, p.b_cq), "send and receive CQ");
    drop((p.b, p.a_cq, p.pd, channel, ctx));
    assert_clean_drops();
}

/// A QP on which a request was posted before it is wrapped is refused. Before, the table's
/// first op (id 0) took the completion of the caller's request posted under `wr_id` 0: an
/// RDMA write resolved with an RDMA read's completion.
#[tokio::test]
async fn a_qp_with_work_posted_before_is_refused() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 0);
    let (target, local) = (p.mr(4096), p.mr(4096));
    let sge = [local.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::read(0, &sge, target.remote()).signaled()])
        .unwrap();
    assert_refused(AsyncQp::new(p.a, p.a_cq), "posted on it before");
    // A receive posted ahead of the connection counts too.
    p.b.post_recv(&mut [rdma_verbs::RecvRequest::new(0, &sge)])
        .unwrap();
    assert_refused(AsyncQp::new(p.b, p.b_cq), "posted on it before");
    drop((target, local, p.pd, channel, ctx));
    assert_clean_drops();
}

/// A CQ that another QP uses is refused (before, the table took that QP's completions and
/// dropped them), and so is a QP on a shared receive queue (whose receives are posted under
/// ids of the caller's). Completions that a QP destroyed before left on the CQ are
/// discarded when it is wrapped: the table's first op (id 0) gets its own completion, not
/// the stale one of `wr_id` 0.
#[tokio::test]
async fn a_shared_cq_or_an_srq_qp_is_refused_and_stale_completions_are_discarded() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let peer_cq = ctx.create_cq(64, None).unwrap();
    let connected = |on: &rdma_verbs::CompletionQueue| {
        let x = pd
            .create_qp(QpType::Rc, on, on)
            .access(ALL)
            .build()
            .unwrap();
        let y = pd.create_qp(QpType::Rc, &peer_cq, &peer_cq).access(ALL);
        let y = y.build().unwrap();
        let (ex, ey) = (x.endpoint(), y.endpoint());
        let opts = ConnectOptions::new();
        (
            x.connect(&ey, &opts).unwrap(),
            y.connect(&ex, &opts).unwrap(),
        )
    };
    let target = pd.alloc_mr(64, ALL).unwrap();
    let sge = [target.sge(0..8).unwrap()];

    let cq = ctx.create_cq(64, Some(&channel)).unwrap();
    let (gone, gone_peer) = connected(&cq);
    gone.post_send(&mut [SendRequest::write(0, &sge, target.remote()).signaled()])
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop((gone, gone_peer));
    let (a, _a_peer) = connected(&cq);
    let a = AsyncQp::new(a, AsyncCq::new(cq).unwrap()).unwrap();
    let mr = pd.alloc_mr(64, ALL).unwrap();
    let (_, wc) = done(a.read(mr, 0..8, target.remote()).unwrap()).await;
    assert_eq!(
        (wc.ok().unwrap().opcode(), wc.wr_id()),
        (WcOpcode::RdmaRead, 0)
    );

    let cq = ctx.create_cq(64, Some(&channel)).unwrap();
    let (b, _b_peer) = connected(&cq);
    let (_other, _other_peer) = connected(&cq);
    assert_refused(
        AsyncQp::new(b, AsyncCq::new(cq).unwrap()),
        "another QP uses its CQ",
    );

    let srq = pd.create_srq(16, 1).unwrap();
    let cq = ctx.create_cq(64, Some(&channel)).unwrap();
    let on_srq = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .srq(&srq)
        .build()
        .unwrap();
    let me = on_srq.endpoint();
    let on_srq = on_srq.connect(&me, &ConnectOptions::new()).unwrap();
    assert_refused(
        AsyncQp::new(on_srq, AsyncCq::new(cq).unwrap()),
        "shared receive queue",
    );
    drop((a, srq, target, peer_cq, pd, channel, ctx));
    assert_clean_drops();
}

/// A waker that panics when another task's poll takes its op's completion: the panic
/// reaches that poll only after every completion it took was handed to its op (and the
/// table's lock was released), so the other ops still resolve. Before, the waker ran in
/// the middle of the batch, under the table's lock, and the completions after it were
/// lost: their ops never resolved.
#[tokio::test]
async fn a_panicking_waker_loses_no_completion() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let (pd, a, b) = async_pair::<AlignedBuffer>(Pair::new(&ctx, &channel, 0));
    let mut first = b.recv(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap();
    let waker = panicking_waker();
    let polled = Pin::new(&mut first).poll(&mut TaskContext::from_waker(&waker));
    assert!(polled.is_pending(), "nothing was sent yet");
    let second = b.recv(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap();
    // Both messages arrive without a yield to the runtime, whose reactor would wake the
    // first op's waker on the channel's event.
    let sends = [
        a.send(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap(),
        a.send(pd.alloc_mr(16, ALL).unwrap(), ..).unwrap(),
    ];
    std::thread::sleep(Duration::from_millis(200));
    let mut settle = b.settle();
    let mut cx = TaskContext::from_waker(Waker::noop());
    let settled = catch_unwind(AssertUnwindSafe(|| Pin::new(&mut settle).poll(&mut cx)));
    assert!(settled.is_err(), "the first op's waker did not run");
    drop(settle);
    let (_, got) = done(second).await;
    assert_eq!(got.ok().unwrap().opcode(), WcOpcode::Recv);
    let (_, got) = done(first).await;
    assert_eq!(got.ok().unwrap().opcode(), WcOpcode::Recv);
    for op in sends {
        done(op).await.1.ok().unwrap();
    }
    drop((a, b, pd, channel, ctx));
    assert_clean_drops();
}
