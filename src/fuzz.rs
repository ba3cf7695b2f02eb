//! Bounded fuzzing (proptest) of the device tools' command lines: `ibv_devinfo` and
//! `ibstat` argument vectors built from their real options, C number syntax and random
//! text, and `strtol`. `perftest::fuzz` has the perftest tools' wire format and options.
//!
//! Each property runs [`config`]'s number of cases (`PROPTEST_CASES` overrides it), with a
//! new random seed per run; a failure prints its minimal input, which becomes a unit test
//! beside the code it broke.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::cli::strtol;
use crate::devinfo::options::{self as devinfo, Command as DevinfoCommand};
use crate::ibstat::options::{self as ibstat, Command as IbstatCommand};

/// The proptest configuration of the fuzz properties: `cases` cases unless
/// `PROPTEST_CASES` says otherwise, and no failure files (tests run in a VM whose file
/// system is read-only outside the target directory).
pub(crate) fn config(cases: u32) -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Number-like text where C number parsing has its edges: signs, bases, overflow, suffixes,
/// white space, and any `i64` in decimal, hex and octal.
pub(crate) fn number_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0",
            "1",
            "-1",
            "+1",
            "5",
            "255",
            "256",
            "257",
            "65535",
            "65536",
            "2147483647",
            "2147483648",
            "4294967295",
            "4294967297",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "--9223372036854775808",
            "99999999999999999999999",
            "0x",
            "0x10",
            "0X1F",
            "0xg",
            "0x-5",
            "0-5",
            "010",
            "09",
            "--5",
            "-+5",
            "+-5",
            " 7",
            "\t-7",
            "7 ",
            "1e3",
            "12a",
            "",
            "-",
            "+",
            "4K",
            "2M",
            "8M",
            "K",
            "M",
            "0x10K",
        ])
        .prop_map(str::to_owned),
        any::<i64>().prop_map(|v| v.to_string()),
        any::<i64>().prop_map(|v| format!("{v:#x}")),
        any::<u64>().prop_map(|v| format!("0{v:o}")),
        (-300i64..300).prop_map(|v| v.to_string()),
    ]
}

/// Random text, ASCII-heavy, sometimes any Unicode.
pub(crate) fn junk_text() -> impl Strategy<Value = String> {
    prop_oneof!["[ -~]{0,12}", ".{0,8}"]
}

/// An argument that is not UTF-8 (as a Unix `argv` can have).
pub(crate) fn non_utf8() -> impl Strategy<Value = OsString> {
    vec(any::<u8>(), 0..8).prop_map(|mut b| {
        b.push(0xff);
        OsString::from_vec(b)
    })
}

/// A long option written as any prefix of itself (`--ib`, `--ib-d`), as getopt_long accepts
/// it when it is unambiguous.
pub(crate) fn long_prefix(longs: &'static [&'static str]) -> impl Strategy<Value = String> {
    (prop::sample::select(longs), 0.0..1.0f64).prop_map(|(long, f)| {
        let keep = 1 + ((long.len() - 1) as f64 * f) as usize;
        format!("--{}", &long[..keep])
    })
}

/// One option of a command line, with or without a value, in every form getopt takes:
/// `-x V`, `-xV`, `--long V`, `--long=V`, clusters, and some junk.
pub(crate) fn tokens(
    shorts: &'static str,
    longs: &'static [&'static str],
    words: &'static [&'static str],
) -> impl Strategy<Value = Vec<OsString>> {
    let letter = prop::sample::select(shorts.chars().collect::<Vec<_>>());
    let value = prop_oneof![
        3 => number_text(),
        2 => prop::sample::select(words).prop_map(str::to_owned),
        1 => junk_text(),
    ];
    let os = |v: Vec<String>| v.into_iter().map(OsString::from).collect::<Vec<_>>();
    prop_oneof![
        3 => letter.clone().prop_map(move |c| os(vec![format!("-{c}")])),
        3 => (letter.clone(), value.clone()).prop_map(move |(c, v)| os(vec![format!("-{c}"), v])),
        2 => (letter.clone(), value.clone()).prop_map(move |(c, v)| os(vec![format!("-{c}{v}")])),
        2 => vec(letter, 2..5).prop_map(move |cs| os(vec![format!("-{}", cs.into_iter().collect::<String>())])),
        2 => long_prefix(longs).prop_map(move |l| os(vec![l])),
        2 => (long_prefix(longs), value.clone()).prop_map(move |(l, v)| os(vec![l, v])),
        2 => (long_prefix(longs), value.clone()).prop_map(move |(l, v)| os(vec![format!("{l}={v}")])),
        2 => value.prop_map(move |v| os(vec![v])),
        1 => prop::sample::select(vec!["-", "--", "---", "-=", "--=", "-\u{e9}", "--\u{e9}"])
            .prop_map(move |s| os(vec![s.to_owned()])),
        1 => (1usize..300).prop_map(move |n| os(vec![format!("-{}", "v".repeat(n))])),
        1 => non_utf8().prop_map(|a| vec![a]),
    ]
}

