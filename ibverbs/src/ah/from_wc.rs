//! Answering the sender of a datagram: `ibv_init_ah_from_wc` and `ibv_create_ah_from_wc`,
//! which read the address from the 40 bytes a UD receive starts with. The layout of those
//! bytes, how the address is derived from them and what is refused are in the docs of
//! [`ProtectionDomain::create_ah_from_wc`].

use std::net::Ipv4Addr;

use crate::ah::attr::AhAttr;
use crate::ah::{raw, AddressHandle};
use crate::context::port::LinkLayer;
use crate::context::Context;
use crate::cq::ex::ExCompletion;
use crate::cq::WorkCompletion;
use crate::error::{AhFromWcError, Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::types::WcOpcode;
use crate::types::{Gid, GidType};

/// The bytes a UD receive starts with, before the payload: a GRH, or for RoCE v2 over IPv4
/// 20 unused bytes and the IPv4 header (`sizeof(struct ibv_grh)`).
pub const GRH_LEN: usize = 40;

/// UDP's protocol number: the next header of a RoCE v2 packet.
const UDP: u8 = 17;
/// InfiniBand's transport header (BTH) as a next header: InfiniBand and RoCE v1.
const IB_BTH: u8 = 0x1b;

/// A polled work completion of either kind, from which an address handle is made:
/// [`WorkCompletion`] (`ibv_poll_cq`) or [`ExCompletion`] (a poll session of an
/// [`ExtendedCq`](crate::ExtendedCq)). Sealed: the two are all there is.
pub trait Completion: sealed::Fields {}

mod sealed {
    /// The fields of a completion that `ibv_init_ah_from_wc` reads.
    pub trait Fields {
        /// A `struct ibv_wc` with the work request id, status, vendor error, opcode and
        /// flags of the completion (its addressing fields are set from `addressing`).
        fn head(&self) -> crate::ffi::ibv_wc;

        /// The source LID, service level and destination LID path bits, and the first of
        /// them the completion does not carry (read as 0).
        fn addressing(&self) -> crate::Result<(u16, u8, u8, Option<&'static str>)>;
    }
}

impl Completion for WorkCompletion {}

impl sealed::Fields for WorkCompletion {
    fn head(&self) -> ffi::ibv_wc {
        *self.as_raw()
    }

    fn addressing(&self) -> Result<(u16, u8, u8, Option<&'static str>)> {
        let raw = self.as_raw();
        Ok((raw.slid, raw.sl, raw.dlid_path_bits, None))
    }
}

impl Completion for ExCompletion<'_> {}

impl sealed::Fields for ExCompletion<'_> {
    fn head(&self) -> ffi::ibv_wc {
        ffi::ibv_wc {
            wr_id: self.wr_id(),
            status: self.status().0,
            opcode: self.opcode_raw(),
            vendor_err: self.vendor_err(),
            wc_flags: self.wc_flags(),
            ..Default::default()
        }
    }

    fn addressing(&self) -> Result<(u16, u8, u8, Option<&'static str>)> {
        let mut missing = None;
        let slid = match self.slid() {
            Some(lid) => u16::try_from(lid).map_err(|_| Error::OutOfRange {
                what: "source LID of the completion",
                value: lid.into(),
                min: 0,
                max: u16::MAX.into(),
            })?,
            None => {
                missing.get_or_insert("WcFields::SLID");
                0
            }
        };
        let sl = self.sl().unwrap_or_else(|| {
            missing.get_or_insert("WcFields::SL");
            0
        });
        let bits = self.dlid_path_bits().unwrap_or_else(|| {
            missing.get_or_insert("WcFields::DLID_PATH_BITS");
            0
        });
        Ok((slid, sl, bits, missing))
    }
}

/// The header in the 40 bytes, told apart as libibverbs does (the docs of
/// [`ProtectionDomain::create_ah_from_wc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Header {
    /// A GRH or IPv6 header, with next header 0x1B or UDP and a unicast destination.
    Grh { next_header: u8, dgid: Gid },
    /// RoCE v2 over IPv4, with a unicast destination.
    Ipv4 { daddr: Ipv4Addr },
}

