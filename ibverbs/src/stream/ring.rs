//! The protocol under both stream types: the two rings of registered slots, the credits,
//! the messages received and not yet read. No waiting here: the owners poll the CQ, hand
//! the completions to [`Rings::complete`], and retry what said it would block.

use std::collections::VecDeque;
use std::io::{self, IoSlice};

use super::wire::{Header, Hello, Kind, HEADER};
use crate::error::Result;
use crate::{AccessFlags, Mapping, MemoryRegion, PostError, ProtectionDomain, QueuePair};
use crate::{CompletionQueue, WcStatus, WorkCompletion};
use crate::{RecvRequest, RemoteMemory, SendRequest, Sge};

/// `wr_id` tags of sends (control messages and keepalive probes share one); a receive's
/// `wr_id` is its slot.
const DATA: u64 = 1 << 62;
const CTRL: u64 = 2 << 62;
const FIN: u64 = 3 << 62;
const TAG: u64 = 3 << 62;
/// Completions taken per poll of the CQ.
pub(crate) const BATCH: usize = 16;

/// A received message not yet read through.
#[derive(Debug)]
struct Msg {
    slot: u32,
    /// The next byte to read, from the slot's start (past the header).
    at: u32,
    end: u32,
    fin: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fin {
    /// Not asked for.
    No,
    /// Asked for ([`Rings::shutdown`]), posted once the open slot is.
    Wanted,
    Posted,
    /// Its send completed: the peer has it.
    Done,
}

/// Why the stream no longer moves bytes.
#[derive(Debug)]
struct Broken {
    cause: Cause,
    why: String,
}

/// Whose the cause of a [`Broken`] stream is, which decides its errors' kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cause {
    /// The connection ended (a request failed or was flushed): `ConnectionReset` on reads,
    /// `BrokenPipe` on writes.
    Connection,
    /// The peer broke the protocol: `InvalidData`.
    Protocol,
    /// This side's wait failed (its CQ, its CM channel or its timer; with tokio, a runtime
    /// dropped or shutting down): `Other`, as tokio's own sockets give for a runtime gone.
    Local,
}

/// What a read or write found.
pub(crate) type Step<T> = Option<io::Result<T>>;

/// The protocol's state (see the module docs of `stream` for the protocol).
#[derive(Debug)]
pub(crate) struct Rings {
    /// `ours.data` send slots of `send_slot` bytes, then a header's room that control
    /// messages are sent inline from (the CPU copies them at the post).
    send: MemoryRegion<Mapping>,
    /// `ours.data + ours.ctrl` receive slots of `ours.slot` bytes.
    recv: MemoryRegion<Mapping>,
    ours: Hello,
    peer: Hello,
    /// Bytes of a send slot used: the smaller of ours and the peer's receive slot.
    send_slot: usize,
    /// Data messages posted and completed (in order: one QP's sends complete in order).
    posted: u64,
    done: u64,
    /// Payload bytes in the open slot (the one at `posted`), not yet posted.
    open: usize,
    /// Send queue entries free, of `sq_size`.
    sq_free: u32,
    sq_size: u32,
    /// Messages the peer has room for.
    data_credits: u32,
    ctrl_credits: u32,
    fin: Fin,
    ready: VecDeque<Msg>,
    fin_seen: bool,
    /// Receives reposted since this side's last message (the credits it returns next).
    data_unreported: u32,
    ctrl_unreported: u32,
    /// The CM said the peer disconnected (its later receives are flushed).
    peer_closed: bool,
    broken: Option<Broken>,
}

