//! perftest's options as clap parses them: text values, checked later the way perftest
//! checks them.

use clap::Parser;

/// The options, as perftest spells them. Values are taken as text and checked the way
/// perftest checks them (C integer syntax: decimal, `0x` hex, leading-`0` octal).
#[derive(Parser, Debug, Clone, Default)]
#[command(
    about = "perftest-compatible RDMA benchmark: no address = server, an address = client",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true,
    args_override_self = true
)]
pub struct Args {
    /// Run sizes from 2 to 2^23 bytes.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Atomic operation: CMP_AND_SWAP or FETCH_AND_ADD (default FETCH_AND_ADD).
    #[arg(short = 'A', long = "atomic_type", value_name = "type")]
    pub atomic_type: Option<String>,
    /// Measure bidirectional bandwidth (BW tests).
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// Connection type: RC, UC (send, write) or UD (send) (default RC).
    #[arg(short = 'c', long = "connection", value_name = "RC/UC/UD")]
    pub connection: Option<String>,
    /// Use RDMA device <dev> (default: the first one).
    #[arg(short = 'd', long = "ib-dev", value_name = "dev")]
    pub ib_dev: Option<String>,
    /// Run for <seconds> instead of a number of iterations.
    #[arg(short = 'D', long = "duration", value_name = "seconds")]
    pub duration: Option<String>,
    /// Sleep on completion events instead of polling (not for write tests).
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// Measure only within <margin> seconds from both ends of a -D run (default D/4).
    #[arg(short = 'f', long = "margin", value_name = "margin")]
    pub margin: Option<String>,
    /// Accepted for compatibility (perftest's CPU frequency warning switch).
    #[arg(short = 'F', long = "CPU-freq")]
    pub cpu_freq: bool,
    /// Show this help.
    #[arg(short = 'h', long = "help")]
    pub help: bool,
    /// Print every latency sample, sorted (latency tests).
    #[arg(short = 'H', long = "report-histogrm")]
    pub histogram: bool,
    /// Use port <port> of the device (default 1).
    #[arg(short = 'i', long = "ib-port", value_name = "port")]
    pub ib_port: Option<String>,
    /// Send messages up to <size> bytes inline.
    #[arg(short = 'I', long = "inline_size", value_name = "size")]
    pub inline_size: Option<String>,
    /// Post lists of <n> send requests (BW tests).
    #[arg(short = 'l', long = "post_list", value_name = "n")]
    pub post_list: Option<String>,
    /// Path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU).
    #[arg(short = 'm', long = "mtu", value_name = "mtu")]
    pub mtu: Option<String>,
    /// Number of iterations (default 5000 for write BW, else 1000).
    #[arg(short = 'n', long = "iters", value_name = "n")]
    pub iters: Option<String>,
    /// Do not compute the peak bandwidth (BW tests).
    #[arg(short = 'N', long = "noPeak")]
    pub no_peak: bool,
    /// Outstanding reads/atomics (default: the device's maximum).
    #[arg(short = 'o', long = "outs", value_name = "n")]
    pub outs: Option<String>,
    /// TCP port of the out-of-band exchange (default 18515).
    #[arg(short = 'p', long = "port", value_name = "port")]
    pub port: Option<String>,
    /// Number of QPs (BW tests, default 1).
    #[arg(short = 'q', long = "qp", value_name = "n")]
    pub qp: Option<String>,
    /// Completion moderation: one completion per <n> requests (default 100).
    #[arg(short = 'Q', long = "cq-mod", value_name = "n")]
    pub cq_mod: Option<String>,
    /// Receive queue depth (send tests, default 512).
    #[arg(short = 'r', long = "rx-depth", value_name = "n")]
    pub rx_depth: Option<String>,
    /// Message size in bytes; K and M suffixes multiply by 2^10 and 2^20.
    #[arg(short = 's', long = "size", value_name = "size")]
    pub size: Option<String>,
    /// Service level (default 0).
    #[arg(short = 'S', long = "sl", value_name = "sl")]
    pub sl: Option<String>,
    /// Send queue depth (default 128 for BW, 1 for latency tests).
    #[arg(short = 't', long = "tx-depth", value_name = "n")]
    pub tx_depth: Option<String>,
    /// QP ACK timeout exponent: 4.096 µs × 2^n (default 14).
    #[arg(short = 'u', long = "qp-timeout", value_name = "n")]
    pub qp_timeout: Option<String>,
    /// Print every latency sample in the order taken (latency tests).
    #[arg(short = 'U', long = "report-unsorted")]
    pub unsorted: bool,
    /// Print the version and exit.
    #[arg(short = 'V', long = "version")]
    pub version: bool,
    /// GID index (default: the best one, scored as perftest does).
    #[arg(short = 'x', long = "gid-index", value_name = "index")]
    pub gid_index: Option<String>,
    /// Report bandwidth in Gb/s (10^9 bit/s) instead of MB/s (2^20 bytes/s).
    #[arg(long = "report_gbits")]
    pub report_gbits: bool,
    /// With -b, also print each side's results.
    #[arg(long = "report-both")]
    pub report_both: bool,
    /// Also write the results to a file (perftest's JSON-like format).
    #[arg(long = "out_json")]
    pub out_json: bool,
    /// The file of --out_json (default perftest_out.json).
    #[arg(long = "out_json_file", value_name = "file")]
    pub out_json_file: Option<String>,
    /// Post a TX-depth burst before measuring (BW tests).
    #[arg(long = "perform_warm_up")]
    pub perform_warm_up: bool,
    /// Prefer IPv6 GIDs when choosing the GID index.
    #[arg(long = "ipv6")]
    pub ipv6: bool,
    /// Register memory without PCIe relaxed ordering.
    #[arg(long = "disable_pcie_relaxed")]
    pub disable_pcie_relaxed: bool,
    /// Connect the QPs with rdma_cm, which also carries the exchange.
    #[arg(short = 'R', long = "rdma_cm")]
    pub rdma_cm: bool,
    /// The server to connect to; none to be the server.
    #[arg(value_name = "host")]
    pub hosts: Vec<String>,
}
