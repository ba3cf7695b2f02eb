//! `udaddy`: UD datagrams over rdma_cm, a work-alike of rdma-core's librdmacm example of the
//! same name: its options (`-s server -b bind -f address_format -P port_space -c
//! connections -C message_count -S message_size -t tos -p port_space_number`), its output
//! and exit status, and its protocol, so that either side runs against the C program.
//!
//! The client resolves the server (port 7174, fixed as in C) for each of `-c` ids in the
//! UDP port space, creates a UD QP on each once the route is resolved, posts its receives
//! and connects (SIDR); the server's answer (the `Established` event) carries the server
//! QP's address, number and Q_Key, through which the client sends its `-C` datagrams of
//! `-S` bytes, each with its own QP number as immediate data, then waits for as many
//! datagrams back. The server accepts `-c` requests (each id's QP made and its receives
//! posted first), waits for each id's datagrams, makes the address handle of the answer
//! from the first one's completion and GRH (`ibv_create_ah_from_wc`), its QP number from
//! the immediate data and the Q_Key from its own QP, and sends as many back.
//!
//! `cargo run --example udaddy -- [-s server] ...`

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use rdma_verbs::cm::{
    getaddrinfo, AddrHints, CmEvent, CmEventKind, CmId, CmOption, ConnParam, EventChannel,
    IdHandle, PortSpace, UdPeer,
};
use rdma_verbs::{
    AccessFlags, AddressHandle, CompletionQueue, MemoryRegion, ProtectionDomain, QpType,
    RecvRequest, SendRequest, WorkCompletion, GRH_LEN,
};
use rdma_verbs_tools::cli::{
    atoi, exit_code, getopt_long, perror, print_usage, strerror, strtol, strtoull,
    verbs_error_text, Item,
};

/// The port the server listens on and the client connects to (C has no option for it).
const PORT: &str = "7174";
/// The timeout of address and route resolution.
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

/// A C return value: 0, -1 for a failed librdmacm call, a negative errno, or a verb's
/// positive errno; the exit status is its low 8 bits.
type Ret = i32;

struct Options {
    dst: Option<String>,
    src: Option<String>,
    connections: i32,
    count: i32,
    size: i32,
    tos: Option<u8>,
    /// `-p`'s number (`ai_port_space`), which need not be a port space.
    port_space: i64,
    numeric_host: bool,
    /// `-f gid`: AF_IB addresses.
    af_ib: bool,
}

fn usage(prog: &str) {
    print_usage(
        prog,
        &[
            "[-s server_address]",
            "[-b bind_address]",
            "[-f address_format]",
            "    name, ip, ipv6, or gid",
            "[-P port_space]",
            "    udp or ipoib",
            "[-c connections]",
            "[-C message_count]",
            "[-S message_size]",
            "[-t type_of_service]",
        ],
    );
    println!(
        "\t[-p port_space - {:#x} for UDP (default), {:#x} for IPOIB]",
        PortSpace::Udp.raw().0,
        PortSpace::Ipoib.raw().0
    );
}

/// Whether `arg` starts with `prefix`, ignoring case (`strncasecmp(prefix, arg, len)`).
fn starts_with_nocase(arg: &str, prefix: &str) -> bool {
    arg.len() >= prefix.len()
        && arg.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

/// The command line, or the exit status after C's usage text.
fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("udaddy", String::as_str);
    let mut o = Options {
        dst: None,
        src: None,
        connections: 1,
        count: 10,
        size: 100,
        tos: None,
        port_space: i64::from(PortSpace::Udp.raw().0),
        numeric_host: false,
        af_ib: false,
    };
    let opts = "s:b:c:C:S:t:p:P:f:";
    for item in getopt_long(&args[1.min(args.len())..], opts, &[]).items {
        let (opt, value) = match item {
            Item::Opt(opt, value) => (opt, value.unwrap_or_default()),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                usage(prog);
                return Err(ExitCode::from(1));
            }
        };
        match opt {
            's' => o.dst = Some(value),
            'b' => o.src = Some(value),
            'c' => o.connections = atoi(&value),
            'C' => o.count = atoi(&value),
            'S' => o.size = atoi(&value),
            't' => o.tos = Some(strtoull(&value) as u8),
            'p' => o.port_space = strtol(&value),
            'f' if starts_with_nocase(&value, "ip") => o.numeric_host = true,
            'f' if starts_with_nocase(&value, "gid") => (o.numeric_host, o.af_ib) = (true, true),
            'f' if !starts_with_nocase(&value, "name") => {
                eprintln!("Warning: unknown address format");
            }
            'P' if starts_with_nocase(&value, "ipoib") => {
                o.port_space = i64::from(PortSpace::Ipoib.raw().0);
            }
            'P' if !starts_with_nocase(&value, "udp") => {
                eprintln!("Warning: unknown port space format");
            }
            _ => {}
        }
    }
    Ok(o)
}

