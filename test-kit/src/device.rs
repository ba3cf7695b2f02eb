//! The test device, named by the environment:
//!
//! - `IBVERBS_TEST_DEVICE`: the RDMA device (default `rxe0`);
//! - `IBVERBS_TEST_GID`: the GID at index 1 of its port 1, a RoCE v2 GID (default
//!   `::ffff:127.0.0.1`, which rxe on `lo` has);
//! - `IBVERBS_TEST_NETDEV`: the network device of that GID (default `lo`);
//! - `WITH_RDMA_CM_DEVICE` and `WITH_RDMA_CM_ADDR`: the device rdma_cm can route on and
//!   its IP address (set by `scripts/with-rdma`; no default).
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

/// The device under test: `$IBVERBS_TEST_DEVICE`, default `rxe0`.
pub fn device() -> String {
    env_or("IBVERBS_TEST_DEVICE", "rxe0")
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
    std::env::var(name)
        .unwrap_or_else(|_| panic!("${name} is not set (run the tests through scripts/with-rdma)"))
}

/// The device for rdma_cm (its netdev has an address with a route): `$WITH_RDMA_CM_DEVICE`.
pub fn cm_device() -> String {
    env_required("WITH_RDMA_CM_DEVICE")
}

/// The IP address of the rdma_cm device: `$WITH_RDMA_CM_ADDR`.
pub fn cm_addr() -> IpAddr {
    env_required("WITH_RDMA_CM_ADDR")
        .parse()
        .expect("WITH_RDMA_CM_ADDR is an IP address")
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
    let mut wc = [WorkCompletion::default(); 1];
    let start = Instant::now();
    loop {
        if let [done] = cq.poll(&mut wc).expect("ibv_poll_cq") {
            return *done;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no completion within 10 s"
        );
        std::thread::yield_now();
    }
}
