//! Extended CQs (`ibv_create_cq_ex`): real completions read through every `ibv_wc_read_*`
//! accessor in poll sessions, error completions, several completions per session, sessions
//! ended on every way out, the CQ used as a plain CQ (QPs, channel, `ibv_poll_cq`), and the
//! bad inputs (sizes, fields the device lacks, timestamps and the device clock).

use rdma_verbs_test_kit::{provider_has, Need};
use std::time::Duration;

use rdma_verbs_test_kit::{assert_clean_drops, open, Link};

use rdma_verbs::{
    AsRaw, Context, Error, ExtendedCq, MemoryRegion, ProtectionDomain, QpType, QueuePair,
    RecvRequest, SendRequest, WcFields, WcOpcode, WcStatus, WorkCompletion,
};

use crate::common::{connect, contents, rc_pair_on, ALL};

/// What a test reads of one completion, through every accessor of the standard fields.
#[derive(Debug, PartialEq)]
struct Seen {
    wr_id: u64,
    status: WcStatus,
    opcode: WcOpcode,
    byte_len: Option<u32>,
    imm: Option<u32>,
    qp_num: Option<u32>,
    src_qp: Option<u32>,
    grh: bool,
}

/// Two QPs of `qp_type` on extended CQs with `fields`, connected to each other.
struct ExPair {
    _ctx: Context,
    pd: ProtectionDomain,
    a: QueuePair,
    a_cq: ExtendedCq,
    b: QueuePair,
    b_cq: ExtendedCq,
    _link: Link,
}

impl ExPair {
    fn new(qp_type: QpType, fields: WcFields) -> ExPair {
        let ctx = open();
        let pd = ctx.alloc_pd().unwrap();
        let a_cq = ctx.create_cq_ex(64, fields, None).unwrap();
        let b_cq = ctx.create_cq_ex(64, fields, None).unwrap();
        // The extended CQs are CQs: QPs are created with them as with any CQ.
        let a = pd.create_qp(qp_type, &a_cq, &a_cq).access(ALL).build();
        let b = pd.create_qp(qp_type, &b_cq, &b_cq).access(ALL).build();
        let (a, b, link) = connect(qp_type, a.unwrap(), b.unwrap());
        ExPair {
            _ctx: ctx,
            pd,
            a,
            a_cq,
            b,
            b_cq,
            _link: link,
        }
    }

    fn mr(&self, len: usize) -> MemoryRegion {
        self.pd.alloc_mr(len, ALL).unwrap()
    }
}

/// Reads `n` completions of `cq` (within 10 s) through poll sessions.
fn take(cq: &mut ExtendedCq, n: usize) -> Vec<Seen> {
    let mut seen = Vec::new();
    let got = cq
        .poll_each_until(n, Some(Duration::from_secs(10)), |wc| {
            seen.push(Seen {
                wr_id: wc.wr_id(),
                status: wc.status(),
                opcode: wc.opcode(),
                byte_len: wc.byte_len(),
                imm: wc.imm_data(),
                qp_num: wc.qp_num(),
                src_qp: wc.src_qp(),
                grh: wc.has_grh(),
            });
            Ok(())
        })
        .unwrap();
    assert_eq!(got, n, "completions within 10 s: {seen:?}");
    seen
}

