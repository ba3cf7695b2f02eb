//! The measured loops, one per perftest `run_iter_*` function: what is posted when, what is
//! timestamped, and how completions are counted.

use std::os::fd::AsRawFd;
use std::time::Duration;

use ibverbs::{
    MemoryRegion, QueuePair, RecvRequest, SendRequest, Sge, WorkCompletion, DEFAULT_QKEY,
};

use super::clock::Clock;
use super::peer::Peer;
use super::rdma::{Cq, Layout, Resources, GRH};
use super::stats::BwSamples;
use super::types::{AtomicOp, Ctx as _, Error, Result, Verb};
use super::wire::Record;

/// How long the data path may go without a completion before the test fails.
pub const STALL: Duration = Duration::from_secs(20);
/// Completions taken per poll (perftest's `CTX_POLL_BATCH`).
const POLL_BATCH: usize = 16;
/// Empty polls between two looks at the clock.
const IDLE_CHECK: u32 = 1024;
/// After this long without progress, and then this often, check whether the peer is still
/// connected.
const PEER_CHECK: Duration = Duration::from_millis(200);

/// Notices a data path that stopped: no progress for [`STALL`], or a peer that went away.
/// Time is read from the tick counter, which is cheap enough to look at often.
pub struct Watchdog<'a> {
    peer: &'a Peer,
    clock: &'a Clock,
    progress: u64,
    seen: u64,
    idle: u32,
    since: u64,
    last_peer_check: u64,
}

impl<'a> Watchdog<'a> {
    /// A watchdog that reports the peer's connection.
    pub fn new(peer: &'a Peer, clock: &'a Clock) -> Self {
        let now = clock.now();
        Watchdog {
            peer,
            clock,
            progress: 0,
            seen: 0,
            idle: 0,
            since: now,
            last_peer_check: now,
        }
    }

    /// Something completed.
    #[inline]
    pub fn progress(&mut self) {
        self.progress = self.progress.wrapping_add(1);
    }

    /// A poll found nothing: every [`IDLE_CHECK`] of those, look at the clock.
    #[inline]
    pub fn idle(&mut self) -> Result<()> {
        self.idle += 1;
        if self.idle >= IDLE_CHECK {
            self.idle = 0;
            self.check()
        } else {
            Ok(())
        }
    }

    /// Fails if nothing progressed for [`STALL`] or the peer closed the connection (looked
    /// at every [`PEER_CHECK`] once idle that long).
    #[cold]
    pub fn check(&mut self) -> Result<()> {
        let now = self.clock.now();
        if self.progress != self.seen {
            self.seen = self.progress;
            self.since = now;
            return Ok(());
        }
        let idle = now.saturating_sub(self.since);
        let peer_check = self.clock.ticks_in(PEER_CHECK);
        if idle >= peer_check && now.saturating_sub(self.last_peer_check) >= peer_check {
            self.last_peer_check = now;
            if self.peer.closed() {
                return Err(Error::new(
                    "the peer closed the connection during the test (it stopped or failed)",
                ));
            }
        }
        if idle >= self.clock.ticks_in(STALL) {
            return Err(Error::new(format!(
                "no progress for {} s: the peer is not taking part (different test or parameters?)",
                STALL.as_secs()
            )));
        }
        Ok(())
    }
}

/// The phases of a duration (`-D`) run, perftest's `DurationStates`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Warming up for the margin.
    Start,
    /// Counting.
    Sample,
    /// Cooling down for the margin.
    StopSample,
    /// Done.
    End,
}

/// perftest's duration alarm, as deadlines checked in the loops: `margin` seconds of warm
/// up, `duration - 2·margin` measured, `margin` to stop.
pub struct Timer {
    phase: Phase,
    deadline: u64,
    margin: u64,
    sample: u64,
    /// When the measured interval began.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}

impl Timer {
    /// A timer for `duration` seconds with `margin`, not started.
    pub fn new(clock: &Clock, duration: u32, margin: u32) -> Timer {
        let secs = |s: u32| clock.ticks_in(Duration::from_secs(s.into()));
        Timer {
            phase: Phase::Start,
            deadline: u64::MAX,
            margin: secs(margin),
            sample: secs(duration.saturating_sub(2 * margin)),
            start: 0,
            end: 0,
        }
    }

