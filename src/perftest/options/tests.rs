//! The command line's tests: perftest's defaults, dependencies, refusals and help.

use std::ffi::OsString;

use super::number::c_int;
use super::*;

fn options(test: Test, args: &[&str]) -> Result<Options> {
    let argv: Vec<OsString> = std::iter::once(test.name())
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect();
    match Options::parse(test, &argv)? {
        Command::Run(p) => Ok(*p),
        Command::Print(text) => Err(Error::new(text)),
    }
}

#[test]
fn defaults_like_perftest() {
    let p = options(Test::WriteBw, &[]).unwrap();
    assert_eq!(
        (
            p.size.size,
            p.traffic.iters,
            p.queues.tx_depth,
            p.queues.cq_mod
        ),
        (65536, 5000, 128, 1)
    );
    assert_eq!(
        (p.connection.port, p.device.ib_port, p.connection.qp_timeout),
        (18515, 1, 14)
    );
    assert!(!p.report.no_peak && !p.connection.is_client() && p.device.relaxed_ordering);
    let p = options(Test::SendBw, &["-s", "4096", "host"]).unwrap();
    assert_eq!(
        (p.traffic.iters, p.queues.cq_mod, p.queues.rx_depth),
        (1000, 100, 512)
    );
    assert!(!p.report.no_peak && p.connection.is_client());
    // The server of a send BW test reports no peak.
    assert!(options(Test::SendBw, &[]).unwrap().report.no_peak);
    let p = options(Test::SendLat, &[]).unwrap();
    assert_eq!(
        (
            p.size.size,
            p.traffic.iters,
            p.queues.tx_depth,
            p.queues.cq_mod
        ),
        (2, 1000, 1, 1)
    );
    let p = options(Test::AtomicLat, &[]).unwrap();
    assert_eq!(p.size.size, 8);
    assert_eq!(p.traffic.atomic, AtomicOp::FetchAndAdd);
    assert!(
        !options(Test::WriteLat, &[])
            .unwrap()
            .device
            .relaxed_ordering
    );
    assert!(options(Test::SendBw, &["-R"]).unwrap().connection.rdma_cm);
    assert!(
        options(Test::SendBw, &["--rdma_cm", "-c", "UD"])
            .unwrap()
            .connection
            .rdma_cm
    );
    let uc = options(Test::WriteBw, &["-R", "-c", "UC"]).unwrap_err();
    assert!(uc.to_string().contains("UC is not supported in librdmacm"));
}

#[test]
fn dependencies() {
    // Depths are capped by the iterations; odd receive depths are made even.
    let p = options(Test::SendBw, &["-n", "101", "-s", "64"]).unwrap();
    assert_eq!((p.queues.tx_depth, p.queues.rx_depth), (101, 102));
    // Large messages disable moderation unless asked for.
    let p = options(Test::WriteBw, &["-s", "8193", "-Q", "4"]).unwrap();
    assert_eq!(p.queues.cq_mod, 4);
    assert!(p.notes.contains("Warning: Large message"));
    // Post lists set the moderation.
    let p = options(Test::WriteBw, &["-l", "10", "-n", "100", "-s", "64"]).unwrap();
    assert_eq!(p.queues.cq_mod, 10);
    assert!(p.notes.ends_with("size of the post list\n"));
    assert!(options(Test::WriteBw, &["-l", "3", "-n", "100"]).is_err());
    // Duration mode: no iterations, no peak, margin D/4.
    let p = options(Test::ReadBw, &["-D", "8"]).unwrap();
    let timed = Timed {
        seconds: 8,
        margin: 2,
    };
    assert_eq!((p.traffic.iters, p.traffic.duration), (0, Some(timed)));
    assert!(p.report.no_peak);
    assert!(options(Test::ReadBw, &["-D", "4", "-f", "2"]).is_err());
    // More than 20000 iterations: no peak.
    assert!(
        options(Test::WriteBw, &["-n", "20001", "x"])
            .unwrap()
            .report
            .no_peak
    );
    // UD/UC receive depth follows the iterations.
    let p = options(Test::SendBw, &["-c", "UD", "-n", "3000", "x"]).unwrap();
    assert_eq!(p.queues.rx_depth, 3000);
    let p = options(Test::SendLat, &["-a"]).unwrap();
    assert_eq!(p.size.size, MAX_SIZE);
    assert!(p.size.all);
}