#[test]
fn rc_sends_and_writes_read_through_every_accessor() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let mut p = ExPair::new(QpType::Rc, WcFields::STANDARD);
    let mut src = p.mr(64);
    src.fill(0x3c);
    let dst = p.mr(64);
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(10, &rsge), RecvRequest::new(11, &rsge)])
        .unwrap();
    let sge16 = [src.sge(0..16).unwrap()];
    let sge8 = [src.sge(0..8).unwrap()];
    p.a.post_send(&mut [
        SendRequest::send_with_imm(1, &sge16, 0x1234_5678).signaled(),
        SendRequest::write(2, &sge8, dst.remote()).signaled(),
        SendRequest::write_with_imm(3, &sge8, dst.remote(), 0xabcd).signaled(),
    ])
    .unwrap();
    // Three completions of the sender, read in sessions of several completions each.
    let (aq, bq) = (Some(p.a.qp_num()), Some(p.b.qp_num()));
    let sent = take(&mut p.a_cq, 3);
    // rxe flags the sender's completion of a request with immediate data IBV_WC_WITH_IMM,
    // with 0 as the data: the accessor says what the provider wrote.
    for (i, seen) in sent.iter().enumerate() {
        assert!(matches!(seen.imm, None | Some(0)), "{i}: {seen:?}");
    }
    assert_eq!(sent[1].imm, None);
    let expect = |wr_id: u64, opcode, byte_len| Seen {
        wr_id,
        status: WcStatus::SUCCESS,
        opcode,
        byte_len,
        imm: sent[wr_id as usize - 1].imm,
        qp_num: aq,
        src_qp: sent[0].src_qp,
        grh: false,
    };
    assert_eq!(
        sent,
        [
            expect(1, WcOpcode::Send, Some(16)),
            expect(2, WcOpcode::RdmaWrite, Some(8)),
            expect(3, WcOpcode::RdmaWrite, Some(8)),
        ]
    );
    let got = take(&mut p.b_cq, 2);
    let recv = |wr_id, opcode, byte_len, imm| Seen {
        wr_id,
        status: WcStatus::SUCCESS,
        opcode,
        byte_len: Some(byte_len),
        imm: Some(imm),
        qp_num: bq,
        src_qp: got[0].src_qp,
        // rxe flags every RoCE receive IBV_WC_GRH, RC ones included.
        grh: true,
    };
    assert_eq!(
        got,
        [
            recv(10, WcOpcode::Recv, 16, 0x1234_5678),
            recv(11, WcOpcode::RecvRdmaWithImm, 8, 0xabcd),
        ]
    );
    assert_eq!(&contents(&dst)[..8], &[0x3c; 8]);
    drop(p);
    assert_clean_drops();
}

#[test]
fn ud_receive_reads_source_qp_grh_and_the_addressing_fields() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let mut p = ExPair::new(QpType::Ud, WcFields::STANDARD);
    let mut src = p.mr(100);
    src.fill(0x5a);
    let dst = p.mr(40 + 100);
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(7, &rsge)]).unwrap();
    let remote = p.b.endpoint();
    let ah = p.pd.create_ah(&remote).gid_index(1).build().unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send_with_imm(5, &sge, 77)
        .ud(&ah, remote.qpn, rdma_verbs::DEFAULT_QKEY)
        .signaled()])
        .unwrap();
    assert_eq!(take(&mut p.a_cq, 1)[0].status, WcStatus::SUCCESS);
    // Every accessor of the standard set, on the receive.
    let mut fields = Vec::new();
    let n = p
        .b_cq
        .poll_each_until(1, Some(Duration::from_secs(10)), |wc| {
            wc.ok()?;
            fields.push((
                wc.wr_id(),
                wc.opcode(),
                wc.byte_len(),
                wc.imm_data(),
                wc.qp_num(),
                wc.src_qp(),
                wc.has_grh(),
                wc.vendor_err(),
            ));
            // RoCE has no LIDs: the addressing fields are there, and 0.
            assert_eq!(
                (wc.slid(), wc.sl(), wc.dlid_path_bits()),
                (Some(0), Some(0), Some(0))
            );
            // Fields the CQ was not created with read as None.
            assert_eq!(
                (wc.completion_ts(), wc.cvlan(), wc.flow_tag()),
                (None, None, None)
            );
            Ok(())
        })
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        fields,
        [(
            7,
            WcOpcode::Recv,
            Some(140),
            Some(77),
            Some(p.b.qp_num()),
            Some(p.a.qp_num()),
            true,
            0
        )]
    );
    assert_eq!(&contents(&dst)[40..], &[0x5a; 100]);
    drop(ah);
    drop(p);
    assert_clean_drops();
}

#[test]
fn error_completions_carry_status_and_vendor_error() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let mut p = ExPair::new(QpType::Rc, WcFields::BYTE_LEN);
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
    let mut seen = Vec::new();
    p.a_cq
        .poll_each_until(2, Some(Duration::from_secs(10)), |wc| {
            let err = wc.ok().unwrap_err();
            assert!(matches!(err, Error::Completion { wr_id, status, .. }
                if wr_id == wc.wr_id() && status == wc.status()));
            assert!(!wc.is_success());
            let _ = wc.vendor_err();
            // Only the byte count was asked for.
            assert_eq!((wc.qp_num(), wc.imm_data()), (None, None));
            seen.push((wc.wr_id(), wc.status()));
            Ok(())
        })
        .unwrap();
    assert_eq!(
        seen,
        [(1, WcStatus::REM_ACCESS_ERR), (2, WcStatus::WR_FLUSH_ERR)]
    );
    drop(p);
    assert_clean_drops();
}