/// The port space of `-p`'s number; `None` for a number that is none (which C's
/// `rdma_create_id` refuses with `EINVAL`).
fn port_space(o: &Options) -> Option<PortSpace> {
    i32::try_from(o.port_space)
        .ok()
        .and_then(PortSpace::from_raw)
}

/// `rdma_create_id` in `-p`'s port space; the error is `perror`'s text.
fn create_id(channel: &EventChannel, o: &Options) -> Result<CmId, String> {
    let ps = port_space(o).ok_or_else(|| strerror(libc::EINVAL))?;
    channel.create_id(ps).map_err(|e| verbs_error_text(&e))
}

/// The verbs objects of a node, made once its id is on a device.
struct Verbs {
    pd: ProtectionDomain,
    cq: CompletionQueue,
    /// One buffer of the message size plus the GRH, for every send and receive (as C);
    /// none when no message is sent.
    mr: Option<MemoryRegion>,
}

/// Where a node's datagrams go.
struct Peer {
    ah: AddressHandle,
    qpn: u32,
    qkey: u32,
}

/// One connection.
struct Node {
    id: CmId,
    verbs: Option<Verbs>,
    peer: Option<Peer>,
    connected: bool,
}

impl Node {
    fn new(id: CmId) -> Self {
        Node {
            id,
            verbs: None,
            peer: None,
            connected: false,
        }
    }
}

/// The test's state: C's `struct cmatest` and the globals it changes.
struct Test {
    channel: EventChannel,
    nodes: Vec<Node>,
    /// Which node an event is for.
    index: HashMap<IdHandle, usize>,
    connections: usize,
    /// Connect requests given a node (the server's, failed ones too, as C).
    conn_index: usize,
    connects_left: i32,
    /// Messages each way; set to 0 when the size is 0, as C does.
    count: i32,
    size: i32,
    tos: Option<u8>,
}

impl Test {
    /// The message buffer's length: the message and the GRH a receive starts with.
    fn buffer_len(&self) -> Option<usize> {
        usize::try_from(self.size).ok()?.checked_add(GRH_LEN)
    }

    /// C's `verify_test_params`: a message must fit the port's active MTU.
    fn verify_test_params(&self, node: &Node) -> Result<(), Ret> {
        let errno = |e: rdma_verbs::Error| e.raw_os_error().unwrap_or(libc::EINVAL);
        let ctx = node.id.context().map_err(errno)?;
        let attr = ctx
            .query_port(node.id.port_num().unwrap_or(0))
            .map_err(errno)?;
        let mtu = 1i64 << (attr.active_mtu.raw() + 7);
        if self.count != 0 && i64::from(self.size) > mtu {
            println!(
                "udaddy: message_size {} is larger than active mtu {mtu}",
                self.size
            );
            return Err(-libc::EINVAL);
        }
        Ok(())
    }

