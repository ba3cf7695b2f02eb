//! The command line (`options`): perftest's options with edge values and random text.

use std::ffi::OsString;

use proptest::collection::vec;
use proptest::prelude::*;

use crate::fuzz::{argv, config, number_text};
use crate::perftest::options::{Command, Limiter, Options, ATOMIC_SIZE, MAX_INLINE_UD, MAX_SIZE};
use crate::perftest::types::{Conn, Test, Verb};

use super::test;

const SHORTS: &str = "aAbcdDefFhHiIlmnNopqQrsStuUVxzR";
const LONGS: &[&str] = &[
    "all",
    "atomic_type",
    "bidirectional",
    "connection",
    "ib-dev",
    "duration",
    "events",
    "margin",
    "CPU-freq",
    "help",
    "report-histogrm",
    "ib-port",
    "inline_size",
    "post_list",
    "mtu",
    "iters",
    "noPeak",
    "outs",
    "port",
    "qp",
    "cq-mod",
    "rx-depth",
    "size",
    "sl",
    "tx-depth",
    "qp-timeout",
    "report-unsorted",
    "version",
    "gid-index",
    "report_gbits",
    "report-both",
    "out_json",
    "out_json_file",
    "perform_warm_up",
    "ipv6",
    "disable_pcie_relaxed",
    "tclass",
    "rate_limit",
    "rate_units",
    "rate_limit_type",
    "burst_size",
    "typical_pkt_size",
    "bogus",
];
const WORDS: &[&str] = &[
    "RC",
    "UC",
    "UD",
    "XRC",
    "DC",
    "rc",
    "CMP_AND_SWAP",
    "FETCH_AND_ADD",
    "rxe0",
    "127.0.0.1",
    "localhost",
    "SW",
    "HW",
    "PP",
    "M",
    "g",
    "p",
    "2.5",
];

/// Options with values that are mostly in range, so that many command lines get past
/// getopt and the checks and the parameters can be checked.
fn plausible_args() -> impl Strategy<Value = Vec<OsString>> {
    let number = prop_oneof![
        0i64..=40,
        (0u32..25).prop_map(|k| 1i64 << k),
        prop::sample::select(vec![
            100, 128, 255, 256, 511, 512, 884, 885, 912, 913, 1000, 1024, 8192, 8193, 15000, 15001,
            16000, 16384, 16385, 20000, 20001, 65535, 65536, 65537,
        ]),
    ];
    let option = prop_oneof![
        3 => (prop::sample::select(vec!["-n", "-s", "-t", "-r", "-Q", "-l", "-q", "-D", "-f", "-I", "-m", "-o", "-x", "-u", "-S", "-i", "-p"]), number.clone())
            .prop_map(|(o, v)| vec![o.to_owned(), v.to_string()]),
        2 => prop::sample::select(vec!["-a", "-b", "-e", "-N", "-H", "-U", "-F", "--report_gbits", "--report-both", "--perform_warm_up", "--ipv6", "--disable_pcie_relaxed"])
            .prop_map(|o| vec![o.to_owned()]),
        1 => prop::sample::select(vec!["RC", "UC", "UD"]).prop_map(|c| vec!["-c".to_owned(), c.to_owned()]),
        1 => prop::sample::select(vec!["CMP_AND_SWAP", "FETCH_AND_ADD"]).prop_map(|c| vec!["-A".to_owned(), c.to_owned()]),
        1 => (prop::sample::select(vec!["--rate_limit", "--burst_size", "--tclass"]), number)
            .prop_map(|(o, v)| vec![o.to_owned(), v.to_string()]),
        1 => prop::sample::select(vec!["SW", "HW", "PP"]).prop_map(|t| vec!["--rate_limit_type".to_owned(), t.to_owned()]),
        1 => prop::sample::select(vec!["M", "g", "p"]).prop_map(|u| vec!["--rate_units".to_owned(), u.to_owned()]),
        1 => prop::sample::select(vec!["4K", "1M", "8M", "0x40"]).prop_map(|s| vec!["-s".to_owned(), s.to_owned()]),
        1 => Just(vec!["127.0.0.1".to_owned()]),
    ];
    vec(option, 0..6).prop_map(|args| args.into_iter().flatten().map(OsString::from).collect())
}

