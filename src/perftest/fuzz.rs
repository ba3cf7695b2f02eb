//! Bounded fuzzing (proptest) of what a peer or a user feeds the perftest tools: every
//! message of the out-of-band exchange (`wire`), as arbitrary bytes, as valid messages with
//! one thing wrong, and as a byte stream from a peer over a loopback socket; and the
//! command line (`options`), from perftest's options with edge values and random text.
//! `crate::fuzz` has the configuration (`PROPTEST_CASES` overrides the case counts).

use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::net::{Ipv6Addr, Shutdown, TcpListener};
use std::time::Duration;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::fuzz::{argv, config, number_text};

use super::engine::Target;
use super::options::{Command, Params, ATOMIC_SIZE, MAX_INLINE_UD, MAX_SIZE};
use super::peer::Peer;
use super::report;
use super::stats::BwReport;
use super::types::{Conn, Test, Verb};
use super::wire::{self, Record, ReportMsg, Summary, RECORD_LEN, RECORD_LEN_GID};

fn test() -> impl Strategy<Value = Test> {
    prop::sample::select(Test::ALL.to_vec())
}

fn gid() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

/// A record with any field values (QPN and PSN are 24-bit numbers only by convention).
fn any_record() -> impl Strategy<Value = Record> {
    (
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()),
        (
            any::<u32>(),
            any::<u64>(),
            prop::option::of(gid()),
            any::<u32>(),
        ),
    )
        .prop_map(
            |((lid, out_reads, qpn, psn), (rkey, vaddr, gid, srqn))| Record {
                lid,
                out_reads,
                qpn,
                psn,
                rkey,
                vaddr,
                gid,
                srqn,
            },
        )
}

/// A record as a QP has it: QPN and PSN of 24 bits.
fn record() -> impl Strategy<Value = Record> {
    any_record().prop_map(|r| Record {
        qpn: r.qpn & 0xff_ffff,
        psn: r.psn & 0xff_ffff,
        ..r
    })
}

fn summary() -> impl Strategy<Value = Summary> {
    (
        test(),
        prop::sample::select(vec![Conn::Rc, Conn::Uc, Conn::Ud]),
        any::<[bool; 3]>(),
        any::<u32>(),
        any::<u16>(),
        any::<u8>(),
    )
        .prop_map(
            |(test, conn, [duplex, all_sizes, duration_mode], size, num_qps, length_hash)| {
                Summary {
                    test,
                    conn,
                    duplex,
                    all_sizes,
                    duration_mode,
                    size,
                    num_qps,
                    length_hash,
                }
            },
        )
}

/// The most hex digits of each field of a record's text, in order.
fn field_widths(with_gid: bool) -> Vec<usize> {
    let mut widths = vec![4, 4, 6, 6, 8, 16];
    if with_gid {
        widths.extend([2; 16]);
    }
    widths.push(8);
    widths
}

/// The fields of an encoded record.
fn fields(msg: &[u8]) -> Vec<String> {
    let end = msg.iter().position(|&b| b == 0).unwrap();
    let text = std::str::from_utf8(&msg[..end]).unwrap();
    let mut fields: Vec<String> = text.split(':').map(str::to_owned).collect();
    if fields.last().is_some_and(String::is_empty) {
        fields.pop();
    }
    fields
}

/// A record message of `fields`: the text, its NUL, zeros up to the message size (cut to
/// the message size, NUL and all, if longer).
fn assemble(fields: &[String], with_gid: bool) -> Vec<u8> {
    let mut text = fields.join(":");
    if with_gid {
        text.push(':');
    }
    let mut msg = text.into_bytes();
    msg.push(0);
    msg.resize(if with_gid { RECORD_LEN_GID } else { RECORD_LEN }, 0);
    msg
}

/// Bytes of the record alphabet and some others, for inputs that get past the first checks.
fn record_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(
        prop::sample::select(b"0123456789abcdefABCDEF:::::\0+- xg\xff".to_vec()),
        0..=RECORD_LEN_GID + 8,
    )
}

