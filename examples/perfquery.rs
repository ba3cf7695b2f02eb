//! `perfquery`: a port's performance counters, as infiniband-diags prints them.
fn main() -> std::process::ExitCode {
    ibverbs_tools::perfquery(std::env::args_os().collect())
}
