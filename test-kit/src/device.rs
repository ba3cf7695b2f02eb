//! The test device, named by the environment:
//!
//! - `IBVERBS_TEST_PROVIDER`: `rxe` (the default: RoCE) or `siw` (soft-iWARP), which picks
//!   the defaults below ([`provider`]);
//! - `IBVERBS_TEST_DEVICE`: the RDMA device (default `rxe0`; with `siw`,
//!   `$WITH_RDMA_IWARP_DEVICE`);
//! - `IBVERBS_TEST_GID`: the GID at index 1 of its port 1, a RoCE v2 GID (default
//!   `::ffff:127.0.0.1`, which rxe on `lo` has);
//! - `IBVERBS_TEST_NETDEV`: the network device of that GID (default `lo`);
//! - `WITH_RDMA_CM_DEVICE` and `WITH_RDMA_CM_ADDR`: the device rdma_cm can route on and
//!   its IP address (set by `scripts/with-rdma`; no default); with `siw`,
//!   `WITH_RDMA_IWARP_DEVICE` and `WITH_RDMA_IWARP_ADDR` (set by `scripts/with-rdma` where
//!   `scripts/build-siw` built soft-iWARP for the VM's kernel).
//!
//! A missing device is a failure, not a skip: [`open`], [`open_cm`], [`cm_device`] and
//! [`cm_addr`] panic.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use rdma_verbs::{AccessFlags, CompletionQueue, Context, Gid, WorkCompletion};

/// `$name`, or `default` when it is not set.
fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// The provider the tests run on, `$IBVERBS_TEST_PROVIDER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// rxe, RoCE v2 (`rxe`, the default).
    Rxe,
    /// soft-iWARP (`siw`).
    Siw,
}

/// The provider under test: `$IBVERBS_TEST_PROVIDER` (`rxe` or `siw`), default `rxe`;
/// panics on another value.
pub fn provider() -> Provider {
    match std::env::var("IBVERBS_TEST_PROVIDER").as_deref() {
        Err(_) | Ok("rxe") => Provider::Rxe,
        Ok("siw") => Provider::Siw,
        Ok(other) => panic!("IBVERBS_TEST_PROVIDER is {other:?}: rxe or siw"),
    }
}

/// The device under test: `$IBVERBS_TEST_DEVICE`, default `rxe0` (with the `siw` provider,
/// `$WITH_RDMA_IWARP_DEVICE`).
pub fn device() -> String {
    match (std::env::var("IBVERBS_TEST_DEVICE"), provider()) {
        (Ok(name), _) => name,
        (Err(_), Provider::Rxe) => "rxe0".to_owned(),
        (Err(_), Provider::Siw) => env_required("WITH_RDMA_IWARP_DEVICE"),
    }
}

/// The GID at index 1 of port 1 of the test device: `$IBVERBS_TEST_GID`, default
/// `::ffff:127.0.0.1`.
pub fn gid() -> Gid {
    env_or("IBVERBS_TEST_GID", "::ffff:127.0.0.1")
        .parse()
        .expect("IBVERBS_TEST_GID is an IPv6 address")
}

/// The network device of the test GID: `$IBVERBS_TEST_NETDEV`, default `lo`.
pub fn netdev() -> String {
    env_or("IBVERBS_TEST_NETDEV", "lo")
}

/// `$name`; panics, naming `scripts/with-rdma`, when it is not set.
fn env_required(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        let siw = if name.contains("IWARP") {
            ", on a kernel scripts/build-siw built soft-iWARP for"
        } else {
            ""
        };
        panic!("${name} is not set (run the tests through scripts/with-rdma{siw})")
    })
}

/// The device for rdma_cm (its netdev has an address with a route): `$WITH_RDMA_CM_DEVICE`
/// (with the `siw` provider, `$WITH_RDMA_IWARP_DEVICE`).
pub fn cm_device() -> String {
    env_required(match provider() {
        Provider::Rxe => "WITH_RDMA_CM_DEVICE",
        Provider::Siw => "WITH_RDMA_IWARP_DEVICE",
    })
}

