//! `cmtime`: rdma_cm connection set-up, timed step by step, a work-alike of rdma-core's
//! librdmacm example of the same name: its options (`-s server -b bind -c connections -p
//! port -r retries -t timeout_ms`), its output and its protocol (RC connections with no
//! data), so that either side runs against the C program.
//!
//! The client creates `-c` ids, then takes every id through each step before the next step
//! starts (bind, resolve address, resolve route, create the QP, connect, disconnect), with
//! a thread reading the events that end the asynchronous steps, and prints per step the
//! total time, the slowest and fastest id and the time per connection. The server accepts
//! every request (creating its QP first) on one thread and disconnects on another, until it
//! is killed. As in C, the first QP's creation includes its two CQs, each with a completion
//! channel (what `rdma_create_qp` makes when given none), in the PD of the device, and the
//! later QPs share them (C's `rdma_create_qp` writes the CQs it made into the attributes
//! every creation is given).
//!
//! `cargo run --example cmtime -- [-s server] ...`

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use rdma_verbs::cm::{
    getaddrinfo, AddrHints, AddrInfo, CmEvent, CmEventKind, CmId, ConnParam, EventChannel,
    IdHandle, PortSpace,
};
use rdma_verbs::{CompletionChannel, CompletionQueue, ProtectionDomain, QpType};
use rdma_verbs_tools::cli::{atoi, getopt_long, print_usage, Item};

/// The steps, in C's order and words.
const STEPS: [&str; 8] = [
    "create id",
    "bind addr",
    "resolve addr",
    "resolve route",
    "create qp",
    "connect",
    "disconnect",
    "destroy",
];
const CREATE_ID: usize = 0;
const BIND: usize = 1;
const RESOLVE_ADDR: usize = 2;
const RESOLVE_ROUTE: usize = 3;
const CREATE_QP: usize = 4;
const CONNECT: usize = 5;
const DISCONNECT: usize = 6;
const DESTROY: usize = 7;

struct Options {
    dst: Option<String>,
    src: Option<String>,
    connections: usize,
    port: String,
    retries: i32,
    timeout: Duration,
}

/// The command line, or the exit status after C's usage text.
fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("cmtime", String::as_str);
    let mut o = Options {
        dst: None,
        src: None,
        connections: 100,
        port: "7471".into(),
        retries: 2,
        timeout: Duration::from_millis(2000),
    };
    for item in getopt_long(&args[1.min(args.len())..], "s:b:c:p:r:t:", &[]).items {
        let (opt, value) = match item {
            Item::Opt(opt, value) => (opt, value.unwrap_or_default()),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                print_usage(
                    prog,
                    &[
                        "[-s server_address]",
                        "[-b bind_address]",
                        "[-c connections]",
                        "[-p port_number]",
                        "[-r retries]",
                        "[-t timeout_ms]",
                    ],
                );
                return Err(ExitCode::from(1));
            }
        };
        match opt {
            's' => o.dst = Some(value),
            'b' => o.src = Some(value),
            'c' => o.connections = usize::try_from(atoi(&value)).unwrap_or(0),
            'p' => o.port = value,
            'r' => o.retries = atoi(&value),
            _ => o.timeout = Duration::from_millis(u64::try_from(atoi(&value)).unwrap_or(0)),
        }
    }
    Ok(o)
}

/// `rdma_getaddrinfo` as C's `get_rdma_addr`: the source address if given (looked up
/// passive, then handed to the destination's lookup as its source), else the destination
/// (with `passive` for a server).
fn rdma_addr(o: &Options, passive: bool) -> Result<AddrInfo, String> {
    let mut hints = AddrHints::new()
        .passive(passive)
        .port_space(PortSpace::Tcp)
        .qp_type(QpType::Rc);
    let lookup = |node: Option<&str>, service: Option<&str>, hints: &AddrHints| {
        getaddrinfo(node, service, hints)
            .map_err(|e| format!("getaddrinfo error: {e}"))?
            .into_iter()
            .next()
            .ok_or_else(|| "getaddrinfo error: no address".to_owned())
    };
    if passive {
        return lookup(o.src.as_deref(), Some(&o.port), &hints);
    }
    if let Some(src) = &o.src {
        if let Some(addr) = lookup(Some(src), None, &hints.passive(true))?.src {
            hints = hints.src(addr);
        }
    }
    lookup(o.dst.as_deref(), Some(&o.port), &hints)
}

/// The start and end of each step of one connection: nanoseconds after
/// [`Progress::base`], plus one (0: not reached). Atomics, as C's plain stores: the event
/// thread and the steps never wait for each other to write a time.
type Times = [[AtomicU64; 2]; 8];

/// What the event thread and the steps share.
struct Progress {
    base: Instant,
    times: Vec<Times>,
    completed: [AtomicUsize; 8],
    failed: Mutex<Vec<bool>>,
}

