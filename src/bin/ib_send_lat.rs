//! `ib_send_lat`: perftest's send latency test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_send_lat(std::env::args_os().collect())
}
