//! The verbs side: the device and port (`device`), the options resolved against them and
//! the peer into the run (`run`), and the resources of a test (one memory region, CQs, QPs,
//! and on iWARP the receive credits of `ib_send_bw`: `credit`), on the safe `rdma-verbs`
//! API.

mod credit;
mod device;
mod run;

use std::fmt::Write as _;
use std::ops::Deref;

use rdma_verbs::cm::CmId;
use rdma_verbs::{
    AccessFlags, AddressHandle, CompletionChannel, CompletionQueue, ConnectOptions, Context,
    Endpoint, Gid, MemoryRegion, Mtu, PreparedQueuePair, ProtectionDomain, QpType, QueuePair,
    Route, Transport,
};

use super::options::Limiter;
use super::types::{Conn, Ctx as _, Error, Result, Test, Verb};
use super::wire::Record;

pub use credit::{Credits, COUNT_LEN};
pub use device::{v4_mapped, Device};
pub(crate) use run::{Agreed, Run, Setup};

/// Bytes of the GRH in front of every UD receive.
pub const GRH: usize = 40;

/// Where things are in the test's one memory region: per QP, a send area and then a receive
/// area (the one the peer reads or writes), each `slot` bytes, as perftest lays them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of one area: the larger of the message size and the cycle buffer, rounded up
    /// to the cache line.
    pub slot: usize,
    /// Number of QPs.
    pub num_qps: usize,
    /// Cache line size (the larger of both sides').
    pub cache_line: usize,
    /// Page size (the larger of both sides'): small messages cycle through this much.
    pub cycle_buffer: usize,
    /// UD: receives carry a GRH first.
    pub ud: bool,
}

impl Layout {
    /// The layout for messages up to `size` bytes.
    pub fn new(
        size: u64,
        num_qps: u32,
        cache_line: usize,
        cycle_buffer: usize,
        ud: bool,
    ) -> Layout {
        let area = (size as usize).max(cycle_buffer);
        Layout {
            slot: round_up(area, cache_line),
            num_qps: num_qps as usize,
            cache_line,
            cycle_buffer,
            ud,
        }
    }

    /// Bytes of the region.
    pub fn total(&self) -> usize {
        2 * self.num_qps * self.slot + if self.ud { self.cache_line } else { 0 }
    }

    /// Offset of QP `q`'s send area.
    pub fn send_offset(&self, q: usize) -> usize {
        q * self.slot
    }

    /// Offset of QP `q`'s receive area (what the peer's RDMA targets).
    pub fn recv_offset(&self, q: usize) -> usize {
        (self.num_qps + q) * self.slot
    }

    /// Offset of QP `q`'s receive buffer for send tests (after room for the GRH on UD).
    pub fn recv_buffer(&self, q: usize) -> usize {
        self.recv_offset(q) + if self.ud { self.cache_line - GRH } else { 0 }
    }

    /// Where the `k`-th message of `size` bytes goes within an area: perftest steps
    /// cache-line-rounded slots through the cycle buffer when two messages fit in it.
    pub fn cycle(&self, size: u64, k: u64) -> usize {
        let step = if size as usize > self.cache_line {
            round_up(size as usize, self.cache_line)
        } else {
            self.cache_line
        };
        if size as usize <= self.cycle_buffer / 2 {
            let slots = (self.cycle_buffer / step).max(1) as u64;
            (k % slots) as usize * step
        } else {
            0
        }
    }
}

fn round_up(v: usize, align: usize) -> usize {
    v.div_ceil(align) * align
}

/// A completion queue and its event channel (`-e`).
pub struct Cq {
    /// The CQ.
    pub cq: CompletionQueue,
    /// Its channel, with events.
    pub channel: Option<CompletionChannel>,
}

impl Cq {
    fn new(ctx: &Context, entries: u32, events: bool) -> Result<Cq> {
        let channel = if events {
            Some(
                ctx.create_comp_channel()
                    .ctx("Couldn't create completion channel")?,
            )
        } else {
            None
        };
        let cq = ctx
            .create_cq(entries.max(1), channel.as_ref())
            .ctx("Couldn't create CQ")?;
        Ok(Cq { cq, channel })
    }
}

