//! Hot-path and throughput benches on a real device (run through `scripts/with-rdma`).
//!
//! Every hot-path operation is measured twice: through the safe `rdma-verbs` API (`safe`) and
//! through the same verbs called straight from `rdma-verbs-sys` on the same objects (`raw`), the
//! baseline any C program pays. The raw path is also the crate's unsafe fast path: `as_raw()`
//! handles passed to `rdma_verbs::ffi`.

use rdma_verbs::AsRaw;
use std::hint::black_box;
use std::ptr;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use rdma_verbs::ffi;
use rdma_verbs::{
    AccessFlags, CompletionQueue, ConnectOptions, Context, MemoryRegion, ProtectionDomain, QpType,
    QueuePair, RecvRequest, SendRequest, WorkCompletion,
};

const ALL: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ);

/// Two connected RC QPs on one device, with a source and a target region.
struct Loopback {
    a: QueuePair,
    a_cq: CompletionQueue,
    b: QueuePair,
    b_cq: CompletionQueue,
    src: MemoryRegion,
    dst: MemoryRegion,
}

fn device() -> Context {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    Context::open(&name).expect("open the bench device (run through scripts/with-rdma)")
}

impl Loopback {
    fn new() -> Loopback {
        let ctx = device();
        let pd = ctx.alloc_pd().unwrap();
        let a_cq = ctx.create_cq(512, None).unwrap();
        let b_cq = ctx.create_cq(512, None).unwrap();
        let build = |cq| {
            pd.create_qp(QpType::Rc, cq, cq)
                .access(ALL)
                .max_send_wr(256)
                .max_recv_wr(256)
                .max_inline_data(64)
                .build()
                .unwrap()
        };
        let (a, b) = (build(&a_cq), build(&b_cq));
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let a = a.connect(&eb, &ConnectOptions::new()).unwrap();
        let b = b.connect(&ea, &ConnectOptions::new()).unwrap();
        let src = pd.alloc_mr(64 << 10, ALL).unwrap();
        let dst = pd.alloc_mr(64 << 10, ALL).unwrap();
        Loopback {
            a,
            a_cq,
            b,
            b_cq,
            src,
            dst,
        }
    }
}

/// Polls until `n` completions arrived, checking their status.
fn drain(cq: &CompletionQueue, mut n: usize) {
    let mut wc = [WorkCompletion::default(); 32];
    while n > 0 {
        for done in cq.poll(&mut wc).unwrap() {
            done.ok().unwrap();
            n -= 1;
        }
    }
}

/// The same through ibv_poll_cq directly.
fn drain_raw(cq: *mut ffi::ibv_cq, mut n: usize) {
    let mut wc = [ffi::ibv_wc::default(); 32];
    while n > 0 {
        // SAFETY: cq is live; wc has room for 32 entries.
        let got = unsafe { ffi::ibv_poll_cq(cq, 32, wc.as_mut_ptr()) };
        assert!(got >= 0);
        for w in &wc[..got as usize] {
            assert_eq!(w.status, ffi::ibv_wc_status::IBV_WC_SUCCESS);
        }
        n -= got as usize;
    }
}

/// A raw signaled RDMA write of `len` bytes from src to dst.
fn raw_write(l: &Loopback, sge: &mut ffi::ibv_sge, len: u32, flags: u32) -> ffi::ibv_send_wr {
    sge.addr = l.src.addr();
    sge.length = len;
    sge.lkey = l.src.lkey();
    let mut wr = ffi::ibv_send_wr {
        wr_id: 1,
        sg_list: sge,
        num_sge: 1,
        opcode: ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE,
        send_flags: ffi::ibv_send_flags::IBV_SEND_SIGNALED.0 | flags,
        ..Default::default()
    };
    wr.wr.rdma.remote_addr = l.dst.addr();
    wr.wr.rdma.rkey = l.dst.rkey();
    wr
}

