//! The cost of async, measured: ping-pong latency and message rate between two RC QPs of
//! one device in one thread, the same exchanges done four ways, side by side:
//!
//! - `blocking`: `CompletionQueue::poll_until` spinning (the blocking poll loop);
//! - `async busy`: `tokio::AsyncCq::poll` with an unbounded spin budget;
//! - `async event`: `tokio::AsyncCq::poll` with spin budget 0 (arm, await the channel fd);
//! - `async ops`: `tokio::AsyncQp` send and receive futures that own their regions
//!   (busy-polling).
//!
//! Latency is `ib_send_lat`'s: one message each way per round trip, half the round trip
//! reported. Rate is `ib_send_bw`'s: one side keeps [`WINDOW`] signaled sends in flight,
//! waiting (the way measured) for send completions and posting a send for each; the
//! receiver's CQ is drained without waiting after each wait and its receives re-posted
//! (the same in every way); messages per second over `16 * ITERS` messages.
//!
//! ```text
//! async_lat [DEVICE [ITERS [WAY]]]   (defaults: rxe0, 1000, all four; sizes 2 and 4096 B)
//! scripts/with-rdma cargo run -p rdma-verbs --release --features tokio --example async_lat -- rxe0 1000
//! ```
//! Prints, per size and way, the half round trip in microseconds and the message rate,
//! each with its ratio to the blocking loop (time ratios: above 1 is slower). WAY (one of
//! the names printed, e.g. "async busy") runs that way alone, for profiling.

use std::collections::VecDeque;
use std::time::Instant;