/// The IP address of the rdma_cm device: `$WITH_RDMA_CM_ADDR` (with the `siw` provider,
/// `$WITH_RDMA_IWARP_ADDR`).
pub fn cm_addr() -> IpAddr {
    let name = match provider() {
        Provider::Rxe => "WITH_RDMA_CM_ADDR",
        Provider::Siw => "WITH_RDMA_IWARP_ADDR",
    };
    env_required(name)
        .parse()
        .unwrap_or_else(|e| panic!("${name} is not an IP address: {e}"))
}

/// The iWARP device (soft-iWARP), whatever the provider under test:
/// `$WITH_RDMA_IWARP_DEVICE`.
pub fn iwarp_device() -> String {
    env_required("WITH_RDMA_IWARP_DEVICE")
}

/// The IP address of the iWARP device's netdev: `$WITH_RDMA_IWARP_ADDR`.
pub fn iwarp_addr() -> IpAddr {
    env_required("WITH_RDMA_IWARP_ADDR")
        .parse()
        .expect("WITH_RDMA_IWARP_ADDR is an IP address")
}

/// Opens the test device (`ibv_open_device`); panics if it cannot.
pub fn open() -> Context {
    let name = device();
    Context::open(&name).unwrap_or_else(|e| {
        panic!("cannot open the test device {name} (run the tests through scripts/with-rdma): {e}")
    })
}

/// Opens the rdma_cm device (`ibv_open_device`); panics if it cannot. A test that only
/// runs programs calls it, so that its binary links libibverbs and the runner gives it the
/// device.
pub fn open_cm() -> Context {
    let name = cm_device();
    Context::open(&name).unwrap_or_else(|e| {
        panic!(
            "cannot open the rdma_cm device {name} (run the tests through scripts/with-rdma): {e}"
        )
    })
}

/// Asserts that no destroy call has failed in a destructor of this process so far
/// ([`rdma_verbs::drop_error::count`]).
pub fn assert_clean_drops() {
    assert_eq!(rdma_verbs::drop_error::count(), 0, "a destroy call failed");
}

/// Asserts that `cq` stays empty for 100 ms (`ibv_poll_cq`); `what` names the moment in
/// the failure message.
pub fn assert_empty(cq: &CompletionQueue, what: &str) {
    std::thread::sleep(Duration::from_millis(100));
    let mut wc = [WorkCompletion::default(); 4];
    let got = cq.poll(&mut wc).expect("ibv_poll_cq");
    assert!(got.is_empty(), "{what}: unexpected completions: {got:?}");
}

/// Every access right: local write, remote write, read and atomic.
pub const ALL: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

/// Polls `cq` (`ibv_poll_cq`) until one completion arrives, failing after 10 s instead of
/// hanging.
pub fn poll_one(cq: &CompletionQueue) -> WorkCompletion {
    poll_within(cq, Duration::from_secs(10)).expect("no completion within 10 s")
}