#[test]
fn c_number_syntax_and_suffixes() {
    assert_eq!(c_int("0x10"), Some(16));
    assert_eq!(c_int("010"), Some(8));
    assert_eq!(c_int("12a"), None);
    assert_eq!(c_int(""), None);
    assert_eq!(c_int(" -0x10"), Some(-16));
    assert_eq!(c_int("-9223372036854775808"), Some(i64::MIN));
    assert_eq!(c_int("9223372036854775808"), None);
    // A second sign is no number (this one overflowed when negated).
    for text in [
        "--9223372036854775808",
        "--5",
        "+-5",
        "-+5",
        "0x-5",
        "0x+5",
        "0-5",
    ] {
        assert_eq!(c_int(text), None, "{text}");
    }
    let size = |args: &[&str]| options(Test::WriteBw, args).unwrap().size;
    assert_eq!(size(&["-s", "4K"]).size, 4096);
    assert_eq!(size(&["-s2M"]).size, 2 << 20);
    assert_eq!(size(&["--size=0x100"]).size, 256);
    assert_eq!(size(&["--siz", "64"]).size, 64);
    assert!(size(&["-s", "64"]).given && !size(&[]).given);
}

#[test]
fn rejected_like_perftest() {
    for (test, args) in [
        (Test::WriteBw, &["-n", "4"][..]),
        (Test::WriteBw, &["-n", "lots"]),
        (Test::WriteBw, &["-e"]),
        (Test::WriteBw, &["-s", "0"]),
        (Test::WriteBw, &["-s", "4G"]),
        (Test::WriteBw, &["-H"]),
        (Test::WriteBw, &["a", "b"]),
        (Test::WriteBw, &["-c", "UD"]),
        (Test::WriteBw, &["-c", "XRC"]),
        (Test::WriteBw, &["-A", "CMP_AND_SWAP"]),
        (Test::WriteBw, &["--bogus"]),
        (Test::ReadBw, &["-c", "UC"]),
        (Test::ReadBw, &["-I", "64"]),
        (Test::AtomicBw, &["-s", "16"]),
        (Test::AtomicLat, &["-A", "SWAP"]),
        (Test::SendLat, &["-b"]),
        (Test::SendLat, &["-q", "2"]),
        (Test::SendLat, &["-l", "2"]),
        (Test::SendBw, &["-D", "5", "-e"]),
        (Test::SendBw, &["-I", "1000"]),
        (Test::WriteBw, &["--iters=--5"]),
        (Test::WriteBw, &["--iters=--9223372036854775808"]),
        // Lists longer than the send queue (the default 128, or -t) could never be posted.
        (Test::SendBw, &["-l", "1000"]),
        (Test::WriteBw, &["-l", "256", "-D", "1"]),
        (Test::WriteBw, &["-l", "10", "-t", "5", "-n", "100"]),
    ] {
        assert!(options(test, args).is_err(), "{} {args:?}", test.name());
    }
}

#[test]
fn help_as_before() {
    // As clap rendered it before the tools moved onto one getopt parser.
    let golden = HELP.replace("{prog}", "ib_write_bw");
    assert_eq!(Args::help("ib_write_bw"), golden);
}