    /// Starts the warm-up margin at `now`.
    pub fn begin(&mut self, now: u64) {
        self.phase = Phase::Start;
        self.deadline = now.saturating_add(self.margin);
        self.poll(now);
    }

    /// The phase at `now`, moving on past expired deadlines.
    #[inline]
    pub fn poll(&mut self, now: u64) -> Phase {
        while self.phase != Phase::End && now >= self.deadline {
            match self.phase {
                Phase::Start => {
                    self.phase = Phase::Sample;
                    self.start = now;
                    self.deadline = now.saturating_add(self.sample);
                }
                Phase::Sample => {
                    self.phase = Phase::StopSample;
                    self.end = now;
                    self.deadline = now.saturating_add(self.margin);
                }
                Phase::StopSample | Phase::End => self.phase = Phase::End,
            }
        }
        self.phase
    }
}

/// Polls `cq`. With events (`-e`) and nothing there, sleeps on the channel until a
/// completion is signalled; perftest's `ctx_notify_events` before each poll, without the
/// race of arming after the wait.
fn poll_cq(cq: &mut Cq, wc: &mut [WorkCompletion], wd: &mut Watchdog<'_>) -> Result<usize> {
    let n = cq.cq.poll(wc).ctx("poll CQ failed")?.len();
    let Some(channel) = &cq.channel else {
        return Ok(n);
    };
    if n > 0 {
        return Ok(n);
    }
    cq.cq
        .req_notify(false)
        .ctx("Couldn't request CQ notification")?;
    let n = cq.cq.poll(wc).ctx("poll CQ failed")?.len();
    if n > 0 {
        return Ok(n);
    }
    let fd = channel.as_raw_fd();
    loop {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the duration of the call, and the channel
        // keeps `fd` open.
        let rc = unsafe { libc::poll(&mut pfd, 1, 1000) };
        if rc > 0 {
            cq.cq.wait().ctx("Failed to get cq_event")?;
            return Ok(cq.cq.poll(wc).ctx("poll CQ failed")?.len());
        }
        if rc < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(Error::new(format!(
                "waiting for a completion event: {}",
                std::io::Error::last_os_error()
            )));
        }
        wd.check()?;
    }
}

/// A failed completion, as perftest reports it.
fn completion_error(wc: &WorkCompletion, side: &str, counts: String) -> Error {
    Error::new(format!(
        " Completion with error at {side}\n Failed status {}: wr_id {} syndrom {:#x}\n {counts}",
        wc.status(),
        wc.wr_id(),
        wc.vendor_err()
    ))
}

/// What a sending loop needs to know.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// The operation.
    pub verb: Verb,
    /// Message size.
    pub size: u64,
    /// Iterations per QP (ignored with a duration).
    pub iters: u64,
    /// Send queue depth.
    pub tx_depth: u64,
    /// One completion per this many requests.
    pub cq_mod: u64,
    /// Requests per post.
    pub post_list: u64,
    /// Whether per-message timestamps are kept.
    pub no_peak: bool,
    /// Send inline.
    pub inline: bool,
    /// Atomic operation.
    pub atomic: AtomicOp,
    /// Duration mode: seconds and margin.
    pub duration: Option<(u32, u32)>,
    /// Receive queue depth (send tests).
    pub rx_depth: u64,
}

impl Plan {
    /// Whether post `k` of a QP asks for a completion: every `cq_mod`-th, and the last.
    fn signaled(&self, k: u64) -> bool {
        k % self.cq_mod == self.cq_mod - 1 || (self.duration.is_none() && k + 1 == self.iters)
    }
}