/// Posts four signaled writes on `p.a` and waits until `p.a_cq` has them all, without
/// taking any: an unsignaled write-with-immediate after them is received by `p.b` first.
fn four_writes_ready(p: &mut ExPair, src: &MemoryRegion, dst: &MemoryRegion) {
    let sge = [src.sge(0..8).unwrap()];
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(0, &rsge)]).unwrap();
    let mut wrs: Vec<_> = (1..=4)
        .map(|i| SendRequest::write(i, &sge, dst.remote()).signaled())
        .collect();
    wrs.push(SendRequest::write_with_imm(5, &sge, dst.remote(), 0));
    p.a.post_send(&mut wrs).unwrap();
    take(&mut p.b_cq, 1);
    // The receive came after the writes; give their acknowledgements a moment.
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn a_session_is_ended_on_return_error_and_panic() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let mut p = ExPair::new(QpType::Rc, WcFields::STANDARD);
    let (src, dst) = (p.mr(64), p.mr(64));
    four_writes_ready(&mut p, &src, &dst);

    // An error out of the closure ends the session; the two completions read are consumed.
    let err = p.a_cq.poll_session(|s| {
        assert_eq!(s.next_wc()?.map(|wc| wc.wr_id()), Some(1));
        assert_eq!(s.next_wc()?.map(|wc| wc.wr_id()), Some(2));
        Err::<(), _>(Error::Timeout(Duration::ZERO, "a test"))
    });
    assert!(matches!(err, Err(Error::Timeout(..))), "{err:?}");

    // A panic in the closure ends the session too (else the next poll would hang on the
    // provider's lock).
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        p.a_cq.poll_session(|s| -> rdma_verbs::Result<()> {
            assert_eq!(s.next_wc()?.map(|wc| wc.wr_id()), Some(3));
            panic!("in a poll session");
        })
    }));
    assert!(panicked.is_err());

    // A plain ibv_poll_cq on the same CQ takes the last one.
    let mut wc = [WorkCompletion::default(); 4];
    let done = p
        .a_cq
        .poll_until(&mut wc, 1, Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(done.iter().map(|w| w.wr_id()).collect::<Vec<_>>(), [4]);

    // An empty CQ: start_poll finds nothing, nothing to end, and the session stays empty.
    let empty = p.a_cq.poll_session(|s| {
        assert!(s.next_wc()?.is_none());
        assert!(s.next_wc()?.is_none());
        Ok(7)
    });
    assert_eq!(empty.unwrap(), 7);
    // A session that never asks polls nothing.
    p.a_cq.poll_session(|_| Ok(())).unwrap();
    drop(p);
    assert_clean_drops();
}

#[test]
fn sessions_that_run_dry_leave_no_stale_completions() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    // rdma-core's rxe corrupts the CQ on ibv_next_poll's ENOENT followed by ibv_end_poll
    // (stale entries come back as completions); the sessions step around it.
    let mut p = ExPair::new(QpType::Rc, WcFields::STANDARD);
    let (src, dst) = (p.mr(64), p.mr(64));
    for round in 0..3 {
        four_writes_ready(&mut p, &src, &dst);
        let ids = p.a_cq.poll_session(|s| {
            let mut ids = Vec::new();
            while let Some(wc) = s.next_wc()? {
                ids.push(wc.wr_id());
            }
            Ok(ids)
        });
        assert_eq!(ids.unwrap(), [1, 2, 3, 4], "round {round}");
        let empty = p.a_cq.poll_session(|s| Ok(s.next_wc()?.is_none()));
        assert!(empty.unwrap(), "round {round}: a completion after the last");
        let mut wc = [WorkCompletion::default(); 4];
        assert_eq!(p.a_cq.poll(&mut wc).unwrap().len(), 0, "round {round}");
    }
    drop(p);
    assert_clean_drops();
}