#[test]
fn help_and_version_print() {
    let argv: Vec<OsString> = ["ib_write_bw", "-V"].iter().map(OsString::from).collect();
    assert!(
        matches!(Options::parse(Test::WriteBw, &argv), Ok(Command::Print(v)) if v == "Version: 6.06\n")
    );
    let argv: Vec<OsString> = ["ib_write_bw", "-h"].iter().map(OsString::from).collect();
    assert!(
        matches!(Options::parse(Test::WriteBw, &argv), Ok(Command::Print(h)) if h.contains("--size"))
    );
    // Where the option loop meets them, as perftest: a bad option after them is never
    // read, one before them is the error.
    let parse = |args: &[&str]| {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        Options::parse(Test::WriteBw, &argv)
    };
    assert!(matches!(
        parse(&["ib_write_bw", "-h", "--bogus"]),
        Ok(Command::Print(_))
    ));
    assert!(matches!(
        parse(&["ib_write_bw", "-V", "-Z"]),
        Ok(Command::Print(_))
    ));
    assert!(parse(&["ib_write_bw", "--bogus", "-h"]).is_err());
}

/// The error of `args` on `test`, as printed.
fn refusal(test: Test, args: &[&str]) -> String {
    options(test, args).unwrap_err().to_string()
}

#[test]
fn rate_limiters_like_perftest() {
    let p = options(
        Test::WriteBw,
        &["--rate_limit=2.5", "--rate_units=g", "--tclass=96"],
    )
    .unwrap();
    let limit = p.qos.rate_limit.unwrap();
    // --rate_limit alone asks for HW; the burst is the TX depth.
    assert_eq!(limit.limiter, Limiter::Hw { explicit: false });
    assert_eq!((limit.burst, limit.rate, p.qos.tclass), (128, 2.5, 96));
    let p = options(
        Test::WriteBw,
        &["--rate_limit", "1", "--rate_limit_type", "SW"],
    )
    .unwrap();
    assert_eq!(p.stderr_notes, " Setting burst size to tx depth = 128\n");
    let limit = p.qos.rate_limit.unwrap();
    assert_eq!(limit.limiter, Limiter::Sw);
    // 1 Gb/s of 64 KiB messages; 10 MiB/s of 1 MiB messages; packets as they are.
    assert_eq!(limit.per_second(65536), 1e9 / (65536.0 * 8.0));
    let p = options(
        Test::SendBw,
        &[
            "--rate_limit=10",
            "--rate_units=M",
            "--rate_limit_type=SW",
            "--burst_size=4",
        ],
    )
    .unwrap();
    let limit = p.qos.rate_limit.unwrap();
    assert_eq!((limit.burst, limit.per_second(1 << 20)), (4, 10.0));
    assert!(p.stderr_notes.is_empty());
    assert!(options(Test::WriteBw, &[])
        .unwrap()
        .qos
        .rate_limit
        .is_none());
    for (test, args, error) in [
        (Test::WriteBw, &["--rate_limit=0"][..], " Rate limit must be non-negative floating point number"),
        (Test::WriteBw, &["--rate_units=G"], " Invalid rate limit units. Please use M,g or p"),
        (Test::WriteBw, &["--rate_limit_type=sw"], " Invalid rate limit type flag. Please use HW, SW or PP."),
        (Test::WriteBw, &["--burst_size=8"], " Can't enable burst mode when rate limiter is off"),
        (Test::WriteBw, &["--rate_limit=1", "--typical_pkt_size=1500"], " Typical packet size only supports PP rate limiter"),
        (Test::WriteLat, &["--rate_limit=1", "--rate_limit_type=SW"], "SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND / SEND_IMM tests"),
        (Test::SendBw, &["-b", "--rate_limit=1", "--rate_limit_type=SW"], "SW Rate limiter cann't"),
        (Test::WriteBw, &["--rate_limit_type=SW"], " Must specify a rate limit when using the SW rate limiter."),
        (Test::WriteBw, &["--rate_limit=5", "--rate_units=p"], " Failed: pps rate limit units is not supported when setting HW rate limit"),
        (Test::WriteBw, &["--rate_limit=3"], " Failed: Unknown rate limit value"),
        (Test::WriteBw, &["-R", "--rate_limit=10"], " HW rate limit isn't supported yet with rdma_cm scenarios"),
        (Test::WriteBw, &["--rate_limit=10", "--rate_limit_type=PP"], "Packet Pacing is only supported for Raw Ethernet."),
        (Test::WriteBw, &["--tclass=256"], " traffic class should be between 0 and 255"),
    ] {
        let got = refusal(test, args);
        assert!(got.contains(error), "{args:?}: {got}");
    }
}