impl Header {
    /// Reads the header of `grh`; an error for one no address can be made from.
    fn parse(grh: &[u8; GRH_LEN]) -> Result<Header, AhFromWcError> {
        let version = grh[0] >> 4;
        let ipv4 = &grh[20..];
        let ipv4_version = ipv4[0] >> 4;
        let is_ipv4 = if version == 6 {
            ipv4[0] & 0xf == 5 && ipv4_checksum_holds(ipv4)
        } else if ipv4_version == 4 {
            true
        } else {
            return Err(AhFromWcError::UnknownHeader {
                version,
                ipv4_version,
            });
        };
        if is_ipv4 {
            let daddr = Ipv4Addr::new(ipv4[16], ipv4[17], ipv4[18], ipv4[19]);
            if daddr.is_multicast() {
                return Err(AhFromWcError::MulticastDestination {
                    group: Gid::from(daddr.to_ipv6_mapped()),
                });
            }
            return Ok(Header::Ipv4 { daddr });
        }
        let mut dgid = [0; 16];
        dgid.copy_from_slice(&grh[24..]);
        let dgid = Gid::from_bytes(dgid);
        if dgid.to_bytes()[0] == 0xff {
            return Err(AhFromWcError::MulticastDestination { group: dgid });
        }
        match grh[6] {
            next_header @ (UDP | IB_BTH) => Ok(Header::Grh { next_header, dgid }),
            next_header => Err(AhFromWcError::UnknownNextHeader { next_header }),
        }
    }

    /// The destination: the GID and type of the entry the answer leaves from.
    fn destination(self, infiniband: bool) -> (Gid, GidType) {
        match self {
            Header::Ipv4 { daddr } => (Gid::from(daddr.to_ipv6_mapped()), GidType::RoceV2),
            Header::Grh {
                next_header: UDP,
                dgid,
            } => (dgid, GidType::RoceV2),
            Header::Grh { dgid, .. } if infiniband => (dgid, GidType::Ib),
            Header::Grh { dgid, .. } => (dgid, GidType::RoceV1),
        }
    }
}

/// Whether the 20 bytes of an IPv4 header have the checksum they carry, computed as
/// libibverbs does: the 16-bit words in the machine's order with the checksum field zero,
/// summed, the carries folded once, complemented.
fn ipv4_checksum_holds(header: &[u8]) -> bool {
    let word = |i: usize| u32::from(u16::from_ne_bytes([header[i], header[i + 1]]));
    let sum: u32 = (0..20).step_by(2).filter(|&i| i != 10).map(word).sum();
    let folded = (sum & 0xffff) + (sum >> 16);
    !(folded as u16) == u16::from_ne_bytes([header[10], header[11]])
}

impl Context {
    /// The address vector that answers the sender of a received datagram
    /// (`ibv_init_ah_from_wc`): from local port `port`, to the sender's GID (and LID),
    /// leaving from the GID the datagram was sent to. `wc` is the receive's completion,
    /// `grh` the receive buffer from its start: the 40 bytes ([`GRH_LEN`]) before the
    /// payload, where the datagram's GRH or IPv4 header is; `port` the port of the QP that
    /// received it ([`QueuePair::port`](crate::QueuePair::port)).
    ///
    /// Make the handle with [`ProtectionDomain::create_ah_from_attr`] (the vector may be
    /// changed first), or in one call with [`ProtectionDomain::create_ah_from_wc`], whose
    /// docs have the layout of the 40 bytes, how the vector is derived from them, and what
    /// is refused.
    pub fn init_ah_from_wc<C: Completion>(&self, port: u8, wc: &C, grh: &[u8]) -> Result<AhAttr> {
        self.ah_attr_from_wc(port, wc, grh)
            .map(|raw| AhAttr::from_raw(&raw))
    }