/// Everything our side sends in one run, client side, in order: what a peer's stream must
/// look like.
fn valid_stream(version: &[u8; 16], record: &Record, report: &ReportMsg) -> Vec<u8> {
    let mut s = version.to_vec();
    s.extend(4096u32.to_be_bytes());
    s.extend(64u32.to_be_bytes());
    s.extend(wire::mtu_message(1024));
    s.extend(record.encode());
    s.extend(report.encode().concat());
    s.extend(record.encode());
    s
}

/// Runs our client's side of the exchange against a peer that sends `stream` and closes:
/// every step that can fail on what the peer sent, in the order of a BW test.
fn exchange_with(stream: Vec<u8>, mine: &Record) -> super::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // Our side may have given up and closed already: errors here are its business.
        let _ = s.write_all(&stream);
        let _ = s.shutdown(Shutdown::Write);
        // Read all our side sends, so that closing sends a FIN, not a reset.
        let _ = s.read_to_end(&mut Vec::new());
    });
    let result = (|| {
        let mut p = Peer::connect("127.0.0.1", port, Duration::from_secs(5))?;
        p.set_timeout(Duration::from_secs(5))?;
        let mut version = [0u8; 16];
        p.exchange(&[0; 16], &mut version, "the version")?;
        wire::check_version(&version)?;
        let (mut page, mut line) = ([0u8; 4], [0u8; 4]);
        p.exchange(&4096u32.to_be_bytes(), &mut page, "the page size")?;
        p.exchange(&64u32.to_be_bytes(), &mut line, "the cache line size")?;
        wire::parse_system_data(page, line)?;
        let mut mtu = [0u8; 2];
        p.exchange(&wire::mtu_message(1024), &mut mtu, "the MTU")?;
        wire::parse_mtu(mtu)?;
        let with_gid = mine.gid.is_some();
        let theirs = p.hand_shake(mine, with_gid)?;
        report::address("remote", &theirs, Verb::Write);
        let r = p.exchange_reports(&ReportMsg::decode(&[[0; 8]; 5]))?;
        report::bw_line(&BwReport::from(r), false);
        p.close(mine, with_gid)
    })();
    peer.join().unwrap();
    result
}

