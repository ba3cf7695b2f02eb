//! `rdma_client`: the client of rdma-core's smallest rdma_cm example pair (librdmacm's
//! `rdma_client.c`, package rdmacm-utils), a work-alike: its options (`-s server_address`,
//! default `127.0.0.1`; `-p port_number`, default 7471), its output (`rdma_client: start`,
//! `rdma_client: end N`, and `perror`'s text on stderr for a failed step) and its exit
//! status (N's low byte), so that it runs against the C `rdma_server` and ours
//! (`examples/rdma_server.rs`).
//!
//! The exchange, over one RC connection in the TCP port space: the client posts a
//! receive of 16 bytes before it connects, sends 16 bytes (zeroes) once the connection is
//! up, waits for the send and then the server's 16 bytes to complete, and disconnects.
//! C runs `rdma_create_ep` on a synchronous id; here the id is on an event channel, and
//! each step waits for the event that ends it, as librdmacm does inside the synchronous
//! calls (`rdma_disconnect` too waits for the id's next event). As in C, the QP has one
//! send and one receive request of one entry each, 16 bytes of inline data and a
//! completion for every send; its two CQs each have a completion channel, on which the
//! waits for a completion sleep (`rdma_get_send_comp`, `rdma_get_recv_comp`); the send is
//! inline when the QP got 16 bytes of inline data. Unlike C, the send buffer is
//! registered even when it goes inline: this crate's entries always name a region.
//!
//! `cargo run --example rdma_client -- [-s server_address] [-p port_number]`

use std::process::ExitCode;
use std::time::Duration;

use rdma_verbs::cm::{
    ffi, getaddrinfo, AddrHints, CmEvent, CmEventKind, CmId, ConnParam, EventChannel, PortSpace,
};
use rdma_verbs::{AccessFlags, CompletionQueue, QpType, RecvRequest, SendRequest, WorkCompletion};
use rdma_verbs_tools::cli::{exit_code, getopt_long, strerror, verbs_error_text, Item};

/// The message size, both ways.
const MSG: usize = 16;
/// What `rdma_create_ep` gives address and route resolution.
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

struct Options {
    server: String,
    port: String,
}

/// The command line, or the exit status after C's usage text.
fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("rdma_client", String::as_str);
    let mut o = Options {
        server: "127.0.0.1".into(),
        port: "7471".into(),
    };
    for item in getopt_long(&args[1.min(args.len())..], "s:p:", &[]).items {
        match item {
            Item::Opt('s', value) => o.server = value.unwrap_or_default(),
            Item::Opt(_, value) => o.port = value.unwrap_or_default(),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                println!("usage: {prog}");
                println!("\t[-s server_address]");
                println!("\t[-p port_number]");
                return Err(ExitCode::from(1));
            }
        }
    }
    Ok(o)
}

/// A failed step: `perror`'s text of `what` (on stderr) and librdmacm's -1.
fn perror(what: &str, err: &rdma_verbs::Error) -> i32 {
    eprintln!("{what}: {}", verbs_error_text(err));
    -1
}

/// What a synchronous librdmacm call makes of the event that ends it (`ucma_complete`):
/// success unless the event has a status, ECONNREFUSED for a reject, else the status as an
/// errno; an event other than `want` with no status is EINVAL here.
fn complete(event: &CmEvent, want: fn(&CmEventKind) -> bool) -> Result<(), i32> {
    match (&event.kind, event.status) {
        (CmEventKind::Rejected { .. }, _) => Err(libc::ECONNREFUSED),
        (kind, 0) if want(kind) => Ok(()),
        (_, 0) => Err(libc::EINVAL),
        (_, status) => Err(status.abs()),
    }
}

/// Waits for the event that ends a step on the client's one id.
fn wait(channel: &EventChannel, want: fn(&CmEventKind) -> bool) -> Result<(), String> {
    let event = channel.get_event().map_err(|e| verbs_error_text(&e))?;
    complete(&event, want).map_err(strerror)
}

/// The connection's objects, made as `rdma_create_ep` and `rdma_reg_msgs` make them.
struct Endpoint {
    channel: EventChannel,
    id: CmId,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
}

/// `rdma_create_ep` of an active id: resolves the address and route, then creates the QP
/// (on new CQs, each with a completion channel) in a PD of the device.
fn create_ep(dst: std::net::SocketAddr) -> Result<Endpoint, String> {
    let text = |e: rdma_verbs::Error| verbs_error_text(&e);
    let channel = EventChannel::new().map_err(text)?;
    let mut id = channel.create_id(PortSpace::Tcp).map_err(text)?;
    id.resolve_addr(None, dst, RESOLVE_TIMEOUT).map_err(text)?;
    wait(&channel, |k| matches!(k, CmEventKind::AddrResolved))?;
    id.resolve_route(RESOLVE_TIMEOUT).map_err(text)?;
    wait(&channel, |k| matches!(k, CmEventKind::RouteResolved))?;
    let ctx = id.context().map_err(text)?;
    let cq = || -> rdma_verbs::Result<CompletionQueue> {
        ctx.create_cq(1, Some(&ctx.create_comp_channel()?))
    };
    let (recv_cq, send_cq) = (cq().map_err(text)?, cq().map_err(text)?);
    let pd = ctx.alloc_pd().map_err(text)?;
    let qp = pd
        .create_qp(QpType::Rc, &send_cq, &recv_cq)
        .max_send_wr(1)
        .max_recv_wr(1)
        .max_send_sge(1)
        .max_recv_sge(1)
        .max_inline_data(MSG as u32)
        .sq_sig_all(true);
    id.create_qp(qp).map_err(text)?;
    Ok(Endpoint {
        channel,
        id,
        send_cq,
        recv_cq,
    })
}

