//! The link between the hosts: where it is (the environment), and the faults injected
//! on this host's side of it (`tc ... netem`, `ip link set ... down`).

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::{Duration, Instant};

use rdma_verbs::{Context, GidType, PortState};

use crate::GUARD;

pub const DEVICE_VAR: &str = "WITH_RDMA_LINK_DEVICE";
pub const NETDEV_VAR: &str = "WITH_RDMA_LINK_NETDEV";
pub const LOCAL_VAR: &str = "WITH_RDMA_LOCAL_ADDR";
pub const PEER_VAR: &str = "WITH_RDMA_PEER_ADDR";
pub const EXEC_VAR: &str = "WITH_RDMA_PEER_EXEC";
pub fn env(name: &str) -> String {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => value,
        _ => panic!(
            "{name} is not set: the link-fault tests need two hosts joined by a link. Run them \
             with WITH_RDMA_TOPOLOGY=pair (two VMs; `scripts/with-rdma --pair-start` boots \
             them), or describe your peer with {DEVICE_VAR}, {NETDEV_VAR}, {LOCAL_VAR}, \
             {PEER_VAR} and {EXEC_VAR} (see docs/testing.md)"
        ),
    }
}

pub fn env_addr(name: &str) -> Ipv4Addr {
    let value = env(name);
    value
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name}={value:?} is not an IPv4 address"))
}

/// This host's side of the link and how to reach the peer.
pub struct Link {
    pub device: String,
    pub netdev: String,
    pub local: Ipv4Addr,
    pub peer: Ipv4Addr,
    pub peer_exec: Vec<String>,
}

impl Link {
    pub fn from_env() -> Link {
        Link {
            device: env(DEVICE_VAR),
            netdev: env(NETDEV_VAR),
            local: env_addr(LOCAL_VAR),
            peer: env_addr(PEER_VAR),
            peer_exec: env(EXEC_VAR)
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
        }
    }
}

