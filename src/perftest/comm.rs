//! The rdma_cm connection that carries the out-of-band exchange with `-R` (perftest's
//! `rdma_client_connect` / `rdma_server_connect`): one RC QP, connected through rdma_cm on
//! the test's port, each message one SEND into the peer's one posted receive of a record's
//! size.

use std::cell::Cell;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use rdma_verbs::cm::{CmEventKind, CmId, ConnParam, EventChannel, PortSpace};
use rdma_verbs::QpType;
use rdma_verbs::{
    AccessFlags, CompletionChannel, CompletionQueue, MemoryRegion, RecvRequest, SendRequest,
    WorkCompletion,
};

use super::types::{Ctx as _, Error, Result};
use super::wire::DEST_LEN;

/// How long address and route resolution may take (perftest's 2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// Resolution errors the client takes before giving up (`NUM_OF_RETRIES`).
const RESOLVE_RETRIES: u32 = 10;
/// The work request ID of every exchange message (`SYNC_SPEC_ID`).
const SYNC_ID: u64 = 5;
/// Where outgoing messages are put in the region (incoming ones land at 0).
const SEND_AT: usize = 64;

/// The exchange connection's QP (owned by its CM id) and what it posts from.
pub struct CmLink {
    id: CmId,
    mr: MemoryRegion,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
    _recv_channel: CompletionChannel,
    channel: EventChannel,
    timeout: Option<Duration>,
    closed: Cell<bool>,
}

/// The first IPv4 address of `host`.
pub fn ipv4(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| Error::new(format!("Couldn't resolve {host}: {e}")))?
        .find(SocketAddr::is_ipv4)
        .ok_or_else(|| Error::new(format!("{host} has no IPv4 address")))
}

/// Waits up to `timeout` for the next event of `channel`.
pub fn next_event(channel: &EventChannel, timeout: Duration) -> Result<CmEventKind> {
    match channel
        .get_event_timeout(timeout)
        .ctx("rdma_get_cm_event")?
    {
        Some(event) => Ok(event.kind),
        None => Err(Error::new(format!(
            "no rdma_cm event within {} s",
            timeout.as_secs()
        ))),
    }
}

/// Resolves `id`'s address and route to `dst`, retrying on address and route errors as
/// perftest does.
pub fn resolve(channel: &EventChannel, id: &CmId, dst: SocketAddr) -> Result<()> {
    let mut retries = RESOLVE_RETRIES;
    loop {
        id.resolve_addr(None, dst, RESOLVE_TIMEOUT)
            .ctx("rdma_resolve_addr failed")?;
        match next_event(channel, 2 * RESOLVE_TIMEOUT)? {
            CmEventKind::AddrResolved => break,
            CmEventKind::AddrError if retries > 1 => retries -= 1,
            other => return Err(unexpected(&other)),
        }
    }
    loop {
        id.resolve_route(RESOLVE_TIMEOUT)
            .ctx("rdma_resolve_route failed")?;
        match next_event(channel, 2 * RESOLVE_TIMEOUT)? {
            CmEventKind::RouteResolved => return Ok(()),
            CmEventKind::RouteError if retries > 1 => retries -= 1,
            other => return Err(unexpected(&other)),
        }
    }
}

/// The error of an event where another was expected.
pub fn unexpected(kind: &CmEventKind) -> Error {
    match kind {
        CmEventKind::Rejected { reason_text, .. } => Error::new(format!(
            "the rdma_cm connection was rejected ({reason_text})"
        )),
        other => Error::new(format!("unexpected CM event {}", other.c_name())),
    }
}

/// Binds a listening id of `ps` on every IPv4 address at `port`.
pub fn listen(channel: &EventChannel, ps: PortSpace, port: u16, backlog: u32) -> Result<CmId> {
    let id = channel.create_id(ps).ctx("rdma_create_id failed")?;
    let fail =
        |e: rdma_verbs::Error| Error::new(format!("Couldn't listen to rdma_cm port {port}: {e}"));
    id.bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)))
        .map_err(fail)?;
    id.listen(i32::try_from(backlog).unwrap_or(i32::MAX))
        .map_err(fail)?;
    Ok(id)
}

/// Connection parameters as perftest's exchange connection sets them.
fn conn_param() -> ConnParam<'static> {
    ConnParam::new()
        .max_dest_rd_atomic(0)
        .max_rd_atomic(0)
        .flow_control(false)
}

impl CmLink {
    /// Connects to `host:port` (the client): resolves, creates the QP on the id's device,
    /// posts the receive and waits for the connection.
    pub fn connect(host: &str, port: u16, timeout: Duration) -> Result<CmLink> {
        let dst = ipv4(host, port)?;
        let channel = EventChannel::new().ctx("rdma_create_event_channel failed")?;
        let id = channel
            .create_id(PortSpace::Tcp)
            .ctx("rdma_create_id failed")?;
        resolve(&channel, &id, dst)?;
        let link = CmLink::new(channel, id)?;
        link.id.connect(&conn_param()).ctx("rdma_connect failed")?;
        match next_event(&link.channel, timeout)? {
            CmEventKind::Established { .. } => Ok(link),
            other => Err(unexpected(&other)),
        }
    }

