//! The cost of async, measured: ping-pong latency between two RC QPs of one device in one
//! thread, the same exchange done four ways, side by side:
//!
//! - `blocking`: `CompletionQueue::poll_until` spinning (the blocking poll loop);
//! - `async busy`: `tokio::AsyncCq::poll` with an unbounded spin budget;
//! - `async event`: `tokio::AsyncCq::poll` with spin budget 0 (arm, await the channel fd);
//! - `async ops`: `tokio::AsyncQp` send and receive futures that own their regions
//!   (busy-polling).
//!
//! ```text
//! async_lat [DEVICE [ITERS]]     (defaults: rxe0, 1000; sizes 2 and 4096 bytes)
//! scripts/with-rdma cargo run -p ibverbs --features tokio --example async_lat -- rxe0 1000
//! ```
//! Prints, per size and way, the half round trip in microseconds, the message rate, and
//! the ratio to the blocking loop.

use std::time::Instant;

use ibverbs::tokio::{AsyncCq, AsyncQp};
use ibverbs::{
    AccessFlags, ConnectOptions, Context, MemoryRegion, QpType, QueuePair, RecvRequest,
    SendRequest, WcOpcode, WorkCompletion,
};

/// One side: its QP, its CQ (sends and receives), a send and a receive region.
struct Side {
    qp: QueuePair,
    cq: AsyncCq,
    send: MemoryRegion,
    recv: MemoryRegion,
}

/// Two connected RC QPs on `ctx`, CQs on one channel, each spinning `spin` empty polls.
fn pair(ctx: &Context, spin: u32, size: usize) -> ibverbs::Result<(Side, Side)> {
    let channel = ctx.create_comp_channel()?;
    let pd = ctx.alloc_pd()?;
    let access = AccessFlags::LOCAL_WRITE;
    let make = || -> ibverbs::Result<_> {
        let cq = ctx.create_cq(256, Some(&channel))?;
        let qp = pd.create_qp(QpType::Rc, &cq, &cq).build()?;
        Ok((qp, AsyncCq::new(cq)?.with_spin(spin)))
    };
    let ((a, a_cq), (b, b_cq)) = (make()?, make()?);
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let opts = ConnectOptions::default();
    let side = |qp, cq| -> ibverbs::Result<Side> {
        Ok(Side {
            qp,
            cq,
            send: pd.alloc_mr(size, access)?,
            recv: pd.alloc_mr(size, access)?,
        })
    };
    Ok((
        side(a.connect(&eb, &opts)?, a_cq)?,
        side(b.connect(&ea, &opts)?, b_cq)?,
    ))
}

/// Posts a receive and a signaled send of `size` bytes on `side`.
fn post(side: &Side, size: usize, recv: bool, send: bool) -> ibverbs::Result<()> {
    if recv {
        side.qp
            .post_recv(&mut [RecvRequest::new(0, &[side.recv.sge(..)?])])?;
    }
    if send {
        let sge = [side.send.sge(..size)?];
        side.qp
            .post_send(&mut [SendRequest::send(1, &sge).signaled()])?;
    }
    Ok(())
}

/// Polls `side`'s CQ (the blocking loop, or awaiting) until a receive completed.
async fn until_recv(side: &mut Side, blocking: bool) -> ibverbs::Result<()> {
    let mut wc = [WorkCompletion::default(); 4];
    loop {
        let n = if blocking {
            side.cq.cq().poll_until(&mut wc, 1, None)?.len()
        } else {
            side.cq.poll(&mut wc).await?
        };
        for done in &wc[..n] {
            if done.ok()?.opcode() == WcOpcode::Recv {
                return Ok(());
            }
        }
    }
}

/// `iters` round trips on the CQs; seconds taken.
async fn cq_rounds(
    ctx: &Context,
    spin: u32,
    blocking: bool,
    size: usize,
    iters: u32,
) -> ibverbs::Result<f64> {
    let (mut a, mut b) = pair(ctx, spin, size)?;
    post(&a, size, true, false)?;
    post(&b, size, true, false)?;
    let start = Instant::now();
    for _ in 0..iters {
        post(&a, size, false, true)?;
        until_recv(&mut b, blocking).await?;
        post(&b, size, true, true)?;
        until_recv(&mut a, blocking).await?;
        post(&a, size, true, false)?;
    }
    Ok(start.elapsed().as_secs_f64())
}

/// `iters` round trips with `AsyncQp` ops; seconds taken.
async fn op_rounds(ctx: &Context, size: usize, iters: u32) -> ibverbs::Result<f64> {
    let (a, b) = pair(ctx, u32::MAX, size)?;
    let (mut a_s, mut a_r, mut b_s, mut b_r) = (a.send, a.recv, b.send, b.recv);
    let a = AsyncQp::new(a.qp, a.cq)?;
    let b = AsyncQp::new(b.qp, b.cq)?;
    let start = Instant::now();
    for _ in 0..iters {
        let (ra, rb) = (a.recv(a_r, ..)?, b.recv(b_r, ..)?);
        let sa = a.send(a_s, ..size)?;
        let (mr, wc) = rb.await?;
        wc.ok()?;
        b_r = mr;
        let sb = b.send(b_s, ..size)?;
        let (mr, wc) = ra.await?;
        wc.ok()?;
        a_r = mr;
        (a_s, b_s) = (sa.await?.0, sb.await?.0);
    }
    Ok(start.elapsed().as_secs_f64())
}

fn main() -> ibverbs::Result<()> {
    let mut args = std::env::args().skip(1);
    let device = args.next().unwrap_or_else(|| "rxe0".into());
    let iters: u32 = args
        .next()
        .map_or(1000, |n| n.parse().expect("ITERS is a number"));
    let ctx = Context::open(&device)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    println!("{device}, {iters} round trips, one thread (half round trip; rate = messages/s)");
    for size in [2, 4096] {
        let blocking = rt.block_on(cq_rounds(&ctx, 0, true, size, iters))?;
        let ways = [
            ("blocking", blocking),
            (
                "async busy",
                rt.block_on(cq_rounds(&ctx, u32::MAX, false, size, iters))?,
            ),
            (
                "async event",
                rt.block_on(cq_rounds(&ctx, 0, false, size, iters))?,
            ),
            ("async ops", rt.block_on(op_rounds(&ctx, size, iters))?),
        ];
        for (way, secs) in ways {
            let msgs = 2.0 * f64::from(iters);
            println!(
                "{size:>5} B  {way:<12} {:>8.2} us  {:>9.0} msg/s  x{:.2}",
                secs / msgs * 1e6,
                msgs / secs,
                secs / blocking
            );
        }
    }
    Ok(())
}