impl Progress {
    fn mark(&self, node: usize, step: usize, end: bool) {
        let ns = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.times[node][step][usize::from(end)].store(ns + 1, Ordering::Relaxed);
    }

    /// When `node` started (or, if `end`, ended) `step`.
    fn at(&self, node: usize, step: usize, end: bool) -> Option<Instant> {
        let ns = self.times[node][step][usize::from(end)].load(Ordering::Relaxed);
        ns.checked_sub(1)
            .map(|ns| self.base + Duration::from_nanos(ns))
    }

    fn complete(&self, node: usize, step: usize) {
        self.mark(node, step, true);
        self.completed[step].fetch_add(1, Ordering::SeqCst);
    }

    fn fail(&self, node: usize) {
        self.failed.lock().unwrap_or_else(PoisonError::into_inner)[node] = true;
    }

    fn failed(&self, node: usize) -> bool {
        self.failed.lock().unwrap_or_else(PoisonError::into_inner)[node]
    }
}

/// A resolution to retry: the node and its step.
type Retry = (usize, usize);

/// The client's event thread: ends each node's asynchronous step as C's handler does,
/// asking the main thread to retry a failed resolution while the node has retries left.
/// As C's, it waits for each event without a deadline until the process exits (a wait with
/// one would read the clock each time).
fn client_events(
    channel: EventChannel,
    nodes: HashMap<IdHandle, usize>,
    shared: Arc<Progress>,
    retries: Sender<Retry>,
    left: Vec<i32>,
) {
    let mut left = left;
    loop {
        let event: CmEvent = match channel.get_event() {
            Ok(event) => event,
            Err(e) => {
                eprintln!("failure in rdma_get_cm_event in process_server_events: {e}");
                return;
            }
        };
        let Some(&n) = nodes.get(&event.id) else {
            continue;
        };
        match event.kind {
            CmEventKind::AddrResolved => shared.complete(n, RESOLVE_ADDR),
            CmEventKind::RouteResolved => shared.complete(n, RESOLVE_ROUTE),
            CmEventKind::Established { .. } => shared.complete(n, CONNECT),
            CmEventKind::Disconnected => shared.complete(n, DISCONNECT),
            CmEventKind::AddrError | CmEventKind::RouteError => {
                let (step, what) = if matches!(event.kind, CmEventKind::AddrError) {
                    (RESOLVE_ADDR, "RDMA_CM_EVENT_ADDR_ERROR")
                } else {
                    (RESOLVE_ROUTE, "RDMA_CM_EVENT_ROUTE_ERROR")
                };
                let retry = left[n] != 0;
                left[n] -= 1;
                if retry && retries.send((n, step)).is_ok() {
                    continue;
                }
                println!("{what}, error: {}", event.status);
                shared.fail(n);
                shared.complete(n, step);
            }
            CmEventKind::ConnectError | CmEventKind::Unreachable | CmEventKind::Rejected { .. } => {
                println!("event: {}, error: {}", event_str(&event.kind), event.status);
                shared.fail(n);
                shared.complete(n, CONNECT);
            }
            _ => {}
        }
    }
}

/// `rdma_event_str` of the connection failures.
fn event_str(kind: &CmEventKind) -> &'static str {
    match kind {
        CmEventKind::ConnectError => "RDMA_CM_EVENT_CONNECT_ERROR",
        CmEventKind::Unreachable => "RDMA_CM_EVENT_UNREACHABLE",
        _ => "RDMA_CM_EVENT_REJECTED",
    }
}

/// The device's PD and the CQs of every QP, each CQ with its completion channel, as
/// `rdma_create_qp` makes them for the first QP.
struct Shared {
    pd: ProtectionDomain,
    send: (CompletionQueue, CompletionChannel),
    recv: (CompletionQueue, CompletionChannel),
}

/// Creates `id`'s QP (one send and one receive request, one SGE each) on the shared CQs,
/// which the first call makes with the PD.
fn create_qp(id: &mut CmId, objects: &mut Option<Shared>) -> rdma_verbs::Result<()> {
    if objects.is_none() {
        let ctx = id.context()?;
        let cq = || -> rdma_verbs::Result<(CompletionQueue, CompletionChannel)> {
            let channel = ctx.create_comp_channel()?;
            Ok((ctx.create_cq(1, Some(&channel))?, channel))
        };
        *objects = Some(Shared {
            pd: ctx.alloc_pd()?,
            recv: cq()?,
            send: cq()?,
        });
    }
    let Some(o) = objects.as_ref() else {
        unreachable!("made above")
    };
    let qp =
        o.pd.create_qp(QpType::Rc, &o.send.0, &o.recv.0)
            .max_send_wr(1)
            .max_recv_wr(1);
    id.create_qp(qp)?;
    Ok(())
}

