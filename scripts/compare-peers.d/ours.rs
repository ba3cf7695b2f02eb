//! scripts/compare-peers, this crate's safe API: `ours OP N`. Each measured_* function
//! builds its requests and posts them, as a user of the safe API would. The `wr_*`
//! operations post through [`QueuePair::batch`] (`ibv_wr_*`), the `ex_*` ones poll through
//! [`ExtendedCq::poll_session`]; the others through `post_send` / `post_recv` / `poll`.
//! The arguments, the rows' loop and the output are the shared frame's (`frame.rs`).

use rdma_verbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, ExtendedCq, MemoryRegion,
    ProtectionDomain, QpType, QueuePair, RecvRequest, RemoteMemory, SendOps, SendRequest, Sge,
    WcFields, WorkCompletion,
};

// The arguments, the rows' loop and the output: R, Row, Pair, repeat, frame_main, ...
include!("frame.rs");

#[inline(never)]
fn measured_poll(cq: &CompletionQueue, wc: &mut [WorkCompletion]) -> usize {
    cq.poll(wc).map_or(0, |done| done.len())
}

/// A poll session that reads every ready completion: how many succeeded.
#[inline(never)]
fn measured_poll_ex(cq: &mut ExtendedCq) -> usize {
    cq.poll_session(|session| {
        let mut n = 0;
        while let Some(wc) = session.next_wc()? {
            n += usize::from(wc.is_success());
        }
        Ok(n)
    })
    .unwrap_or(0)
}

/// The request of write `i` of `count`: inline or not, the last one signaled.
#[inline(always)]
fn write_wr<'a>(
    i: u64,
    count: u64,
    sge: &'a [Sge<'a>],
    remote: RemoteMemory,
    inline: bool,
) -> SendRequest<'a> {
    let wr = SendRequest::write(i, sge, remote);
    let wr = if inline { wr.inline() } else { wr };
    if i + 1 == count {
        wr.signaled()
    } else {
        wr
    }
}

