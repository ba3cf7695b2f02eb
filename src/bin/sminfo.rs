//! `sminfo`: the subnet manager's SMInfo, as infiniband-diags prints it.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::sminfo(std::env::args_os().collect())
}
