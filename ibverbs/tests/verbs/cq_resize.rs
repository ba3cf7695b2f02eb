//! Changing CQs after creation: `ibv_resize_cq` (growing and shrinking with completions in
//! the queue, the bad sizes) and `ibv_modify_cq` (completion moderation, or the typed error
//! of a device without it).

use rdma_verbs_test_kit::{provider_has, Need};
use std::time::Duration;

use rdma_verbs_test_kit::{assert_clean_drops, open};

use rdma_verbs::{Error, QpType, SendRequest, WcFields, WorkCompletion};

use crate::common::{rc_pair_on, Pair, ALL};

/// Posts `n` signaled 8-byte writes on `p.a` and gives their completions time to reach
/// `p.a_cq`, without taking any.
fn writes_done(p: &Pair, n: u64) {
    let src = p.mr(8);
    let dst = p.mr(8);
    let sge = [src.sge(..).unwrap()];
    let mut wrs: Vec<_> = (1..=n)
        .map(|i| SendRequest::write(i, &sge, dst.remote()).signaled())
        .collect();
    p.a.post_send(&mut wrs).unwrap();
    // The completions of RC writes come with their acknowledgements; rxe on loopback has
    // them all within this.
    std::thread::sleep(Duration::from_millis(200));
}

/// Takes `n` completions of `p.a_cq`, checking their ids run 1..=n.
fn take_all(p: &Pair, n: usize) {
    let mut wc = vec![WorkCompletion::default(); n];
    let done = p
        .a_cq
        .poll_until(&mut wc, n, Some(Duration::from_secs(10)))
        .unwrap();
    let ids: Vec<u64> = done.iter().map(|w| w.ok().unwrap().wr_id()).collect();
    assert_eq!(ids, (1..=n as u64).collect::<Vec<_>>());
}

#[test]
fn resizing_keeps_the_completions_in_the_queue() {
    if !provider_has(Need::CqResize) {
        return;
    }
    let mut p = Pair::new(QpType::Rc);
    writes_done(&p, 8);
    let before = p.a_cq.capacity();
    p.a_cq.resize(256).unwrap();
    assert!(p.a_cq.capacity() >= 256, "{}", p.a_cq.capacity());
    assert!(p.a_cq.capacity() > before);
    // Shrinking to no fewer than the 8 it holds is fine too.
    p.a_cq.resize(16).unwrap();
    assert!(p.a_cq.capacity() >= 16);
    take_all(&p, 8);
    drop(p);
    assert_clean_drops();
}

#[test]
fn bad_resizes_are_typed_errors_and_leave_the_cq_working() {
    if !provider_has(Need::CqResize) {
        return;
    }
    let mut p = Pair::new(QpType::Rc);
    let max_cqe = open().query_device().unwrap().max_cqe;
    let err = p.a_cq.resize(0).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "CQ entries",
                min: 1,
                ..
            }
        ),
        "{err:?}"
    );
    let err = p.a_cq.resize(max_cqe + 1).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DeviceLimit {
                limit: "max_cqe",
                ..
            }
        ),
        "{err:?}"
    );
    // Fewer entries than the completions waiting in it: the provider refuses.
    writes_done(&p, 8);
    let capacity = p.a_cq.capacity();
    let err = p.a_cq.resize(4).unwrap_err();
    match &err {
        Error::InvalidArgument { what, reason } => {
            assert_eq!(*what, "CQ entries");
            assert!(reason.contains("fewer than the completions"), "{reason}");
        }
        other => panic!("expected Error::InvalidArgument, got {other:?}"),
    }
    assert_eq!(p.a_cq.capacity(), capacity);
    take_all(&p, 8);
    drop(p);
    assert_clean_drops();
}

#[test]
fn an_extended_cq_resizes_too() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut cq = ctx.create_cq_ex(8, WcFields::BYTE_LEN, None).unwrap();
    cq.resize(128).unwrap();
    assert!(cq.capacity() >= 128);
    // And still polls through sessions afterwards.
    let (a, _b, _link) = rc_pair_on(&pd, &cq);
    let buf = pd.alloc_mr(16, ALL).unwrap();
    let sge = [buf.sge(0..3).unwrap()];
    a.post_send(&mut [SendRequest::write(1, &sge, buf.remote()).signaled()])
        .unwrap();
    let mut lens = Vec::new();
    cq.poll_each_until(1, Some(Duration::from_secs(10)), |wc| {
        lens.push((wc.wr_id(), wc.byte_len()));
        Ok(())
    })
    .unwrap();
    assert_eq!(lens, [(1, Some(3))]);
    drop((a, cq));
    assert_clean_drops();
}

#[test]
fn moderation_is_set_or_a_typed_error() {
    let ctx = open();
    let caps = ctx.query_device().unwrap().cq_mod_caps;
    let cq = ctx.create_cq(16, None).unwrap();
    if caps.max_cq_count == 0 && caps.max_cq_period == 0 {
        // rxe reports no moderation: refused before the call, by name.
        let err = cq.set_moderation(4, 10).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Unsupported {
                    missing: "cq_mod_caps in ibv_device_attr_ex",
                    ..
                }
            ),
            "{err:?}"
        );
    } else {
        cq.set_moderation(1, 1).unwrap();
        if caps.max_cq_count < u16::MAX {
            let err = cq.set_moderation(caps.max_cq_count + 1, 1).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::DeviceLimit {
                        limit: "max_cq_count",
                        ..
                    }
                ),
                "{err:?}"
            );
        }
    }
    drop((cq, ctx));
    assert_clean_drops();
}
