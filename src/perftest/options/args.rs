//! perftest's options as getopt_long reads them ([`crate::cli::getopt`]): text values,
//! checked later the way perftest checks them, and the help.

use crate::cli::{getopt_long, GetoptError, HasArg, Item, LongOpt};

/// The options, as perftest spells them. Values are kept as text and checked the way
/// perftest checks them (C integer syntax: decimal, `0x` hex, leading-`0` octal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// Run sizes from 2 to 2^23 bytes.
    pub all: bool,
    /// Atomic operation: CMP_AND_SWAP or FETCH_AND_ADD (default FETCH_AND_ADD).
    pub atomic_type: Option<String>,
    /// Measure bidirectional bandwidth (BW tests).
    pub bidirectional: bool,
    /// Connection type: RC, UC (send, write) or UD (send) (default RC).
    pub connection: Option<String>,
    /// Use RDMA device <dev> (default: the first one).
    pub ib_dev: Option<String>,
    /// Run for <seconds> instead of a number of iterations.
    pub duration: Option<String>,
    /// Sleep on completion events instead of polling (not for write tests).
    pub events: bool,
    /// Measure only within <margin> seconds from both ends of a -D run (default D/4).
    pub margin: Option<String>,
    /// Accepted for compatibility (perftest's CPU frequency warning switch).
    pub cpu_freq: bool,
    /// Show this help.
    pub help: bool,
    /// Print every latency sample, sorted (latency tests).
    pub histogram: bool,
    /// Use port <port> of the device (default 1).
    pub ib_port: Option<String>,
    /// Send messages up to <size> bytes inline.
    pub inline_size: Option<String>,
    /// Post lists of <n> send requests (BW tests).
    pub post_list: Option<String>,
    /// Path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU).
    pub mtu: Option<String>,
    /// Number of iterations (default 5000 for write BW, else 1000).
    pub iters: Option<String>,
    /// Do not compute the peak bandwidth (BW tests).
    pub no_peak: bool,
    /// Outstanding reads/atomics (default: the device's maximum).
    pub outs: Option<String>,
    /// TCP port of the out-of-band exchange (default 18515).
    pub port: Option<String>,
    /// Number of QPs (BW tests, default 1).
    pub qp: Option<String>,
    /// Completion moderation: one completion per <n> requests (default 100).
    pub cq_mod: Option<String>,
    /// Receive queue depth (send tests, default 512).
    pub rx_depth: Option<String>,
    /// Message size in bytes; K and M suffixes multiply by 2^10 and 2^20.
    pub size: Option<String>,
    /// Service level (default 0).
    pub sl: Option<String>,
    /// Send queue depth (default 128 for BW, 1 for latency tests).
    pub tx_depth: Option<String>,
    /// QP ACK timeout exponent: 4.096 µs × 2^n (default 14).
    pub qp_timeout: Option<String>,
    /// Print every latency sample in the order taken (latency tests).
    pub unsorted: bool,
    /// Print the version and exit.
    pub version: bool,
    /// GID index (default: the best one, scored as perftest does).
    pub gid_index: Option<String>,
    /// Report bandwidth in Gb/s (10^9 bit/s) instead of MB/s (2^20 bytes/s).
    pub report_gbits: bool,
    /// With -b, also print each side's results.
    pub report_both: bool,
    /// Also write the results to a file (perftest's JSON-like format).
    pub out_json: bool,
    /// The file of --out_json (default perftest_out.json).
    pub out_json_file: Option<String>,
    /// Post a TX-depth burst before measuring (BW tests).
    pub perform_warm_up: bool,
    /// Prefer IPv6 GIDs when choosing the GID index.
    pub ipv6: bool,
    /// Register memory without PCIe relaxed ordering.
    pub disable_pcie_relaxed: bool,
    /// Connect the QPs with rdma_cm, which also carries the exchange.
    pub rdma_cm: bool,
    /// Traffic class of the GRH (`--tclass`, default 0).
    pub tclass: Option<String>,
    /// Rate limit (`--rate_limit`), in `--rate_units`.
    pub rate_limit: Option<String>,
    /// Units of the rate limit: M (MiB/s), g (Gb/s, the default) or p (packets/s).
    pub rate_units: Option<String>,
    /// Rate limiter: HW (the path's static rate), SW (paced posts) or PP (packet pacing).
    pub rate_limit_type: Option<String>,
    /// Messages per burst of the rate limiter (default the TX depth).
    pub burst_size: Option<String>,
    /// Typical packet size of packet pacing (PP only).
    pub typical_pkt_size: Option<String>,
    /// The server to connect to; none to be the server.
    pub hosts: Vec<String>,
}