fn hot_path(c: &mut Criterion) {
    let l = Loopback::new();
    let mut g = c.benchmark_group("hot_path");

    let mut wc = [WorkCompletion::default(); 1];
    g.bench_function("poll_empty_cq/safe", |b| {
        b.iter(|| black_box(l.a_cq.poll(&mut wc).unwrap().len()))
    });
    let mut raw_wc = [ffi::ibv_wc::default(); 1];
    g.bench_function("poll_empty_cq/raw", |b| {
        let cq = l.a_cq.as_raw().as_ptr();
        // SAFETY: the CQ is live; raw_wc has room for one entry.
        b.iter(|| black_box(unsafe { ffi::ibv_poll_cq(cq, 1, raw_wc.as_mut_ptr()) }))
    });

    for (name, inline) in [("write_64B", false), ("write_64B_inline", true)] {
        let sge = [l.src.sge(..64).unwrap()];
        g.bench_function(format!("{name}/safe"), |b| {
            b.iter(|| {
                let wr = SendRequest::write(1, &sge, l.dst.remote()).signaled();
                let wr = if inline { wr.inline() } else { wr };
                l.a.post_send(&mut [wr]).unwrap();
                drain(&l.a_cq, 1);
            })
        });
        let flag = if inline {
            ffi::ibv_send_flags::IBV_SEND_INLINE.0
        } else {
            0
        };
        g.bench_function(format!("{name}/raw"), |b| {
            let mut sge = ffi::ibv_sge::default();
            b.iter(|| {
                let mut wr = raw_write(&l, &mut sge, 64, flag);
                let mut bad = ptr::null_mut();
                // SAFETY: the QP is live and wr references a live region.
                let rc = unsafe { ffi::ibv_post_send(l.a.as_raw().as_ptr(), &mut wr, &mut bad) };
                assert_eq!(rc, 0);
                drain_raw(l.a_cq.as_raw().as_ptr(), 1);
            })
        });
    }

    // Polling 16 completions that are already there: the writes are posted and given time
    // to complete outside the measurement.
    let batch_sge = [l.src.sge(..64).unwrap()];
    let fill = || {
        let mut list: [SendRequest<'_>; 16] = std::array::from_fn(|i| {
            SendRequest::write(i as u64, &batch_sge, l.dst.remote()).signaled()
        });
        l.a.post_send(&mut list).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    };
    g.bench_function("poll_batch_16/safe", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut wc = [WorkCompletion::default(); 16];
            for _ in 0..iters {
                fill();
                let start = Instant::now();
                let mut n = 0;
                while n < 16 {
                    n += l.a_cq.poll(&mut wc[n..]).unwrap().len();
                }
                spent += start.elapsed();
            }
            spent
        })
    });
    g.bench_function("poll_batch_16/raw", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            let mut wc = [ffi::ibv_wc::default(); 16];
            for _ in 0..iters {
                fill();
                let start = Instant::now();
                let mut n = 0;
                while n < 16 {
                    // SAFETY: the CQ is live; wc[n..] has room for 16 - n entries.
                    let got = unsafe {
                        ffi::ibv_poll_cq(
                            l.a_cq.as_raw().as_ptr(),
                            (16 - n) as i32,
                            wc[n..].as_mut_ptr(),
                        )
                    };
                    n += usize::try_from(got).unwrap();
                }
                spent += start.elapsed();
            }
            spent
        })
    });

    let sge = [l.src.sge(..64).unwrap()];
    let rsge = [l.dst.sge(..64).unwrap()];
    g.bench_function("send_recv_64B/safe", |b| {
        b.iter(|| {
            l.b.post_recv(&mut [RecvRequest::new(2, &rsge)]).unwrap();
            l.a.post_send(&mut [SendRequest::send(1, &sge).signaled()])
                .unwrap();
            drain(&l.a_cq, 1);
            drain(&l.b_cq, 1);
        })
    });
    g.bench_function("send_recv_64B/raw", |b| {
        let mut s = ffi::ibv_sge {
            addr: l.src.addr(),
            length: 64,
            lkey: l.src.lkey(),
        };
        let mut r = ffi::ibv_sge {
            addr: l.dst.addr(),
            length: 64,
            lkey: l.dst.lkey(),
        };
        b.iter(|| {
            let mut rwr = ffi::ibv_recv_wr {
                wr_id: 2,
                next: ptr::null_mut(),
                sg_list: &mut r,
                num_sge: 1,
            };
            let mut swr = ffi::ibv_send_wr {
                wr_id: 1,
                sg_list: &mut s,
                num_sge: 1,
                opcode: ffi::ibv_wr_opcode::IBV_WR_SEND,
                send_flags: ffi::ibv_send_flags::IBV_SEND_SIGNALED.0,
                ..Default::default()
            };
            let (mut bad_r, mut bad_s) = (ptr::null_mut(), ptr::null_mut());
            // SAFETY: the QPs are live and the requests reference live regions.
            unsafe {
                assert_eq!(
                    ffi::ibv_post_recv(l.b.as_raw().as_ptr(), &mut rwr, &mut bad_r),
                    0
                );
                assert_eq!(
                    ffi::ibv_post_send(l.a.as_raw().as_ptr(), &mut swr, &mut bad_s),
                    0
                );
            }
            drain_raw(l.a_cq.as_raw().as_ptr(), 1);
            drain_raw(l.b_cq.as_raw().as_ptr(), 1);
        })
    });

    g.bench_function("post_list_16/safe", |b| {
        b.iter(|| {
            let mut list: [SendRequest<'_>; 16] =
                std::array::from_fn(|i| SendRequest::write(i as u64, &sge, l.dst.remote()));
            list[15] = SendRequest::write(15, &sge, l.dst.remote()).signaled();
            l.a.post_send(&mut list).unwrap();
            drain(&l.a_cq, 1);
        })
    });
    g.bench_function("post_list_16/raw", |b| {
        let mut sges = [ffi::ibv_sge::default(); 16];
        b.iter(|| {
            let mut list: [ffi::ibv_send_wr; 16] =
                std::array::from_fn(|i| raw_write(&l, &mut sges[i], 64, 0));
            for (i, wr) in list.iter_mut().enumerate() {
                wr.sg_list = &mut sges[i];
                wr.send_flags = 0;
            }
            list[15].send_flags = ffi::ibv_send_flags::IBV_SEND_SIGNALED.0;
            for i in 0..15 {
                list[i].next = &mut list[i + 1];
            }
            let mut bad = ptr::null_mut();
            // SAFETY: the QP is live and the list references a live region.
            let rc =
                unsafe { ffi::ibv_post_send(l.a.as_raw().as_ptr(), list.as_mut_ptr(), &mut bad) };
            assert_eq!(rc, 0);
            drain_raw(l.a_cq.as_raw().as_ptr(), 1);
        })
    });
    g.finish();
}