    /// C's `init_node`: PD, CQ, the UD QP on the id and the message buffer.
    fn init_node(&mut self, n: usize) -> Result<(), Ret> {
        let count = self.count;
        let node = &mut self.nodes[n];
        let ctx = node.id.context().map_err(|_| -libc::ENOMEM)?;
        let Ok(pd) = ctx.alloc_pd() else {
            println!("udaddy: unable to allocate PD");
            return Err(-libc::ENOMEM);
        };
        let cqe = if count != 0 {
            count.saturating_mul(2)
        } else {
            2
        };
        let Some(cq) = u32::try_from(cqe)
            .ok()
            .and_then(|cqe| ctx.create_cq(cqe, None).ok())
        else {
            println!("udaddy: unable to create CQ");
            return Err(-libc::ENOMEM);
        };
        let depth = u32::try_from(if count != 0 { count } else { 1 }).unwrap_or(u32::MAX);
        let qp = pd
            .create_qp(QpType::Ud, &cq, &cq)
            .max_send_wr(depth)
            .max_recv_wr(depth)
            .max_send_sge(1)
            .max_recv_sge(1);
        if let Err(e) = node.id.create_qp(qp) {
            perror("udaddy: unable to create QP", &e);
            return Err(-1);
        }
        let mr = self
            .create_message(&pd)
            .inspect_err(|ret| println!("udaddy: failed to create messages: {ret}"))?;
        self.nodes[n].verbs = Some(Verbs { pd, cq, mr });
        Ok(())
    }

    /// C's `create_message`: the buffer, unless no message is sent.
    fn create_message(&mut self, pd: &ProtectionDomain) -> Result<Option<MemoryRegion>, Ret> {
        if self.size == 0 {
            self.count = 0;
        }
        if self.count == 0 {
            return Ok(None);
        }
        let Some(len) = self.buffer_len() else {
            println!("failed message allocation");
            return Err(-1);
        };
        match pd.alloc_mr(len, AccessFlags::LOCAL_WRITE) {
            Ok(mr) => Ok(Some(mr)),
            Err(_) => {
                println!("failed to reg MR");
                Err(-1)
            }
        }
    }

    /// C's `post_recvs`: one receive per message, all into the one buffer.
    fn post_recvs(&self, n: usize) -> Result<(), Ret> {
        let node = &self.nodes[n];
        let (Some(mr), Some(qp)) = (
            node.verbs.as_ref().and_then(|v| v.mr.as_ref()),
            node.id.qp(),
        ) else {
            return Ok(());
        };
        let sge = [mr.sge(..).map_err(|_| -libc::EINVAL)?];
        for _ in 0..self.count {
            if let Err(e) = qp.post_recv(&mut [RecvRequest::new(n as u64, &sge)]) {
                let ret = e.raw_os_error().unwrap_or(-1);
                println!("failed to post receives: {ret}");
                return Err(ret);
            }
        }
        Ok(())
    }

    /// C's `post_sends`: the messages to the node's peer, each with the QP number as
    /// immediate data, signaled or not.
    fn post_sends(&self, n: usize, signaled: bool) -> Result<(), Ret> {
        let node = &self.nodes[n];
        if !node.connected || self.count == 0 {
            return Ok(());
        }
        let (Some(peer), Some(mr), Some(qp)) = (
            node.peer.as_ref(),
            node.verbs.as_ref().and_then(|v| v.mr.as_ref()),
            node.id.qp(),
        ) else {
            return Ok(());
        };
        let len = usize::try_from(self.size).unwrap_or(0);
        let sge = [mr.sge(..len).map_err(|_| -libc::EINVAL)?];
        for _ in 0..self.count {
            let wr = SendRequest::send_with_imm(n as u64, &sge, qp.qp_num())
                .ud(&peer.ah, peer.qpn, peer.qkey);
            let wr = if signaled { wr.signaled() } else { wr };
            if let Err(e) = qp.post_send(&mut [wr]) {
                let ret = e.raw_os_error().unwrap_or(-1);
                println!("failed to post sends: {ret}");
                return Err(ret);
            }
        }
        Ok(())
    }

