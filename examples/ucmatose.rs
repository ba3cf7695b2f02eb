//! `ucmatose`: rdma_cm's connection test, a work-alike of rdma-core's librdmacm example
//! (`cmatose.c`, installed as `ucmatose` by rdmacm-utils): its options (`-s server -b bind
//! -f address_format -P port_space -c connections -C message_count -S message_size -t tos
//! -p port -m(igrate) -a ack_timeout`), its output and exit status (`return status N`, N's
//! low byte) and its protocol, so that either side runs against the C program.
//!
//! The client creates `-c` ids and resolves each one's address; every id then goes on by
//! its events, as C's handler takes it: on `AddrResolved` the TOS and ACK timeout are set
//! and the route resolved; on `RouteResolved` the node's PD, CQs, QP and message buffer are
//! made, `-C` receives posted, and the id connects (one read/atomic each way, 5 retries, no
//! RNR retry). The server accepts `-c` requests, each with its objects made and receives
//! posted first (and the ACK timeout set). Once all are connected, the server sends `-C`
//! messages of `-S` bytes on each connection and waits for their completions, then for
//! the client's replies; the client waits for the server's messages, then replies. The
//! server disconnects every connection, the client disconnects each in turn when it hears
//! of it, and both wait until all are down. `-m` moves every id to a new event channel
//! before the disconnects. As in C, each node has its own PD and two CQs without a
//! completion channel (the waits for completions spin), and a completion's status is not
//! looked at (only counted).
//!
//! Where the crate lacks what C asks for: `-f gid` asks only for a numeric host (AF_IB
//! addresses are not in this crate's `getaddrinfo` hints); a failed address lookup returns
//! -1 (the crate's error keeps `gai_strerror`'s text, not the code).
//!
//! `cargo run --example ucmatose -- [-s server] ...`

use std::collections::HashMap;
use std::process::ExitCode;
use std::time::Duration;

use rdma_verbs::cm::{
    ffi, getaddrinfo, AddrHints, AddrInfo, CmEvent, CmEventKind, CmId, CmOption, ConnParam,
    EventChannel, IdHandle, PortSpace,
};
use rdma_verbs::{
    AccessFlags, CompletionQueue, MemoryRegion, QpType, RecvRequest, SendRequest, WorkCompletion,
};
use rdma_verbs_tools::cli::{
    atoi, exit_code, getopt_long, perror, print_usage, strtoull, verbs_error_text, Item,
};

/// What C gives address and route resolution.
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);

struct Options {
    dst: Option<String>,
    src: Option<String>,
    numeric_host: bool,
    port_space: PortSpace,
    connections: i32,
    message_count: i32,
    message_size: i32,
    tos: Option<u8>,
    port: String,
    migrate: bool,
    ack_timeout: Option<u8>,
}

