//! `grpc_echo bench`: one measurement for `scripts/compare-grpc`, over RDMA or TCP.
//!
//! `--phase unary`: unary calls of SIZE bytes (default 64), one after another, for SECS
//! seconds; prints `unary requests N secs S rps R p50_us A p99_us B cpu_us C` (C: this
//! process's CPU time, user and system, per request).
//! `--phase stream`: one server-streaming call of 64 KiB messages read for SECS seconds;
//! prints `stream bytes N secs S mib_s M cpu_us_per_mib C`.

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

pub async fn unary(client: &mut EchoClient<Channel>, size: usize, secs: f64) -> Result<(), String> {
    let data = pattern(1, size);
    let (start, cpu) = (Instant::now(), cpu_us());
    let mut lat = Vec::new();
    while start.elapsed().as_secs_f64() < secs {
        let t = Instant::now();
        let back = client
            .unary(Blob { data: data.clone() })
            .await
            .map_err(|s| format!("unary: {s}"))?;
        lat.push(t.elapsed());
        if back.into_inner().data.len() != size {
            return Err("unary: the answer has the wrong size".into());
        }
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

pub async fn stream(client: &mut EchoClient<Channel>, secs: f64) -> Result<(), String> {
    let ask = StreamRequest {
        size: 64 << 10,
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