/// What the test loops and the device set-up rely on in options that parsed.
fn check_options(t: Test, o: &Options) -> Result<(), TestCaseError> {
    let verb = t.verb();
    let (size, q, tr) = (&o.size, &o.queues, &o.traffic);
    prop_assert!((1..=u64::from(u32::MAX / 2)).contains(&size.size));
    if verb == Verb::Atomic {
        prop_assert_eq!(size.size, ATOMIC_SIZE);
    } else if size.all {
        prop_assert_eq!(size.size, MAX_SIZE);
    }
    prop_assert!(q.tx_depth >= 1 && q.rx_depth >= 1);
    // A completion is asked for every cq_mod posts of post_list requests: both must fit
    // in the send queue, or the window never moves.
    prop_assert!(
        (1..=q.tx_depth).contains(&q.cq_mod),
        "cq_mod {} tx_depth {}",
        q.cq_mod,
        q.tx_depth
    );
    prop_assert!(
        (1..=q.tx_depth).contains(&q.post_list),
        "post_list {} tx_depth {}",
        q.post_list,
        q.tx_depth
    );
    if q.post_list > 1 {
        prop_assert!(t.is_bw());
        prop_assert_eq!(q.post_list % q.cq_mod, 0);
    }
    match tr.duration {
        Some(d) => {
            prop_assert_eq!(tr.iters, 0);
            prop_assert!(u64::from(d.seconds) > 2 * u64::from(d.margin));
            prop_assert!(o.report.no_peak && !q.events && !size.all);
        }
        None => {
            prop_assert!((5..=100_000_000).contains(&tr.iters));
            prop_assert!(u64::from(q.tx_depth) <= tr.iters);
            prop_assert_eq!(tr.iters % u64::from(q.post_list), 0);
        }
    }
    prop_assert!((1..=16384).contains(&q.num_qps));
    if !t.is_bw() {
        prop_assert!(q.num_qps == 1 && !tr.duplex);
    }
    if verb == Verb::Send {
        prop_assert!(size.all || q.rx_depth % 2 == 0);
    } else {
        prop_assert_eq!(q.rx_depth, 1);
    }
    match o.conn {
        Conn::Ud => prop_assert_eq!(verb, Verb::Send),
        Conn::Uc => prop_assert!(matches!(verb, Verb::Send | Verb::Write)),
        Conn::Rc => {}
    }
    let d = &o.device;
    if let Some(i) = d.inline_size {
        prop_assert!(i <= 912 && !matches!(verb, Verb::Read | Verb::Atomic));
        prop_assert!(o.conn != Conn::Ud || i <= MAX_INLINE_UD);
    }
    prop_assert!(!(q.events && verb == Verb::Write));
    let c = &o.connection;
    prop_assert!(c.port >= 1 && d.ib_port >= 1 && c.sl <= 15);
    prop_assert!(d.gid_index.map_or(true, |g| g <= 64));
    // A limiter that paces has a rate and a burst, and never runs on a test it cannot.
    if let Some(r) = &o.qos.rate_limit {
        prop_assert!(r.burst >= 1);
        if r.limiter == Limiter::Sw {
            prop_assert!(r.rate > 0.0 && o.test.is_bw() && verb != Verb::Atomic);
        }
        prop_assert!(r.limiter != Limiter::Pp);
    }
    Ok(())
}

/// Parses `args` for `t` (program name first); `None` for `-h` and `-V`.
fn parse(t: Test, argv: &[OsString]) -> Result<Option<Options>, TestCaseError> {
    match Options::parse(t, argv) {
        Ok(Command::Run(p)) => {
            check_options(t, &p)?;
            Ok(Some(*p))
        }
        Ok(Command::Print(text)) => {
            prop_assert!(
                text == "Version: 6.06\n" || text.contains("Usage:"),
                "{text}"
            );
            Ok(None)
        }
        Err(e) => {
            prop_assert!(!e.to_string().trim().is_empty());
            Ok(None)
        }
    }
}

