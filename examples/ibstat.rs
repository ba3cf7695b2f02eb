//! `ibstat [-l|-s|-p] [CA [PORT]]`: prints device and port status, as infiniband-diags' tool
//! does.

fn main() {
    let args: Vec<_> = std::env::args_os().collect();
    std::process::exit(ibverbs_tools::ibstat::ibstat_main(&args));
}
