//! What the test files of the workspace share, so that none of them copies it:
//!
//! - [`device`](mod@device): the test device and its GID and network device, the rdma_cm
//!   device and its address (from the environment),
//!   opening it, and the check that no destructor failed;
//! - [`data`]: data patterns that catch stale, misplaced, shifted or torn bytes;
//! - [`hello`](mod@hello): the text line two test processes exchange to connect their QPs,
//!   and the byte streams' hello a hand-made stream peer sends;
//! - [`wire`]: a TCP connection carrying text lines, between test processes;
//! - [`programs`]: the root package's example binaries (our tools) and the C tools they
//!   are compared with, by absolute path;
//! - [`pair`]: two RC QPs connected to each other, by hand or, on iWARP, through rdma_cm;
//! - [`net`]: TCP ports (a free one; whether one is listened on) and rdma_cm listeners;
//! - [`run`]: a program run in the background, its output and status; a test re-run in a
//!   child process;
//! - [`limit`]: a process out of address space or file descriptors (in such a child);
//! - [`fabric`]: our fabric tools against infiniband-diags' on the simulated InfiniBand
//!   fabric of `scripts/with-ibsim` (or with no CA at all);
//! - [`fabric_runs`]: sequences of commands on a simulated fabric of their own (state
//!   changes, another attachment point), C's and ours compared step by step;
//! - [`ibdevices`]: our `ibdevices` against C `ibstat`, field by field, on any device;
//! - [`feature`](mod@feature): device capabilities only some kernels' rxe has, and what the
//!   kernel scripts/with-rdma booted is expected to have.
//!
//! - [`capture`]: the RoCE v2 packets a network device sends and receives, with their IP
//!   traffic class (a packet socket).
//!
//! Everything here is generic; what only one test needs stays in its test file.

pub mod capture;
pub mod data;
pub mod device;
pub mod fabric;
pub mod fabric_runs;
pub mod feature;
pub mod hello;
pub mod ibdevices;
pub mod limit;
pub mod net;
pub mod pair;
pub mod programs;
pub mod run;
pub mod wire;

pub use capture::{Capture, RocePacket, GSI_QP};
pub use data::{mix, pattern, record};
pub use device::{
    assert_clean_drops, assert_empty, cm_addr, cm_device, delivered_private_data, device, gid,
    iwarp_addr, iwarp_device, netdev, open, open_cm, peer_reject_reason, poll_one, poll_within,
    provider, provider_has, Need, Provider, ALL,
};
pub use feature::{feature, Feature};
pub use hello::{hello, parse_hello, stream_hello};
pub use limit::{errno, exhaust, Exhaust, Exhausted};
pub use net::{cm_listening, free_port, listening};
pub use pair::{connect_pair, Link};
pub use programs::{c_tool, example, rping_ended_well, tool, Program};
pub use run::{child_test, child_test_with, run_alone, strings, Outcome, Running};
pub use wire::Wire;
