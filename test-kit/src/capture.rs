//! The RoCE v2 packets (UDP port 4791) a network device sends and receives, captured
//! with a packet socket (`AF_PACKET`, which needs root, as the VMs of `scripts/with-rdma`
//! run their commands), so that a test reads what went on the wire: each packet's IP
//! traffic class (IPv4's type of service byte, IPv6's traffic class: DSCP and ECN) and its
//! destination QP.
//!
//! rxe hands packets between QPs of one host back inside the kernel, so only traffic
//! between two hosts (the link-fault tests' topologies) reaches a network device.

use std::ffi::CString;
use std::io;
use std::mem;
use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// RoCE v2's UDP destination port.
pub const ROCE_V2_PORT: u16 = 4791;
/// The destination QP of InfiniBand's general services (management datagrams: the CM's
/// requests, replies and disconnects).
pub const GSI_QP: u32 = 1;

/// How long one read waits before the capture looks at its deadline again.
const READ_WAIT: Duration = Duration::from_millis(50);

/// One RoCE v2 packet seen on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocePacket {
    /// The IP header's traffic class byte: DSCP (6 bits) and ECN (2 bits).
    pub traffic_class: u8,
    /// The sender's address.
    pub src: IpAddr,
    /// The receiver's address.
    pub dst: IpAddr,
    /// The base transport header's opcode.
    pub opcode: u8,
    /// The base transport header's destination QP.
    pub dest_qp: u32,
    /// Whether this host sent it (else it received it).
    pub outgoing: bool,
}

/// A packet socket bound to one network device, capturing from the moment it is opened.
pub struct Capture {
    fd: OwnedFd,
    netdev: String,
    ifindex: i32,
}

impl Capture {
    /// Starts capturing every packet `netdev` sends or receives. Panics, naming the
    /// device, when it does not exist or the process may not open a packet socket (root
    /// or `CAP_NET_RAW` is needed).
    pub fn open(netdev: &str) -> Capture {
        let name = CString::new(netdev).expect("a device name without NUL");
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        assert!(
            ifindex != 0,
            "capture: no network device {netdev}: {}",
            io::Error::last_os_error()
        );
        let all = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain system call with constant arguments; the descriptor it returns is
        // owned by the `OwnedFd` made below and by nothing else.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, i32::from(all)) };
        assert!(
            raw >= 0,
            "capture on {netdev}: socket(AF_PACKET) (root or CAP_NET_RAW needed): {}",
            io::Error::last_os_error()
        );
        // SAFETY: `raw` is a descriptor just opened and owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: `sockaddr_ll` is plain data, for which all zeroes is a valid value.
        let mut at: libc::sockaddr_ll = unsafe { mem::zeroed() };
        at.sll_family = libc::AF_PACKET as u16;
        at.sll_protocol = all;
        at.sll_ifindex = ifindex as i32;
        // SAFETY: `at` is a valid `sockaddr_ll` of the length given, read during the call.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&at as *const libc::sockaddr_ll).cast(),
                mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        assert_eq!(
            rc,
            0,
            "capture: bind to {netdev}: {}",
            io::Error::last_os_error()
        );
        let capture = Capture {
            fd,
            netdev: netdev.to_owned(),
            ifindex: ifindex as i32,
        };
        // Room for the bursts of a short transfer; the reads give up at their deadline.
        capture.set_option(libc::SO_RCVBUF, 4 << 20);
        let wait = libc::timeval {
            tv_sec: 0,
            tv_usec: READ_WAIT.as_micros() as libc::suseconds_t,
        };
        capture.set_option(libc::SO_RCVTIMEO, wait);
        capture
    }

    /// `setsockopt` at level `SOL_SOCKET`.
    fn set_option<T>(&self, option: i32, value: T) {
        // SAFETY: `value` is a `T` of the size given, read during the call; the options
        // set here (a buffer size, a timeout) take exactly that type.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                option,
                (&value as *const T).cast(),
                mem::size_of::<T>() as libc::socklen_t,
            )
        };
        assert_eq!(
            rc,
            0,
            "capture on {}: setsockopt({option}): {}",
            self.netdev,
            io::Error::last_os_error()
        );
    }

    /// The RoCE v2 packets captured since the capture was opened (or last read), read
    /// until `quiet` passes without one, and at most until `deadline`.
    pub fn roce_packets(&self, quiet: Duration, deadline: Instant) -> Vec<RocePacket> {
        let mut packets = Vec::new();
        let mut last = Instant::now();
        let mut buf = vec![0u8; 65536];
        while Instant::now() < deadline && last.elapsed() < quiet {
            // SAFETY: `sockaddr_ll` is plain data, for which all zeroes is a valid value.
            let mut from: libc::sockaddr_ll = unsafe { mem::zeroed() };
            let mut from_len = mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
            // SAFETY: `buf` and `from` are writable for the lengths given and outlive the
            // call; `from_len` says how much of `from` the kernel may write.
            let n = unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    0,
                    (&mut from as *mut libc::sockaddr_ll).cast(),
                    &mut from_len,
                )
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                match err.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => continue,
                    _ => panic!("capture on {}: recvfrom: {err}", self.netdev),
                }
            }
            // Packets of other devices queued between `socket` and `bind` are not ours.
            if from.sll_ifindex != self.ifindex {
                continue;
            }
            let outgoing = from.sll_pkttype == libc::PACKET_OUTGOING;
            let protocol = u16::from_be(from.sll_protocol);
            if let Some(packet) = parse(protocol, &buf[..n as usize], outgoing) {
                packets.push(packet);
                last = Instant::now();
            }
        }
        packets
    }
}

/// The RoCE v2 packet in `frame` (an IP packet of EtherType `protocol`), if it is one: UDP
/// to port 4791 with a whole base transport header.
fn parse(protocol: u16, frame: &[u8], outgoing: bool) -> Option<RocePacket> {
    let (traffic_class, src, dst, udp) = match protocol as i32 {
        libc::ETH_P_IP if frame.len() >= 20 => {
            let header = usize::from(frame[0] & 0x0f) * 4;
            if frame[9] != libc::IPPROTO_UDP as u8 || frame.len() < header {
                return None;
            }
            let src: [u8; 4] = frame[12..16].try_into().ok()?;
            let dst: [u8; 4] = frame[16..20].try_into().ok()?;
            (frame[1], src.into(), dst.into(), &frame[header..])
        }
        libc::ETH_P_IPV6 if frame.len() >= 40 => {
            // No extension headers: RoCE v2 sends none.
            if frame[6] != libc::IPPROTO_UDP as u8 {
                return None;
            }
            let class = (frame[0] << 4) | (frame[1] >> 4);
            let src: [u8; 16] = frame[8..24].try_into().ok()?;
            let dst: [u8; 16] = frame[24..40].try_into().ok()?;
            (class, src.into(), dst.into(), &frame[40..])
        }
        _ => return None,
    };
    // UDP (8 bytes), then the base transport header (12): opcode, ..., destination QP in
    // bytes 5 to 7.
    if udp.len() < 8 + 12 || u16::from_be_bytes([udp[2], udp[3]]) != ROCE_V2_PORT {
        return None;
    }
    let bth = &udp[8..];
    Some(RocePacket {
        traffic_class,
        src,
        dst,
        opcode: bth[0],
        dest_qp: u32::from_be_bytes([0, bth[5], bth[6], bth[7]]),
        outgoing,
    })
}
