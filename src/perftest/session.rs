//! One run of a test: setup, the out-of-band sequence of the test's perftest program, the
//! measured loops and the report.

use std::fmt::Write as _;
use std::net::TcpListener;
use std::time::Duration;

use rdma_verbs::cm::UDP_QKEY;
use rdma_verbs::DEFAULT_QKEY;

use crate::cli::Output;

use super::clock::Clock;
use super::cm_qps;
use super::engine::{self, LatSamples, Plan, Target, Watchdog, STALL};
use super::options::{Connection, Options};
use super::peer::Peer;
use super::rdma::{self, Agreed, Device, Prepared, Resources, Run, Setup};
use super::report::{self, Info, RESULT_LINE};
use super::stats::{self, BwReport, BwSamples};
use super::types::{Error, Result, Test, Verb};
use super::wire::{self, Record, Summary};

/// How long each setup exchange may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

fn page_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(v).ok().filter(|&v| v > 0).unwrap_or(4096)
}

/// The L1 data cache line, as perftest finds it (64 if unknown).
fn cache_line() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_LEVEL1_DCACHE_LINESIZE) };
    if let Some(v) = u32::try_from(v).ok().filter(|&v| v > 0) {
        return v;
    }
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(64)
}

/// How long a side may wait for its peer to finish the measured part: the duration, or a
/// generous 1 ms plus 0.1 µs per byte per message of every size, plus [`STALL`].
fn run_timeout(run: &Run) -> Duration {
    let t = &run.traffic;
    if let Some(d) = t.duration {
        return Duration::from_secs(d.seconds.into()) + STALL;
    }
    let msgs = t.iters.saturating_mul(run.queues.num_qps.into());
    let micros = run.sizes.list.iter().fold(0u64, |acc, &s| {
        acc.saturating_add(msgs.saturating_mul(1000 + s / 10))
    });
    STALL.saturating_add(Duration::from_micros(micros))
}

impl From<&Record> for Target {
    /// The peer's buffer and QP a record announces, as the target of this side's requests.
    fn from(r: &Record) -> Target {
        Target {
            vaddr: r.vaddr,
            rkey: r.rkey,
            qpn: r.qpn,
            qkey: DEFAULT_QKEY,
        }
    }
}

/// The version (failing fast on a peer of ours with other options), page size, cache line
/// and MTU exchanges: what both sides settle, offering this port's `mtu`.
fn agree(peer: &mut Peer, o: &Options, mtu: u32) -> Result<Agreed> {
    let mine = Summary::from(o);
    let mut version = [0u8; 16];
    peer.exchange(&wire::version_message(&mine), &mut version, "the version")?;
    if let Some(theirs) = wire::check_version(&version)? {
        if let Some(diff) = mine.mismatch(&theirs) {
            return Err(Error::new(format!(
                "the peer runs with different parameters: {diff}"
            )));
        }
    }
    let (mut page_msg, mut line_msg) = ([0u8; 4], [0u8; 4]);
    let page = page_size();
    peer.exchange(&page.to_be_bytes(), &mut page_msg, "the page size")?;
    let line = cache_line();
    peer.exchange(&line.to_be_bytes(), &mut line_msg, "the cache line size")?;
    let (peer_page, peer_line) = wire::parse_system_data(page_msg, line_msg)?;
    let mut mtu_msg = [0u8; 2];
    peer.exchange(&wire::mtu_message(mtu), &mut mtu_msg, "the MTU")?;
    Ok(Agreed {
        cycle_buffer: page.max(peer_page) as usize,
        cache_line: line.max(peer_line) as usize,
        mtu: mtu.min(wire::parse_mtu(mtu_msg)?),
    })
}

/// Connects to the peer (the client) or waits for it (the server), over TCP or rdma_cm;
/// a TCP server takes its client from `listener` if it is given.
fn meet(c: &Connection, listener: Option<&TcpListener>) -> Result<Peer> {
    match (&c.server, c.rdma_cm) {
        (Some(host), false) => Peer::connect(host, c.port, CONNECT_TIMEOUT),
        (None, false) => listener.map_or_else(|| Peer::accept(c.port), Peer::accept_on),
        (Some(host), true) => Peer::connect_cm(host, c.port, CONNECT_TIMEOUT),
        (None, true) => Peer::accept_cm(c.port),
    }
}