/// One option: how getopt reads it and what the help says of it.
struct Spec {
    opt: LongOpt,
    /// Whether the letter (`opt.val`) is also a short option.
    short: bool,
    /// The value's name in the help.
    value_name: Option<&'static str>,
    help: &'static str,
}

/// Long-only options get `val`s from Unicode's private use area, which no short option uses.
const LONG_ONLY: char = '\u{e000}';

impl Spec {
    const fn flag(name: &'static str, val: char, help: &'static str) -> Spec {
        Spec {
            opt: LongOpt::flag(name, val),
            short: (val as u32) < (LONG_ONLY as u32),
            value_name: None,
            help,
        }
    }

    const fn value(
        name: &'static str,
        val: char,
        value_name: &'static str,
        help: &'static str,
    ) -> Spec {
        Spec {
            opt: LongOpt::value(name, val),
            short: (val as u32) < (LONG_ONLY as u32),
            value_name: Some(value_name),
            help,
        }
    }
}

/// The options, in the help's order (also the order of glibc's ambiguity messages).
const OPTIONS: &[Spec] = &[
    Spec::flag("all", 'a', "Run sizes from 2 to 2^23 bytes"),
    Spec::value(
        "atomic_type",
        'A',
        "type",
        "Atomic operation: CMP_AND_SWAP or FETCH_AND_ADD (default FETCH_AND_ADD)",
    ),
    Spec::flag(
        "bidirectional",
        'b',
        "Measure bidirectional bandwidth (BW tests)",
    ),
    Spec::value(
        "connection",
        'c',
        "RC/UC/UD",
        "Connection type: RC, UC (send, write) or UD (send) (default RC)",
    ),
    Spec::value(
        "ib-dev",
        'd',
        "dev",
        "Use RDMA device <dev> (default: the first one)",
    ),
    Spec::value(
        "duration",
        'D',
        "seconds",
        "Run for <seconds> instead of a number of iterations",
    ),
    Spec::flag(
        "events",
        'e',
        "Sleep on completion events instead of polling (not for write tests)",
    ),
    Spec::value(
        "margin",
        'f',
        "margin",
        "Measure only within <margin> seconds from both ends of a -D run (default D/4)",
    ),
    Spec::flag(
        "CPU-freq",
        'F',
        "Accepted for compatibility (perftest's CPU frequency warning switch)",
    ),
    Spec::flag("help", 'h', "Show this help"),
    Spec::flag(
        "report-histogrm",
        'H',
        "Print every latency sample, sorted (latency tests)",
    ),
    Spec::value(
        "ib-port",
        'i',
        "port",
        "Use port <port> of the device (default 1)",
    ),
    Spec::value(
        "inline_size",
        'I',
        "size",
        "Send messages up to <size> bytes inline",
    ),
    Spec::value(
        "post_list",
        'l',
        "n",
        "Post lists of <n> send requests (BW tests)",
    ),
    Spec::value(
        "mtu",
        'm',
        "mtu",
        "Path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU)",
    ),
    Spec::value(
        "iters",
        'n',
        "n",
        "Number of iterations (default 5000 for write BW, else 1000)",
    ),
    Spec::flag(
        "noPeak",
        'N',
        "Do not compute the peak bandwidth (BW tests)",
    ),
    Spec::value(
        "outs",
        'o',
        "n",
        "Outstanding reads/atomics (default: the device's maximum)",
    ),
    Spec::value(
        "port",
        'p',
        "port",
        "TCP port of the out-of-band exchange (default 18515)",
    ),
    Spec::value("qp", 'q', "n", "Number of QPs (BW tests, default 1)"),
    Spec::value(
        "cq-mod",
        'Q',
        "n",
        "Completion moderation: one completion per <n> requests (default 100)",
    ),
    Spec::value(
        "rx-depth",
        'r',
        "n",
        "Receive queue depth (send tests, default 512)",
    ),
    Spec::value(
        "size",
        's',
        "size",
        "Message size in bytes; K and M suffixes multiply by 2^10 and 2^20",
    ),
    Spec::value("sl", 'S', "sl", "Service level (default 0)"),
    Spec::value(
        "tx-depth",
        't',
        "n",
        "Send queue depth (default 128 for BW, 1 for latency tests)",
    ),
    Spec::value(
        "qp-timeout",
        'u',
        "n",
        "QP ACK timeout exponent: 4.096 µs × 2^n (default 14)",
    ),
    Spec::flag(
        "report-unsorted",
        'U',
        "Print every latency sample in the order taken (latency tests)",
    ),
    Spec::flag("version", 'V', "Print the version and exit"),
    Spec::value(
        "gid-index",
        'x',
        "index",
        "GID index (default: the best one, scored as perftest does)",
    ),
    Spec::flag(
        "report_gbits",
        '\u{e000}',
        "Report bandwidth in Gb/s (10^9 bit/s) instead of MB/s (2^20 bytes/s)",
    ),
    Spec::flag(
        "report-both",
        '\u{e001}',
        "With -b, also print each side's results",
    ),
    Spec::flag(
        "out_json",
        '\u{e002}',
        "Also write the results to a file (perftest's JSON-like format)",
    ),
    Spec::value(
        "out_json_file",
        '\u{e003}',
        "file",
        "The file of --out_json (default perftest_out.json)",
    ),
    Spec::flag(
        "perform_warm_up",
        '\u{e004}',
        "Post a TX-depth burst before measuring (BW tests)",
    ),
    Spec::flag(
        "ipv6",
        '\u{e005}',
        "Prefer IPv6 GIDs when choosing the GID index",
    ),
    Spec::flag(
        "disable_pcie_relaxed",
        '\u{e006}',
        "Register memory without PCIe relaxed ordering",
    ),
    Spec::flag(
        "rdma_cm",
        'R',
        "Connect the QPs with rdma_cm, which also carries the exchange",
    ),
    Spec::value(
        "tclass",
        '\u{e007}',
        "value",
        "Traffic class of the GRH, where one is used (default 0)",
    ),
    Spec::value(
        "burst_size",
        '\u{e008}',
        "size",
        "Messages per burst of the rate limiter (default: the TX depth)",
    ),
    Spec::value(
        "typical_pkt_size",
        '\u{e009}',
        "bytes",
        "Typical packet size of a burst (PP rate limiter only)",
    ),
    Spec::value(
        "rate_limit",
        '\u{e00a}',
        "rate",
        "Most the QPs send, in --rate_units (default units Gb/s)",
    ),
    Spec::value(
        "rate_units",
        '\u{e00b}',
        "units",
        "[Mgp] Rate limit units: MiB/s (M), Gb/s (g, default) or packets/s (p; not with HW)",
    ),
    Spec::value(
        "rate_limit_type",
        '\u{e00c}',
        "type",
        "[HW/SW/PP] Rate limiter: the path's static rate (HW, default with --rate_limit), paced posts (SW) or packet pacing (PP)",
    ),
];