#[inline(never)]
fn measured_write(
    qp: &QueuePair,
    sge: &[Sge<'_>],
    remote: RemoteMemory,
    count: u64,
    inline: bool,
) -> bool {
    let wr = |i: u64| write_wr(i, count, sge, remote, inline);
    if count == 1 {
        return qp.post_send(&mut [wr(0)]).is_ok();
    }
    let mut wrs: [SendRequest<'_>; 16] = std::array::from_fn(|i| wr(i as u64));
    qp.post_send(&mut wrs[..count as usize]).is_ok()
}

#[inline(never)]
fn measured_batch_write(
    qp: &mut QueuePair,
    sge: &[Sge<'_>],
    remote: RemoteMemory,
    count: u64,
    inline: bool,
) -> bool {
    qp.batch(|batch| {
        for i in 0..count {
            let wr = batch.write(i, sge, remote);
            let wr = if inline { wr.inline() } else { wr };
            if i + 1 == count {
                wr.signaled().push()?;
            } else {
                wr.push()?;
            }
        }
        Ok(())
    })
    .is_ok()
}

#[inline(never)]
fn measured_batch_send_recv(
    a: &mut QueuePair,
    b: &QueuePair,
    sge: &[Sge<'_>],
    rsge: &[Sge<'_>],
) -> bool {
    b.post_recv(&mut [RecvRequest::new(0, rsge)]).is_ok()
        && a.batch(|batch| batch.send(0, sge).signaled().push()).is_ok()
}

#[inline(never)]
fn measured_send_recv(a: &QueuePair, b: &QueuePair, sge: &[Sge<'_>], rsge: &[Sge<'_>]) -> bool {
    b.post_recv(&mut [RecvRequest::new(0, rsge)]).is_ok()
        && a.post_send(&mut [SendRequest::send(0, sge).signaled()])
            .is_ok()
}

#[inline(never)]
fn measured_reg(pd: &ProtectionDomain, buf: Vec<u8>) -> Option<Vec<u8>> {
    let mr = pd
        .register(buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)
        .ok()?;
    mr.deregister().ok()
}

fn drain(cq: &CompletionQueue, mut n: usize) -> R<()> {
    let mut wc = [WorkCompletion::default(); 16];
    while n > 0 {
        for done in cq.poll(&mut wc).map_err(e)? {
            done.ok().map_err(e)?;
            n -= 1;
        }
    }
    Ok(())
}

/// The pair: extended CQs and QPs (as the C program makes them) for every operation, so that
/// the rows of both APIs run on the same objects.
struct Ours<'a> {
    pd: &'a ProtectionDomain,
    a: QueuePair,
    b: QueuePair,
    a_cq: ExtendedCq,
    b_cq: ExtendedCq,
    sge: [Sge<'a>; 1],
    rsge: [Sge<'a>; 1],
    dst: &'a MemoryRegion,
}

impl Pair for Ours<'_> {
    fn poll(&mut self, max: usize) -> R<usize> {
        let mut wc = [WorkCompletion::default(); 16];
        Ok(measured_poll(&self.a_cq, &mut wc[..max]))
    }

    fn poll_ex(&mut self) -> R<usize> {
        Ok(measured_poll_ex(&mut self.a_cq))
    }

    fn post_16(&mut self) -> R<usize> {
        let mut wrs: Vec<_> = (0..16)
            .map(|i| SendRequest::write(i, &self.sge, self.dst.remote()).signaled())
            .collect();
        self.a.post_send(&mut wrs).map_err(e)?;
        Ok(0)
    }

    fn write(&mut self, count: u64, inline: bool) -> R<()> {
        let done = measured_write(&self.a, &self.sge, self.dst.remote(), count, inline);
        check(done, "post")
    }

    fn batch_write(&mut self, count: u64, inline: bool) -> R<()> {
        let remote = self.dst.remote();
        let done = measured_batch_write(&mut self.a, &self.sge, remote, count, inline);
        check(done, "post")
    }

    fn send_recv(&mut self) -> R<()> {
        let done = measured_send_recv(&self.a, &self.b, &self.sge, &self.rsge);
        check(done, "post")
    }

    fn batch_send_recv(&mut self) -> R<()> {
        let done = measured_batch_send_recv(&mut self.a, &self.b, &self.sge, &self.rsge);
        check(done, "post")
    }

    fn reg(&mut self, buf: &mut Vec<u8>) -> R<()> {
        *buf = measured_reg(self.pd, std::mem::take(buf)).ok_or("register failed")?;
        Ok(())
    }

    fn wait(&mut self, first: usize, second: usize) -> R<()> {
        drain(&self.a_cq, first)?;
        drain(&self.b_cq, second)
    }
}

/// Opens the device, connects the pair with the crate's default options (the GID it picks
/// is the one the script finds for the others) and runs `row` `n` times on it.
fn run(row: Row, n: u64) -> R<()> {
    let ctx = Context::open(&device()).map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let (a_cq, b_cq) = (
        ctx.create_cq_ex(64, WcFields::empty(), None).map_err(e)?,
        ctx.create_cq_ex(64, WcFields::empty(), None).map_err(e)?,
    );
    let qp = |cq: &CompletionQueue| {
        pd.create_qp(QpType::Rc, cq, cq)
            .access(access)
            .max_inline_data(64)
            .send_ops(SendOps::RDMA_WRITE | SendOps::SEND)
            .build()
    };
    let (a, b) = (qp(&a_cq).map_err(e)?, qp(&b_cq).map_err(e)?);
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let a = a.connect(&eb, &ConnectOptions::new()).map_err(e)?;
    let b = b.connect(&ea, &ConnectOptions::new()).map_err(e)?;
    let src: MemoryRegion = pd.alloc_mr(64, access).map_err(e)?;
    let dst: MemoryRegion = pd.alloc_mr(64, access).map_err(e)?;
    let mut pair = Ours {
        pd: &pd,
        a,
        b,
        a_cq,
        b_cq,
        sge: [src.sge(..).map_err(e)?],
        rsge: [dst.sge(..).map_err(e)?],
        dst: &dst,
    };
    repeat(&mut pair, row, n)
}

fn main() -> ExitCode {
    frame_main("ours", run)
}