/// Builds one work request of `plan` from QP `q`'s send area at `local`, to the peer's
/// buffer at `remote_off`.
#[allow(clippy::too_many_arguments)]
fn request<'a>(
    plan: &Plan,
    sge: &'a [Sge<'a>],
    q: usize,
    remote: &Record,
    remote_off: usize,
    ah: Option<&'a ibverbs::AddressHandle>,
    signaled: bool,
) -> SendRequest<'a> {
    let target = remote.remote(remote_off as u64, plan.size);
    let id = q as u64;
    let mut wr = match plan.verb {
        Verb::Send => SendRequest::send(id, sge),
        Verb::Write => SendRequest::write(id, sge, target),
        Verb::Read => SendRequest::read(id, sge, target),
        Verb::Atomic => match plan.atomic {
            AtomicOp::FetchAndAdd => SendRequest::fetch_add(id, &sge[0], target, 1),
            AtomicOp::CmpAndSwap => SendRequest::compare_swap(id, &sge[0], target, 0, 0),
        },
    };
    if let Some(ah) = ah {
        wr = wr.ud(ah, remote.qpn, DEFAULT_QKEY);
    }
    if signaled {
        wr = wr.signaled();
    }
    if plan.inline {
        wr = wr.inline();
    }
    wr
}

/// The scatter/gather entries of post lists: per QP, one per list entry (perftest fills
/// its lists once, with fixed addresses).
fn list_sges<'m>(
    plan: &Plan,
    mr: &'m MemoryRegion,
    layout: &Layout,
    nq: usize,
) -> Result<Vec<Vec<Sge<'m>>>> {
    if plan.post_list == 1 {
        return Ok(Vec::new());
    }
    (0..nq)
        .map(|q| {
            (0..plan.post_list)
                .map(|j| {
                    let local = layout.send_offset(q) + layout.cycle(plan.size, j);
                    mr.sge(local..local + plan.size as usize)
                })
                .collect::<ibverbs::Result<Vec<_>>>()
        })
        .collect::<ibverbs::Result<_>>()
        .ctx("building the post lists")
}

/// Posts the sends of a bandwidth loop: single requests whose addresses cycle with the
/// post count, or the same lists every time.
struct Poster<'a> {
    plan: &'a Plan,
    mr: &'a MemoryRegion,
    qps: &'a [QueuePair],
    ahs: &'a [ibverbs::AddressHandle],
    layout: &'a Layout,
    remote: &'a [Record],
    lists: Vec<Vec<SendRequest<'a>>>,
}

impl<'a> Poster<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        plan: &'a Plan,
        mr: &'a MemoryRegion,
        qps: &'a [QueuePair],
        ahs: &'a [ibverbs::AddressHandle],
        layout: &'a Layout,
        remote: &'a [Record],
        sges: &'a [Vec<Sge<'a>>],
    ) -> Self {
        let lists = sges
            .iter()
            .enumerate()
            .map(|(q, sges)| {
                (0..sges.len())
                    .map(|j| {
                        let off = layout.cycle(plan.size, j as u64);
                        let signaled = (j as u64 + 1) % plan.cq_mod == 0;
                        request(plan, &sges[j..=j], q, &remote[q], off, ahs.get(q), signaled)
                    })
                    .collect()
            })
            .collect();
        Poster {
            plan,
            mr,
            qps,
            ahs,
            layout,
            remote,
            lists,
        }
    }

    /// Posts post `k` of QP `q` (`post_list` requests).
    #[inline]
    fn post(&mut self, q: usize, k: u64) -> Result<()> {
        if let Some(list) = self.lists.get_mut(q) {
            return self.qps[q]
                .post_send(list)
                .ctx(format_args!("Couldn't post send: qp {q} scnt={k}"));
        }
        let plan = self.plan;
        let off = self.layout.cycle(plan.size, k);
        let local = self.layout.send_offset(q) + off;
        let sge = [self
            .mr
            .sge(local..local + plan.size as usize)
            .ctx("building the scatter/gather entry")?];
        let ah = self.ahs.get(q);
        let mut wr = [request(
            plan,
            &sge,
            q,
            &self.remote[q],
            off,
            ah,
            plan.signaled(k),
        )];
        self.qps[q]
            .post_send(&mut wr)
            .ctx(format_args!("Couldn't post send: qp {q} scnt={k}"))
    }
}

