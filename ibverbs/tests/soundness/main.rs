//! The posting path's soundness rules (rule 4 of `rdma_verbs::docs::soundness`, the batch's
//! closure and the typed QP states), one named test per hazard, and a property test that
//! posts random requests to real queue pairs of every transport, through `post_send`,
//! `WrBatch::push` and the batch's `BatchRequest`s (once, or once more than the send queue
//! holds): every refused request gets the typed error an independent model of the limits
//! (`model.rs`) predicts, every accepted one completes (or fails in the provider with a
//! typed error), and the process neither dies nor hangs. Runs on a device (rxe in CI)
//! through `scripts/with-rdma`.
//!
//! What the compiler rejects (a forgotten batch, a raw `modify` without `unsafe`) is pinned
//! by the cases of `tests/compile_fail/` (`tests/compile_fail.rs`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::Config;
use rdma_verbs::{
    AccessFlags, AddressHandle, CompletionQueue, ConnectOptions, Error, MemoryRegion,
    ProtectionDomain, QpState, QpType, QueuePair, RecvRequest, RemoteMemory, SendOps, SendRequest,
    Sge, WorkCompletion, WrError, WrOpcode, DEFAULT_QKEY,
};

use rdma_verbs_test_kit::{assert_clean_drops, open, poll_one, poll_within, ALL};

mod model; // the property test's model of the rules

use model::{expected, spec, Granted, Spec, Way, HUGE};

/// Asserts that `cq` stays empty for a moment.
fn assert_empty(cq: &CompletionQueue) {
    rdma_verbs_test_kit::assert_empty(cq, "after the refused requests");
}

/// Asserts that `result` is the refusal of request `index` for `reason`.
#[track_caller]
fn assert_refused<E: Into<Error>>(result: Result<(), E>, index: usize, reason: WrError) {
    match result.map_err(Into::into) {
        Err(Error::Request {
            index: i,
            reason: r,
        }) if i == index && r == reason => {}
        other => panic!("expected request {index} refused for {reason:?}, got {other:?}"),
    }
}

/// The send operations the extended API is enabled for on each transport (rxe's).
fn send_ops(qp_type: QpType) -> SendOps {
    let sends = SendOps::SEND | SendOps::SEND_WITH_IMM;
    match qp_type {
        // All but compare-and-swap, so that the batch refuses one operation post_send takes.
        QpType::Rc => {
            sends
                | SendOps::RDMA_WRITE
                | SendOps::RDMA_WRITE_WITH_IMM
                | SendOps::RDMA_READ
                | SendOps::ATOMIC_FETCH_AND_ADD
        }
        QpType::Uc => sends | SendOps::RDMA_WRITE | SendOps::RDMA_WRITE_WITH_IMM,
        QpType::Ud => sends,
    }
}

/// Sender `a` and receiver `b` of one transport, connected (or ready, UD), with the extended
/// send API on `a`, and for UD an address handle of `b`.
struct Pair {
    a: QueuePair,
    a_cq: CompletionQueue,
    b: QueuePair,
    b_cq: CompletionQueue,
    ah: Option<AddressHandle>,
}

impl Pair {
    fn new(pd: &ProtectionDomain, qp_type: QpType, max_sge: u32, max_inline: u32) -> Pair {
        let ctx = pd.context();
        let a_cq = ctx.create_cq(64, None).unwrap();
        let b_cq = ctx.create_cq(64, None).unwrap();
        let build = |cq: &CompletionQueue| {
            pd.create_qp(qp_type, cq, cq)
                .access(ALL)
                .max_send_sge(max_sge)
                .max_inline_data(max_inline)
                .send_ops(send_ops(qp_type))
                .build()
                .unwrap()
        };
        let (a, b) = (build(&a_cq), build(&b_cq));
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let (a, b) = if qp_type == QpType::Ud {
            (a.ready().unwrap(), b.ready().unwrap())
        } else {
            let opts = ConnectOptions::new().retry_cnt(6);
            (
                a.connect(&eb, &opts).unwrap(),
                b.connect(&ea, &opts).unwrap(),
            )
        };
        let ah = (qp_type == QpType::Ud).then(|| pd.create_ah(&eb).gid_index(1).build().unwrap());
        Pair {
            a,
            a_cq,
            b,
            b_cq,
            ah,
        }
    }
}

