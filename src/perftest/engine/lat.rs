//! The latency loops (perftest's `run_iter_lat_send`, `run_iter_lat_write` and
//! `run_iter_lat`): one message in flight, a timestamp per post.

use rdma_verbs::{RecvRequest, WorkCompletion};

use super::cq::{self, completion_error, one_completion};
use super::post::{self, Request, Target};
use super::timer::{phase, Phase, Timer};
use super::watchdog::{Watchdog, IDLE_CHECK};
use super::Plan;
use crate::perftest::clock::Clock;
use crate::perftest::rdma::{Resources, GRH};
use crate::perftest::types::{Ctx as _, Result};

/// What a latency loop measured: post timestamps with `-n`, or the count and interval
/// with `-D`.
#[derive(Clone, Debug, Default)]
pub struct LatSamples {
    /// One timestamp per post (iterations mode).
    pub tposted: Vec<u64>,
    /// Messages counted in the measured interval (duration mode).
    pub iters: u64,
    /// The measured interval (duration mode).
    pub interval: u64,
}

impl LatSamples {
    /// Room for a stamp per iteration (none with a duration).
    fn new(plan: &Plan) -> LatSamples {
        LatSamples {
            tposted: super::stamps(if plan.duration.is_some() {
                0
            } else {
                plan.iters as usize
            }),
            ..LatSamples::default()
        }
    }

    /// The samples, with the measured interval of a duration run.
    fn finish(mut self, timer: Option<Timer>) -> LatSamples {
        if let Some(t) = timer {
            self.interval = t.end.wrapping_sub(t.start);
        }
        self
    }
}

/// Send latency (perftest's `run_iter_lat_send`): ping-pong of sends; the client sends
/// first, each side sends after each receive. Receives are posted already.
pub fn lat_send(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    client: bool,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<LatSamples> {
    let (queues, send_cq, recv_cq, _) = res.with_recv_cq()?;
    // The same requests every time, as perftest: one send with and one without a
    // completion, one receive.
    let sge = [post::send_sge(plan, queues, 0, 0).ctx("building the scatter/gather entry")?];
    let request = Request::new(plan, targets[0]).ud(queues.ahs.first());
    let mut signaled_wr = [request.signaled(true).build(&sge)];
    let mut plain_wr = [request.build(&sge)];
    let grh = if queues.layout.ud { GRH } else { 0 };
    let rstart = queues.layout.recv_buffer(0);
    let rsge = [queues
        .mr
        .sge(rstart..rstart + plan.size as usize + grh)
        .ctx("building the receive entry")?];
    let mut rwr = [RecvRequest::new(0, &rsge)];

    let mut s = LatSamples::new(plan);
    let mut timer = Timer::of(plan, clock);
    let mut started = false;
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    let mut posted = plan.rx_depth;
    let iters = plan.iters;
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        let ph = Timer::phase(&mut timer, started, clock);
        let running = match ph {
            Some(p) => p != Phase::End,
            None => scnt < iters || rcnt < iters,
        };
        if !running {
            break;
        }
        // The client sends first.
        if (ph.is_some() || rcnt < iters) && (scnt >= 1 || !client) {
            loop {
                if timer
                    .as_mut()
                    .is_some_and(|t| started && t.poll(clock.now()) == Phase::End)
                {
                    break;
                }
                let n = cq::poll_or_wait(recv_cq, &mut wc, wd)?;
                if n == 0 {
                    wd.idle()?;
                    continue;
                }
                if !started {
                    started = true;
                    if let Some(t) = &mut timer {
                        t.begin(clock.now());
                    }
                }
                if !wc[0].is_success() {
                    return Err(completion_error(&wc[0], "server", format!("rcnt={rcnt}")));
                }
                rcnt += 1;
                if phase(&mut timer, clock) == Some(Phase::Sample) {
                    s.iters += 1;
                }
                if ph.is_some() || posted < iters {
                    queues.qps[0]
                        .post_recv(&mut rwr)
                        .ctx(format_args!("Couldn't post recv: rcnt={rcnt}"))?;
                    posted += 1;
                }
                wd.progress();
                break;
            }
        }
        let ph = Timer::phase(&mut timer, started, clock);
        if scnt < iters || ph.is_some_and(|p| p != Phase::End) {
            if ph.is_none() {
                s.tposted[scnt as usize] = clock.now();
            }
            scnt += 1;
            let signaled = scnt % plan.cq_mod == 0 || (ph.is_none() && scnt == iters);
            let wr = if signaled {
                &mut signaled_wr
            } else {
                &mut plain_wr
            };
            queues.qps[0]
                .post_send(wr)
                .ctx(format_args!("Couldn't post send: scnt={scnt}"))?;
            if signaled {
                one_completion(send_cq, wd, "client")?;
            }
        }
    }
    Ok(s.finish(timer))
}