impl Rings {
    /// Registers the rings of `ours` in `pd`. The peer's side is unknown (no credits) until
    /// [`connected`](Self::connected).
    ///
    /// The rings are anonymous mappings, which the kernel hands out zeroed: `alloc_mr`'s
    /// page-aligned heap buffer is zeroed by a `memset` that faults every page in one at a
    /// time before the registration pins them (half of a listener's CPU time when it
    /// accepted 1,000 streams: docs/performance-connections.md).
    pub(crate) fn new(pd: &ProtectionDomain, ours: Hello) -> Result<Rings> {
        let slot = ours.slot as usize;
        let ring = |len: usize| pd.register(Mapping::anonymous(len)?, AccessFlags::LOCAL_WRITE);
        let send = ring(usize::from(ours.data) * slot + HEADER)?;
        let recv = ring(usize::from(ours.data + ours.ctrl) * slot)?;
        Ok(Rings {
            send,
            recv,
            ours,
            peer: ours,
            send_slot: slot,
            posted: 0,
            done: 0,
            open: 0,
            sq_free: 0,
            sq_size: 0,
            data_credits: 0,
            ctrl_credits: 0,
            fin: Fin::No,
            ready: VecDeque::new(),
            fin_seen: false,
            data_unreported: 0,
            ctrl_unreported: 0,
            peer_closed: false,
            broken: None,
        })
    }

    /// Posts every receive slot on `qp` (before the connection, so that the peer's first
    /// message finds one).
    pub(crate) fn post_receives(&mut self, qp: &QueuePair) -> Result<()> {
        for slot in 0..u32::from(self.ours.data + self.ours.ctrl) {
            self.post_recv(qp, slot).map_err(|e| e.into_inner())?;
        }
        Ok(())
    }

    /// The connection is up: the peer said `peer`, and `qp` was granted its queues.
    pub(crate) fn connected(&mut self, peer: Hello, qp: &QueuePair) {
        self.peer = peer;
        self.send_slot = self.send_slot.min(peer.slot as usize);
        self.data_credits = u32::from(peer.data);
        self.ctrl_credits = u32::from(peer.ctrl);
        // What the CQ was sized for (a provider may grant more).
        let sends = u32::from(self.ours.data) + u32::from(self.ours.ctrl) + 1;
        self.sq_size = qp.max_send_wr().min(sends);
        self.sq_free = self.sq_size;
    }

    /// Probes the peer, if nothing is in flight to it: a zero-length RDMA write (no
    /// address, no key: IBA C9-88 and RDMAP let a zero-length write carry neither), which
    /// the peer's HCA acknowledges without its software: it takes no receive and no credit.
    /// A peer host that vanished fails it after the transport's retries, which breaks the
    /// stream. A message in flight fails the same way, so none is posted then.
    pub(crate) fn keepalive(&mut self, qp: &QueuePair) {
        if self.ended() || self.sq_free < self.sq_size {
            return;
        }
        let wr = SendRequest::write(CTRL, Sge::NONE, RemoteMemory::default()).signaled();
        match qp.post_send(&mut [wr]) {
            Ok(()) => self.sq_free -= 1,
            Err(e) => self.fail(format!("posting a keepalive probe: {e}")),
        }
    }

    /// The CM reported the peer's disconnect.
    pub(crate) fn peer_closed(&mut self) {
        self.peer_closed = true;
    }

    /// Breaks the stream as the connection ended: a request failed or was flushed, or
    /// could not be posted.
    pub(crate) fn fail(&mut self, why: String) {
        self.break_for(Cause::Connection, why);
    }

    /// Breaks the stream for a reason of this side's: the owner's wait for its CQ, its CM
    /// channel or its timer failed (with tokio, as the runtime was dropped).
    pub(crate) fn fail_locally(&mut self, why: String) {
        self.break_for(Cause::Local, why);
    }

    /// Breaks the stream for `cause`, unless it broke before (the first cause stays).
    fn break_for(&mut self, cause: Cause, why: String) {
        self.broken.get_or_insert(Broken { cause, why });
    }

    fn violation(&mut self, qp: &QueuePair, why: String) {
        if self.broken.is_none() {
            // Stops the peer's messages; what was posted is flushed.
            let _ = qp.to_error();
        }
        self.break_for(
            Cause::Protocol,
            format!("the peer broke the stream protocol: {why}"),
        );
    }

    /// Whether nothing more can arrive: reads end with what is queued.
    fn ended(&self) -> bool {
        self.peer_closed || self.broken.is_some()
    }

    fn error(&self, kind: io::ErrorKind) -> io::Error {
        match &self.broken {
            Some(b) => {
                let kind = match b.cause {
                    Cause::Connection => kind,
                    Cause::Protocol => io::ErrorKind::InvalidData,
                    Cause::Local => io::ErrorKind::Other,
                };
                io::Error::new(kind, b.why.clone())
            }
            None => io::Error::new(kind, "the peer closed the connection"),
        }
    }

