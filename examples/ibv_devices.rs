//! `ibv_devices`: the RDMA devices and their node GUIDs, as rdma-core's tool.
fn main() -> std::process::ExitCode {
    ibverbs_tools::ibv_devices(std::env::args_os().collect())
}