/// Swaps the QP records at the points the test's perftest program does, connecting the
/// QPs in between and printing both sides' addresses; the peer's records. Without rdma_cm
/// (`-R`), the GIDs must be of one IP version.
fn swap_records(
    peer: &mut Peer,
    mine: &[Record],
    run: &Run,
    connect: impl FnOnce(&[Record]) -> Result<Resources>,
    out: &mut Output,
) -> Result<(Resources, Vec<Record>)> {
    let test = run.test;
    let with_gid = run.uses_gid();
    let rdma_cm = run.connection.rdma_cm;
    let group_c = matches!(test, Test::WriteLat | Test::ReadLat | Test::AtomicLat);
    let sends = matches!(test, Test::SendBw | Test::SendLat);
    if group_c {
        peer.hand_shake(&mine[0], with_gid)?;
    }
    let mut theirs = Vec::with_capacity(mine.len());
    for r in mine {
        theirs.push(peer.hand_shake(r, with_gid)?);
    }
    if let (Some(a), Some(b), false) = (mine[0].gid, theirs[0].gid, rdma_cm) {
        if rdma::v4_mapped(&a) != rdma::v4_mapped(&b) {
            return Err(Error::new(
                "\n Found Incompatibility issue with GID types.\n Please Try to use a different IP version.\n",
            ));
        }
    }
    let res = connect(&theirs)?;
    if sends {
        peer.hand_shake(&mine[0], with_gid)?;
    }
    // With rdma_cm, perftest prints the records through its exchange's parameters, whose
    // verb is always a send: no OUT, RKey or VAddr.
    let verb = if rdma_cm { Verb::Send } else { test.verb() };
    for r in mine {
        out.write_str(&report::address("local", r, verb)).ok();
    }
    for (i, r) in mine.iter().enumerate() {
        theirs[i] = peer.hand_shake(r, with_gid)?;
        out.write_str(&report::address("remote", &theirs[i], verb))
            .ok();
    }
    if !sends {
        peer.hand_shake(&mine[0], with_gid)?;
    }
    Ok((res, theirs))
}

/// The state of a test after the connection.
struct Session<'o> {
    run: Run,
    out: &'o mut Output,
    clock: Clock,
    peer: Peer,
    res: Resources,
    mine: Vec<Record>,
    targets: Vec<Target>,
    info: Info,
}

/// Runs the test the options `o` ask for: opens the device, meets the peer, resolves the
/// run and connects the QPs, then runs the test's program. A TCP server takes its client
/// from `listener` where the caller keeps one across runs (`perftest`'s two tests), else
/// listens on `-p` for this run alone.
pub fn run(o: Options, listener: Option<&TcpListener>, out: &mut Output) -> Result<()> {
    let clock = Clock::new();
    let (run, mut peer) = start(o, listener, out)?;
    let info = Info::from(&run);
    let (res, mine, theirs) = connect_qps(&run, &mut peer, &info, out)?;
    let qkey = if run.connection.rdma_cm {
        UDP_QKEY
    } else {
        DEFAULT_QKEY
    };
    let targets = theirs
        .iter()
        .map(|r| Target {
            qkey,
            ..Target::from(r)
        })
        .collect();
    let test = run.test;
    let s = Session {
        run,
        out,
        clock,
        peer,
        res,
        mine,
        targets,
        info,
    };
    match test {
        Test::WriteBw | Test::ReadBw | Test::AtomicBw => s.rdma_bw(),
        Test::SendBw => s.send_bw(),
        Test::SendLat => s.send_lat(),
        Test::WriteLat => s.write_lat(),
        Test::ReadLat | Test::AtomicLat => s.read_lat(),
    }
}