    /// `ibv_init_ah_from_wc` after the checks.
    fn ah_attr_from_wc<C: Completion>(
        &self,
        port: u8,
        wc: &C,
        grh: &[u8],
    ) -> Result<ffi::ibv_ah_attr> {
        let refuse = |reason| Error::AhFromWc { reason };
        let mut raw_wc = wc.head();
        if raw_wc.status != ffi::ibv_wc_status::IBV_WC_SUCCESS {
            return Err(Error::Completion {
                wr_id: raw_wc.wr_id,
                status: crate::WcStatus(raw_wc.status),
                vendor_err: raw_wc.vendor_err,
            });
        }
        let opcode = WcOpcode::from_raw(raw_wc.opcode);
        if !matches!(opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
            return Err(refuse(AhFromWcError::NotReceive { opcode }));
        }
        let infiniband = self.query_port(port)?.link_layer != LinkLayer::Ethernet;
        let has_grh = raw_wc.wc_flags & ffi::ibv_wc_flags::IBV_WC_GRH.0 != 0;
        if !has_grh && !infiniband {
            return Err(refuse(AhFromWcError::NoGrh { port }));
        }
        let bytes: &[u8; GRH_LEN] =
            grh.get(..GRH_LEN)
                .and_then(|b| b.try_into().ok())
                .ok_or(refuse(AhFromWcError::ShortBuffer {
                    len: grh.len(),
                    required: GRH_LEN,
                }))?;
        let (slid, sl, path_bits, missing) = wc.addressing()?;
        if let (true, Some(field)) = (infiniband, missing) {
            return Err(refuse(AhFromWcError::MissingField { field }));
        }
        (raw_wc.slid, raw_wc.sl, raw_wc.dlid_path_bits) = (slid, sl, path_bits);
        let header = if has_grh {
            let header = Header::parse(bytes).map_err(refuse)?;
            let (gid, gid_type) = header.destination(infiniband);
            if gid.is_zero() {
                // libibverbs would find it in the first empty entry of the table.
                return Err(refuse(AhFromWcError::GidNotFound {
                    gid,
                    gid_type,
                    port,
                }));
            }
            Some(header)
        } else {
            None
        };
        let mut raw_grh = grh_of(bytes);
        let mut attr = match raw::init_ah_from_wc(self, port, &mut raw_wc, &mut raw_grh) {
            Ok(attr) => attr,
            Err(err) => {
                return Err(match header {
                    Some(header) => self.not_found(port, header.destination(infiniband), err),
                    None => err,
                })
            }
        };
        if let Some(Header::Ipv4 { .. }) = header {
            // Read from bytes 0..4, which are not part of an IPv4 packet.
            attr.grh.flow_label = 0;
        }
        Ok(attr)
    }

    /// The error of an `ibv_init_ah_from_wc` that failed (`err`) on a header the crate
    /// accepted: [`AhFromWcError::GidNotFound`] if the port's GID table has no entry of
    /// `gid` and `gid_type`, the search's only way to fail on a valid port; `err` if it has
    /// one or the table cannot be read.
    #[cold]
    fn not_found(&self, port: u8, (gid, gid_type): (Gid, GidType), err: Error) -> Error {
        match self.gid_table(port) {
            Ok(table) if !table.iter().any(|e| e.gid == gid && e.gid_type == gid_type) => {
                Error::AhFromWc {
                    reason: AhFromWcError::GidNotFound {
                        gid,
                        gid_type,
                        port,
                    },
                }
            }
            _ => err,
        }
    }
}

/// The 40 bytes as a `struct ibv_grh`, each field's bytes as they are (network order).
fn grh_of(b: &[u8; GRH_LEN]) -> ffi::ibv_grh {
    let gid = |at: usize| {
        let mut raw = [0; 16];
        raw.copy_from_slice(&b[at..at + 16]);
        Gid::from_bytes(raw).to_raw()
    };
    ffi::ibv_grh {
        version_tclass_flow: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
        paylen: u16::from_ne_bytes([b[4], b[5]]),
        next_hdr: b[6],
        hop_limit: b[7],
        sgid: gid(8),
        dgid: gid(24),
    }
}

