//! `ib_send_bw`: perftest's send bandwidth test, wire-compatible with it; see
//! `ibverbs_tools::perftest`.

fn main() -> std::process::ExitCode {
    ibverbs_tools::perftest::main(ibverbs_tools::perftest::Test::SendBw)
}
