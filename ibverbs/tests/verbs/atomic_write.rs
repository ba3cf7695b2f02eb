//! Atomic write (`ibv_wr_atomic_write`, rxe from Linux 6.2): 8 bytes written at once through
//! the extended send API, and the checks every atomic write passes before it reaches the
//! provider. The tests that post one ask `rdma_verbs_test_kit::feature` first: skipped by name
//! on a kernel without it, failed where `WITH_RDMA_EXPECT` says it should be there.

use rdma_verbs_test_kit::{assert_clean_drops, feature, open, Feature};
use rdma_verbs_test_kit::{provider, provider_has, Need, Provider};

use rdma_verbs::{
    DeviceCapFlags, Error, QpType, SendOps, SendRequest, WcOpcode, WcStatus, WrError, WrOpcode,
};

use crate::common::{contents, poll_one, refusal, Pair};

/// An RC pair whose QPs post atomic writes (and RDMA writes) in a batch.
fn atomic_write_pair() -> Pair {
    Pair::with(
        QpType::Rc,
        |b| b.send_ops(SendOps::ATOMIC_WRITE | SendOps::RDMA_WRITE),
        |_| {},
    )
}

#[test]
fn atomic_write_lands_8_bytes() {
    if !feature(&open(), Feature::AtomicWrite) {
        return;
    }
    let mut p = atomic_write_pair();
    let remote = p.mr(64);
    let target = remote.remote().slice(16, 8).unwrap();
    let value = 0x0123_4567_89ab_cdef_u64.to_ne_bytes();
    p.a.batch(|b| b.push(&SendRequest::atomic_write(7, target, value).signaled()))
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(
        (wc.wr_id(), wc.status(), wc.opcode()),
        (7, WcStatus::SUCCESS, WcOpcode::AtomicWrite)
    );
    let mut want = vec![0; 64];
    want[16..24].copy_from_slice(&value);
    assert_eq!(contents(&remote), want);
    drop(remote);
    drop(p);
    assert_clean_drops();
}

#[test]
fn atomic_write_is_checked_before_the_provider() {
    if !feature(&open(), Feature::AtomicWrite) {
        return;
    }
    let mut p = atomic_write_pair();
    let remote = p.mr(64);
    let value = [1; 8];
    // Not 8-byte aligned.
    let odd = remote.remote().slice(4, 8).unwrap();
    let got =
        p.a.batch(|b| b.push(&SendRequest::atomic_write(1, odd, value)));
    assert_eq!(
        refusal(got),
        WrError::Misaligned {
            opcode: WrOpcode::AtomicWrite,
            addr: odd.addr
        }
    );
    // Only through a batch: ibv_post_send never sees it.
    let aligned = remote.remote().slice(8, 8).unwrap();
    let got =
        p.a.post_send(&mut [SendRequest::atomic_write(2, aligned, value)]);
    match got.map_err(Error::from) {
        Err(Error::Request { reason, .. }) => assert_eq!(
            reason,
            WrError::BatchOnly {
                opcode: WrOpcode::AtomicWrite
            }
        ),
        other => panic!("{other:?}"),
    }
    // Nothing was written or completed by the refused requests.
    assert_eq!(contents(&remote), vec![0; 64]);
    rdma_verbs_test_kit::assert_empty(&p.a_cq, "after refused atomic writes");
    drop(remote);
    drop(p);
    assert_clean_drops();
}

#[test]
fn atomic_write_needs_its_send_op_and_an_rc_qp() {
    if !provider_has(Need::Uc) {
        return;
    }
    // A batch created without ATOMIC_WRITE.
    let mut p = Pair::with(QpType::Rc, |b| b.send_ops(SendOps::RDMA_WRITE), |_| {});
    let remote = p.mr(64).remote().slice(0, 8).unwrap();
    let got =
        p.a.batch(|b| b.push(&SendRequest::atomic_write(1, remote, [0; 8])));
    assert_eq!(
        refusal(got),
        WrError::OpcodeNotEnabled {
            opcode: WrOpcode::AtomicWrite
        }
    );
    drop(p);
    // UC and UD have no atomic write, whatever the batch enables.
    for qp_type in [QpType::Uc, QpType::Ud] {
        let mut p = Pair::with(qp_type, |b| b.send_ops(SendOps::SEND), |_| {});
        let got =
            p.a.batch(|b| b.push(&SendRequest::atomic_write(1, remote, [0; 8])));
        assert_eq!(
            refusal(got),
            WrError::OpcodeNotSupported {
                opcode: WrOpcode::AtomicWrite,
                qp_type
            }
        );
    }
    assert_clean_drops();
}

#[test]
fn atomic_write_send_op_needs_the_device_cap() {
    let ctx = open();
    let has = ctx
        .query_device()
        .unwrap()
        .device_cap_flags
        .contains(DeviceCapFlags::ATOMIC_WRITE);
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(4, None).unwrap();
    let got = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .send_ops(SendOps::ATOMIC_WRITE)
        .build();
    match (has, got) {
        (true, Ok(_)) => {}
        (false, Err(Error::Unsupported { missing, .. })) => {
            assert!(missing.contains("ATOMIC_WRITE"), "{missing}")
        }
        // iWARP has no atomics at all, which the crate checks first.
        (false, Err(Error::Iwarp(rdma_verbs::IwarpRule::NoAtomics))) => {
            assert_eq!(provider(), Provider::Siw)
        }
        (has, other) => panic!("device has atomic write: {has}; build gave {other:?}"),
    }
    drop(pd);
    assert_clean_drops();
}
