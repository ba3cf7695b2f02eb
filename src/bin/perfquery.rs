//! `perfquery`: a port's performance counters, as infiniband-diags prints them.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::perfquery(std::env::args_os().collect())
}
