//! `ib_atomic_lat`: perftest's atomic latency test (the tool `src/perftest/` builds).
//!
//! The installed tool is the binary of the same name (`src/bin/`); this example runs the
//! same function, so `cargo run --example ib_atomic_lat` works as well.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_atomic_lat(std::env::args_os().collect())
}
