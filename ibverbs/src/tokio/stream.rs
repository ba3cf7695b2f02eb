//! Byte streams over RDMA on tokio (features `tokio` and `cm`): [`RdmaStream`] is
//! `AsyncRead` + `AsyncWrite` over one RC connection, made by [`RdmaStream::connect`] or
//! taken from an [`RdmaListener`]. The protocol, what a peer can and cannot do, and what
//! closing does are in [`crate::stream`].
//!
//! ```no_run
//! use rdma_verbs::tokio::stream::{RdmaListener, RdmaStream};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # async fn f() -> std::io::Result<()> {
//! let mut listener = RdmaListener::bind("192.168.1.10:7471".parse().unwrap())?;
//! tokio::spawn(async move {
//!     let mut stream = listener.accept().await?;
//!     let mut line = Vec::new();
//!     stream.read_to_end(&mut line).await?;
//!     stream.write_all(&line).await?;
//!     stream.shutdown().await?;
//!     // Dropping is abortive: the client has every byte and the end before the drop.
//!     stream.flush().await
//! });
//! let mut stream = RdmaStream::connect("192.168.1.10:7471".parse().unwrap()).await?;
//! stream.write_all(b"hello").await?;
//! stream.shutdown().await?; // the server's read_to_end ends here
//! let mut echo = Vec::new();
//! stream.read_to_end(&mut echo).await?;
//! # Ok(()) }
//! ```
//!
//! A stream is one task's (its `poll_*` take `&mut self`); `tokio::io::split` (tokio's
//! `io-util` feature) gives a reader and a writer for two tasks. Reads and writes wake each
//! other's task when the completion queue or the id has news for both.

use std::future::{poll_fn, Future};
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Duration;

use ::tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use futures_core::Stream;

use super::cm::{AsyncCmChannel, AsyncCmId, ConnectRequest, Listener};
use super::ticker::Ticker;
use super::AsyncCq;
use crate::cm::{CmEventKind, PortSpace};
use crate::error::Result;
use crate::stream::ring::{Rings, Step, BATCH};
use crate::stream::setup::{self, conn_param, invalid_data, qp};
use crate::stream::wire::Hello;
use crate::stream::{StreamConfig, BACKLOG, HANDSHAKES};
use crate::wake::wake_all;
use crate::{QueuePair, WorkCompletion};

/// A byte stream over one RC connection: tokio `AsyncRead` + `AsyncWrite` (see the module
/// docs, and [`crate::stream`] for the protocol).
pub struct RdmaStream {
    /// Dropped first: destroys the QP (the HCA is then done with the rings), then the id
    /// (the peer gets the disconnect).
    id: AsyncCmId,
    cq: AsyncCq,
    rings: Rings,
    /// Ticks every keepalive interval: a probe, if nothing is in flight.
    keepalive: Option<Ticker>,
    wakers: Arc<Wakers>,
    /// Wakes both tasks: the waker the CQ and the id keep.
    fan_out: Waker,
    local: Option<SocketAddr>,
    peer: Option<SocketAddr>,
}

/// The tasks waiting to read and to write.
#[derive(Default)]
struct Wakers {
    read: Mutex<Option<Waker>>,
    write: Mutex<Option<Waker>>,
}

impl std::task::Wake for Wakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let take = |slot: &Mutex<Option<Waker>>| {
            slot.lock().unwrap_or_else(PoisonError::into_inner).take()
        };
        wake_all([take(&self.read), take(&self.write)].into_iter().flatten());
    }
}