proptest! {
    #![proptest_config(config(512))]

    /// Any bytes are a record or an error; what parses is a record of the format asked for,
    /// which encodes to a message that parses to it again, and prints.
    #[test]
    fn record_takes_any_bytes(
        msg in prop_oneof![vec(any::<u8>(), 0..=2 * RECORD_LEN_GID), record_like_bytes()],
        with_gid in any::<bool>(),
    ) {
        if let Ok(r) = Record::decode(&msg, with_gid) {
            prop_assert_eq!(r.gid.is_some(), with_gid);
            prop_assert!(r.qpn <= 0xff_ffff && r.psn <= 0xff_ffff);
            prop_assert_eq!(Record::decode(&r.encode(), with_gid).ok(), Some(r));
            let line = report::address("remote", &r, Verb::Read);
            prop_assert!(line.contains(&report::c_hex(r.qpn.into(), 6)), "{line}");
        }
    }

    /// Every record encodes to a NUL-terminated message of its format's size that parses
    /// back to it (QPN and PSN as the 24-bit numbers they are), and not as the other format.
    #[test]
    fn records_round_trip(r in any_record()) {
        let with_gid = r.gid.is_some();
        let msg = r.encode();
        prop_assert_eq!(msg.len(), if with_gid { RECORD_LEN_GID } else { RECORD_LEN });
        prop_assert_eq!(msg.iter().position(|&b| b == 0), Some(msg.len() - 1));
        let expected = Record { qpn: r.qpn & 0xff_ffff, psn: r.psn & 0xff_ffff, ..r };
        prop_assert_eq!(Record::decode(&msg, with_gid).ok(), Some(expected));
        prop_assert!(Record::decode(&msg, !with_gid).is_err());
    }

    /// A record with one field replaced parses exactly when the field is 1 to its width of
    /// hex digits (no sign, space or `0x`), and then has that value.
    #[test]
    fn records_with_a_field_changed(
        r in record(),
        which in any::<Index>(),
        text in prop_oneof![
            "[0-9a-fA-F]{0,20}",
            "[0-9a-f+ x:g-]{0,10}",
            "[+-]?[0-9a-f]{1,3}",
            "[^\\x00]{0,4}",
        ],
    ) {
        let with_gid = r.gid.is_some();
        let widths = field_widths(with_gid);
        let i = which.index(widths.len());
        let mut f = fields(&r.encode());
        f[i] = text.clone();
        let parsed = Record::decode(&assemble(&f, with_gid), with_gid);
        let valid = (1..=widths[i]).contains(&text.len())
            && text.bytes().all(|b| b.is_ascii_hexdigit());
        prop_assert_eq!(parsed.is_ok(), valid, "field {} = {:?}: {:?}", i, text, parsed);
        if let Ok(p) = parsed {
            let got = u64::from_str_radix(&fields(&p.encode())[i], 16).unwrap();
            prop_assert_eq!(got, u64::from_str_radix(&text, 16).unwrap());
        }
    }

    /// A record cut short is an error: without its NUL always; with a NUL after the cut only
    /// a cut inside the last field of a record without GID leaves a record.
    #[test]
    fn truncated_records(r in record(), cut in any::<Index>(), terminated in any::<bool>()) {
        let with_gid = r.gid.is_some();
        let msg = r.encode();
        let text_len = msg.iter().position(|&b| b == 0).unwrap();
        let k = cut.index(text_len);
        let mut short = msg[..k].to_vec();
        if terminated {
            short.push(0);
            short.resize(msg.len(), 0);
        }
        let parsed = Record::decode(&short, with_gid);
        let last_field = msg[..text_len].iter().rposition(|&b| b == b':').unwrap() + 1;
        let still_a_record = terminated && !with_gid && k > last_field;
        prop_assert_eq!(parsed.is_ok(), still_a_record, "cut at {}: {:?}", k, parsed);
    }

    /// A record without a NUL anywhere is an error.
    #[test]
    fn records_without_nul(r in record(), fill in 1u8..=255) {
        let msg: Vec<u8> = r.encode().into_iter().map(|b| if b == 0 { fill } else { b }).collect();
        prop_assert!(Record::decode(&msg, r.gid.is_some()).is_err());
    }

    /// The RDMA target of any record at any offset is built without overflow: the address
    /// wraps, as perftest's pointer arithmetic does; the peer's device rejects a bad one.
    #[test]
    fn remote_targets_of_any_record(r in record(), offset in any::<u64>(), len in any::<u64>()) {
        let t = Target::from(&r).remote(offset, len);
        prop_assert_eq!((t.addr, t.len, t.rkey), (r.vaddr.wrapping_add(offset), len, r.rkey));
    }

    /// Any bytes are a version message: its number as C's `atof` reads it, accepted from
    /// 5.70 on.
    #[test]
    fn version_takes_any_bytes(
        msg in prop_oneof![
            vec(any::<u8>(), 0..=32),
            "[ +.0-9a-z-]{0,16}".prop_map(String::into_bytes),
        ],
    ) {
        let (version, _, _) = wire::parse_version(&msg);
        prop_assert_eq!(wire::check_version(&msg).is_ok(), version >= 5.70);
    }

    /// perftest's version messages read as their number, with no summary in the zeros.
    #[test]
    fn perftest_versions(major in 0u32..100, minor in 0u32..100) {
        let text = format!("{major}.{minor:02}");
        let mut msg = [0u8; 16];
        msg[..text.len()].copy_from_slice(text.as_bytes());
        let (version, shown, summary) = wire::parse_version(&msg);
        prop_assert_eq!(version, text.parse::<f64>().unwrap());
        prop_assert_eq!(shown, text);
        prop_assert_eq!(summary, None);
        prop_assert_eq!(wire::check_version(&msg).is_ok(), version >= 5.70);
    }

    /// Our version message carries any summary to the peer, and nothing differs between
    /// equal summaries.
    #[test]
    fn summaries_round_trip(s in summary()) {
        let msg = wire::version_message(&s);
        prop_assert_eq!(wire::check_version(&msg).ok(), Some(Some(s)));
        prop_assert_eq!(s.mismatch(&s), None);
    }

    /// Two summaries compare without fail, and differ in a message exactly when a field
    /// that must match differs.
    #[test]
    fn summaries_compare(a in summary(), b in summary()) {
        let diff = a.mismatch(&b);
        let size_matters = !a.all_sizes && !b.all_sizes;
        let differ = a.test != b.test || a.conn != b.conn || a.duplex != b.duplex
            || a.all_sizes != b.all_sizes || (size_matters && a.size != b.size)
            || a.num_qps != b.num_qps || a.duration_mode != b.duration_mode
            || a.length_hash != b.length_hash;
        prop_assert_eq!(diff.is_some(), differ, "{:?}", diff);
    }

    /// The page and cache line sizes of any peer are taken up to a bound (they size our
    /// buffers), else an error.
    #[test]
    fn system_data_is_bounded(page in any::<[u8; 4]>(), line in any::<[u8; 4]>()) {
        let (p, l) = (u32::from_be_bytes(page), u32::from_be_bytes(line));
        let valid = 1..=wire::MAX_SYSTEM_SIZE;
        match wire::parse_system_data(page, line) {
            Ok(v) => prop_assert_eq!(v, (p, l)),
            Err(e) => prop_assert!(e.to_string().starts_with("malformed system data")),
        }
        prop_assert_eq!(
            wire::parse_system_data(page, line).is_ok(),
            valid.contains(&p) && valid.contains(&l)
        );
    }

    /// Any MTU size gives the MTU message of the largest IB MTU it holds.
    #[test]
    fn mtu_messages_of_any_size(bytes in any::<u32>()) {
        let expected = [4096, 2048, 1024, 512, 256].into_iter().find(|&m| m <= bytes).unwrap_or(256);
        prop_assert_eq!(wire::parse_mtu(wire::mtu_message(bytes)).ok(), Some(expected));
    }

    /// Any 40 bytes are the peer's bandwidth results, which encode to the same bytes and
    /// print.
    #[test]
    fn reports_take_any_bytes(msgs in any::<[[u8; 8]; 5]>(), gbits in any::<bool>()) {
        let m = ReportMsg::decode(&msgs);
        prop_assert_eq!(m.encode(), msgs);
        let r = BwReport::from(m);
        let line = report::bw_line(&r.plus(&r), gbits);
        let size_and_iters = format!(" {:<7}    {}", m.size, m.iters);
        prop_assert!(line.starts_with(&size_and_iters), "{line}");
    }

    /// Any report survives the exchange bit for bit (NaNs and infinities included).
    #[test]
    fn reports_round_trip(
        size in any::<u64>(),
        iters in any::<u64>(),
        bits in any::<[u64; 3]>(),
    ) {
        let m = ReportMsg {
            size,
            iters,
            bw_peak: f64::from_bits(bits[0]),
            bw_avg: f64::from_bits(bits[1]),
            msg_rate: f64::from_bits(bits[2]),
        };
        let back = ReportMsg::decode(&m.encode());
        prop_assert_eq!(
            (back.size, back.iters, back.bw_peak.to_bits(), back.bw_avg.to_bits(), back.msg_rate.to_bits()),
            (size, iters, bits[0], bits[1], bits[2])
        );
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// A peer that sends any bytes and closes: our side's exchange ends in an error or
    /// completes, within the socket timeout, without a panic. A valid stream completes; one
    /// cut short is an error saying the peer closed the connection.
    #[test]
    fn exchange_with_a_peer_sending_anything(
        mine in record(),
        theirs in record(),
        report in any::<[u64; 5]>(),
        summary in summary(),
        how in prop_oneof![
            vec(any::<u8>(), 0..300).prop_map(|junk| (junk, None, None)),
            (any::<Index>(), any::<u8>()).prop_map(|(i, b)| (Vec::new(), Some(i), Some(b))),
            any::<Index>().prop_map(|i| (Vec::new(), Some(i), None)),
            Just((Vec::new(), None, None)),
        ],
    ) {
        let theirs = Record { gid: mine.gid.map(|_| theirs.gid.unwrap_or(Ipv6Addr::LOCALHOST)), ..theirs };
        let report = ReportMsg::decode(&report.map(u64::to_be_bytes));
        let valid = valid_stream(&wire::version_message(&summary), &theirs, &report);
        let (junk, at, byte) = how;
        let (stream, expect) = match (at, byte) {
            // Junk, or the valid stream with one byte changed: any outcome but a panic.
            _ if !junk.is_empty() => (junk, None),
            (Some(i), Some(b)) => {
                let mut s = valid.clone();
                s[i.index(valid.len())] = b;
                (s, None)
            }
            // Cut short.
            (Some(i), None) => (valid[..i.index(valid.len())].to_vec(), Some(false)),
            _ => (valid, Some(true)),
        };
        let result = exchange_with(stream, &mine);
        if let Some(ok) = expect {
            prop_assert_eq!(result.is_ok(), ok, "{:?}", result.as_ref().err());
            if let Err(e) = result {
                prop_assert!(e.to_string().contains("closed the connection"), "{e}");
            }
        }
    }
}

#[test]
fn every_mtu_message() {
    for b in 0..=u16::MAX {
        let msg = b.to_be_bytes();
        let expected = match msg {
            [c @ b'1'..=b'5', 0] => Some(128 << (c - b'0')),
            _ => None,
        };
        assert_eq!(wire::parse_mtu(msg).ok(), expected, "{msg:?}");
    }
}

// ---------------------------------------------------------------------------------------
// The command line

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
];

