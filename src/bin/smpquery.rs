//! `smpquery`: one SMP attribute of a node or port, as infiniband-diags prints it.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::smpquery(std::env::args_os().collect())
}
