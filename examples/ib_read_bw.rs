//! `ib_read_bw`: perftest's read bandwidth test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_read_bw(std::env::args_os().collect())
}
