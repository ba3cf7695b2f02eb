//! `ib_send_bw`: perftest's send bandwidth test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_send_bw(std::env::args_os().collect())
}
