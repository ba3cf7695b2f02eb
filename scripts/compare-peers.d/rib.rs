//! scripts/compare-peers, rust-ibverbs (crates.io `ibverbs`, renamed `rib`): `rib OP N`.
//! It has no RDMA write, inline or post-list API and no registration of the caller's memory
//! (`allocate` makes and zeroes a new buffer); sends and receives are `unsafe`. The script
//! marks those rows; this program runs the rest. The arguments, the rows' loop and the
//! output are the shared frame's (`frame.rs`).

use rib::{
    ibv_qp_type::IBV_QPT_RC, ibv_wc, CompletionQueue, MemoryRegion, ProtectionDomain, QueuePair,
};

// The arguments, the rows' loop and the output: R, Row, Pair, repeat, frame_main, ...
include!("frame.rs");

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

/// The pair: rust-ibverbs' objects borrow the context, the PD and the CQs, which `run` holds.
struct Rib<'a, 'ctx> {
    pd: &'a ProtectionDomain<'ctx>,
    a_cq: &'a CompletionQueue<'ctx>,
    b_cq: &'a CompletionQueue<'ctx>,
    a: QueuePair<'a>,
    b: QueuePair<'a>,
    src: MemoryRegion<u8>,
    dst: MemoryRegion<u8>,
}

impl Pair for Rib<'_, '_> {
    fn poll(&mut self, max: usize) -> R<usize> {
        let mut wc = [ibv_wc::default(); 16];
        Ok(measured_poll(self.a_cq, &mut wc[..max]))
    }

    /// 16 sends with their receives (rust-ibverbs has no RDMA write).
    fn post_16(&mut self) -> R<usize> {
        for i in 0..16 {
            // SAFETY: the regions, the pair's, outlive the requests: poll_16 reaps the sends,
            // then waits for the receives (the 16 returned) before it posts again.
            unsafe {
                self.b.post_receive(&mut self.dst, .., i).map_err(e)?;
                self.a.post_send(&mut self.src, .., i).map_err(e)?;
            }
        }
        Ok(16)
    }

    fn send_recv(&mut self) -> R<()> {
        let (a, b) = (&mut self.a, &mut self.b);
        let done = measured_send_recv(a, b, &mut self.src, &mut self.dst);
        check(done, "post")
    }

    /// `allocate` of a new buffer of `buf`'s length (rust-ibverbs registers no other).
    fn reg(&mut self, buf: &mut Vec<u8>) -> R<()> {
        check(measured_reg(self.pd, buf.len()), "allocate")
    }

    fn wait(&mut self, first: usize, second: usize) -> R<()> {
        drain(self.a_cq, first)?;
        drain(self.b_cq, second)
    }
}

/// Opens the device, connects the pair from the script's GID and runs `row` `n` times on it.
fn run(row: Row, n: u64) -> R<()> {
    let name = device();
    let list = rib::devices().map_err(e)?;
    let dev = list
        .iter()
        .find(|d| d.name().is_some_and(|n| n.to_bytes() == name.as_bytes()))
        .ok_or("no such device")?;
    let ctx = dev.open().map_err(e)?;
    let pd = ctx.alloc_pd().map_err(e)?;
    let gid_index: u32 = gid_index();
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
    let mut pair = Rib {
        pd: &pd,
        a_cq: &a_cq,
        b_cq: &b_cq,
        a: a.handshake(eb).map_err(e)?,
        b: b.handshake(ea).map_err(e)?,
        src: pd.allocate::<u8>(64).map_err(e)?,
        dst: pd.allocate::<u8>(64).map_err(e)?,
    };
    repeat(&mut pair, row, n)
}

fn main() -> ExitCode {
    frame_main("rib", run)
}
