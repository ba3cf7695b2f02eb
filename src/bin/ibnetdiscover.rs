//! `ibnetdiscover`: discovers the InfiniBand subnet and prints its topology (infiniband-diags 44).
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibnetdiscover(std::env::args_os().collect())
}
