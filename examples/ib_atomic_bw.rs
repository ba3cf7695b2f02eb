//! `ib_atomic_bw`: perftest's atomic bandwidth test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_atomic_bw(std::env::args_os().collect())
}
