//! The blocking form: [`RdmaStream`] is `Read` + `Write` over one RC connection, made by
//! [`RdmaStream::connect`] or [`RdmaListener::accept`]. Each stream has an rdma_cm event
//! channel and a completion channel of its own and waits on both with `poll(2)`.

use std::io::{self, IoSlice, Read, Write};
use std::net::SocketAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::ring::{Rings, Step};
use super::setup::{self, conn_param, invalid_data, qp};
use super::wire::Hello;
use super::{StreamConfig, BACKLOG, HANDSHAKES};
use crate::cm::{CmEvent, CmEventKind, CmId, EventChannel, PortSpace};
use crate::error::{Error, Result};
use crate::fd::poll_fds;
use crate::{CompletionQueue, QueuePair};

/// A byte stream over one RC connection: `Read` + `Write` (see [`crate::stream`] for the
/// protocol, what a peer can do and what closing does).
///
/// ```no_run
/// use std::io::{Read, Write};
/// use rdma_verbs::stream::RdmaStream;
///
/// # fn f() -> std::io::Result<()> {
/// let mut stream = RdmaStream::connect("192.168.1.10:7471".parse().unwrap())?;
/// stream.write_all(b"hello")?;
/// stream.shutdown()?;
/// let mut answer = Vec::new();
/// stream.read_to_end(&mut answer)?;
/// # Ok(()) }
/// ```
pub struct RdmaStream {
    /// Dropped first: destroys the QP (the HCA is then done with the rings), then the id.
    id: CmId,
    /// The id's own channel: its events only.
    channel: EventChannel,
    cq: CompletionQueue,
    rings: Rings,
    /// Whether the CQ is armed and its event not yet taken.
    armed: bool,
    /// How long `poll(2)` waits before a keepalive probe (ms; -1: no probes).
    keepalive: i32,
    local: Option<SocketAddr>,
    peer: Option<SocketAddr>,
}

/// The next event on `channel`, if `want` says it is the one `verb` waits for.
fn expect(
    channel: &EventChannel,
    verb: &'static str,
    want: impl FnOnce(&CmEventKind) -> bool,
) -> Result<CmEvent> {
    channel.get_event()?.expect_kind(verb, want)
}

/// `poll(2)`'s timeout for a keepalive interval (checked to fit).
fn poll_timeout(interval: Option<Duration>) -> i32 {
    interval.map_or(-1, |i| i32::try_from(i.as_millis()).unwrap_or(i32::MAX))
}

/// [`setup::prepare`] for a blocking id.
fn prepare(id: &mut CmId, hello: Hello) -> Result<(CompletionQueue, Rings)> {
    let ctx = id.context()?;
    let channel = ctx.create_comp_channel()?;
    setup::prepare(&ctx, &channel, hello, |qp| id.create_qp(qp))
}

impl RdmaStream {
    /// Connects to a listener at `addr` with the default rings ([`StreamConfig`]).
    pub fn connect(addr: SocketAddr) -> io::Result<RdmaStream> {
        Self::connect_with(addr, &StreamConfig::default())
    }

    /// Connects to a listener at `addr` with the rings of `config` (as the tokio form's
    /// `connect_with`; the CM's own timeouts bound each step).
    pub fn connect_with(addr: SocketAddr, config: &StreamConfig) -> io::Result<RdmaStream> {
        let hello = config.hello()?;
        let keepalive = poll_timeout(config.probe_interval()?);
        let channel = EventChannel::new()?;
        let mut id = channel.create_id(PortSpace::Tcp)?;
        id.set_option(config.tos())?;
        id.resolve_addr(None, addr, config.timeout())?;
        expect(&channel, "rdma_resolve_addr", |k| {
            matches!(k, CmEventKind::AddrResolved)
        })?;
        id.resolve_route(config.timeout())?;
        expect(&channel, "rdma_resolve_route", |k| {
            matches!(k, CmEventKind::RouteResolved)
        })?;
        let (cq, rings) = prepare(&mut id, hello)?;
        // From here on an error drops the parts in the stream's order: the QP first.
        let mut stream = RdmaStream::parts(id, channel, cq, rings, keepalive);
        stream.id.connect(&conn_param(&hello.encode()))?;
        let event = expect(&stream.channel, "rdma_connect", |k| {
            matches!(k, CmEventKind::Established { .. })
        })?;
        let CmEventKind::Established { private_data, .. } = event.kind else {
            unreachable!("matched by expect");
        };
        let peer = Hello::decode(&private_data).map_err(invalid_data)?;
        stream.connected(peer);
        Ok(stream)
    }