    /// Hands completions of the stream's CQ over, then sends what they allow.
    pub(crate) fn complete(&mut self, qp: &QueuePair, wcs: &[WorkCompletion]) {
        for wc in wcs {
            let id = wc.wr_id();
            if id & TAG != 0 {
                self.sq_free += 1;
                match id & TAG {
                    DATA => self.done += 1,
                    FIN if wc.is_success() => self.fin = Fin::Done,
                    _ => {}
                }
            }
            if !wc.is_success() {
                let status = wc.status();
                let why = if status == WcStatus::WR_FLUSH_ERR {
                    "the connection was closed (its requests were flushed)".to_string()
                } else {
                    format!("a request failed with {status:?}")
                };
                self.fail(why);
            } else if id & TAG == 0 {
                self.received(qp, id as u32, wc.byte_len());
            }
        }
        self.pump(qp);
    }

    /// Hands every completion on `cq` (the stream's) to [`complete`](Self::complete),
    /// without waiting; whether there was one.
    pub(crate) fn drain(&mut self, cq: &CompletionQueue, qp: &QueuePair) -> Result<bool> {
        let mut wc = [WorkCompletion::default(); BATCH];
        let mut any = false;
        loop {
            let done = cq.poll(&mut wc)?;
            if done.is_empty() {
                return Ok(any);
            }
            self.complete(qp, done);
            any = true;
        }
    }

    /// Takes the message that came into receive slot `slot`.
    fn received(&mut self, qp: &QueuePair, slot: u32, len: u32) {
        if self.broken.is_some() {
            return;
        }
        if (len as usize) < HEADER {
            return self.violation(qp, format!("a message of {len} bytes, without a header"));
        }
        let mut bytes = [0; HEADER];
        let at = slot as usize * self.ours.slot as usize;
        if let Err(e) = self.recv.read(at, &mut bytes) {
            return self.fail(e.to_string());
        }
        let header = match Header::decode(bytes) {
            Ok(header) => header,
            Err(e) => return self.violation(qp, e.to_string()),
        };
        let data = self.data_credits.saturating_add(header.data_credits);
        let ctrl = self
            .ctrl_credits
            .saturating_add(u32::from(header.ctrl_credits));
        let sent = self.posted.saturating_sub(self.done);
        if data > u32::from(self.peer.data) || ctrl > u32::from(self.peer.ctrl) {
            return self.violation(
                qp,
                format!(
                    "it returned credits for {data} data and {ctrl} control messages, over \
                     its {} and {} slots ({sent} of this side's data messages in flight)",
                    self.peer.data, self.peer.ctrl
                ),
            );
        }
        let payload = len as usize - HEADER;
        let ctrl_room = self.ctrl_unreported < u32::from(self.ours.ctrl);
        match header.kind {
            // Control messages go on after the end: the peer still reads and returns credits.
            Kind::Ctrl | Kind::Fin
                if payload == 0 && ctrl_room && !(header.kind == Kind::Fin && self.fin_seen) =>
            {
                self.ctrl_unreported += 1;
                self.repost(qp, slot);
                if header.kind == Kind::Fin {
                    // After every data message before it (one QP's messages arrive in
                    // order), holding no slot.
                    self.fin_seen = true;
                    self.ready.push_back(Msg {
                        slot,
                        at: 0,
                        end: 0,
                        fin: true,
                    });
                }
            }
            Kind::Ctrl | Kind::Fin => {
                return self.violation(
                    qp,
                    format!(
                        "a {:?} message of {payload} payload bytes, over its {} control credits, \
                         or a second end",
                        header.kind, self.ours.ctrl
                    ),
                )
            }
            Kind::Data => {
                let held = self.ready.len() as u32 + self.data_unreported;
                if self.fin_seen || held >= u32::from(self.ours.data) || payload == 0 {
                    return self.violation(
                        qp,
                        format!(
                            "a data message of {payload} payload bytes after {held} (over its {} \
                             data credits, after its end, or empty)",
                            self.ours.data
                        ),
                    );
                }
                self.ready.push_back(Msg {
                    slot,
                    at: HEADER as u32,
                    end: len,
                    fin: false,
                });
            }
        }
        self.data_credits = data;
        self.ctrl_credits = ctrl;
    }

