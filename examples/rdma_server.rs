//! `rdma_server`: the server of rdma-core's smallest rdma_cm example pair (librdmacm's
//! `rdma_server.c`, package rdmacm-utils), a work-alike: its options (`-s server_address`
//! to listen on, default `0.0.0.0`; `-p port_number`, default 7471), its output
//! (`rdma_server: start`, `rdma_server: end N`, and `perror`'s text on stderr for a failed
//! step) and its exit status (N's low byte), so that it runs against the C `rdma_client`
//! and ours (`examples/rdma_client.rs`).
//!
//! The exchange, over one RC connection in the TCP port space: the server takes the first
//! connect request, creates its QP, posts a receive of 16 bytes before it accepts, waits
//! for the client's 16 bytes, sends 16 bytes (zeroes) back, waits for the send to complete,
//! disconnects and exits. C runs `rdma_create_ep` and `rdma_get_request` on a synchronous
//! id; here the ids are on an event channel, and each step waits for the event that ends
//! it, as librdmacm does inside the synchronous calls (`rdma_accept` waits for the
//! connection, `rdma_disconnect` for the id's next event). As in C, the QP has one send and
//! one receive request of one entry each, 16 bytes of inline data and a completion for
//! every send; its two CQs each have a completion channel, on which the waits for a
//! completion sleep; the send is inline when the QP got 16 bytes of inline data. Unlike C,
//! the send buffer is registered even when it goes inline: this crate's entries always
//! name a region.
//!
//! `cargo run --example rdma_server -- [-s server_address] [-p port_number]`

use std::process::ExitCode;

use rdma_verbs::cm::{
    ffi, getaddrinfo, AddrHints, CmEvent, CmEventKind, CmId, ConnParam, EventChannel, IdHandle,
    PortSpace,
};
use rdma_verbs::{AccessFlags, CompletionQueue, QpType, RecvRequest, SendRequest, WorkCompletion};
use rdma_verbs_tools::cli::{exit_code, getopt_long, strerror, verbs_error_text, Item};

/// The message size, both ways.
const MSG: usize = 16;

struct Options {
    server: String,
    port: String,
}

