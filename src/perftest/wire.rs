//! The messages of the out-of-band exchange, byte for byte as perftest 6.06 (Debian's
//! 4.5+0.17) encodes them without rdma_cm: pure encoding and decoding, no I/O. See the
//! module docs of [`crate::perftest`] for the sequence, and `peer` for the connection.

use std::net::Ipv6Addr;

use super::types::{Conn, Error, Result, Test};

/// The version announced to peers. perftest from 6.28 on also swaps a raw C parameter
/// struct with peers that announce 6.28 or later; announcing 6.06 keeps both sides on the
/// protocol of Debian's perftest.
pub const VERSION: &str = "6.06";
/// Peers older than this use another protocol (perftest refuses them too).
const OLDEST_PEER: f64 = 5.70;
/// Size of the version message.
const VERSION_LEN: usize = 16;
/// A QP record with a GID: `LID:OUT:QPN:PSN:RKEY:VADDR:` 16 × `GG:` `SRQN:` and a NUL.
pub const RECORD_LEN_GID: usize = 108;
/// A QP record without a GID (InfiniBand without `-x`).
pub const RECORD_LEN: usize = 59;
/// A QP record over rdma_cm (`-R`): perftest's `struct pingpong_dest` as it lies in
/// memory on x86-64, every field big-endian.
pub const DEST_LEN: usize = 56;
/// Marks the parameter summary our side puts after the version's NUL.
const SUMMARY_MARK: u8 = b'R';

/// What one side tells the other about one QP (perftest's `struct pingpong_dest`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Record {
    /// Port LID (0 on RoCE).
    pub lid: u16,
    /// Outstanding reads/atomics this side accepts.
    pub out_reads: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// First packet sequence number (24 bits).
    pub psn: u32,
    /// Remote key of the buffer the peer may access.
    pub rkey: u32,
    /// Address of that buffer.
    pub vaddr: u64,
    /// The GID, when GIDs are in use.
    pub gid: Option<Ipv6Addr>,
    /// SRQ number (XRC/DC only; 0 here).
    pub srqn: u32,
}

impl Record {
    /// The NUL-terminated text perftest sends (`KEY_PRINT_FMT[_GID]`), padded to the
    /// message size. QPN and PSN are sent as the 24-bit numbers they are (higher bits would
    /// push the NUL out of the message).
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads,
            self.qpn & 0xff_ffff,
            self.psn & 0xff_ffff,
            self.rkey,
            self.vaddr
        );
        let len = match self.gid {
            Some(gid) => {
                for b in gid.octets() {
                    s.push_str(&format!("{b:02x}:"));
                }
                s.push_str(&format!("{:08x}:", self.srqn));
                RECORD_LEN_GID
            }
            None => {
                s.push_str(&format!("{:08x}", self.srqn));
                RECORD_LEN
            }
        };
        let mut bytes = s.into_bytes();
        bytes.resize(len, 0);
        bytes
    }

    /// Parses a record of the form [`Record::encode`] writes; `with_gid` says which.
    pub fn decode(msg: &[u8], with_gid: bool) -> Result<Record> {
        let malformed = || {
            Error::new(format!(
                "malformed QP record from the peer: {:?}",
                String::from_utf8_lossy(msg)
            ))
        };
        let end = msg.iter().position(|&b| b == 0).ok_or_else(malformed)?;
        let text = std::str::from_utf8(&msg[..end]).map_err(|_| malformed())?;
        let mut fields: Vec<&str> = text.split(':').collect();
        if with_gid {
            // The text ends with a ':'.
            if fields.pop() != Some("") {
                return Err(malformed());
            }
        }
        let expected = if with_gid { 23 } else { 7 };
        if fields.len() != expected {
            return Err(malformed());
        }
        let hex = |s: &str, max_digits: usize| -> Result<u64> {
            // Hex digits only (from_str_radix alone would take a sign).
            if s.is_empty() || s.len() > max_digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(malformed());
            }
            u64::from_str_radix(s, 16).map_err(|_| malformed())
        };
        let mut gid = None;
        if with_gid {
            let mut octets = [0u8; 16];
            for (o, f) in octets.iter_mut().zip(&fields[6..22]) {
                *o = hex(f, 2)? as u8;
            }
            gid = Some(Ipv6Addr::from(octets));
        }
        Ok(Record {
            lid: hex(fields[0], 4)? as u16,
            out_reads: hex(fields[1], 4)? as u16,
            qpn: hex(fields[2], 6)? as u32,
            psn: hex(fields[3], 6)? as u32,
            rkey: hex(fields[4], 8)? as u32,
            vaddr: hex(fields[5], 16)?,
            gid,
            srqn: hex(fields[expected - 1], 8)? as u32,
        })
    }
}

