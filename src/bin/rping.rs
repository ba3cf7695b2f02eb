//! `rping -s|-c [-vVd] [-S size] [-C count] [-a addr] [-I addr] [-p port]`: RDMA ping over
//! rdma_cm, as rdma-core's tool (see `rdma_verbs_tools::rping`).
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::rping(std::env::args_os().collect())
}