    /// C's `create_reply_ah`: the peer of a node that has received `wc`, from the
    /// completion and the GRH at the start of the buffer.
    fn create_reply_ah(&mut self, n: usize, wc: &WorkCompletion) -> Option<()> {
        let node = &mut self.nodes[n];
        let verbs = node.verbs.as_ref()?;
        let mut grh = [0; GRH_LEN];
        verbs.mr.as_ref()?.read(0, &mut grh).ok()?;
        let port = node.id.port_num()?;
        let ah = verbs.pd.create_ah_from_wc(port, wc, &grh).ok()?;
        let qkey = node.id.qp()?.query().ok()?.qkey;
        node.peer = Some(Peer {
            ah,
            qpn: wc.imm_data().unwrap_or(0),
            qkey,
        });
        Some(())
    }

    /// C's `poll_cqs`: `count` completions of each connected node, the first of a node
    /// without a peer making its reply's address handle.
    fn poll_cqs(&mut self) -> Result<(), Ret> {
        for n in 0..self.nodes.len() {
            if !self.nodes[n].connected {
                continue;
            }
            let mut done = 0;
            while done < self.count {
                let mut wc = [WorkCompletion::default(); 8];
                let Some(verbs) = self.nodes[n].verbs.as_ref() else {
                    break;
                };
                let polled = match verbs.cq.poll(&mut wc) {
                    Ok(polled) => polled.len(),
                    Err(e) => {
                        let ret = -e.raw_os_error().unwrap_or(1);
                        println!("udaddy: failed polling CQ: {ret}");
                        return Err(ret);
                    }
                };
                if polled > 0
                    && self.nodes[n].peer.is_none()
                    && self.create_reply_ah(n, &wc[0]).is_none()
                {
                    println!("udaddy: failed to create reply AH");
                    return Err(-1);
                }
                done += polled as i32;
            }
        }
        Ok(())
    }

    /// A resolution or connection failed for good.
    fn connect_error(&mut self) {
        self.connects_left -= 1;
    }

    /// C's `addr_handler`: the TOS if asked for, then the route.
    fn addr_handler(&mut self, n: usize) -> Result<(), Ret> {
        let id = &self.nodes[n].id;
        if let Some(tos) = self.tos {
            if let Err(e) = id.set_option(CmOption::TrafficClass(tos)) {
                perror("udaddy: set TOS option failed", &e);
            }
        }
        if let Err(e) = id.resolve_route(RESOLVE_TIMEOUT) {
            perror("udaddy: resolve route failed", &e);
            self.connect_error();
            return Err(-1);
        }
        Ok(())
    }

    /// C's `route_handler`: the node's verbs and receives, then the connect.
    fn route_handler(&mut self, n: usize) -> Result<(), Ret> {
        let done = self
            .verify_test_params(&self.nodes[n])
            .and_then(|()| self.init_node(n))
            .and_then(|()| self.post_recvs(n))
            .and_then(|()| {
                self.nodes[n].id.connect(&c_zeroed()).map_err(|e| {
                    perror("udaddy: failure connecting", &e);
                    -1
                })
            });
        if done.is_err() {
            self.connect_error();
        }
        done
    }

    /// C's `connect_handler`: a request on the listening id, accepted with a QP whose
    /// receives are posted, or rejected when the nodes are all taken or it fails.
    fn connect_handler(&mut self, id: CmId) -> Result<(), Ret> {
        if self.conn_index == self.connections {
            println!("udaddy: failing connection request");
            let _ = id.reject(&[]);
            return Err(-libc::ENOMEM);
        }
        let n = self.nodes.len();
        self.nodes.push(Node::new(id));
        self.conn_index += 1;
        let done = self
            .verify_test_params(&self.nodes[n])
            .and_then(|()| self.init_node(n))
            .and_then(|()| self.post_recvs(n))
            .and_then(|()| {
                self.nodes[n].id.accept(&c_zeroed()).map_err(|e| {
                    perror("udaddy: failure accepting", &e);
                    -1
                })
            });
        match done {
            Ok(()) => {
                self.nodes[n].connected = true;
                self.connects_left -= 1;
                Ok(())
            }
            Err(ret) => {
                // C forgets the node's id (and what it made), its place still taken, and
                // rejects the request.
                let node = self.nodes.pop().expect("pushed above");
                self.connect_error();
                println!("udaddy: failing connection request");
                let _ = node.id.reject(&[]);
                Err(ret)
            }
        }
    }