#[test]
fn an_extended_cq_takes_a_channel_and_wakes_poll_wait() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let channel = ctx.create_comp_channel().unwrap();
    let cq = ctx
        .create_cq_ex(16, WcFields::BYTE_LEN | WcFields::QP_NUM, Some(&channel))
        .unwrap();
    assert!(cq.capacity() >= 16);
    assert_eq!(cq.fields(), WcFields::BYTE_LEN | WcFields::QP_NUM);
    assert_eq!(cq.cq().as_raw().as_ptr(), cq.as_raw().as_ptr().cast());
    let (a, _b, _link) = rc_pair_on(&pd, &cq);
    let buf = pd.alloc_mr(64, ALL).unwrap();
    let sge = [buf.sge(0..4).unwrap()];
    a.post_send(&mut [SendRequest::write(9, &sge, buf.remote()).signaled()])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 2];
    let done = cq
        .poll_wait(&mut wc, Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(
        done.iter()
            .map(|w| (w.wr_id(), w.byte_len()))
            .collect::<Vec<_>>(),
        [(9, 4)]
    );
    drop((a, cq, channel));
    assert_clean_drops();
}

#[test]
fn bad_extended_cqs_are_typed_errors() {
    let ctx = open();
    let attr = ctx.query_device().unwrap();
    let max_cqe = attr.max_cqe;
    let err = ctx
        .create_cq_ex(max_cqe + 1, WcFields::STANDARD, None)
        .unwrap_err();
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
    // Fields outside the standard set: rxe has none of them, and its provider refuses each
    // (EOPNOTSUPP), named in the error; a device with one gives a CQ that reads it.
    for (field, name) in [
        (WcFields::CVLAN, "IBV_WC_EX_WITH_CVLAN"),
        (WcFields::FLOW_TAG, "IBV_WC_EX_WITH_FLOW_TAG"),
    ] {
        match ctx.create_cq_ex(16, WcFields::STANDARD | field, None) {
            Ok(cq) => assert!(cq.fields().contains(field)),
            Err(Error::Unsupported { missing, .. }) => {
                assert!(missing.contains(name), "{missing}")
            }
            Err(other) => panic!("{name}: {other:?}"),
        }
    }
    // Bits that name no field (tag matching's, which the crate has no reader for): named
    // before the call. Before, the provider's EOPNOTSUPP blamed extended CQs as a whole.
    let tm = WcFields::from_bits_retain(1 << 10);
    match ctx.create_cq_ex(16, WcFields::STANDARD | tm, None) {
        Err(Error::InvalidArgument { what, reason }) => {
            assert_eq!(what, "extended CQ fields (WcFields)");
            assert!(
                reason.contains("0x400") && reason.contains("TM_INFO"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn completion_timestamps_and_the_device_clock_where_the_device_has_them() {
    if !provider_has(Need::ExtendedCq) {
        return;
    }
    let ctx = open();
    let has_clock = ctx.query_device().unwrap().completion_timestamp_mask != 0;
    let ts = WcFields::BYTE_LEN | WcFields::COMPLETION_TIMESTAMP;
    match ctx.create_cq_ex(16, ts, None) {
        Ok(mut cq) => {
            assert!(has_clock);
            // The clock is readable, and a completion carries a timestamp.
            let _ = ctx.query_raw_clock();
            let pd = ctx.alloc_pd().unwrap();
            let qa = pd.create_qp(QpType::Rc, &cq, &cq).access(ALL).build();
            let qb = pd.create_qp(QpType::Rc, &cq, &cq).access(ALL).build();
            let (qa, _qb, _link) = connect(QpType::Rc, qa.unwrap(), qb.unwrap());
            let buf = pd.alloc_mr(64, ALL).unwrap();
            let sge = [buf.sge(0..4).unwrap()];
            qa.post_send(&mut [SendRequest::write(1, &sge, buf.remote()).signaled()])
                .unwrap();
            let mut stamps = Vec::new();
            cq.poll_each_until(1, Some(Duration::from_secs(10)), |wc| {
                stamps.push(wc.completion_ts());
                Ok(())
            })
            .unwrap();
            assert!(matches!(stamps[..], [Some(_)]), "{stamps:?}");
        }
        Err(Error::Unsupported { missing, .. }) => {
            // Refused before the call, by the device's attributes.
            assert!(!has_clock);
            assert_eq!(missing, "completion_timestamp_mask in ibv_device_attr_ex");
            let wall = WcFields::COMPLETION_TIMESTAMP_WALLCLOCK;
            let err = ctx.create_cq_ex(16, wall, None).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
        }
        Err(other) => panic!("{other:?}"),
    }
    // The device clock: read where the provider has it, a typed error where not.
    match ctx.query_raw_clock() {
        Ok(_) => {}
        Err(Error::Unsupported { missing, .. }) => {
            assert_eq!(missing, "query_rt_values in its provider")
        }
        Err(other) => panic!("{other:?}"),
    }
    drop(ctx);
    assert_clean_drops();
}