/// Starts `step` on every node still without an error, then waits for the event thread to
/// end as many as started, retrying the resolutions it hands back.
fn async_step(
    step: usize,
    ids: &mut [CmId],
    shared: &Progress,
    retries: &Receiver<Retry>,
    mut start: impl FnMut(usize, &mut CmId) -> rdma_verbs::Result<()>,
) {
    let mut started = 0;
    for (n, id) in ids.iter_mut().enumerate() {
        if shared.failed(n) {
            continue;
        }
        shared.mark(n, step, false);
        if let Err(e) = start(n, id) {
            eprintln!("failure {}: {e}", STEPS[step]);
            shared.fail(n);
            continue;
        }
        started += 1;
    }
    // As C: spin, yielding, so that the step's end is seen at once.
    while shared.completed[step].load(Ordering::SeqCst) != started {
        match retries.try_recv() {
            Ok((n, step)) => {
                if start(n, &mut ids[n]).is_err() {
                    shared.fail(n);
                    shared.complete(n, step);
                }
            }
            Err(_) => thread::yield_now(),
        }
    }
}

fn run_client(o: &Options) -> Result<(), String> {
    let channel = EventChannel::new().map_err(|e| e.to_string())?;
    let n = o.connections;
    let shared = Arc::new(Progress {
        base: Instant::now(),
        times: (0..n).map(|_| Times::default()).collect(),
        completed: Default::default(),
        failed: Mutex::new(vec![false; n]),
    });
    let mut totals = [[None::<Instant>; 2]; 8];

    println!("creating id");
    totals[CREATE_ID][0] = Some(Instant::now());
    let mut ids = Vec::with_capacity(n);
    for i in 0..n {
        shared.mark(i, CREATE_ID, false);
        ids.push(
            channel
                .create_id(PortSpace::Tcp)
                .map_err(|e| e.to_string())?,
        );
        shared.mark(i, CREATE_ID, true);
    }
    totals[CREATE_ID][1] = Some(Instant::now());

    let rai = rdma_addr(o, false)?;
    let dst = rai.dst.ok_or("getaddrinfo error: no destination")?;
    let nodes = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.handle(), i))
        .collect();
    let (retry_tx, retry_rx) = mpsc::channel();
    {
        let (channel, shared) = (channel.clone(), Arc::clone(&shared));
        let left = vec![o.retries; n];
        thread::spawn(move || client_events(channel, nodes, shared, retry_tx, left));
    }

    if let Some(src) = rai.src.filter(|_| o.src.is_some()) {
        println!("binding source address");
        totals[BIND][0] = Some(Instant::now());
        for (i, id) in ids.iter().enumerate() {
            shared.mark(i, BIND, false);
            match id.bind(src) {
                Ok(()) => shared.mark(i, BIND, true),
                Err(e) => {
                    eprintln!("failure bind addr: {e}");
                    shared.fail(i);
                }
            }
        }
        totals[BIND][1] = Some(Instant::now());
    }
    let src = rai.src;

    println!("resolving address");
    totals[RESOLVE_ADDR][0] = Some(Instant::now());
    async_step(RESOLVE_ADDR, &mut ids, &shared, &retry_rx, |_, id| {
        id.resolve_addr(src, dst, o.timeout)
    });
    totals[RESOLVE_ADDR][1] = Some(Instant::now());

    println!("resolving route");
    totals[RESOLVE_ROUTE][0] = Some(Instant::now());
    async_step(RESOLVE_ROUTE, &mut ids, &shared, &retry_rx, |_, id| {
        id.resolve_route(o.timeout)
    });
    totals[RESOLVE_ROUTE][1] = Some(Instant::now());

    println!("creating qp");
    let mut objects = None;
    totals[CREATE_QP][0] = Some(Instant::now());
    for (i, id) in ids.iter_mut().enumerate() {
        if shared.failed(i) {
            continue;
        }
        shared.mark(i, CREATE_QP, false);
        match create_qp(id, &mut objects) {
            Ok(()) => shared.mark(i, CREATE_QP, true),
            Err(e) => {
                eprintln!("failure creating qp: {e}");
                shared.fail(i);
            }
        }
    }
    totals[CREATE_QP][1] = Some(Instant::now());

    println!("connecting");
    let param = ConnParam::new()
        .max_dest_rd_atomic(1)
        .max_rd_atomic(1)
        .retry_cnt(u8::try_from(o.retries.clamp(0, 7)).unwrap_or(7));
    totals[CONNECT][0] = Some(Instant::now());
    async_step(CONNECT, &mut ids, &shared, &retry_rx, |_, id| {
        id.connect(&param)
    });
    totals[CONNECT][1] = Some(Instant::now());

    println!("disconnecting");
    totals[DISCONNECT][0] = Some(Instant::now());
    // As C: each QP is destroyed right after its disconnect.
    async_step(DISCONNECT, &mut ids, &shared, &retry_rx, |_, id| {
        let done = id.disconnect();
        drop(id.take_qp());
        done
    });
    totals[DISCONNECT][1] = Some(Instant::now());

    println!("destroying id");
    totals[DESTROY][0] = Some(Instant::now());
    // As C, whose PD librdmacm deallocates with the last id: the PD and CQs go in this
    // step, before the ids, so the context has nothing left to keep open when the last id
    // goes (else it would take librdmacm's device list then).
    drop(objects);
    for (i, id) in ids.into_iter().enumerate() {
        shared.mark(i, DESTROY, false);
        drop(id);
        shared.mark(i, DESTROY, true);
    }
    totals[DESTROY][1] = Some(Instant::now());

    print!("{}", table(&shared, &totals, o.src.is_some()));
    Ok(())
}