/// A UD send without an address handle would make rxe and mlx5 dereference a null
/// `wr.ud.ah`; an RDMA or atomic request on a UD QP would put a peer's address there. Both
/// are refused before the provider.
#[test]
fn ud_requests_without_an_address_handle_are_refused() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut p = Pair::new(&pd, QpType::Ud, 1, 0);
    let src = pd.alloc_mr(64, ALL).unwrap();
    let sge = [src.sge(..).unwrap()];
    let peer = RemoteMemory::new(0x4141_4141_4141, 64, 0x4242);
    let ud = WrError::OpcodeNotSupported {
        opcode: WrOpcode::RdmaWrite,
        qp_type: QpType::Ud,
    };
    assert_refused(
        p.a.post_send(&mut [SendRequest::send(1, &sge).signaled()]),
        0,
        WrError::MissingAddressHandle,
    );
    assert_refused(
        p.a.post_send(&mut [SendRequest::write(2, &sge, peer).signaled()]),
        0,
        ud,
    );
    let result = sge[0];
    assert_refused(
        p.a.post_send(&mut [SendRequest::fetch_add(3, &result, peer, 1)]),
        0,
        WrError::OpcodeNotSupported {
            opcode: WrOpcode::FetchAdd,
            qp_type: QpType::Ud,
        },
    );
    // An address handle of another protection domain.
    let other_pd = ctx.alloc_pd().unwrap();
    let foreign = other_pd
        .create_ah(&p.b.endpoint())
        .gid_index(1)
        .build()
        .unwrap();
    let qpn = p.b.qp_num();
    assert_refused(
        p.a.post_send(&mut [SendRequest::send(4, &sge).ud(&foreign, qpn, DEFAULT_QKEY)]),
        0,
        WrError::ForeignAddressHandle,
    );
    // The same through the extended API.
    let err =
        p.a.batch(|batch| batch.push(&SendRequest::send(5, &sge)))
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Request {
                index: 0,
                reason: WrError::MissingAddressHandle
            }
        ),
        "{err}"
    );
    let err =
        p.a.batch(|batch| batch.push(&SendRequest::write(6, &sge, peer)))
            .unwrap_err();
    assert!(
        matches!(err, Error::Request { index: 0, reason } if reason == ud),
        "{err}"
    );
    assert_empty(&p.a_cq);

    // Addressed, the same send goes through on both paths.
    let dst = pd.alloc_mr(40 + 64, ALL).unwrap();
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge), RecvRequest::new(2, &rsge)])
        .unwrap();
    let ah = p.ah.take().unwrap();
    let wr = SendRequest::send(7, &sge)
        .ud(&ah, qpn, DEFAULT_QKEY)
        .signaled();
    p.a.post_send(&mut [wr]).unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 7);
    p.a.batch(|batch| {
        batch.push(
            &SendRequest::send(8, &sge)
                .ud(&ah, qpn, DEFAULT_QKEY)
                .signaled(),
        )
    })
    .unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 8);
    poll_one(&p.b_cq).ok().unwrap();
    poll_one(&p.b_cq).ok().unwrap();
    drop((ah, foreign, p, dst, src));
    assert_clean_drops();
}

