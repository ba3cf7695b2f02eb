//! The rule that a request's entries are of regions of its queue's protection domain
//! (`WrError::ForeignRegion`), refused before the provider on every path that posts entries:
//! `post_send`, a batch (`push` of a `SendRequest` and a `BatchRequest`), `post_recv` of a
//! QP (one request, through its table, and a list) and of an SRQ. A region of another PD
//! of the same context and one of a PD of another context on the same device are refused;
//! one of the queue's PD, reached through a clone of its handle, is posted. A queue keeps
//! the keys that passed: a region moved to another PD (`ibv_rereg_mr`) or deregistered and
//! its memory registered again in another PD is refused after its entries passed.

use rdma_verbs::{
    Error, MemoryRegion, PostError, ProtectionDomain, QpType, RecvRequest, RegistrableMemory,
    Rereg, SendOps, SendRequest, WrError,
};
use rdma_verbs_test_kit::{assert_clean_drops, assert_empty, open, provider_has, Need};

use crate::common::{poll_one, refusal_at, say, Pair, ALL};

/// A region of another PD than `pd`, and whether that PD is of `pd`'s context: one of a PD
/// of `pd`'s context, one of a PD of a second context on the same device.
fn foreign_regions(pd: &ProtectionDomain) -> [(MemoryRegion, bool); 2] {
    let same_context = pd.context().alloc_pd().unwrap();
    let other_context = open().alloc_pd().unwrap();
    [
        (same_context.alloc_mr(64, ALL).unwrap(), true),
        (other_context.alloc_mr(64, ALL).unwrap(), false),
    ]
}

/// That `got` refused request `index` for its entry 1, of `foreign` (of the queue's context
/// if `same_context`, where the two PDs' handles differ).
#[track_caller]
fn assert_foreign<E: Into<rdma_verbs::Error>>(
    got: Result<(), E>,
    index: usize,
    (foreign, same_context): &(MemoryRegion, bool),
) {
    match refusal_at(got, index) {
        WrError::ForeignRegion {
            entry: 1,
            lkey,
            region_pd,
            queue_pd,
        } => {
            assert_eq!(lkey, foreign.lkey());
            if *same_context {
                assert_ne!(region_pd, queue_pd);
            }
        }
        other => panic!("expected entry 1 refused as of another PD, got {other:?}"),
    }
}

/// `post_send` and both kinds of batch push refuse a write with an entry of another PD's
/// region, naming the entry; nothing reaches the QP, which then writes from a region of its
/// PD made through a clone of the PD's handle.
#[test]
fn an_entry_of_another_pds_region_is_refused_at_post_send_and_push() {
    if !provider_has(Need::ExtendedQp) {
        return;
    }
    let mut p = Pair::with(
        QpType::Rc,
        |b| b.max_send_sge(2).send_ops(SendOps::RDMA_WRITE),
        |_| {},
    );
    let own = p.pd.clone().alloc_mr(64, ALL).unwrap();
    let target = p.mr(128);
    for foreign in foreign_regions(&p.pd) {
        let sges = [own.sge(..32).unwrap(), foreign.0.sge(..32).unwrap()];
        let wr = || SendRequest::write(1, &sges, target.remote()).signaled();
        let good = [own.sge(..).unwrap()];
        let ok = || SendRequest::write(0, &good, target.remote());
        assert_foreign(p.a.post_send(&mut [wr()]), 0, &foreign);
        assert_foreign(p.a.post_send(&mut [ok(), wr()]), 1, &foreign);
        assert_foreign(p.a.batch(|b| b.push(&wr())), 0, &foreign);
        let built = p.a.batch(|b| {
            b.write(0, &good, target.remote()).push()?;
            b.write(1, &sges, target.remote()).signaled().push()
        });
        assert_foreign(built, 1, &foreign);
    }
    assert_empty(&p.a_cq, "after the refused requests");
    let sge = [own.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::write(2, &sge, target.remote()).signaled()])
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(wc.wr_id(), 2);
    wc.ok().unwrap();
    p.a.batch(|b| b.write(3, &sge, target.remote()).signaled().push())
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(wc.wr_id(), 3);
    wc.ok().unwrap();
    drop((own, target, p));
    assert_clean_drops();
}

