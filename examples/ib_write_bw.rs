//! `ib_write_bw`: perftest's write bandwidth test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_write_bw(std::env::args_os().collect())
}