/// An `argv`: a program name (usually the tool's) and up to 8 [`tokens`]; now and then
/// none at all.
pub(crate) fn argv(
    prog: &'static str,
    shorts: &'static str,
    longs: &'static [&'static str],
    words: &'static [&'static str],
) -> impl Strategy<Value = Vec<OsString>> {
    let name = prop_oneof![
        8 => Just(OsString::from(prog)),
        1 => Just(OsString::from(format!("/usr/bin/{prog}"))),
        1 => junk_text().prop_map(OsString::from),
    ];
    prop_oneof![
        20 => (name, vec(tokens(shorts, longs, words), 0..8)).prop_map(|(name, tokens)| {
            std::iter::once(name).chain(tokens.into_iter().flatten()).collect()
        }),
        1 => Just(Vec::new()),
    ]
}

/// The program name the tools print in their messages for `argv`.
fn prog(argv: &[OsString], default: &str) -> String {
    crate::cli::prog_name(argv, default)
}

const DEVINFO_LONGS: &[&str] = &["ib-dev", "ib-port", "list", "verbose"];
const IBSTAT_LONGS: &[&str] = &[
    "list_of_cas",
    "short",
    "port_list",
    "config",
    "verbose",
    "debug",
    "help",
    "version",
];
const WORDS: &[&str] = &["rxe0", "mlx5_0", "1", "2", "-1", "-l", "-V", "--list"];

/// One piece of a well-formed `ibv_devinfo` command line, for the model below.
#[derive(Clone, Debug)]
enum DevinfoArg {
    Dev(String),
    Port(i64),
    List,
    Verbose,
    Operand(String),
}

/// One piece of a well-formed `ibstat` command line, for the model below.
#[derive(Clone, Debug)]
enum IbstatArg {
    Flag(char),
    Config(String),
    Operand(String),
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,7}"
}

