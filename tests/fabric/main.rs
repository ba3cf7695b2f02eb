//! Our fabric tools against infiniband-diags 44 on the simulated InfiniBand fabric, on every
//! topology of `scripts/topologies/` (see `rdma_verbs_test_kit::fabric`): same stdout byte for
//! byte, same exit status, stderr non-empty exactly when the C tool's is. Plain
//! `cargo test` runs each test under `scripts/with-ibsim` once per topology;
//! `scripts/with-ibsim -t T cargo test --test fabric` runs them on T only.
//!
//! The tools are the example binaries beside this test (`target/<profile>/examples/`):
//! `cargo test --test fabric` alone does not build them (`cargo build --examples` first).

mod ibstat;
mod perfquery;
mod sminfo;
mod smpquery;