const HELP: &str = r#"perftest-compatible RDMA benchmark: no address = server, an address = client

Usage: {prog} [OPTIONS] [host]...

Arguments:
  [host]...  The server to connect to; none to be the server

Options:
  -a, --all                       Run sizes from 2 to 2^23 bytes
  -A, --atomic_type <type>        Atomic operation: CMP_AND_SWAP or FETCH_AND_ADD (default FETCH_AND_ADD)
  -b, --bidirectional             Measure bidirectional bandwidth (BW tests)
  -c, --connection <RC/UC/UD>     Connection type: RC, UC (send, write) or UD (send) (default RC)
  -d, --ib-dev <dev>              Use RDMA device <dev> (default: the first one)
  -D, --duration <seconds>        Run for <seconds> instead of a number of iterations
  -e, --events                    Sleep on completion events instead of polling (not for write tests)
  -f, --margin <margin>           Measure only within <margin> seconds from both ends of a -D run (default D/4)
  -F, --CPU-freq                  Accepted for compatibility (perftest's CPU frequency warning switch)
  -h, --help                      Show this help
  -H, --report-histogrm           Print every latency sample, sorted (latency tests)
  -i, --ib-port <port>            Use port <port> of the device (default 1)
  -I, --inline_size <size>        Send messages up to <size> bytes inline
  -l, --post_list <n>             Post lists of <n> send requests (BW tests)
  -m, --mtu <mtu>                 Path MTU: 256, 512, 1024, 2048 or 4096 (default: the port's active MTU)
  -n, --iters <n>                 Number of iterations (default 5000 for write BW, else 1000)
  -N, --noPeak                    Do not compute the peak bandwidth (BW tests)
  -o, --outs <n>                  Outstanding reads/atomics (default: the device's maximum)
  -p, --port <port>               TCP port of the out-of-band exchange (default 18515)
  -q, --qp <n>                    Number of QPs (BW tests, default 1)
  -Q, --cq-mod <n>                Completion moderation: one completion per <n> requests (default 100)
  -r, --rx-depth <n>              Receive queue depth (send tests, default 512)
  -s, --size <size>               Message size in bytes; K and M suffixes multiply by 2^10 and 2^20
  -S, --sl <sl>                   Service level (default 0)
  -t, --tx-depth <n>              Send queue depth (default 128 for BW, 1 for latency tests)
  -u, --qp-timeout <n>            QP ACK timeout exponent: 4.096 µs × 2^n (default 14)
  -U, --report-unsorted           Print every latency sample in the order taken (latency tests)
  -V, --version                   Print the version and exit
  -x, --gid-index <index>         GID index (default: the best one, scored as perftest does)
      --report_gbits              Report bandwidth in Gb/s (10^9 bit/s) instead of MB/s (2^20 bytes/s)
      --report-both               With -b, also print each side's results
      --out_json                  Also write the results to a file (perftest's JSON-like format)
      --out_json_file <file>      The file of --out_json (default perftest_out.json)
      --perform_warm_up           Post a TX-depth burst before measuring (BW tests)
      --ipv6                      Prefer IPv6 GIDs when choosing the GID index
      --disable_pcie_relaxed      Register memory without PCIe relaxed ordering
  -R, --rdma_cm                   Connect the QPs with rdma_cm, which also carries the exchange
      --tclass <value>            Traffic class of the GRH, where one is used (default 0)
      --burst_size <size>         Messages per burst of the rate limiter (default: the TX depth)
      --typical_pkt_size <bytes>  Typical packet size of a burst (PP rate limiter only)
      --rate_limit <rate>         Most the QPs send, in --rate_units (default units Gb/s)
      --rate_units <units>        [Mgp] Rate limit units: MiB/s (M), Gb/s (g, default) or packets/s (p; not with HW)
      --rate_limit_type <type>    [HW/SW/PP] Rate limiter: the path's static rate (HW, default with --rate_limit), paced posts (SW) or packet pacing (PP)
"#;
