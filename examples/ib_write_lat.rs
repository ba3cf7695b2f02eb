//! `ib_write_lat`: perftest's write latency test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_write_lat(std::env::args_os().collect())
}
