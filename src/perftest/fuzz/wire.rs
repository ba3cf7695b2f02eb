//! The out-of-band exchange (`wire`, `peer`): every message as arbitrary bytes, as valid
//! messages with one thing wrong, and as a byte stream from a peer over a loopback socket.

use std::io::{Read as _, Write as _};
use std::net::{Ipv6Addr, Shutdown, TcpListener};
use std::time::Duration;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::fuzz::config;
use crate::perftest::engine::Target;
use crate::perftest::peer::Peer;
use crate::perftest::report;
use crate::perftest::stats::BwReport;
use crate::perftest::types::{Conn, Verb};
use crate::perftest::wire::{self, Record, ReportMsg, Summary, RECORD_LEN, RECORD_LEN_GID};

use super::test;

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
fn exchange_with(stream: Vec<u8>, mine: &Record) -> crate::perftest::types::Result<()> {
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
