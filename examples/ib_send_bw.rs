//! `ib_send_bw`: perftest's send bandwidth test (the tool `src/perftest/` builds).
//!
//! The installed tool is the binary of the same name (`src/bin/`); this example runs the
//! same function, so `cargo run --example ib_send_bw` works as well.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_send_bw(std::env::args_os().collect())
}
