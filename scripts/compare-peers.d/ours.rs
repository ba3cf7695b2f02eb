//! scripts/compare-peers, this crate's safe API: `ours OP N`. Each measured_* function
//! builds its requests and posts them, as a user of the safe API would. The `wr_*`
//! operations post through [`QueuePair::batch`] (`ibv_wr_*`), the `ex_*` ones poll through
//! [`ExtendedCq::poll_session`]; the others through `post_send` / `post_recv` / `poll`.

use std::hint::black_box;
use std::time::Duration;

use rdma_verbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, ExtendedCq, MemoryRegion,
    ProtectionDomain, QpType, QueuePair, RecvRequest, RemoteMemory, SendOps, SendRequest, Sge,
    WcFields, WorkCompletion,
};

type R<T> = Result<T, String>;

fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}

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

fn run(op: &str, n: u64) -> R<()> {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let ctx = Context::open(&name).map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    // Extended CQs and QPs (as the C program makes them) for every operation, so that the
    // rows of both APIs run on the same objects.
    let (mut a_cq, b_cq) = (
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
    let mut a = a.connect(&eb, &ConnectOptions::new()).map_err(e)?;
    let b = b.connect(&ea, &ConnectOptions::new()).map_err(e)?;
    let src: MemoryRegion = pd.alloc_mr(64, access).map_err(e)?;
    let dst: MemoryRegion = pd.alloc_mr(64, access).map_err(e)?;
    let sge = [src.sge(..).map_err(e)?];
    let rsge = [dst.sge(..).map_err(e)?];
    let mut buf = Some(vec![0u8; if op == "reg_1m" { 1 << 20 } else { 4096 }]);
    let mut short_polls = 0;
    for _ in 0..n {
        match op {
            "poll_empty" => {
                let mut wc = [WorkCompletion::default(); 1];
                black_box(measured_poll(&a_cq, &mut wc));
            }
            "ex_poll_empty" => {
                black_box(measured_poll_ex(&mut a_cq));
            }
            "poll_16" | "ex_poll_16" => {
                let mut wrs: Vec<_> = (0..16)
                    .map(|i| SendRequest::write(i, &sge, dst.remote()).signaled())
                    .collect();
                a.post_send(&mut wrs).map_err(e)?;
                std::thread::sleep(Duration::from_millis(2));
                let mut got = 0;
                while got < 16 {
                    let r = if op == "poll_16" {
                        let mut wc = [WorkCompletion::default(); 16];
                        black_box(measured_poll(&a_cq, &mut wc))
                    } else {
                        black_box(measured_poll_ex(&mut a_cq))
                    };
                    if r < 16 {
                        short_polls += 1;
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    got += r;
                }
            }
            "write" | "write_inline" | "list_16" => {
                let count = if op == "list_16" { 16 } else { 1 };
                if !measured_write(&a, &sge, dst.remote(), count, op == "write_inline") {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
            }
            "wr_write" | "wr_write_inline" | "wr_list_16" => {
                let count = if op == "wr_list_16" { 16 } else { 1 };
                let inline = op == "wr_write_inline";
                if !measured_batch_write(&mut a, &sge, dst.remote(), count, inline) {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
            }
            "wr_send_recv" => {
                if !measured_batch_send_recv(&mut a, &b, &sge, &rsge) {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
                drain(&b_cq, 1)?;
            }
            "send_recv" => {
                if !measured_send_recv(&a, &b, &sge, &rsge) {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
                drain(&b_cq, 1)?;
            }
            "reg_4k" | "reg_1m" => {
                buf = Some(measured_reg(&pd, buf.take().unwrap()).ok_or("register failed")?);
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    if short_polls > 0 {
        eprintln!("short polls: {short_polls}");
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.as_slice() {
        [_, op, n] => n
            .parse()
            .map_err(|e| format!("N: {e}"))
            .and_then(|n| run(op, n)),
        _ => Err("usage: ours OP N".into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("ours: {msg}");
            std::process::ExitCode::FAILURE
        }
    }
}
