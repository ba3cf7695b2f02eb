//! scripts/compare-peers, rust-ibverbs (crates.io `ibverbs`, renamed `rib`): `rib OP N`.
//! It has no RDMA write, inline or post-list API and no registration of the caller's memory
//! (`allocate` makes and zeroes a new buffer); sends and receives are `unsafe`. The script
//! marks those rows; this program runs the rest.

use std::hint::black_box;
use std::time::Duration;

use rib::{
    ibv_qp_type::IBV_QPT_RC, ibv_wc, CompletionQueue, MemoryRegion, ProtectionDomain, QueuePair,
};

type R<T> = Result<T, String>;

fn e(err: std::io::Error) -> String {
    err.to_string()
}

#[inline(never)]
fn measured_poll(cq: &CompletionQueue<'_>, wc: &mut [ibv_wc]) -> usize {
    cq.poll(wc).map_or(0, |done| done.len())
}

#[inline(never)]
fn measured_send_recv(
    a: &mut QueuePair<'_>,
    b: &mut QueuePair<'_>,
    src: &mut MemoryRegion<u8>,
    dst: &mut MemoryRegion<u8>,
) -> bool {
    // SAFETY: both regions outlive the requests: the caller waits for both completions.
    unsafe { b.post_receive(dst, .., 0).is_ok() && a.post_send(src, .., 0).is_ok() }
}

#[inline(never)]
fn measured_reg(pd: &ProtectionDomain<'_>, len: usize) -> bool {
    pd.allocate::<u8>(len).map(drop).is_ok()
}

fn drain(cq: &CompletionQueue<'_>, mut n: usize) -> R<()> {
    let mut wc = [ibv_wc::default(); 16];
    while n > 0 {
        for done in cq.poll(&mut wc).map_err(e)? {
            if let Some((status, _)) = done.error() {
                return Err(format!("completion status {status}"));
            }
            n -= 1;
        }
    }
    Ok(())
}

/// The GID index the script found (an IPv4-mapped RoCE v2 entry), else 0.
fn gid_index() -> u32 {
    std::env::var("PEERS_GID_INDEX")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn run(op: &str, n: u64) -> R<()> {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = rib::devices().map_err(e)?;
    let dev = list
        .iter()
        .find(|d| d.name().is_some_and(|n| n.to_bytes() == name.as_bytes()))
        .ok_or("no such device")?;
    let ctx = dev.open().map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let gid_index = gid_index();
    let (a_cq, b_cq) = (
        ctx.create_cq(64, 0).map_err(e)?,
        ctx.create_cq(64, 0).map_err(e)?,
    );
    let prep = |cq| {
        pd.create_qp(cq, cq, IBV_QPT_RC)
            .set_gid_index(gid_index)
            .set_max_send_wr(64)
            .set_max_recv_wr(64)
            .allow_remote_rw()
            .build()
    };
    let (a, b) = (prep(&a_cq).map_err(e)?, prep(&b_cq).map_err(e)?);
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let mut a = a.handshake(eb).map_err(e)?;
    let mut b = b.handshake(ea).map_err(e)?;
    let mut src = pd.allocate::<u8>(64).map_err(e)?;
    let mut dst = pd.allocate::<u8>(64).map_err(e)?;
    let mut short_polls = 0;
    for _ in 0..n {
        match op {
            "poll_empty" => {
                let mut wc = [ibv_wc::default(); 1];
                black_box(measured_poll(&a_cq, &mut wc));
            }
            "poll_16" => {
                for i in 0..16 {
                    // SAFETY: the regions outlive the requests: both CQs are drained below.
                    unsafe {
                        b.post_receive(&mut dst, .., i).map_err(e)?;
                        a.post_send(&mut src, .., i).map_err(e)?;
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
                let mut got = 0;
                while got < 16 {
                    let mut wc = [ibv_wc::default(); 16];
                    let r = black_box(measured_poll(&a_cq, &mut wc));
                    if r < 16 {
                        short_polls += 1;
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    got += r;
                }
                drain(&b_cq, 16)?;
            }
            "send_recv" => {
                if !measured_send_recv(&mut a, &mut b, &mut src, &mut dst) {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
                drain(&b_cq, 1)?;
            }
            "reg_4k" | "reg_1m" => {
                let len = if op == "reg_1m" { 1 << 20 } else { 4096 };
                if !measured_reg(&pd, len) {
                    return Err("allocate failed".into());
                }
            }
            other => return Err(format!("no API for {other:?}")),
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
        _ => Err("usage: rib OP N".into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("rib: {msg}");
            std::process::ExitCode::FAILURE
        }
    }
}
