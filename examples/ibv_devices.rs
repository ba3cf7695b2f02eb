//! `ibv_devices`: the RDMA devices and their node GUIDs, as rdma-core's tool.
//!
//! The installed tool is the binary of the same name (`src/bin/`); this example runs the
//! same function, so `cargo run --example ibv_devices` works as well.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibv_devices(std::env::args_os().collect())
}
