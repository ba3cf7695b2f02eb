//! Runs one hot-path operation many times through the safe API or straight through
//! `rdma-verbs-sys`, for `scripts/overhead` to count its instructions under callgrind.
//!
//! ```text
//! verbs_overhead OP PATH N      OP: poll_empty | post_write | post_send | post_recv | post_list16
//!                                   | build_write | build_recv
//!                                   | poll16 | poll_ex_empty | poll_ex16 | poll_ex16_restart
//!                               PATH: safe | raw
//! ```
//!
//! `poll16` and `poll_ex16` take 16 ready completions, `poll_ex_empty` finds none: through
//! `ibv_poll_cq` and through an extended CQ's poll session (`ibv_start_poll` /
//! `ibv_next_poll` / `ibv_end_poll`); each reads the id, status, opcode and byte count of
//! every completion. The raw extended loop stops after 16 without asking for a 17th: on
//! rxe, an `ibv_next_poll` that finds nothing followed by `ibv_end_poll` corrupts the CQ.
//! `poll_ex16_restart` compares with the C loop that reads until empty on rxe (end + start
//! per completion, which is how the crate's sessions step there).
//!
//! Only the calls inside the `measured_*` functions are counted (callgrind's
//! `--toggle-collect`); waiting for completions happens outside them. The `post_*`
//! operations post requests built before the call; `build_*` counts building one (the safe
//! constructors also work out the request's requirement word for the post check). Every result is
//! used (`black_box`), so that the compiler cannot drop the return-code check of either
//! path as dead code.

use rdma_verbs::AsRaw;
use std::hint::black_box;
use std::process::ExitCode;
use std::ptr;

use rdma_verbs::ffi;
use rdma_verbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, ExtendedCq, MemoryRegion, QpType,
    QueuePair, RecvRequest, RemoteMemory, SendRequest, Sge, WcFields, WcOpcode, WcStatus,
    WorkCompletion,
};

struct Setup {
    a: QueuePair,
    a_cq: CompletionQueue,
    b: QueuePair,
    b_cq: CompletionQueue,
    src: MemoryRegion,
    dst: MemoryRegion,
}

fn setup() -> rdma_verbs::Result<Setup> {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let ctx = Context::open(&name)?;
    let pd = ctx.alloc_pd()?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let a_cq = ctx.create_cq(64, None)?;
    let b_cq = ctx.create_cq(64, None)?;
    let a = pd
        .create_qp(QpType::Rc, &a_cq, &a_cq)
        .access(access)
        .build()?;
    let b = pd
        .create_qp(QpType::Rc, &b_cq, &b_cq)
        .access(access)
        .build()?;
    let (ea, eb) = (a.endpoint(), b.endpoint());
    Ok(Setup {
        a: a.connect(&eb, &ConnectOptions::new())?,
        b: b.connect(&ea, &ConnectOptions::new())?,
        a_cq,
        b_cq,
        src: pd.alloc_mr(64, access)?,
        dst: pd.alloc_mr(64, access)?,
    })
}

#[inline(never)]
fn measured_safe_poll(cq: &CompletionQueue, wc: &mut [WorkCompletion]) -> usize {
    cq.poll(wc).map_or(0, |done| done.len())
}

// The raw versions check the return code as a careful C caller would.

#[inline(never)]
fn measured_raw_poll(cq: *mut ffi::ibv_cq, wc: &mut [ffi::ibv_wc]) -> usize {
    // SAFETY: cq is live; wc has room for its length.
    let n = unsafe { ffi::ibv_poll_cq(cq, wc.len() as i32, wc.as_mut_ptr()) };
    usize::try_from(n).unwrap_or(0)
}

