//! `AsyncCq` and `CompletionStream`: completions busy-polled or awaited on the channel's
//! event, several CQs on one channel, and the errors of making one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use rdma_verbs::tokio::AsyncCq;
use rdma_verbs::{
    ConnectOptions, Error, QpType, QueuePair, RecvRequest, SendRequest, WcOpcode, WorkCompletion,
};
use rdma_verbs_test_kit::{assert_clean_drops, child_test, open, ALL};
use tokio::time::timeout;

use crate::common::{panicking_waker, Pair, LIMIT};

/// One completion from `cq`, within [`LIMIT`].
async fn next(cq: &mut AsyncCq) -> WorkCompletion {
    let mut wc = [WorkCompletion::default()];
    let n = timeout(LIMIT, cq.poll(&mut wc))
        .await
        .expect("a completion")
        .unwrap();
    assert_eq!(n, 1);
    wc[0]
}

#[tokio::test]
async fn a_completion_that_comes_later_wakes_the_event_path() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let mut p = Pair::new(&ctx, &channel, 0);
    let (src, dst) = (p.mr(64), p.mr(64));
    p.b.post_recv(&mut [RecvRequest::new(7, &[dst.sge(..).unwrap()])])
        .unwrap();
    let send = async {
        // Long enough for the receiver to arm its CQ and wait on the channel.
        tokio::time::sleep(Duration::from_millis(50)).await;
        p.a.post_send(&mut [SendRequest::send(1, &[src.sge(0..33).unwrap()])])
            .unwrap();
    };
    let ((), wc) = tokio::join!(send, next(&mut p.b_cq));
    wc.ok().unwrap();
    assert_eq!(
        (wc.wr_id(), wc.opcode(), wc.byte_len()),
        (7, WcOpcode::Recv, 33)
    );
    drop((src, dst, p, channel, ctx));
    assert_clean_drops();
}

#[tokio::test]
async fn busy_polling_finds_a_completion_without_waiting() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let mut p = Pair::new(&ctx, &channel, u32::MAX);
    let mr = p.mr(64);
    let sge = [mr.sge(..).unwrap()];
    for i in 0..3 {
        p.a.post_send(&mut [SendRequest::write(i, &sge, mr.remote()).signaled()])
            .unwrap();
        let wc = next(&mut p.a_cq).await;
        assert_eq!((wc.wr_id(), wc.opcode()), (i, WcOpcode::RdmaWrite));
    }
    // Never armed: the channel has no event.
    assert!(!p.a_cq.cq().wait_timeout(Duration::ZERO).unwrap());
    drop((mr, p, channel, ctx));
    assert_clean_drops();
}

/// An empty CQ busy-polled without end still yields to the runtime (every 32 empty polls):
/// a spawned task runs and a timeout fires; the CQ then finds a completion, never armed.
#[tokio::test]
async fn busy_polling_an_empty_cq_lets_other_tasks_run() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let mut p = Pair::new(&ctx, &channel, u32::MAX);
    let other = tokio::spawn(async {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    });
    let mut wc = [WorkCompletion::default()];
    let spun = timeout(Duration::from_millis(100), p.a_cq.poll(&mut wc)).await;
    assert!(spun.is_err(), "nothing was posted: {spun:?}");
    // The spawned task finishes while the CQ spins: it could not if the spin never yielded
    // (however slow the machine: no deadline but the hang guard, as under valgrind 100 ms
    // can pass before the task's 10 turns are through). Each turn waits for a yield of the
    // spin; under DRD, which runs one thread at a time, with a CPU of the VM busy, 100
    // turns beside the other tests took over 120 s.
    let ran = timeout(Duration::from_secs(120), async {
        tokio::select! {
            biased;
            done = other => done.unwrap(),
            got = p.a_cq.poll(&mut wc) => panic!("nothing was posted: {got:?}"),
        }
    })
    .await;
    assert!(ran.is_ok(), "the spawned task never ran while the CQ spun");
    let mr = p.mr(64);
    let sge = [mr.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::write(9, &sge, mr.remote()).signaled()])
        .unwrap();
    assert_eq!(next(&mut p.a_cq).await.wr_id(), 9);
    assert!(!p.a_cq.cq().wait_timeout(Duration::ZERO).unwrap());
    drop((mr, p, channel, ctx));
    assert_clean_drops();
}