/// Waits for one completion on `cq`, sleeping on its channel; its status is not looked
/// at, as C's `rdma_get_*_comp` callers do not.
fn completion(cq: &CompletionQueue) -> rdma_verbs::Result<()> {
    let mut wc = [WorkCompletion::default()];
    while cq.poll_wait(&mut wc, None)?.is_empty() {}
    Ok(())
}

/// The exchange on a connected endpoint whose receive is posted.
fn exchange(ep: &Endpoint, send: SendRequest<'_>) -> i32 {
    let Some(qp) = ep.id.qp() else {
        unreachable!("create_ep made the QP")
    };
    if let Err(e) = qp.post_send(&mut [send]) {
        return perror("rdma_post_send", &e.into_inner());
    }
    if let Err(e) = completion(&ep.send_cq) {
        return perror("rdma_get_send_comp", &e);
    }
    if let Err(e) = completion(&ep.recv_cq) {
        return perror("rdma_get_recv_comp", &e);
    }
    0
}

fn run(o: &Options) -> i32 {
    let hints = AddrHints {
        port_space: Some(PortSpace::Tcp),
        ..AddrHints::default()
    };
    let dst = match getaddrinfo(Some(&o.server), Some(&o.port), &hints) {
        Ok(info) => info.into_iter().find_map(|i| i.dst),
        Err(rdma_verbs::Error::AddrInfo { code, message }) => {
            println!("rdma_getaddrinfo: {message}");
            return code;
        }
        Err(e) => {
            println!("rdma_getaddrinfo: {}", verbs_error_text(&e));
            return -1;
        }
    };
    let ep = match dst
        .ok_or_else(|| strerror(libc::EINVAL))
        .and_then(create_ep)
    {
        Ok(ep) => ep,
        Err(e) => {
            eprintln!("rdma_create_ep: {e}");
            return -1;
        }
    };
    let Some(qp) = ep.id.qp() else {
        unreachable!("create_ep made the QP")
    };
    let inline = qp.max_inline_data() >= MSG as u32;
    if !inline {
        println!("rdma_client: device doesn't support IBV_SEND_INLINE, using sge sends");
    }
    let pd = qp.pd();
    let recv_mr = match pd.alloc_mr(MSG, AccessFlags::LOCAL_WRITE) {
        Ok(mr) => mr,
        Err(e) => return perror("rdma_reg_msgs for recv_msg", &e),
    };
    let send_mr = match pd.alloc_mr(MSG, AccessFlags::empty()) {
        Ok(mr) => mr,
        Err(e) => return perror("rdma_reg_msgs for send_msg", &e),
    };
    let (recv_sge, send_sge) = match (recv_mr.sge(..), send_mr.sge(..)) {
        (Ok(r), Ok(s)) => ([r], [s]),
        (Err(e), _) | (_, Err(e)) => return perror("rdma_post_recv", &e),
    };
    if let Err(e) = qp.post_recv(&mut [RecvRequest::new(0, &recv_sge)]) {
        return perror("rdma_post_recv", &e.into_inner());
    }
    // rdma_connect(id, NULL): the device's most reads and atomics each way (librdmacm's
    // RDMA_MAX_* asks for them), no flow control, 7 retries of each kind.
    let param = ConnParam {
        responder_resources: ffi::RDMA_MAX_RESP_RES as u8,
        initiator_depth: ffi::RDMA_MAX_INIT_DEPTH as u8,
        flow_control: false,
        ..ConnParam::default()
    };
    let connected = match ep.id.connect(&param) {
        Ok(()) => wait(&ep.channel, |k| {
            matches!(k, CmEventKind::Established { .. })
        }),
        Err(e) => Err(verbs_error_text(&e)),
    };
    if let Err(e) = connected {
        eprintln!("rdma_connect: {e}");
        return -1;
    }
    let send = SendRequest::send(0, &send_sge);
    let ret = exchange(&ep, if inline { send.inline() } else { send });
    // rdma_disconnect: its result is not looked at; it waits for the id's next event.
    if ep.id.disconnect().is_ok() {
        let _ = ep.channel.get_event();
    }
    ret
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    println!("rdma_client: start");
    let ret = run(&o);
    println!("rdma_client: end {ret}");
    exit_code(ret)
}