    /// C's `resolved_handler`: the server's answer gives the node's peer.
    fn resolved_handler(&mut self, n: usize, ud: Option<UdPeer>) -> Result<(), Ret> {
        let node = &mut self.nodes[n];
        let peer = match (ud, &node.verbs) {
            (Some(ud), Some(verbs)) => ud.create_ah(&verbs.pd).ok().map(|ah| Peer {
                ah,
                qpn: ud.qp_num,
                qkey: ud.qkey,
            }),
            _ => None,
        };
        let Some(peer) = peer else {
            println!("udaddy: failure creating address handle");
            self.connect_error();
            return Err(-1);
        };
        node.peer = Some(peer);
        node.connected = true;
        self.connects_left -= 1;
        Ok(())
    }

    /// C's `cma_handler`.
    fn cma_handler(&mut self, event: CmEvent) -> Result<(), Ret> {
        let node = self.index.get(&event.id).copied();
        match (event.kind, node) {
            (CmEventKind::ConnectRequest { id, .. }, _) => self.connect_handler(id),
            (CmEventKind::AddrResolved, Some(n)) => self.addr_handler(n),
            (CmEventKind::RouteResolved, Some(n)) => self.route_handler(n),
            (CmEventKind::Established { ud, .. }, Some(n)) => self.resolved_handler(n, ud),
            (
                kind @ (CmEventKind::AddrError
                | CmEventKind::RouteError
                | CmEventKind::ConnectError
                | CmEventKind::Unreachable
                | CmEventKind::Rejected { .. }),
                _,
            ) => {
                println!("udaddy: event: {}, error: {}", kind.c_name(), event.status);
                self.connect_error();
                if event.status == 0 {
                    Ok(())
                } else {
                    Err(event.status)
                }
            }
            _ => Ok(()),
        }
    }

    /// C's `connect_events`: events until every connection is made or failed, or a
    /// handler fails.
    fn connect_events(&mut self) -> Ret {
        while self.connects_left != 0 {
            let event = match self.channel.get_event() {
                Ok(event) => event,
                Err(_) => return -1,
            };
            if let Err(ret) = self.cma_handler(event) {
                return ret;
            }
        }
        0
    }
}

/// C's zeroed `struct rdma_conn_param` (UD uses only its private data).
fn c_zeroed() -> ConnParam<'static> {
    ConnParam::new()
        .private_data(&[])
        .max_dest_rd_atomic(0)
        .max_rd_atomic(0)
        .flow_control(false)
        .retry_cnt(0)
        .rnr_retry(0)
}

/// C's `get_rdma_addr`: the address to listen on (`passive`) or to connect to, with the
/// source address to connect from; the error is the `EAI_*` code with its text.
fn rdma_addr(
    o: &Options,
    passive: bool,
) -> Result<(Option<std::net::SocketAddr>, Option<std::net::SocketAddr>), (Ret, String)> {
    if o.af_ib {
        // rdma-verbs has no AF_IB addresses.
        return Err((libc::EAI_FAMILY, "AF_IB addresses are not supported".into()));
    }
    let gai = |e: rdma_verbs::Error| match e {
        rdma_verbs::Error::AddrInfo { code, message } => (code, message),
        other => (-1, other.to_string()),
    };
    let hints = AddrHints::new()
        .passive(passive)
        .numeric_host(o.numeric_host);
    let hints = match port_space(o) {
        Some(ps) => hints.port_space(ps),
        None => hints,
    };
    let node = if passive { &o.src } else { &o.dst };
    let info = getaddrinfo(node.as_deref(), Some(PORT), &hints).map_err(gai)?;
    let first = info.into_iter().next();
    let mut src = first.as_ref().and_then(|i| i.src);
    if let (Some(bind), false) = (&o.src, passive) {
        src = getaddrinfo(Some(bind), None, &hints.passive(true))
            .map_err(gai)?
            .into_iter()
            .find_map(|i| i.src);
    }
    Ok((src, first.and_then(|i| i.dst)))
}

