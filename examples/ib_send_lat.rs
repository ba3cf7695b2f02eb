//! `ib_send_lat`: perftest's send latency test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_send_lat(std::env::args_os().collect())
}