/// Sends and receives one side of a ping-pong has seen complete.
#[derive(Default)]
struct Seen {
    sends: u64,
    recvs: u64,
}

impl Seen {
    /// Takes completions of `qp` from `cq` until `done` holds.
    async fn until(&mut self, cq: &mut AsyncCq, qp: &QueuePair, done: impl Fn(&Seen) -> bool) {
        while !done(self) {
            let wc = next(cq).await;
            wc.ok().unwrap();
            assert_eq!(wc.qp_num(), qp.qp_num(), "another CQ's completion");
            match wc.opcode() {
                WcOpcode::Send => self.sends += 1,
                WcOpcode::Recv => self.recvs += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
    }
}

/// Ping-pong between two tasks whose CQs share a channel, on the event path: every round
/// arms, waits and wakes; a completion missed between a poll and an arm hangs the test.
#[tokio::test]
async fn ping_pong_on_one_channel_misses_nothing() {
    const ROUNDS: u64 = 100;
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 0);
    let (a_mr, b_mr) = (p.mr(8), p.mr(8));
    let Pair {
        pd,
        a,
        mut a_cq,
        b,
        mut b_cq,
    } = p;
    let (a_sge, b_sge) = ([a_mr.sge(..).unwrap()], [b_mr.sge(..).unwrap()]);
    a.post_recv(&mut [RecvRequest::new(0, &a_sge)]).unwrap();
    b.post_recv(&mut [RecvRequest::new(0, &b_sge)]).unwrap();
    let ping = async {
        let mut seen = Seen::default();
        for round in 1..=ROUNDS {
            a.post_send(&mut [SendRequest::send(round, &a_sge).signaled()])
                .unwrap();
            seen.until(&mut a_cq, &a, |s| s.recvs == round).await;
            a.post_recv(&mut [RecvRequest::new(round, &a_sge)]).unwrap();
        }
        seen.until(&mut a_cq, &a, |s| s.sends == ROUNDS).await;
    };
    let pong = async {
        let mut seen = Seen::default();
        for round in 1..=ROUNDS {
            seen.until(&mut b_cq, &b, |s| s.recvs == round).await;
            b.post_recv(&mut [RecvRequest::new(round, &b_sge)]).unwrap();
            b.post_send(&mut [SendRequest::send(round, &b_sge).signaled()])
                .unwrap();
        }
        seen.until(&mut b_cq, &b, |s| s.sends == ROUNDS).await;
    };
    tokio::join!(ping, pong);
    drop((a_cq, b_cq, a_mr, b_mr, a, b, pd, channel, ctx));
    assert_clean_drops();
}

/// A waiter that registered with the reactor after another CQ's gives up (dropped by a
/// timeout): the other CQ's waiter still gets its completion.
#[tokio::test]
async fn a_dropped_waiter_hands_the_channel_on() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 0);
    let (src, dst) = (p.mr(16), p.mr(16));
    let Pair {
        pd,
        a,
        mut a_cq,
        b,
        mut b_cq,
    } = p;
    b.post_recv(&mut [RecvRequest::new(3, &[dst.sge(..).unwrap()])])
        .unwrap();
    // b waits first (no timeout of its own, whose timer would poll it again), then a
    // registers with the reactor after it and gives up.
    let waiter = tokio::spawn(async move {
        let mut wc = [WorkCompletion::default()];
        b_cq.poll(&mut wc).await.unwrap();
        wc[0]
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut wc = [WorkCompletion::default()];
    let gave_up = timeout(Duration::from_millis(20), a_cq.poll(&mut wc)).await;
    assert!(gave_up.is_err(), "a has no completion: {gave_up:?}");
    a.post_send(&mut [SendRequest::send(1, &[src.sge(..).unwrap()])])
        .unwrap();
    let wc = timeout(LIMIT, waiter).await.expect("b woken").unwrap();
    assert_eq!((wc.wr_id(), wc.opcode()), (3, WcOpcode::Recv));
    drop((a_cq, src, dst, a, b, pd, channel, ctx));
    assert_clean_drops();
}

/// A's stream waits on the channel (polled once, after B's waiter) and is then kept but
/// never polled again: a completion on B still wakes B's task (and one on A too).
#[tokio::test]
async fn an_idle_stream_does_not_stall_the_other_cqs_of_its_channel() {
    use futures_core::Stream;
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 0);
    let (src, dst) = (p.mr(16), p.mr(16));
    let Pair {
        pd,
        a,
        a_cq,
        b,
        mut b_cq,
    } = p;
    b.post_recv(&mut [RecvRequest::new(3, &[dst.sge(..).unwrap()])])
        .unwrap();
    let waiter = tokio::spawn(async move {
        let mut wc = [WorkCompletion::default()];
        b_cq.poll(&mut wc).await.unwrap();
        wc[0]
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mut stream = Box::pin(a_cq.into_stream());
    let first = std::future::poll_fn(|cx| Poll::Ready(stream.as_mut().poll_next(cx))).await;
    assert!(first.is_pending(), "a has no completion yet");
    // Signaled: the send completes on A (whose stream is not polled) and the receive on B.
    a.post_send(&mut [SendRequest::send(1, &[src.sge(..).unwrap()]).signaled()])
        .unwrap();
    let wc = timeout(LIMIT, waiter).await.expect("b woken").unwrap();
    assert_eq!((wc.wr_id(), wc.opcode()), (3, WcOpcode::Recv));
    drop((stream, src, dst, a, b, pd, channel, ctx));
    assert_clean_drops();
}

#[tokio::test]
async fn the_stream_yields_every_completion_in_order() {
    use futures_core::Stream;
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let p = Pair::new(&ctx, &channel, 2);
    let mr = p.mr(64);
    let mut stream = p.a_cq.into_stream();
    let sge = [mr.sge(..).unwrap()];
    // More than the stream's batch of 16.
    let mut wrs: Vec<_> = (0..40)
        .map(|i| SendRequest::write(i, &sge, mr.remote()).signaled())
        .collect();
    for chunk in wrs.chunks_mut(20) {
        p.a.post_send(chunk).unwrap();
    }
    let mut stream = std::pin::Pin::new(&mut stream);
    for i in 0..40 {
        let item = timeout(
            LIMIT,
            std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)),
        )
        .await
        .expect("a completion");
        let wc = item.expect("the stream does not end").unwrap();
        wc.ok().unwrap();
        assert_eq!(wc.wr_id(), i);
    }
    drop((wrs, sge));
    drop((stream, mr, p.a, p.b, p.b_cq, p.pd, channel, ctx));
    assert_clean_drops();
}

