//! The traffic of the tests: the data layout (records, the loss test's messages and where
//! they land), this host's verbs objects, and the streams of writes.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use rdma_verbs::{
    AccessFlags, CompletionQueue, Context, MemoryRegion, PreparedQueuePair, ProtectionDomain,
    QpType, QueuePair, RemoteMemory, SendRequest, WcStatus, WorkCompletion,
};
use rdma_verbs_test_kit::{mix, pattern, record};

use crate::link::{counters, gid_index, Fault, FaultKind, Injector, Link};
use crate::GUARD;

// ---------------------------------------------------------------- data

/// Bytes per message slot; messages are 1..=SLOT bytes.
pub const SLOT: usize = 4096;
/// Bytes of a record of the outage tests (one packet).
pub const RECORD: usize = 256;
/// Record slots in the peer's memory.
pub const RECORDS: usize = 64;
/// Send queue depth of this side.
pub const DEPTH: u32 = 16;
/// Receive slots of the peer in the loss test, and how many receives it keeps posted.
///
/// The r-th message that takes a receive lands in slot r % RING: a send into the buffer of
/// its receive, a write with immediate by its address (placing its data before it takes
/// the receive: only its last packet needs one). A slot is not overwritten before the peer
/// has checked it: message k is posted once message k - DEPTH has completed, so received,
/// which needs the receive of about r - DEPTH * 2 / 3, which the peer posts once it has
/// checked r - AHEAD - DEPTH * 2 / 3 > r - RING.
pub const RING: usize = 64;
pub const AHEAD: usize = 32;
/// Messages of the loss test; every third is a plain RDMA write.
pub const MESSAGES: u64 = 1500;
/// Bytes of the peer's memory: the receive ring, then a slot for every plain write.
pub const INBOX: usize = (RING + MESSAGES as usize / 3 + 1) * SLOT;

/// What message `k` of the loss test is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Send,
    WriteImm,
    Write,
}

impl Op {
    pub fn of(k: u64) -> Op {
        match k % 3 {
            0 => Op::Send,
            1 => Op::WriteImm,
            _ => Op::Write,
        }
    }
}

pub fn message_len(k: u64) -> usize {
    1 + (mix(k) % SLOT as u64) as usize
}

pub fn message(k: u64) -> Vec<u8> {
    pattern(k, message_len(k))
}

/// Of the messages that consume a receive at the peer (sends and writes with immediate),
/// the index of message `k`, and the message of index `r`.
pub fn recv_index(k: u64) -> u64 {
    k / 3 * 2 + k % 3
}

pub fn recv_message(r: u64) -> u64 {
    r / 2 * 3 + r % 2
}

/// Where in the peer's memory the receive `r` lands and the plain write `k` goes.
pub fn ring_offset(r: u64) -> usize {
    (r % RING as u64) as usize * SLOT
}

pub fn bulk_offset(k: u64) -> usize {
    (RING + (k / 3) as usize) * SLOT
}

// ---------------------------------------------------------------- verbs

/// This process's verbs objects on the link device.
pub struct Host {
    pub ctx: Context,
    pub pd: ProtectionDomain,
    pub gid_index: u8,
}

impl Host {
    pub fn open(device: &str, addr: Ipv4Addr) -> Host {
        let ctx = Context::open(device)
            .unwrap_or_else(|e| panic!("cannot open the link device {device}: {e}"));
        let gid_index = gid_index(&ctx, addr, Duration::ZERO);
        let pd = ctx.alloc_pd().unwrap();
        Host { ctx, pd, gid_index }
    }

    /// An RC QP on its own CQ and `mem_len` bytes of memory with `access`.
    pub fn prepare(
        &self,
        mem_len: usize,
        access: AccessFlags,
        recvs: u32,
    ) -> (PreparedQueuePair, CompletionQueue, MemoryRegion) {
        let cq = self.ctx.create_cq(DEPTH * 2 + recvs, None).unwrap();
        let qp = self
            .pd
            .create_qp(QpType::Rc, &cq, &cq)
            .gid_index(self.gid_index)
            .access(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)
            .max_send_wr(DEPTH)
            .max_recv_wr(recvs.max(1))
            .build()
            .unwrap();
        let mem = self.pd.alloc_mr(mem_len, access).unwrap();
        (qp, cq, mem)
    }
}

/// One side's connected QP, its CQ and its memory.
pub struct Side {
    pub qp: QueuePair,
    pub cq: CompletionQueue,
    pub mem: MemoryRegion,
}

/// Polls `cq` once, asserting that nothing fails to poll.
pub fn poll<'w>(cq: &CompletionQueue, wc: &'w mut [WorkCompletion]) -> &'w mut [WorkCompletion] {
    cq.poll(wc).expect("ibv_poll_cq")
}