#[inline(never)]
fn measured_safe_post(qp: &QueuePair, wrs: &mut [SendRequest<'_>]) -> bool {
    qp.post_send(wrs).is_ok()
}

#[inline(never)]
fn measured_raw_post(qp: *mut ffi::ibv_qp, wr: *mut ffi::ibv_send_wr) -> bool {
    let mut bad = ptr::null_mut();
    // SAFETY: qp is live; wr is a valid list referencing live regions.
    unsafe { ffi::ibv_post_send(qp, wr, &mut bad) == 0 }
}

#[inline(never)]
fn measured_safe_recv(qp: &QueuePair, wr: &mut [RecvRequest<'_>]) -> bool {
    qp.post_recv(wr).is_ok()
}

#[inline(never)]
fn measured_raw_recv(qp: *mut ffi::ibv_qp, wr: *mut ffi::ibv_recv_wr) -> bool {
    let mut bad = ptr::null_mut();
    // SAFETY: qp is live; wr is a valid request referencing a live region.
    unsafe { ffi::ibv_post_recv(qp, wr, &mut bad) == 0 }
}

#[inline(never)]
fn measured_safe_build_write<'a>(sge: &'a [Sge<'a>], remote: RemoteMemory) -> SendRequest<'a> {
    SendRequest::write(1, sge, remote).signaled()
}

#[inline(never)]
fn measured_raw_build_write(sge: *mut ffi::ibv_sge, addr: u64, rkey: u32) -> ffi::ibv_send_wr {
    let mut wr = ffi::ibv_send_wr {
        wr_id: 1,
        sg_list: sge,
        num_sge: 1,
        opcode: ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
        send_flags: ffi::ibv_send_flags::IBV_SEND_SIGNALED.0,
        ..Default::default()
    };
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = rkey;
    wr
}

#[inline(never)]
fn measured_safe_build_recv<'a>(sge: &'a [Sge<'a>]) -> RecvRequest<'a> {
    RecvRequest::new(1, sge)
}

#[inline(never)]
fn measured_raw_build_recv(sge: *mut ffi::ibv_sge) -> ffi::ibv_recv_wr {
    ffi::ibv_recv_wr {
        wr_id: 1,
        next: ptr::null_mut(),
        sg_list: sge,
        num_sge: 1,
    }
}

/// Polls `cq` until `n` completions arrived, failing on an error status.
fn drain(cq: &CompletionQueue, mut n: usize) -> Result<(), String> {
    let mut wc = [WorkCompletion::default(); 16];
    while n > 0 {
        for done in cq.poll(&mut wc).map_err(|e| e.to_string())? {
            done.ok().map_err(|e| e.to_string())?;
            n -= 1;
        }
    }
    Ok(())
}

fn run(op: &str, path: &str, n: u64) -> Result<(), String> {
    let s = setup().map_err(|e| e.to_string())?;
    let raw = match path {
        "safe" => false,
        "raw" => true,
        other => return Err(format!("unknown path {other:?} (safe | raw)")),
    };
    let sge = [s.src.sge(..).map_err(|e| e.to_string())?];
    let rsge = [s.dst.sge(..).map_err(|e| e.to_string())?];
    let mut raw_sge = ffi::ibv_sge {
        addr: s.src.addr(),
        length: 64,
        lkey: s.src.lkey(),
    };
    let mut raw_rsge = ffi::ibv_sge {
        addr: s.dst.addr(),
        length: 64,
        lkey: s.dst.lkey(),
    };
    let list_len = if op == "post_list16" { 16 } else { 1 };
    for _ in 0..n {
        match op {
            "poll_empty" => {
                if raw {
                    let mut wc = [ffi::ibv_wc::default(); 1];
                    black_box(measured_raw_poll(s.a_cq.as_raw().as_ptr(), &mut wc));
                } else {
                    let mut wc = [WorkCompletion::default(); 1];
                    black_box(measured_safe_poll(&s.a_cq, &mut wc));
                }
            }
            "post_write" | "post_send" | "post_list16" => {
                let send = op == "post_send";
                if send {
                    s.b.post_recv(&mut [RecvRequest::new(0, &rsge)])
                        .map_err(|e| e.to_string())?;
                }
                let ok = if raw {
                    let mut list: Vec<ffi::ibv_send_wr> = (0..list_len)
                        .map(|i| {
                            let mut wr = ffi::ibv_send_wr {
                                wr_id: i,
                                sg_list: &mut raw_sge,
                                num_sge: 1,
                                opcode: if send {
                                    ffi::ibv_wr_opcode::IBV_WR_SEND
                                } else {
                                    ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE
                                },
                                ..Default::default()
                            };
                            wr.wr.rdma.remote_addr = s.dst.addr();
                            wr.wr.rdma.rkey = s.dst.rkey();
                            wr
                        })
                        .collect();
                    let last = list.len() - 1;
                    list[last].send_flags = ffi::ibv_send_flags::IBV_SEND_SIGNALED.0;
                    for i in 0..last {
                        list[i].next = &mut list[i + 1];
                    }
                    measured_raw_post(s.a.as_raw().as_ptr(), list.as_mut_ptr())
                } else {
                    let mut list: Vec<SendRequest<'_>> = (0..list_len)
                        .map(|i| {
                            let wr = if send {
                                SendRequest::send(i, &sge)
                            } else {
                                SendRequest::write(i, &sge, s.dst.remote())
                            };
                            if i + 1 == list_len {
                                wr.signaled()
                            } else {
                                wr
                            }
                        })
                        .collect();
                    measured_safe_post(&s.a, &mut list)
                };
                if !ok {
                    return Err("post failed".into());
                }
                drain(&s.a_cq, 1)?;
                if send {
                    drain(&s.b_cq, 1)?;
                }
            }
            "post_recv" => {
                let ok = if raw {
                    let mut wr = ffi::ibv_recv_wr {
                        wr_id: 0,
                        next: ptr::null_mut(),
                        sg_list: &mut raw_rsge,
                        num_sge: 1,
                    };
                    measured_raw_recv(s.b.as_raw().as_ptr(), &mut wr)
                } else {
                    measured_safe_recv(&s.b, &mut [RecvRequest::new(0, &rsge)])
                };
                if !ok {
                    return Err("post_recv failed".into());
                }
                // Consume the receive with a send so the queue never fills.
                s.a.post_send(&mut [SendRequest::send(0, &sge).signaled()])
                    .map_err(|e| e.to_string())?;
                drain(&s.a_cq, 1)?;
                drain(&s.b_cq, 1)?;
            }
            "build_write" => {
                if raw {
                    black_box(measured_raw_build_write(
                        black_box(&mut raw_sge),
                        s.dst.addr(),
                        s.dst.rkey(),
                    ));
                } else {
                    black_box(measured_safe_build_write(black_box(&sge), s.dst.remote()));
                }
            }
            "build_recv" => {
                if raw {
                    black_box(measured_raw_build_recv(black_box(&mut raw_rsge)));
                } else {
                    black_box(measured_safe_build_recv(black_box(&rsge)));
                }
            }
            other => return Err(format!("unknown operation {other:?}")),
        }
    }
    Ok(())
}

/// The extended-CQ operations' setup: `a` sends on an extended CQ, `b` receives on a plain
/// one.
struct ExSetup {
    a: QueuePair,
    a_cq: ExtendedCq,
    b: QueuePair,
    b_cq: CompletionQueue,
    src: MemoryRegion,
    dst: MemoryRegion,
}

fn ex_setup() -> rdma_verbs::Result<ExSetup> {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let ctx = Context::open(&name)?;
    let pd = ctx.alloc_pd()?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let a_cq = ctx.create_cq_ex(64, WcFields::STANDARD, None)?;
    let b_cq = ctx.create_cq(64, None)?;
    let qp = |cq: &CompletionQueue| pd.create_qp(QpType::Rc, cq, cq).access(access).build();
    let (a, b) = (qp(&a_cq)?, qp(&b_cq)?);
    let (ea, eb) = (a.endpoint(), b.endpoint());
    Ok(ExSetup {
        a: a.connect(&eb, &ConnectOptions::new())?,
        b: b.connect(&ea, &ConnectOptions::new())?,
        a_cq,
        b_cq,
        src: pd.alloc_mr(64, access)?,
        dst: pd.alloc_mr(64, access)?,
    })
}

#[inline(never)]
fn measured_safe_poll16(cq: &CompletionQueue, wc: &mut [WorkCompletion]) -> u64 {
    let mut sum = 0;
    for w in cq.poll(wc).unwrap_or_default() {
        sum += w.wr_id() + u64::from(w.is_success()) + u64::from(w.byte_len());
        sum += u64::from(w.opcode() == WcOpcode::RdmaWrite);
    }
    sum
}

#[inline(never)]
fn measured_raw_poll16(cq: *mut ffi::ibv_cq, wc: &mut [ffi::ibv_wc]) -> u64 {
    // SAFETY: cq is live; wc has room for its length.
    let n = unsafe { ffi::ibv_poll_cq(cq, wc.len() as i32, wc.as_mut_ptr()) };
    let mut sum = 0;
    for w in &wc[..usize::try_from(n).unwrap_or(0)] {
        sum += w.wr_id + u64::from(w.status == ffi::ibv_wc_status::IBV_WC_SUCCESS);
        sum += u64::from(w.byte_len);
        sum += u64::from(w.opcode == ffi::ibv_wc_opcode::IBV_WC_RDMA_WRITE);
    }
    sum
}

#[inline(never)]
fn measured_safe_poll_ex(cq: &mut ExtendedCq) -> u64 {
    cq.poll_session(|s| {
        let mut sum = 0;
        while let Some(wc) = s.next_wc()? {
            sum += wc.wr_id() + u64::from(wc.status() == WcStatus::SUCCESS);
            sum += u64::from(wc.byte_len().unwrap_or(0));
            sum += u64::from(wc.opcode() == WcOpcode::RdmaWrite);
        }
        Ok(sum)
    })
    .unwrap_or(0)
}

/// The C loop of the `ibv_create_cq_ex` man page, stopped after `max` completions without
/// the `ibv_next_poll` that would find none (on rxe that one corrupts the CQ, see the
/// crate's poll sessions): the fewest calls a correct C program makes on any provider.
#[inline(never)]
fn measured_raw_poll_ex(cq: *mut ffi::ibv_cq_ex, max: usize) -> u64 {
    let mut attr = ffi::ibv_poll_cq_attr { comp_mask: 0 };
    // SAFETY: cq is a live extended CQ with the standard fields, not in a poll; the reads
    // run between a successful start_poll and end_poll.
    unsafe {
        if ffi::ibv_start_poll(cq, &mut attr) != 0 {
            return 0;
        }
        let mut sum = 0;
        let mut n = 0;
        loop {
            sum += (*cq).wr_id + u64::from((*cq).status == ffi::ibv_wc_status::IBV_WC_SUCCESS);
            sum += u64::from(ffi::ibv_wc_read_byte_len(cq));
            sum += u64::from(ffi::ibv_wc_read_opcode(cq) == ffi::ibv_wc_opcode::IBV_WC_RDMA_WRITE);
            n += 1;
            if n == max || ffi::ibv_next_poll(cq) != 0 {
                break;
            }
        }
        ffi::ibv_end_poll(cq);
        sum
    }
}

/// The C loop that reads until the CQ is empty without the rxe bug: `ibv_end_poll` +
/// `ibv_start_poll` per completion instead of `ibv_next_poll`, as the crate's sessions step
/// on rxe.
#[inline(never)]
fn measured_raw_poll_ex_restart(cq: *mut ffi::ibv_cq_ex) -> u64 {
    let mut attr = ffi::ibv_poll_cq_attr { comp_mask: 0 };
    let mut sum = 0;
    // SAFETY: as in measured_raw_poll_ex; each read runs between a successful start_poll
    // and its end_poll.
    unsafe {
        while ffi::ibv_start_poll(cq, &mut attr) == 0 {
            sum += (*cq).wr_id + u64::from((*cq).status == ffi::ibv_wc_status::IBV_WC_SUCCESS);
            sum += u64::from(ffi::ibv_wc_read_byte_len(cq));
            sum += u64::from(ffi::ibv_wc_read_opcode(cq) == ffi::ibv_wc_opcode::IBV_WC_RDMA_WRITE);
            ffi::ibv_end_poll(cq);
        }
    }
    sum
}

/// Posts 16 signaled writes on `s.a` and returns once their completions are (very likely)
/// in `s.a_cq`: an unsignaled write with immediate after them is received by `s.b` first,
/// then their acknowledgements get a millisecond.
fn sixteen_ready(s: &ExSetup, sge: &[Sge<'_>], rsge: &[Sge<'_>]) -> Result<(), String> {
    s.b.post_recv(&mut [RecvRequest::new(0, rsge)])
        .map_err(|e| e.to_string())?;
    let mut list: Vec<SendRequest<'_>> = (0..16)
        .map(|i| SendRequest::write(i, sge, s.dst.remote()).signaled())
        .collect();
    list.push(SendRequest::write_with_imm(16, sge, s.dst.remote(), 0));
    s.a.post_send(&mut list).map_err(|e| e.to_string())?;
    drain(&s.b_cq, 1)?;
    std::thread::sleep(std::time::Duration::from_millis(1));
    Ok(())
}

/// The extended-CQ operations (`poll16`, `poll_ex_empty`, `poll_ex16`), `n` times.
fn run_ex(op: &str, raw: bool, n: u64) -> Result<(), String> {
    let mut s = ex_setup().map_err(|e| e.to_string())?;
    let sge = [s.src.sge(0..8).map_err(|e| e.to_string())?];
    let rsge = [s.dst.sge(..).map_err(|e| e.to_string())?];
    for _ in 0..n {
        if op != "poll_ex_empty" {
            sixteen_ready(&s, &sge, &rsge)?;
        }
        let got = match (op, raw) {
            ("poll16", false) => {
                let mut wc = [WorkCompletion::default(); 16];
                measured_safe_poll16(&s.a_cq, &mut wc)
            }
            ("poll16", true) => {
                let mut wc = [ffi::ibv_wc::default(); 16];
                measured_raw_poll16(s.a_cq.cq().as_raw().as_ptr(), &mut wc)
            }
            (_, false) => measured_safe_poll_ex(&mut s.a_cq),
            ("poll_ex16_restart", true) => measured_raw_poll_ex_restart(s.a_cq.as_raw().as_ptr()),
            (_, true) => measured_raw_poll_ex(s.a_cq.as_raw().as_ptr(), 16),
        };
        // 16 writes of 8 bytes, ids 0..16: 120 + 16 * (1 + 8 + 1).
        let want = if op == "poll_ex_empty" { 0 } else { 280 };
        if black_box(got) != want {
            return Err(format!(
                "{op}: the 16 completions were not all there (sum {got})"
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let result = match args.as_slice() {
        [_, op, path, n] => n.parse().map_err(|e| format!("N: {e}")).and_then(|n| {
            match (op.as_str(), path.as_str()) {
                (
                    "poll16" | "poll_ex_empty" | "poll_ex16" | "poll_ex16_restart",
                    "safe" | "raw",
                ) => run_ex(op, path == "raw", n),
                _ => run(op, path, n),
            }
        }),
        _ => Err("usage: verbs_overhead OP PATH N".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("verbs_overhead: {msg}");
            ExitCode::FAILURE
        }
    }
}