/// Options with values that are mostly in range, so that many command lines get past
/// clap and the checks and the parameters can be checked.
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
        3 => (prop::sample::select(vec!["-n", "-s", "-t", "-r", "-Q", "-l", "-q", "-D", "-f", "-I", "-m", "-o", "-x", "-u", "-S", "-i", "-p"]), number)
            .prop_map(|(o, v)| vec![o.to_owned(), v.to_string()]),
        2 => prop::sample::select(vec!["-a", "-b", "-e", "-N", "-H", "-U", "-F", "--report_gbits", "--report-both", "--perform_warm_up", "--ipv6", "--disable_pcie_relaxed"])
            .prop_map(|o| vec![o.to_owned()]),
        1 => prop::sample::select(vec!["RC", "UC", "UD"]).prop_map(|c| vec!["-c".to_owned(), c.to_owned()]),
        1 => prop::sample::select(vec!["CMP_AND_SWAP", "FETCH_AND_ADD"]).prop_map(|c| vec!["-A".to_owned(), c.to_owned()]),
        1 => prop::sample::select(vec!["4K", "1M", "8M", "0x40"]).prop_map(|s| vec!["-s".to_owned(), s.to_owned()]),
        1 => Just(vec!["127.0.0.1".to_owned()]),
    ];
    vec(option, 0..6).prop_map(|args| args.into_iter().flatten().map(OsString::from).collect())
}

