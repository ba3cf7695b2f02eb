//! A byte stream over two or more paths that moves to a surviving path when one fails, as
//! SMC-R's link groups do (RFC 7609): [`FailoverStream`] (`Read` + `Write`, blocking) and
//! its [`FailoverListener`]. A path is a pair of a local and a remote address; each
//! carries at most one [`RdmaStream`](super::RdmaStream) at a time, so the failover works
//! wherever the byte streams do: InfiniBand, RoCE and iWARP (where automatic path migration
//! does not exist in practice).
//!
//! ```no_run
//! use std::io::{Read, Write};
//! use rdma_verbs::stream::failover::{FailoverConfig, FailoverStream, Path};
//!
//! # fn f() -> std::io::Result<()> {
//! let paths = [
//!     Path::new(Some("10.0.1.1".parse().unwrap()), "10.0.1.2:7471".parse().unwrap()),
//!     Path::new(Some("10.0.2.1".parse().unwrap()), "10.0.2.2:7471".parse().unwrap()),
//! ];
//! let mut stream = FailoverStream::connect(&paths, &FailoverConfig::default())?;
//! stream.write_all(b"hello")?;
//! stream.shutdown()?;
//! let mut answer = Vec::new();
//! stream.read_to_end(&mut answer)?;
//! # Ok(()) }
//! ```
//!
//! # The protocol
//! Inside each path's byte stream, frames: an 8-byte header (kind, length) and a body.
//!
//! - A connecting side's first frame on a path is a hello: its group's token (16 random
//!   bytes), whether it starts the group or joins it, and the bytes it received so far. The
//!   listener answers with a resume: the bytes its side received (0 for a new group), or,
//!   for a token it does not know (the stream ended, the listener restarted), with an
//!   unknown-group frame, which ends the stream with `InvalidData`.
//! - Data frames carry the stream's bytes in order; their offsets are implicit (the bytes
//!   sent before them). An ack frame says how many bytes the sender received; a side acks
//!   after each [`FailoverConfig::buffer`]/4 bytes and whenever it is about to wait for its
//!   peer with bytes not yet acked.
//! - An end frame (after `shutdown`) carries the offset where this side's bytes end; the
//!   peer answers it with a closed frame, and `shutdown` returns once that came: the peer
//!   has every byte.
//!
//! A sender keeps the bytes it sent until the peer acks them, at most
//! [`FailoverConfig::buffer`]: a write waits (reading acks off the path) while that much is
//! unacked — backpressure, no unbounded growth. The receiver keeps at most as much that the
//! application has not read; while that is full it reads nothing off the path, so a peer
//! that writes to a side that neither reads nor writes waits, as over TCP.
//!
//! # Failover
//! Any error of a path's stream (a QP error such as transport retries exceeded, the port
//! down, the peer's disconnect, the keepalive's probe failing) moves the stream: the
//! connecting side connects its paths again, the others first, each with a hello that joins
//! the group and says its received offset; the listener hands the new path to the stream of
//! that group, which answers with its own. Each side then drops what the other received and
//! sends again what it did not: nothing is lost, nothing comes twice, the order is kept. The
//! application sees a pause, not an error. A path that failed is tried again (with a backoff
//! from 50 ms to 1 s) while the failover lasts, so a path that came back takes over. The
//! failover lasts at most [`FailoverConfig::failover_timeout`]; then the operation fails
//! with a [`FailoverError`] (kind `ConnectionAborted`) naming each path (local → remote), why it
//! failed last, and how many bytes the application received. How fast a dead path is
//! noticed is the paths' [keepalive](super::StreamConfig::keepalive) plus the transport's
//! retries (7 times the [ACK timeout](super::StreamConfig::ack_timeout)).
//!
//! The timeout is checked between connect attempts, so a failover may outlast it by one
//! connect (bounded by the paths' resolve timeout and the CM's own).
//!
//! A stream works on its paths only within its own calls (no thread of its own): a failure
//! while the application does not call is noticed at its next call, and a path that comes
//! back while the stream is on another is not connected again until a failover needs it (no
//! standby connection is kept). The listening side takes a new path at the start of each
//! call, or once its own path failed. There is no tokio form yet.
//!
//! # Soundness
//! The module has no `unsafe` code: it runs on [`RdmaStream`](super::RdmaStream)s, whose
//! rings the peer cannot reach beyond (see [`crate::stream`]), and its own buffers are
//! plain `Vec`s and `VecDeque`s whose bounds the checks above keep.
//!
//! # What the peer controls
//! Every frame is checked before it is used: an unknown kind, a length that is not its
//! kind's, a data frame of more than [`FailoverConfig::frame`] bytes, data after the end,
//! an ack or a resume offset before what was already acked or beyond what was sent, an end
//! that is not where the data ends, a hello with an unknown token. Each ends the stream with
//! an `InvalidData` error: never a panic, and nothing is buffered beyond the bounds above.
//! Every wait for a hello or a resume has a deadline (the paths'
//! [`handshake_timeout`](super::StreamConfig::handshake_timeout)).
//!
//! # Closing
//! Dropping a stream drops its path (abortive, as [`RdmaStream`](super::RdmaStream)'s
//! drop). `shutdown` first: it returns once the peer has every byte. A peer that drops its
//! stream without a shutdown looks like a failed path: this side's next wait for it fails
//! after the failover timeout.