/// Inline totals, SGE counts and wrapping sums, which the providers do not check: 32
/// entries of 2^27 bytes posted inline wrap rxe's 32-bit total to 0; a batch of 65,536
/// inline entries overruns rxe's inline list; a single entry larger than `max_inline_data`
/// passes mlx5's `int` check. Each is refused before the provider.
#[test]
fn inline_totals_sge_counts_and_long_messages_are_refused() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut p = Pair::new(&pd, QpType::Rc, 32, 64);
    let (max_sge, max_inline) = (p.a.max_send_sge(), p.a.max_inline_data());
    assert!(max_sge >= 32 && max_inline >= 64);
    let big = pd.alloc_mr(1 << 27, AccessFlags::LOCAL_WRITE).unwrap();
    let dst = pd.alloc_mr(4096, ALL).unwrap();
    let whole = big.sge(..).unwrap();

    // (a) 32 × 2^27 = 2^32 bytes inline.
    let sges = vec![whole; 32];
    assert_refused(
        p.a.post_send(&mut [SendRequest::send(1, &sges).inline()]),
        0,
        WrError::InlineTooLarge {
            total: 1 << 32,
            max: max_inline,
        },
    );
    // ... and not inline: longer than a message may be.
    assert_refused(
        p.a.post_send(&mut [SendRequest::write(2, &sges, dst.remote())]),
        0,
        WrError::MessageTooLong {
            total: 1 << 32,
            max: 1 << 31,
        },
    );
    // (b) 65,536 inline entries of 64 bytes through a batch, and through post_send.
    let small = big.sge(..64).unwrap();
    let many = vec![small; 65_536];
    let too_many = WrError::TooManySge {
        requested: 65_536,
        max: max_sge,
    };
    let err =
        p.a.batch(|batch| batch.push(&SendRequest::write(3, &many, dst.remote()).inline()))
            .unwrap_err();
    assert!(
        matches!(err, Error::Request { index: 0, reason } if reason == too_many),
        "{err}"
    );
    assert_refused(
        p.a.post_send(&mut [SendRequest::send(4, &many)]),
        0,
        too_many,
    );
    // (c) One entry just over max_inline_data, on both paths.
    let over = big.sge(..max_inline as usize + 1).unwrap();
    let over = [over];
    let too_large = WrError::InlineTooLarge {
        total: u64::from(max_inline) + 1,
        max: max_inline,
    };
    assert_refused(
        p.a.post_send(&mut [SendRequest::send(5, &over).inline()]),
        0,
        too_large,
    );
    let err =
        p.a.batch(|batch| batch.push(&SendRequest::send(6, &over).inline()))
            .unwrap_err();
    assert!(
        matches!(err, Error::Request { index: 0, reason } if reason == too_large),
        "{err}"
    );
    // Reads and atomics carry no inline data.
    let one = [big.sge(..8).unwrap()];
    assert_refused(
        p.a.post_send(&mut [SendRequest::read(7, &one, dst.remote()).inline()]),
        0,
        WrError::InlineNotSupported {
            opcode: WrOpcode::RdmaRead,
        },
    );
    // Receives: the entry count and the 2^31 total.
    let rsges = vec![whole; 17];
    assert_refused(
        p.b.post_recv(&mut [RecvRequest::new(8, &rsges)]),
        0,
        WrError::TooManySge {
            requested: 17,
            max: p.b.max_recv_sge(),
        },
    );
    let srq = pd.create_srq(4, 17).unwrap();
    assert!(srq.max_sge() >= 17);
    assert_refused(
        srq.post_recv(&mut [RecvRequest::new(9, &rsges)]),
        0,
        WrError::MessageTooLong {
            total: 17 << 27,
            max: 1 << 31,
        },
    );
    // A QP that takes its receives from the SRQ has no receive queue to post to.
    let on_srq = pd
        .create_qp(QpType::Rc, &p.b_cq, &p.b_cq)
        .srq(&srq)
        .build()
        .unwrap();
    assert_refused(
        on_srq.post_recv(&mut [RecvRequest::new(10, &rsges[..1])]),
        0,
        WrError::ReceivesFromSrq,
    );
    drop(on_srq);
    // A list with one bad request is refused whole: the good one before it is not posted.
    let ok = [dst.sge(..8).unwrap()];
    let mut list = [
        SendRequest::write(10, &ok, dst.remote()).signaled(),
        SendRequest::send(11, &over).inline().signaled(),
    ];
    assert_refused(p.a.post_send(&mut list), 1, too_large);
    assert_empty(&p.a_cq);
    // And the QP still works.
    p.a.post_send(&mut list[..1]).unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 10);
    drop((p, srq, big, dst));
    assert_clean_drops();
}