fn memory_registration(c: &mut Criterion) {
    let ctx = device();
    let pd = ctx.alloc_pd().unwrap();
    let mut g = c.benchmark_group("reg_dereg_mr");
    for (name, size) in [
        ("4KiB", 4usize << 10),
        ("1MiB", 1 << 20),
        ("64MiB", 64 << 20),
    ] {
        let mut buf = Some(vec![0u8; size]);
        g.bench_function(BenchmarkId::new("safe", name), |b| {
            b.iter(|| {
                let mr = pd.register(buf.take().unwrap(), ALL).unwrap();
                buf = Some(mr.deregister().unwrap());
            })
        });
        let mut raw_buf = vec![0u8; size];
        g.bench_function(BenchmarkId::new("raw", name), |b| {
            b.iter(|| {
                // SAFETY: the PD is live; the buffer outlives the registration.
                unsafe {
                    let mr = ffi::ibv_reg_mr(
                        pd.as_raw().as_ptr(),
                        raw_buf.as_mut_ptr().cast(),
                        size,
                        ALL.bits() as i32,
                    );
                    assert!(!mr.is_null());
                    assert_eq!(ffi::ibv_dereg_mr(mr), 0);
                }
            })
        });
    }
    g.finish();
}

fn qp_setup(c: &mut Criterion) {
    let ctx = device();
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(16, None).unwrap();
    let peer = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
    let remote = peer.endpoint();
    let mut g = c.benchmark_group("qp_create_connect");
    g.bench_function("safe", |b| {
        b.iter(|| {
            let qp = pd.create_qp(QpType::Rc, &cq, &cq).build().unwrap();
            black_box(qp.connect(&remote, &ConnectOptions::new()).unwrap());
        })
    });
    g.bench_function("raw", |b| {
        b.iter(|| raw_qp_create_connect(&pd, &cq, &remote))
    });
    g.finish();
}

