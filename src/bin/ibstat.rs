//! `ibstat [-l|-s|-p] [CA [PORT]]`: device and port status, as infiniband-diags' tool.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibstat(std::env::args_os().collect())
}