/// The PD, memory region and CQs of a test, on one device context.
pub struct Base {
    /// The PD.
    pub pd: ProtectionDomain,
    /// The one memory region.
    pub mr: MemoryRegion,
    /// Completions of sends (and of everything on non-send tests).
    pub send_cq: Cq,
    /// Completions of receives (send tests).
    pub recv_cq: Option<Cq>,
    /// Where things are in the region.
    pub layout: Layout,
    /// `ib_send_bw` on iWARP: the receive credits, which the records announce.
    pub credits: Option<Credits>,
}

impl Base {
    /// Creates the PD, region and CQs of the test on `ctx` (and the credits of
    /// `ib_send_bw` on iWARP).
    pub fn new(ctx: &Context, run: &Run) -> Result<Base> {
        let verb = run.test.verb();
        let (q, layout) = (&run.queues, run.layout);
        let iwarp = ctx.transport() == Transport::Iwarp;
        let pd = ctx.alloc_pd().ctx("Couldn't allocate PD")?;
        let mut access = AccessFlags::LOCAL_WRITE;
        access |= match verb {
            Verb::Write => AccessFlags::REMOTE_WRITE,
            // An iWARP read response is a write into the reader's memory, which must
            // allow it (as perftest registers it).
            Verb::Read if iwarp => AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
            Verb::Read => AccessFlags::REMOTE_READ,
            Verb::Atomic => AccessFlags::REMOTE_ATOMIC,
            Verb::Send => AccessFlags::empty(),
        };
        if run.port.relaxed_ordering {
            access |= AccessFlags::RELAXED_ORDERING;
        }
        let mr = pd.alloc_mr(layout.total(), access).ctx(format_args!(
            "Couldn't allocate MR of {} bytes",
            layout.total()
        ))?;
        let send_cq = Cq::new(ctx, q.tx_depth * q.num_qps, q.events)?;
        let recv_cq = if verb == Verb::Send {
            Some(Cq::new(ctx, q.rx_depth * q.num_qps, q.events)?)
        } else {
            None
        };
        let credits = if run.test == Test::SendBw && iwarp {
            Some(Credits::new(&pd, q.num_qps as usize)?)
        } else {
            None
        };
        Ok(Base {
            pd,
            mr,
            send_cq,
            recv_cq,
            layout,
            credits,
        })
    }

    /// The CQ of receives: the receive CQ of send tests, else the send CQ.
    pub fn recv(&self) -> &Cq {
        self.recv_cq.as_ref().unwrap_or(&self.send_cq)
    }

    /// This side's records, one per QP of `endpoints` (whose GIDs are used when the test
    /// has no `gid`); with credits, their RKey and VAddr name the QP's credit slot.
    pub fn records(
        &self,
        run: &Run,
        gid: Option<Gid>,
        endpoints: impl Iterator<Item = Endpoint>,
    ) -> Vec<Record> {
        endpoints
            .enumerate()
            .map(|(i, ep)| {
                let (rkey, vaddr) = match &self.credits {
                    Some(c) => (c.rkey(), c.slot_addr(i)),
                    None => (
                        self.mr.rkey(),
                        self.mr.addr() + self.layout.recv_offset(i) as u64,
                    ),
                };
                Record {
                    lid: run.device.port.lid,
                    out_reads: run.port.out_reads as u16,
                    qpn: ep.qpn,
                    psn: ep.psn,
                    rkey,
                    vaddr,
                    gid: run.uses_gid().then_some(gid.unwrap_or(ep.gid).into()),
                    srqn: 0,
                }
            })
            .collect()
    }

    /// The connected resources with `qps` and the UD address handles `ahs`.
    pub fn into_resources(self, qps: Vec<Qp>, ahs: Vec<AddressHandle>) -> Resources {
        Resources {
            queues: Queues {
                mr: self.mr,
                qps,
                ahs,
                layout: self.layout,
            },
            send_cq: self.send_cq,
            recv_cq: self.recv_cq,
            credits: self.credits,
        }
    }
}

/// The resources before the connection: QPs in INIT.
pub struct Prepared {
    base: Base,
    qps: Vec<PreparedQueuePair>,
}

