//! `ibv_devices`: lists the RDMA devices and their node GUIDs, as rdma-core's tool does.

fn main() {
    std::process::exit(ibverbs_tools::devinfo::devices_main());
}
