//! `ib_write_bw`: perftest's write bandwidth test, wire-compatible with it; see
//! `ibverbs_tools::perftest`.

fn main() -> std::process::ExitCode {
    ibverbs_tools::perftest::main(ibverbs_tools::perftest::Test::WriteBw)
}