mod frame;
mod listener;
mod stream;

pub use listener::FailoverListener;
pub use stream::FailoverStream;

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::StreamConfig;
use crate::error::{Error, Result};

/// One path of a failover stream: the local address to connect from (`None`: the one the
/// route gives) and the listener's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Path {
    local: Option<IpAddr>,
    remote: SocketAddr,
}

impl Path {
    /// The path from `local` to the listener at `remote`.
    pub fn new(local: Option<IpAddr>, remote: SocketAddr) -> Path {
        Path { local, remote }
    }

    /// The local address (`None`: the route's).
    pub fn local(&self) -> Option<IpAddr> {
        self.local
    }

    /// The listener's address.
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.local {
            Some(local) => write!(f, "{local}->{}", self.remote),
            None => write!(f, "*->{}", self.remote),
        }
    }
}

/// The error of a failover stream that has no path left: each path (local → remote) with
/// the cause of its last failure, and the bytes the application had received. It is the
/// inner error of the `io::Error` (kind `ConnectionAborted`; `get_ref` and `downcast_ref`
/// give it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailoverError {
    paths: Vec<(String, String)>,
    delivered: u64,
}

impl FailoverError {
    /// Each path, as `local->remote`, and why it failed last.
    pub fn paths(&self) -> &[(String, String)] {
        &self.paths
    }

    /// The bytes the application had read from the stream.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

impl fmt::Display for FailoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "every path of the failover stream failed ({} bytes delivered):",
            self.delivered
        )?;
        for (path, cause) in &self.paths {
            write!(f, " {path}: {cause};")?;
        }
        Ok(())
    }
}

impl std::error::Error for FailoverError {}

/// The settings of a failover stream and of its paths.
///
/// Memory per stream: its path's rings ([`StreamConfig`]) and up to two buffers of
/// [`buffer`](Self::buffer) bytes (the bytes sent and not acked, the bytes received and not
/// read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailoverConfig {
    stream: StreamConfig,
    buffer: usize,
    frame: usize,
    failover_timeout: Duration,
}

/// The largest data frame's body: 16 MiB.
const MAX_FRAME: usize = 16 << 20;
/// The largest buffer: 1 GiB.
const MAX_BUFFER: usize = 1 << 30;

impl Default for FailoverConfig {
    /// The default [`StreamConfig`] with a keepalive of 1 s (a dead path is noticed within
    /// a second plus the transport's retries), a buffer of 4 MiB, data frames of at most
    /// 64 KiB, a failover timeout of 30 s.
    fn default() -> Self {
        FailoverConfig {
            stream: StreamConfig::default().keepalive(Some(Duration::from_secs(1))),
            buffer: 4 << 20,
            frame: 64 << 10,
            failover_timeout: Duration::from_secs(30),
        }
    }
}

impl FailoverConfig {
    /// The settings of each path's byte stream (its rings, keepalive, ACK timeout,
    /// handshake timeout: also the deadline of a hello's answer).
    pub fn stream(mut self, config: StreamConfig) -> Self {
        self.stream = config;
        self
    }

    /// The most bytes sent and not yet acked (and the most received and not yet read): from
    /// twice the [`frame`](Self::frame) size to 1 GiB; checked when the stream or listener
    /// is made.
    pub fn buffer(mut self, bytes: usize) -> Self {
        self.buffer = bytes;
        self
    }

    /// The most bytes of one data frame: 1 to 16 MiB, and at most half the buffer; checked
    /// when the stream or listener is made. A peer's larger frame is `InvalidData`.
    pub fn frame(mut self, bytes: usize) -> Self {
        self.frame = bytes;
        self
    }

    /// How long a stream tries to move to another path before it fails with a
    /// [`FailoverError`]: from 1 ms to `i32::MAX` ms; checked when the stream is made.
    pub fn failover_timeout(mut self, timeout: Duration) -> Self {
        self.failover_timeout = timeout;
        self
    }

    /// The settings, checked.
    fn checked(self) -> Result<FailoverConfig> {
        self.stream.hello()?;
        self.stream.handshake_deadline()?;
        self.stream.probe_interval()?;
        self.stream.id_options()?;
        super::in_millis("failover timeout (ms)", self.failover_timeout)?;
        if !(1..=MAX_FRAME).contains(&self.frame) {
            return Err(Error::OutOfRange {
                what: "failover stream frame size",
                value: self.frame as u64,
                min: 1,
                max: MAX_FRAME as u64,
            });
        }
        if !(2 * self.frame..=MAX_BUFFER).contains(&self.buffer) {
            return Err(Error::OutOfRange {
                what: "failover stream buffer (at least twice the frame size)",
                value: self.buffer as u64,
                min: 2 * self.frame as u64,
                max: MAX_BUFFER as u64,
            });
        }
        Ok(self)
    }
}