fn keep(slot: &Mutex<Option<Waker>>, waker: &Waker) {
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

impl RdmaStream {
    /// Connects to a listener at `addr` with the default rings ([`StreamConfig`]).
    pub async fn connect(addr: SocketAddr) -> io::Result<RdmaStream> {
        Self::connect_with(addr, &StreamConfig::default()).await
    }

    /// Connects to a listener at `addr` with the rings of `config`: resolves the address
    /// and route, registers the rings, posts the receives and connects. A peer that is not
    /// a stream listener (its accept has no stream hello) is an `InvalidData` error; no
    /// listener is `ConnectionRefused`.
    pub async fn connect_with(addr: SocketAddr, config: &StreamConfig) -> io::Result<RdmaStream> {
        let hello = config.hello()?;
        let keepalive = config.probe_interval()?;
        let channel = AsyncCmChannel::new()?;
        let mut id = channel.create_id(PortSpace::Tcp)?;
        id.id().set_option(config.tos())?;
        id.resolve(None, addr, config.timeout()).await?;
        let (cq, rings) = prepare(&mut id, hello)?;
        let connected = id.connect(&conn_param(&hello.encode())).await?;
        let peer = Hello::decode(&connected.private_data).map_err(invalid_data)?;
        RdmaStream::new(connected.id, cq, rings, peer, keepalive)
    }

    fn new(
        id: AsyncCmId,
        cq: AsyncCq,
        mut rings: Rings,
        peer: Hello,
        keepalive: Option<Duration>,
    ) -> io::Result<RdmaStream> {
        // Before the id moves in: on an error, dropping the parts here drops the QP (the
        // id's) before the rings.
        let keepalive = keepalive.map(Ticker::new).transpose()?;
        rings.connected(peer, qp(id.id()));
        let wakers = Arc::new(Wakers::default());
        Ok(RdmaStream {
            local: id.id().local_addr(),
            peer: id.id().peer_addr(),
            id,
            cq,
            rings,
            keepalive,
            fan_out: Waker::from(Arc::clone(&wakers)),
            wakers,
        })
    }

    /// This side's address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The peer's address.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// Polls the CQ, then the id's events, then the keepalive ticker, once; `Ready` if one
    /// had something (handed to the rings, or a probe posted), `Pending` with the fan-out
    /// waker kept by all.
    fn poll_progress(&mut self) -> Poll<()> {
        let mut cx = TaskContext::from_waker(&self.fan_out);
        let mut wc = [WorkCompletion::default(); BATCH];
        match self.cq.poll_completions(&mut cx, &mut wc) {
            Poll::Ready(Ok(n)) => {
                self.rings.complete(qp(self.id.id()), &wc[..n]);
                return Poll::Ready(());
            }
            Poll::Ready(Err(e)) => {
                self.rings
                    .fail_locally(format!("polling the completion queue: {e}"));
                return Poll::Ready(());
            }
            Poll::Pending => {}
        }
        match self.id.poll_event(&mut cx) {
            Poll::Pending => {
                // A keepalive interval ended: a probe (see [`StreamConfig::keepalive`]).
                let Some(ticker) = &self.keepalive else {
                    return Poll::Pending;
                };
                match ticker.poll_tick(&mut cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(())) => self.rings.keepalive(qp(self.id.id())),
                    Poll::Ready(Err(e)) => {
                        self.rings.fail_locally(format!("the keepalive timer: {e}"))
                    }
                }
                Poll::Ready(())
            }
            Poll::Ready(Ok(event)) => {
                if matches!(event.kind, CmEventKind::Disconnected) {
                    // What completed before the disconnect is the peer's last word: taken
                    // before the stream is marked closed.
                    self.drain();
                    self.rings.peer_closed();
                }
                Poll::Ready(())
            }
            Poll::Ready(Err(e)) => {
                self.rings
                    .fail_locally(format!("waiting for the connection's events: {e}"));
                Poll::Ready(())
            }
        }
    }

    /// Hands every completion on the CQ to the rings, without waiting.
    fn drain(&mut self) {
        if let Err(e) = self.rings.drain(self.cq.cq(), qp(self.id.id())) {
            self.rings
                .fail_locally(format!("polling the completion queue: {e}"));
        }
    }

    /// Runs `step` until it has an answer, waiting for the CQ and the id in between with the
    /// task's waker kept as the reader's or (`write`) the writer's.
    fn poll_step<T>(
        &mut self,
        cx: &mut TaskContext<'_>,
        write: bool,
        mut step: impl FnMut(&mut Rings, &QueuePair) -> Step<T>,
    ) -> Poll<io::Result<T>> {
        loop {
            if let Some(done) = step(&mut self.rings, qp(self.id.id())) {
                if done.is_err() {
                    // The other half may wait on what broke (a failed post wakes no CQ).
                    self.fan_out.wake_by_ref();
                }
                return Poll::Ready(done);
            }
            let slot = if write {
                &self.wakers.write
            } else {
                &self.wakers.read
            };
            keep(slot, cx.waker());
            if self.poll_progress().is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl AsyncRead for RdmaStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let read = this.poll_step(cx, false, |rings, qp| {
            rings.read(qp, buf.initialize_unfilled())
        });
        read.map_ok(|n| buf.advance(n))
    }
}

impl AsyncWrite for RdmaStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .poll_step(cx, true, |rings, qp| rings.write(qp, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Ready once every byte written is posted (in the HCA's send queue); after a shutdown,
    /// once every byte and the end were sent and their sends completed (see the protocol's
    /// closing rules in [`crate::stream`]).
    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        self.get_mut()
            .poll_step(cx, true, |rings, qp| rings.flush(qp))
    }

    /// Queues the end of this side's bytes behind what was written (the peer reads `Ok(0)`
    /// after them) and is ready once every send completed (the peer has them all); or at
    /// once, the end queued, if bytes wait for room in the peer's ring while this side's
    /// unread bytes fill its own (the peer may be blocked writing to this side): see
    /// [`crate::stream`]. Reading goes on; writing fails with `BrokenPipe`.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        self.get_mut()
            .poll_step(cx, true, |rings, qp| rings.shutdown(qp))
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

/// A listener of byte-stream connections: [`accept`](Self::accept) them one by one, or take
/// them as a [`Stream`] (for a server's accept loop, such as tonic's
/// `serve_with_incoming`). Up to 64 connect requests go through their handshake at once,
/// each within the config's [`handshake_timeout`](StreamConfig::handshake_timeout) (after
/// it, the handshake is dropped: the peer sees a reject). A request whose handshake fails
/// for the peer's reason (not a stream peer, its connect withdrawn or timed out) is
/// rejected or dropped, and the listener goes on; one that fails for this side's (no memory
/// for its rings, no file descriptor left) is rejected and the accept returns the error:
/// the listener goes on at the next.
pub struct RdmaListener {
    listener: Listener,
    hello: Hello,
    keepalive: Option<Duration>,
    timeout: Duration,
    handshakes: Vec<Handshake>,
}

/// A handshake under way: the stream once established (`None`: the peer's failure; an
/// error is this side's), and its deadline.
struct Handshake {
    stream: Pin<Box<dyn Future<Output = io::Result<Option<RdmaStream>>> + Send>>,
    /// Its first tick is the deadline.
    deadline: Ticker,
}

impl RdmaListener {
    /// Listens on `addr` (port 0: one the CM picks) with the default rings.
    pub fn bind(addr: SocketAddr) -> io::Result<RdmaListener> {
        Self::bind_with(addr, &StreamConfig::default())
    }

    /// Listens on `addr` with the rings of `config` for every stream it accepts. Must be
    /// called inside a tokio runtime.
    pub fn bind_with(addr: SocketAddr, config: &StreamConfig) -> io::Result<RdmaListener> {
        let hello = config.hello()?;
        let keepalive = config.probe_interval()?;
        let timeout = config.handshake_deadline()?;
        let id = AsyncCmChannel::new()?.create_id(PortSpace::Tcp)?;
        id.id().set_option(config.tos())?;
        id.id().bind(addr)?;
        let listener = id.listen(BACKLOG)?;
        Ok(RdmaListener {
            listener,
            hello,
            keepalive,
            timeout,
            handshakes: Vec::new(),
        })
    }

    /// The address listened on (with the port the CM picked).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next connection.
    pub async fn accept(&mut self) -> io::Result<RdmaStream> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// The poll function under [`accept`](Self::accept): takes new connect requests,
    /// drives their handshakes, and is ready with the first stream up, or with an error of
    /// this side's (the listener's, or a stream's set-up).
    pub fn poll_accept(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<RdmaStream>> {
        while self.handshakes.len() < HANDSHAKES {
            match Pin::new(&mut self.listener).poll_next(cx) {
                Poll::Ready(Some(Ok(request))) => {
                    // On an error, dropping the request destroys its id: the peer sees a
                    // reject.
                    let deadline = Ticker::new(self.timeout)?;
                    let stream = Box::pin(handshake(request, self.hello, self.keepalive));
                    self.handshakes.push(Handshake { stream, deadline });
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e.into())),
                Poll::Ready(None) | Poll::Pending => break,
            }
        }
        let mut i = 0;
        while i < self.handshakes.len() {
            let handshake = &mut self.handshakes[i];
            let done = match handshake.stream.as_mut().poll(cx) {
                Poll::Ready(done) => Some(done),
                // Time up (or the timer broken): dropped like a failure of the peer's.
                Poll::Pending if handshake.deadline.poll_tick(cx).is_ready() => Some(Ok(None)),
                Poll::Pending => None,
            };
            match done {
                None => i += 1,
                Some(done) => {
                    drop(self.handshakes.swap_remove(i));
                    match done {
                        // That peer's failure: the listener goes on.
                        Ok(None) => {}
                        Ok(Some(stream)) => return Poll::Ready(Ok(stream)),
                        Err(e) => return Poll::Ready(Err(e)),
                    }
                }
            }
        }
        Poll::Pending
    }
}

impl Stream for RdmaListener {
    type Item = io::Result<RdmaStream>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_accept(cx).map(Some)
    }
}

impl std::fmt::Debug for RdmaListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RdmaListener")
            .field("local", &self.local_addr())
            .field("handshakes", &self.handshakes.len())
            .finish()
    }
}

/// Accepts `request` if it carries a stream hello (else rejects it: `None`, as when the
/// accept fails, the peer's request withdrawn or timed out); an error is this side's.
async fn handshake(
    mut request: ConnectRequest,
    hello: Hello,
    keepalive: Option<Duration>,
) -> io::Result<Option<RdmaStream>> {
    let Ok(peer) = Hello::decode(&request.private_data) else {
        let _ = request.reject(&[]);
        return Ok(None);
    };
    // On an error below, dropping the request destroys its id: the peer sees a reject.
    let (cq, rings) = prepare(&mut request.id, hello)?;
    let Ok(id) = request.accept(&conn_param(&hello.encode())).await else {
        return Ok(None);
    };
    RdmaStream::new(id, cq, rings, peer, keepalive).map(Some)
}

/// [`setup::prepare`] for an async id, its CQ on the reactor.
fn prepare(id: &mut AsyncCmId, hello: Hello) -> Result<(AsyncCq, Rings)> {
    let ctx = id.id().context()?;
    let channel = ctx.create_comp_channel()?;
    let (cq, rings) = setup::prepare(&ctx, &channel, hello, |qp| id.create_qp(qp))?;
    Ok((AsyncCq::new(cq)?, rings))
}