/// Microseconds from `start` to `end` (0 when either is missing), as C's `diff_us` of two
/// `gettimeofday`s: whole microseconds, in a `float`.
fn diff_us(start: Option<Instant>, end: Option<Instant>) -> Option<f32> {
    let (start, end) = (start?, end?);
    Some(end.saturating_duration_since(start).as_micros() as f32)
}

/// C's `show_perf`.
fn table(nodes: &Progress, totals: &[[Option<Instant>; 2]; 8], bound: bool) -> String {
    let mut out = String::from("step              total ms     max ms     min us  us / conn\n");
    for (step, name) in STEPS.iter().enumerate() {
        if step == BIND && !bound {
            continue;
        }
        let (mut max, mut min) = (0f32, 999_999_999f32);
        for node in 0..nodes.times.len() {
            if let Some(us) = diff_us(nodes.at(node, step, false), nodes.at(node, step, true)) {
                max = max.max(us);
                min = min.min(us);
            }
        }
        let us = diff_us(totals[step][0], totals[step][1]).unwrap_or(0.0);
        let conns = nodes.times.len() as f32;
        out.push_str(&format!(
            "{name:<13}: {:11.2}{:11.2}{:11.2}{:11.2}\n",
            us / 1000.,
            max / 1000.,
            min,
            us / conns
        ));
    }
    out
}

/// The server: accepts every request (its QP first) on one thread, disconnects and
/// destroys on another, until killed.
fn run_server(o: &Options) -> Result<(), String> {
    let channel = EventChannel::new().map_err(|e| e.to_string())?;
    let listen = channel
        .create_id(PortSpace::Tcp)
        .map_err(|e| format!("listen request failed: {e}"))?;
    let rai = rdma_addr(o, true)?;
    let src = rai.src.ok_or("getrdmaaddr error: no address")?;
    listen
        .bind(src)
        .map_err(|e| format!("bind address failed: {e}"))?;
    listen
        .listen(0)
        .map_err(|e| format!("failure trying to listen: {e}"))?;

    let live: Arc<Mutex<HashMap<IdHandle, CmId>>> = Arc::default();
    let (req_tx, req_rx) = mpsc::channel::<CmId>();
    let (disc_tx, disc_rx) = mpsc::channel::<IdHandle>();
    {
        let live = Arc::clone(&live);
        thread::spawn(move || {
            let mut objects = None;
            for mut id in req_rx {
                match create_qp(&mut id, &mut objects) {
                    Ok(()) => {}
                    Err(e) => {
                        eprintln!("failure creating qp: {e}");
                        println!("failing connection request");
                        let _ = id.reject(&[]);
                        continue;
                    }
                };
                // Kept before the accept: its disconnect may come at once.
                let mut live = live.lock().unwrap_or_else(PoisonError::into_inner);
                let handle = id.handle();
                if let Err(e) = id.accept(&ConnParam::new()) {
                    eprintln!("failure accepting: {e}");
                    println!("failing connection request");
                    let _ = id.reject(&[]);
                    continue;
                }
                live.insert(handle, id);
            }
        });
    }
    {
        let live = Arc::clone(&live);
        thread::spawn(move || {
            for handle in disc_rx {
                let entry = live
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&handle);
                if let Some(id) = entry {
                    let _ = id.disconnect();
                    drop(id);
                }
            }
        });
    }
    loop {
        let event = channel
            .get_event()
            .map_err(|e| format!("failure in rdma_get_cm_event in process_server_events: {e}"))?;
        match event.kind {
            CmEventKind::ConnectRequest { id, .. } => {
                let _ = req_tx.send(id);
            }
            CmEventKind::Disconnected => {
                let _ = disc_tx.send(event.id);
            }
            _ => {}
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let run = if o.dst.is_some() {
        run_client(&o)
    } else {
        run_server(&o)
    };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("{e}");
            ExitCode::FAILURE
        }
    }
}