// ---------------------------------------------------------------- streams

/// Posts record `seq` as a signaled RDMA write into the peer's slot for it.
pub fn post_record(side: &mut Side, seq: u64, peer_mem: RemoteMemory) {
    let at = (seq % u64::from(DEPTH)) as usize * RECORD;
    side.mem.write(at, &record(seq, RECORD)).unwrap();
    let sge = [side.mem.sge(at..at + RECORD).unwrap()];
    let to = peer_mem
        .slice((seq % RECORDS as u64) * RECORD as u64, RECORD as u64)
        .unwrap();
    side.qp
        .post_send(&mut [SendRequest::write(seq, &sge, to).signaled()])
        .unwrap();
}

/// What the stream of writes saw.
pub struct Outcome {
    pub posted: u64,
    pub last_ok: Option<u64>,
    /// The status of the first error, its write, and when it came after the fault was
    /// injected.
    pub first_error: (WcStatus, u64, Duration),
    pub flushed: u64,
    /// How long the fault took to be in place after it was injected.
    pub in_place: Duration,
}

/// Streams RDMA writes of records with the send queue full; injects `kind` once 4 queues'
/// worth have completed, without pausing; stops posting at the first error completion
/// and drains the queue. Asserts that the completions come in order, each once, and that
/// an error is followed by flushes only.
pub fn stream_into_fault(
    side: &mut Side,
    peer_mem: RemoteMemory,
    link: &Link,
    kind: FaultKind,
) -> (Outcome, Fault) {
    let device = &link.device;
    let depth = u64::from(DEPTH);
    let (mut posted, mut done, mut flushed) = (0u64, 0u64, 0u64);
    let mut last_ok = None;
    let mut injector = Some(Injector::start(&link.netdev, kind));
    let mut fired: Option<Instant> = None;
    let mut fault: Option<(Fault, Duration)> = None;
    let mut first_error: Option<(WcStatus, u64, Duration)> = None;
    let mut wc = [WorkCompletion::default(); 16];
    let start = Instant::now();
    while done < posted || first_error.is_none() || fault.is_none() {
        if first_error.is_none() {
            while posted - done < depth {
                post_record(side, posted, peer_mem);
                posted += 1;
            }
        }
        for c in poll(&side.cq, &mut wc).iter() {
            assert_eq!(c.wr_id(), done, "completions out of order: {c:?}");
            done += 1;
            match (first_error, c.status()) {
                (None, WcStatus::SUCCESS) => last_ok = Some(c.wr_id()),
                (None, status) => {
                    let at = fired.unwrap_or_else(|| panic!("an error before the fault: {c:?}"));
                    first_error = Some((status, c.wr_id(), at.elapsed()));
                }
                (Some(_), WcStatus::WR_FLUSH_ERR) => flushed += 1,
                (Some(_), _) => {
                    panic!("after the first error, a completion that is not a flush: {c:?}")
                }
            }
        }
        match (fired, &fault) {
            (None, _) if done >= 4 * depth => {
                injector.as_mut().unwrap().fire();
                fired = Some(Instant::now());
            }
            (Some(at), None) if injector.as_ref().unwrap().in_place() => {
                let took = at.elapsed();
                fault = Some((injector.take().unwrap().into_fault(), took));
            }
            _ => {}
        }
        let since = fired.unwrap_or(start);
        assert!(
            since.elapsed() < GUARD,
            "hung: {done} of {posted} writes completed, fault injected: {}, in place: {}, \
             first error: {first_error:?}; counters of {device}: {}",
            fired.is_some(),
            fault.is_some(),
            counters(device),
        );
        std::thread::yield_now();
    }
    let (fault, in_place) = fault.unwrap();
    let outcome = Outcome {
        posted,
        last_ok,
        first_error: first_error.unwrap(),
        flushed,
        in_place,
    };
    (outcome, fault)
}

/// Writes `count` records on a fresh QP, each completing successfully.
pub fn write_records(side: &mut Side, peer_mem: RemoteMemory, count: u64) {
    let mut wc = [WorkCompletion::default(); 16];
    let (mut posted, mut done) = (0, 0);
    let start = Instant::now();
    while done < count {
        while posted < count && posted - done < u64::from(DEPTH) {
            post_record(side, posted, peer_mem);
            posted += 1;
        }
        for c in poll(&side.cq, &mut wc).iter() {
            assert_eq!((c.wr_id(), c.status()), (done, WcStatus::SUCCESS), "{c:?}");
            done += 1;
        }
        assert!(
            start.elapsed() < GUARD,
            "hung: {done} of {count} writes on the new QP completed"
        );
        std::thread::yield_now();
    }
}
