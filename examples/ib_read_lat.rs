//! `ib_read_lat`: perftest's read latency test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_read_lat(std::env::args_os().collect())
}
