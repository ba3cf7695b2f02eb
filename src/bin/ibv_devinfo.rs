//! `ibv_devinfo [-d DEV] [-i PORT] [-l] [-v]`: device and port attributes, as rdma-core's tool.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibv_devinfo(std::env::args_os().collect())
}
