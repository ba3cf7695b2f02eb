//! `ib_send_bw`: perftest's send bandwidth test (see `rdma_verbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ib_send_bw(std::env::args_os().collect())
}
