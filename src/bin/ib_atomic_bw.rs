//! `ib_atomic_bw`: perftest's atomic bandwidth test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_atomic_bw(std::env::args_os().collect())
}