proptest! {
    #![proptest_config(config(256))]

    /// `strtol` reads back every `long` it is given in decimal, hex and octal.
    #[test]
    fn strtol_reads_every_long(v in any::<i64>()) {
        prop_assert_eq!(strtol(&v.to_string()), v);
        let magnitude = v.unsigned_abs();
        let sign = if v < 0 { "-" } else { "" };
        prop_assert_eq!(strtol(&format!("{sign}0x{magnitude:x}")), v);
        prop_assert_eq!(strtol(&format!("{sign}0{magnitude:o}")), v);
    }

    /// `strtol` clamps decimal numbers beyond the `long` range and stops at the first
    /// character that is not a digit.
    #[test]
    fn strtol_clamps_and_stops(v in any::<i128>(), tail in "[g-z :.-]{0,4}") {
        let expected = v.clamp(i64::MIN.into(), i64::MAX.into()) as i64;
        prop_assert_eq!(strtol(&format!("{v}{tail}")), expected);
    }

    /// `strtol` takes any text.
    #[test]
    fn strtol_takes_any_text(s in prop_oneof![number_text(), junk_text()]) {
        strtol(&s);
    }

    /// Any `ibv_devinfo` command line is a command; a bad option is a getopt-style message
    /// naming the program.
    #[test]
    fn devinfo_takes_any_argv(argv in argv("ibv_devinfo", "dilvxh", DEVINFO_LONGS, WORDS)) {
        match devinfo::parse(&argv) {
            DevinfoCommand::Usage { status, message } => {
                prop_assert!(status == 1 || status == -1);
                if let Some(m) = message {
                    let prefix = format!("{}: ", prog(&argv, "ibv_devinfo"));
                    prop_assert!(m.starts_with(&prefix) && m.len() > prefix.len(), "{m:?}");
                }
            }
            DevinfoCommand::List | DevinfoCommand::Show { .. } => {}
        }
    }

    /// Well-formed `ibv_devinfo` command lines do what the C tool's getopt loop does: `-l`
    /// lists unless a port that is not positive comes first (then the usage), else the
    /// last `-d` and `-i` (truncated to 8 bits) count.
    #[test]
    fn devinfo_model(args in vec(prop_oneof![
        name().prop_map(DevinfoArg::Dev),
        prop_oneof![any::<i64>(), -3i64..300].prop_map(DevinfoArg::Port),
        Just(DevinfoArg::List),
        Just(DevinfoArg::Verbose),
        name().prop_map(DevinfoArg::Operand),
    ], 0..8)) {
        let mut argv = vec![OsString::from("ibv_devinfo")];
        let (mut device, mut port, mut verbose) = (None, 0u8, false);
        let mut expected = None;
        for a in &args {
            match a {
                DevinfoArg::Dev(d) => {
                    argv.extend(["-d".into(), d.into()]);
                    device = Some(d.clone());
                }
                DevinfoArg::Port(p) => {
                    argv.extend(["-i".into(), p.to_string().into()]);
                    let p = *p as i32;
                    if p <= 0 && expected.is_none() {
                        expected = Some(DevinfoCommand::Usage { status: 1, message: None });
                    }
                    port = p as u8;
                }
                DevinfoArg::List => {
                    argv.push("-l".into());
                    expected.get_or_insert(DevinfoCommand::List);
                }
                DevinfoArg::Verbose => {
                    argv.push("-v".into());
                    verbose = true;
                }
                DevinfoArg::Operand(o) => argv.push(o.into()),
            }
        }
        let expected = expected.unwrap_or(DevinfoCommand::Show { device, port, verbose });
        prop_assert_eq!(devinfo::parse(&argv), expected);
    }

    /// Any `ibstat` command line is a command; a bad option is a getopt-style message
    /// naming the program.
    #[test]
    fn ibstat_takes_any_argv(argv in argv("ibstat", "lspzvdhVx", IBSTAT_LONGS, WORDS)) {
        if let IbstatCommand::Usage { message: Some(m) } = ibstat::parse(&argv) {
            let prefix = format!("{}: ", prog(&argv, "ibstat"));
            prop_assert!(m.starts_with(&prefix) && m.len() > prefix.len(), "{m:?}");
        }
    }

    /// Well-formed `ibstat` command lines do what the C tool does: the first of `-h` and
    /// `-V` acts, else the first two operands are the device and the port (`strtol`, as
    /// an int).
    #[test]
    fn ibstat_model(args in vec(prop_oneof![
        4 => prop::sample::select(vec!['l', 's', 'p', 'v', 'd']).prop_map(IbstatArg::Flag),
        1 => prop::sample::select(vec!['h', 'V']).prop_map(IbstatArg::Flag),
        1 => name().prop_map(IbstatArg::Config),
        3 => prop_oneof![name(), any::<u64>().prop_map(|v| v.to_string())]
            .prop_map(IbstatArg::Operand),
    ], 0..8)) {
        let mut argv = vec![OsString::from("ibstat")];
        let mut acting = None;
        let mut flags = String::new();
        let mut operands = Vec::new();
        for a in &args {
            match a {
                IbstatArg::Flag(c) => {
                    argv.push(format!("-{c}").into());
                    flags.push(*c);
                    if matches!(c, 'h' | 'V') {
                        acting.get_or_insert(*c);
                    }
                }
                IbstatArg::Config(f) => argv.extend(["-z".into(), f.into()]),
                IbstatArg::Operand(o) => {
                    argv.push(o.into());
                    operands.push(o.clone());
                }
            }
        }
        let expected = match acting {
            Some('h') => IbstatCommand::Usage { message: None },
            Some(_) => IbstatCommand::Version,
            None => IbstatCommand::Show {
                ca: operands.first().cloned(),
                port: operands.get(1).map_or(-1, |p| strtol(p) as i32),
                list: flags.contains('l'),
                short: flags.contains('s'),
                port_list: flags.contains('p'),
            },
        };
        prop_assert_eq!(ibstat::parse(&argv), expected);
    }
}

/// The option table of the differential property below: names sharing prefixes (some of
/// options that mean the same, which glibc does not call ambiguous), values required and
/// optional, and a long-only option.
const GETOPT_LONGS: &[crate::cli::LongOpt] = {
    use crate::cli::{HasArg, LongOpt};
    &[
        LongOpt::value("ib-dev", 'd'),
        LongOpt::value("ib-port", 'i'),
        LongOpt::flag("verbose", 'v'),
        LongOpt::flag("version", 'V'),
        LongOpt::flag("verbosely", 'v'),
        LongOpt::flag("list", 'l'),
        LongOpt {
            name: "opt",
            has_arg: HasArg::Optional,
            val: 'o',
        },
        LongOpt::flag("long-only", '\u{e000}'),
    ]
};
const GETOPT_SHORTS: &str = "d:i:vVlo::x";
const GETOPT_NAMES: &[&str] = &[
    "ib-dev",
    "ib-port",
    "verbose",
    "version",
    "verbosely",
    "list",
    "opt",
    "long-only",
    "bogus",
];