use rdma_verbs::tokio::{AsyncCq, AsyncQp};
use rdma_verbs::{
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
fn pair(ctx: &Context, spin: u32, size: usize) -> rdma_verbs::Result<(Side, Side)> {
    let channel = ctx.create_comp_channel()?;
    let pd = ctx.alloc_pd()?;
    let access = AccessFlags::LOCAL_WRITE;
    let make = || -> rdma_verbs::Result<_> {
        let cq = ctx.create_cq(256, Some(&channel))?;
        let qp = pd.create_qp(QpType::Rc, &cq, &cq).build()?;
        Ok((qp, AsyncCq::new(cq)?.with_spin(spin)))
    };
    let ((a, a_cq), (b, b_cq)) = (make()?, make()?);
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let opts = ConnectOptions::new();
    let side = |qp, cq| -> rdma_verbs::Result<Side> {
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
fn post(side: &Side, size: usize, recv: bool, send: bool) -> rdma_verbs::Result<()> {
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

/// Sends in flight in the rate runs (`ib_send_bw`'s default `--tx-depth` is 128; 32 is a
/// window most services keep).
const WINDOW: usize = 32;

/// Waits for completions on `side`'s CQ (the blocking loop, or awaiting); how many.
async fn completions(
    side: &mut Side,
    wc: &mut [WorkCompletion],
    blocking: bool,
) -> rdma_verbs::Result<usize> {
    if blocking {
        Ok(side.cq.cq().poll_until(wc, 1, None)?.len())
    } else {
        side.cq.poll(wc).await
    }
}

/// Polls `side`'s CQ (the blocking loop, or awaiting) until a receive completed.
async fn until_recv(side: &mut Side, blocking: bool) -> rdma_verbs::Result<()> {
    let mut wc = [WorkCompletion::default(); 4];
    loop {
        let n = completions(side, &mut wc, blocking).await?;
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
) -> rdma_verbs::Result<f64> {
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

/// `msgs` sends from `a` to `b`, [`WINDOW`] in flight, on the CQs; seconds taken.
async fn cq_stream(
    ctx: &Context,
    spin: u32,
    blocking: bool,
    size: usize,
    msgs: usize,
) -> rdma_verbs::Result<f64> {
    let (mut a, b) = pair(ctx, spin, size)?;
    // More receives than can be consumed between two drains (2 windows): no RNR.
    for _ in 0..3 * WINDOW {
        post(&b, size, true, false)?;
    }
    let mut wc = [WorkCompletion::default(); WINDOW];
    let start = Instant::now();
    let mut sent = WINDOW.min(msgs);
    for _ in 0..sent {
        post(&a, size, false, true)?;
    }
    let mut done = 0;
    while done < msgs {
        let n = completions(&mut a, &mut wc, blocking).await?;
        for wc in &wc[..n] {
            wc.ok()?;
        }
        done += n;
        let more = n.min(msgs - sent);
        for _ in 0..more {
            post(&a, size, false, true)?;
        }
        sent += more;
        for wc in b.cq.cq().poll(&mut wc)? {
            wc.ok()?;
            post(&b, size, true, false)?;
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// `msgs` sends from `a` to `b` with `AsyncQp` ops, [`WINDOW`] in flight, each region
/// coming back with its completion; seconds taken.
async fn op_stream(ctx: &Context, size: usize, msgs: usize) -> rdma_verbs::Result<f64> {
    let (a, b) = pair(ctx, u32::MAX, size)?;
    let pd = a.send.pd().clone();
    let a = AsyncQp::new(a.qp, a.cq)?;
    let b = AsyncQp::new(b.qp, b.cq)?;
    let access = AccessFlags::LOCAL_WRITE;
    let mut recvs = VecDeque::new();
    for _ in 0..3 * WINDOW {
        recvs.push_back(b.recv(pd.alloc_mr(size, access)?, ..)?);
    }
    let mut sends = VecDeque::new();
    let start = Instant::now();
    let mut sent = WINDOW.min(msgs);
    for _ in 0..sent {
        sends.push_back(a.send(pd.alloc_mr(size, access)?, ..size)?);
    }
    while let Some(send) = sends.pop_front() {
        let (mr, wc) = send.await?;
        wc.ok()?;
        if sent < msgs {
            sends.push_back(a.send(mr, ..size)?);
            sent += 1;
        }
        // The send's ack came after its message arrived: the oldest receive is done.
        let recv = recvs.pop_front().expect("3 windows posted");
        let (mr, wc) = recv.await?;
        wc.ok()?;
        recvs.push_back(b.recv(mr, ..)?);
    }
    Ok(start.elapsed().as_secs_f64())
}

/// `iters` round trips with `AsyncQp` ops; seconds taken.
async fn op_rounds(ctx: &Context, size: usize, iters: u32) -> rdma_verbs::Result<f64> {
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

/// The ways, by the name printed (and given as WAY).
const WAYS: [&str; 4] = ["blocking", "async busy", "async event", "async ops"];

/// `way`'s seconds for `size`: latency (`iters` round trips) and rate (`msgs` sends).
fn run(
    rt: &tokio::runtime::Runtime,
    ctx: &Context,
    way: &str,
    size: usize,
    iters: u32,
    msgs: usize,
) -> rdma_verbs::Result<(f64, f64)> {
    let cq = |spin, blocking| -> rdma_verbs::Result<(f64, f64)> {
        Ok((
            rt.block_on(cq_rounds(ctx, spin, blocking, size, iters))?,
            rt.block_on(cq_stream(ctx, spin, blocking, size, msgs))?,
        ))
    };
    match way {
        "blocking" => cq(0, true),
        "async busy" => cq(u32::MAX, false),
        "async event" => cq(0, false),
        _ => Ok((
            rt.block_on(op_rounds(ctx, size, iters))?,
            rt.block_on(op_stream(ctx, size, msgs))?,
        )),
    }
}

/// How many times each way runs, interleaved (a round runs every way once), so that a
/// drift of the machine's speed hits all ways alike.
const ROUNDS: usize = 5;

/// The median of `v` (sorted here) and its range.
fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() -> rdma_verbs::Result<()> {
    let mut args = std::env::args().skip(1);
    let device = args.next().unwrap_or_else(|| "rxe0".into());
    let iters: u32 = args
        .next()
        .map_or(1000, |n| n.parse().expect("ITERS is a number"));
    let ways: Vec<&str> = match args.next() {
        Some(way) => vec![WAYS.into_iter().find(|w| *w == way).expect("WAY is a way")],
        None => WAYS.to_vec(),
    };
    let msgs = 16 * iters as usize;
    let ctx = Context::open(&device)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let _guard = rt.enter();
    println!(
        "{device}, one thread, {ROUNDS} rounds: latency over {iters} round trips (half round \
         trip), rate over {msgs} sends with {WINDOW} in flight; medians, and x = time / the \
         first way's time in the same round: median [min, max]"
    );
    for size in [2, 4096] {
        let mut secs = vec![Vec::new(); ways.len()];
        for _ in 0..ROUNDS {
            for (way, secs) in ways.iter().zip(&mut secs) {
                secs.push(run(&rt, &ctx, way, size, iters, msgs)?);
            }
        }
        for (way, of) in ways.iter().zip(&secs) {
            let ratios = |f: fn(&(f64, f64)) -> f64| {
                let mut v: Vec<f64> = of
                    .iter()
                    .zip(&secs[0])
                    .map(|(s, s0)| f(s) / f(s0))
                    .collect();
                median(&mut v)
            };
            let (lat, rate) = (ratios(|s| s.0), ratios(|s| s.1));
            let mut lat_us: Vec<f64> = of
                .iter()
                .map(|s| s.0 / f64::from(2 * iters) * 1e6)
                .collect();
            let mut rate_mps: Vec<f64> = of.iter().map(|s| msgs as f64 / s.1).collect();
            println!(
                "{size:>5} B  {way:<12} {:>8.2} us x{:.2} [{:.2}, {:.2}]  {:>7.0} msg/s x{:.2} [{:.2}, {:.2}]",
                median(&mut lat_us).0,
                lat.0,
                lat.1,
                lat.2,
                median(&mut rate_mps).0,
                rate.0,
                rate.1,
                rate.2,
            );
        }
    }
    Ok(())
}