/// Whether `value` starts with `prefix`, ignoring case (C's `!strncasecmp(prefix, value,
/// prefix.len())`).
fn starts_with_ignore_case(value: &str, prefix: &str) -> bool {
    value
        .get(..prefix.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

/// The command line, or the exit status after C's usage text.
fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("ucmatose", String::as_str);
    let mut o = Options {
        dst: None,
        src: None,
        numeric_host: false,
        port_space: PortSpace::Tcp,
        connections: 1,
        message_count: 10,
        message_size: 100,
        tos: None,
        port: "7471".into(),
        migrate: false,
        ack_timeout: None,
    };
    let optstring = "s:b:f:P:c:C:S:t:p:a:m";
    for item in getopt_long(&args[1.min(args.len())..], optstring, &[]).items {
        let (opt, value) = match item {
            Item::Opt(opt, value) => (opt, value.unwrap_or_default()),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                print_usage(
                    prog,
                    &[
                        "[-s server_address]",
                        "[-b bind_address]",
                        "[-f address_format]",
                        "    name, ip, ipv6, or gid",
                        "[-P port_space]",
                        "    tcp or ib",
                        "[-c connections]",
                        "[-C message_count]",
                        "[-S message_size]",
                        "[-t type_of_service]",
                        "[-p port_number]",
                        "[-m(igrate)]",
                        "[-a ack_timeout]",
                    ],
                );
                return Err(ExitCode::from(1));
            }
        };
        match opt {
            's' => o.dst = Some(value),
            'b' => o.src = Some(value),
            // "gid" would ask for AF_IB addresses as well, which the hints cannot.
            'f' if starts_with_ignore_case(&value, "ip")
                || starts_with_ignore_case(&value, "gid") =>
            {
                o.numeric_host = true;
            }
            'f' if !starts_with_ignore_case(&value, "name") => {
                eprintln!("Warning: unknown address format");
            }
            'P' if starts_with_ignore_case(&value, "ib") => o.port_space = PortSpace::Ib,
            'P' if !starts_with_ignore_case(&value, "tcp") => {
                eprintln!("Warning: unknown port space format");
            }
            'c' => o.connections = atoi(&value),
            'C' => o.message_count = atoi(&value),
            'S' => o.message_size = atoi(&value),
            't' => o.tos = Some(strtoull(&value) as u8),
            'p' => o.port = value,
            'm' => o.migrate = true,
            'a' => o.ack_timeout = Some(strtoull(&value) as u8),
            _ => {}
        }
    }
    Ok(o)
}

/// A node's send CQ, in its pair.
const SEND: usize = 0;
/// A node's receive CQ.
const RECV: usize = 1;

/// One connection: its id and what `init_node` made for it (the QP is the id's). The id
/// is dropped last, after the device's objects, as C destroys it.
#[derive(Default)]
struct Node {
    connected: bool,
    cq: Option<[CompletionQueue; 2]>,
    mr: Option<MemoryRegion>,
    id: Option<CmId>,
}

/// The test's state, C's `struct cmatest` and the globals of the options.
struct Test {
    o: Options,
    channel: EventChannel,
    nodes: Vec<Node>,
    /// Which node an id's events are for.
    by_id: HashMap<IdHandle, usize>,
    conn_index: usize,
    connects_left: i32,
    disconnects_left: i32,
    /// C's `message_count`, which a message size of 0 sets to 0.
    message_count: i32,
}

impl Test {
    fn node(&mut self, n: usize) -> &mut Node {
        &mut self.nodes[n]
    }

    fn id(&self, n: usize) -> &CmId {
        let Some(id) = self.nodes[n].id.as_ref() else {
            unreachable!("a node with events has an id")
        };
        id
    }

    /// C's `create_message`: the node's buffer, registered for receives.
    fn create_message(&mut self, n: usize) -> i32 {
        if self.o.message_size == 0 {
            self.message_count = 0;
        }
        if self.message_count == 0 {
            return 0;
        }
        let Ok(size) = usize::try_from(self.o.message_size) else {
            println!("failed message allocation");
            return -1;
        };
        let Some(qp) = self.id(n).qp() else {
            unreachable!("init_node made the QP first")
        };
        match qp.pd().alloc_mr(size, AccessFlags::LOCAL_WRITE) {
            Ok(mr) => {
                self.node(n).mr = Some(mr);
                0
            }
            Err(_) => {
                println!("failed to reg MR");
                -1
            }
        }
    }