impl Record {
    /// The binary record perftest sends over its rdma_cm connection (`rdma_write_keys`):
    /// LID, outstanding reads, QPN, PSN and rkey as 32-bit words, 4 bytes of padding, the
    /// address, the GID (zeros without one), the SRQ number and a GID index of -1.
    pub fn encode_dest(&self) -> [u8; DEST_LEN] {
        let mut b = [0u8; DEST_LEN];
        let words = [
            u32::from(self.lid),
            u32::from(self.out_reads),
            self.qpn,
            self.psn,
            self.rkey,
        ];
        for (i, w) in words.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        b[24..32].copy_from_slice(&self.vaddr.to_be_bytes());
        b[32..48].copy_from_slice(&self.gid.unwrap_or(Ipv6Addr::UNSPECIFIED).octets());
        b[48..52].copy_from_slice(&self.srqn.to_be_bytes());
        b[52..56].copy_from_slice(&(-1i32).to_be_bytes());
        b
    }

    /// Parses a binary record ([`encode_dest`](Self::encode_dest)); perftest's reader
    /// keeps the GID whatever it is, and ignores the SRQ number and GID index.
    pub fn decode_dest(b: &[u8; DEST_LEN]) -> Record {
        let word =
            |i: usize| u32::from_be_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        let mut vaddr = [0u8; 8];
        vaddr.copy_from_slice(&b[24..32]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[32..48]);
        Record {
            lid: word(0) as u16,
            out_reads: word(1) as u16,
            qpn: word(2),
            psn: word(3),
            rkey: word(4),
            vaddr: u64::from_be_bytes(vaddr),
            gid: Some(Ipv6Addr::from(gid)),
            srqn: 0,
        }
    }
}

/// The parameters both sides must agree on, which our side writes after the NUL of the
/// version string (perftest reads the version with `atof` and ignores those bytes, and
/// writes zeros there itself, so only two of our tools compare them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Which test.
    pub test: Test,
    /// Transport.
    pub conn: Conn,
    /// `-b`.
    pub duplex: bool,
    /// `-a`.
    pub all_sizes: bool,
    /// `-D`.
    pub duration_mode: bool,
    /// Message size.
    pub size: u32,
    /// Number of QPs.
    pub num_qps: u16,
    /// A hash of the iteration count or duration, for tests where the server takes part
    /// in the data path (0 where only the client's count matters).
    pub length_hash: u8,
}

impl Summary {
    fn encode(&self) -> [u8; 11] {
        let mut b = [0u8; 11];
        b[0] = SUMMARY_MARK;
        b[1] = self.test as u8;
        b[2] = match self.conn {
            Conn::Rc => 0,
            Conn::Uc => 1,
            Conn::Ud => 2,
        };
        b[3] = u8::from(self.duplex)
            | u8::from(self.all_sizes) << 1
            | u8::from(self.duration_mode) << 2;
        b[4..8].copy_from_slice(&self.size.to_be_bytes());
        b[8..10].copy_from_slice(&self.num_qps.to_be_bytes());
        b[10] = self.length_hash;
        b
    }

    fn decode(b: &[u8]) -> Option<Summary> {
        if b.len() < 11 || b[0] != SUMMARY_MARK {
            return None;
        }
        let test = Test::ALL.get(usize::from(b[1])).copied()?;
        let conn = match b[2] {
            0 => Conn::Rc,
            1 => Conn::Uc,
            2 => Conn::Ud,
            _ => return None,
        };
        Some(Summary {
            test,
            conn,
            duplex: b[3] & 1 != 0,
            all_sizes: b[3] & 2 != 0,
            duration_mode: b[3] & 4 != 0,
            size: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            num_qps: u16::from_be_bytes([b[8], b[9]]),
            length_hash: b[10],
        })
    }

