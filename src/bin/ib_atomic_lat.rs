//! `ib_atomic_lat`: perftest's atomic latency test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_atomic_lat(std::env::args_os().collect())
}