    /// C's `init_node`: the node's PD, two CQs and QP, then its message.
    fn init_node(&mut self, n: usize) -> i32 {
        let ctx = match self.id(n).context() {
            Ok(ctx) => ctx,
            Err(_) => {
                println!("cmatose: unable to allocate PD");
                return -libc::ENOMEM;
            }
        };
        let Ok(pd) = ctx.alloc_pd() else {
            println!("cmatose: unable to allocate PD");
            return -libc::ENOMEM;
        };
        let cqe = if self.message_count != 0 {
            self.message_count
        } else {
            1
        };
        let entries = u32::try_from(cqe).ok();
        let cq = || entries.and_then(|e| ctx.create_cq(e, None).ok());
        let (Some(send), Some(recv)) = (cq(), cq()) else {
            println!("cmatose: unable to create CQ");
            return -libc::ENOMEM;
        };
        let depth = entries.unwrap_or(1);
        let qp = pd
            .create_qp(QpType::Rc, &send, &recv)
            .max_send_wr(depth)
            .max_recv_wr(depth)
            .max_send_sge(1)
            .max_recv_sge(1)
            .sq_sig_all(true);
        let node = self.node(n);
        let Some(id) = node.id.as_mut() else {
            unreachable!("a node with events has an id")
        };
        let created = id.create_qp(qp).map(|_| ());
        node.cq = Some([send, recv]);
        if let Err(e) = created {
            perror("cmatose: unable to create QP", &e);
            return -1;
        }
        let ret = self.create_message(n);
        if ret != 0 {
            println!("cmatose: failed to create messages: {ret}");
        }
        ret
    }

