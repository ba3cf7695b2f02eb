//! scripts/compare-peers, sideway: `sideway OP N`. Its recommended send path (the one its
//! rc_pingpong example takes): an extended QP (`build_ex`, `ibv_wr_*` underneath) and a basic
//! CQ. Naming local memory (`setup_sge`, `reg_mr`) is `unsafe` in its API; inline data is safe
//! (with `WorkRequestFlags::Inline` on rxe, see `measured_write`).

use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use sideway::ibverbs::address::AddressHandleAttribute;
use sideway::ibverbs::completion::{BasicCompletionQueue, PollCompletionQueueError};
use sideway::ibverbs::device::{DeviceInfo, DeviceList};
use sideway::ibverbs::device_context::Mtu;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    ExtendedQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, SetInlineData,
    SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

type R<T> = Result<T, String>;

fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}

/// A registered 64-byte buffer: (lkey, rkey, address).
struct Buf {
    lkey: u32,
    rkey: u32,
    addr: u64,
}

#[inline(never)]
fn measured_poll(cq: &BasicCompletionQueue) -> usize {
    match cq.start_poll() {
        Ok(poller) => poller.count(),
        Err(PollCompletionQueueError::CompletionQueueEmpty) => 0,
        Err(_) => usize::MAX,
    }
}

#[inline(never)]
fn measured_write(
    qp: &mut ExtendedQueuePair,
    src: &Buf,
    dst: &Buf,
    count: u64,
    inline: Option<&[u8]>,
) -> bool {
    let mut guard = qp.start_post_send();
    for i in 0..count {
        let mut flags = if i + 1 == count {
            WorkRequestFlags::Signaled
        } else {
            WorkRequestFlags::none()
        };
        // rxe's ibv_wr_set_inline_data copies the data but leaves IBV_SEND_INLINE out of the
        // WQE's flags, so the kernel reads the (empty) SGE list instead and fails the write
        // with IBV_WC_LOC_QP_OP_ERR; naming the flag as well (sideway's safe API allows it)
        // is what a sideway user on rxe has to do.
        if inline.is_some() {
            flags |= WorkRequestFlags::Inline;
        }
        let wr = guard.construct_wr(i, flags).setup_write(dst.rkey, dst.addr);
        match inline {
            Some(data) => wr.setup_inline_data(data),
            // SAFETY: src is registered and outlives the request (the caller waits for it).
            None => unsafe { wr.setup_sge(src.lkey, src.addr, 64) },
        }
    }
    guard.post().is_ok()
}

#[inline(never)]
fn measured_send_recv(
    a: &mut ExtendedQueuePair,
    b: &mut ExtendedQueuePair,
    src: &Buf,
    dst: &Buf,
) -> bool {
    let mut recv = b.start_post_recv();
    // SAFETY: dst is registered and outlives the request (the caller waits for it).
    unsafe { recv.construct_wr(0).setup_sge(dst.lkey, dst.addr, 64) };
    if recv.post().is_err() {
        return false;
    }
    let mut send = a.start_post_send();
    // SAFETY: src is registered and outlives the request (the caller waits for it).
    unsafe {
        send.construct_wr(0, WorkRequestFlags::Signaled)
            .setup_send()
            .setup_sge(src.lkey, src.addr, 64)
    };
    send.post().is_ok()
}

#[inline(never)]
fn measured_reg(pd: &Arc<ProtectionDomain>, buf: &mut [u8]) -> bool {
    // SAFETY: buf is valid for its length and outlives the region (dropped here).
    unsafe {
        pd.reg_mr(
            buf.as_mut_ptr() as usize,
            buf.len(),
            AccessFlags::LocalWrite | AccessFlags::RemoteWrite,
        )
    }
    .map(drop)
    .is_ok()
}

fn drain(cq: &BasicCompletionQueue, mut n: usize) -> R<()> {
    while n > 0 {
        match cq.start_poll() {
            Ok(poller) => {
                for wc in poller {
                    if wc.status() != 0 {
                        return Err(format!("completion status {}", wc.status()));
                    }
                    n -= 1;
                }
            }
            Err(PollCompletionQueueError::CompletionQueueEmpty) => {}
            Err(err) => return Err(e(err)),
        }
    }
    Ok(())
}

