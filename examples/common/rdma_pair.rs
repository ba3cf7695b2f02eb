//! What `rdma_server` and `rdma_client` (librdmacm's smallest example pair) share: their
//! options, the endpoint `rdma_create_ep` and `rdma_get_request` make, the synchronous
//! calls' event handling, and the messages registered and the receive posted before the
//! connection is up. Included by both examples (`#[path]`).

use std::net::SocketAddr;
use std::process::ExitCode;

use rdma_verbs::cm::{
    ffi, getaddrinfo, AddrHints, CmEvent, CmEventKind, CmId, ConnParam, PortSpace,
};
use rdma_verbs::{AccessFlags, CompletionQueue, QpType, RecvRequest, SendRequest, WorkCompletion};
use rdma_verbs_tools::cli::{getopt_long, perror, print_usage, verbs_error_text, Item};

/// The message size, both ways.
pub const MSG: usize = 16;

pub struct Options {
    pub server: String,
    pub port: String,
}

/// The command line of `prog` (whose `-s` defaults to `server`), or the exit status after
/// C's usage text.
pub fn parse(args: &[String], prog: &str, server: &str) -> Result<Options, ExitCode> {
    let prog = args.first().map_or(prog, String::as_str);
    let mut o = Options {
        server: server.into(),
        port: "7471".into(),
    };
    for item in getopt_long(&args[1.min(args.len())..], "s:p:", &[]).items {
        match item {
            Item::Opt('s', value) => o.server = value.unwrap_or_default(),
            Item::Opt(_, value) => o.port = value.unwrap_or_default(),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                print_usage(prog, &["[-s server_address]", "[-p port_number]"]);
                return Err(ExitCode::from(1));
            }
        }
    }
    Ok(o)
}

/// A failed step: `perror`'s text of `what` (on stderr) and librdmacm's -1.
pub fn failed(what: &str, err: &rdma_verbs::Error) -> i32 {
    perror(what, err);
    -1
}

/// `rdma_getaddrinfo` of the options in the TCP port space: the address to bind (`passive`)
/// or to connect to; a lookup that fails prints C's line and gives its return value.
pub fn lookup(o: &Options, passive: bool) -> Result<Option<SocketAddr>, i32> {
    let hints = AddrHints::new().passive(passive).port_space(PortSpace::Tcp);
    match getaddrinfo(Some(&o.server), Some(&o.port), &hints) {
        Ok(info) => Ok(info
            .into_iter()
            .find_map(|i| if passive { i.src } else { i.dst })),
        Err(rdma_verbs::Error::AddrInfo { code, message }) => {
            println!("rdma_getaddrinfo: {message}");
            Err(code)
        }
        Err(e) => {
            println!("rdma_getaddrinfo: {}", verbs_error_text(&e));
            Err(-1)
        }
    }
}

/// What a synchronous librdmacm call makes of the event that ends it (`ucma_complete`,
/// `rdma_get_request`): success unless the event has a status, ECONNREFUSED for a reject,
/// else the status as an errno; an event other than `want` with no status is EINVAL here.
pub fn complete(event: &CmEvent, want: fn(&CmEventKind) -> bool) -> Result<(), i32> {
    match (&event.kind, event.status) {
        (CmEventKind::Rejected { .. }, _) => Err(libc::ECONNREFUSED),
        (kind, 0) if want(kind) => Ok(()),
        (_, 0) => Err(libc::EINVAL),
        (_, status) => Err(status.abs()),
    }
}

/// `rdma_connect` and `rdma_accept` with no parameters: the device's most reads and atomics
/// each way (librdmacm's `RDMA_MAX_*` asks for them), no flow control, 7 retries of each
/// kind.
pub fn null_conn_param() -> ConnParam<'static> {
    ConnParam::new()
        .max_dest_rd_atomic(ffi::RDMA_MAX_RESP_RES as u8)
        .max_rd_atomic(ffi::RDMA_MAX_INIT_DEPTH as u8)
        .flow_control(false)
}

/// A connection's id with its QP and CQs, as `rdma_create_ep` and `rdma_get_request` make
/// them.
pub struct Endpoint {
    pub id: CmId,
    pub send_cq: CompletionQueue,
    pub recv_cq: CompletionQueue,
}

impl Endpoint {
    /// Creates `id`'s QP (on new CQs, each with a completion channel, in a PD of the
    /// device): one send and one receive request of one entry, 16 bytes of inline data, a
    /// completion for every send.
    pub fn new(mut id: CmId) -> Result<Endpoint, String> {
        let text = |e: rdma_verbs::Error| verbs_error_text(&e);
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

    /// `rdma_reg_msgs` of both messages and `rdma_post_recv` of the receive, as C does
    /// before it connects or accepts; then `then` with the send (inline when the QP got
    /// 16 bytes of inline data; `prog` says so when it did not), while the messages live.
    pub fn with_messages(&self, prog: &str, then: impl FnOnce(SendRequest<'_>) -> i32) -> i32 {
        let Some(qp) = self.id.qp() else {
            unreachable!("Endpoint::new made the QP")
        };
        let inline = qp.max_inline_data() >= MSG as u32;
        if !inline {
            println!("{prog}: device doesn't support IBV_SEND_INLINE, using sge sends");
        }
        let pd = qp.pd();
        let recv_mr = match pd.alloc_mr(MSG, AccessFlags::LOCAL_WRITE) {
            Ok(mr) => mr,
            Err(e) => return failed("rdma_reg_msgs for recv_msg", &e),
        };
        let send_mr = match pd.alloc_mr(MSG, AccessFlags::empty()) {
            Ok(mr) => mr,
            Err(e) => return failed("rdma_reg_msgs for send_msg", &e),
        };
        let (recv_sge, send_sge) = match (recv_mr.sge(..), send_mr.sge(..)) {
            (Ok(r), Ok(s)) => ([r], [s]),
            (Err(e), _) | (_, Err(e)) => return failed("rdma_post_recv", &e),
        };
        if let Err(e) = qp.post_recv(&mut [RecvRequest::new(0, &recv_sge)]) {
            return failed("rdma_post_recv", &e.into_inner());
        }
        let send = SendRequest::send(0, &send_sge);
        then(if inline { send.inline() } else { send })
    }

    /// Posts `send` and waits for its completion (`rdma_post_send`, `rdma_get_send_comp`).
    pub fn send(&self, send: SendRequest<'_>) -> i32 {
        let Some(qp) = self.id.qp() else {
            unreachable!("Endpoint::new made the QP")
        };
        if let Err(e) = qp.post_send(&mut [send]) {
            return failed("rdma_post_send", &e.into_inner());
        }
        match completion(&self.send_cq) {
            Ok(()) => 0,
            Err(e) => failed("rdma_get_send_comp", &e),
        }
    }

    /// Waits for the posted receive to complete (`rdma_get_recv_comp`).
    pub fn recv(&self) -> i32 {
        match completion(&self.recv_cq) {
            Ok(()) => 0,
            Err(e) => failed("rdma_get_recv_comp", &e),
        }
    }
}

/// Waits for one completion on `cq`, sleeping on its channel; its status is not looked
/// at, as C's `rdma_get_*_comp` callers do not.
fn completion(cq: &CompletionQueue) -> rdma_verbs::Result<()> {
    let mut wc = [WorkCompletion::default()];
    while cq.poll_wait(&mut wc, None)?.is_empty() {}
    Ok(())
}
