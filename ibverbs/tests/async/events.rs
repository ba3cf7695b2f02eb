//! `AsyncEvents`: the device's asynchronous events as a stream.

use std::time::Duration;

use rdma_verbs::tokio::AsyncEvents;
use rdma_verbs::{
    AsRaw, AsyncEventKind, ConnectOptions, EventSource, QpType, RecvRequest, SendRequest, Sge,
};
use rdma_verbs_test_kit::{assert_clean_drops, open};
use tokio::time::timeout;

use crate::common::LIMIT;

/// A CQ overrun (more completions than a 1-entry CQ holds, on a QP connected to itself)
/// arrives on the stream as a CQ error naming the CQ; the blocking wait still works on the
/// now non-blocking fd, and a second stream of the context is refused while one exists.
#[tokio::test]
async fn a_cq_overrun_arrives_on_the_stream() {
    let ctx = open();
    let mut events = AsyncEvents::new(&ctx).unwrap();
    assert!(
        AsyncEvents::new(&ctx).is_err(),
        "a second registration of the fd"
    );
    assert_eq!(
        ctx.wait_async_event(Duration::from_millis(10)).unwrap(),
        None
    );
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(1, None).unwrap();
    let n = cq.capacity() + 4;
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .max_send_wr(n)
        .max_recv_wr(n)
        .sq_sig_all(true);
    let qp = qp.build().unwrap();
    let mut recvs: Vec<_> = (0..n)
        .map(|i| RecvRequest::new(i.into(), Sge::NONE))
        .collect();
    qp.post_recv(&mut recvs).unwrap();
    let me = qp.endpoint();
    let qp = qp.connect(&me, &ConnectOptions::new()).unwrap();
    let mut sends: Vec<_> = (0..n)
        .map(|i| SendRequest::send(i.into(), Sge::NONE))
        .collect();
    qp.post_send(&mut sends).unwrap();
    let event = loop {
        let event = timeout(LIMIT, events.next_event())
            .await
            .expect("an event")
            .unwrap();
        if event.kind == AsyncEventKind::CqErr {
            break event;
        }
    };
    match event.source {
        EventSource::Cq(id) => assert_eq!(id.addr(), cq.as_raw().as_ptr() as usize),
        other => panic!("expected a CQ source, got {other:?}"),
    }
    drop(events);
    let again = AsyncEvents::new(&ctx).expect("the fd is free again");
    drop((again, qp, cq, pd, ctx));
    assert_clean_drops();
}