    /// A stream of these parts, not connected yet (dropped, it drops them in order).
    fn parts(
        id: CmId,
        channel: EventChannel,
        cq: CompletionQueue,
        rings: Rings,
        keepalive: i32,
    ) -> RdmaStream {
        RdmaStream {
            id,
            channel,
            cq,
            rings,
            armed: false,
            keepalive,
            local: None,
            peer: None,
        }
    }

    /// The connection is up: the peer said `peer`.
    fn connected(&mut self, peer: Hello) {
        self.rings.connected(peer, qp(&self.id));
        self.local = self.id.local_addr();
        self.peer = self.id.peer_addr();
    }

    /// This side's address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Queues the end of this side's bytes behind what was written (the peer reads
    /// `Ok(0)` after them) and returns once every send completed (the peer has them all);
    /// or at once, the end queued, if bytes wait for room in the peer's ring while this
    /// side's unread bytes fill its own (the peer may be blocked writing to this side):
    /// see [`crate::stream`]. Reading goes on; writing fails with `BrokenPipe`.
    pub fn shutdown(&mut self) -> io::Result<()> {
        self.step(|rings, qp| rings.shutdown(qp))
    }

    /// Runs `step` until it has an answer, waiting for the CQ and the id in between.
    fn step<T>(
        &mut self,
        mut step: impl FnMut(&mut Rings, &QueuePair) -> Step<T>,
    ) -> io::Result<T> {
        loop {
            if let Some(done) = step(&mut self.rings, qp(&self.id)) {
                return done;
            }
            if let Err(e) = self.wait() {
                self.rings
                    .fail_locally(format!("waiting for the connection: {e}"));
            }
        }
    }

    /// Hands every completion on the CQ to the rings; whether there was one.
    fn drain(&mut self) -> Result<bool> {
        self.rings.drain(&self.cq, qp(&self.id))
    }

    /// Waits until the CQ or the id has news, and hands it to the rings; probes the peer if
    /// none came within the keepalive interval.
    fn wait(&mut self) -> Result<()> {
        if self.drain()? {
            return Ok(());
        }
        if !self.armed {
            self.cq.req_notify(false)?;
            self.armed = true;
            // What came before the arm raises no event.
            if self.drain()? {
                return Ok(());
            }
        }
        let mut fds = [self.cq.channel()?.fd(), self.channel.fd()].map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        });
        let ready = poll_fds(&mut fds, self.keepalive);
        if ready < 0 {
            let err = Error::last("poll");
            return match err.raw_os_error() {
                Some(libc::EINTR) => Ok(()),
                _ => Err(err),
            };
        }
        if ready == 0 {
            self.rings.keepalive(qp(&self.id));
            return Ok(());
        }
        if fds[0].revents != 0 && self.cq.wait_timeout(Duration::ZERO)? {
            self.armed = false;
        }
        if fds[1].revents != 0 {
            while let Some(event) = self.channel.try_get_event()? {
                if matches!(event.kind, CmEventKind::Disconnected) {
                    // What completed before the disconnect is the peer's last word.
                    self.drain()?;
                    self.rings.peer_closed();
                }
            }
        }
        Ok(())
    }
}

impl Read for RdmaStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.step(|rings, qp| rings.read(qp, buf))
    }
}

impl Write for RdmaStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.step(|rings, qp| rings.write(qp, bufs))
    }

    /// Returns once every byte written is posted (in the HCA's send queue); after a
    /// [`shutdown`](RdmaStream::shutdown), once every byte and the end were sent and their
    /// sends completed (see the protocol's closing rules in [`crate::stream`]).
    fn flush(&mut self) -> io::Result<()> {
        self.step(|rings, qp| rings.flush(qp))
    }
}

impl std::fmt::Debug for RdmaStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaStream")
            .field("local", &self.local)
            .field("peer", &self.peer)
            .field("rings", &self.rings)
            .finish()
    }
}

/// A listener of byte-stream connections (blocking): [`accept`](Self::accept) takes them
/// one at a time. Up to 64 connect requests go through their handshake at once, each
/// within the config's [`handshake_timeout`](StreamConfig::handshake_timeout): a client
/// that never completes its connect holds none of the others, and is dropped after the
/// timeout. A request whose handshake fails for the peer's reason (not a stream peer, its
/// connect withdrawn or timed out) is rejected or dropped, and `accept` goes on; one that
/// fails for this side's (no memory for its rings, no file descriptor left) is rejected and
/// `accept` returns the error: the listener takes the next request at the next call.
///
/// One thread accepts at a time: a second caller of `accept` waits for the first's return.
#[derive(Debug)]
pub struct RdmaListener {
    id: CmId,
    channel: EventChannel,
    hello: Hello,
    keepalive: i32,
    handshake: Duration,
    /// Handshakes under way: accepted, waiting for the peer's confirmation.
    pending: Mutex<Vec<Pending>>,
}