    /// Listens on `port` on every IPv4 address and accepts the first client (waiting as
    /// long as it takes); the listener is gone when this returns.
    pub fn accept(port: u16) -> Result<CmLink> {
        let channel = EventChannel::new().ctx("rdma_create_event_channel failed")?;
        let listener = listen(&channel, PortSpace::Tcp, port, 1)?;
        let event = channel.get_event().ctx("rdma_get_cm_event")?;
        let CmEventKind::ConnectRequest { id, .. } = event.kind else {
            return Err(unexpected(&event.kind));
        };
        let link = CmLink::new(channel, id)?;
        link.id.accept(&conn_param()).ctx("rdma_accept failed")?;
        drop(listener);
        Ok(link)
    }

    /// The QP, region and CQs on `id`'s device, with the first receive posted.
    fn new(channel: EventChannel, mut id: CmId) -> Result<CmLink> {
        let ctx = id.context().ctx("the rdma_cm device")?;
        let pd = ctx.alloc_pd().ctx("Couldn't allocate PD")?;
        let mr = pd
            .alloc_mr(SEND_AT + DEST_LEN, AccessFlags::LOCAL_WRITE)
            .ctx("Couldn't allocate MR")?;
        let send_cq = ctx.create_cq(1, None).ctx("Couldn't create CQ")?;
        let recv_channel = ctx
            .create_comp_channel()
            .ctx("Couldn't create completion channel")?;
        let recv_cq = ctx
            .create_cq(1, Some(&recv_channel))
            .ctx("Couldn't create CQ")?;
        let qp = pd
            .create_qp(QpType::Rc, &send_cq, &recv_cq)
            .max_send_wr(1)
            .max_recv_wr(1);
        id.create_qp(qp).ctx("Couldn't create the rdma_cm QP")?;
        let link = CmLink {
            id,
            mr,
            send_cq,
            recv_cq,
            _recv_channel: recv_channel,
            channel,
            timeout: None,
            closed: Cell::new(false),
        };
        link.post_recv()?;
        Ok(link)
    }

    fn qp(&self) -> Result<&rdma_verbs::QueuePair> {
        self.id
            .qp()
            .ok_or_else(|| Error::new("the rdma_cm id has no QP"))
    }

    fn post_recv(&self) -> Result<()> {
        let sge = [self.mr.sge(..DEST_LEN).ctx("the receive buffer")?];
        let mut wr = [RecvRequest::new(SYNC_ID, &sge)];
        self.qp()?
            .post_recv(&mut wr)
            .ctx("Function ibv_post_recv failed for RDMA_CM QP")
    }

    /// Bounds every following receive by `timeout`.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = Some(timeout);
    }

    /// Sends `msg` (at most a record's size) and waits for its completion.
    pub fn send(&mut self, msg: &[u8], what: &str) -> Result<()> {
        let fail = |e: String| Error::new(format!("Couldn't send {what} to the peer: {e}"));
        self.mr
            .write(SEND_AT, msg)
            .map_err(|e| fail(e.to_string()))?;
        let sge = [self
            .mr
            .sge(SEND_AT..SEND_AT + msg.len())
            .map_err(|e| fail(e.to_string()))?];
        let mut wr = [SendRequest::send(SYNC_ID, &sge).signaled()];
        self.qp()?
            .post_send(&mut wr)
            .map_err(|e| fail(e.to_string()))?;
        let mut wc = [WorkCompletion::default()];
        let done = self
            .send_cq
            .poll_until(&mut wc, 1, self.timeout)
            .map_err(|e| fail(e.to_string()))?;
        match done {
            [c] if c.is_success() => Ok(()),
            [c] => Err(fail(format!("completion status {}", c.status()))),
            _ => Err(fail("no completion".into())),
        }
    }

    /// Receives the peer's next message into `buf` (its first `buf.len()` bytes) and posts
    /// the receive for the one after.
    pub fn recv(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let mut wc = [WorkCompletion::default()];
        let done = self
            .recv_cq
            .poll_wait(&mut wc, self.timeout)
            .ctx(format_args!("Couldn't read {what} from the peer"))?;
        match done {
            [c] if c.is_success() => {}
            [c] => {
                self.closed.set(true);
                return Err(Error::new(format!(
                    "the rdma_cm connection failed while receiving {what} (completion status {})",
                    c.status()
                )));
            }
            _ => {
                return Err(Error::new(format!(
                    "timed out after {}s waiting for {what} from the peer",
                    self.timeout.map_or(0, |t| t.as_secs())
                )))
            }
        }
        self.mr.read(0, buf).ctx(format_args!("reading {what}"))?;
        self.post_recv()
    }

    /// Whether the peer has disconnected (without waiting): for telling a dead peer from a
    /// slow one while waiting for the RDMA traffic.
    pub fn closed(&self) -> bool {
        while let Ok(Some(event)) = self.channel.get_event_timeout(Duration::ZERO) {
            if matches!(
                event.kind,
                CmEventKind::Disconnected | CmEventKind::DeviceRemoval
            ) {
                self.closed.set(true);
            }
        }
        self.closed.get()
    }
}
