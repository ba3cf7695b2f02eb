//! scripts/compare-peers, sideway: `sideway OP N`. Its recommended send path (the one its
//! rc_pingpong example takes): an extended QP (`build_ex`, `ibv_wr_*` underneath) and a basic
//! CQ. Naming local memory (`setup_sge`, `reg_mr`) is `unsafe` in its API; inline data is safe
//! (with `WorkRequestFlags::Inline` on rxe, see `measured_write`). The arguments, the rows'
//! loop and the output are the shared frame's (`frame.rs`).

use std::num::NonZeroU32;
use std::sync::Arc;

use sideway::ibverbs::address::AddressHandleAttribute;
use sideway::ibverbs::completion::{BasicCompletionQueue, PollCompletionQueueError};
use sideway::ibverbs::device::{DeviceInfo, DeviceList};
use sideway::ibverbs::device_context::Mtu;
use sideway::ibverbs::memory_region::MemoryRegion;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{
    ExtendedQueuePair, PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, SetInlineData,
    SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

// The arguments, the rows' loop and the output: R, Row, Pair, repeat, frame_main, ...
include!("frame.rs");

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

/// The pair: its CQs poll in batches of 16 for `poll_16`, else of 1. `src` and `dst` name
/// regions that `run` holds.
struct Sideway {
    pd: Arc<ProtectionDomain>,
    a: ExtendedQueuePair,
    b: ExtendedQueuePair,
    a_cq: Arc<BasicCompletionQueue>,
    b_cq: Arc<BasicCompletionQueue>,
    src: Buf,
    dst: Buf,
    payload: [u8; 64],
}

impl Pair for Sideway {
    fn poll(&mut self, _max: usize) -> R<usize> {
        match measured_poll(&self.a_cq) {
            usize::MAX => Err("poll failed".into()),
            r => Ok(r),
        }
    }

    /// 16 signaled writes, through `ibv_wr_*` (its one way to post).
    fn post_16(&mut self) -> R<usize> {
        let mut guard = self.a.start_post_send();
        for i in 0..16 {
            let wr = guard
                .construct_wr(i, WorkRequestFlags::Signaled)
                .setup_write(self.dst.rkey, self.dst.addr);
            // SAFETY: src is registered and outlives the request.
            unsafe { wr.setup_sge(self.src.lkey, self.src.addr, 64) };
        }
        guard.post().map_err(e)?;
        Ok(0)
    }

    fn write(&mut self, count: u64, inline: bool) -> R<()> {
        let inline = inline.then_some(&self.payload[..]);
        let done = measured_write(&mut self.a, &self.src, &self.dst, count, inline);
        check(done, "post")
    }

    fn send_recv(&mut self) -> R<()> {
        let done = measured_send_recv(&mut self.a, &mut self.b, &self.src, &self.dst);
        check(done, "post")
    }

    fn reg(&mut self, buf: &mut Vec<u8>) -> R<()> {
        check(measured_reg(&self.pd, buf), "reg_mr")
    }

    fn wait(&mut self, first: usize, second: usize) -> R<()> {
        drain(&self.a_cq, first)?;
        drain(&self.b_cq, second)
    }
}

/// Opens the device, connects the pair from the script's GID and runs `row` `n` times on it.
fn run(row: Row, n: u64) -> R<()> {
    let name = device();
    let list = DeviceList::new().map_err(e)?;
    let dev = list
        .iter()
        .find(|d| d.name() == name)
        .ok_or("no such device")?;
    let ctx = dev.open().map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let batch = NonZeroU32::new(if row.op == Op::Poll16 { 16 } else { 1 }).unwrap();
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
    let gid_index: u8 = gid_index();
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
    let buf = |mr: &MemoryRegion| Buf {
        lkey: mr.lkey(),
        rkey: mr.rkey(),
        addr: mr.get_ptr() as u64,
    };
    let mut pair = Sideway {
        src: buf(&src_mr),
        dst: buf(&dst_mr),
        pd,
        a,
        b,
        a_cq,
        b_cq,
        payload: [0u8; 64],
    };
    repeat(&mut pair, row, n)
}

fn main() -> ExitCode {
    frame_main("sideway", run)
}