/// Posts receive `k` of QP `q` for messages of `size` bytes.
fn post_recv(
    mr: &MemoryRegion,
    qp: &QueuePair,
    layout: &Layout,
    q: usize,
    k: u64,
    size: u64,
) -> Result<()> {
    let grh = if layout.ud { GRH as u64 } else { 0 };
    let off = if size + grh <= layout.cycle_buffer as u64 / 2 {
        layout.cycle(size, k)
    } else {
        0
    };
    let start = layout.recv_buffer(q) + off;
    let sge = [mr
        .sge(start..start + (size + grh) as usize)
        .ctx("building the receive entry")?];
    qp.post_recv(&mut [RecvRequest::new(q as u64, &sge)])
        .ctx(format_args!("Couldn't post recv Qp={q}"))
}

/// Posts `count` receives on every QP for messages of `size` (perftest's
/// `ctx_set_recv_wqes`); bandwidth tests spread them over the cycle buffer.
pub fn post_receives(res: &Resources, size: u64, count: u64, spread: bool) -> Result<()> {
    for (q, qp) in res.qps.iter().enumerate() {
        for k in 0..count {
            post_recv(
                &res.mr,
                qp,
                &res.layout,
                q,
                if spread { k } else { 0 },
                size,
            )?;
        }
    }
    Ok(())
}

/// perftest's `--perform_warm_up`: a burst of a send queue's worth (or one post list) per
/// QP, waited for. Unlike perftest, every request of the burst is signaled, so the wait
/// does not depend on completion moderation.
pub fn warm_up(
    res: &mut Resources,
    plan: &Plan,
    remote: &[Record],
    wd: &mut Watchdog<'_>,
) -> Result<()> {
    let burst = if plan.post_list == 1 {
        plan.tx_depth
    } else {
        plan.post_list
    };
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    for (q, rem) in remote.iter().enumerate().take(res.qps.len()) {
        let local = res.layout.send_offset(q);
        let sge = [res
            .mr
            .sge(local..local + plan.size as usize)
            .ctx("building the scatter/gather entry")?];
        for _ in 0..burst {
            let mut wr = [request(plan, &sge, q, rem, 0, res.ahs.get(q), true)];
            res.qps[q]
                .post_send(&mut wr)
                .ctx("Couldn't post send during warm up")?;
        }
        let mut left = burst;
        while left > 0 {
            let n = poll_cq(&mut res.send_cq, &mut wc, wd)?;
            if n == 0 {
                wd.idle()?;
            }
            for c in &wc[..n] {
                if !c.is_success() {
                    return Err(completion_error(c, "client", "during warm up".into()));
                }
                left = left.saturating_sub(1);
                wd.progress();
            }
        }
    }
    Ok(())
}

