//! Our fabric tools against infiniband-diags 44 on the simulated InfiniBand fabric, on every
//! topology of `scripts/topologies/` (see `rdma_verbs_test_kit::fabric`): same stdout byte for
//! byte, same exit status, stderr non-empty exactly when the C tool's is. Plain
//! `cargo test` runs each test under `scripts/with-ibsim` once per topology;
//! `scripts/with-ibsim -t T cargo test --test fabric` runs them on T only. `ibdevices`,
//! which has no C tool of its name, is compared with `ibstat` field by field instead.
//!
//! Ours are the package's binaries, which `cargo test` builds before this test.

mod ibdevices;
mod ibstat;
mod perfquery;
mod sminfo;
mod smpquery;
