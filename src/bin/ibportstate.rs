//! `ibportstate <dest> <port> [<op>]`: shows or changes the state of a port of the subnet (infiniband-diags 44).
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibportstate(std::env::args_os().collect())
}
