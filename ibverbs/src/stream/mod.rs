//! Byte streams over one RC connection set up by rdma_cm (feature `cm`): [`RdmaStream`] is
//! `Read` + `Write` (blocking), with its [`RdmaListener`]; the tokio `AsyncRead` +
//! `AsyncWrite` form is `tokio::stream::RdmaStream` (features `tokio` and `cm`), with its
//! listener. Both speak the same protocol, so either end may be either form.
//!
//! # The protocol
//! Each side registers two rings when it connects or accepts, and says in its private data
//! (a 12-byte hello) the size of its receive slots and how many it has. Every message is one
//! send into one of the peer's posted receives, with an 8-byte header in front: its kind and
//! the credits it returns. There are three kinds:
//!
//! - data: up to a slot of the stream's bytes, taken from one of this side's send slots;
//! - end (after a `shutdown`): no bytes; the peer's reads end there, as a TCP half-close;
//! - control: credits only.
//!
//! A side may have as many data messages outstanding to its peer as the peer has data
//! slots, and as many control and end messages as it has control slots (at least 4); the
//! peer posts a receive for each. A data slot goes back to the receive queue once the reader has read
//! all of its bytes, a control slot at once; the credits for both go back in the header of
//! this side's next message. When it has nothing to send and half its data slots are
//! reposted (or all of the peer's control credits used), it sends a control message. So:
//!
//! - a writer never sends into a receive the peer has not posted (no receiver-not-ready),
//!   and the peer's ring bounds what is in flight: memory per stream is fixed when it
//!   connects, and a reader that does not read stops the writer (backpressure);
//! - credits need no data slot: a side that writes and never reads still gets the control
//!   messages that return its credits, which need no read to be consumed.
//!
//! Writes copy into the open send slot and post it at once when a credit allows; without
//! one, later writes fill the same slot until it is full or a credit comes (bytes written
//! are sent by any later read, write, flush or shutdown of the stream). `flush` returns once
//! every byte is posted (in the HCA's send queue, as a TCP flush hands bytes to the
//! kernel).
//!
//! `shutdown` queues the end behind the bytes written; the peer reads them all, then the
//! end, in order (the end goes on a control credit, which comes back without the peer
//! reading). It returns once every send completed, so the peer has every byte and the end
//! (and dropping the stream then loses nothing), with one exception, where waiting could
//! be waiting for this side's own reader: bytes still wait for room in the peer's ring
//! while this side's unread messages fill its receive ring (the peer may be blocked
//! writing to this side, as an echoing peer that this side has not read yet is). Then it
//! returns at once, as TCP's does (the end queued, not delivered): the bytes and the end go
//! out as this side's reads make room, and a read reports the peer's end (`Ok(0)`) only
//! once they were delivered, so that reading to the end and dropping loses nothing. A
//! `flush` after a `shutdown` waits for all of it (every byte and the end sent and
//! completed). A peer that neither reads nor writes holds a shutdown as it holds a write
//! (backpressure; the keepalive probes end it if its host vanishes).

//! Send and receive (not RDMA write with immediate into the peer's ring): iWARP has no
//! immediate data, so the same protocol runs on InfiniBand, RoCE and iWARP; the peer gets no
//! write access to this side's memory; and a prototype of the other way was no faster on
//! rxe (docs/performance-connections.md in the repository).
//!
//! # What the peer controls
//! Everything in a message is checked before it is used: a header of unknown kind, a
//! message shorter than its header, credits beyond the slots the peer has, more data
//! messages than this side's slots, data after the end, a hello out of range. Any of them
//! breaks the stream with an `InvalidData` error (and moves the QP to the error state); a
//! message longer than a slot fails in the HCA (a local length error) and breaks it too.
//! None of them reaches memory outside the rings.
//!
//! # Closing
//! Dropping a stream destroys its QP first (the HCA is then done with both rings), then its
//! id (the peer gets a disconnect), then deregisters the rings: nothing the device may still
//! touch is freed. Dropping is abortive, as a TCP close with a zero linger: bytes written
//! but not yet sent (in the open slot, or posted and not yet completed) are dropped with
//! it. `shutdown` first (then read to the peer's end, or `flush`, if it returned with bytes
//! queued), and the peer has them all. A peer's disconnect (its process ending, its stream dropped) ends
//! this side's reads with `ConnectionReset` once the bytes that came before it are read
//! (`Ok(0)` if its end came first), and fails writes with `BrokenPipe`; a peer that
//! vanishes without a disconnect (its host gone, the link down) fails the next send after
//! the transport's retries (7 tries of the CM's ACK timeout, seconds), which breaks the
//! stream for both directions. A side that waits with nothing in flight (a reader, or a
//! writer out of credits) probes the peer after each keepalive interval it waited
//! ([`StreamConfig::keepalive`]): a zero-length RDMA write, which the peer's HCA
//! acknowledges without its software (no receive, no credit, nothing for the peer's reader).
//! A vanished host fails the probe the same way, so every wait ends within the interval
//! plus the retries. A wait of this side's own that fails (polling its CQ or its CM
//! channel; for the tokio form, as its runtime was dropped) breaks the stream with an
//! error of kind `Other` naming it, as tokio's own sockets do for a runtime gone: never a
//! peer's kind.