/// What glibc's `getopt_long` returns for `args` (the program name first): each return
/// value with its `optarg` (`optopt` for `?`, where it stops), then the operands as the
/// permuted `argv` holds them after `optind` (only if no error).
fn glibc_getopt_long(
    args: &[String],
    optstring: &str,
    longopts: &[crate::cli::LongOpt],
) -> (Vec<(u32, Option<String>)>, Vec<String>) {
    use std::ffi::{c_char, c_int, CStr, CString};
    use std::sync::Mutex;

    use crate::cli::HasArg;

    extern "C" {
        static mut optarg: *mut c_char;
        static mut optind: c_int;
        static mut opterr: c_int;
        static mut optopt: c_int;
    }
    /// getopt's state is global: one caller at a time.
    static GLIBC: Mutex<()> = Mutex::new(());
    let _guard = GLIBC.lock().unwrap_or_else(|e| e.into_inner());

    let texts: Vec<CString> = args
        .iter()
        .map(|a| CString::new(a.as_str()).expect("no NUL"))
        .collect();
    let mut argv: Vec<*mut c_char> = texts.iter().map(|t| t.as_ptr().cast_mut()).collect();
    argv.push(std::ptr::null_mut());
    let names: Vec<CString> = longopts
        .iter()
        .map(|o| CString::new(o.name).expect("no NUL"))
        .collect();
    let mut table: Vec<libc::option> = longopts
        .iter()
        .zip(&names)
        .map(|(o, name)| libc::option {
            name: name.as_ptr(),
            has_arg: match o.has_arg {
                HasArg::No => 0,
                HasArg::Required => 1,
                HasArg::Optional => 2,
            },
            flag: std::ptr::null_mut(),
            val: o.val as c_int,
        })
        .collect();
    table.push(libc::option {
        name: std::ptr::null(),
        has_arg: 0,
        flag: std::ptr::null_mut(),
        val: 0,
    });
    let optstring = CString::new(optstring).expect("no NUL");
    let argc = c_int::try_from(texts.len()).expect("a few arguments");
    let mut returned = Vec::new();
    // SAFETY: getopt's globals are only touched under GLIBC's lock; `argv` is a
    // NULL-terminated array of `argc` C strings that outlive the calls (glibc permutes the
    // pointers, never the strings), `table` ends with a zero entry, and `optind = 0` makes
    // glibc start over.
    unsafe {
        optind = 0;
        opterr = 0;
        loop {
            let c = libc::getopt_long(
                argc,
                argv.as_ptr(),
                optstring.as_ptr(),
                table.as_ptr(),
                std::ptr::null_mut(),
            );
            if c == -1 {
                break;
            }
            if c == c_int::from(b'?') {
                returned.push((
                    u32::from(b'?'),
                    Some(std::ptr::addr_of!(optopt).read().to_string()),
                ));
                return (returned, Vec::new());
            }
            let value =
                (!optarg.is_null()).then(|| CStr::from_ptr(optarg).to_string_lossy().into_owned());
            returned.push((c as u32, value));
        }
        let first = usize::try_from(optind).expect("optind >= 0");
        let operands = argv[first..texts.len()]
            .iter()
            .map(|&p| CStr::from_ptr(p).to_string_lossy().into_owned())
            .collect();
        (returned, operands)
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// The getopt parser does what glibc's `getopt_long` does with the same table: the same
    /// options and values in the same order, the same error (by `optopt`) at the same place,
    /// the same operands (in GNU's permuted order). ASCII command lines only (glibc reads
    /// bytes, the parser characters).
    #[test]
    fn getopt_is_glibcs(args in argv("p", "dilvVoxz:", GETOPT_NAMES, WORDS)) {
        use crate::cli::{getopt_long, GetoptError, Item};
        let args: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        if args.is_empty() || !args.iter().all(|a| a.is_ascii() && !a.contains('\0')) {
            return Ok(());
        }
        let ours = getopt_long(&args[1..], GETOPT_SHORTS, GETOPT_LONGS);
        let val = |name: &str| GETOPT_LONGS.iter().find(|o| o.name == name).map_or(0, |o| o.val as u32);
        let returned: Vec<(u32, Option<String>)> = ours
            .items
            .iter()
            .map(|item| match item {
                Item::Opt(c, v) => (*c as u32, v.clone()),
                Item::Error(e) => {
                    let optopt = match e {
                        GetoptError::InvalidShort(c) | GetoptError::MissingShortValue(c) => *c as u32,
                        GetoptError::Unrecognized(_) | GetoptError::Ambiguous { .. } => 0,
                        GetoptError::MissingLongValue(name) | GetoptError::UnexpectedValue(name) => val(name),
                    };
                    (u32::from(b'?'), Some(optopt.to_string()))
                }
            })
            .collect();
        let failed = matches!(ours.items.last(), Some(Item::Error(_)));
        let operands = if failed { Vec::new() } else { ours.operands };
        let glibc = glibc_getopt_long(&args, GETOPT_SHORTS, GETOPT_LONGS);
        prop_assert_eq!((returned, operands), glibc, "{:?}", args);
    }
}
