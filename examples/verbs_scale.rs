//! Measures how set-up costs grow, for `scripts/scale` (its C twin is
//! `scripts/scale.d/scale.c`, which prints the same lines through plain libibverbs).
//!
//! ```text
//! verbs_scale info            max_qp M gid_index G
//! verbs_scale qps N [warm]    N create_us connect_us destroy_us rss_kib kernel_kib
//! verbs_scale mr SIZE ITERS   SIZE reg_dereg_us
//! ```
//!
//! `qps` creates N RC QPs on one context (one PD, one shared CQ; the builder's default queues:
//! 128 sends and 128 receives of one SGE, no inline data), connects each to itself over the
//! port's loopback (INIT → RTR → RTS, `ConnectOptions::new()`), then destroys them. The
//! create phase is `build` (`ibv_create_qp` and the move to INIT), connect is RTR and RTS; with
//! `warm`, one QP is created, connected and destroyed first, outside the figures (what a
//! process that made a QP before pays: its code is paged in). Every figure is per QP: the time
//! of each phase over N, the growth of this process's resident set (`Rss` of
//! `/proc/self/smaps_rollup`), and of the kernel's `Slab` + `VmallocUsed` (`/proc/meminfo`, the
//! whole machine's: rxe's queues are vmalloc'd and mapped into the process, so they count in
//! both). `mr` registers and deregisters one SIZE-byte buffer ITERS times (`ibv_reg_mr` +
//! `ibv_dereg_mr` through `register` / `deregister`), after one untimed round that faults its
//! pages in; it prints the mean time of a round.

use std::process::ExitCode;
use std::time::Instant;

use rdma_verbs::{AccessFlags, ConnectOptions, Context, QpType};

/// The device: `IBVERBS_TEST_DEVICE`, else rxe0.
fn open() -> rdma_verbs::Result<Context> {
    let name = std::env::var("IBVERBS_TEST_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    Context::open(&name)
}

/// A field of a `/proc` file of `Name:   value kB` lines, in KiB.
fn kib(path: &str, field: &str) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("{path}: no {field}"))
}

/// This process's resident set and the kernel's slab + vmalloc use, in KiB. The resident
/// set is `smaps_rollup`'s, counted from the page tables: `VmRSS` lags on kernels before
/// 6.2 (each thread batches its count until 64 page faults), and so depends on how many
/// faults the program happened to take.
fn memory() -> Result<(u64, u64), String> {
    let rss = kib("/proc/self/smaps_rollup", "Rss")?;
    let kernel = kib("/proc/meminfo", "Slab")? + kib("/proc/meminfo", "VmallocUsed")?;
    Ok((rss, kernel))
}

fn info() -> Result<(), String> {
    let ctx = open().map_err(|e| e.to_string())?;
    let max_qp = ctx.query_device().map_err(|e| e.to_string())?.max_qp;
    let pd = ctx.alloc_pd().map_err(|e| e.to_string())?;
    let cq = ctx.create_cq(1, None).map_err(|e| e.to_string())?;
    let qp = pd
        .create_qp(QpType::Rc, &cq, &cq)
        .build()
        .map_err(|e| e.to_string())?;
    println!("max_qp {max_qp} gid_index {}", qp.gid_index());
    Ok(())
}

fn qps(n: usize, warm: bool) -> Result<(), String> {
    let err = |e: rdma_verbs::Error| e.to_string();
    let ctx = open().map_err(err)?;
    let pd = ctx.alloc_pd().map_err(err)?;
    let cq = ctx.create_cq(1, None).map_err(err)?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    // Before the clock, as the C twin queries the port, the device and its GID: this
    // reads the port and its GID table into the context's copy, which the QPs use.
    ctx.default_gid(1).map_err(err)?;
    let connect_to_itself = |qp: rdma_verbs::PreparedQueuePair| {
        let me = qp.endpoint();
        qp.connect(&me, &ConnectOptions::new())
    };
    if warm {
        let qp = pd.create_qp(QpType::Rc, &cq, &cq).access(access).build();
        drop(qp.and_then(connect_to_itself).map_err(err)?);
    }
    let mut prepared = Vec::with_capacity(n);
    let (rss0, kernel0) = memory()?;
    let start = Instant::now();
    for _ in 0..n {
        prepared.push(
            pd.create_qp(QpType::Rc, &cq, &cq)
                .access(access)
                .build()
                .map_err(err)?,
        );
    }
    let create = start.elapsed();
    let mut connected = Vec::with_capacity(n);
    let start = Instant::now();
    for qp in prepared {
        connected.push(connect_to_itself(qp).map_err(err)?);
    }
    let connect = start.elapsed();
    let (rss1, kernel1) = memory()?;
    let start = Instant::now();
    drop(connected);
    let destroy = start.elapsed();
    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    let grown = |a: u64, b: u64| b.saturating_sub(a) as f64 / n as f64;
    println!(
        "{n} {:.1} {:.1} {:.1} {:.1} {:.1}",
        per(create),
        per(connect),
        per(destroy),
        grown(rss0, rss1),
        grown(kernel0, kernel1)
    );
    Ok(())
}

fn mr(size: usize, iters: u32) -> Result<(), String> {
    let err = |e: rdma_verbs::Error| e.to_string();
    let ctx = open().map_err(err)?;
    let pd = ctx.alloc_pd().map_err(err)?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
    let mut buf = vec![0x5a_u8; size];
    buf = pd
        .register(buf, access)
        .map_err(err)?
        .deregister()
        .map_err(err)?;
    let start = Instant::now();
    for _ in 0..iters {
        buf = pd
            .register(buf, access)
            .map_err(err)?
            .deregister()
            .map_err(err)?;
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / f64::from(iters);
    println!("{size} {per:.1}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let number = |s: &str, what: &str| s.parse::<usize>().map_err(|e| format!("{what}: {e}"));
    let result = match args.as_slice() {
        [_, op] if op == "info" => info(),
        [_, op, n, rest @ ..] if op == "qps" && matches!(rest, [] | [_]) => {
            let warm = match rest {
                [] => Ok(false),
                [w] if w == "warm" => Ok(true),
                _ => Err("qps N [warm]".to_owned()),
            };
            match number(n, "N") {
                Ok(0) => Err("N: at least one QP".into()),
                n => n.and_then(|n| warm.and_then(|warm| qps(n, warm))),
            }
        }
        [_, op, size, iters] if op == "mr" => number(size, "SIZE").and_then(|size| {
            number(iters, "ITERS").and_then(|i| mr(size, u32::try_from(i.max(1)).unwrap_or(1)))
        }),
        _ => Err("usage: verbs_scale info | qps N [warm] | mr SIZE ITERS".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("verbs_scale: {msg}");
            ExitCode::FAILURE
        }
    }
}