    /// What differs between our summary and the peer's, as a message; `None` if nothing.
    pub fn mismatch(&self, peer: &Summary) -> Option<String> {
        let mut diffs = Vec::new();
        if self.test != peer.test {
            diffs.push(format!(
                "test: {} here, {} at the peer",
                self.test.name(),
                peer.test.name()
            ));
        }
        if self.conn != peer.conn {
            diffs.push(format!(
                "connection type: {} here, {} at the peer",
                self.conn.name(),
                peer.conn.name()
            ));
        }
        let on = |b: bool| if b { "on" } else { "off" };
        if self.duplex != peer.duplex {
            diffs.push(format!(
                "bidirectional (-b): {} here, {} at the peer",
                on(self.duplex),
                on(peer.duplex)
            ));
        }
        if self.all_sizes != peer.all_sizes {
            diffs.push(format!(
                "all sizes (-a): {} here, {} at the peer",
                on(self.all_sizes),
                on(peer.all_sizes)
            ));
        }
        if self.size != peer.size && !self.all_sizes && !peer.all_sizes {
            diffs.push(format!(
                "message size (-s): {} here, {} at the peer",
                self.size, peer.size
            ));
        }
        if self.num_qps != peer.num_qps {
            diffs.push(format!(
                "number of QPs (-q): {} here, {} at the peer",
                self.num_qps, peer.num_qps
            ));
        }
        if self.duration_mode != peer.duration_mode {
            diffs.push(format!(
                "duration mode (-D): {} here, {} at the peer",
                on(self.duration_mode),
                on(peer.duration_mode)
            ));
        } else if self.length_hash != peer.length_hash {
            diffs.push("iterations (-n) or duration (-D) differ".to_owned());
        }
        (!diffs.is_empty()).then(|| diffs.join("; "))
    }
}

/// A hash byte of a run length (iterations or seconds).
pub fn length_hash(v: u64) -> u8 {
    // FNV-1a over the bytes, folded to one byte.
    let mut h: u32 = 0x811c_9dc5;
    for b in v.to_le_bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    (h ^ h >> 8 ^ h >> 16 ^ h >> 24) as u8
}

/// Our version message: the version, its NUL, our parameter summary.
pub fn version_message(summary: &Summary) -> [u8; VERSION_LEN] {
    let mut b = [0u8; VERSION_LEN];
    b[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
    b[VERSION.len() + 1..].copy_from_slice(&summary.encode());
    b
}

/// The peer's version message: its version as C's `atof` reads it, its text and the
/// summary if the peer is one of our tools.
pub fn parse_version(b: &[u8]) -> (f64, String, Option<Summary>) {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let text = String::from_utf8_lossy(&b[..end]).into_owned();
    let summary = b.get(end + 1..).and_then(Summary::decode);
    (atof(&text), text, summary)
}

/// C's `atof` for what a version can be: the longest leading `[+-]digits[.digits]`.
fn atof(s: &str) -> f64 {
    let t = s.trim_start();
    let mut end = 0;
    let bytes = t.as_bytes();
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let mut seen_dot = false;
    while end < bytes.len() {
        match bytes[end] {
            b'0'..=b'9' => {}
            b'.' if !seen_dot => seen_dot = true,
            _ => break,
        }
        end += 1;
    }
    t[..end].parse().unwrap_or(0.0)
}

/// Checks the peer's version message.
pub fn check_version(b: &[u8]) -> Result<Option<Summary>> {
    let (version, text, summary) = parse_version(b);
    if version < OLDEST_PEER {
        return Err(Error::new(format!(
            "the peer announces version {text:?}: not compatible with versions older than 5.70"
        )));
    }
    Ok(summary)
}

/// Largest page size or cache line size a peer may announce. Each QP gets buffers of the
/// larger of both sides' page sizes, so this bounds what a peer makes us allocate and
/// register (Linux pages are 4 to 64 KiB).
pub const MAX_SYSTEM_SIZE: u32 = 1 << 20;

/// The peer's page size and cache line size messages (each a 4-byte big-endian int, as
/// ours: `u32::to_be_bytes`), each checked to be in `1..=MAX_SYSTEM_SIZE`.
pub fn parse_system_data(page: [u8; 4], line: [u8; 4]) -> Result<(u32, u32)> {
    let (page, line) = (u32::from_be_bytes(page), u32::from_be_bytes(line));
    let valid = 1..=MAX_SYSTEM_SIZE;
    if !valid.contains(&page) || !valid.contains(&line) {
        return Err(Error::new(format!(
            "malformed system data from the peer: page size {page}, cache line {line}"
        )));
    }
    Ok((page, line))
}

/// The MTU message: the `enum ibv_mtu` value as ASCII decimal in 2 bytes.
pub fn mtu_message(mtu_bytes: u32) -> [u8; 2] {
    let code = mtu_code(mtu_bytes);
    [b'0' + code, 0]
}

/// `enum ibv_mtu` of the largest IB MTU in a size (1 = 256 .. 5 = 4096; 1 below 256).
fn mtu_code(bytes: u32) -> u8 {
    (bytes.max(256).ilog2() - 7).min(5) as u8
}

/// The MTU of the peer's message, in bytes.
pub fn parse_mtu(b: [u8; 2]) -> Result<u32> {
    match b {
        [c @ b'1'..=b'5', 0] => Ok(128 << (c - b'0')),
        _ => Err(Error::new(format!(
            "malformed MTU message from the peer: {:?}",
            String::from_utf8_lossy(&b)
        ))),
    }
}

/// The size, iterations and rates perftest exchanges at the end of a BW test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReportMsg {
    /// Message size.
    pub size: u64,
    /// Messages.
    pub iters: u64,
    /// Peak bandwidth.
    pub bw_peak: f64,
    /// Average bandwidth.
    pub bw_avg: f64,
    /// Message rate.
    pub msg_rate: f64,
}