/// A connected QP: made and connected here, or made on an rdma_cm id, which owns it.
// The test's few QPs sit in one Vec made once; a Box would add a load to every post.
#[allow(clippy::large_enum_variant)]
pub enum Qp {
    /// Made with `ibv_create_qp` and connected with `ibv_modify_qp`.
    Own(QueuePair),
    /// Made with `rdma_create_qp` on the id (`-R`).
    Cm(CmId),
}

impl Qp {
    /// The QP of `id`, which must have one.
    pub fn of_cm(id: CmId) -> Result<Qp> {
        match id.qp() {
            Some(_) => Ok(Qp::Cm(id)),
            None => Err(Error::new("the rdma_cm id has no QP")),
        }
    }
}

impl Deref for Qp {
    type Target = QueuePair;

    fn deref(&self) -> &QueuePair {
        match self {
            Qp::Own(qp) => qp,
            // Qp::of_cm only takes an id with a QP, and an id keeps its QP.
            Qp::Cm(id) => id.qp().expect("a Qp's CM id has its QP"),
        }
    }
}

/// The resources of a connected test.
pub struct Resources {
    /// The QPs and the memory their requests point at.
    pub queues: Queues,
    /// Completions of sends (and of everything on non-send tests).
    pub send_cq: Cq,
    /// Completions of receives (send tests).
    pub recv_cq: Option<Cq>,
    /// `ib_send_bw` on iWARP: the receive credits.
    pub credits: Option<Credits>,
}

/// The queues, both CQs and the credits (if any), for the loops that receive.
pub type RecvParts<'a> = (
    &'a mut Queues,
    &'a mut Cq,
    &'a mut Cq,
    Option<&'a mut Credits>,
);

impl Resources {
    /// The queues, both CQs and the credits, for the tests that receive (send tests): an
    /// error if the test has no receive CQ.
    pub fn with_recv_cq(&mut self) -> Result<RecvParts<'_>> {
        let Resources {
            queues,
            send_cq,
            recv_cq,
            credits,
        } = self;
        let recv_cq = recv_cq
            .as_mut()
            .ok_or_else(|| Error::new("no receive CQ"))?;
        Ok((queues, send_cq, recv_cq, credits.as_mut()))
    }
}

/// The QPs of a connected test and what their work requests are built from: apart from
/// the CQs, so that the loops can post while they poll.
pub struct Queues {
    /// The one memory region.
    pub mr: MemoryRegion,
    /// The QPs.
    pub qps: Vec<Qp>,
    /// UD: address handles to the peer's QPs.
    pub ahs: Vec<AddressHandle>,
    /// Where things are in the region.
    pub layout: Layout,
}

impl Prepared {
    /// Creates the PD, region, CQs and QPs of the test.
    pub fn new(run: &Run) -> Result<Prepared> {
        let verb = run.test.verb();
        let (q, port) = (&run.queues, &run.port);
        let base = Base::new(&run.device.ctx, run)?;
        let qp_access = match verb {
            Verb::Atomic => AccessFlags::REMOTE_ATOMIC,
            Verb::Read => AccessFlags::REMOTE_READ,
            Verb::Write => AccessFlags::REMOTE_WRITE,
            Verb::Send => AccessFlags::REMOTE_WRITE | AccessFlags::LOCAL_WRITE,
        };
        let qp_type = match run.conn {
            Conn::Rc => QpType::Rc,
            Conn::Uc => QpType::Uc,
            Conn::Ud => QpType::Ud,
        };
        let mut qps = Vec::with_capacity(q.num_qps as usize);
        for i in 0..q.num_qps {
            let mut b = base
                .pd
                .create_qp(qp_type, &base.send_cq.cq, &base.recv().cq)
                .max_send_wr(q.tx_depth)
                .max_recv_wr(q.rx_depth)
                .max_inline_data(port.inline_size)
                .port(run.device.port_num)
                .access(qp_access);
            if let Some(g) = port.gid_index {
                b = b.gid_index(g);
            }
            let qp = b.build().map_err(|e| {
                let mut msg = format!("Couldn't create QP {i}: {e}");
                if e.raw_os_error() == Some(libc::ENOMEM) {
                    let _ = write!(
                        msg,
                        "\nRequested QP size might be too big. Try reducing TX depth and/or inline size.\nCurrent TX depth is {} and inline size is {} .",
                        q.tx_depth, port.inline_size
                    );
                }
                Error::new(msg)
            })?;
            qps.push(qp);
        }
        Ok(Prepared { base, qps })
    }

