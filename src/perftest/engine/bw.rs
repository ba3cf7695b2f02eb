//! The bandwidth loops (perftest's `run_iter_bw`, `run_iter_bw_server` and `run_iter_bi`):
//! a send half that keeps every QP's send window full and counts the send completions, a
//! receive half that counts receives and posts them again, and the loops made of them; in
//! `ib_send_bw` on iWARP, with the receive credits of `credit`.

use rdma_verbs::WorkCompletion;

use super::cq::{self, completion_error};
use super::credit::Credit;
use super::post::{self, list_sges, Poster, Request, Target};
use super::timer::{phase, Phase, Timer};
use super::watchdog::Watchdog;
use super::{Pacing, Plan, POLL_BATCH};
use crate::perftest::clock::Clock;
use crate::perftest::rdma::{Queues, Resources};
use crate::perftest::stats::BwSamples;
use crate::perftest::types::{Ctx as _, Result};

/// perftest's `--perform_warm_up`: a burst of a send queue's worth (or one post list) per
/// QP, waited for. Unlike perftest, every request of the burst is signaled, so the wait
/// does not depend on completion moderation.
pub fn warm_up(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    wd: &mut Watchdog<'_>,
) -> Result<()> {
    let burst = if plan.post_list == 1 {
        plan.tx_depth
    } else {
        plan.post_list
    };
    let queues = &res.queues;
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    for (q, &target) in targets.iter().enumerate().take(queues.qps.len()) {
        let sge = [post::send_sge(plan, queues, q, 0).ctx("building the scatter/gather entry")?];
        for _ in 0..burst {
            let mut wr = [Request::new(plan, target)
                .qp(q)
                .ud(queues.ahs.get(q))
                .signaled(true)
                .build(&sge)];
            queues.qps[q]
                .post_send(&mut wr)
                .ctx("Couldn't post send during warm up")?;
        }
        let mut left = burst;
        while left > 0 {
            let n = cq::poll_or_wait(&mut res.send_cq, &mut wc, wd)?;
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

/// The samples of a loop that stamps every post and completion, or with `-N` only the
/// interval.
fn samples(plan: &Plan, tot: u64) -> BwSamples {
    let stamps = if plan.no_peak { 1 } else { tot.max(1) as usize };
    BwSamples {
        tposted: super::stamps(stamps),
        tcompleted: super::stamps(stamps),
        iters: 0,
    }
}

/// The end of every bandwidth loop: the interval of the duration timer, or with iterations
/// the closing stamp (without the peak) and the count per QP.
fn finish(mut s: BwSamples, timer: Option<Timer>, plan: &Plan, clock: &Clock) -> BwSamples {
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
    s
}

/// The sending half of a bandwidth loop: per QP, requests posted (`scnt`) and completed
/// (`ccnt`), a send window of TX depth, one completion counted as `cq_mod` requests.
struct Sends<'a> {
    plan: &'a Plan,
    poster: Poster<'a>,
    scnt: Vec<u64>,
    ccnt: Vec<u64>,
    totscnt: u64,
    totccnt: u64,
    /// Requests of the run over all QPs (iterations mode).
    tot: u64,
    /// The SW rate limiter, if the run has one.
    pacer: Option<Pacer>,
}

impl<'a> Sends<'a> {
    fn new(plan: &'a Plan, poster: Poster<'a>, nq: usize, clock: &Clock) -> Self {
        Sends {
            plan,
            poster,
            scnt: vec![0; nq],
            ccnt: vec![0; nq],
            totscnt: 0,
            totccnt: 0,
            tot: plan.iters * nq as u64,
            pacer: plan.pacing.map(|p| Pacer::new(p, clock)),
        }
    }

    /// Fills every QP's send window (which the credits' writes share, and which stays
    /// within the receiver's credit), stamping each post (unless `-N`) and stopping at the
    /// end of a duration; whether anything was posted.
    #[inline]
    fn fill(
        &mut self,
        ph: Option<Phase>,
        timer: &mut Option<Timer>,
        clock: &Clock,
        s: &mut BwSamples,
        credit: Option<&Credit<'_>>,
    ) -> Result<bool> {
        let plan = self.plan;
        let mut posted = false;
        for q in 0..self.scnt.len() {
            let held = credit.map_or(0, |c| c.held(q));
            while (ph.is_some() || self.scnt[q] < plan.iters)
                && self.sending(q) + held + plan.post_list <= plan.tx_depth
            {
                if let Some(c) = credit {
                    if !c.may_send(q, self.scnt[q], plan.post_list)? {
                        break;
                    }
                }
                if !self.pacer.as_mut().map_or(true, |p| p.may_post(clock)) {
                    return Ok(posted);
                }
                if !plan.no_peak {
                    s.tposted[self.totscnt as usize] = clock.now();
                }
                if phase(timer, clock) == Some(Phase::End) {
                    break;
                }
                self.poster.post(q, self.scnt[q])?;
                if let Some(p) = &mut self.pacer {
                    p.posted(plan.post_list);
                }
                self.scnt[q] += plan.post_list;
                self.totscnt += plan.post_list;
                posted = true;
            }
        }
        Ok(posted)
    }

    /// Slots of QP `q`'s send queue that its sends hold.
    #[inline]
    fn sending(&self, q: usize) -> u64 {
        self.scnt[q].saturating_sub(self.ccnt[q])
    }

    /// Whether completions are still to come: all of them with iterations, those of the
    /// posted requests with a duration.
    #[inline]
    fn waiting(&self, ph: Option<Phase>) -> bool {
        self.totccnt < self.tot || (ph.is_some() && self.totccnt < self.totscnt)
    }

    /// Counts the send completions `wc`, stamping each (unless `-N`); in the sample phase
    /// `ph` they count as measured messages. The credits' writes among them go to `credit`.
    #[inline]
    fn complete(
        &mut self,
        wc: &[WorkCompletion],
        ph: Option<Phase>,
        clock: &Clock,
        s: &mut BwSamples,
        wd: &mut Watchdog<'_>,
        mut credit: Option<&mut Credit<'_>>,
    ) -> Result<()> {
        let plan = self.plan;
        for c in wc {
            if let Some(cr) = credit.as_deref_mut().filter(|_| Credit::is_write(c)) {
                cr.written(c, wd)?;
                continue;
            }
            if !c.is_success() {
                return Err(completion_error(
                    c,
                    "client",
                    format!("scnt={}, ccnt={}", self.totscnt, self.totccnt),
                ));
            }
            let q = c.wr_id() as usize;
            self.ccnt[q] += plan.cq_mod;
            self.totccnt += plan.cq_mod;
            if !plan.no_peak {
                s.tcompleted[(self.totccnt.min(self.tot) - 1) as usize] = clock.now();
            }
            if ph == Some(Phase::Sample) {
                s.iters += plan.cq_mod;
            }
            wd.progress();
        }
        Ok(())
    }
}

/// perftest's SW rate limiter in a sending loop: a burst of posts, then none until the
/// next burst is due, the bursts [`Pacing`]'s gap apart on a fixed schedule from the start
/// (so a late burst does not push the later ones back).
struct Pacer {
    /// Ticks from one burst's start to the next's.
    gap: u64,
    /// When the next burst may start.
    due: u64,
    burst: u64,
    /// Posts left in the current burst.
    left: u64,
}

impl Pacer {
    fn new(p: Pacing, clock: &Clock) -> Pacer {
        let gap = clock.ticks_per_sec() * p.burst as f64 / p.per_second;
        Pacer {
            gap: gap as u64,
            due: clock.now(),
            burst: p.burst,
            left: 0,
        }
    }

    /// Whether a post may go now: within a burst, or once the next one is due (which
    /// starts it).
    #[inline]
    fn may_post(&mut self, clock: &Clock) -> bool {
        if self.left == 0 {
            if clock.now() < self.due {
                return false;
            }
            self.due = self.due.saturating_add(self.gap);
            self.left = self.burst;
        }
        true
    }

    /// Counts `n` requests posted in the burst.
    #[inline]
    fn posted(&mut self, n: u64) {
        self.left = self.left.saturating_sub(n);
    }
}

/// The receiving half of a send bandwidth loop: per QP, receives posted (`rx_depth` are
/// posted before the loop), and the receives taken.
struct Recvs<'a> {
    plan: &'a Plan,
    queues: &'a Queues,
    posted: Vec<u64>,
    rcnt: u64,
}

impl<'a> Recvs<'a> {
    fn new(plan: &'a Plan, queues: &'a Queues) -> Self {
        Recvs {
            plan,
            queues,
            posted: vec![plan.rx_depth; queues.qps.len()],
            rcnt: 0,
        }
    }

    /// Counts the receive completions `wc` (measured in the sample phase `ph`) and posts
    /// each receive again while more messages are to come, then counts it in `credit`.
    #[inline]
    fn complete(
        &mut self,
        wc: &[WorkCompletion],
        ph: Option<Phase>,
        s: &mut BwSamples,
        wd: &mut Watchdog<'_>,
        mut credit: Option<&mut Credit<'_>>,
    ) -> Result<()> {
        let plan = self.plan;
        for c in wc {
            if !c.is_success() {
                return Err(completion_error(c, "server", format!("rcnt={}", self.rcnt)));
            }
            let q = c.wr_id() as usize;
            self.rcnt += 1;
            if ph == Some(Phase::Sample) {
                s.iters += 1;
            }
            if ph.is_some() || self.posted[q] < plan.iters {
                post::post_recv(self.queues, q, self.posted[q], plan.size)?;
                self.posted[q] += 1;
            }
            if let Some(cr) = credit.as_deref_mut() {
                cr.received(q);
            }
            wd.progress();
        }
        Ok(())
    }
}

/// The sending side of a bandwidth test (perftest's `run_iter_bw`).
pub fn bw_send(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<BwSamples> {
    let Resources {
        queues,
        send_cq,
        credits,
        ..
    } = res;
    let nq = queues.qps.len();
    let mut s = samples(plan, plan.iters * nq as u64);
    let credit = Credit::of(credits.as_mut(), plan, nq)?;
    let mut timer = Timer::started(plan, clock);
    let sges = list_sges(plan, queues)?;
    let mut sends = Sends::new(plan, Poster::new(plan, queues, targets, &sges), nq, clock);

    if plan.duration.is_none() && plan.no_peak {
        s.tposted[0] = clock.now();
    }
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    loop {
        let ph = phase(&mut timer, clock);
        let running = match ph {
            Some(p) => p != Phase::End,
            None => sends.totscnt < sends.tot || sends.totccnt < sends.tot,
        };
        if !running {
            break;
        }
        sends.fill(ph, &mut timer, clock, &mut s, credit.as_ref())?;
        if sends.waiting(ph) {
            // A sender waiting for credit, or for its next burst, may have no completion to
            // come: it polls.
            let n = if credit.is_some() || sends.pacer.is_some() {
                cq::poll(send_cq, &mut wc)?
            } else {
                cq::poll_or_wait(send_cq, &mut wc, wd)?
            };
            if n == 0 {
                wd.idle()?;
            }
            sends.complete(&wc[..n], ph, clock, &mut s, wd, None)?;
        }
    }
    Ok(finish(s, timer, plan, clock))
}

/// The receiving side of a send bandwidth test (perftest's `run_iter_bw_server`): the
/// receives of `rx_depth` per QP are posted already; the interval runs from the first
/// receive to the last (no peak). Credits go to the senders' slots of `targets`.
pub fn bw_recv(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<BwSamples> {
    let (queues, send_cq, recv_cq, credits) = res.with_recv_cq()?;
    let plan = &Plan {
        no_peak: true,
        ..*plan
    };
    let nq = queues.qps.len();
    let tot = plan.iters * nq as u64;
    let mut s = samples(plan, tot);
    let mut credit = Credit::of(credits, plan, nq)?;
    let mut swc = [WorkCompletion::default(); POLL_BATCH];
    let mut timer = Timer::of(plan, clock);
    let mut recvs = Recvs::new(plan, queues);
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
            None => recvs.rcnt < tot,
        };
        if !running {
            break;
        }
        // The credits' turn: their writes' completions, then the counts due; a count that
        // waits for room in the send queue must not wait on the receive CQ.
        let mut waiting = false;
        if let Some(cr) = &mut credit {
            if cr.writing() {
                let n = cq::poll(send_cq, &mut swc)?;
                for c in &swc[..n] {
                    cr.written(c, wd)?;
                }
            }
            cr.send_due(queues, targets, |_| 0)?;
            waiting = cr.pending();
        }
        let n = if waiting {
            cq::poll(recv_cq, &mut wc)?
        } else {
            cq::poll_or_wait(recv_cq, &mut wc, wd)?
        };
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
        let ph = phase(&mut timer, clock);
        recvs.complete(&wc[..n], ph, &mut s, wd, credit.as_mut())?;
    }
    if let Some(cr) = &mut credit {
        cr.drain(send_cq, wd)?;
    }
    Ok(finish(s, timer, plan, clock))
}

/// Both directions of a send bandwidth test at once (perftest's `run_iter_bi`): the send
/// half of [`bw_send`] and the receive half of [`bw_recv`] in one loop, polling both CQs
/// (even with events); the server starts sending at its first receive.
pub fn bw_bidir(
    res: &mut Resources,
    plan: &Plan,
    targets: &[Target],
    client: bool,
    clock: &Clock,
    wd: &mut Watchdog<'_>,
) -> Result<BwSamples> {
    let (queues, send_cq, recv_cq, credits) = res.with_recv_cq()?;
    let nq = queues.qps.len();
    let tot = plan.iters * nq as u64;
    let mut s = samples(plan, tot);
    let mut credit = Credit::of(credits, plan, nq)?;
    let mut timer = Timer::of(plan, clock);
    let mut sending = client;
    if client {
        if let Some(t) = &mut timer {
            t.begin(clock.now());
        }
    }
    if plan.no_peak {
        s.tposted[0] = clock.now();
    }
    let sges = list_sges(plan, queues)?;
    let mut sends = Sends::new(plan, Poster::new(plan, queues, targets, &sges), nq, clock);
    let mut recvs = Recvs::new(plan, queues);
    let mut wc = [WorkCompletion::default(); POLL_BATCH];
    // Receives are taken up to rx_depth at a time, as perftest's run_iter_bi does: each
    // send completion (one per cq_mod sends) frees room for many sends, and a receive
    // queue drained 16 at a time runs dry under them (the peer's sends then wait out an
    // RNR timer).
    let rx_batch = usize::try_from(plan.rx_depth).map_or(POLL_BATCH, |d| d.max(POLL_BATCH));
    let mut rx_wc = vec![WorkCompletion::default(); rx_batch];
    loop {
        let ph = Timer::phase(&mut timer, sending, clock);
        let running = match ph {
            Some(p) => p != Phase::End,
            None => sends.totccnt < tot || recvs.rcnt < tot,
        };
        if !running {
            break;
        }
        // Counts due go before sends into the send queues they share.
        if let Some(cr) = &mut credit {
            cr.send_due(queues, targets, |q| sends.sending(q))?;
        }
        let mut idle = !(sending && sends.fill(ph, &mut timer, clock, &mut s, credit.as_ref())?);
        let n = cq::poll(recv_cq, &mut rx_wc)?;
        if n > 0 && !sending {
            sending = true;
            if let Some(t) = &mut timer {
                t.begin(clock.now());
            }
        }
        let phr = phase(&mut timer, clock);
        recvs.complete(&rx_wc[..n], phr, &mut s, wd, credit.as_mut())?;
        idle &= n == 0;
        if let Some(cr) = &mut credit {
            cr.send_due(queues, targets, |q| sends.sending(q))?;
        }
        let n = cq::poll(send_cq, &mut wc)?;
        sends.complete(&wc[..n], phr, clock, &mut s, wd, credit.as_mut())?;
        idle &= n == 0;
        if idle {
            wd.idle()?;
        }
    }
    if let Some(cr) = &mut credit {
        cr.drain(send_cq, wd)?;
    }
    Ok(finish(s, timer, plan, clock))
}
