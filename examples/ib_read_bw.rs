//! `ib_read_bw`: perftest's read bandwidth test (the tool `src/perftest/` builds).
//!
//! The installed tool is the binary of the same name (`src/bin/`); this example runs the
//! same function, so `cargo run --example ib_read_bw` works as well.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_read_bw(std::env::args_os().collect())
}