/// ibv_create_qp and INIT → RTR → RTS with the attributes `connect` uses, then destroy.
fn raw_qp_create_connect(
    pd: &ProtectionDomain,
    cq: &CompletionQueue,
    remote: &rdma_verbs::Endpoint,
) {
    use ffi::ibv_qp_attr_mask as M;
    let mut init = ffi::ibv_qp_init_attr {
        send_cq: cq.as_raw().as_ptr(),
        recv_cq: cq.as_raw().as_ptr(),
        cap: ffi::ibv_qp_cap {
            max_send_wr: 128,
            max_recv_wr: 128,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        },
        qp_type: ffi::ibv_qp_type::IBV_QPT_RC,
        ..Default::default()
    };
    // SAFETY: all objects are live; each attribute struct is initialised for its mask.
    unsafe {
        let qp = ffi::ibv_create_qp(pd.as_raw().as_ptr(), &mut init);
        assert!(!qp.is_null());
        let mut a = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_INIT,
            port_num: 1,
            qp_access_flags: AccessFlags::LOCAL_WRITE.bits(),
            ..Default::default()
        };
        let m = M::IBV_QP_STATE | M::IBV_QP_PKEY_INDEX | M::IBV_QP_PORT | M::IBV_QP_ACCESS_FLAGS;
        assert_eq!(ffi::ibv_modify_qp(qp, &mut a, m.0 as i32), 0);
        let mut a = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_RTR,
            path_mtu: ffi::ibv_mtu::IBV_MTU_1024,
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn,
            max_dest_rd_atomic: 16,
            min_rnr_timer: 12,
            ..Default::default()
        };
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.dgid.raw = remote.gid.to_bytes();
        a.ah_attr.grh.sgid_index = 1;
        a.ah_attr.grh.hop_limit = 64;
        let m = M::IBV_QP_STATE
            | M::IBV_QP_AV
            | M::IBV_QP_PATH_MTU
            | M::IBV_QP_DEST_QPN
            | M::IBV_QP_RQ_PSN
            | M::IBV_QP_MAX_DEST_RD_ATOMIC
            | M::IBV_QP_MIN_RNR_TIMER;
        assert_eq!(ffi::ibv_modify_qp(qp, &mut a, m.0 as i32), 0);
        let mut a = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_RTS,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 16,
            ..Default::default()
        };
        let m = M::IBV_QP_STATE
            | M::IBV_QP_TIMEOUT
            | M::IBV_QP_RETRY_CNT
            | M::IBV_QP_RNR_RETRY
            | M::IBV_QP_SQ_PSN
            | M::IBV_QP_MAX_QP_RD_ATOMIC;
        assert_eq!(ffi::ibv_modify_qp(qp, &mut a, m.0 as i32), 0);
        assert_eq!(ffi::ibv_destroy_qp(qp), 0);
    }
}

/// Messages kept in flight by the throughput benches, and how often one is signaled.
const WINDOW: u64 = 128;
const SIGNAL_EVERY: u64 = 16;

fn throughput(c: &mut Criterion) {
    let l = Loopback::new();
    let mut g = c.benchmark_group("throughput");
    for (name, size, send) in [
        ("write_64B", 64u32, false),
        ("send_64B", 64, true),
        ("write_64KiB", 64 << 10, false),
    ] {
        g.throughput(Throughput::Bytes(size.into()));
        let sge = [l.src.sge(..size as usize).unwrap()];
        let rsge = [l.dst.sge(..size as usize).unwrap()];
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                // Sends also wait for their receives, which are drained as they arrive.
                let (mut posted, mut done, mut received) = (0u64, 0u64, 0u64);
                let mut wc = [WorkCompletion::default(); 32];
                while done < iters || (send && received < iters) {
                    let limit = if send { done.min(received) } else { done };
                    while posted < iters && posted - limit < WINDOW {
                        let last = posted + 1 == iters || (posted + 1) % SIGNAL_EVERY == 0;
                        let wr = if send {
                            l.b.post_recv(&mut [RecvRequest::new(posted, &rsge)])
                                .unwrap();
                            SendRequest::send(posted, &sge)
                        } else {
                            SendRequest::write(posted, &sge, l.dst.remote())
                        };
                        let wr = if last { wr.signaled() } else { wr };
                        l.a.post_send(&mut [wr]).unwrap();
                        posted += 1;
                    }
                    for w in l.a_cq.poll(&mut wc).unwrap() {
                        w.ok().unwrap();
                        done = (w.wr_id() + 1).max(done);
                    }
                    if send {
                        for w in l.b_cq.poll(&mut wc).unwrap() {
                            w.ok().unwrap();
                            received += 1;
                        }
                    }
                }
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

/// criterion's `criterion_group!`/`criterion_main!`, written out (the macro's function
/// cannot carry a doc comment).
fn main() {
    let mut c = config().configure_from_args();
    hot_path(&mut c);
    memory_registration(&mut c);
    qp_setup(&mut c);
    throughput(&mut c);
    c.final_summary();
}
