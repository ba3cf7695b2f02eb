//! `ibv_devinfo [-d DEV] [-i PORT] [-l] [-v]`: prints device and port attributes, as
//! rdma-core's tool does.

fn main() {
    let args: Vec<_> = std::env::args_os().collect();
    std::process::exit(ibverbs_tools::devinfo::devinfo_main(&args));
}