/// Receives of every entry count on queues of several `max_recv_sge`: alone (a QP posts
/// one receive through its post function for the count's class) and second in a list, each
/// is posted exactly when it fits, else refused with its count.
#[test]
fn receives_of_every_entry_count_are_posted_or_refused() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let buf = pd.alloc_mr(64, ALL).unwrap();
    let sges = vec![buf.sge(..).unwrap(); 18];
    for max_sge in [1, 3, 16] {
        let qp = pd
            .create_qp(QpType::Ud, &cq, &cq)
            .max_recv_sge(max_sge)
            .max_recv_wr(64)
            .build()
            .unwrap()
            .ready()
            .unwrap();
        let max = qp.max_recv_sge();
        assert!(max >= max_sge);
        for n in 0..sges.len() as u32 {
            let list = &sges[..n as usize];
            let mut one = [RecvRequest::new(n.into(), list)];
            let mut two = [RecvRequest::new(0, &sges[..1]), RecvRequest::new(1, list)];
            if n <= max {
                qp.post_recv(&mut one).unwrap();
                qp.post_recv(&mut two).unwrap();
            } else {
                let reason = WrError::TooManySge { requested: n, max };
                assert_refused(qp.post_recv(&mut one), 0, reason);
                assert_refused(qp.post_recv(&mut two), 1, reason);
            }
        }
    }
    drop((cq, buf, pd, ctx));
    assert_clean_drops();
}

/// A batch that is never ended would leave rxe's send queue lock held. The batch lives in a
/// closure (forgetting it does not compile: `tests/compile_fail/batch_*.rs`); every way out
/// of the closure ends it, so the QP posts normally afterwards.
#[test]
fn a_batch_always_ends_even_when_its_closure_fails_or_panics() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut p = Pair::new(&pd, QpType::Rc, 1, 0);
    let src = pd.alloc_mr(64, ALL).unwrap();
    let dst = pd.alloc_mr(64, ALL).unwrap();
    let sge = [src.sge(..8).unwrap()];
    let write = |id| SendRequest::write(id, &sge, dst.remote()).signaled();

    let panicked = catch_unwind(AssertUnwindSafe(|| {
        p.a.batch(|batch| {
            batch.push(&write(1))?;
            panic!("in the middle of a batch");
            #[allow(unreachable_code)]
            Ok(())
        })
    }));
    assert!(panicked.is_err());
    let failed = p.a.batch(|batch| {
        batch.push(&write(2))?;
        Err::<(), _>(Error::InvalidArgument {
            what: "test",
            reason: "abort the batch".into(),
        })
    });
    assert!(matches!(
        failed,
        Err(Error::InvalidArgument { what: "test", .. })
    ));
    assert_empty(&p.a_cq);
    // Neither left the send queue locked: both paths post, and only these complete.
    p.a.post_send(&mut [write(3)]).unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 3);
    let n =
        p.a.batch(|batch| {
            batch.push(&write(4))?;
            batch.push(&write(5))?;
            Ok(batch.len())
        })
        .unwrap();
    assert_eq!(n, 2);
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 4);
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().wr_id(), 5);
    assert_empty(&p.a_cq);
    drop((p, src, dst));
    assert_clean_drops();
}

/// A raw `modify` could move an RTS-typed QP to RESET, so raw modification is `unsafe`
/// (the crate docs pin it); the safe transitions keep the state and the type in
/// agreement.
#[test]
fn the_state_agrees_with_the_type() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let p = Pair::new(&pd, QpType::Rc, 1, 0);
    assert_eq!(p.a.query().unwrap().state, QpState::Rts);
    assert_eq!(p.b.query().unwrap().state, QpState::Rts);
    p.a.to_error().unwrap();
    assert_eq!(p.a.query().unwrap().state, QpState::Error);
    drop(p);
    assert_clean_drops();
}