impl ProtectionDomain {
    /// Creates an address handle that answers the sender of a received datagram
    /// (`ibv_create_ah_from_wc`: [`Context::init_ah_from_wc`], then `ibv_create_ah`): from
    /// local port `port` to the sender's GID (and LID), leaving from the GID the datagram
    /// was sent to, with the received hop limit and traffic class.
    ///
    /// `wc` is the completion of a receive on a UD queue pair ([`WorkCompletion`], or an
    /// [`ExCompletion`] inside its poll session); `grh` the receive buffer from its start, at least the 40 bytes
    /// ([`GRH_LEN`]) before the payload, such as a copy read with
    /// [`MemoryRegion::read`](crate::MemoryRegion::read); `port` the port of the QP that
    /// received it ([`QueuePair::port`](crate::QueuePair::port)). The handle holds no QP
    /// number or Q_Key: send the answer to the completion's
    /// [`src_qp`](WorkCompletion::src_qp), with the Q_Key the peer expects.
    ///
    /// ```no_run
    /// # use rdma_verbs::{MemoryRegion, ProtectionDomain, QueuePair, SendRequest, WorkCompletion};
    /// # fn f(pd: &ProtectionDomain, qp: &QueuePair, wc: &WorkCompletion, buf: &MemoryRegion,
    /// #      reply: &MemoryRegion) -> rdma_verbs::Result<()> {
    /// let mut grh = [0; rdma_verbs::GRH_LEN];
    /// buf.read(0, &mut grh)?; // the receive's buffer, from its start
    /// let ah = pd.create_ah_from_wc(qp.port(), wc, &grh)?;
    /// let sge = [reply.sge(..)?];
    /// let send = SendRequest::send(1, &sge).ud(&ah, wc.src_qp(), rdma_verbs::DEFAULT_QKEY);
    /// qp.post_send(&mut [send.signaled()])?;
    /// # Ok(()) }
    /// ```
    ///
    /// # The 40 bytes before a UD payload
    /// Every receive on a UD queue pair starts with 40 bytes the device fills from the
    /// network header of the datagram; the payload follows at byte 40, and the completion's
    /// `byte_len` counts both. The completion says whether the 40 bytes hold a header
    /// ([`WorkCompletion::has_grh`]: `IBV_WC_GRH`, always set on RoCE), not which one.
    ///
    /// InfiniBand, RoCE v1 and RoCE v2 over IPv6 put a GRH there (InfiniBand's Global Route
    /// Header; for RoCE v2 over IPv6 the IPv6 header, which is laid out the same). Fields
    /// are big-endian:
    ///
    /// | bytes | field |
    /// |---|---|
    /// | 0..4 | IP version (the top 4 bits: 6), traffic class (the next 8), flow label (the low 20) |
    /// | 4..6 | payload length |
    /// | 6 | next header: 0x1B, InfiniBand's transport header (InfiniBand, RoCE v1), or 17, UDP (RoCE v2) |
    /// | 7 | hop limit |
    /// | 8..24 | source GID: the sender's |
    /// | 24..40 | destination GID: one of this port's, or a multicast group |
    ///
    /// RoCE v2 over IPv4 carries a 20-byte IPv4 header (without options), which the device
    /// puts in the last 20 bytes; the first 20 are not part of the packet and hold whatever
    /// the device left there:
    ///
    /// | bytes | field |
    /// |---|---|
    /// | 0..20 | unused |
    /// | 20 | version (the top 4 bits: 4) and header length in 32-bit words (the low 4: 5) |
    /// | 21 | type of service: DSCP and ECN |
    /// | 22..24 | total length |
    /// | 24..28 | identification, flags, fragment offset |
    /// | 28 | time to live |
    /// | 29 | protocol: 17, UDP |
    /// | 30..32 | header checksum |
    /// | 32..36 | source address: the sender's (its GID is the IPv4-mapped `::ffff:a.b.c.d`) |
    /// | 36..40 | destination address: one of this port's, or a multicast group |
    ///
    /// libibverbs tells the two apart by the bytes, and the crate does the same before the
    /// call: an IP version other than 6 in byte 0 means IPv4 when byte 20 holds version 4
    /// (and neither header otherwise); version 6 in byte 0 still means IPv4 when bytes
    /// 20..40 are an IPv4 header of length 5 with a valid checksum (unused bytes may hold a
    /// 6 too).
    ///
    /// # The address of the answer
    /// - destination: the sender's GID (the GRH's source GID, or the IPv4-mapped source
    ///   address); on InfiniBand also its LID, the completion's `slid`;
    /// - source: the entry of the port's GID table that holds the datagram's destination,
    ///   of the type its header implies (RoCE v2 for UDP and IPv4; InfiniBand or RoCE v1
    ///   for next header 0x1B), so the answer leaves from the address the datagram was
    ///   sent to;
    /// - hop limit and traffic class: the received ones (for IPv4 the time to live and
    ///   type of service); flow label: the received one, and 0 for IPv4 (libibverbs takes
    ///   it from bytes 0..4 there too, which are not part of the packet; the crate clears
    ///   it);
    /// - service level and source path bits: the completion's `sl` and `dlid_path_bits`.
    ///
    /// On InfiniBand, a completion without a GRH (a datagram from the same subnet) gives a
    /// vector to the sender's LID with no global route.
    ///
    /// Only a UD receive starts with the 40 bytes: a receive on a connected QP holds
    /// payload from byte 0, which would be read as a header (its completion may have
    /// `IBV_WC_GRH` all the same: rxe sets it on every receive). The completion does not
    /// tell the QP's type; its [`qp_num`](WorkCompletion::qp_num) does.
    ///
    /// # Errors
    /// The bytes are whatever the sender (or anything on the path to the port) put in the
    /// packet. Refused before the call, with nothing passed to libibverbs:
    /// - a failed completion: [`Error::Completion`] (its other fields are undefined);
    /// - not a receive: [`AhFromWcError::NotReceive`];
    /// - a port the device does not have: [`Error::OutOfRange`];
    /// - no GRH on RoCE: [`AhFromWcError::NoGrh`];
    /// - fewer than 40 bytes: [`AhFromWcError::ShortBuffer`];
    /// - neither a GRH nor an IPv4 header, a next header neither 0x1B nor UDP, a multicast
    ///   destination, a zero destination GID (which would match an empty entry of the
    ///   table): [`AhFromWcError::UnknownHeader`],
    ///   [`UnknownNextHeader`](AhFromWcError::UnknownNextHeader),
    ///   [`MulticastDestination`](AhFromWcError::MulticastDestination),
    ///   [`GidNotFound`](AhFromWcError::GidNotFound);
    /// - on InfiniBand, an [`ExCompletion`] of a CQ without `WcFields::SLID`, `SL` or
    ///   `DLID_PATH_BITS`: [`AhFromWcError::MissingField`] (on RoCE they read as 0).
    ///
    /// A destination that is no GID of the port of the header's type is
    /// [`AhFromWcError::GidNotFound`]; the provider's refusal of the vector, an
    /// [`Error::Verb`] of `ibv_create_ah`. The [`AhFromWcError`]s come as
    /// [`Error::AhFromWc`]. libibverbs reads 40 bytes through the pointer it is given: it
    /// gets a copy of the slice's first 40 in an aligned `struct ibv_grh` of the crate's,
    /// never the slice.
    ///
    /// # Cost
    /// Each call searches the port's GID table (libibverbs reads it entry by entry up to
    /// the datagram's destination) and creates a handle in the kernel: answer the datagrams
    /// of one sender through one handle, kept by its GID and QP number.
    pub fn create_ah_from_wc<C: Completion>(
        &self,
        port: u8,
        wc: &C,
        grh: &[u8],
    ) -> Result<AddressHandle> {
        let mut attr = self.context().ah_attr_from_wc(port, wc, grh)?;
        AddressHandle::from_attr(self, &mut attr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 header from `saddr` to `daddr` at bytes 20..40, bytes 0..20 `first`, with
    /// a valid checksum if `valid`.
    fn ipv4(first: u8, saddr: [u8; 4], daddr: [u8; 4], valid: bool) -> [u8; GRH_LEN] {
        let mut b = [first; GRH_LEN];
        let h = &mut b[20..];
        h[..12].copy_from_slice(&[0x45, 0x20, 0, 60, 0, 1, 0x40, 0, 64, UDP, 0, 0]);
        h[12..16].copy_from_slice(&saddr);
        h[16..].copy_from_slice(&daddr);
        let sum: u32 = (0..20)
            .step_by(2)
            .map(|i| u32::from(u16::from_ne_bytes([h[i], h[i + 1]])))
            .sum();
        let check = !((sum & 0xffff) + (sum >> 16)) as u16;
        let check = if valid { check } else { check ^ 1 };
        h[10..12].copy_from_slice(&check.to_ne_bytes());
        b
    }

    /// A GRH with IP version 6, next header `next` and destination GID `dgid`.
    fn grh(next: u8, dgid: &str) -> [u8; GRH_LEN] {
        let mut b = [0; GRH_LEN];
        b[..4].copy_from_slice(&[0x60, 0, 0, 0]);
        b[6] = next;
        b[7] = 64;
        let dgid: Gid = dgid.parse().unwrap();
        b[24..].copy_from_slice(&dgid.to_bytes());
        b
    }

    #[test]
    fn checksum_of_a_textbook_header() {
        // A header with its checksum (0xb861) as network references print it.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert!(ipv4_checksum_holds(&h));
        let mut bad = h;
        bad[11] ^= 1;
        assert!(!ipv4_checksum_holds(&bad));
    }

    #[test]
    fn headers_are_told_apart_as_libibverbs_does() {
        let local = [127, 0, 0, 1];
        // RoCE v2 over IPv4: the first 20 bytes do not count unless they say 6.
        let daddr = Ipv4Addr::from(local);
        for first in [0, 0x45, 0xff] {
            let b = ipv4(first, [127, 0, 0, 2], local, false);
            assert_eq!(Header::parse(&b), Ok(Header::Ipv4 { daddr }), "{first:#x}");
        }
        // Version 6 in byte 0: IPv4 only with a valid checksum; else a GRH, whose next
        // header (byte 6) is then one of the unused bytes.
        let b = ipv4(0x60, [127, 0, 0, 2], local, true);
        assert_eq!(Header::parse(&b), Ok(Header::Ipv4 { daddr }));
        let b = ipv4(0x60, [127, 0, 0, 2], local, false);
        assert_eq!(
            Header::parse(&b),
            Err(AhFromWcError::UnknownNextHeader { next_header: 0x60 })
        );
        // Version 6 and an IPv4 header of another length: a GRH, checksum or not.
        let mut b = ipv4(0x60, [127, 0, 0, 2], local, true);
        b[6] = UDP;
        b[20] = 0x46;
        assert!(matches!(Header::parse(&b), Ok(Header::Grh { .. })));
        // Version 4 in byte 20 is enough when byte 0 does not say 6.
        let mut b = [0; GRH_LEN];
        b[20] = 0x4f;
        b[36..].copy_from_slice(&local);
        assert_eq!(Header::parse(&b), Ok(Header::Ipv4 { daddr }));
        // Neither.
        let mut b = [0; GRH_LEN];
        b[0] = 0x45;
        b[20] = 0x60;
        assert_eq!(
            Header::parse(&b),
            Err(AhFromWcError::UnknownHeader {
                version: 4,
                ipv4_version: 6
            })
        );
        assert_eq!(
            Header::parse(&[0; GRH_LEN]),
            Err(AhFromWcError::UnknownHeader {
                version: 0,
                ipv4_version: 0
            })
        );
    }

    #[test]
    fn grh_next_headers_and_destinations() {
        let gid = |s: &str| s.parse::<Gid>().unwrap();
        let b = grh(UDP, "::1");
        let h = Header::parse(&b).unwrap();
        assert_eq!(h.destination(false), (gid("::1"), GidType::RoceV2));
        assert_eq!(h.destination(true), (gid("::1"), GidType::RoceV2));
        let h = Header::parse(&grh(IB_BTH, "fe80::2")).unwrap();
        assert_eq!(h.destination(false), (gid("fe80::2"), GidType::RoceV1));
        assert_eq!(h.destination(true), (gid("fe80::2"), GidType::Ib));
        assert_eq!(
            Header::parse(&grh(6, "::1")),
            Err(AhFromWcError::UnknownNextHeader { next_header: 6 })
        );
        // A multicast destination is refused before the next header is looked at.
        assert_eq!(
            Header::parse(&grh(6, "ff0e::1")),
            Err(AhFromWcError::MulticastDestination {
                group: gid("ff0e::1")
            })
        );
        let b = ipv4(0, [127, 0, 0, 2], [239, 1, 2, 3], true);
        assert_eq!(
            Header::parse(&b),
            Err(AhFromWcError::MulticastDestination {
                group: gid("::ffff:239.1.2.3")
            })
        );
        let h = Header::parse(&ipv4(0, [1, 2, 3, 4], [10, 0, 0, 1], true)).unwrap();
        assert_eq!(
            h.destination(false),
            (gid("::ffff:10.0.0.1"), GidType::RoceV2)
        );
    }

    #[test]
    fn the_grh_copy_keeps_the_bytes_in_place() {
        let b: [u8; GRH_LEN] = std::array::from_fn(|i| i as u8);
        let raw = grh_of(&b);
        assert_eq!(raw.version_tclass_flow.to_ne_bytes(), [0, 1, 2, 3]);
        assert_eq!(u32::from_be(raw.version_tclass_flow), 0x0001_0203);
        assert_eq!(raw.paylen.to_ne_bytes(), [4, 5]);
        assert_eq!((raw.next_hdr, raw.hop_limit), (6, 7));
        assert_eq!(Gid::from_raw(raw.sgid).to_bytes(), b[8..24]);
        assert_eq!(Gid::from_raw(raw.dgid).to_bytes(), b[24..]);
    }
}