/// Opens the device of the options `o`, meets the peer (a server's client taken from
/// `listener` if given) and settles the setup with it: the run, resolved once, and the peer.
fn start(o: Options, listener: Option<&TcpListener>, out: &mut Output) -> Result<(Run, Peer)> {
    out.write_str(&o.notes).ok();
    if !o.stderr_notes.is_empty() {
        out.error(o.stderr_notes.trim_end());
    }
    let dev = Device::open(&o.device)?;
    let setup = Setup::new(&dev, &o)?;
    out.write_str(&setup.said.stdout).ok();
    if !setup.said.stderr.is_empty() {
        out.error(setup.said.stderr.trim_end());
    }
    if !o.connection.is_client() {
        out.write_str(report::WAITING).ok();
    }
    out.flush();
    let mut peer = meet(&o.connection, listener)?;
    peer.set_timeout(EXCHANGE_TIMEOUT)?;
    let agreed = agree(&mut peer, &o, setup.port_mtu)?;
    let run = Run::resolve(o, dev, setup, agreed, out)?;
    Ok((run, peer))
}

/// Makes the QPs (through rdma_cm with `-R`), prints the banner described by `info`, swaps
/// the records with the peer and connects the QPs: the resources, this side's records and
/// the peer's.
fn connect_qps(
    run: &Run,
    peer: &mut Peer,
    info: &Info,
    out: &mut Output,
) -> Result<(Resources, Vec<Record>, Vec<Record>)> {
    let with_gid = run.uses_gid();
    type Connect<'a> = Box<dyn FnOnce(&[Record]) -> Result<Resources> + 'a>;
    let (mine, connect): (Vec<Record>, Connect<'_>) = if run.connection.rdma_cm {
        // perftest swaps an empty record before and after connecting through rdma_cm.
        let empty = Record::default();
        let pending = cm_qps::Pending::new(run)?;
        peer.hand_shake(&empty, with_gid)?;
        let qps = pending.connect(run)?;
        peer.hand_shake(&empty, with_gid)?;
        let mine = qps.records(run)?;
        (mine, Box::new(|theirs| qps.finish(run, theirs)))
    } else {
        let prepared = Prepared::new(run)?;
        let mine = prepared.records(run);
        (mine, Box::new(|theirs| prepared.connect(run, theirs)))
    };
    out.write_str(&report::banner(info)).ok();
    out.flush();
    let (res, theirs) = swap_records(peer, &mine, run, connect, out)?;
    out.flush();
    Ok((res, mine, theirs))
}