#[tokio::test]
async fn a_cq_without_a_channel_is_refused() {
    let ctx = open();
    let err = AsyncCq::new(ctx.create_cq(4, None).unwrap()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "completion queue",
                ..
            }
        ),
        "{err}"
    );
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn outside_a_runtime_is_refused() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let err = AsyncCq::new(ctx.create_cq(4, Some(&channel)).unwrap()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "async completion queue",
                ..
            }
        ),
        "{err}"
    );
    let err = rdma_verbs::tokio::AsyncEvents::new(&ctx).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                what: "async event stream",
                ..
            }
        ),
        "{err}"
    );
    drop((channel, ctx));
    assert_clean_drops();
}

/// A runtime built without its I/O driver (no `enable_io`) is current, but tokio's
/// registration panics in it: each async type refuses it with a typed error instead (the
/// panic is caught inside the crate), and nothing it made is left behind.
#[test]
fn a_runtime_without_its_io_driver_is_refused() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _entered = rt.enter();
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let no_driver = |err: &Error, name: &str| match err {
        Error::InvalidArgument { what, reason } => *what == name && reason.contains("I/O driver"),
        _ => false,
    };
    let cq = ctx.create_cq(4, Some(&channel)).unwrap();
    let err = AsyncCq::new(cq).unwrap_err();
    assert!(no_driver(&err, "async completion queue"), "{err}");
    // The channel was not registered: a second try fails the same way, not with EEXIST.
    let err = AsyncCq::new(ctx.create_cq(4, Some(&channel)).unwrap()).unwrap_err();
    assert!(no_driver(&err, "async completion queue"), "{err}");
    let err = rdma_verbs::tokio::AsyncEvents::new(&ctx).unwrap_err();
    assert!(no_driver(&err, "async event stream"), "{err}");
    #[cfg(feature = "cm")]
    {
        let err = rdma_verbs::tokio::cm::AsyncCmChannel::new().unwrap_err();
        assert!(no_driver(&err, "async CM event channel"), "{err}");
    }
    // The blocking calls still work on what the refused wrappers were given.
    let cq = ctx.create_cq(4, Some(&channel)).unwrap();
    assert!(cq
        .poll(&mut [WorkCompletion::default(); 4])
        .unwrap()
        .is_empty());
    drop((cq, channel, ctx));
    assert_clean_drops();
}