    /// Reads queued bytes into `out`: `Some(Ok(0))` at the end of the peer's bytes (or for
    /// an empty `out`), `None` if none are queued yet (or, after a shutdown, while this
    /// side's end is not yet delivered).
    pub(crate) fn read(&mut self, qp: &QueuePair, out: &mut [u8]) -> Step<usize> {
        if out.is_empty() {
            return Some(Ok(0));
        }
        let mut n = 0;
        while n < out.len() {
            let Some(msg) = self.ready.front_mut() else {
                break;
            };
            if msg.fin {
                if n > 0 {
                    break;
                }
                // After a shutdown that left bytes queued, the peer's end is reported once
                // this side's bytes and end were delivered too: a reader that reads to the
                // end and drops the stream (abortive) loses none of them.
                if matches!(self.fin, Fin::Wanted | Fin::Posted) && !self.ended() {
                    return None;
                }
                return Some(Ok(0));
            }
            let take = (out.len() - n).min((msg.end - msg.at) as usize);
            let at = msg.slot as usize * self.ours.slot as usize + msg.at as usize;
            if let Err(e) = self.recv.read(at, &mut out[n..n + take]) {
                return Some(Err(io::Error::other(e)));
            }
            msg.at += take as u32;
            n += take;
            if msg.at == msg.end {
                let slot = msg.slot;
                self.ready.pop_front();
                self.data_unreported += 1;
                self.repost(qp, slot);
            }
        }
        if n > 0 {
            self.pump(qp);
            return Some(Ok(n));
        }
        self.ended()
            .then(|| Err(self.error(io::ErrorKind::ConnectionReset)))
    }

