//! The test's QPs connected through rdma_cm (`-R`, perftest's `create_rdma_cm_connection`):
//! the server listens on the test's port (in the UDP port space for UD) and accepts one
//! connection per QP, the client resolves and connects each QP, retrying the whole
//! connection up to 10 times 100 ms apart. The PD, region and CQs are made on the device
//! of the first CM id, the QPs on the ids, which own them.
//!
//! UD, where the server sends too (latency tests, `-b`): the client tells the server its QP
//! number in a send with immediate through the address handle of the accept, into a receive
//! the server posted before accepting.

use std::net::SocketAddr;
use std::thread;
use std::time::Duration;

use rdma_verbs::cm::{CmEventKind, CmId, CmOption, ConnParam, EventChannel, PortSpace};
use rdma_verbs::QpType;
use rdma_verbs::{AddressHandle, Gid, RecvRequest, SendRequest, WorkCompletion};

use super::comm::{self, next_event, unexpected};
use super::rdma::{self, Base, Qp, Resources, Run, GRH};
use super::types::{Conn, Ctx as _, Error, Result, Verb};
use super::wire::Record;

/// Attempts of the client's connection (perftest's `max_retries`).
const ATTEMPTS: u32 = 10;
/// Pause between two attempts.
const RETRY_DELAY: Duration = Duration::from_millis(100);
/// How long the server waits for each connect request, and the client for each answer.
const WAIT: Duration = Duration::from_secs(60);

/// The QPs of a test, connected through rdma_cm, before the records are swapped.
pub struct CmQps {
    base: Base,
    ids: Vec<CmId>,
    ahs: Vec<AddressHandle>,
}

/// Whether the UD server learns the client's QP number through a datagram.
fn ud_handshake(run: &Run) -> bool {
    run.conn == Conn::Ud && (!run.test.is_bw() || run.traffic.duplex)
}

/// perftest's connection parameters of the test's QPs.
fn conn_param(run: &Run) -> ConnParam<'static> {
    let rd = if matches!(run.test.verb(), Verb::Read | Verb::Atomic) {
        u8::try_from(run.port.out_reads).unwrap_or(u8::MAX)
    } else {
        0
    };
    ConnParam::new()
        .max_dest_rd_atomic(rd)
        .max_rd_atomic(rd)
        .flow_control(false)
}

fn port_space(run: &Run) -> PortSpace {
    if run.conn == Conn::Ud {
        PortSpace::Udp
    } else {
        PortSpace::Tcp
    }
}

/// Creates the QP of `id` in `base` (which is made on the id's device first if need be).
fn create_qp(id: &mut CmId, base: &mut Option<Base>, run: &Run) -> Result<()> {
    if base.is_none() {
        let ctx = id.context().ctx("the rdma_cm device")?;
        *base = Some(Base::new(&ctx, run)?);
    }
    let Some(b) = base.as_ref() else {
        unreachable!("made above")
    };
    let qp_type = if run.conn == Conn::Ud {
        QpType::Ud
    } else {
        QpType::Rc
    };
    let qp =
        b.pd.create_qp(qp_type, &b.send_cq.cq, &b.recv().cq)
            .max_send_wr(run.queues.tx_depth)
            .max_recv_wr(run.queues.rx_depth)
            .max_inline_data(run.port.inline_size);
    id.create_qp(qp).ctx("Failed to create QP.")?;
    Ok(())
}

/// The side of a connection about to be made: the server's listening id, or the client's
/// destination.
pub enum Pending {
    /// The server listens (already before the exchange that precedes the connection, so
    /// that a client which connects at once finds it; perftest listens after it).
    Server(EventChannel, Box<CmId>),
    /// The client connects there.
    Client(SocketAddr),
}

impl Pending {
    /// The server listens on the test's port; the client resolves its server's address.
    pub fn new(run: &Run) -> Result<Pending> {
        let port = run.connection.port;
        match &run.connection.server {
            None => {
                let channel = EventChannel::new().ctx("Failed to create RDMA CM event channel.")?;
                let num_qps = run.queues.num_qps;
                let listener = comm::listen(&channel, port_space(run), port, num_qps)?;
                Ok(Pending::Server(channel, Box::new(listener)))
            }
            Some(host) => Ok(Pending::Client(comm::ipv4(host, port)?)),
        }
    }

    /// Connects the test's QPs.
    pub fn connect(self, run: &Run) -> Result<CmQps> {
        let dst = match self {
            Pending::Server(channel, listener) => return serve(&channel, listener, run),
            Pending::Client(dst) => dst,
        };
        let mut base = None;
        let mut last = Error::new("no attempt");
        for _ in 0..ATTEMPTS {
            match try_connect(run, dst, &mut base) {
                Ok((ids, ahs)) => {
                    let Some(base) = base else {
                        unreachable!("made with the first QP")
                    };
                    return Ok(CmQps { base, ids, ahs });
                }
                Err(e) => last = e,
            }
            thread::sleep(RETRY_DELAY);
        }
        Err(Error::new(format!(
            "Failed to connect RDMA CM client, tried {ATTEMPTS} times: {last}"
        )))
    }
}

