//! `ib_read_bw`: perftest's read bandwidth test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_read_bw(std::env::args_os().collect())
}