fn run_server(t: &mut Test, o: &Options) -> Ret {
    println!("udaddy: starting server");
    let listen = match create_id(&t.channel, o) {
        Ok(id) => id,
        Err(text) => {
            eprintln!("udaddy: listen request failed: {text}");
            return -1;
        }
    };
    let src = match rdma_addr(o, true) {
        Ok((Some(src), _)) => src,
        // A passive lookup that succeeds has an address to bind.
        Ok((None, _)) => {
            println!("udaddy: getrdmaaddr error: Name or service not known");
            return libc::EAI_NONAME;
        }
        Err((ret, text)) => {
            println!("udaddy: getrdmaaddr error: {text}");
            return ret;
        }
    };
    if let Err(e) = listen.bind(src) {
        perror("udaddy: bind address failed", &e);
        return -1;
    }
    if let Err(e) = listen.listen(0) {
        perror("udaddy: failure trying to listen", &e);
        return -1;
    }
    // As C, the server goes on to the transfers whatever the connections' outcome.
    t.connect_events();
    if t.count != 0 {
        println!("receiving data transfers");
        if let Err(ret) = t.poll_cqs() {
            return ret;
        }
        println!("sending replies");
        for n in 0..t.nodes.len() {
            if let Err(ret) = t.post_sends(n, true) {
                return ret;
            }
        }
        if let Err(ret) = t.poll_cqs() {
            return ret;
        }
        println!("data transfers complete");
    }
    0
}

fn run_client(t: &mut Test, o: &Options) -> Ret {
    println!("udaddy: starting client");
    let (src, dst) = match rdma_addr(o, false) {
        Ok((src, Some(dst))) => (src, dst),
        Ok((_, None)) => {
            println!("udaddy: getaddrinfo error: Name or service not known");
            return libc::EAI_NONAME;
        }
        Err((ret, text)) => {
            println!("udaddy: getaddrinfo error: {text}");
            return ret;
        }
    };
    println!("udaddy: connecting");
    for n in 0..t.nodes.len() {
        if let Err(e) = t.nodes[n].id.resolve_addr(src, dst, RESOLVE_TIMEOUT) {
            perror("udaddy: failure getting addr", &e);
            t.connect_error();
            return -1;
        }
    }
    let ret = t.connect_events();
    if ret != 0 {
        return ret;
    }
    if t.count != 0 {
        println!("initiating data transfers");
        for n in 0..t.nodes.len() {
            if let Err(ret) = t.post_sends(n, false) {
                return ret;
            }
        }
        println!("receiving data transfers");
        if let Err(ret) = t.poll_cqs() {
            return ret;
        }
        println!("data transfers complete");
    }
    0
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let channel = match EventChannel::new() {
        Ok(channel) => channel,
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => {
            eprintln!("No RDMA devices were detected");
            return ExitCode::from(1);
        }
        Err(e) => {
            perror("failed to create RDMA CM event channel", &e);
            return ExitCode::from(1);
        }
    };
    let Ok(connections) = usize::try_from(o.connections) else {
        println!("udaddy: unable to allocate memory for test nodes");
        return ExitCode::from(1);
    };
    let mut t = Test {
        channel,
        nodes: Vec::with_capacity(connections),
        index: HashMap::new(),
        connections,
        conn_index: 0,
        connects_left: o.connections,
        count: o.count,
        size: o.size,
        tos: o.tos,
    };
    let ret = if o.dst.is_some() {
        for n in 0..connections {
            let Ok(id) = create_id(&t.channel, &o) else {
                return ExitCode::from(1);
            };
            t.index.insert(id.handle(), n);
            t.nodes.push(Node::new(id));
        }
        run_client(&mut t, &o)
    } else {
        run_server(&mut t, &o)
    };
    println!("test complete");
    drop(t);
    println!("return status {ret}");
    exit_code(ret)
}