mod blocking;
pub(crate) mod ring;
pub(crate) mod setup;
pub(crate) mod wire;

pub use blocking::{RdmaListener, RdmaStream};

use std::time::Duration;

use crate::cm::CmOption;
use crate::error::{Error, Result};
use wire::{Hello, MAX_DATA_SLOTS, MAX_SLOT};

/// Control slots each side posts, beyond its data slots.
const CTRL_SLOTS: u16 = 4;
/// The default keepalive interval.
const KEEPALIVE: Duration = Duration::from_secs(10);
/// The default handshake timeout.
const HANDSHAKE: Duration = Duration::from_secs(5);
/// Connect requests a listener (either form) takes through their handshake at once; more
/// wait in the CM's backlog.
pub(crate) const HANDSHAKES: usize = 64;
/// The listen backlog of both listeners.
pub(crate) const BACKLOG: i32 = 128;

/// The rings of a stream and its set-up's timeout.
///
/// Memory per stream: `slots` × `slot_size` bytes of send ring and `slots + 4` ×
/// `slot_size` of receive ring, registered (pinned) when the stream connects or is
/// accepted. Providers that count pinned memory against `RLIMIT_MEMLOCK` (siw, and every
/// provider for a process without `CAP_IPC_LOCK`) fail a stream over the limit with an
/// `OutOfMemory` error from `ibv_reg_mr`: raise the limit (`memlock` in limits.conf), as
/// RDMA hosts do, or make the rings smaller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamConfig {
    slot_size: usize,
    slots: u16,
    resolve_timeout: Duration,
    keepalive: Option<Duration>,
    handshake_timeout: Duration,
    traffic_class: u8,
}

impl Default for StreamConfig {
    /// 8 slots of 64 KiB (1.25 MiB registered per stream), a resolve timeout of 2 s, a
    /// keepalive probe after 10 s of waiting, a handshake timeout of 5 s, traffic class 0.
    fn default() -> Self {
        StreamConfig {
            slot_size: 64 << 10,
            slots: 8,
            resolve_timeout: Duration::from_secs(2),
            keepalive: Some(KEEPALIVE),
            handshake_timeout: HANDSHAKE,
            traffic_class: 0,
        }
    }
}

impl StreamConfig {
    /// The size of each slot in bytes (its 8-byte header included): the most one message
    /// carries. From 9 to 16 MiB; checked when the stream is made.
    pub fn slot_size(mut self, bytes: usize) -> Self {
        self.slot_size = bytes;
        self
    }

    /// How many data messages may be in flight each way: 1 to 1024; checked when the
    /// stream is made.
    pub fn slots(mut self, slots: u16) -> Self {
        self.slots = slots;
        self
    }

    /// How long resolving the peer's address and route may take each (a connect's).
    pub fn resolve_timeout(mut self, timeout: Duration) -> Self {
        self.resolve_timeout = timeout;
        self
    }

    /// How long a stream waits for news (a completion, the peer's disconnect) before it
    /// probes the peer: a zero-length RDMA write, which the peer's HCA acknowledges
    /// without its process (which sees nothing of it). If the peer's host vanished (its
    /// power, its link), the probe fails after the transport's retries and the waiting
    /// read or write fails with `ConnectionReset` or `BrokenPipe`: within this interval
    /// plus the retries. No probe goes out while a message is in flight (its own retries
    /// do the same). `None`: no probes, and a side that waits with nothing in flight waits
    /// as a TCP socket without keepalive does. From 1 ms to `i32::MAX` ms; checked when
    /// the stream is made.
    pub fn keepalive(mut self, interval: Option<Duration>) -> Self {
        self.keepalive = interval;
        self
    }