/// Any `i64`, often a small one or an extreme.
fn edgy_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        any::<i64>(),
        -10i64..5000,
        0i64..200_000_000,
        prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            i64::MAX,
            i64::from(u32::MAX / 2)
        ]),
    ]
}

fn with_prog(t: Test, args: Vec<OsString>) -> Vec<OsString> {
    std::iter::once(OsString::from(t.name()))
        .chain(args)
        .collect()
}

proptest! {
    #![proptest_config(config(256))]

    /// Any command line of any of the eight tools is parameters that hold what the test
    /// relies on, a text to print, or an error with a message.
    #[test]
    fn params_take_any_argv(
        (t, argv) in test().prop_flat_map(|t| (Just(t), argv(t.name(), SHORTS, LONGS, WORDS))),
    ) {
        parse(t, &argv)?;
    }

    /// Plausible command lines (options with values around their limits), which often
    /// parse: the parameters hold what the test relies on.
    #[test]
    fn params_of_plausible_argv(t in test(), args in plausible_args()) {
        parse(t, &with_prog(t, args))?;
    }

    /// `-n` takes C integers (decimal, hex, octal) from 5 to 10^8 and nothing else.
    #[test]
    fn iterations_are_c_integers(
        v in edgy_i64(),
        form in 0..6u8,
        prefix in "[g-z.]{1,2}",
        suffix in "[g-z.+ -]{1,2}",
    ) {
        let (text, integer) = match form {
            0 => (v.to_string(), Some(v)),
            1 if v >= 0 => (format!("{v:#x}"), Some(v)),
            2 if v > 0 => (format!("0{v:o}"), Some(v)),
            // "-5" is out of range, "--5" no number.
            3 => (format!("-{v}"), None),
            4 => (format!("{v}{suffix}"), None),
            _ => (format!("{prefix}{v}"), None),
        };
        let argv = with_prog(Test::WriteBw, vec![format!("--iters={text}").into()]);
        let p = parse(Test::WriteBw, &argv)?;
        let expected = integer.filter(|n| (5..=100_000_000).contains(n));
        prop_assert_eq!(p.map(|p| p.traffic.iters as i64), expected, "{}", text);
    }

    /// `-s` takes a C integer with an optional K or M suffix, from 1 to 2^31 - 1 bytes.
    #[test]
    fn sizes_are_c_integers_with_suffixes(v in edgy_i64(), suffix in 0..3usize) {
        let (letter, factor) = [("", 1i128), ("K", 1024), ("M", 1 << 20)][suffix];
        let argv = with_prog(Test::WriteBw, vec![format!("--size={v}{letter}").into()]);
        let p = parse(Test::WriteBw, &argv)?;
        let bytes = i128::from(v) * factor;
        let expected = (1..=i128::from(u32::MAX / 2)).contains(&bytes).then_some(bytes as u64);
        prop_assert_eq!(p.map(|p| p.size.size), expected);
    }

    /// Any text as the value of any option taking one is a value or a clear error.
    #[test]
    fn any_value_of_any_option(
        t in test(),
        option in prop::sample::select(vec!["-A", "-c", "-d", "-D", "-f", "-i", "-I", "-l", "-m", "-n", "-o", "-p", "-q", "-Q", "-r", "-s", "-S", "-t", "-u", "-x", "--out_json_file", "--tclass", "--rate_limit", "--rate_units", "--rate_limit_type", "--burst_size", "--typical_pkt_size"]),
        value in prop_oneof![number_text(), "[ -~]{0,12}"],
    ) {
        let argv = with_prog(t, vec![option.into(), value.into()]);
        parse(t, &argv)?;
    }
}