/// Polls `cq` (`ibv_poll_cq`) until one completion arrives (`Some`) or `limit` has passed
/// (`None`), for a test that reports what it was doing when none came.
pub fn poll_within(cq: &CompletionQueue, limit: Duration) -> Option<WorkCompletion> {
    let mut wc = [WorkCompletion::default(); 1];
    let start = Instant::now();
    loop {
        if let [done] = cq.poll(&mut wc).expect("ibv_poll_cq") {
            return Some(*done);
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::yield_now();
    }
}

/// What a test needs of the provider that soft-iWARP (the `siw` provider) does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// UD queue pairs, and so UD over rdma_cm, multicast and address handles: iWARP has RC
    /// only.
    Ud,
    /// What InfiniBand's transport and CM have and iWARP's TCP stream does not: an ACK
    /// timeout, a traffic class and an alternate path on the QP, RoCE GIDs of the route's
    /// addresses, `rdma_notify`'s COMM_EST.
    IbTransport,
    /// The extended QP creation (`ibv_create_qp_ex` with send operations): siw's provider
    /// has no `create_qp_ex`.
    ExtendedQp,
    /// UC queue pairs: iWARP has RC only.
    Uc,
    /// Atomic operations (fetch and add, compare and swap, atomic write): iWARP has none.
    Atomics,
    /// Memory windows (`ibv_alloc_mw`, `ibv_bind_mw`): siw's provider has none.
    MemoryWindows,
    /// Extended CQs (`ibv_create_cq_ex`): siw's provider has no `create_cq_ex`.
    ExtendedCq,
    /// Querying a QP's state and port (`ibv_query_qp`): siw's reports RESET and port 0 for
    /// a connected QP.
    QpQuery,
    /// Resizing a CQ (`ibv_resize_cq`): siw's provider has no `resize_cq`.
    CqResize,
    /// Immediate data (sends and RDMA writes with immediate): iWARP's RDMA protocol
    /// carries none.
    ImmediateData,
    /// A writer that learns of the peer's refusal of its RDMA write from the write's
    /// completion: an iWARP write completes once sent, unacknowledged.
    AckedWrites,
    /// A send queue that fills up under a long post list: siw took a list 64 times its
    /// send queue's depth whole.
    FillableSendQueue,
    /// Querying a shared receive queue (`ibv_query_srq`): siw's provider cannot.
    SrqQuery,
}

impl Need {
    /// What it is, for the line of a skipped test.
    fn label(self) -> &'static str {
        match self {
            Need::Ud => "UD queue pairs or address handles (iWARP has RC only)",
            Need::IbTransport => {
                "InfiniBand transport attributes (ACK timeout, traffic class, alternate path, RoCE \
                 GIDs, COMM_EST): \
                 iWARP runs over TCP"
            }
            Need::ExtendedQp => "extended QP creation (no create_qp_ex in its provider)",
            Need::SrqQuery => "SRQ query (no query_srq in its provider)",
            Need::Uc => "UC queue pairs (iWARP has RC only)",
            Need::Atomics => "atomic operations (iWARP has none)",
            Need::MemoryWindows => "memory windows (no alloc_mw in its provider)",
            Need::ExtendedCq => "extended CQs (no create_cq_ex in its provider)",
            Need::QpQuery => "QP query (its query_qp reports neither state nor port)",
            Need::CqResize => "CQ resizing (no resize_cq in its provider)",
            Need::ImmediateData => "immediate data (iWARP's RDMA protocol carries none)",
            Need::AckedWrites => {
                "RDMA write completions acknowledged by the peer (an iWARP write completes once \
                 sent)"
            }
            Need::FillableSendQueue => {
                "send queue a post list fills (it took a list 64 times the queue's depth)"
            }
        }
    }
}

/// Whether a test that needs `need` runs on the provider under test ([`provider`]): always
/// on rxe, which has all of them (a failure there is a failure); on siw, `false`, with a
/// line naming what the provider lacks on stderr (past the test harness's capture). The
/// crate's refusals of what iWARP forbids are tested on siw by tests of their own.
pub fn provider_has(need: Need) -> bool {
    if provider() == Provider::Rxe {
        return true;
    }
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    let line = format!("{test}: skipped: siw has no {}\n", need.label());
    // Written to the process's stderr, not through eprintln!, which the harness captures.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    false
}

/// The private data `data` arrives as, sent in an rdma_cm message that carries at most `len`
/// bytes: zero-padded to `len` on rxe (an InfiniBand CM message's field), as sent on siw
/// (MPA carries its length).
pub fn delivered_private_data(data: &[u8], len: usize) -> Vec<u8> {
    let mut v = data.to_vec();
    if provider() == Provider::Rxe {
        v.resize(len, 0);
    }
    v
}

/// The reason of the `Rejected` event a peer's `rdma_reject` gives: the InfiniBand CM's
/// "consumer defined" (28) on rxe; on siw the MPA reject's reset, `-ECONNRESET`.
pub fn peer_reject_reason() -> i32 {
    match provider() {
        Provider::Rxe => 28,
        Provider::Siw => -libc::ECONNRESET,
    }
}