/// What the help says the tool is.
const ABOUT: &str = "perftest-compatible RDMA benchmark: no address = server, an address = client";
/// The operand, in the help.
const HOST: (&str, &str) = (
    "[host]...",
    "The server to connect to; none to be the server",
);

impl Args {
    /// Reads `args` (without the program name) as getopt_long does; repeated options: the
    /// last one wins. The first bad argument is the error, unless `-h` or `-V` comes
    /// before it: perftest acts on those where its option loop meets them, reading no
    /// further.
    pub fn parse(args: &[String]) -> Result<Args, GetoptError> {
        let long: Vec<LongOpt> = OPTIONS.iter().map(|s| s.opt).collect();
        let mut short = String::new();
        for s in OPTIONS.iter().filter(|s| s.short) {
            short.push(s.opt.val);
            if s.opt.has_arg == HasArg::Required {
                short.push(':');
            }
        }
        let parsed = getopt_long(args, &short, &long);
        let mut a = Args {
            hosts: parsed.operands,
            ..Args::default()
        };
        for item in parsed.items {
            let (letter, value) = match item {
                Item::Opt(letter, value) => (letter, value),
                Item::Error(err) => return Err(err),
            };
            match letter {
                'a' => a.all = true,
                'A' => a.atomic_type = value,
                'b' => a.bidirectional = true,
                'c' => a.connection = value,
                'd' => a.ib_dev = value,
                'D' => a.duration = value,
                'e' => a.events = true,
                'f' => a.margin = value,
                'F' => a.cpu_freq = true,
                'h' => {
                    a.help = true;
                    break;
                }
                'H' => a.histogram = true,
                'i' => a.ib_port = value,
                'I' => a.inline_size = value,
                'l' => a.post_list = value,
                'm' => a.mtu = value,
                'n' => a.iters = value,
                'N' => a.no_peak = true,
                'o' => a.outs = value,
                'p' => a.port = value,
                'q' => a.qp = value,
                'Q' => a.cq_mod = value,
                'r' => a.rx_depth = value,
                's' => a.size = value,
                'S' => a.sl = value,
                't' => a.tx_depth = value,
                'u' => a.qp_timeout = value,
                'U' => a.unsorted = true,
                'V' => {
                    a.version = true;
                    break;
                }
                'x' => a.gid_index = value,
                '\u{e000}' => a.report_gbits = true,
                '\u{e001}' => a.report_both = true,
                '\u{e002}' => a.out_json = true,
                '\u{e003}' => a.out_json_file = value,
                '\u{e004}' => a.perform_warm_up = true,
                '\u{e005}' => a.ipv6 = true,
                '\u{e006}' => a.disable_pcie_relaxed = true,
                'R' => a.rdma_cm = true,
                '\u{e007}' => a.tclass = value,
                '\u{e008}' => a.burst_size = value,
                '\u{e009}' => a.typical_pkt_size = value,
                '\u{e00a}' => a.rate_limit = value,
                '\u{e00b}' => a.rate_units = value,
                '\u{e00c}' => a.rate_limit_type = value,
                _ => {}
            }
        }
        Ok(a)
    }

    /// The help (`-h`) of the program `prog`.
    pub fn help(prog: &str) -> String {
        let left = |s: &Spec| {
            let letter = if s.short {
                format!("-{}, ", s.opt.val)
            } else {
                "    ".to_owned()
            };
            let value = s.value_name.map_or(String::new(), |v| format!(" <{v}>"));
            format!("{letter}--{}{value}", s.opt.name)
        };
        let width = OPTIONS
            .iter()
            .map(|s| left(s).chars().count())
            .max()
            .unwrap_or(0);
        let mut text = format!(
            "{ABOUT}\n\nUsage: {prog} [OPTIONS] {}\n\nArguments:\n  {}  {}\n\nOptions:\n",
            HOST.0, HOST.0, HOST.1
        );
        for s in OPTIONS {
            text.push_str(&format!("  {:<width$}  {}\n", left(s), s.help));
        }
        text
    }
}