impl ReportMsg {
    /// The five 8-byte messages of perftest's `xchg_bw_reports` (peers from 5.33): size and
    /// iterations as big-endian 64-bit integers, then peak, average and message rate as
    /// byte-swapped doubles (the big-endian bytes of their bits).
    pub fn encode(&self) -> [[u8; 8]; 5] {
        [
            self.size,
            self.iters,
            self.bw_peak.to_bits(),
            self.bw_avg.to_bits(),
            self.msg_rate.to_bits(),
        ]
        .map(u64::to_be_bytes)
    }

    /// The report of the peer's five messages (any bytes are one).
    pub fn decode(msgs: &[[u8; 8]; 5]) -> ReportMsg {
        let [size, iters, peak, avg, rate] = msgs.map(u64::from_be_bytes);
        ReportMsg {
            size,
            iters,
            bw_peak: f64::from_bits(peak),
            bw_avg: f64::from_bits(avg),
            msg_rate: f64::from_bits(rate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What ib_send_lat (Debian's perftest) sent in a run on rxe, taken with strace.
    const C_RECORD: &[u8] = b"0000:0001:000018:fe4d86:00000000:00005557a0aeb000:00:00:00:00:00:00:00:00:00:00:ff:ff:7f:00:00:01:00000000:\0";

    #[test]
    fn record_round_trip_matches_perftest_bytes() {
        assert_eq!(C_RECORD.len(), RECORD_LEN_GID);
        let r = Record::decode(C_RECORD, true).unwrap();
        assert_eq!(r.qpn, 0x18);
        assert_eq!(r.psn, 0xfe4d86);
        assert_eq!(r.out_reads, 1);
        assert_eq!(r.vaddr, 0x5557a0aeb000);
        assert_eq!(r.gid, Some("::ffff:127.0.0.1".parse().unwrap()));
        assert_eq!(r.encode(), C_RECORD);
        let no_gid = Record { gid: None, ..r };
        let bytes = no_gid.encode();
        assert_eq!(bytes.len(), RECORD_LEN);
        assert_eq!(
            &bytes[..58],
            b"0000:0001:000018:fe4d86:00000000:00005557a0aeb000:00000000"
        );
        assert_eq!(Record::decode(&bytes, false).unwrap(), no_gid);
    }

    #[test]
    fn binary_records_are_perftests_struct() {
        let r = Record::decode(C_RECORD, true).unwrap();
        let b = r.encode_dest();
        assert_eq!(b[8..12], [0, 0, 0, 0x18]);
        assert_eq!(b[20..24], [0; 4]);
        assert_eq!(b[24..32], 0x5557a0aeb000u64.to_be_bytes());
        assert_eq!(b[44..48], [127, 0, 0, 1]);
        assert_eq!(Record::decode_dest(&b), r);
    }

    #[test]
    fn malformed_records_are_errors() {
        let mut bad = C_RECORD.to_vec();
        bad[3] = b'x';
        assert!(Record::decode(&bad, true).is_err());
        let mut no_nul = C_RECORD.to_vec();
        no_nul[107] = b':';
        assert!(Record::decode(&no_nul, true).is_err());
        assert!(Record::decode(&[0u8; RECORD_LEN_GID], true).is_err());
        assert!(Record::decode(b"garbage\0", false).is_err());
        // Signs are no hex digits (from_str_radix took "+0").
        let mut signed = C_RECORD.to_vec();
        signed[..4].copy_from_slice(b"+000");
        assert!(Record::decode(&signed, true).is_err());
        // QPN and PSN beyond 24 bits (which pushed the NUL out of the message) are cut.
        let wide = Record {
            qpn: 0x0100_0018,
            psn: u32::MAX,
            ..Record::decode(C_RECORD, true).unwrap()
        };
        let r = Record::decode(&wide.encode(), true).unwrap();
        assert_eq!((r.qpn, r.psn), (0x18, 0xff_ffff));
        // A record without GID where one with GID is expected.
        let short = Record::default().encode();
        let mut padded = short.clone();
        padded.resize(RECORD_LEN_GID, 0);
        assert!(Record::decode(&padded, true).is_err());
    }

    fn summary() -> Summary {
        Summary {
            test: Test::WriteBw,
            conn: Conn::Rc,
            duplex: false,
            all_sizes: false,
            duration_mode: false,
            size: 65536,
            num_qps: 1,
            length_hash: 0,
        }
    }

    #[test]
    fn version_message_reads_as_perftest_version() {
        let msg = version_message(&summary());
        assert_eq!(&msg[..5], b"6.06\0");
        let (v, text, s) = parse_version(&msg);
        assert_eq!((v, text.as_str()), (6.06, "6.06"));
        assert_eq!(s, Some(summary()));
        // perftest's own message: zero padded, no summary.
        let mut c = [0u8; 16];
        c[..4].copy_from_slice(b"6.06");
        assert_eq!(check_version(&c).unwrap(), None);
        c[..4].copy_from_slice(b"5.60");
        assert!(check_version(&c).is_err());
        assert!(check_version(b"garbage garbage!").is_err());
    }

    #[test]
    fn summaries_name_what_differs() {
        let a = summary();
        assert_eq!(a.mismatch(&a), None);
        let b = Summary {
            size: 4096,
            num_qps: 2,
            ..a
        };
        let m = a.mismatch(&b).unwrap();
        assert!(
            m.contains("message size (-s): 65536 here, 4096 at the peer"),
            "{m}"
        );
        assert!(m.contains("number of QPs"), "{m}");
        let c = Summary {
            test: Test::SendBw,
            ..a
        };
        assert!(a
            .mismatch(&c)
            .unwrap()
            .contains("ib_write_bw here, ib_send_bw at the peer"));
        assert_ne!(length_hash(1000), length_hash(1001));
    }

    #[test]
    fn mtu_messages() {
        assert_eq!(mtu_message(4096), *b"5\0");
        assert_eq!(mtu_message(1024), *b"3\0");
        assert_eq!(parse_mtu(*b"5\0").unwrap(), 4096);
        assert_eq!(parse_mtu(*b"1\0").unwrap(), 256);
        assert!(parse_mtu(*b"9\0").is_err());
        assert!(parse_mtu(*b"55").is_err());
        // Sizes that are no IB MTU (this underflowed on 257) round down.
        assert_eq!(mtu_message(257), *b"1\0");
        assert_eq!(mtu_message(1500), *b"3\0");
        assert_eq!(mtu_message(9000), *b"5\0");
        assert_eq!(mtu_message(0), *b"1\0");
    }

    #[test]
    fn system_data_is_bounded() {
        let msg = |v: u32| v.to_be_bytes();
        assert_eq!(parse_system_data(msg(4096), msg(64)).unwrap(), (4096, 64));
        assert_eq!(
            parse_system_data(msg(1 << 20), msg(1)).unwrap(),
            (1 << 20, 1)
        );
        for (page, line) in [(0, 64), (4096, 0), ((1 << 20) + 1, 64), (1 << 30, 64)] {
            let e = parse_system_data(msg(page), msg(line)).unwrap_err();
            assert!(e.to_string().starts_with("malformed system data"), "{e}");
        }
    }

    #[test]
    fn reports_encode_as_perftest() {
        let m = ReportMsg {
            size: 65536,
            iters: 5000,
            bw_peak: 2.0,
            bw_avg: f64::NAN,
            msg_rate: -0.0,
        };
        let msgs = m.encode();
        assert_eq!(msgs[0], [0, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(msgs[2], 2.0f64.to_bits().to_be_bytes());
        let back = ReportMsg::decode(&msgs);
        assert_eq!((back.size, back.iters, back.bw_peak), (65536, 5000, 2.0));
        assert!(back.bw_avg.is_nan() && back.msg_rate.to_bits() == (-0.0f64).to_bits());
    }
}
