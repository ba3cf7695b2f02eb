//! Many QPs under load, with every byte and every completion accounted for.

use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{assert_clean_drops, assert_empty, mix, open, pattern};

use rdma_verbs::{
    AccessFlags, ConnectOptions, Endpoint, MemoryRegion, Mtu, QpState, QpType, QueuePair,
    RecvRequest, SendRequest, Sge, WcOpcode, WcStatus, WorkCompletion,
};

use crate::{serial, REMOTE};

/// Asserts that `mr[offset..offset + len]` holds message `id`.
fn assert_holds(mr: &MemoryRegion, offset: usize, id: u64, len: usize, what: &str) {
    let mut got = vec![0; len];
    mr.read(offset, &mut got).unwrap();
    if got != pattern(id, len) {
        let want = pattern(id, len);
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
        panic!("{what}: message {id:#x} ({len} bytes) differs at byte {at}");
    }
}

/// QPs of the load test, connected in pairs (0-1, 2-3, ...).
const LOAD_QPS: usize = 64;
/// Send and receive queue depth asked for; the provider may give more, and the test fills
/// what it got.
const LOAD_DEPTH: u32 = 32;
/// Bytes per message slot; messages are 1..=LOAD_SLOT bytes long.
const LOAD_SLOT: usize = 4096;
/// Path MTU of the load test, so that a message is 1 to 4 packets.
const LOAD_MTU: Mtu = Mtu::Mtu1024;
/// Rounds of the load test unless `IBVERBS_RELIABILITY_ROUNDS` says otherwise.
const LOAD_ROUNDS: u32 = 12;
/// How long one round may take before the test declares it hung.
const ROUND_GUARD: Duration = Duration::from_secs(120);

/// What a message of the load test is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Send,
    SendImm,
    Write,
    WriteImm,
}

impl Op {
    /// The op of message `k` of QP `qp` in `round`: all four, in a pattern that shifts.
    fn of(qp: usize, round: u32, k: usize) -> Op {
        match (qp + round as usize + k) % 4 {
            0 => Op::Send,
            1 => Op::SendImm,
            2 => Op::Write,
            _ => Op::WriteImm,
        }
    }

    /// Whether the message consumes a receive at the peer.
    fn consumes_recv(self) -> bool {
        self != Op::Write
    }

    fn send_opcode(self) -> WcOpcode {
        match self {
            Op::Send | Op::SendImm => WcOpcode::Send,
            Op::Write | Op::WriteImm => WcOpcode::RdmaWrite,
        }
    }
}

/// A message of the load test: message `k` that QP `qp` sends in `round`.
#[derive(Clone, Copy, Debug)]
struct Msg {
    qp: usize,
    round: u32,
    k: usize,
}

impl Msg {
    /// The message's unique id, also the `wr_id` of its send and of the receive it consumes.
    fn id(self) -> u64 {
        ((self.qp as u64) << 40) | (u64::from(self.round) << 20) | self.k as u64
    }

    fn from_id(id: u64) -> Msg {
        Msg {
            qp: (id >> 40) as usize,
            round: ((id >> 20) & 0xf_ffff) as u32,
            k: (id & 0xf_ffff) as usize,
        }
    }

    fn op(self) -> Op {
        Op::of(self.qp, self.round, self.k)
    }

    fn len(self) -> usize {
        1 + (mix(self.id()) % LOAD_SLOT as u64) as usize
    }

    /// The immediate data of an `*Imm` op.
    fn imm(self) -> u32 {
        mix(self.id()) as u32
    }

    /// The QP that receives the message.
    fn peer(self) -> usize {
        self.qp ^ 1
    }

    /// Where the message lands in the peer's destination region.
    fn offset(self) -> usize {
        self.k * LOAD_SLOT
    }
}

/// Completions seen in one round, to catch duplicates and losses.
struct Seen {
    sends: Vec<Vec<bool>>,
    recvs: Vec<Vec<bool>>,
}

impl Seen {
    fn new(depth: usize) -> Seen {
        Seen {
            sends: vec![vec![false; depth]; LOAD_QPS],
            recvs: vec![vec![false; depth]; LOAD_QPS],
        }
    }
}

fn load_rounds() -> u32 {
    match std::env::var("IBVERBS_RELIABILITY_ROUNDS") {
        Ok(n) => n
            .parse()
            .unwrap_or_else(|_| panic!("IBVERBS_RELIABILITY_ROUNDS={n:?} is not a number")),
        Err(_) => LOAD_ROUNDS,
    }
}

