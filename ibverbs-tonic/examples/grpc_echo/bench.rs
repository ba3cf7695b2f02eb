//! `grpc_echo bench`: one measurement for `scripts/compare-grpc`, over RDMA or TCP.
//!
//! `--phase unary`: unary calls of SIZE bytes (default 64), CALLS at a time (option `-c`,
//! default 1) on one channel, for SECS seconds; prints `unary requests N secs S rps R
//! p50_us A p99_us B cpu_us C` (C: this process's CPU time, user and system, per request).
//!
//! `--phase stream`: one server-streaming call of SIZE-byte messages (default 64 KiB) read
//! for SECS seconds; prints `stream bytes N secs S mib_s M cpu_us_per_mib C`.
//!
//! `--phase idle`: opens one connection, then CALLS more, each with one unary call, and
//! prints `idle connections N client_kib K server_kib L`: how much this process's and the
//! server's (`--server-pid`) resident memory grew over the CALLS connections, per
//! connection (the first one's one-time costs left out).

use std::future::Future;
use std::time::{Duration, Instant};

use tokio_stream::StreamExt;
use tonic::transport::Channel;

use crate::service::{echo_client::EchoClient, pattern, Blob, StreamRequest};

/// This process's CPU time so far (user and system), in µs.
fn cpu_us() -> f64 {
    // SAFETY: an all-zero rusage is valid; getrusage fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid out pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// The resident memory of process `pid` ("self": this one), in KiB: `VmRSS` of its
/// `/proc/PID/status`.
fn rss_kib(pid: &str) -> Result<f64, String> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or(format!("{path}: no VmRSS"))
}

/// One unary call of `data`, checked for its size; its latency.
async fn call(client: &mut EchoClient<Channel>, data: &bytes::Bytes) -> Result<Duration, String> {
    let t = Instant::now();
    let back = client
        .unary(Blob { data: data.clone() })
        .await
        .map_err(|s| format!("unary: {s}"))?;
    if back.into_inner().data.len() != data.len() {
        return Err("unary: the answer has the wrong size".into());
    }
    Ok(t.elapsed())
}

pub async fn unary(
    client: EchoClient<Channel>,
    size: usize,
    calls: usize,
    secs: f64,
) -> Result<(), String> {
    let data = pattern(1, size);
    let (start, cpu) = (Instant::now(), cpu_us());
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..calls {
        let (mut client, data) = (client.clone(), data.clone());
        tasks.spawn(async move {
            let mut lat = Vec::new();
            while Instant::now() < deadline {
                lat.push(call(&mut client, &data).await?);
            }
            Ok::<_, String>(lat)
        });
    }
    let mut lat = Vec::new();
    while let Some(done) = tasks.join_next().await {
        lat.extend(done.map_err(|e| format!("a unary task: {e}"))??);
    }
    let (elapsed, cpu) = (start.elapsed().as_secs_f64(), cpu_us() - cpu);
    lat.sort();
    let at = |q: f64| lat[((lat.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    let n = lat.len();
    println!(
        "unary requests {n} secs {elapsed:.3} rps {:.1} p50_us {:.1} p99_us {:.1} cpu_us {:.1}",
        n as f64 / elapsed,
        at(0.5),
        at(0.99),
        cpu / n as f64
    );
    Ok(())
}

pub async fn stream(mut client: EchoClient<Channel>, size: usize, secs: f64) -> Result<(), String> {
    let ask = StreamRequest {
        size: size as u64,
        count: u32::MAX,
        seed: 0,
    };
    let mut answers = client
        .server_stream(ask)
        .await
        .map_err(|s| format!("stream: {s}"))?
        .into_inner();
    // The first message starts the clock (the call's set-up is not streaming).
    answers.next().await;
    let (start, cpu) = (Instant::now(), cpu_us());
    let mut bytes = 0u64;
    while start.elapsed() < Duration::from_secs_f64(secs) {
        match answers.next().await {
            Some(Ok(blob)) => bytes += blob.data.len() as u64,
            Some(Err(s)) => return Err(format!("stream: {s}")),
            None => return Err("stream: ended early".into()),
        }
    }
    let (elapsed, cpu) = (start.elapsed().as_secs_f64(), cpu_us() - cpu);
    let mib = bytes as f64 / (1 << 20) as f64;
    println!(
        "stream bytes {bytes} secs {elapsed:.3} mib_s {:.2} cpu_us_per_mib {:.1}",
        mib / elapsed,
        cpu / mib
    );
    Ok(())
}

/// `connections`: the first one, then the measured ones.
pub async fn idle<F>(connections: impl Iterator<Item = F>, server_pid: u32) -> Result<(), String>
where
    F: Future<Output = Result<EchoClient<Channel>, String>>,
{
    let (server, data) = (server_pid.to_string(), pattern(1, 64));
    let mut open = Vec::new();
    let mut before = None;
    for connect in connections {
        let mut client = connect.await?;
        call(&mut client, &data).await?;
        open.push(client);
        if before.is_none() {
            before = Some((rss_kib("self")?, rss_kib(&server)?));
        }
    }
    let (client_before, server_before) = before.ok_or("no connection")?;
    let n = open.len() - 1;
    if n == 0 {
        return Err("idle: no connection after the first".into());
    }
    println!(
        "idle connections {n} client_kib {:.1} server_kib {:.1}",
        (rss_kib("self")? - client_before) / n as f64,
        (rss_kib(&server)? - server_before) / n as f64
    );
    Ok(())
}