/// A connect request accepted and not yet established.
#[derive(Debug)]
struct Pending {
    stream: RdmaStream,
    peer: Hello,
    deadline: Instant,
}

impl RdmaListener {
    /// Listens on `addr` (port 0: one the CM picks) with the default rings.
    pub fn bind(addr: SocketAddr) -> io::Result<RdmaListener> {
        Self::bind_with(addr, &StreamConfig::default())
    }

    /// Listens on `addr` with the rings of `config` for every stream it accepts.
    pub fn bind_with(addr: SocketAddr, config: &StreamConfig) -> io::Result<RdmaListener> {
        let hello = config.hello()?;
        let keepalive = poll_timeout(config.probe_interval()?);
        let handshake = config.handshake_deadline()?;
        let channel = EventChannel::new()?;
        let id = channel.create_id(PortSpace::Tcp)?;
        id.set_option(config.tos())?;
        id.bind(addr)?;
        id.listen(BACKLOG)?;
        Ok(RdmaListener {
            id,
            channel,
            hello,
            keepalive,
            handshake,
            pending: Mutex::new(Vec::new()),
        })
    }

    /// The address listened on (with the port the CM picked).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.id.local_addr()
    }

    /// Waits for the next connection and sets it up: takes connect requests and drives
    /// their handshakes side by side until one is established. An error is this side's
    /// (the listener's channel, or a stream's set-up: its memory, its file descriptors);
    /// the request it failed for is rejected, and the listener goes on at the next call.
    pub fn accept(&self) -> io::Result<RdmaStream> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            while pending.len() < HANDSHAKES {
                let Some(event) = self.channel.try_get_event()? else {
                    break;
                };
                if let CmEventKind::ConnectRequest {
                    id, private_data, ..
                } = event.kind
                {
                    pending.extend(self.handshake(id, &private_data)?);
                }
            }
            let now = Instant::now();
            let mut i = 0;
            while i < pending.len() {
                match pending[i].progress() {
                    Some(true) => {
                        let Pending {
                            mut stream, peer, ..
                        } = pending.swap_remove(i);
                        stream.connected(peer);
                        return Ok(stream);
                    }
                    // That peer's failure or its time up: dropped (the peer sees a reject).
                    Some(false) => drop(pending.swap_remove(i)),
                    None if pending[i].deadline <= now => drop(pending.swap_remove(i)),
                    None => i += 1,
                }
            }
            self.wait(&pending, now)?;
        }
    }

    /// Waits until the listener's channel (while there is room for a handshake) or a
    /// handshake's has an event, or the first handshake deadline passes.
    fn wait(&self, pending: &[Pending], now: Instant) -> Result<()> {
        let listener = (pending.len() < HANDSHAKES).then(|| self.channel.fd());
        let mut fds: Vec<libc::pollfd> = listener
            .into_iter()
            .chain(pending.iter().map(|p| p.stream.channel.fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = pending.iter().map(|p| p.deadline).min().map_or(-1, |end| {
            // Rounded up, so that the wait ends at or after the deadline.
            let left = end.saturating_duration_since(now).as_nanos();
            i32::try_from(left.div_ceil(1_000_000)).unwrap_or(i32::MAX)
        });
        if poll_fds(&mut fds, ms) < 0 {
            let err = Error::last("poll");
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(err);
            }
        }
        Ok(())
    }

    /// Accepts `id` if its request carries a stream hello (else rejects it: `None`), on an
    /// event channel of its own; the peer's confirmation comes on it. `None` too if the
    /// accept fails (the peer's request withdrawn or timed out); an error is this side's.
    fn handshake(&self, mut id: CmId, private_data: &[u8]) -> Result<Option<Pending>> {
        let peer = match Hello::decode(private_data) {
            Ok(peer) => peer,
            Err(_) => {
                let _ = id.reject(&[]);
                return Ok(None);
            }
        };
        // On an error below, dropping the id destroys it: the peer sees a reject.
        let channel = EventChannel::new()?;
        id.migrate_id(&channel)?;
        let (cq, rings) = prepare(&mut id, self.hello)?;
        let stream = RdmaStream::parts(id, channel, cq, rings, self.keepalive);
        if stream.id.accept(&conn_param(&self.hello.encode())).is_err() {
            return Ok(None);
        }
        Ok(Some(Pending {
            stream,
            peer,
            deadline: Instant::now() + self.handshake,
        }))
    }
}

impl Pending {
    /// Takes the handshake's events: `Some(true)` once established, `Some(false)` if it
    /// failed (any other event, or its channel's error), `None` while it waits.
    fn progress(&self) -> Option<bool> {
        match self.stream.channel.try_get_event() {
            Ok(Some(event)) => Some(matches!(event.kind, CmEventKind::Established { .. })),
            Ok(None) => None,
            Err(_) => Some(false),
        }
    }
}