    /// This side's records, one per QP.
    pub fn records(&self, run: &Run) -> Vec<Record> {
        let endpoints = self.qps.iter().map(PreparedQueuePair::endpoint);
        self.base.records(run, None, endpoints)
    }

    /// Connects every QP to the peer's (RTR and RTS with perftest's attributes; UD: ready,
    /// and address handles where this side sends); refuses a HW rate limiter named on a
    /// port without static rates, as perftest's connect does.
    pub fn connect(self, run: &Run, remote: &[Record]) -> Result<Resources> {
        // A HW limiter left by the run was named on a port that keeps no static rate.
        if run
            .qos
            .rate_limit
            .as_ref()
            .is_some_and(|r| r.limiter != Limiter::Sw)
        {
            return Err(Error::new(
                "\x1b[31mThe QP failed to accept HW rate limit  \x1b[0m\n Unable to Connect the HCA's through the link",
            ));
        }
        let sends = run.sends();
        let mut qps = Vec::with_capacity(self.qps.len());
        let mut ahs = Vec::new();
        for (i, (qp, r)) in self.qps.into_iter().zip(remote).enumerate() {
            if run.conn == Conn::Ud {
                qps.push(Qp::Own(
                    qp.ready()
                        .ctx(format_args!("Failed to modify QP {i} to RTR/RTS"))?,
                ));
                if sends {
                    ahs.push(ud_ah(&self.base.pd, run, r)?);
                }
            } else {
                let opts = ConnectOptions::new()
                    .timeout(run.connection.qp_timeout)
                    .max_rd_atomic(u8::try_from(r.out_reads).unwrap_or(u8::MAX))
                    .max_dest_rd_atomic(u8::try_from(run.port.out_reads).unwrap_or(u8::MAX))
                    .route(route(run));
                let opts = match Mtu::from_bytes(run.port.mtu) {
                    Some(mtu) => opts.path_mtu(mtu),
                    None => opts,
                };
                qps.push(Qp::Own(
                    qp.connect(&endpoint(r), &opts)
                        .ctx(format_args!("Failed to modify QP {i} to RTR/RTS"))?,
                ));
            }
        }
        Ok(self.base.into_resources(qps, ahs))
    }
}

/// perftest's route to a peer QP: hop limit 255, `-S` and `--tclass`, and a GRH where this
/// side uses a GID.
fn route(run: &Run) -> Route {
    Route::new()
        .hop_limit(0xff)
        .sl(run.connection.sl)
        .traffic_class(run.qos.tclass)
        .force_grh(run.uses_gid())
}

/// The endpoint a peer's record describes.
fn endpoint(r: &Record) -> Endpoint {
    Endpoint::new(r.qpn, r.psn, r.lid, r.gid.map_or(Gid::ZERO, Gid::from))
}

/// A UD address handle in `pd` to the peer QP of record `r`.
pub fn ud_ah(pd: &ProtectionDomain, run: &Run, r: &Record) -> Result<AddressHandle> {
    let ah = pd
        .create_ah(&endpoint(r))
        .port(run.device.port_num)
        .route(route(run));
    match run.port.gid_index {
        Some(index) => ah.gid_index(index),
        None => ah,
    }
    .build()
    .ctx("Failed to create AH")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_like_perftest() {
        let l = Layout::new(65536, 2, 64, 4096, false);
        assert_eq!(l.slot, 65536);
        assert_eq!(l.total(), 4 * 65536);
        assert_eq!(l.recv_offset(1), 3 * 65536);
        assert_eq!(l.cycle(65536, 7), 0);
        let l = Layout::new(100, 1, 64, 4096, true);
        assert_eq!(l.slot, 4096);
        assert_eq!(l.total(), 2 * 4096 + 64);
        assert_eq!(l.recv_buffer(0), 4096 + 24);
        // 100-byte messages step by 128 bytes through 4096: 32 positions.
        assert_eq!(l.cycle(100, 1), 128);
        assert_eq!(l.cycle(100, 33), 128);
        assert_eq!(l.cycle(8, 3), 192);
        assert_eq!(l.cycle(3000, 5), 0);
        let l = Layout::new(5000, 1, 64, 4096, false);
        assert_eq!(l.slot, 5056);
    }
}