/// The sending side of a bandwidth test (perftest's `run_iter_bw`).
pub fn bw_send(
    res: &mut Resources,
    plan: &Plan,
    remote: &[Record],
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<BwSamples> {
    let Resources {
        mr,
        send_cq,
        qps,
        ahs,
        layout,
        ..
    } = res;
    let nq = qps.len();
    let tot = plan.iters * nq as u64;
    let stamps = if plan.no_peak { 1 } else { tot.max(1) as usize };
    let mut s = BwSamples {
        tposted: vec![0; stamps],
        tcompleted: vec![0; stamps],
        iters: 0,
    };
    let mut timer = plan.duration.map(|(d, m)| Timer::new(clock, d, m));
    if let Some(t) = &mut timer {
        t.begin(clock.now());
    }
    let phase = |timer: &mut Option<Timer>| timer.as_mut().map(|t| t.poll(clock.now()));
    let sges = list_sges(plan, mr, layout, nq)?;
    let mut poster = Poster::new(plan, mr, qps, ahs, layout, remote, &sges);

    if plan.duration.is_none() && plan.no_peak {
        s.tposted[0] = clock.now();
    }
    let mut scnt = vec![0u64; nq];
    let mut ccnt = vec![0u64; nq];
    let (mut totscnt, mut totccnt) = (0u64, 0u64);
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    loop {
        let ph = phase(&mut timer);
        let running = match ph {
            Some(p) => p != Phase::End,
            None => totscnt < tot || totccnt < tot,
        };
        if !running {
            break;
        }
        for q in 0..nq {
            while (ph.is_some() || scnt[q] < plan.iters)
                && scnt[q].saturating_sub(ccnt[q]) + plan.post_list <= plan.tx_depth
            {
                if !plan.no_peak {
                    s.tposted[totscnt as usize] = clock.now();
                }
                if phase(&mut timer) == Some(Phase::End) {
                    break;
                }
                poster.post(q, scnt[q])?;
                scnt[q] += plan.post_list;
                totscnt += plan.post_list;
            }
        }
        if totccnt < tot || (ph.is_some() && totccnt < totscnt) {
            let n = poll_cq(send_cq, &mut wc, wd)?;
            if n == 0 {
                wd.idle()?;
            }
            for c in &wc[..n] {
                if !c.is_success() {
                    return Err(completion_error(
                        c,
                        "client",
                        format!("scnt={totscnt}, ccnt={totccnt}"),
                    ));
                }
                let q = c.wr_id() as usize;
                ccnt[q] += plan.cq_mod;
                totccnt += plan.cq_mod;
                if !plan.no_peak {
                    s.tcompleted[(totccnt.min(tot) - 1) as usize] = clock.now();
                }
                if ph == Some(Phase::Sample) {
                    s.iters += plan.cq_mod;
                }
                wd.progress();
            }
        }
    }
    match timer {
        Some(t) => {
            s.tposted[0] = t.start;
            s.tcompleted[0] = t.end;
        }
        None => {
            if plan.no_peak {
                s.tcompleted[0] = clock.now();
            }
            s.iters = plan.iters;
        }
    }
    Ok(s)
}

/// The receiving side of a send bandwidth test (perftest's `run_iter_bw_server`): the
/// receives of `rx_depth` per QP are posted already; the interval runs from the first
/// receive to the last.
pub fn bw_recv(
    res: &mut Resources,
    plan: &Plan,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<BwSamples> {
    let Resources {
        mr,
        recv_cq,
        qps,
        layout,
        ..
    } = res;
    let recv_cq = recv_cq
        .as_mut()
        .ok_or_else(|| Error::new("no receive CQ"))?;
    let nq = qps.len();
    let tot = plan.iters * nq as u64;
    let mut s = BwSamples {
        tposted: vec![0],
        tcompleted: vec![0],
        iters: 0,
    };
    let mut timer = plan.duration.map(|(d, m)| Timer::new(clock, d, m));
    let mut posted = vec![plan.rx_depth; nq];
    let mut rcnt = 0u64;
    let mut first = true;
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    loop {
        let ph = timer.as_mut().map(|t| {
            if first {
                Phase::Start
            } else {
                t.poll(clock.now())
            }
        });
        let running = match ph {
            Some(p) => p != Phase::End,
            None => rcnt < tot,
        };
        if !running {
            break;
        }
        let n = poll_cq(recv_cq, &mut wc, wd)?;
        if n == 0 {
            wd.idle()?;
            continue;
        }
        if first {
            first = false;
            match &mut timer {
                Some(t) => t.begin(clock.now()),
                None => s.tposted[0] = clock.now(),
            }
        }
        let ph = timer.as_mut().map(|t| t.poll(clock.now()));
        for c in &wc[..n] {
            if !c.is_success() {
                return Err(completion_error(c, "server", format!("rcnt={rcnt}")));
            }
            let q = c.wr_id() as usize;
            rcnt += 1;
            if ph == Some(Phase::Sample) {
                s.iters += 1;
            }
            if ph.is_some() || posted[q] < plan.iters {
                post_recv(mr, &qps[q], layout, q, posted[q], plan.size)?;
                posted[q] += 1;
            }
            wd.progress();
        }
    }
    match timer {
        Some(t) => {
            s.tposted[0] = t.start;
            s.tcompleted[0] = t.end;
        }
        None => {
            s.tcompleted[0] = clock.now();
            s.iters = plan.iters;
        }
    }
    Ok(s)
}

/// Both directions of a send bandwidth test at once (perftest's `run_iter_bi`): the server
/// starts sending at its first receive.
pub fn bw_bidir(
    res: &mut Resources,
    plan: &Plan,
    remote: &[Record],
    client: bool,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<BwSamples> {
    let Resources {
        mr,
        send_cq,
        recv_cq,
        qps,
        ahs,
        layout,
        ..
    } = res;
    let recv_cq = recv_cq
        .as_mut()
        .ok_or_else(|| Error::new("no receive CQ"))?;
    let nq = qps.len();
    let tot = plan.iters * nq as u64;
    let stamps = if plan.no_peak { 1 } else { tot.max(1) as usize };
    let mut s = BwSamples {
        tposted: vec![0; stamps],
        tcompleted: vec![0; stamps],
        iters: 0,
    };
    let mut timer = plan.duration.map(|(d, m)| Timer::new(clock, d, m));
    let mut sending = client;
    if client {
        if let Some(t) = &mut timer {
            t.begin(clock.now());
        }
    }
    if plan.no_peak {
        s.tposted[0] = clock.now();
    }
    let sges = list_sges(plan, mr, layout, nq)?;
    let mut poster = Poster::new(plan, mr, qps, ahs, layout, remote, &sges);
    let mut scnt = vec![0u64; nq];
    let mut ccnt = vec![0u64; nq];
    let mut posted = vec![plan.rx_depth; nq];
    let (mut totscnt, mut totccnt, mut totrcnt) = (0u64, 0u64, 0u64);
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    loop {
        let ph = timer.as_mut().map(|t| {
            if sending {
                t.poll(clock.now())
            } else {
                Phase::Start
            }
        });
        let running = match ph {
            Some(p) => p != Phase::End,
            None => totccnt < tot || totrcnt < tot,
        };
        if !running {
            break;
        }
        let mut idle = true;
        for q in 0..nq {
            while sending
                && (ph.is_some() || scnt[q] < plan.iters)
                && scnt[q].saturating_sub(ccnt[q]) + plan.post_list <= plan.tx_depth
            {
                if !plan.no_peak {
                    s.tposted[totscnt as usize] = clock.now();
                }
                if timer.as_mut().map(|t| t.poll(clock.now())) == Some(Phase::End) {
                    break;
                }
                poster.post(q, scnt[q])?;
                scnt[q] += plan.post_list;
                totscnt += plan.post_list;
                idle = false;
            }
        }
        let n = recv_cq.cq.poll(&mut wc).ctx("poll CQ failed")?.len();
        if n > 0 && !sending {
            sending = true;
            if let Some(t) = &mut timer {
                t.begin(clock.now());
            }
        }
        let phr = timer.as_mut().map(|t| t.poll(clock.now()));
        for c in &wc[..n] {
            if !c.is_success() {
                return Err(completion_error(c, "server", format!("rcnt={totrcnt}")));
            }
            let q = c.wr_id() as usize;
            totrcnt += 1;
            if phr == Some(Phase::Sample) {
                s.iters += 1;
            }
            if phr.is_some() || posted[q] < plan.iters {
                post_recv(mr, &qps[q], layout, q, posted[q], plan.size)?;
                posted[q] += 1;
            }
            wd.progress();
            idle = false;
        }
        let n = send_cq.cq.poll(&mut wc).ctx("poll CQ failed")?.len();
        for c in &wc[..n] {
            if !c.is_success() {
                return Err(completion_error(
                    c,
                    "client",
                    format!("scnt={totscnt}, ccnt={totccnt}"),
                ));
            }
            let q = c.wr_id() as usize;
            ccnt[q] += plan.cq_mod;
            totccnt += plan.cq_mod;
            if !plan.no_peak {
                s.tcompleted[(totccnt.min(tot) - 1) as usize] = clock.now();
            }
            if phr == Some(Phase::Sample) {
                s.iters += plan.cq_mod;
            }
            wd.progress();
            idle = false;
        }
        if idle {
            wd.idle()?;
        }
    }
    match timer {
        Some(t) => {
            s.tposted[0] = t.start;
            s.tcompleted[0] = t.end;
        }
        None => {
            if plan.no_peak {
                s.tcompleted[0] = clock.now();
            }
            s.iters = plan.iters;
        }
    }
    Ok(s)
}

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

fn lat_samples(plan: &Plan) -> LatSamples {
    LatSamples {
        tposted: vec![
            0;
            if plan.duration.is_some() {
                0
            } else {
                plan.iters as usize
            }
        ],
        ..LatSamples::default()
    }
}

fn finish_lat(mut s: LatSamples, timer: Option<Timer>) -> LatSamples {
    if let Some(t) = timer {
        s.interval = t.end.wrapping_sub(t.start);
    }
    s
}

/// Waits for one completion on `cq`, busy-polling (or sleeping with events).
fn one_completion(cq: &mut Cq, wd: &mut Watchdog<'_>, side: &str) -> Result<()> {
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        let n = poll_cq(cq, &mut wc, wd)?;
        if n > 0 {
            if !wc[0].is_success() {
                return Err(completion_error(&wc[0], side, String::new()));
            }
            wd.progress();
            return Ok(());
        }
        wd.idle()?;
    }
}

/// Send latency (perftest's `run_iter_lat_send`): ping-pong of sends; the client sends
/// first, each side sends after each receive. Receives are posted already.
pub fn lat_send(
    res: &mut Resources,
    plan: &Plan,
    remote: &[Record],
    client: bool,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<LatSamples> {
    let Resources {
        mr,
        send_cq,
        recv_cq,
        qps,
        ahs,
        layout,
    } = res;
    let recv_cq = recv_cq
        .as_mut()
        .ok_or_else(|| Error::new("no receive CQ"))?;
    // The same requests every time, as perftest: one send with and one without a
    // completion, one receive.
    let local = layout.send_offset(0);
    let sge = [mr
        .sge(local..local + plan.size as usize)
        .ctx("building the scatter/gather entry")?];
    let mut signaled_wr = [request(plan, &sge, 0, &remote[0], 0, ahs.first(), true)];
    let mut plain_wr = [request(plan, &sge, 0, &remote[0], 0, ahs.first(), false)];
    let grh = if layout.ud { GRH } else { 0 };
    let rstart = layout.recv_buffer(0);
    let rsge = [mr
        .sge(rstart..rstart + plan.size as usize + grh)
        .ctx("building the receive entry")?];
    let mut rwr = [RecvRequest::new(0, &rsge)];

    let mut s = lat_samples(plan);
    let mut timer = plan.duration.map(|(d, m)| Timer::new(clock, d, m));
    let mut started = false;
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    let mut posted = plan.rx_depth;
    let iters = plan.iters;
    let mut wc = [WorkCompletion::default(); 1];
    loop {
        let ph = timer.as_mut().map(|t| {
            if started {
                t.poll(clock.now())
            } else {
                Phase::Start
            }
        });
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
                let n = poll_cq(recv_cq, &mut wc, wd)?;
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
                if timer.as_mut().map(|t| t.poll(clock.now())) == Some(Phase::Sample) {
                    s.iters += 1;
                }
                if ph.is_some() || posted < iters {
                    qps[0]
                        .post_recv(&mut rwr)
                        .ctx(format_args!("Couldn't post recv: rcnt={rcnt}"))?;
                    posted += 1;
                }
                wd.progress();
                break;
            }
        }
        let ph = timer.as_mut().map(|t| {
            if started {
                t.poll(clock.now())
            } else {
                Phase::Start
            }
        });
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
            qps[0]
                .post_send(wr)
                .ctx(format_args!("Couldn't post send: scnt={scnt}"))?;
            if signaled {
                one_completion(send_cq, wd, "client")?;
            }
        }
    }
    Ok(finish_lat(s, timer))
}