/// A blocking wait on one CQ of a channel reads the event of an async CQ of the same
/// channel, whose waiting task's waker panics: the event is counted and acknowledged before
/// the waker runs (outside the channel's lock), the panic reaches the wait, the async CQ
/// still gets its completion, and both CQs drop. Before, the waker ran under the lock
/// before the acknowledgement, and the async CQ's drop (`ibv_destroy_cq`) then waited
/// forever; so the test runs in a child, given 20 s.
#[tokio::test]
async fn a_panicking_waker_leaves_the_event_acknowledged() {
    const CHILD: &str = "IBVERBS_TEST_WAKER_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let name = "cq::a_panicking_waker_leaves_the_event_acknowledged";
        let deadline = Instant::now() + Duration::from_secs(20);
        let done = child_test(name, CHILD).finish_by(deadline);
        let done = done.unwrap_or_else(|output| panic!("the child hung:\n{output}"));
        assert!(done.status.success(), "{}", done.context());
        return;
    }
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let blocking = ctx.create_cq(16, Some(&channel)).unwrap();
    let raw = ctx.create_cq(16, Some(&channel)).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let qp = pd.create_qp(QpType::Rc, &raw, &raw).access(ALL).build();
    let qp = qp.unwrap();
    let me = qp.endpoint();
    let qp = qp.connect(&me, &ConnectOptions::new()).unwrap();
    let mut cq = AsyncCq::new(raw).unwrap().with_spin(0);
    let mut wc = [WorkCompletion::default()];
    let waker = panicking_waker();
    let polled = cq.poll_completions(&mut TaskContext::from_waker(&waker), &mut wc);
    assert!(polled.is_pending(), "nothing was posted yet");
    let mr = pd.alloc_mr(64, ALL).unwrap();
    let sge = [mr.sge(0..8).unwrap()];
    qp.post_send(&mut [SendRequest::write(1, &sge, mr.remote()).signaled()])
        .unwrap();
    let waited = catch_unwind(AssertUnwindSafe(|| blocking.wait_timeout(LIMIT)));
    assert!(waited.is_err(), "the waker did not run: {waited:?}");
    assert_eq!(next(&mut cq).await.wr_id(), 1);
    drop((qp, mr, pd, cq, blocking, channel, ctx));
    assert_clean_drops();
}