    /// Copies what fits of `bufs` into the open slot and sends it if a credit allows:
    /// `None` if no slot has room.
    pub(crate) fn write(&mut self, qp: &QueuePair, bufs: &[IoSlice<'_>]) -> Step<usize> {
        if self.fin != Fin::No {
            return Some(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the stream was shut down for writing",
            )));
        }
        if self.ended() {
            return Some(Err(self.error(io::ErrorKind::BrokenPipe)));
        }
        if bufs.iter().all(|b| b.is_empty()) {
            return Some(Ok(0));
        }
        let slots = u64::from(self.ours.data);
        let room = self.send_slot - HEADER - self.open;
        if room == 0 || (self.open == 0 && self.posted - self.done == slots) {
            return None;
        }
        let slot = (self.posted % slots) as usize;
        let mut at = slot * self.ours.slot as usize + HEADER + self.open;
        let mut n = 0;
        for buf in bufs {
            let take = buf.len().min(room - n);
            if let Err(e) = self.send.write(at, &buf[..take]) {
                return Some(Err(io::Error::other(e)));
            }
            at += take;
            n += take;
            if n == room {
                break;
            }
        }
        self.open += n;
        self.pump(qp);
        Some(Ok(n))
    }

    /// Whether every byte written was posted (`None`: not yet, waiting for a credit). Posted
    /// is in the HCA's send queue. After a [`shutdown`](Self::shutdown), the end too, and
    /// every send completed: the peer then has them all.
    pub(crate) fn flush(&mut self, qp: &QueuePair) -> Step<()> {
        self.pump(qp);
        let done = match self.fin {
            Fin::No => self.open == 0,
            _ => self.delivered(),
        };
        if done {
            return Some(Ok(()));
        }
        self.ended()
            .then(|| Err(self.error(io::ErrorKind::BrokenPipe)))
    }

    /// Queues the end of this side's bytes behind what was written, and waits until every
    /// send completed (the peer then has every byte and the end), except when that could
    /// wait for this side's own reader: bytes wait for a data credit while this side's
    /// unread messages fill its receive ring (the peer may be blocked writing to this side,
    /// as an echoing peer is). Then it is done at once, and the bytes and the end go out, in
    /// order, as this side's reads make room (which report the peer's end only after them).
    pub(crate) fn shutdown(&mut self, qp: &QueuePair) -> Step<()> {
        if self.fin == Fin::No {
            self.fin = Fin::Wanted;
        }
        self.pump(qp);
        let unread = self.ready.iter().filter(|m| !m.fin).count() as u32;
        let ring_full = unread + self.data_unreported >= u32::from(self.ours.data);
        let stuck = self.open > 0 && self.data_credits == 0 && ring_full;
        if self.delivered() || (stuck && !self.ended()) {
            return Some(Ok(()));
        }
        self.ended()
            .then(|| Err(self.error(io::ErrorKind::BrokenPipe)))
    }

    /// Whether the end and every data message before it were sent and completed.
    fn delivered(&self) -> bool {
        self.fin == Fin::Done && self.posted == self.done
    }

    /// Posts what the credits and the send queue allow: the open slot, the end, and a
    /// control message when the peer may be waiting for this side's credits.
    fn pump(&mut self, qp: &QueuePair) {
        if self.broken.is_some() {
            return;
        }
        if self.open > 0 && self.data_credits > 0 && self.sq_free > 0 {
            let slot = self.posted % u64::from(self.ours.data);
            let at = slot as usize * self.ours.slot as usize;
            let len = HEADER + self.open;
            if self.post(qp, Kind::Data, DATA | slot, at, len) {
                self.posted += 1;
                self.open = 0;
            }
        }
        // The end goes on a control credit: those come back without the peer reading, so
        // a shutdown never waits for the peer's reader (only bytes still in the open slot
        // do, for their data credit).
        if self.fin == Fin::Wanted && self.open == 0 && self.ctrl_credits > 0 && self.sq_free > 0 {
            let at = self.scratch();
            if self.post(qp, Kind::Fin, FIN, at, HEADER) {
                self.fin = Fin::Posted;
            }
        }
        let due = self.data_unreported >= (u32::from(self.ours.data) / 2).max(1)
            || self.ctrl_unreported >= u32::from(self.ours.ctrl);
        if due && self.ctrl_credits > 0 && self.sq_free > 0 {
            let at = self.scratch();
            self.post(qp, Kind::Ctrl, CTRL, at, HEADER);
        }
    }

    /// Where control messages and the end are written for their inline post.
    fn scratch(&self) -> usize {
        usize::from(self.ours.data) * self.ours.slot as usize
    }

    /// Writes the header of `kind` with the credits to return at `at` in the send ring and
    /// posts the `len` bytes there as one message; false (the stream broken) if it failed.
    fn post(&mut self, qp: &QueuePair, kind: Kind, wr_id: u64, at: usize, len: usize) -> bool {
        let header = Header {
            kind,
            data_credits: self.data_unreported,
            ctrl_credits: self.ctrl_unreported as u16,
        };
        if let Err(e) = self.send.write(at, &header.encode()) {
            self.fail(e.to_string());
            return false;
        }
        let posted = self
            .send
            .sge(at..at + len)
            .map_err(PostError::from)
            .and_then(|sge| {
                let sges = [sge];
                let wr = SendRequest::send(wr_id, &sges).signaled();
                // Control messages and the end are one header: inline, so that the scratch
                // room is free again as soon as the post returns.
                let wr = if kind == Kind::Data { wr } else { wr.inline() };
                qp.post_send(&mut [wr])
            });
        if let Err(e) = posted {
            self.fail(e.to_string());
            return false;
        }
        self.sq_free -= 1;
        self.data_unreported = 0;
        self.ctrl_unreported = 0;
        match kind {
            Kind::Ctrl | Kind::Fin => self.ctrl_credits -= 1,
            Kind::Data => self.data_credits -= 1,
        }
        true
    }

    fn post_recv(&self, qp: &QueuePair, slot: u32) -> Result<(), PostError> {
        let size = self.ours.slot as usize;
        let at = slot as usize * size;
        let sge = self.recv.sge(at..at + size).map_err(PostError::from)?;
        qp.post_recv(&mut [RecvRequest::new(u64::from(slot), &[sge])])
    }

    /// Gives receive slot `slot` back to the QP; once nothing more can arrive, it stays.
    fn repost(&mut self, qp: &QueuePair, slot: u32) {
        if self.ended() {
            return;
        }
        if let Err(e) = self.post_recv(qp, slot) {
            self.fail(e.to_string());
        }
    }
}
