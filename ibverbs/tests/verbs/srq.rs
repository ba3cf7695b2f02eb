//! Shared receive queues: `ibv_query_srq`, the SRQ limit and its asynchronous event, and
//! resizing (`ibv_modify_srq`), with their bad inputs.

use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{assert_clean_drops, open, provider_has, Need};

use rdma_verbs::{
    AsRaw, AsyncEventKind, CompletionQueue, ConnectOptions, Context, Error, EventSource,
    ProtectionDomain, QpType, QueuePair, RecvRequest, SendRequest, SharedReceiveQueue,
};

use crate::common::{poll_one, ALL};

/// A sender connected to a receiver that takes its receives from `srq`: (sender, receiver,
/// the sender's CQ, the receiver's CQ).
fn sender_to(
    ctx: &Context,
    pd: &ProtectionDomain,
    srq: &SharedReceiveQueue,
) -> (QueuePair, QueuePair, CompletionQueue, CompletionQueue) {
    let (scq, rcq) = (
        ctx.create_cq(32, None).unwrap(),
        ctx.create_cq(32, None).unwrap(),
    );
    let s = pd.create_qp(QpType::Rc, &scq, &scq).build().unwrap();
    let r = pd
        .create_qp(QpType::Rc, &rcq, &rcq)
        .srq(srq)
        .build()
        .unwrap();
    let opts = ConnectOptions::new();
    let (es, er) = (s.endpoint(), r.endpoint());
    (
        s.connect(&er, &opts).unwrap(),
        r.connect(&es, &opts).unwrap(),
        scq,
        rcq,
    )
}

/// Waits up to 10 s for the SRQ limit event of `srq`, skipping other events.
fn wait_limit_event(ctx: &Context, srq: &SharedReceiveQueue) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let Some(ev) = ctx.wait_async_event(Duration::from_millis(200)).unwrap() else {
            continue;
        };
        if ev.kind == AsyncEventKind::SrqLimitReached {
            match ev.source {
                EventSource::Srq(id) => assert_eq!(id.addr(), srq.as_raw().as_ptr() as usize),
                other => panic!("SRQ limit event about {other:?}"),
            }
            return;
        }
    }
    panic!("no IBV_EVENT_SRQ_LIMIT_REACHED within 10 s");
}

