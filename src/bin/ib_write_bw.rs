//! `ib_write_bw`: perftest's write bandwidth test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_write_bw(std::env::args_os().collect())
}
