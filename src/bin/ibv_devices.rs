//! `ibv_devices`: the RDMA devices and their node GUIDs, as rdma-core's tool.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibv_devices(std::env::args_os().collect())
}
