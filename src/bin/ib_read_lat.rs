//! `ib_read_lat`: perftest's read latency test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_read_lat(std::env::args_os().collect())
}
