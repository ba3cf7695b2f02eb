//! Connected RC pairs whose CQs report to completion channels, and a waker that panics.

use std::sync::Arc;
use std::task::{Wake, Waker};

use rdma_verbs::tokio::AsyncCq;
use rdma_verbs::{
    CompletionChannel, ConnectOptions, Context, MemoryRegion, ProtectionDomain, QpType, QueuePair,
};
use rdma_verbs_test_kit::ALL;

/// How long any await of a test may take before the test fails.
pub const LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Two RC QPs connected to each other, each with its own async CQ on one channel.
pub struct Pair {
    pub pd: ProtectionDomain,
    pub a: QueuePair,
    pub a_cq: AsyncCq,
    pub b: QueuePair,
    pub b_cq: AsyncCq,
}

impl Pair {
    /// A pair on `ctx` whose two CQs (64 entries) report to `channel`, each spinning
    /// `spin` empty polls before it waits for an event.
    pub fn new(ctx: &Context, channel: &CompletionChannel, spin: u32) -> Pair {
        let pd = ctx.alloc_pd().unwrap();
        let a_cq = ctx.create_cq(64, Some(channel)).unwrap();
        let b_cq = ctx.create_cq(64, Some(channel)).unwrap();
        let a = pd.create_qp(QpType::Rc, &a_cq, &a_cq).access(ALL);
        let b = pd.create_qp(QpType::Rc, &b_cq, &b_cq).access(ALL);
        let (a, b) = (a.build().unwrap(), b.build().unwrap());
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let opts = ConnectOptions::new();
        Pair {
            a: a.connect(&eb, &opts).unwrap(),
            b: b.connect(&ea, &opts).unwrap(),
            pd,
            a_cq: AsyncCq::new(a_cq).unwrap().with_spin(spin),
            b_cq: AsyncCq::new(b_cq).unwrap().with_spin(spin),
        }
    }

    /// `len` bytes of memory with [`ALL`] access on the pair's PD.
    pub fn mr(&self, len: usize) -> MemoryRegion {
        self.pd.alloc_mr(len, ALL).unwrap()
    }
}

/// A waker whose `wake` panics: the runtime's code, as the crate sees it, which must run
/// with no lock of the crate held and the crate's state consistent.
pub fn panicking_waker() -> Waker {
    struct Panics;
    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("a waker that panics");
        }
    }
    Waker::from(Arc::new(Panics))
}
