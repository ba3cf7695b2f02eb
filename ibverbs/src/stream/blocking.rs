//! The blocking form: [`RdmaStream`] is `Read` + `Write` over one RC connection, made by
//! [`RdmaStream::connect`] or [`RdmaListener::accept`]. Each stream has an rdma_cm event
//! channel and a completion channel of its own and waits on both with `poll(2)`.

use std::io::{self, IoSlice, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use super::ring::{Rings, Step};
use super::setup::{self, conn_param, invalid_data, qp};
use super::wire::Hello;
use super::StreamConfig;
use crate::cm::{CmEvent, CmEventKind, CmId, EventChannel, PortSpace};
use crate::error::{Error, Result};
use crate::fd::poll_fds;
use crate::{CompletionQueue, QueuePair};

/// The listen backlog.
const BACKLOG: i32 = 128;

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

    /// Sends the end of this side's bytes (the peer reads `Ok(0)` after them) and returns
    /// once every send completed. Reading goes on; writing fails with `BrokenPipe`.
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

    /// Returns once every byte written is posted (in the HCA's send queue; see the
    /// protocol's closing rules in [`crate::stream`]).
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
/// one at a time, each handshake to its end (a client that never completes its connect
/// holds the next accept until the CM gives up on it). A request whose handshake fails (not
/// a stream peer, no memory for its rings) is rejected or dropped, and `accept` waits for
/// the next.
#[derive(Debug)]
pub struct RdmaListener {
    id: CmId,
    channel: EventChannel,
    hello: Hello,
    keepalive: i32,
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
        let channel = EventChannel::new()?;
        let id = channel.create_id(PortSpace::Tcp)?;
        id.bind(addr)?;
        id.listen(BACKLOG)?;
        Ok(RdmaListener {
            id,
            channel,
            hello,
            keepalive,
        })
    }

    /// The address listened on (with the port the CM picked).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.id.local_addr()
    }

    /// Waits for the next connection and sets it up.
    pub fn accept(&self) -> io::Result<RdmaStream> {
        loop {
            let event = self.channel.get_event()?;
            if let CmEventKind::ConnectRequest {
                id, private_data, ..
            } = event.kind
            {
                // That peer's failure: the listener goes on.
                if let Ok(stream) = self.handshake(id, &private_data) {
                    return Ok(stream);
                }
            }
        }
    }

    /// Accepts `id` if its request carries a stream hello (else rejects it), on an event
    /// channel of its own.
    fn handshake(&self, mut id: CmId, private_data: &[u8]) -> io::Result<RdmaStream> {
        let peer = match Hello::decode(private_data) {
            Ok(peer) => peer,
            Err(why) => {
                let _ = id.reject(&[]);
                return Err(invalid_data(why));
            }
        };
        let channel = EventChannel::new()?;
        id.migrate_id(&channel)?;
        // On an error below, dropping the id destroys it: the peer sees a reject.
        let (cq, rings) = prepare(&mut id, self.hello)?;
        let mut stream = RdmaStream::parts(id, channel, cq, rings, self.keepalive);
        stream.id.accept(&conn_param(&self.hello.encode()))?;
        expect(&stream.channel, "rdma_accept", |k| {
            matches!(k, CmEventKind::Established { .. })
        })?;
        stream.connected(peer);
        Ok(stream)
    }
}
