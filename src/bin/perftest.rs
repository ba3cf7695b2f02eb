//! `perftest [-s HOST] [-n SIZE] [-t SECONDS]`: RC write bandwidth, then send latency (see
//! `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::perftest(std::env::args_os().collect())
}