    /// How long a listener gives each connect request it accepts to become a connection
    /// (the peer's answer to the accept: on InfiniBand and RoCE, the ready-to-use message
    /// its librdmacm sends when its process reads the accept). A handshake that takes
    /// longer is dropped (its id destroyed: the peer sees a reject), so a peer that never
    /// completes its connect holds one of the listener's 64 handshake places for this
    /// long, and no other client waits for it: handshakes run side by side. From 1 ms to
    /// `i32::MAX` ms; checked when the listener is made.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// The traffic class of the stream's packets: on RoCE v2 and iWARP the IP header's
    /// type of service byte (DSCP and ECN), on InfiniBand the GRH's traffic class. Set on
    /// the stream's CM ids ([`CmOption::TrafficClass`], `RDMA_OPTION_ID_TOS`) by a connect,
    /// before its route is resolved, and by a listener on its listening id. On InfiniBand and RoCE an accepted stream's QP sends with the
    /// class of the connect request, so the connecting side's setting is the one both ends
    /// use. rdma_cm has no service level setting: on RoCE the kernel derives the route's
    /// service level (the Ethernet priority) from this byte, on InfiniBand the subnet
    /// administrator's path record carries it.
    #[doc(alias = "tos")]
    pub fn traffic_class(mut self, class: u8) -> Self {
        self.traffic_class = class;
        self
    }

    /// The traffic class, as the CM option that sets it.
    pub(crate) fn tos(&self) -> CmOption {
        CmOption::TrafficClass(self.traffic_class)
    }

    pub(crate) fn timeout(&self) -> Duration {
        self.resolve_timeout
    }

    /// The handshake timeout, checked.
    pub(crate) fn handshake_deadline(&self) -> Result<Duration> {
        in_millis("stream handshake timeout (ms)", self.handshake_timeout)
    }

    /// The keepalive interval, checked.
    pub(crate) fn probe_interval(&self) -> Result<Option<Duration>> {
        self.keepalive
            .map(|interval| in_millis("stream keepalive interval (ms)", interval))
            .transpose()
    }

    /// The hello this side sends: its ring.
    pub(crate) fn hello(&self) -> Result<Hello> {
        let slot = u32::try_from(self.slot_size)
            .ok()
            .filter(|s| (wire::HEADER as u32 + 1..=MAX_SLOT).contains(s))
            .ok_or(Error::OutOfRange {
                what: "stream slot size",
                value: self.slot_size as u64,
                min: wire::HEADER as u64 + 1,
                max: u64::from(MAX_SLOT),
            })?;
        let ring = (usize::from(self.slots) + usize::from(CTRL_SLOTS)).checked_mul(self.slot_size);
        if !matches!(ring, Some(bytes) if isize::try_from(bytes).is_ok()) {
            return Err(Error::OutOfRange {
                what: "stream slot size (the receive ring's bytes do not fit the address space)",
                value: self.slot_size as u64,
                min: wire::HEADER as u64 + 1,
                max: (isize::MAX as usize / (usize::from(self.slots) + usize::from(CTRL_SLOTS)))
                    as u64,
            });
        }
        if !(1..=MAX_DATA_SLOTS).contains(&self.slots) {
            return Err(Error::OutOfRange {
                what: "stream slots",
                value: u64::from(self.slots),
                min: 1,
                max: u64::from(MAX_DATA_SLOTS),
            });
        }
        Ok(Hello {
            slot,
            data: self.slots,
            ctrl: CTRL_SLOTS,
        })
    }
}

/// `value` if it is from 1 ms to `i32::MAX` ms (what `poll(2)` and a timer take), else an
/// `OutOfRange` error for `what`.
fn in_millis(what: &'static str, value: Duration) -> Result<Duration> {
    let max = Duration::from_millis(i32::MAX as u64);
    if !(Duration::from_millis(1)..=max).contains(&value) {
        return Err(Error::OutOfRange {
            what,
            value: value.as_millis().try_into().unwrap_or(u64::MAX),
            min: 1,
            max: i32::MAX as u64,
        });
    }
    Ok(value)
}