    /// The node's message buffer as a one-entry list (C posts the whole buffer).
    fn with_message<R>(
        &self,
        n: usize,
        f: impl FnOnce(&rdma_verbs::QueuePair, u64, &[rdma_verbs::Sge<'_>]) -> R,
    ) -> Option<R> {
        let node = &self.nodes[n];
        let qp = node.id.as_ref()?.qp()?;
        let sge = node.mr.as_ref()?.sge(..).ok()?;
        Some(f(qp, n as u64, &[sge]))
    }

    /// C's `post_recvs`: `message_count` receives into the node's buffer.
    fn post_recvs(&self, n: usize) -> i32 {
        if self.message_count == 0 {
            return 0;
        }
        let posted = self.with_message(n, |qp, wr_id, sge| {
            for _ in 0..self.message_count {
                if let Err(e) = qp.post_recv(&mut [RecvRequest::new(wr_id, sge)]) {
                    return e.into_inner().raw_os_error().unwrap_or(-1);
                }
            }
            0
        });
        let ret = posted.unwrap_or(-1);
        if ret != 0 {
            println!("failed to post receives: {ret}");
        }
        ret
    }

    /// C's `post_sends`: `message_count` sends of the node's buffer, once connected.
    fn post_sends(&self, n: usize) -> i32 {
        if !self.nodes[n].connected || self.message_count == 0 {
            return 0;
        }
        let posted = self.with_message(n, |qp, wr_id, sge| {
            for _ in 0..self.message_count {
                if let Err(e) = qp.post_send(&mut [SendRequest::send(wr_id, sge)]) {
                    return e.into_inner().raw_os_error().unwrap_or(-1);
                }
            }
            0
        });
        let ret = posted.unwrap_or(-1);
        if ret != 0 {
            println!("failed to post sends: {ret}");
        }
        ret
    }

    /// C's `poll_cqs`: spins on CQ `index` of every connected node until it has
    /// `message_count` completions.
    fn poll_cqs(&self, index: usize) -> i32 {
        let mut wc = [WorkCompletion::default(); 8];
        for node in self.nodes.iter().filter(|n| n.connected) {
            let Some(cq) = node.cq.as_ref().map(|cq| &cq[index]) else {
                continue;
            };
            let mut done = 0;
            while done < self.message_count {
                match cq.poll(&mut wc) {
                    Ok(polled) => done += polled.len() as i32,
                    Err(e) => {
                        let ret = -e.raw_os_error().unwrap_or(1);
                        println!("cmatose: failed polling CQ: {ret}");
                        return ret;
                    }
                }
            }
        }
        0
    }

    fn connect_error(&mut self) {
        self.connects_left -= 1;
    }

    /// C's `addr_handler`: the options, then the route.
    fn addr_handler(&mut self, n: usize) -> i32 {
        let id = self.id(n);
        if let Some(tos) = self.o.tos {
            if let Err(e) = id.set_option(CmOption::TrafficClass(tos)) {
                perror("cmatose: set TOS option failed", &e);
            }
        }
        if let Some(timeout) = self.o.ack_timeout {
            if let Err(e) = id.set_option(CmOption::AckTimeout(timeout)) {
                perror("cmatose: set ack timeout option failed", &e);
            }
        }
        if let Err(e) = id.resolve_route(RESOLVE_TIMEOUT) {
            perror("cmatose: resolve route failed", &e);
            self.connect_error();
            return -1;
        }
        0
    }

    /// C's `route_handler`: the node's objects, its receives, then the connect.
    fn route_handler(&mut self, n: usize) -> i32 {
        let mut ret = self.init_node(n);
        if ret == 0 {
            ret = self.post_recvs(n);
        }
        if ret == 0 {
            let param = ConnParam::new()
                .max_dest_rd_atomic(1)
                .max_rd_atomic(1)
                .flow_control(false)
                .retry_cnt(5)
                .rnr_retry(0)
                .private_data(&[]);
            if let Err(e) = self.id(n).connect(&param) {
                perror("cmatose: failure connecting", &e);
                ret = -1;
            }
        }
        if ret != 0 {
            self.connect_error();
        }
        ret
    }

    /// C's `connect_handler`: takes the next node for the request's new id, makes its
    /// objects, posts its receives and accepts; rejects when the nodes are all taken or
    /// a step fails.
    fn connect_handler(&mut self, id: CmId) -> i32 {
        let n = self.conn_index;
        if n >= self.nodes.len() {
            println!("cmatose: failing connection request");
            let _ = id.reject(&[]);
            return -libc::ENOMEM;
        }
        self.conn_index += 1;
        self.by_id.insert(id.handle(), n);
        self.node(n).id = Some(id);
        let mut ret = self.init_node(n);
        if ret == 0 {
            if let Some(timeout) = self.o.ack_timeout {
                if let Err(e) = self.id(n).set_option(CmOption::AckTimeout(timeout)) {
                    perror("cmatose: set ack timeout option failed", &e);
                }
            }
            ret = self.post_recvs(n);
        }
        if ret == 0 {
            // rdma_accept(id, NULL): the reads and atomics the request asked for, within
            // the device's (librdmacm's RDMA_MAX_* asks for that), no flow control.
            let param = ConnParam::new()
                .max_dest_rd_atomic(ffi::RDMA_MAX_RESP_RES as u8)
                .max_rd_atomic(ffi::RDMA_MAX_INIT_DEPTH as u8)
                .flow_control(false);
            match self.id(n).accept(&param) {
                Ok(()) => return 0,
                Err(e) => {
                    perror("cmatose: failure accepting", &e);
                    ret = -1;
                }
            }
        }
        // The node lets go of the id, which is rejected (then destroyed).
        let id = self.node(n).id.take();
        self.connect_error();
        println!("cmatose: failing connection request");
        if let Some(id) = id {
            self.by_id.remove(&id.handle());
            let _ = id.reject(&[]);
        }
        ret
    }

    /// C's `cma_handler`: what an event does to its node.
    fn handle(&mut self, event: CmEvent) -> i32 {
        let node = self.by_id.get(&event.id).copied();
        match (event.kind, node) {
            (CmEventKind::ConnectRequest { id, .. }, _) => self.connect_handler(id),
            (CmEventKind::AddrResolved, Some(n)) => self.addr_handler(n),
            (CmEventKind::RouteResolved, Some(n)) => self.route_handler(n),
            (CmEventKind::Established { .. }, Some(n)) => {
                self.node(n).connected = true;
                self.connects_left -= 1;
                self.disconnects_left += 1;
                0
            }
            (
                kind @ (CmEventKind::AddrError
                | CmEventKind::RouteError
                | CmEventKind::ConnectError
                | CmEventKind::Unreachable
                | CmEventKind::Rejected { .. }),
                _,
            ) => {
                println!("cmatose: event: {}, error: {}", kind.c_name(), event.status);
                self.connect_error();
                event.status
            }
            (CmEventKind::Disconnected, Some(n)) => {
                let _ = self.id(n).disconnect();
                self.disconnects_left -= 1;
                0
            }
            _ => 0,
        }
    }

    /// Handles events while `left` says some are awaited (C's `connect_events` and
    /// `disconnect_events`, `which` naming them in the error).
    fn events(&mut self, left: fn(&Test) -> i32, which: &str) -> i32 {
        let mut ret = 0;
        while left(self) != 0 && ret == 0 {
            ret = match self.channel.get_event() {
                Ok(event) => self.handle(event),
                Err(e) => {
                    let what = format!("cmatose: failure in rdma_get_cm_event in {which}");
                    perror(&what, &e);
                    e.raw_os_error().unwrap_or(-1)
                }
            };
        }
        ret
    }

    fn connect_events(&mut self) -> i32 {
        self.events(|t| t.connects_left, "connect events")
    }

    fn disconnect_events(&mut self) -> i32 {
        self.events(|t| t.disconnects_left, "disconnect events")
    }

    /// C's `migrate_channel`: every id (and the listening one) to a new channel.
    fn migrate_channel(&mut self, listen: Option<&mut CmId>) -> i32 {
        println!("migrating to new event channel");
        let channel = match EventChannel::new() {
            Ok(channel) => channel,
            Err(e) => {
                perror("cmatose: failed to create event channel", &e);
                return -1;
            }
        };
        let ids = self.nodes.iter_mut().filter_map(|n| n.id.as_mut());
        let migrated = listen
            .into_iter()
            .chain(ids)
            .try_for_each(|id| id.migrate_id(&channel));
        if let Err(e) = migrated {
            perror("cmatose: failure migrating to channel", &e);
            return -1;
        }
        self.channel = channel;
        0
    }

    /// C's `get_rdma_addr`: the bind address (passive, for a server), or the
    /// destination with the bind address, if any, as its source.
    fn rdma_addr(&self, passive: bool) -> Result<AddrInfo, String> {
        let hints = AddrHints::new()
            .passive(passive)
            .numeric_host(self.o.numeric_host)
            .port_space(self.o.port_space);
        let lookup = |node: Option<&str>, service: Option<&str>, hints: &AddrHints| {
            getaddrinfo(node, service, hints)
                .map_err(|e| verbs_error_text(&e))?
                .into_iter()
                .next()
                .ok_or_else(|| "no address".to_owned())
        };
        if passive {
            return lookup(self.o.src.as_deref(), Some(&self.o.port), &hints);
        }
        let src = match &self.o.src {
            Some(src) => lookup(Some(src), None, &hints.passive(true))?.src,
            None => None,
        };
        let mut info = lookup(self.o.dst.as_deref(), Some(&self.o.port), &hints)?;
        info.src = info.src.or(src);
        Ok(info)
    }

    fn run_server(&mut self) -> i32 {
        println!("cmatose: starting server");
        let mut listen = match self.channel.create_id(self.o.port_space) {
            Ok(id) => id,
            Err(e) => {
                perror("cmatose: listen request failed", &e);
                return -1;
            }
        };
        let src = match self.rdma_addr(true).map(|info| info.src) {
            Ok(Some(src)) => src,
            Ok(None) => {
                println!("cmatose: getrdmaaddr error: no address");
                return -1;
            }
            Err(e) => {
                println!("cmatose: getrdmaaddr error: {e}");
                return -1;
            }
        };
        if let Err(e) = listen.bind(src) {
            perror("cmatose: bind address failed", &e);
            return -1;
        }
        if let Err(e) = listen.listen(0) {
            perror("cmatose: failure trying to listen", &e);
            return -1;
        }
        let ret = self.connect_events();
        if ret != 0 {
            return ret;
        }
        if self.message_count != 0 {
            println!("initiating data transfers");
            for n in 0..self.nodes.len() {
                let ret = self.post_sends(n);
                if ret != 0 {
                    return ret;
                }
            }
            println!("completing sends");
            let ret = self.poll_cqs(SEND);
            if ret != 0 {
                return ret;
            }
            println!("receiving data transfers");
            let ret = self.poll_cqs(RECV);
            if ret != 0 {
                return ret;
            }
            println!("data transfers complete");
        }
        if self.o.migrate {
            let ret = self.migrate_channel(Some(&mut listen));
            if ret != 0 {
                return ret;
            }
        }
        println!("cmatose: disconnecting");
        for node in self.nodes.iter_mut().filter(|n| n.connected) {
            node.connected = false;
            if let Some(id) = node.id.as_ref() {
                let _ = id.disconnect();
            }
        }
        let ret = self.disconnect_events();
        println!("disconnected");
        ret
    }

    fn run_client(&mut self) -> i32 {
        println!("cmatose: starting client");
        let info = match self.rdma_addr(false) {
            Ok(info) => info,
            Err(e) => {
                println!("cmatose: getaddrinfo error: {e}");
                return -1;
            }
        };
        println!("cmatose: connecting");
        for n in 0..self.nodes.len() {
            let resolved = match info.dst {
                Some(dst) => self.id(n).resolve_addr(info.src, dst, RESOLVE_TIMEOUT),
                None => Err(rdma_verbs::Error::InvalidArgument {
                    what: "destination",
                    reason: "the lookup gave none".into(),
                }),
            };
            if let Err(e) = resolved {
                perror("cmatose: failure getting addr", &e);
                self.connect_error();
                return -1;
            }
        }
        let mut ret = self.connect_events();
        if ret == 0 && self.message_count != 0 {
            ret = self.client_transfers();
        }
        if ret == 0 && self.o.migrate {
            let migrated = self.migrate_channel(None);
            if migrated != 0 {
                return migrated;
            }
        }
        match self.disconnect_events() {
            0 => ret,
            ret2 => ret2,
        }
    }

    /// The client's half of the messages: the server's first, then the replies.
    fn client_transfers(&mut self) -> i32 {
        println!("receiving data transfers");
        let ret = self.poll_cqs(RECV);
        if ret != 0 {
            return ret;
        }
        println!("sending replies");
        for n in 0..self.nodes.len() {
            let ret = self.post_sends(n);
            if ret != 0 {
                return ret;
            }
        }
        println!("data transfers complete");
        0
    }
}

/// C's `main` after the options: the channel and the client's ids, then the test.
fn run(o: Options) -> i32 {
    let channel = match EventChannel::new() {
        Ok(channel) => channel,
        Err(e) => {
            if e.raw_os_error() == Some(libc::ENODEV) {
                eprintln!("No RDMA devices were detected");
            } else {
                perror("failed to create RDMA CM event channel", &e);
            }
            std::process::exit(1);
        }
    };
    let count = usize::try_from(o.connections).unwrap_or(0);
    let mut nodes: Vec<Node> = (0..count).map(|_| Node::default()).collect();
    let mut by_id = HashMap::new();
    if o.dst.is_some() {
        for (n, node) in nodes.iter_mut().enumerate() {
            let Ok(id) = channel.create_id(o.port_space) else {
                std::process::exit(1);
            };
            by_id.insert(id.handle(), n);
            node.id = Some(id);
        }
    }
    let mut test = Test {
        connects_left: o.connections,
        message_count: o.message_count,
        o,
        channel,
        nodes,
        by_id,
        conn_index: 0,
        disconnects_left: 0,
    };
    let ret = if test.o.dst.is_some() {
        test.run_client()
    } else {
        test.run_server()
    };
    println!("test complete");
    drop(test);
    ret
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let ret = run(o);
    println!("return status {ret}");
    exit_code(ret)
}
