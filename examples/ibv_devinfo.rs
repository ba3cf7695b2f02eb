//! `ibv_devinfo [-d DEV] [-i PORT] [-l] [-v]`: device and port attributes, as rdma-core's tool.
//!
//! The installed tool is the binary of the same name (`src/bin/`); this example runs the
//! same function, so `cargo run --example ibv_devinfo` works as well.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibv_devinfo(std::env::args_os().collect())
}