/// Write latency (perftest's `run_iter_lat_write`): ping-pong of RDMA writes, each side
/// polling the last byte of its receive buffer for the peer's counter; the server writes
/// first.
pub fn lat_write(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    client: bool,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<LatSamples> {
    let mut s = LatSamples::new(plan);
    let mut timer = Timer::started(plan, clock);
    let Resources {
        queues, send_cq, ..
    } = res;
    let size = plan.size as usize;
    let post_byte = queues.layout.send_offset(0) + size - 1;
    let poll_byte = queues.layout.recv_offset(0) + size - 1;
    let iters = plan.iters;
    let (mut scnt, mut ccnt, mut rcnt) = (0u64, 0u64, 0u64);
    loop {
        let ph = phase(&mut timer, clock);
        let running = match ph {
            Some(p) => p != Phase::End,
            None => scnt < iters || ccnt < iters || rcnt < iters,
        };
        if !running {
            break;
        }
        // The server writes first.
        if (client || scnt >= 1) && (ph.is_some() || rcnt < iters) {
            rcnt += 1;
            let want = rcnt as u8;
            let mut spins = 0u32;
            while queues
                .mr
                .read_u8(poll_byte)
                .ctx("reading the receive buffer")?
                != want
            {
                spins = spins.wrapping_add(1);
                if spins % IDLE_CHECK == 0 {
                    if timer
                        .as_mut()
                        .is_some_and(|t| t.poll(clock.now()) == Phase::End)
                    {
                        break;
                    }
                    wd.check()?;
                }
                std::hint::spin_loop();
            }
            wd.progress();
        }
        let ph = phase(&mut timer, clock);
        if scnt < iters || ph.is_some() {
            if ph.is_none() {
                s.tposted[scnt as usize] = clock.now();
            }
            scnt += 1;
            queues
                .mr
                .write(post_byte, &[scnt as u8])
                .ctx("writing the send buffer")?;
            let sge =
                [post::send_sge(plan, queues, 0, 0).ctx("building the scatter/gather entry")?];
            let mut wr = [Request::new(plan, targets[0]).signaled(true).build(&sge)];
            queues.qps[0]
                .post_send(&mut wr)
                .ctx(format_args!("Couldn't post send: scnt={scnt}"))?;
        }
        if ph == Some(Phase::End) {
            break;
        }
        if ccnt < iters || ph.is_some() {
            one_completion(send_cq, wd, "client")?;
            ccnt += 1;
            if phase(&mut timer, clock) == Some(Phase::Sample) {
                s.iters += 1;
            }
        }
    }
    Ok(s.finish(timer))
}

/// Read and atomic latency (perftest's `run_iter_lat`): the client posts one request and
/// waits for its completion, again and again.
pub fn lat_read(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<LatSamples> {
    let mut s = LatSamples::new(plan);
    let mut timer = Timer::started(plan, clock);
    let Resources {
        queues, send_cq, ..
    } = res;
    let sge = [post::send_sge(plan, queues, 0, 0).ctx("building the scatter/gather entry")?];
    // The same request every time, as perftest.
    let mut wr = [Request::new(plan, targets[0]).signaled(true).build(&sge)];
    let mut scnt = 0u64;
    loop {
        let ph = phase(&mut timer, clock);
        let running = match ph {
            Some(p) => p != Phase::End,
            None => scnt < plan.iters,
        };
        if !running {
            break;
        }
        if ph.is_none() {
            s.tposted[scnt as usize] = clock.now();
        }
        scnt += 1;
        queues.qps[0]
            .post_send(&mut wr)
            .ctx(format_args!("Couldn't post send: scnt={scnt}"))?;
        one_completion(send_cq, wd, "client")?;
        if phase(&mut timer, clock) == Some(Phase::Sample) {
            s.iters += 1;
        }
    }
    Ok(s.finish(timer))
}
