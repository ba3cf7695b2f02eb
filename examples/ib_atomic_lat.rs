//! `ib_atomic_lat`: perftest's atomic latency test (see `ibverbs_tools::perftest`).

fn main() -> std::process::ExitCode {
    ibverbs_tools::ib_atomic_lat(std::env::args_os().collect())
}
