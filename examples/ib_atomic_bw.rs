//! `ib_atomic_bw`: perftest's atomic bandwidth test, wire-compatible with it; see
//! `ibverbs_tools::perftest`.

fn main() -> std::process::ExitCode {
    ibverbs_tools::perftest::main(ibverbs_tools::perftest::Test::AtomicBw)
}
