//! `ibdevices [CA]`: every device and its ports' state, rate, width and speed, as ibstat.
fn main() -> std::process::ExitCode {
    rdma_verbs_tools::ibdevices(std::env::args_os().collect())
}