/// `post_recv` of a QP (a single receive, posted through its table, and a list) and of an
/// SRQ refuse a receive with an entry of another PD's region, naming the entry, and post
/// one into a region of their PD made through a clone of its handle. No connection: the
/// receives are posted to a built QP (so on every provider, siw included).
#[test]
fn an_entry_of_another_pds_region_is_refused_at_post_recv() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(8, None).unwrap();
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .max_recv_sge(2)
        .build()
        .unwrap();
    let srq = pd.create_srq(8, 2).unwrap();
    let own = pd.clone().alloc_mr(64, ALL).unwrap();
    type Post<'q> = Box<dyn Fn(&mut [RecvRequest<'_>]) -> Result<(), PostError> + 'q>;
    let queues: [(&str, Post<'_>); 2] = [
        ("QP", Box::new(|wrs| qp.post_recv(wrs))),
        ("SRQ", Box::new(|wrs| srq.post_recv(wrs))),
    ];
    for foreign in foreign_regions(&pd) {
        let sges = [own.sge(..32).unwrap(), foreign.0.sge(..32).unwrap()];
        let good = [own.sge(32..).unwrap()];
        for (_, post) in &queues {
            assert_foreign(post(&mut [RecvRequest::new(1, &sges)]), 0, &foreign);
            let list = post(&mut [RecvRequest::new(0, &good), RecvRequest::new(1, &sges)]);
            assert_foreign(list, 1, &foreign);
        }
    }
    for (queue, post) in &queues {
        let sge = [own.sge(..).unwrap()];
        post(&mut [RecvRequest::new(2, &sge)]).unwrap_or_else(|e| panic!("{queue}: {e}"));
    }
    drop(queues);
    drop((own, srq, qp, cq, pd, ctx));
    assert_clean_drops();
}

/// Writes `mr`'s first 64 bytes to `target` through `p.a`'s `post_send` and waits for it.
fn write_from<B: RegistrableMemory>(p: &Pair, mr: &MemoryRegion<B>, target: &MemoryRegion) {
    let sge = [mr.sge(..64).unwrap()];
    p.a.post_send(&mut [SendRequest::write(7, &sge, target.remote()).signaled()])
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(wc.wr_id(), 7);
    wc.ok().unwrap();
}

/// That posting a write from `mr`, of another PD than `p.a`'s, is refused for its entry 0.
#[track_caller]
fn assert_refused<B: RegistrableMemory>(p: &Pair, mr: &MemoryRegion<B>, target: &MemoryRegion) {
    let sge = [mr.sge(..64).unwrap()];
    let got =
        p.a.post_send(&mut [SendRequest::write(8, &sge, target.remote())]);
    match refusal_at(got, 0) {
        WrError::ForeignRegion { entry: 0, lkey, .. } => assert_eq!(lkey, mr.lkey()),
        other => panic!("expected entry 0 refused as of another PD, got {other:?}"),
    }
}

/// A region whose entries passed (so are in the QP's cache of keys) and which then moves to
/// another PD (`ibv_rereg_mr` with a new PD) is refused; moved back, it passes again. Where
/// the provider has no `rereg_mr` (rdma-core's rxe and siw) the region stays in the QP's PD
/// and keeps passing.
#[test]
fn a_region_moved_to_another_pd_is_refused() {
    let p = Pair::new(QpType::Rc);
    let other_pd = p.pd.context().alloc_pd().unwrap();
    let target = p.mr(64);
    let mut mr = p.pd.register(vec![0u8; 4096], ALL).unwrap();
    write_from(&p, &mr, &target);
    match mr.rereg(&Rereg::new().pd(&other_pd)) {
        Ok(()) => {
            assert_refused(&p, &mr, &target);
            mr.rereg(&Rereg::new().pd(&p.pd)).unwrap();
            write_from(&p, &mr, &target);
        }
        Err(Error::Unsupported { what, missing }) => {
            say(format!("rereg to another PD: {what}: {missing}"));
            write_from(&p, &mr, &target);
        }
        Err(other) => panic!("rereg to another PD: {other:?}"),
    }
    drop((mr, target, other_pd, p));
    assert_clean_drops();
}

/// A region whose entries passed, deregistered, and its memory registered again in another
/// PD (where the device hands the same key out again, it is a key the QP's cache holds) is
/// refused; registered again in the QP's PD, it passes. Twice, so the second round's keys
/// were cached after the first round's changes.
#[test]
fn a_region_registered_again_in_another_pd_is_refused() {
    let p = Pair::new(QpType::Rc);
    let other_pd = p.pd.context().alloc_pd().unwrap();
    let target = p.mr(64);
    let mut mem = vec![0u8; 4096];
    for _ in 0..2 {
        let own = p.pd.register(mem, ALL).unwrap();
        write_from(&p, &own, &target);
        let lkey = own.lkey();
        let foreign = other_pd.register(own.deregister().unwrap(), ALL).unwrap();
        say(format!(
            "lkey {lkey:#x} in the QP's PD, then {:#x} in another",
            foreign.lkey()
        ));
        assert_refused(&p, &foreign, &target);
        mem = foreign.deregister().unwrap();
    }
    drop((target, other_pd, p));
    assert_clean_drops();
}