#[test]
fn sixty_four_rc_qps_with_full_send_queues_lose_nothing() {
    let _serial = serial();
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    // Room for every QP's whole queue even if the provider doubles the depth asked for.
    let cq_entries = LOAD_QPS as u32 * LOAD_DEPTH * 2;
    let send_cq = ctx.create_cq(cq_entries, None).unwrap();
    let recv_cq = ctx.create_cq(cq_entries, None).unwrap();
    let prepared: Vec<_> = (0..LOAD_QPS)
        .map(|_| {
            pd.create_qp(QpType::Rc, &send_cq, &recv_cq)
                .access(REMOTE)
                .max_send_wr(LOAD_DEPTH)
                .max_recv_wr(LOAD_DEPTH)
                .build()
                .unwrap()
        })
        .collect();
    let endpoints: Vec<Endpoint> = prepared.iter().map(|p| p.endpoint()).collect();
    let opts = ConnectOptions::new().path_mtu(LOAD_MTU);
    let qps: Vec<QueuePair> = prepared
        .into_iter()
        .enumerate()
        .map(|(i, p)| p.connect(&endpoints[i ^ 1], &opts).unwrap())
        .collect();

    let depth = qps[0].max_send_wr() as usize;
    for qp in &qps {
        assert_eq!(qp.max_send_wr() as usize, depth, "QPs got different depths");
        assert!(qp.max_recv_wr() as usize >= depth, "receive queue shorter");
    }
    for cq in [&send_cq, &recv_cq] {
        assert!(
            cq.capacity() as usize >= LOAD_QPS * depth,
            "CQ of {} entries for {LOAD_QPS} queues of {depth}",
            cq.capacity()
        );
    }
    let mut src: Vec<MemoryRegion> = (0..LOAD_QPS)
        .map(|_| {
            pd.alloc_mr(depth * LOAD_SLOT, AccessFlags::LOCAL_WRITE)
                .unwrap()
        })
        .collect();
    let dst: Vec<MemoryRegion> = (0..LOAD_QPS)
        .map(|_| pd.alloc_mr(depth * LOAD_SLOT, REMOTE).unwrap())
        .collect();

    let rounds = load_rounds();
    let mut sends_done = vec![0u64; LOAD_QPS];
    let mut recvs_done = vec![0u64; LOAD_QPS];
    let mut recvs_posted = vec![0u64; LOAD_QPS];
    let mut bytes = 0u64;
    let mut wc = vec![WorkCompletion::default(); 256];
    let start = Instant::now();
    for round in 0..rounds {
        let msgs = |qp: usize| (0..depth).map(move |k| Msg { qp, round, k });
        for (qp, mr) in src.iter_mut().enumerate() {
            for m in msgs(qp) {
                mr.write(m.offset(), &pattern(m.id(), m.len())).unwrap();
            }
        }
        // Receives first, in message order: RC consumes them in order, so receive j takes
        // the j-th message that needs one, and a send lands in the slot of its own message.
        let mut round_recvs = 0;
        for (peer, qp) in qps.iter().enumerate() {
            let wanted: Vec<Msg> = msgs(peer ^ 1).filter(|m| m.op().consumes_recv()).collect();
            let sges: Vec<[Sge<'_>; 1]> = wanted
                .iter()
                .map(|m| [dst[peer].sge(m.offset()..m.offset() + LOAD_SLOT).unwrap()])
                .collect();
            let mut wrs: Vec<RecvRequest<'_>> = wanted
                .iter()
                .zip(&sges)
                .map(|(m, sge)| match m.op() {
                    Op::WriteImm => RecvRequest::new(m.id(), Sge::NONE),
                    _ => RecvRequest::new(m.id(), sge),
                })
                .collect();
            qp.post_recv(&mut wrs).unwrap();
            recvs_posted[peer] += wrs.len() as u64;
            round_recvs += wrs.len();
        }
        // Then every send queue, full.
        for (i, qp) in qps.iter().enumerate() {
            let all: Vec<Msg> = msgs(i).collect();
            let sges: Vec<[Sge<'_>; 1]> = all
                .iter()
                .map(|m| [src[i].sge(m.offset()..m.offset() + m.len()).unwrap()])
                .collect();
            let mut wrs: Vec<SendRequest<'_>> = all
                .iter()
                .zip(&sges)
                .map(|(m, sge)| {
                    let remote = dst[m.peer()].remote();
                    let to = remote.slice(m.offset() as u64, m.len() as u64).unwrap();
                    match m.op() {
                        Op::Send => SendRequest::send(m.id(), sge),
                        Op::SendImm => SendRequest::send_with_imm(m.id(), sge, m.imm()),
                        Op::Write => SendRequest::write(m.id(), sge, to),
                        Op::WriteImm => SendRequest::write_with_imm(m.id(), sge, to, m.imm()),
                    }
                    .signaled()
                })
                .collect();
            qp.post_send(&mut wrs).unwrap();
            bytes += all.iter().map(|m| m.len() as u64).sum::<u64>();
        }

        let mut seen = Seen::new(depth);
        let (mut sends, mut recvs) = (0, 0);
        let round_start = Instant::now();
        while sends < LOAD_QPS * depth || recvs < round_recvs {
            let mut idle = true;
            for done in send_cq.poll(&mut wc).unwrap().iter() {
                idle = false;
                let m = Msg::from_id(done.wr_id());
                assert_eq!(m.round, round, "send completion of another round: {done:?}");
                assert_eq!(done.status(), WcStatus::SUCCESS, "{m:?}: {done:?}");
                assert_eq!(done.qp_num(), qps[m.qp].qp_num(), "{m:?}: {done:?}");
                assert_eq!(done.opcode(), m.op().send_opcode(), "{m:?}: {done:?}");
                assert!(
                    !std::mem::replace(&mut seen.sends[m.qp][m.k], true),
                    "{m:?} completed twice"
                );
                if m.op() == Op::Write {
                    // The write's completion says that its data is in the peer's memory.
                    assert_holds(&dst[m.peer()], m.offset(), m.id(), m.len(), "RDMA write");
                }
                sends_done[m.qp] += 1;
                sends += 1;
            }
            for done in recv_cq.poll(&mut wc).unwrap().iter() {
                idle = false;
                let m = Msg::from_id(done.wr_id());
                assert_eq!(
                    m.round, round,
                    "receive completion of another round: {done:?}"
                );
                assert_eq!(done.status(), WcStatus::SUCCESS, "{m:?}: {done:?}");
                assert_eq!(done.qp_num(), qps[m.peer()].qp_num(), "{m:?}: {done:?}");
                assert_eq!(done.byte_len() as usize, m.len(), "{m:?}: {done:?}");
                let (opcode, imm) = match m.op() {
                    Op::Send => (WcOpcode::Recv, None),
                    Op::SendImm => (WcOpcode::Recv, Some(m.imm())),
                    Op::WriteImm => (WcOpcode::RecvRdmaWithImm, Some(m.imm())),
                    Op::Write => panic!("{m:?} consumed a receive: {done:?}"),
                };
                assert_eq!((done.opcode(), done.imm_data()), (opcode, imm), "{m:?}");
                assert!(
                    !std::mem::replace(&mut seen.recvs[m.peer()][m.k], true),
                    "receive of {m:?} completed twice"
                );
                assert_holds(&dst[m.peer()], m.offset(), m.id(), m.len(), "received data");
                recvs_done[m.peer()] += 1;
                recvs += 1;
            }
            if idle {
                assert!(
                    round_start.elapsed() < ROUND_GUARD,
                    "round {round} hung: {sends} of {} send and {recvs} of {round_recvs} \
                     receive completions",
                    LOAD_QPS * depth
                );
                std::thread::yield_now();
            }
        }
    }
    let elapsed = start.elapsed();

    let per_qp = u64::from(rounds) * depth as u64;
    for i in 0..LOAD_QPS {
        assert_eq!(sends_done[i], per_qp, "send completions of QP {i}");
        assert_eq!(
            recvs_done[i], recvs_posted[i],
            "receive completions of QP {i}"
        );
    }
    assert_empty(&send_cq, "send CQ after the last round");
    assert_empty(&recv_cq, "receive CQ after the last round");
    for qp in &qps {
        assert_eq!(qp.query().unwrap().state, QpState::Rts);
    }
    eprintln!(
        "load: {LOAD_QPS} RC QPs x {depth} WRs x {rounds} rounds = {} messages, {} MiB \
         verified in {elapsed:.2?}",
        LOAD_QPS as u64 * per_qp,
        bytes >> 20
    );
    drop((qps, src, dst, send_cq, recv_cq, pd, ctx));
    assert_clean_drops();
}