/// The command line, or the exit status after C's usage text.
fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("rdma_server", String::as_str);
    let mut o = Options {
        server: "0.0.0.0".into(),
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

/// What a synchronous librdmacm call makes of the event that ends it (`ucma_complete`,
/// `rdma_get_request`): success unless the event has a status, ECONNREFUSED for a reject,
/// else the status as an errno; an event other than `want` with no status is EINVAL here.
fn complete(event: &CmEvent, want: fn(&CmEventKind) -> bool) -> Result<(), i32> {
    match (&event.kind, event.status) {
        (CmEventKind::Rejected { .. }, _) => Err(libc::ECONNREFUSED),
        (kind, 0) if want(kind) => Ok(()),
        (_, 0) => Err(libc::EINVAL),
        (_, status) => Err(status.abs()),
    }
}

/// Waits for the next event of the id `of` (the listening id's events stay unread in C,
/// on a channel of their own: here they are dropped, a connect request with its new id).
fn next_event(channel: &EventChannel, of: IdHandle) -> Result<CmEvent, String> {
    loop {
        let event = channel.get_event().map_err(|e| verbs_error_text(&e))?;
        if event.id == of {
            return Ok(event);
        }
    }
}

/// The accepted connection's objects, as `rdma_get_request` makes them.
struct Endpoint {
    id: CmId,
    send_cq: CompletionQueue,
    recv_cq: CompletionQueue,
}

/// `rdma_get_request`: the next connect request on `listen`, with its QP (on new CQs,
/// each with a completion channel, in a PD of the device).
fn get_request(channel: &EventChannel, listen: &CmId) -> Result<Endpoint, String> {
    let text = |e: rdma_verbs::Error| verbs_error_text(&e);
    let event = next_event(channel, listen.handle())?;
    complete(&event, |k| matches!(k, CmEventKind::ConnectRequest { .. })).map_err(strerror)?;
    let CmEventKind::ConnectRequest { mut id, .. } = event.kind else {
        unreachable!("complete checked the kind")
    };
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

/// The exchange on an accepted endpoint whose receive is posted.
fn exchange(ep: &Endpoint, send: SendRequest<'_>) -> i32 {
    let Some(qp) = ep.id.qp() else {
        unreachable!("get_request made the QP")
    };
    if let Err(e) = completion(&ep.recv_cq) {
        return perror("rdma_get_recv_comp", &e);
    }
    if let Err(e) = qp.post_send(&mut [send]) {
        return perror("rdma_post_send", &e.into_inner());
    }
    if let Err(e) = completion(&ep.send_cq) {
        return perror("rdma_get_send_comp", &e);
    }
    0
}

/// Accepts the connection of `ep`, then exchanges the messages and disconnects.
fn serve(channel: &EventChannel, ep: &Endpoint) -> i32 {
    let Some(qp) = ep.id.qp() else {
        unreachable!("get_request made the QP")
    };
    let inline = qp.max_inline_data() >= MSG as u32;
    if !inline {
        println!("rdma_server: device doesn't support IBV_SEND_INLINE, using sge sends");
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
    // rdma_accept(id, NULL): the reads and atomics the request asked for, within the
    // device's (librdmacm's RDMA_MAX_* asks for that), no flow control, 7 retries.
    let param = ConnParam {
        responder_resources: ffi::RDMA_MAX_RESP_RES as u8,
        initiator_depth: ffi::RDMA_MAX_INIT_DEPTH as u8,
        flow_control: false,
        ..ConnParam::default()
    };
    let established = |e: &CmEvent| {
        complete(e, |k| matches!(k, CmEventKind::Established { .. })).map_err(strerror)
    };
    let accepted = match ep.id.accept(&param) {
        Ok(()) => next_event(channel, ep.id.handle()).and_then(|e| established(&e)),
        Err(e) => Err(verbs_error_text(&e)),
    };
    if let Err(e) = accepted {
        eprintln!("rdma_accept: {e}");
        return -1;
    }
    let send = SendRequest::send(0, &send_sge);
    let ret = exchange(ep, if inline { send.inline() } else { send });
    // rdma_disconnect: its result is not looked at; it waits for the id's next event.
    if ep.id.disconnect().is_ok() {
        let _ = next_event(channel, ep.id.handle());
    }
    ret
}

fn run(o: &Options) -> i32 {
    let hints = AddrHints {
        passive: true,
        port_space: Some(PortSpace::Tcp),
        ..AddrHints::default()
    };
    let src = match getaddrinfo(Some(&o.server), Some(&o.port), &hints) {
        Ok(info) => info.into_iter().find_map(|i| i.src),
        Err(rdma_verbs::Error::AddrInfo { code, message }) => {
            println!("rdma_getaddrinfo: {message}");
            return code;
        }
        Err(e) => {
            println!("rdma_getaddrinfo: {}", verbs_error_text(&e));
            return -1;
        }
    };
    // rdma_create_ep of a passive id: created and bound.
    let bound = src.ok_or_else(|| strerror(libc::EINVAL)).and_then(|src| {
        let channel = EventChannel::new().map_err(|e| verbs_error_text(&e))?;
        let listen = channel
            .create_id(PortSpace::Tcp)
            .map_err(|e| verbs_error_text(&e))?;
        listen.bind(src).map_err(|e| verbs_error_text(&e))?;
        Ok((channel, listen))
    });
    let (channel, listen) = match bound {
        Ok(bound) => bound,
        Err(e) => {
            eprintln!("rdma_create_ep: {e}");
            return -1;
        }
    };
    if let Err(e) = listen.listen(0) {
        return perror("rdma_listen", &e);
    }
    match get_request(&channel, &listen) {
        Ok(ep) => serve(&channel, &ep),
        Err(e) => {
            eprintln!("rdma_get_request: {e}");
            -1
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    println!("rdma_server: start");
    let ret = run(&o);
    println!("rdma_server: end {ret}");
    exit_code(ret)
}
