//! `mckey`: UD multicast over rdma_cm, a work-alike of rdma-core's librdmacm example of the
//! same name: its options (`-m group -M unmapped_group -s(ender) -b bind -c connections -C
//! message_count -S message_size -p port_space -o(send-only) -l(no loopback)`), its output
//! and exit status, and its protocol, so that either side runs against the C program.
//!
//! Each of `-c` ids in the UDP port space is bound (`-b`), resolves the group, gets a UD QP
//! (a receiver posts its `-C` receives of `-S` bytes first) and joins the group, as a full
//! member or, with `-o`, a send-only one; the join event's address vector, QP number and
//! Q_Key are where the group's datagrams go. After three seconds (C's pause for the subnet
//! manager), a sender sends its datagrams to the group, each with its QP number as
//! immediate data, and a receiver waits for as many. Then every id leaves the group.
//!
//! `-l` creates the QPs with `IBV_QP_CREATE_BLOCK_SELF_MCAST_LB` (they do not receive
//! their own multicast), which rxe refuses, as it refuses C's. `-M` (a group given as an
//! AF_IB address) is read but fails where C's call would take it: rdma-verbs has no AF_IB
//! addresses.
//!
//! `cargo run --example mckey -- -m group [-s] ...`

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::thread;
use std::time::Duration;

use rdma_verbs::cm::{
    getaddrinfo, AddrHints, CmEvent, CmEventKind, CmId, EventChannel, MulticastJoinFlag, PortSpace,
    UdPeer,
};
use rdma_verbs::{
    AccessFlags, AddressHandle, CompletionQueue, Gid, MemoryRegion, ProtectionDomain,
    QpCreateFlags, QpType, RecvRequest, SendRequest, WorkCompletion, GRH_LEN,
};
use rdma_verbs_tools::cli::inet_ntop;
use rdma_verbs_tools::cli::{
    atoi, exit_code, getopt_long, perror, print_usage, strerror, strtol, verbs_error_text, Item,
};

/// The timeout of address resolution.
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// C's pause between the joins and the transfers, for a subnet manager to set up the
/// switches.
const SM_PAUSE: Duration = Duration::from_secs(3);
/// Why `-M` fails: what C would join is an AF_IB address.
const NO_AF_IB: &str = "AF_IB (unmapped) multicast addresses are not supported by rdma-verbs";

/// A C return value: 0, -1 for a failed librdmacm call, a negative errno or `EAI_*`
/// code, or a verb's positive errno; the exit status is its low 8 bits.
type Ret = i32;

struct Options {
    dst: Option<String>,
    unmapped: bool,
    sender: bool,
    src: Option<String>,
    connections: i32,
    count: i32,
    size: i32,
    /// `-p`'s number, which need not be a port space.
    port_space: i64,
    send_only: bool,
    loopback: bool,
}

fn usage(prog: &str) {
    print_usage(
        prog,
        &[
            "-m multicast_address",
            "[-M unmapped_multicast_address]\n\t replaces -m and requires -b",
            "[-s(ender)]",
            "[-b bind_address]",
            "[-c connections]",
            "[-C message_count]",
            "[-S message_size]",
        ],
    );
    println!(
        "\t[-p port_space - {:#x} for UDP (default), {:#x} for IPOIB]",
        PortSpace::Udp.raw().0,
        PortSpace::Ipoib.raw().0
    );
    println!("\t[-o join as a send-only full-member]");
    println!("\t[-l join without multicast loopback]");
}

/// The command line, or the exit status after C's usage text.
fn parse(args: &[String]) -> Result<Options, ExitCode> {
    let prog = args.first().map_or("mckey", String::as_str);
    let mut o = Options {
        dst: None,
        unmapped: false,
        sender: false,
        src: None,
        connections: 1,
        count: 10,
        size: 100,
        port_space: i64::from(PortSpace::Udp.raw().0),
        send_only: false,
        loopback: true,
    };
    for item in getopt_long(&args[1.min(args.len())..], "m:M:sb:c:C:S:p:ol", &[]).items {
        let (opt, value) = match item {
            Item::Opt(opt, value) => (opt, value.unwrap_or_default()),
            Item::Error(err) => {
                eprintln!("{}", err.message(prog));
                usage(prog);
                return Err(ExitCode::from(1));
            }
        };
        match opt {
            'm' => o.dst = Some(value),
            'M' => (o.unmapped, o.dst) = (true, Some(value)),
            's' => o.sender = true,
            'b' => o.src = Some(value),
            'c' => o.connections = atoi(&value),
            'C' => o.count = atoi(&value),
            'S' => o.size = atoi(&value),
            'p' => o.port_space = strtol(&value),
            'o' => o.send_only = true,
            _ => o.loopback = false,
        }
    }
    Ok(o)
}