// The property test (the model of the rules: `soundness/model.rs`).

/// `cases` cases unless `PROPTEST_CASES` says otherwise; no failure files.
fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Everything the property posts with: a pair per transport (rebuilt after an error), and
/// the memory: a source region (with a huge one for refused inline entries), the peer's
/// target, and its receive buffers.
struct Bench {
    pd: ProtectionDomain,
    pairs: Vec<(QpType, Pair, usize)>,
    src: MemoryRegion,
    huge: MemoryRegion,
    dst: MemoryRegion,
    recv: MemoryRegion,
}

const MAX_SGE: u32 = 4;
const MAX_INLINE: u32 = 64;

impl Bench {
    fn new() -> Bench {
        let pd = open().alloc_pd().unwrap();
        let pairs = [QpType::Rc, QpType::Uc, QpType::Ud]
            .into_iter()
            .map(|t| (t, Pair::new(&pd, t, MAX_SGE, MAX_INLINE), 0))
            .collect();
        Bench {
            src: pd.alloc_mr(1 << 20, ALL).unwrap(),
            huge: pd.alloc_mr(HUGE as usize, ALL).unwrap(),
            dst: pd.alloc_mr(1 << 20, ALL).unwrap(),
            recv: pd.alloc_mr(4 * 65_536, ALL).unwrap(),
            pairs,
            pd,
        }
    }