/// One attempt of the client: resolve, create the QP and connect, QP after QP.
fn try_connect(
    run: &Run,
    dst: SocketAddr,
    base: &mut Option<Base>,
) -> Result<(Vec<CmId>, Vec<AddressHandle>)> {
    let channel = EventChannel::new().ctx("Failed to create RDMA CM event channel.")?;
    let mut ids = Vec::new();
    let mut ahs = Vec::new();
    for i in 0..run.queues.num_qps as usize {
        let mut id = channel
            .create_id(port_space(run))
            .ctx("Failed to create RDMA CM ID.")?;
        // --tclass: the type of service of the connection, which on RoCE is the route's
        // traffic class (set before the route is resolved).
        if run.qos.tclass != 0 {
            id.set_option(CmOption::TrafficClass(run.qos.tclass))
                .ctx("Failed to set the TOS of the RDMA CM ID.")?;
        }
        comm::resolve(&channel, &id, dst)?;
        create_qp(&mut id, base, run)?;
        id.connect(&conn_param(run))
            .ctx("Failed to connect through RDMA CM.")?;
        let ud = match next_event(&channel, WAIT)? {
            CmEventKind::Established { ud, .. } => ud,
            other => return Err(unexpected(&other)),
        };
        if run.conn == Conn::Ud {
            let (Some(peer), Some(b)) = (ud, base.as_mut()) else {
                return Err(Error::new("the UD connection gave no peer address"));
            };
            let ah = peer
                .create_ah(&b.pd)
                .ctx("Failed to create AH for RDMA CM connection.")?;
            if ud_handshake(run) {
                let qp = id.qp().ok_or_else(|| Error::new("no QP"))?;
                let qpn = qp.qp_num();
                let at = run.layout.send_offset(i);
                b.mr.write(at, &qpn.to_ne_bytes()).ctx("the QP number")?;
                let sge = [b.mr.sge(at..at + 4).ctx("the QP number")?];
                let mut wr = [SendRequest::send_with_imm(0, &sge, qpn)
                    .ud(&ah, peer.qp_num, peer.qkey)
                    .signaled()];
                qp.post_send(&mut wr)
                    .ctx("Failed to send UD connection parameters to the remote node.")?;
                wait_one(&b.send_cq.cq, "the send of the QP number")?;
            }
            ahs.push(ah);
        }
        ids.push(id);
    }
    Ok((ids, ahs))
}

/// Waits for one successful completion on `cq`.
fn wait_one(cq: &rdma_verbs::CompletionQueue, what: &str) -> Result<()> {
    let mut wc = [WorkCompletion::default()];
    match cq.poll_until(&mut wc, 1, Some(WAIT)).ctx(what)? {
        [c] if c.is_success() => Ok(()),
        [c] => Err(Error::new(format!(
            "Bad WQE status for {what}: {}",
            c.status()
        ))),
        _ => Err(Error::new(format!("no completion for {what}"))),
    }
}

/// The server: listens and accepts one connection per QP.
fn serve(channel: &EventChannel, listener: Box<CmId>, run: &Run) -> Result<CmQps> {
    let mut base = None;
    let mut ids = Vec::new();
    for i in 0..run.queues.num_qps as usize {
        // The connections accepted before announce themselves meanwhile.
        let mut id = loop {
            match next_event(channel, WAIT)? {
                CmEventKind::ConnectRequest { id, .. } => break id,
                CmEventKind::Established { .. } => {}
                other => return Err(unexpected(&other)),
            }
        };
        create_qp(&mut id, &mut base, run)?;
        let (Some(b), Some(qp)) = (base.as_ref(), id.qp()) else {
            unreachable!("made above")
        };
        if ud_handshake(run) {
            let at = run.layout.recv_offset(i);
            let sge = [b.mr.sge(at..at + GRH + 4).ctx("the QP number")?];
            qp.post_recv(&mut [RecvRequest::new(0, &sge)])
                .ctx("Failed to post receive for RDMA CM UD request connection parameters.")?;
        }
        id.accept(&conn_param(run))
            .ctx("Failed to accept RDMA CM connection.")?;
        if ud_handshake(run) {
            wait_one(&b.recv().cq, "the peer's QP number")?;
        }
        ids.push(id);
    }
    drop(listener);
    let Some(base) = base else {
        unreachable!("made with the first QP")
    };
    Ok(CmQps {
        base,
        ids,
        ahs: Vec::new(),
    })
}

impl CmQps {
    /// This side's records: the GID is the test's (its GID index), as perftest queries it.
    pub fn records(&self, run: &Run) -> Result<Vec<Record>> {
        let dev = &run.device;
        let gid: Option<Gid> = match run.port.gid_index {
            Some(i) => Some(
                dev.ctx
                    .query_gid(dev.port_num, i)
                    .ctx("Couldn't query the GID")?,
            ),
            None => None,
        };
        let endpoints = self
            .ids
            .iter()
            .filter_map(CmId::qp)
            .map(rdma_verbs::QueuePair::endpoint);
        Ok(self.base.records(run, gid, endpoints))
    }

    /// The connected resources; the UD server's address handles (where it sends) come
    /// from the peer's records.
    pub fn finish(self, run: &Run, theirs: &[Record]) -> Result<Resources> {
        let mut ahs = self.ahs;
        if run.conn == Conn::Ud && ahs.is_empty() && run.sends() {
            for r in theirs {
                ahs.push(rdma::ud_ah(&self.base.pd, run, r)?);
            }
        }
        let qps = self
            .ids
            .into_iter()
            .map(Qp::of_cm)
            .collect::<Result<Vec<_>>>()?;
        Ok(self.base.into_resources(qps, ahs))
    }
}
