//! What the tests of several areas share: a connected pair of QPs, polling, memory contents,
//! transfers through a region, the huge page pool.

use std::sync::{Mutex, MutexGuard};

use rdma_verbs_test_kit::{connect_pair, open, pattern, Link};

use rdma_verbs::{
    CompletionQueue, Error, MemoryRegion, PreparedQueuePair, ProtectionDomain, QpType, QueuePair,
    RecvRequest, RegistrableMemory, SendRequest, WcOpcode, WcStatus, WrError,
};

pub use rdma_verbs_test_kit::{poll_one, ALL};

/// Two QPs of one type on one device, connected to each other.
pub struct Pair {
    pub pd: ProtectionDomain,
    pub a: QueuePair,
    pub a_cq: CompletionQueue,
    pub b: QueuePair,
    pub b_cq: CompletionQueue,
    /// Keeps the connection up.
    pub link: Link,
}

impl Pair {
    /// A pair of `qp_type` QPs built and connected with the defaults.
    pub fn new(qp_type: QpType) -> Pair {
        Self::with(qp_type, |b| b, |_| {})
    }

    /// A pair of `qp_type` QPs, each built through `config`, passed to `before_connect`
    /// once built, then connected to each other (UD QPs: made ready to send).
    pub fn with(
        qp_type: QpType,
        config: impl Fn(rdma_verbs::QueuePairBuilder<'_>) -> rdma_verbs::QueuePairBuilder<'_>,
        before_connect: impl Fn(&PreparedQueuePair),
    ) -> Pair {
        let ctx = open();
        let pd = ctx.alloc_pd().unwrap();
        let a_cq = ctx.create_cq(64, None).unwrap();
        let b_cq = ctx.create_cq(64, None).unwrap();
        let a = config(pd.create_qp(qp_type, &a_cq, &a_cq).access(ALL))
            .build()
            .unwrap();
        let b = config(pd.create_qp(qp_type, &b_cq, &b_cq).access(ALL))
            .build()
            .unwrap();
        before_connect(&a);
        before_connect(&b);
        let (a, b, link) = connect(qp_type, a, b);
        Pair {
            pd,
            a,
            a_cq,
            b,
            b_cq,
            link,
        }
    }

    /// `len` bytes of memory with [`ALL`] access on the pair's PD.
    pub fn mr(&self, len: usize) -> MemoryRegion {
        self.pd.alloc_mr(len, ALL).unwrap()
    }
}

/// Connects two prepared QPs of `qp_type` to each other ([`connect_pair`]: through rdma_cm
/// on iWARP), or makes UD QPs ready to send; keep the [`Link`] while the QPs are used.
pub fn connect(
    qp_type: QpType,
    a: PreparedQueuePair,
    b: PreparedQueuePair,
) -> (QueuePair, QueuePair, Link) {
    if qp_type == QpType::Ud {
        return (a.ready().unwrap(), b.ready().unwrap(), Link::none());
    }
    connect_pair(a, b)
}

/// Two RC QPs with [`ALL`] access on `pd`, both on `cq`, connected to each other; keep the
/// [`Link`] while the QPs are used.
pub fn rc_pair_on(pd: &ProtectionDomain, cq: &CompletionQueue) -> (QueuePair, QueuePair, Link) {
    let qp = || {
        pd.create_qp(QpType::Rc, cq, cq)
            .access(ALL)
            .build()
            .unwrap()
    };
    connect(QpType::Rc, qp(), qp())
}

/// The reason of a request refused before the provider (of a post or a batch), which must
/// be the first of its list.
#[track_caller]
pub fn refusal<E: Into<Error>>(got: Result<(), E>) -> WrError {
    refusal_at(got, 0)
}

/// The reason of a request refused before the provider, which must be request `index` of
/// its list or batch.
#[track_caller]
pub fn refusal_at<E: Into<Error>>(got: Result<(), E>, index: usize) -> WrError {
    match got.map_err(Into::into) {
        Err(Error::Request { index: i, reason }) if i == index => reason,
        other => panic!("expected request {index} refused, got {other:?}"),
    }
}

/// The bytes of `mr`.
pub fn contents<B: RegistrableMemory>(mr: &MemoryRegion<B>) -> Vec<u8> {
    let mut out = vec![0; mr.len()];
    mr.read(0, &mut out).unwrap();
    out
}

/// RDMA write from, RDMA read into and a receive into `mem` (registered with [`ALL`] on the
/// pair's PD), each against a heap region, with the data checked.
pub fn exercise<B: RegistrableMemory>(p: &Pair, mem: &mut MemoryRegion<B>) {
    let len = mem.len().min(64 * 1024);
    let other = p.mr(len);

    // Write: mem -> other.
    let data = pattern(1, len);
    mem.write(0, &data).unwrap();
    let sge = [mem.sge(..len).unwrap()];
    p.a.post_send(&mut [SendRequest::write(1, &sge, other.remote()).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    assert_eq!(contents(&other), data, "RDMA write from the memory");

    // Read: other -> mem.
    let mut other = other;
    let data = pattern(2, len);
    other.write(0, &data).unwrap();
    let sge = [mem.sge(..len).unwrap()];
    p.a.post_send(&mut [SendRequest::read(2, &sge, other.remote()).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let mut got = vec![0; len];
    mem.read(0, &mut got).unwrap();
    assert_eq!(got, data, "RDMA read into the memory");

    // Send: other (on b) -> a receive into mem.
    let data = pattern(3, len);
    other.write(0, &data).unwrap();
    let rsge = [mem.sge(..len).unwrap()];
    p.a.post_recv(&mut [RecvRequest::new(3, &rsge)]).unwrap();
    let sge = [other.sge(..).unwrap()];
    p.b.post_send(&mut [SendRequest::send(4, &sge).signaled()])
        .unwrap();
    poll_one(&p.b_cq).ok().unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(
        (wc.status(), wc.opcode(), wc.byte_len() as usize),
        (WcStatus::SUCCESS, WcOpcode::Recv, len)
    );
    mem.read(0, &mut got).unwrap();
    assert_eq!(got, data, "a send received into the memory");
}

/// Writes `line` to the process's stderr, past the harness's capture: what the device did
/// where a test takes the branch of a device without the feature.
pub fn say(line: String) {
    let _ = std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
}

/// The huge page pool (8 pages in scripts/with-rdma's VM), held by each test that takes huge
/// pages while it has them, since one of them empties the pool on purpose.
pub fn huge_page_pool() -> MutexGuard<'static, ()> {
    static POOL: Mutex<()> = Mutex::new(());
    POOL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