    /// Posts `spec` and checks the outcome; rebuilds the pair if its QPs failed.
    fn run(&mut self, spec: &Spec) -> Result<(), TestCaseError> {
        let slot = self
            .pairs
            .iter()
            .position(|(t, ..)| *t == spec.qp_type)
            .unwrap();
        let (_, p, posted_recvs) = &mut self.pairs[slot];
        // Keep receives posted at the peer, so that no send waits for one (RNR).
        drain_receives(p, posted_recvs);
        while *posted_recvs < 4 {
            let rsge = [self
                .recv
                .sge(*posted_recvs * 65_536..(*posted_recvs + 1) * 65_536)
                .unwrap()];
            p.b.post_recv(&mut [RecvRequest::new(0, &rsge)]).unwrap();
            *posted_recvs += 1;
        }
        let granted = Granted {
            max_sge: p.a.max_send_sge(),
            max_inline: p.a.max_inline_data(),
            depth: p.a.max_send_wr(),
        };

        let mut offset = 0;
        let sges: Vec<Sge<'_>> = spec
            .lengths
            .iter()
            .map(|&len| {
                let len = len as usize;
                if len == HUGE as usize {
                    return self.huge.sge(..).unwrap();
                }
                let sge = self.src.sge(offset..offset + len).unwrap();
                offset += len;
                sge
            })
            .collect();
        let total: u64 = spec.lengths.iter().map(|&l| u64::from(l)).sum();
        let span = total.max(8).min(self.dst.len() as u64);
        let room = self.dst.len() as u64 - span;
        let remote = self
            .dst
            .remote()
            .slice(spec.remote_offset.min(room), span)
            .unwrap();
        let want = expected(spec, &granted, remote.addr);
        // A batch pushes the request once, or once more than the send queue holds.
        let pushes = if spec.overfill { granted.depth + 1 } else { 1 };
        let mut wr = match spec.opcode {
            WrOpcode::Send => SendRequest::send(1, &sges),
            WrOpcode::SendWithImm => SendRequest::send_with_imm(1, &sges, 7),
            WrOpcode::RdmaWrite => SendRequest::write(1, &sges, remote),
            WrOpcode::RdmaWriteWithImm => SendRequest::write_with_imm(1, &sges, remote, 7),
            WrOpcode::RdmaRead => SendRequest::read(1, &sges, remote),
            WrOpcode::CompareSwap => SendRequest::compare_swap(1, &sges[0], remote, 0, 1),
            _ => SendRequest::fetch_add(1, &sges[0], remote, 1),
        }
        .signaled();
        if spec.inline {
            wr = wr.inline();
        }
        if spec.addressed {
            if let Some(ah) = &p.ah {
                wr = wr.ud(ah, p.b.qp_num(), DEFAULT_QKEY);
            }
        }
        let got = match spec.way {
            Way::PostSend => p.a.post_send(&mut [wr]).map_err(Error::from),
            Way::Push => {
                p.a.batch(|batch| (0..pushes).try_for_each(|_| batch.push(&wr)))
            }
            Way::Builder => p.a.batch(|batch| {
                (0..pushes).try_for_each(|_| {
                    let wr = match spec.opcode {
                        WrOpcode::Send => batch.send(1, &sges),
                        WrOpcode::SendWithImm => batch.send_with_imm(1, &sges, 7),
                        WrOpcode::RdmaWrite => batch.write(1, &sges, remote),
                        WrOpcode::RdmaWriteWithImm => batch.write_with_imm(1, &sges, remote, 7),
                        WrOpcode::RdmaRead => batch.read(1, &sges, remote),
                        WrOpcode::CompareSwap => batch.compare_swap(1, &sges[0], remote, 0, 1),
                        _ => batch.fetch_add(1, &sges[0], remote, 1),
                    }
                    .signaled();
                    let wr = if spec.inline { wr.inline() } else { wr };
                    match (&p.ah, spec.addressed) {
                        (Some(ah), true) => wr.ud(ah, p.b.qp_num(), DEFAULT_QKEY).push(),
                        _ => wr.push(),
                    }
                })
            }),
        };

        let mut hung = None;
        let broken = match (got, want) {
            (Err(Error::Request { index, reason }), Err(want)) => {
                prop_assert_eq!((index, reason), want);
                false
            }
            (got, Err((index, want))) => {
                return Err(TestCaseError::fail(format!(
                    "expected request {index} refused ({want}), got {got:?}"
                )))
            }
            // The provider may still refuse what the rules allow, with a typed error.
            (Err(Error::Post { .. } | Error::Verb { .. }), Ok(())) => true,
            (Err(other), Ok(())) => {
                return Err(TestCaseError::fail(format!("unexpected error {other:?}")))
            }
            (Ok(()), Ok(())) => match poll_within(&p.a_cq, Duration::from_secs(10)) {
                Some(wc) => !wc.is_success(),
                None => {
                    // Said with the QPs' states, after the pair is rebuilt below: a pair
                    // left stuck would fail every case after it, shrinking included, and
                    // hide this one.
                    let states = (p.a.query().map(|a| a.state), p.b.query().map(|b| b.state));
                    hung = Some(format!(
                        "no completion within 10 s (QP states {states:?}, {} receives \
                         posted at the peer)",
                        *posted_recvs
                    ));
                    true
                }
            },
        };
        if broken || p.a.query().unwrap().state != QpState::Rts {
            self.pairs[slot] = (
                spec.qp_type,
                Pair::new(&self.pd, spec.qp_type, MAX_SGE, MAX_INLINE),
                0,
            );
        }
        match hung {
            Some(why) => Err(TestCaseError::fail(why)),
            None => Ok(()),
        }
    }
}

/// Counts the receives the peer completed since the last call.
fn drain_receives(p: &Pair, posted: &mut usize) {
    let mut wc = [WorkCompletion::default(); 8];
    while let Ok(done) = p.b_cq.poll(&mut wc) {
        if done.is_empty() {
            break;
        }
        *posted -= done.len();
    }
}

#[test]
fn random_requests_are_posted_or_refused_with_the_reason() {
    let bench = std::cell::RefCell::new(Bench::new());
    let start = Instant::now();
    proptest!(config(2500), |(spec in spec())| {
        bench.borrow_mut().run(&spec)?;
    });
    eprintln!("random requests: done in {:?}", start.elapsed());
    drop(bench);
    assert_clean_drops();
}
