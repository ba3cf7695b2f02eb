//! `ib_write_lat`: perftest's write latency test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_write_lat(std::env::args_os().collect())
}