fn run(op: &str, n: u64) -> R<()> {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = DeviceList::new().map_err(e)?;
    let dev = list
        .iter()
        .find(|d| d.name() == name)
        .ok_or("no such device")?;
    let ctx = dev.open().map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let batch = NonZeroU32::new(if op == "poll_16" { 16 } else { 1 }).unwrap();
    let cq = || {
        let mut cq = ctx.create_cq_builder().setup_cqe(64).build().map_err(e)?;
        Arc::get_mut(&mut cq)
            .ok_or("shared CQ")?
            .setup_poll_batch(batch);
        R::Ok(cq)
    };
    let (a_cq, b_cq) = (cq()?, cq()?);
    let qp = |cq: &Arc<BasicCompletionQueue>| {
        pd.create_qp_builder()
            .setup_max_inline_data(64)
            .setup_max_send_wr(64)
            .setup_max_recv_wr(64)
            .setup_send_cq(cq.clone())
            .setup_recv_cq(cq.clone())
            .build_ex()
            .map_err(e)
    };
    let (mut a, mut b) = (qp(&a_cq)?, qp(&b_cq)?);
    let gid_index: u8 = std::env::var("PEERS_GID_INDEX")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let gid = ctx.query_gid(1, gid_index.into()).map_err(e)?;
    let (an, bn) = (a.qp_number(), b.qp_number());
    for (qp, peer) in [(&mut a, bn), (&mut b, an)] {
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::Init)
            .setup_pkey_index(0)
            .setup_port(1)
            .setup_access_flags(AccessFlags::LocalWrite | AccessFlags::RemoteWrite);
        qp.modify(&attr).map_err(e)?;
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToReceive)
            .setup_path_mtu(Mtu::Mtu1024)
            .setup_dest_qp_num(peer)
            .setup_rq_psn(0)
            .setup_max_dest_read_atomic(1)
            .setup_min_rnr_timer(12);
        let mut ah = AddressHandleAttribute::new();
        ah.setup_dest_lid(1)
            .setup_port(1)
            .setup_grh_src_gid_index(gid_index)
            .setup_grh_dest_gid(&gid)
            .setup_grh_hop_limit(1);
        attr.setup_address_vector(&ah);
        qp.modify(&attr).map_err(e)?;
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToSend)
            .setup_sq_psn(0)
            .setup_timeout(14)
            .setup_retry_cnt(7)
            .setup_rnr_retry(7)
            .setup_max_read_atomic(1);
        qp.modify(&attr).map_err(e)?;
    }
    let mut mem = vec![0u8; 128];
    // SAFETY: mem outlives both regions (dropped at the end of run, after them).
    let (src_mr, dst_mr) = unsafe {
        let access = AccessFlags::LocalWrite | AccessFlags::RemoteWrite;
        let base = mem.as_mut_ptr() as usize;
        (
            pd.reg_mr(base, 64, access).map_err(e)?,
            pd.reg_mr(base + 64, 64, access).map_err(e)?,
        )
    };
    let buf = |mr: &sideway::ibverbs::memory_region::MemoryRegion| Buf {
        lkey: mr.lkey(),
        rkey: mr.rkey(),
        addr: mr.get_ptr() as u64,
    };
    let (src, dst) = (buf(&src_mr), buf(&dst_mr));
    let payload = [0u8; 64];
    let mut reg_buf = vec![0u8; if op == "reg_1m" { 1 << 20 } else { 4096 }];
    let mut short_polls = 0;
    for _ in 0..n {
        match op {
            "poll_empty" => {
                black_box(measured_poll(&a_cq));
            }
            "poll_16" => {
                let mut guard = a.start_post_send();
                for i in 0..16 {
                    let wr = guard
                        .construct_wr(i, WorkRequestFlags::Signaled)
                        .setup_write(dst.rkey, dst.addr);
                    // SAFETY: src is registered and outlives the request.
                    unsafe { wr.setup_sge(src.lkey, src.addr, 64) };
                }
                guard.post().map_err(e)?;
                std::thread::sleep(Duration::from_millis(2));
                let mut got = 0;
                while got < 16 {
                    let r = black_box(measured_poll(&a_cq));
                    if r == usize::MAX {
                        return Err("poll failed".into());
                    }
                    if r < 16 {
                        short_polls += 1;
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    got += r;
                }
            }
            "write" | "write_inline" | "list_16" => {
                let count = if op == "list_16" { 16 } else { 1 };
                let inline = (op == "write_inline").then_some(&payload[..]);
                if !measured_write(&mut a, &src, &dst, count, inline) {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
            }
            "send_recv" => {
                if !measured_send_recv(&mut a, &mut b, &src, &dst) {
                    return Err("post failed".into());
                }
                drain(&a_cq, 1)?;
                drain(&b_cq, 1)?;
            }
            "reg_4k" | "reg_1m" => {
                if !measured_reg(&pd, &mut reg_buf) {
                    return Err("reg_mr failed".into());
                }
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    if short_polls > 0 {
        eprintln!("short polls: {short_polls}");
    }
    drop((a, b, src_mr, dst_mr));
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.as_slice() {
        [_, op, n] => n
            .parse()
            .map_err(|e| format!("N: {e}"))
            .and_then(|n| run(op, n)),
        _ => Err("usage: sideway OP N".into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("sideway: {msg}");
            std::process::ExitCode::FAILURE
        }
    }
}