/// Write latency (perftest's `run_iter_lat_write`): ping-pong of RDMA writes, each side
/// polling the last byte of its receive buffer for the peer's counter; the server writes
/// first.
pub fn lat_write(
    res: &mut Resources,
    plan: &Plan,
    remote: &[Record],
    client: bool,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<LatSamples> {
    let mut s = lat_samples(plan);
    let mut timer = plan.duration.map(|(d, m)| Timer::new(clock, d, m));
    if let Some(t) = &mut timer {
        t.begin(clock.now());
    }
    let size = plan.size as usize;
    let post_byte = res.layout.send_offset(0) + size - 1;
    let poll_byte = res.layout.recv_offset(0) + size - 1;
    let iters = plan.iters;
    let (mut scnt, mut ccnt, mut rcnt) = (0u64, 0u64, 0u64);
    loop {
        let ph = timer.as_mut().map(|t| t.poll(clock.now()));
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
            while res
                .mr
                .read_volatile_u8(poll_byte)
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
        let ph = timer.as_mut().map(|t| t.poll(clock.now()));
        if scnt < iters || ph.is_some() {
            if ph.is_none() {
                s.tposted[scnt as usize] = clock.now();
            }
            scnt += 1;
            res.mr
                .write(post_byte, &[scnt as u8])
                .ctx("writing the send buffer")?;
            let local = res.layout.send_offset(0);
            let sge = [res
                .mr
                .sge(local..local + size)
                .ctx("building the scatter/gather entry")?];
            let mut wr = [request(plan, &sge, 0, &remote[0], 0, None, true)];
            res.qps[0]
                .post_send(&mut wr)
                .ctx(format_args!("Couldn't post send: scnt={scnt}"))?;
        }
        if ph == Some(Phase::End) {
            break;
        }
        if ccnt < iters || ph.is_some() {
            one_completion(&mut res.send_cq, wd, "client")?;
            ccnt += 1;
            if timer.as_mut().map(|t| t.poll(clock.now())) == Some(Phase::Sample) {
                s.iters += 1;
            }
        }
    }
    Ok(finish_lat(s, timer))
}

/// Read and atomic latency (perftest's `run_iter_lat`): the client posts one request and
/// waits for its completion, again and again.
pub fn lat_read(
    res: &mut Resources,
    plan: &Plan,
    remote: &[Record],
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<LatSamples> {
    let mut s = lat_samples(plan);
    let mut timer = plan.duration.map(|(d, m)| Timer::new(clock, d, m));
    if let Some(t) = &mut timer {
        t.begin(clock.now());
    }
    let Resources {
        mr,
        send_cq,
        qps,
        layout,
        ..
    } = res;
    let local = layout.send_offset(0);
    let sge = [mr
        .sge(local..local + plan.size as usize)
        .ctx("building the scatter/gather entry")?];
    // The same request every time, as perftest.
    let mut wr = [request(plan, &sge, 0, &remote[0], 0, None, true)];
    let mut scnt = 0u64;
    loop {
        let ph = timer.as_mut().map(|t| t.poll(clock.now()));
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
        qps[0]
            .post_send(&mut wr)
            .ctx(format_args!("Couldn't post send: scnt={scnt}"))?;
        one_completion(send_cq, wd, "client")?;
        if timer.as_mut().map(|t| t.poll(clock.now())) == Some(Phase::Sample) {
            s.iters += 1;
        }
    }
    Ok(finish_lat(s, timer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timer_phases() {
        let clock = Clock::new();
        let mut t = Timer::new(&clock, 4, 1);
        t.margin = 100;
        t.sample = 1000;
        t.begin(10);
        assert_eq!(t.poll(50), Phase::Start);
        assert_eq!(t.poll(110), Phase::Sample);
        assert_eq!(t.start, 110);
        assert_eq!(t.poll(1109), Phase::Sample);
        assert_eq!(t.poll(1110), Phase::StopSample);
        assert_eq!(t.end, 1110);
        assert_eq!(t.poll(1210), Phase::End);
        // No margin: sampling starts at once and ends with the interval.
        let mut t = Timer::new(&clock, 4, 0);
        t.sample = 1000;
        t.begin(5);
        assert_eq!(t.poll(5), Phase::Sample);
        assert_eq!(t.poll(1005), Phase::End);
        assert_eq!((t.start, t.end), (5, 1005));
    }

    #[test]
    fn signaled_requests() {
        let plan = Plan {
            verb: Verb::Write,
            size: 64,
            iters: 250,
            tx_depth: 128,
            cq_mod: 100,
            post_list: 1,
            no_peak: false,
            inline: false,
            atomic: AtomicOp::FetchAndAdd,
            duration: None,
            rx_depth: 1,
        };
        let signaled: Vec<u64> = (0..250).filter(|&k| plan.signaled(k)).collect();
        assert_eq!(signaled, [99, 199, 249]);
        let d = Plan {
            duration: Some((5, 1)),
            ..plan
        };
        assert!(!d.signaled(249));
    }
}