/// C's `get_addr`: the first address of `name` (port 0), or the `EAI_*` code after C's
/// message.
fn get_addr(name: Option<&str>) -> Result<IpAddr, Ret> {
    // getaddrinfo(NULL, NULL) fails so.
    let no_name = || (libc::EAI_NONAME, "Name or service not known".to_owned());
    let found = match name {
        Some(name) => getaddrinfo(Some(name), None, &AddrHints::new()).map_err(|e| match e {
            rdma_verbs::Error::AddrInfo { code, message } => (code, message),
            other => (-1, other.to_string()),
        }),
        None => Err(no_name()),
    };
    let found = found.and_then(|info| {
        info.into_iter()
            .find_map(|i| i.dst.or(i.src))
            .ok_or_else(no_name)
    });
    found.map(|a| a.ip()).map_err(|(code, text)| {
        println!("getaddrinfo failed ({text}) - invalid hostname or IP address");
        code
    })
}

/// The verbs objects of a node, made once its id is on a device.
struct Verbs {
    pd: ProtectionDomain,
    cq: CompletionQueue,
    /// One buffer of the message size plus the GRH, for every send and receive (as C);
    /// none when no message is sent.
    mr: Option<MemoryRegion>,
}

/// Where the group's datagrams go.
struct Group {
    ah: AddressHandle,
    qpn: u32,
    qkey: u32,
}

/// One id and its membership.
struct Node {
    id: CmId,
    verbs: Option<Verbs>,
    group: Option<Group>,
}

/// The test's state: C's `struct cmatest` and the globals it changes.
struct Test {
    channel: EventChannel,
    nodes: Vec<Node>,
    connects_left: i32,
    /// Messages; set to 0 when the size is 0, as C does.
    count: i32,
    size: i32,
    sender: bool,
    send_only: bool,
    loopback: bool,
    /// The group: `None` for an unmapped (AF_IB) one.
    dst: Option<IpAddr>,
}

impl Test {
    /// C's `verify_test_params`: a message must fit the port's active MTU.
    fn verify_test_params(&self, n: usize) -> Result<(), Ret> {
        let id = &self.nodes[n].id;
        let errno = |e: rdma_verbs::Error| e.raw_os_error().unwrap_or(libc::EINVAL);
        let ctx = id.context().map_err(errno)?;
        let attr = ctx.query_port(id.port_num().unwrap_or(0)).map_err(errno)?;
        let mtu = 1i64 << (attr.active_mtu.raw() + 7);
        if self.count != 0 && i64::from(self.size) > mtu {
            println!(
                "mckey: message_size {} is larger than active mtu {mtu}",
                self.size
            );
            return Err(-libc::EINVAL);
        }
        Ok(())
    }