/// Runs `argv`, returning its stdout, or its stderr as the error.
pub fn run(argv: &[&str]) -> Result<String, String> {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A fault on this host's side of the link: a netem qdisc on the network device (egress:
/// it acts on the packets this host sends), or the device taken down. Removed on drop.
pub struct Fault {
    netdev: String,
    kind: FaultKind,
    active: bool,
}

#[derive(Clone, Debug)]
pub enum FaultKind {
    /// `tc qdisc replace dev NETDEV root netem SPEC`
    Netem(String),
    /// `ip link set dev NETDEV down`
    LinkDown,
}

impl Fault {
    pub fn inject(netdev: &str, kind: FaultKind) -> Fault {
        let result = match &kind {
            FaultKind::Netem(spec) => {
                let mut argv = vec!["tc", "qdisc", "replace", "dev", netdev, "root", "netem"];
                argv.extend(spec.split_whitespace());
                run(&argv)
            }
            FaultKind::LinkDown => run(&["ip", "link", "set", "dev", netdev, "down"]),
        };
        if let Err(e) = result {
            panic!(
                "cannot inject {kind:?} on {netdev} (root and, for netem, sch_netem needed): {e}"
            );
        }
        Fault {
            netdev: netdev.to_owned(),
            kind,
            active: true,
        }
    }

    pub fn netem(netdev: &str, spec: &str) -> Fault {
        Fault::inject(netdev, FaultKind::Netem(spec.to_owned()))
    }

    /// The packets the netem qdisc has dropped (`tc -s qdisc show`).
    pub fn dropped(&self) -> u64 {
        let text = run(&["tc", "-s", "qdisc", "show", "dev", &self.netdev])
            .unwrap_or_else(|e| panic!("{e}"));
        let after = text
            .split_once("(dropped ")
            .unwrap_or_else(|| panic!("no drop count in `tc -s qdisc show`: {text}"))
            .1;
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits
            .parse()
            .unwrap_or_else(|_| panic!("bad drop count in `tc -s qdisc show`: {text}"))
    }

    pub fn undo(&mut self) -> Result<String, String> {
        self.active = false;
        match self.kind {
            FaultKind::Netem(_) => run(&["tc", "qdisc", "del", "dev", &self.netdev, "root"]),
            FaultKind::LinkDown => run(&["ip", "link", "set", "dev", &self.netdev, "up"]),
        }
    }

    /// Removes the fault; panics if that fails.
    pub fn remove(mut self) {
        if let Err(e) = self.undo() {
            panic!("cannot remove {:?} from {}: {e}", self.kind, self.netdev);
        }
    }
}

impl Drop for Fault {
    fn drop(&mut self) {
        if self.active {
            if let Err(e) = self.undo() {
                eprintln!("link_faults: cannot remove {:?}: {e}", self.kind);
            }
        }
    }
}

/// The index of the RoCE v2 GID of `addr` in the GID table of port 1, waiting up to `within`
/// for it (and for the port to be ACTIVE): after the link comes back up, the port and the
/// GID take a moment to return.
pub fn gid_index(ctx: &Context, addr: Ipv4Addr, within: Duration) -> u8 {
    let want = addr.to_ipv6_mapped();
    let start = Instant::now();
    loop {
        let active = ctx.query_port(1).unwrap().state == PortState::Active;
        let found = ctx
            .gid_table(1)
            .unwrap()
            .into_iter()
            .find(|e| e.gid_type == GidType::RoceV2 && Ipv6Addr::from(e.gid) == want);
        if let (true, Some(entry)) = (active, found) {
            return entry.index;
        }
        assert!(
            start.elapsed() <= within,
            "port 1 of the link device is not ACTIVE with a RoCE v2 GID for {addr} \
             (active: {active}, GID found: {})",
            found.is_some()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The device's nonzero hardware counters (rxe counts retries, timeouts, send errors...),
/// for the messages of failed tests.
pub fn counters(device: &str) -> String {
    let dir = format!("/sys/class/infiniband/{device}/ports/1/hw_counters");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return format!("(no {dir})");
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let value = std::fs::read_to_string(e.path()).ok()?;
            let value = value.trim();
            (value != "0").then(|| format!("{}={value}", e.file_name().to_string_lossy()))
        })
        .collect();
    out.sort();
    out.join(" ")
}

/// A `tc -batch -` (netem) or `ip -o -batch -` (link down) process started ahead of a
/// fault, so that injecting it does not wait for a program to start (slow in an emulated
/// machine) and the stream of writes goes on meanwhile. After each command it is asked to
/// show `lo` (`tc qdisc show dev lo`, `ip -o link show dev lo`: one line); that line tells
/// that the command has been carried out.
pub struct Injector {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    netdev: String,
    kind: FaultKind,
    fired: bool,
}

impl Injector {
    /// Starts the program and waits until it answers.
    pub fn start(netdev: &str, kind: FaultKind) -> Injector {
        let argv: &[&str] = match kind {
            FaultKind::Netem(_) => &["tc", "-batch", "-"],
            FaultKind::LinkDown => &["ip", "-o", "-batch", "-"],
        };
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {argv:?}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut injector = Injector {
            stdin: child.stdin.take(),
            child,
            lines,
            netdev: netdev.to_owned(),
            kind,
            fired: false,
        };
        if let FaultKind::Netem(_) = injector.kind {
            // A lossless netem first, before the stream starts: the fault then changes
            // that qdisc's parameters in place. Replacing the device's default qdisc
            // with the stream running swaps the qdisc under it, and rxe on Linux 7.x over
            // veth can fail a QP on a packet sent during the swap (a flush where the
            // retries should run out), which no real outage does.
            let lossless = format!("qdisc replace dev {} root netem", injector.netdev);
            injector.command(&lossless);
            injector.fired = true;
        }
        injector.show();
        if let Err(e) = injector.lines.recv_timeout(GUARD) {
            panic!("{argv:?} does not answer: {e}");
        }
        injector
    }

    pub fn command(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot send {line:?} to tc/ip: {e}"));
    }

    /// Asks for one line of output (about `lo`, which has one qdisc).
    pub fn show(&mut self) {
        self.command(match self.kind {
            FaultKind::Netem(_) => "qdisc show dev lo",
            FaultKind::LinkDown => "link show dev lo",
        });
    }

    /// Injects the fault (without waiting for it).
    pub fn fire(&mut self) {
        let command = match &self.kind {
            FaultKind::Netem(spec) => {
                format!("qdisc replace dev {} root netem {spec}", self.netdev)
            }
            FaultKind::LinkDown => format!("link set dev {} down", self.netdev),
        };
        self.fired = true;
        self.command(&command);
        self.show();
    }

    /// Whether the fault is in place; panics if the program failed.
    pub fn in_place(&self) -> bool {
        match self.lines.try_recv() {
            Ok(_) => true,
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Disconnected) => {
                panic!(
                    "injecting {:?} on {} failed (see its error above)",
                    self.kind, self.netdev
                )
            }
        }
    }

    /// The fault, once in place; ends the program.
    pub fn into_fault(mut self) -> Fault {
        self.fired = false;
        Fault {
            netdev: self.netdev.clone(),
            kind: self.kind.clone(),
            active: true,
        }
    }
}

impl Drop for Injector {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
        if self.fired {
            // Dropped between injecting the fault and taking it over: undo it here.
            drop(Fault {
                netdev: self.netdev.clone(),
                kind: self.kind.clone(),
                active: true,
            });
        }
    }
}