/// What the test loops and the device set-up rely on in parameters that parsed.
fn check_params(t: Test, p: &Params) -> Result<(), TestCaseError> {
    let verb = t.verb();
    prop_assert!((1..=u64::from(u32::MAX / 2)).contains(&p.size));
    if verb == Verb::Atomic {
        prop_assert_eq!(p.size, ATOMIC_SIZE);
    } else if p.all_sizes {
        prop_assert_eq!(p.size, MAX_SIZE);
    }
    prop_assert!(p.tx_depth >= 1 && p.rx_depth >= 1);
    // A completion is asked for every cq_mod posts of post_list requests: both must fit
    // in the send queue, or the window never moves.
    prop_assert!(
        (1..=p.tx_depth).contains(&p.cq_mod),
        "cq_mod {} tx_depth {}",
        p.cq_mod,
        p.tx_depth
    );
    prop_assert!(
        (1..=p.tx_depth).contains(&p.post_list),
        "post_list {} tx_depth {}",
        p.post_list,
        p.tx_depth
    );
    if p.post_list > 1 {
        prop_assert!(t.is_bw());
        prop_assert_eq!(p.post_list % p.cq_mod, 0);
    }
    match p.duration {
        Some(d) => {
            prop_assert_eq!(p.iters, 0);
            prop_assert!(u64::from(d) > 2 * u64::from(p.margin));
            prop_assert!(p.no_peak && !p.events && !p.all_sizes);
        }
        None => {
            prop_assert!((5..=100_000_000).contains(&p.iters));
            prop_assert!(u64::from(p.tx_depth) <= p.iters);
            prop_assert_eq!(p.iters % u64::from(p.post_list), 0);
        }
    }
    prop_assert!((1..=16384).contains(&p.num_qps));
    if !t.is_bw() {
        prop_assert!(p.num_qps == 1 && !p.duplex);
    }
    if verb == Verb::Send {
        prop_assert!(p.all_sizes || p.rx_depth % 2 == 0);
    } else {
        prop_assert_eq!(p.rx_depth, 1);
    }
    match p.conn {
        Conn::Ud => prop_assert_eq!(verb, Verb::Send),
        Conn::Uc => prop_assert!(matches!(verb, Verb::Send | Verb::Write)),
        Conn::Rc => {}
    }
    if let Some(i) = p.inline_size {
        prop_assert!(i <= 912 && !matches!(verb, Verb::Read | Verb::Atomic));
        prop_assert!(p.conn != Conn::Ud || i <= MAX_INLINE_UD);
    }
    prop_assert!(!(p.events && verb == Verb::Write));
    prop_assert!(p.port >= 1 && p.ib_port >= 1 && p.sl <= 15);
    prop_assert!(p.gid_index.map_or(true, |g| g <= 64));
    Ok(())
}

