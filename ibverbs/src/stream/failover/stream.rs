//! [`FailoverStream`]: the buffers, the frames on the current path, and the move to another.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::frame::{self, Frame, Token};
use super::listener::Group;
use super::{FailoverConfig, FailoverError, Path};
use crate::stream::setup::invalid_data;
use crate::stream::RdmaStream;

/// A byte stream over several paths that moves to a surviving one when its path fails:
/// `Read` + `Write` (see [`crate::stream::failover`] for the protocol, the failover and
/// what a peer can do).
pub struct FailoverStream {
    config: FailoverConfig,
    side: Side,
    /// The path in use, and its name (`local->remote`).
    path: Option<(RdmaStream, String)>,
    /// Each path's last failure.
    failures: Vec<(String, String)>,
    /// Bytes from `acked` on, sent and not acked.
    unacked: VecDeque<u8>,
    acked: u64,
    sent: u64,
    /// Whether `shutdown` queued the end, and whether the peer said it has it.
    shut: bool,
    end_acked: bool,
    /// Bytes read off the path, not yet a whole frame (`inbuf[..filled]`).
    inbuf: Vec<u8>,
    filled: usize,
    /// Bytes received and not yet read by the application.
    recv: VecDeque<u8>,
    received: u64,
    delivered: u64,
    ack_sent: u64,
    /// Where the peer's bytes end, once its end came; whether the closed frame answering
    /// it was pushed out (once, when a read first reported the end).
    peer_end: Option<u64>,
    closed_sent: bool,
    /// Why the stream is broken for good (the peer's protocol error, or no path left).
    broken: Option<(io::ErrorKind, String)>,
}

/// Which side of the group: the connecting one (it makes the paths) or the listening one
/// (its listener hands it the paths the peer makes).
enum Side {
    Connecting {
        paths: Vec<Path>,
        token: Token,
        current: usize,
    },
    Listening(Arc<Group>),
}

/// What went wrong in an operation: its path (move to another), the stream (for good), or
/// the call only (the stream stays as it was).
enum Fault {
    Path(io::Error),
    Fatal(io::Error),
    Call(io::Error),
}

impl From<io::Error> for Fault {
    /// A path's stream's error: the path's fault.
    fn from(e: io::Error) -> Fault {
        Fault::Path(e)
    }
}

type Step<T> = std::result::Result<T, Fault>;

fn fatal(why: String) -> Fault {
    Fault::Fatal(invalid_data(why))
}

/// A 16-byte random token.
fn random_token() -> io::Result<Token> {
    let mut token = [0; frame::TOKEN];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut token)?;
    Ok(token)
}

/// `local->remote` of a path's stream.
pub(super) fn path_name(stream: &RdmaStream) -> String {
    let addr = |a: Option<SocketAddr>| a.map_or_else(|| "?".to_owned(), |a| a.to_string());
    format!(
        "{}->{}",
        addr(stream.local_addr()),
        addr(stream.peer_addr())
    )
}