#[test]
fn srq_limit_raises_its_async_event_once() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let srq = pd.create_srq(16, 1).unwrap();
    if !provider_has(Need::SrqQuery) {
        // Named all the same.
        let err = srq.query().unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
        return;
    }
    let attr = srq.query().unwrap();
    // At least what was asked and what the create granted (rxe's query reports its whole
    // ring: 31 for 16).
    assert!(
        attr.max_wr >= srq.max_wr() && srq.max_wr() >= 16,
        "{attr:?}"
    );
    assert_eq!((attr.max_sge, attr.limit), (1, 0));

    let (s, _r, scq, rcq) = sender_to(&ctx, &pd, &srq);
    let buf = pd.alloc_mr(6 * 16, ALL).unwrap();
    let sges: Vec<_> = (0..6)
        .map(|i| [buf.sge(i * 16..i * 16 + 16).unwrap()])
        .collect();
    let mut wrs: Vec<_> = sges
        .iter()
        .enumerate()
        .map(|(i, sge)| RecvRequest::new(i as u64, sge))
        .collect();
    srq.post_recv(&mut wrs).unwrap();
    srq.set_limit(4).unwrap();
    assert_eq!(srq.query().unwrap().limit, 4);

    // Three sends leave three receives, fewer than 4: one event, and the limit disarms.
    let msg = pd.alloc_mr(8, ALL).unwrap();
    let sge = [msg.sge(..).unwrap()];
    for i in 0..3 {
        s.post_send(&mut [SendRequest::send(i, &sge).signaled()])
            .unwrap();
        poll_one(&scq).ok().unwrap();
        poll_one(&rcq).ok().unwrap();
    }
    wait_limit_event(&ctx, &srq);
    assert_eq!(srq.query().unwrap().limit, 0);

    // Over the SRQ's size: refused before the call, the limit unchanged.
    let over = srq.max_wr() + 1;
    match srq.set_limit(over) {
        Err(Error::OutOfRange {
            what, value, max, ..
        }) => {
            assert_eq!(
                (what, value, max),
                ("SRQ limit", over.into(), srq.max_wr().into())
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(srq.query().unwrap().limit, 0);
    drop((s, _r, scq, rcq));
    drop(srq);
    assert_clean_drops();
}

#[test]
fn srq_resize_keeps_posted_receives() {
    let ctx = open();
    let dev = ctx.query_device().unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let srq = pd.create_srq(8, 1).unwrap();
    if !dev
        .device_cap_flags
        .contains(rdma_verbs::DeviceCapFlags::SRQ_RESIZE)
    {
        assert!(matches!(srq.resize(64), Err(Error::Unsupported { .. })));
        return;
    }
    let (s, _r, scq, rcq) = sender_to(&ctx, &pd, &srq);
    let mut buf = pd.alloc_mr(32, ALL).unwrap();
    buf.fill(0);
    let (a, b) = ([buf.sge(..16).unwrap()], [buf.sge(16..).unwrap()]);
    srq.post_recv(&mut [RecvRequest::new(1, &a), RecvRequest::new(2, &b)])
        .unwrap();

    srq.resize(64).unwrap();
    let attr = srq.query().unwrap();
    assert!(srq.max_wr() >= 64, "{attr:?}");
    assert_eq!(attr.max_wr, srq.max_wr());

    // The receives posted before the resize are still there.
    let msg = pd.alloc_mr(8, ALL).unwrap();
    let sge = [msg.sge(..).unwrap()];
    for i in 0..2 {
        s.post_send(&mut [SendRequest::send(i, &sge).signaled()])
            .unwrap();
        poll_one(&scq).ok().unwrap();
        assert_eq!(poll_one(&rcq).wr_id(), i + 1);
    }

    // Over the device's max_srq_wr, or under an armed limit: refused before the call.
    let max = dev.max_srq_wr;
    match srq.resize(max + 1) {
        Err(Error::DeviceLimit { limit, .. }) => assert_eq!(limit, "max_srq_wr"),
        other => panic!("{other:?}"),
    }
    srq.set_limit(32).unwrap();
    assert!(matches!(srq.resize(16), Err(Error::OutOfRange { .. })));
    assert!(srq.max_wr() >= 64);
    drop((s, _r, scq, rcq));
    drop(srq);
    assert_clean_drops();
}

/// A size under the receives posted and not yet consumed: the provider refuses it
/// (`EINVAL`), which comes back as a typed error naming the size asked for and the SRQ's
/// (it was `Error::Verb` with the raw errno); the SRQ keeps its size.
#[test]
fn srq_resize_under_its_posted_receives_is_a_typed_error() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let srq = pd.create_srq(64, 1).unwrap();
    let resizable = ctx.query_device().unwrap().device_cap_flags;
    if !resizable.contains(rdma_verbs::DeviceCapFlags::SRQ_RESIZE) {
        assert!(matches!(srq.resize(20), Err(Error::Unsupported { .. })));
        return;
    }
    let buf = pd.alloc_mr(40, ALL).unwrap();
    let sges: Vec<_> = (0..40).map(|i| [buf.sge(i..i + 1).unwrap()]).collect();
    let mut wrs: Vec<_> = sges.iter().map(|sge| RecvRequest::new(0, sge)).collect();
    srq.post_recv(&mut wrs).unwrap();
    let (size, queried) = (srq.max_wr(), srq.query().unwrap().max_wr);
    match srq.resize(20) {
        Err(Error::InvalidArgument {
            what: "SRQ size",
            reason,
        }) => assert!(
            reason.contains("refused 20") && reason.contains(&format!("size is {size}")),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!((srq.max_wr(), srq.query().unwrap().max_wr), (size, queried));
    drop((srq, buf, pd, ctx));
    assert_clean_drops();
}