/// Parses `args` for `t` (program name first); `None` for `-h` and `-V`.
fn parse(t: Test, argv: &[OsString]) -> Result<Option<Params>, TestCaseError> {
    match Params::parse(t, argv) {
        Ok(Command::Run(p)) => {
            check_params(t, &p)?;
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
        prop_assert_eq!(p.map(|p| p.iters as i64), expected, "{}", text);
    }

    /// `-s` takes a C integer with an optional K or M suffix, from 1 to 2^31 - 1 bytes.
    #[test]
    fn sizes_are_c_integers_with_suffixes(v in edgy_i64(), suffix in 0..3usize) {
        let (letter, factor) = [("", 1i128), ("K", 1024), ("M", 1 << 20)][suffix];
        let argv = with_prog(Test::WriteBw, vec![format!("--size={v}{letter}").into()]);
        let p = parse(Test::WriteBw, &argv)?;
        let bytes = i128::from(v) * factor;
        let expected = (1..=i128::from(u32::MAX / 2)).contains(&bytes).then_some(bytes as u64);
        prop_assert_eq!(p.map(|p| p.size), expected);
    }

    /// Any text as the value of any option taking one is a value or a clear error.
    #[test]
    fn any_value_of_any_option(
        t in test(),
        option in prop::sample::select(vec!["-A", "-c", "-d", "-D", "-f", "-i", "-I", "-l", "-m", "-n", "-o", "-p", "-q", "-Q", "-r", "-s", "-S", "-t", "-u", "-x", "--out_json_file"]),
        value in prop_oneof![number_text(), "[ -~]{0,12}"],
    ) {
        let argv = with_prog(t, vec![option.into(), value.into()]);
        parse(t, &argv)?;
    }
}