    /// C's `init_node`: PD, CQ, the UD QP on the id and the message buffer.
    fn init_node(&mut self, n: usize) -> Result<(), Ret> {
        let count = self.count;
        let id = &mut self.nodes[n].id;
        let ctx = id.context().map_err(|_| -libc::ENOMEM)?;
        let Ok(pd) = ctx.alloc_pd() else {
            println!("mckey: unable to allocate PD");
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
            println!("mckey: unable to create CQ");
            return Err(-libc::ENOMEM);
        };
        let depth = u32::try_from(if count != 0 { count } else { 1 }).unwrap_or(u32::MAX);
        let qp = pd
            .create_qp(QpType::Ud, &cq, &cq)
            .max_send_wr(depth)
            .max_recv_wr(depth)
            .max_send_sge(1)
            .max_recv_sge(1);
        let qp = if self.loopback {
            qp
        } else {
            qp.create_flags(QpCreateFlags::BLOCK_SELF_MCAST_LB)
        };
        if let Err(e) = id.create_qp(qp) {
            perror("mckey: unable to create QP", &e);
            return Err(-1);
        }
        let mr = self
            .create_message(&pd)
            .inspect_err(|ret| println!("mckey: failed to create messages: {ret}"))?;
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
        let Some(len) = usize::try_from(self.size)
            .ok()
            .and_then(|size| size.checked_add(GRH_LEN))
        else {
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
        let mr = node.verbs.as_ref().and_then(|v| v.mr.as_ref());
        let (Some(mr), Some(qp)) = (mr, node.id.qp()) else {
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

    /// C's `post_sends`: the messages to the group, unsignaled, each with the QP number as
    /// immediate data.
    fn post_sends(&self, n: usize) -> Result<(), Ret> {
        let node = &self.nodes[n];
        let mr = node.verbs.as_ref().and_then(|v| v.mr.as_ref());
        let (Some(group), Some(mr), Some(qp)) = (&node.group, mr, node.id.qp()) else {
            return Ok(());
        };
        if self.count == 0 {
            return Ok(());
        }
        let len = usize::try_from(self.size).unwrap_or(0);
        let sge = [mr.sge(..len).map_err(|_| -libc::EINVAL)?];
        for _ in 0..self.count {
            let wr = SendRequest::send_with_imm(n as u64, &sge, qp.qp_num())
                .ud(&group.ah, group.qpn, group.qkey);
            if let Err(e) = qp.post_send(&mut [wr]) {
                let ret = e.raw_os_error().unwrap_or(-1);
                println!("failed to post sends: {ret}");
                return Err(ret);
            }
        }
        Ok(())
    }

    /// C's `poll_cqs`: `count` completions of each joined node.
    fn poll_cqs(&self) -> Result<(), Ret> {
        for node in &self.nodes {
            let (Some(verbs), Some(_)) = (&node.verbs, &node.group) else {
                continue;
            };
            let mut done = 0;
            while done < self.count {
                let mut wc = [WorkCompletion::default(); 8];
                match verbs.cq.poll(&mut wc) {
                    Ok(polled) => done += polled.len() as i32,
                    Err(e) => {
                        let ret = -e.raw_os_error().unwrap_or(1);
                        println!("mckey: failed polling CQ: {ret}");
                        return Err(ret);
                    }
                }
            }
        }
        Ok(())
    }

    /// A resolution or join failed for good.
    fn connect_error(&mut self) {
        self.connects_left -= 1;
    }

    /// C's `addr_handler`: the node's verbs (and a receiver's receives), then the join.
    fn addr_handler(&mut self, n: usize) -> Result<(), Ret> {
        let done = self
            .verify_test_params(n)
            .and_then(|()| self.init_node(n))
            .and_then(|()| {
                if self.sender {
                    Ok(())
                } else {
                    self.post_recvs(n)
                }
            })
            .and_then(|()| {
                let Some(group) = self.dst else {
                    eprintln!("mckey: failure joining: {NO_AF_IB}");
                    return Err(-1);
                };
                let flag = if self.send_only {
                    MulticastJoinFlag::SendOnlyFullMember
                } else {
                    MulticastJoinFlag::FullMember
                };
                self.nodes[n]
                    .id
                    .join_multicast_ex(group, flag)
                    .map_err(|e| {
                        perror("mckey: failure joining", &e);
                        -1
                    })
            });
        if done.is_err() {
            self.connect_error();
        }
        done
    }

    /// C's `join_handler`: the group's address handle, QP number and Q_Key.
    fn join_handler(&mut self, n: usize, ud: &UdPeer) -> Result<(), Ret> {
        let attr = ud.ah_attr();
        let dgid: [u8; 16] = Gid::from_raw(attr.grh.dgid).into();
        println!(
            "mckey: joined dgid: {} mlid 0x{:x} sl {}",
            inet_ntop::ipv6(dgid),
            attr.dlid,
            attr.sl
        );
        let node = &mut self.nodes[n];
        let ah = node.verbs.as_ref().and_then(|v| ud.create_ah(&v.pd).ok());
        let Some(ah) = ah else {
            println!("mckey: failure creating address handle");
            self.connect_error();
            return Err(-1);
        };
        node.group = Some(Group {
            ah,
            qpn: ud.qp_num,
            qkey: ud.qkey,
        });
        self.connects_left -= 1;
        Ok(())
    }

    /// C's `cma_handler`.
    fn cma_handler(&mut self, event: CmEvent) -> Result<(), Ret> {
        let Some(n) = self.nodes.iter().position(|node| event.is_for(&node.id)) else {
            return Ok(());
        };
        match &event.kind {
            CmEventKind::AddrResolved => self.addr_handler(n),
            CmEventKind::MulticastJoin { ud, .. } => self.join_handler(n, ud),
            kind @ (CmEventKind::AddrError
            | CmEventKind::RouteError
            | CmEventKind::MulticastError { .. }) => {
                println!("mckey: event: {}, error: {}", kind.c_name(), event.status);
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

    /// C's `connect_events`: events until every id has joined or failed, or a handler
    /// fails.
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

    /// C's leaving at the end of `run`: the result of the last id's leave.
    fn leave(&mut self) -> Ret {
        let mut ret = 0;
        for node in &mut self.nodes {
            ret = match self.dst {
                Some(group) if node.id.multicast_groups().contains(&group) => {
                    match node.id.leave_multicast(group) {
                        Ok(()) => 0,
                        Err(e) => {
                            perror("mckey: failure leaving", &e);
                            -1
                        }
                    }
                }
                // librdmacm's answer for a group the id has not joined.
                _ => {
                    eprintln!("mckey: failure leaving: {}", strerror(libc::EADDRNOTAVAIL));
                    -1
                }
            };
        }
        ret
    }
}

/// C's `cma_thread`: reports the events that come after the joins.
fn report_events(channel: EventChannel) {
    loop {
        let event = match channel.get_event() {
            Ok(event) => event,
            Err(e) => {
                perror("rdma_get_cm_event", &e);
                return;
            }
        };
        if matches!(
            event.kind,
            CmEventKind::MulticastError { .. } | CmEventKind::AddrChange
        ) {
            println!(
                "mckey: event: {}, status: {}",
                event.kind.c_name(),
                event.status
            );
        }
    }
}

/// C's `run`.
fn run(t: &mut Test, o: &Options) -> Ret {
    println!(
        "mckey: starting {}",
        if o.sender { "client" } else { "server" }
    );
    let src = match o.src.as_deref().map(|s| get_addr(Some(s))).transpose() {
        Ok(src) => src.map(|ip| SocketAddr::new(ip, 0)),
        Err(ret) => return ret,
    };
    if !o.unmapped {
        match get_addr(o.dst.as_deref()) {
            Ok(ip) => t.dst = Some(ip),
            Err(ret) => return ret,
        }
    }
    println!("mckey: joining");
    for n in 0..t.nodes.len() {
        if let Some(src) = src {
            if let Err(e) = t.nodes[n].id.bind(src) {
                perror("mckey: addr bind failure", &e);
                t.connect_error();
                return -1;
            }
        }
        let started = match t.dst {
            Some(group) => t.nodes[n]
                .id
                .resolve_addr(src, SocketAddr::new(group, 0), RESOLVE_TIMEOUT)
                .map_err(|e| verbs_error_text(&e)),
            None => t.addr_handler(n).map_err(|_| NO_AF_IB.to_owned()),
        };
        if let Err(text) = started {
            eprintln!("mckey: resolve addr failure: {text}");
            t.connect_error();
            return -1;
        }
    }
    let mut ret = t.connect_events();
    if ret == 0 {
        let channel = t.channel.clone();
        thread::spawn(move || report_events(channel));
        thread::sleep(SM_PAUSE);
        if t.count != 0 {
            ret = if t.sender {
                println!("initiating data transfers");
                (0..t.nodes.len()).try_for_each(|n| t.post_sends(n))
            } else {
                println!("receiving data transfers");
                t.poll_cqs()
            }
            .err()
            .unwrap_or(0);
            if ret == 0 {
                println!("data transfers complete");
            }
        }
    }
    // As C, whatever happened: every id leaves, and the last leave's result is returned.
    t.leave()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if o.unmapped && o.src.is_none() {
        println!("unmapped multicast address requires binding to source address");
        return ExitCode::from(1);
    }
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
        println!("mckey: unable to allocate memory for test nodes");
        return ExitCode::from(1);
    };
    // rdma_create_id refuses a number that is no port space (EINVAL): C exits quietly.
    let Some(ps) = i32::try_from(o.port_space)
        .ok()
        .and_then(PortSpace::from_raw)
    else {
        return ExitCode::from(1);
    };
    let mut nodes = Vec::with_capacity(connections);
    for _ in 0..connections {
        let Ok(id) = channel.create_id(ps) else {
            return ExitCode::from(1);
        };
        nodes.push(Node {
            id,
            verbs: None,
            group: None,
        });
    }
    let mut t = Test {
        channel,
        nodes,
        connects_left: o.connections,
        count: o.count,
        size: o.size,
        sender: o.sender,
        send_only: o.send_only,
        loopback: o.loopback,
        dst: None,
    };
    let ret = run(&mut t, &o);
    println!("test complete");
    drop(t);
    println!("return status {ret}");
    exit_code(ret)
}