impl FailoverStream {
    /// Connects to a [`FailoverListener`](super::FailoverListener) over the first of
    /// `paths` that works (each tried once, in order), and keeps the others for a
    /// failover. With no path working, the error is a [`FailoverError`] naming each.
    pub fn connect(paths: &[Path], config: &FailoverConfig) -> io::Result<FailoverStream> {
        let config = config.checked()?;
        if paths.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a failover stream needs at least one path",
            ));
        }
        let token = random_token()?;
        let mut stream = FailoverStream::new(
            config,
            Side::Connecting {
                paths: paths.to_vec(),
                token,
                current: 0,
            },
        );
        for (i, path) in paths.iter().enumerate() {
            match stream.join(i, false) {
                Ok(0) => return Ok(stream),
                Ok(offset) => {
                    return Err(invalid_data(format!(
                        "the failover listener answered a new stream's hello with a resume \
                         at {offset}, not 0"
                    )))
                }
                Err(Fault::Fatal(e) | Fault::Call(e)) => return Err(e),
                Err(Fault::Path(e)) => stream.failed(path.to_string(), &e),
            }
        }
        Err(stream.no_path_left())
    }

    /// The stream of a new group, on its first path (the listener sent the resume).
    pub(super) fn accepted(
        config: FailoverConfig,
        group: Arc<Group>,
        path: RdmaStream,
    ) -> FailoverStream {
        let mut stream = FailoverStream::new(config, Side::Listening(group));
        let name = path_name(&path);
        stream.path = Some((path, name));
        stream
    }

    fn new(config: FailoverConfig, side: Side) -> FailoverStream {
        FailoverStream {
            side,
            path: None,
            failures: Vec::new(),
            unacked: VecDeque::new(),
            acked: 0,
            sent: 0,
            shut: false,
            end_acked: false,
            inbuf: vec![0; frame::HEADER + config.frame],
            filled: 0,
            recv: VecDeque::new(),
            received: 0,
            delivered: 0,
            ack_sent: 0,
            peer_end: None,
            closed_sent: false,
            broken: None,
            config,
        }
    }

    /// The path in use (`local->remote`), if one is.
    pub fn path(&self) -> Option<&str> {
        self.path.as_ref().map(|(_, name)| name.as_str())
    }

    /// Each path that failed, as `local->remote`, with the cause of its last failure.
    pub fn failures(&self) -> &[(String, String)] {
        &self.failures
    }

    /// Queues the end of this side's bytes behind what was written (the peer reads `Ok(0)`
    /// after them) and returns once the peer said it has them all and the end. Reading goes
    /// on; writing fails with `BrokenPipe`.
    pub fn shutdown(&mut self) -> io::Result<()> {
        self.run(|s| {
            if !s.shut {
                s.shut = true;
                s.send(&Frame::End(s.sent))?;
            }
            if s.end_acked {
                return Ok(Some(()));
            }
            s.pump()?;
            Ok(None)
        })
    }

    /// Runs `op` until it has an answer, moving to another path when the current one
    /// fails.
    fn run<T>(&mut self, mut op: impl FnMut(&mut Self) -> Step<Option<T>>) -> io::Result<T> {
        loop {
            if let Some((kind, why)) = &self.broken {
                return Err(io::Error::new(*kind, why.clone()));
            }
            let step = match self.take_new_path() {
                Ok(()) => op(self),
                Err(fault) => Err(fault),
            };
            match step {
                Ok(Some(done)) => return Ok(done),
                Ok(None) => {}
                Err(Fault::Fatal(e)) => return Err(self.break_with(e)),
                Err(Fault::Call(e)) => return Err(e),
                Err(Fault::Path(e)) => {
                    if let Err(e) = self.fail_over(&e) {
                        return Err(self.break_with(e));
                    }
                }
            }
        }
    }

    /// Breaks the stream for good with `e` (which it returns).
    fn break_with(&mut self, e: io::Error) -> io::Error {
        self.broken = Some((e.kind(), e.to_string()));
        self.path = None;
        e
    }

    /// Records `cause` as `name`'s last failure.
    fn failed(&mut self, name: String, cause: &io::Error) {
        let cause = cause.to_string();
        match self.failures.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = cause,
            None => self.failures.push((name, cause)),
        }
    }

    fn no_path_left(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::ConnectionAborted,
            FailoverError {
                paths: self.failures.clone(),
                delivered: self.delivered,
            },
        )
    }

    /// The current path's stream (a path fault if there is none).
    fn current(&mut self) -> Step<&mut RdmaStream> {
        match &mut self.path {
            Some((stream, _)) => Ok(stream),
            None => Err(Fault::Path(io::Error::new(
                io::ErrorKind::NotConnected,
                "no path",
            ))),
        }
    }

    /// Writes `frame` on the current path.
    fn send(&mut self, frame: &Frame<'_>) -> Step<()> {
        let bytes = frame::encode(frame);
        self.current()?.write_all(&bytes)?;
        Ok(())
    }

    /// Sends `bytes` as data frames.
    fn send_data(&mut self, bytes: &[u8]) -> Step<()> {
        let frame = self.config.frame;
        let path = self.current()?;
        for chunk in bytes.chunks(frame) {
            path.write_all(&frame::data_header(chunk.len()))?;
            path.write_all(chunk)?;
        }
        Ok(())
    }

    /// Acks what was received if anything was (`all`) or a quarter buffer was since the
    /// last ack.
    fn ack(&mut self, all: bool) -> Step<()> {
        let since = self.received - self.ack_sent;
        if since > 0 && (all || since >= (self.config.buffer / 4) as u64) {
            self.send(&Frame::Ack(self.received))?;
            self.ack_sent = self.received;
        }
        Ok(())
    }

    /// Takes the whole frames in `inbuf` (data while the receive buffer has room); acks.
    fn take_frames(&mut self) -> Step<()> {
        // Out of `self` while its frames are taken, and back whatever happens.
        let inbuf = std::mem::take(&mut self.inbuf);
        let taken = self.take_frames_of(&inbuf);
        self.inbuf = inbuf;
        let at = taken?;
        self.inbuf.copy_within(at..self.filled, 0);
        self.filled -= at;
        self.ack(false)
    }

    /// Takes the whole frames in `inbuf[..filled]`; how many bytes they were.
    fn take_frames_of(&mut self, inbuf: &[u8]) -> Step<usize> {
        let mut at = 0;
        loop {
            let len = match frame::frame_len(&inbuf[at..self.filled], self.config.frame) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                // The frames before a bad one are taken first (as the bytes before a
                // path's error are read first); the error comes at the next call.
                Err(_) if at > 0 => break,
                Err(e) => return Err(Fault::Fatal(e)),
            };
            if self.filled - at < len {
                break;
            }
            let frame = frame::decode(&inbuf[at..at + len]);
            if matches!(frame, Frame::Data(_)) && self.recv.len() >= self.config.buffer {
                break;
            }
            let answer = self.take(frame)?;
            at += len;
            if let Some(answer) = answer {
                self.send(&answer)?;
            }
        }
        Ok(at)
    }

    /// Reads the path's next bytes into `inbuf` (a path fault at its end).
    fn read_path(&mut self) -> Step<()> {
        let Some((path, _)) = &mut self.path else {
            return Err(Fault::Path(io::Error::new(
                io::ErrorKind::NotConnected,
                "no path",
            )));
        };
        let n = path.read(&mut self.inbuf[self.filled..])?;
        if n == 0 {
            return Err(Fault::Path(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the path's stream ended",
            )));
        }
        self.filled += n;
        Ok(())
    }

    /// Takes one frame off the path; what to answer.
    fn take(&mut self, frame: Frame<'_>) -> Step<Option<Frame<'static>>> {
        match frame {
            Frame::Data(bytes) => {
                if self.peer_end.is_some() {
                    return Err(fatal("the failover peer sent data after its end".into()));
                }
                self.recv.extend(bytes);
                self.received += bytes.len() as u64;
            }
            Frame::Ack(offset) => self.acked_to(offset)?,
            Frame::End(offset) => {
                if offset != self.received || self.peer_end.is_some_and(|end| end != offset) {
                    return Err(fatal(format!(
                        "the failover peer ended its bytes at {offset}, but {} came",
                        self.received
                    )));
                }
                self.peer_end = Some(offset);
                return Ok(Some(Frame::Closed(offset)));
            }
            Frame::Closed(offset) => {
                if !self.shut || offset != self.sent {
                    return Err(fatal(format!(
                        "the failover peer said it has this side's end at {offset}, but \
                         this side {}",
                        if self.shut {
                            format!("ended at {}", self.sent)
                        } else {
                            "did not end".to_owned()
                        }
                    )));
                }
                self.acked_to(offset)?;
                self.end_acked = true;
            }
            Frame::Hello { .. } | Frame::Resume(_) | Frame::Unknown => {
                return Err(fatal(
                    "the failover peer sent a hello, resume or unknown-group frame in the \
                     middle of a path"
                        .into(),
                ))
            }
        }
        Ok(None)
    }

    /// The peer received every byte before `offset`: checked, and dropped from `unacked`.
    fn acked_to(&mut self, offset: u64) -> Step<()> {
        if offset < self.acked || offset > self.sent {
            return Err(fatal(format!(
                "the failover peer acked or resumed at {offset}, outside {}..={} (acked \
                 before, sent)",
                self.acked, self.sent
            )));
        }
        // At most `sent - acked`, the length of `unacked`: fits usize.
        self.unacked.drain(..(offset - self.acked) as usize);
        self.acked = offset;
        Ok(())
    }

    /// Waits for the path's next bytes and takes the frames they complete; acks all first.
    fn pump(&mut self) -> Step<()> {
        self.ack(true)?;
        let filled = self.filled;
        if filled == self.inbuf.len() || self.recv.len() >= self.config.buffer {
            // A whole frame waits for room in the receive buffer: only a read makes it, and
            // the peer may wait for this side to read (as two TCP peers that both write
            // and neither reads would wait for ever).
            return Err(Fault::Call(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the failover stream must wait for the peer, and its receive buffer is full:                  read from it first",
            )));
        }
        self.read_path()?;
        self.take_frames()
    }

    /// On the listening side: moves to the path the listener handed over, if it did.
    fn take_new_path(&mut self) -> Step<()> {
        let Side::Listening(group) = &self.side else {
            return Ok(());
        };
        let Some((path, received)) = group.take() else {
            return Ok(());
        };
        self.install(path);
        self.send(&Frame::Resume(self.received))?;
        self.resume(received)
    }

    /// Makes `path` the current path (the old one dropped, with its partial frames).
    fn install(&mut self, path: RdmaStream) {
        let name = path_name(&path);
        self.path = Some((path, name));
        self.filled = 0;
    }

    /// At the first report of the peer's end: makes sure the closed frame that answered it
    /// goes out, which the peer's `shutdown` waits for. A write that found no credit waits
    /// in the path's open slot for this side's next call, and there may be none: posted
    /// (flushed) here, and, if this side ended too (nothing more to send on the path),
    /// delivered (the path's own shutdown waits for its sends), so that dropping the stream
    /// next loses nothing.
    fn push_closed(&mut self) -> Step<()> {
        if self.closed_sent {
            return Ok(());
        }
        let done = self.shut && self.end_acked;
        let path = self.current()?;
        if done {
            // Both sides ended: the peer may drop its path as soon as it has the closed
            // frame, failing the path's own end behind it. Nothing is left to move.
            let _ = path.shutdown();
        } else {
            path.flush()?;
        }
        self.closed_sent = true;
        Ok(())
    }

    /// The peer received `offset` bytes: sends again what followed, and the end.
    fn resume(&mut self, offset: u64) -> Step<()> {
        self.acked_to(offset)?;
        self.ack_sent = self.received;
        let (front, back) = self.unacked.as_slices();
        let (front, back) = (front.to_vec(), back.to_vec());
        self.send_data(&front)?;
        self.send_data(&back)?;
        if self.shut && !self.end_acked {
            self.send(&Frame::End(self.sent))?;
        }
        // The peer may not have had the answer to its end.
        if let Some(end) = self.peer_end {
            self.send(&Frame::Closed(end))?;
        }
        Ok(())
    }

    /// On the connecting side: connects path `i` and says hello (joining the group if
    /// `join`); the peer's received offset. The path is current from here on.
    fn join(&mut self, i: usize, join: bool) -> Step<u64> {
        let Side::Connecting { paths, token, .. } = &self.side else {
            return Err(Fault::Path(io::Error::other("not the connecting side")));
        };
        let (path, token) = (paths[i], *token);
        let from = path.local.map(|ip| SocketAddr::new(ip, 0));
        let stream = RdmaStream::connect_from(from, path.remote, &self.config.stream)?;
        self.path = Some((stream, path.to_string()));
        self.filled = 0;
        if let Side::Connecting { current, .. } = &mut self.side {
            *current = i;
        }
        let hello = Frame::Hello {
            token,
            join,
            received: self.received,
        };
        self.send(&hello)?;
        let timeout = self.config.stream.handshake_deadline();
        let deadline = Instant::now() + timeout.map_err(|e| Fault::Fatal(e.into()))?;
        self.current()?.set_deadline(Some(deadline));
        let answer = self.answer();
        self.current()?.set_deadline(None);
        answer
    }

    /// Reads the listener's answer to a hello: its resume offset.
    fn answer(&mut self) -> Step<u64> {
        loop {
            if let Some(len) =
                frame::frame_len(&self.inbuf[..self.filled], 8).map_err(Fault::Fatal)?
            {
                if self.filled >= len {
                    let offset = match frame::decode(&self.inbuf[..len]) {
                        Frame::Resume(offset) => offset,
                        Frame::Unknown => {
                            return Err(fatal(
                                "the failover listener does not know this stream's group (it \
                                 ended, or the listener restarted)"
                                    .into(),
                            ))
                        }
                        _ => {
                            return Err(fatal(
                                "the failover listener answered a hello with neither a \
                                 resume nor an unknown-group frame"
                                    .into(),
                            ))
                        }
                    };
                    self.inbuf.copy_within(len..self.filled, 0);
                    self.filled -= len;
                    return Ok(offset);
                }
            }
            self.read_path()?;
        }
    }

    /// The current path failed with `cause`: moves to another within the failover timeout,
    /// or returns a [`FailoverError`].
    fn fail_over(&mut self, cause: &io::Error) -> io::Result<()> {
        if let Some((_, name)) = self.path.take() {
            self.failed(name, cause);
        }
        let deadline = Instant::now() + self.config.failover_timeout;
        let mut backoff = Duration::from_millis(50);
        loop {
            let moved = match &self.side {
                Side::Listening(group) => {
                    let group = Arc::clone(group);
                    match group.wait(deadline) {
                        Some((path, received)) => {
                            self.install(path);
                            self.send(&Frame::Resume(self.received))
                                .and_then(|()| self.resume(received))
                        }
                        None => return Err(self.no_path_left()),
                    }
                }
                Side::Connecting { paths, current, .. } => {
                    let (paths, first) = (paths.clone(), *current + 1);
                    let n = paths.len();
                    let mut moved = Err(Fault::Path(io::Error::other("no path tried")));
                    for i in (first..first + n).map(|i| i % n) {
                        if Instant::now() >= deadline {
                            return Err(self.no_path_left());
                        }
                        moved = self.join(i, true).and_then(|offset| self.resume(offset));
                        match &moved {
                            Err(Fault::Path(e)) => {
                                self.path = None;
                                self.failed(paths[i].to_string(), e);
                            }
                            _ => break,
                        }
                    }
                    moved
                }
            };
            match moved {
                Ok(()) => return Ok(()),
                Err(Fault::Fatal(e) | Fault::Call(e)) => return Err(e),
                Err(Fault::Path(e)) => {
                    if let Some((_, name)) = self.path.take() {
                        self.failed(name, &e);
                    }
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.no_path_left());
            }
            if matches!(self.side, Side::Connecting { .. }) {
                std::thread::sleep(backoff.min(left));
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

impl Read for FailoverStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.run(|s| {
            if !s.recv.is_empty() {
                let (front, back) = s.recv.as_slices();
                let n = buf.len().min(front.len() + back.len());
                let from_front = n.min(front.len());
                buf[..from_front].copy_from_slice(&front[..from_front]);
                buf[from_front..n].copy_from_slice(&back[..n - from_front]);
                s.recv.drain(..n);
                s.delivered += n as u64;
                return Ok(Some(n));
            }
            if s.peer_end == Some(s.received) {
                s.push_closed()?;
                return Ok(Some(0));
            }
            // Frames kept back while the buffer was full, then the path.
            if s.filled > 0 {
                s.take_frames()?;
                if !s.recv.is_empty() || s.peer_end.is_some() {
                    return Ok(None);
                }
            }
            s.pump()?;
            Ok(None)
        })
    }
}

impl Write for FailoverStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.run(|s| {
            if s.shut {
                return Err(Fault::Call(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the failover stream was shut down for writing",
                )));
            }
            let room = s.config.buffer - s.unacked.len();
            if room == 0 {
                s.pump()?;
                return Ok(None);
            }
            let bytes = &buf[..buf.len().min(room)];
            s.unacked.extend(bytes);
            s.sent += bytes.len() as u64;
            // Kept before it is sent: a path that fails sending sends it again on the next.
            match s.send_data(bytes) {
                Ok(()) => Ok(Some(bytes.len())),
                Err(Fault::Path(e)) => match s.fail_over(&e) {
                    Ok(()) => Ok(Some(bytes.len())),
                    Err(e) => Err(Fault::Fatal(e)),
                },
                Err(other) => Err(other),
            }
        })
    }

    /// Returns once every byte written is posted on the current path (see
    /// [`RdmaStream`]'s flush).
    fn flush(&mut self) -> io::Result<()> {
        self.run(|s| {
            s.current()?.flush()?;
            Ok(Some(()))
        })
    }
}

impl std::fmt::Debug for FailoverStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailoverStream")
            .field("path", &self.path())
            .field("sent", &self.sent)
            .field("acked", &self.acked)
            .field("received", &self.received)
            .field("failures", &self.failures)
            .finish()
    }
}