impl Session<'_> {
    /// The message sizes of the run.
    fn sizes(&self) -> Vec<u64> {
        self.run.sizes.list.clone()
    }

    /// The result table's header, bandwidth or latency.
    fn print_header(&mut self) {
        let header = if self.run.test.is_bw() {
            report::bw_header(self.run.report.gbits)
        } else {
            report::lat_header(self.run.traffic.duration.is_some())
        };
        self.print(&header);
    }

    fn plan(&self, size: u64) -> Plan {
        Plan::new(&self.run, size)
    }

    fn hs0(&mut self) -> Result<()> {
        self.peer.sync(&self.mine[0], self.run.uses_gid())
    }

    /// Waits for the peer's end of a measured part, however long the run may take.
    fn hs0_after_run(&mut self) -> Result<()> {
        self.peer.set_timeout(run_timeout(&self.run))?;
        self.hs0()?;
        self.peer.set_timeout(EXCHANGE_TIMEOUT)
    }

    fn close(&mut self) -> Result<()> {
        self.peer.set_timeout(run_timeout(&self.run))?;
        self.peer.close(&self.mine[0], self.run.uses_gid())
    }

    fn print(&mut self, text: &str) {
        self.out.write_str(text).ok();
        self.out.flush();
    }

    fn write_json(&mut self, text: &str) {
        let Some(path) = &self.run.report.out_json else {
            return;
        };
        use std::os::unix::fs::OpenOptionsExt;
        let written = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()));
        if written.is_err() {
            let msg = format!("failed to open {path}");
            self.out.error(&msg);
        }
    }

    fn print_bw(&mut self, r: &BwReport) {
        let gbits = self.run.report.gbits;
        let line = report::bw_line(r, gbits);
        self.print(&line);
        let json = report::json_bw(&self.info, r, gbits);
        self.write_json(&json);
    }

    fn exchange_reports(&mut self, r: &BwReport) -> Result<BwReport> {
        self.peer.set_timeout(run_timeout(&self.run))?;
        let theirs = self.peer.exchange_reports(&r.into())?;
        self.peer.set_timeout(EXCHANGE_TIMEOUT)?;
        Ok(theirs.into())
    }

    /// A bidirectional result: both sides' sum, then with `--report-both` (one size only)
    /// each side's own numbers.
    fn print_duplex(&mut self, mine: &BwReport) -> Result<()> {
        let theirs = self.exchange_reports(mine)?;
        self.print_bw(&mine.plus(&theirs));
        if self.run.report.report_both && !self.run.sizes.all {
            self.report_both(mine, &theirs);
        }
        Ok(())
    }

    /// `--report-both`: each side's own numbers after the sum.
    fn report_both(&mut self, mine: &BwReport, theirs: &BwReport) {
        let gbits = self.run.report.gbits;
        let header = report::bw_header(gbits);
        let title = |which: &str| {
            let pad = if self.run.test == Test::AtomicBw {
                ""
            } else {
                " "
            };
            format!("{RESULT_LINE}\n {which} results:{pad}\n")
        };
        let mut text = title("Local");
        text.push_str(&header);
        text.push_str(&report::bw_line(mine, gbits));
        text.push_str(&title("Remote"));
        text.push_str(&header);
        text.push_str(&report::bw_line(theirs, gbits));
        self.print(&text);
    }

    fn report(&self, samples: &BwSamples, size: u64) -> BwReport {
        stats::bw_report(
            samples,
            &self.run.bw_shape(size),
            self.clock.ticks_per_sec(),
        )
    }

    /// `ib_write_bw`, `ib_read_bw`, `ib_atomic_bw`.
    fn rdma_bw(mut self) -> Result<()> {
        self.print_header();
        let sizes = self.sizes();
        if !self.run.connection.is_client() && !self.run.traffic.duplex {
            self.hs0_after_run()?;
            let theirs = self.exchange_reports(&BwReport::default())?;
            self.print_bw(&theirs);
            self.print(RESULT_LINE);
            return self.close();
        }
        let mut last = BwReport::default();
        for &size in &sizes {
            let plan = self.plan(size);
            let mut wd = Watchdog::new(&self.peer, &self.clock);
            if self.run.traffic.warm_up {
                engine::warm_up(&mut self.res, &plan, &self.targets, &mut wd)?;
            }
            if self.run.traffic.duplex {
                self.hs0()?;
            }
            let mut wd = Watchdog::new(&self.peer, &self.clock);
            let samples =
                engine::bw_send(&mut self.res, &plan, &self.targets, &self.clock, &mut wd)?;
            if self.run.traffic.duplex && self.run.sizes.all {
                self.hs0_after_run()?;
            }
            let mine = self.report(&samples, size);
            if self.run.traffic.duplex {
                self.print_duplex(&mine)?;
            } else {
                self.print_bw(&mine);
            }
            last = mine;
        }
        self.print(RESULT_LINE);
        if self.run.connection.is_client() && !self.run.traffic.duplex {
            self.hs0_after_run()?;
            self.exchange_reports(&last)?;
        }
        self.close()
    }

    /// `ib_send_bw`.
    fn send_bw(mut self) -> Result<()> {
        self.print_header();
        let sizes = self.sizes();
        let client = self.run.connection.is_client();
        for &size in &sizes {
            let plan = self.plan(size);
            if !client || self.run.traffic.duplex {
                engine::post_receives(&self.res.queues, size, plan.rx_depth, true)?;
            }
            self.hs0()?;
            let mut wd = Watchdog::new(&self.peer, &self.clock);
            let samples = if self.run.traffic.duplex {
                engine::bw_bidir(
                    &mut self.res,
                    &plan,
                    &self.targets,
                    client,
                    &self.clock,
                    &mut wd,
                )?
            } else if client {
                engine::bw_send(&mut self.res, &plan, &self.targets, &self.clock, &mut wd)?
            } else {
                engine::bw_recv(&mut self.res, &plan, &self.targets, &self.clock, &mut wd)?
            };
            let mine = self.report(&samples, size);
            let duration = self.run.traffic.duration.is_some();
            if !self.run.traffic.duplex || duration {
                self.print_bw(&mine);
            }
            if self.run.traffic.duplex && !duration {
                self.print_duplex(&mine)?;
            }
            if self.run.sizes.all {
                self.hs0_after_run()?;
            }
        }
        self.print(RESULT_LINE);
        self.close()
    }

    /// Prints a latency result: samples with `-U`/`-H`, the line, the JSON file.
    fn print_lat(&mut self, size: u64, s: &LatSamples) {
        let verb = self.run.test.verb();
        let rtt = if matches!(verb, Verb::Read | Verb::Atomic) {
            1.0
        } else {
            2.0
        };
        let per_usec = self.clock.ticks_per_sec() / 1e6;
        if self.run.traffic.duration.is_some() {
            let (latency, tps) = stats::lat_duration(s.interval, s.iters, per_usec, rtt);
            let line = report::lat_duration_line(size, s.iters, latency, tps);
            self.print(&line);
            let json = report::json_lat_duration(&self.info, size, s.iters, latency, tps);
            self.write_json(&json);
            return;
        }
        let r = stats::lat_report(&s.tposted, per_usec, rtt);
        let mut text = String::new();
        if self.run.report.unsorted {
            text.push_str(&report::samples(&r.unsorted));
        }
        if self.run.report.histogram {
            text.push_str(&report::samples(&r.sorted_kept));
        }
        if self.run.report.unsorted || self.run.report.histogram {
            text.push_str(&report::lat_header(false));
        }
        let _ = write!(
            text,
            "{}",
            report::lat_line(size, self.run.traffic.iters, &r)
        );
        self.print(&text);
        let json = report::json_lat(&self.info, size, self.run.traffic.iters, &r);
        self.write_json(&json);
    }

    /// The latency table: `measure` runs the test's loop once per size.
    fn lat_table(
        &mut self,
        mut measure: impl FnMut(&mut Self, &Plan) -> Result<LatSamples>,
    ) -> Result<()> {
        self.print_header();
        for size in self.sizes() {
            let plan = self.plan(size);
            let samples = measure(self, &plan)?;
            self.print_lat(size, &samples);
        }
        Ok(())
    }

    /// `ib_send_lat`.
    fn send_lat(mut self) -> Result<()> {
        let client = self.run.connection.is_client();
        self.lat_table(|s, plan| {
            engine::post_receives(&s.res.queues, plan.size, plan.rx_depth, false)?;
            s.hs0()?;
            let mut wd = Watchdog::new(&s.peer, &s.clock);
            engine::lat_send(&mut s.res, plan, &s.targets, client, &s.clock, &mut wd)
        })?;
        self.print(RESULT_LINE);
        self.close()
    }

    /// `ib_write_lat`: no closing exchange, as perftest.
    fn write_lat(mut self) -> Result<()> {
        let client = self.run.connection.is_client();
        self.lat_table(|s, plan| {
            let mut wd = Watchdog::new(&s.peer, &s.clock);
            engine::lat_write(&mut s.res, plan, &s.targets, client, &s.clock, &mut wd)
        })?;
        self.print(RESULT_LINE);
        Ok(())
    }

    /// `ib_read_lat`, `ib_atomic_lat`: only the client measures.
    fn read_lat(mut self) -> Result<()> {
        if self.run.connection.is_client() {
            self.lat_table(|s, plan| {
                let mut wd = Watchdog::new(&s.peer, &s.clock);
                engine::lat_read(&mut s.res, plan, &s.targets, &s.clock, &mut wd)
            })?;
        }
        // The separator comes after the closing exchange, as in perftest.
        self.close()?;
        self.print(RESULT_LINE);
        Ok(())
    }
}
