//! Directed-route discovery of a whole subnet, as libibnetdisc's `ibnd_discover_fabric`
//! does it: from the local port, NodeInfo at each hop, then NodeDescription, SwitchInfo and
//! PortInfo of every new node, and onwards through every switch port that is LinkUp.
//!
//! Requests are handled in the order libibnetdisc queues them (first in, first out), so the
//! nodes are found, and listed, in the C library's order. Every answer is untrusted: a port
//! number out of range, a path over 63 hops or a fabric larger than [`MAX_NODES`] ends that
//! branch with a message, never a panic or an endless walk.

pub mod cache;
mod smi;
#[cfg(test)]
mod tests;

pub use smi::{Smi, UmadSmi};

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

use ibumad::mad::{NodeDescription, NodeInfo, PortInfo, SwitchInfo};

use crate::cli::Output;
use crate::fabric::mlnx_ext;
use crate::fabric::portinfo_text::CAP_HAS_EXT_SPEEDS;

/// Node types of NodeInfo.
pub const NODE_CA: u8 = 1;
/// A switch.
pub const NODE_SWITCH: u8 = 2;
/// A router.
pub const NODE_ROUTER: u8 = 3;

/// SMPs in flight during the walk: libibnetdisc's default (`DEFAULT_MAX_SMP_ON_WIRE`,
/// ibnetdiscover's `-o`).
const IN_FLIGHT: usize = 2;

/// Most hops of a directed route.
const MAX_HOPS: usize = 63;
/// Most nodes a discovery accepts (a subnet has at most 48K unicast LIDs): a fabric that
/// answers with ever new GUIDs ends here.
pub const MAX_NODES: usize = 49_152;

/// PortPhysicalState LinkUp.
const LINK_UP: u8 = 5;

/// A discovered subnet (libibnetdisc's `ibnd_fabric_t`).
#[derive(Debug, Default)]
pub struct Fabric {
    /// The nodes, in the order they were found.
    pub nodes: Vec<Node>,
    /// The local node and the port the discovery started from.
    pub from: Option<(usize, u8)>,
    /// The longest directed route used, in hops.
    pub max_hops: u32,
    /// How many SMPs were sent.
    pub total_mads: u32,
    /// How many ports were entered in the port table (libibnetdisc's port GUID hash), which
    /// gives the order of the ports in a cache file.
    pub ports_hashed: u32,
}

/// One node (`ibnd_node_t`).
#[derive(Debug)]
pub struct Node {
    /// Its NodeInfo, as first received.
    pub info: NodeInfo,
    /// The 64 bytes of that NodeInfo.
    pub info_raw: [u8; 64],
    /// Its SwitchInfo's 64 bytes (zero until received).
    pub switch_info: [u8; 64],
    /// Its NodeDescription (zero until received).
    pub desc: [u8; 64],
    /// SwitchInfo's EnhancedPort0.
    pub enhanced_port0: bool,
    /// LID of the switch's port 0 (switches).
    pub sma_lid: u16,
    /// LMC of the switch's port 0.
    pub sma_lmc: u8,
    /// Ports by number, 0 to NumPorts; `None` where nothing was learnt.
    pub ports: Vec<Option<Port>>,
}

/// One port (`ibnd_port_t`).
#[derive(Debug)]
pub struct Port {
    /// Port number.
    pub num: u8,
    /// Port GUID.
    pub guid: u64,
    /// Its PortInfo (zero until received).
    pub info: PortInfo,
    /// The 64 bytes of that PortInfo.
    pub info_raw: [u8; 64],
    /// When it entered the port table (see [`Fabric::ports_hashed`]), if it did.
    pub hashed: Option<u32>,
    /// Mellanox ExtendedPortInfo's LinkSpeedActive (FDR10 bit), read on Mellanox QDR links.
    pub mlnx_speed_active: u8,
    /// Base LID (a switch port has its port 0's).
    pub base_lid: u16,
    /// LMC.
    pub lmc: u8,
    /// The port at the other end of the link: node index and port number.
    pub remote: Option<(usize, u8)>,
}

impl Default for Port {
    fn default() -> Port {
        Port {
            num: 0,
            guid: 0,
            info: PortInfo::default(),
            info_raw: [0; 64],
            hashed: None,
            mlnx_speed_active: 0,
            base_lid: 0,
            lmc: 0,
            remote: None,
        }
    }
}

impl Node {
    /// Whether the node is a switch.
    pub fn is_switch(&self) -> bool {
        self.info.node_type == NODE_SWITCH
    }

    /// Port `num`, if known.
    pub fn port(&self, num: u8) -> Option<&Port> {
        self.ports.get(usize::from(num)).and_then(Option::as_ref)
    }

    /// The LID a link to this node shows: port 0's on a switch, else the port's own.
    pub fn lid_of(&self, port: &Port) -> u16 {
        if self.is_switch() {
            self.sma_lid
        } else {
            port.base_lid
        }
    }
}

impl Fabric {
    /// The node and port at the other end of `port`.
    pub fn remote(&self, port: &Port) -> Option<(&Node, &Port)> {
        let (n, p) = port.remote?;
        let node = self.nodes.get(n)?;
        Some((node, node.port(p)?))
    }

    /// The nodes of `node_type`, most recently found first (libibnetdisc's type lists).
    pub fn of_type(&self, node_type: u8) -> impl Iterator<Item = &Node> {
        self.nodes
            .iter()
            .rev()
            .filter(move |n| n.info.node_type == node_type)
    }
}

/// What a queued SMP asks, and for which node.
#[derive(Debug)]
enum Query {
    /// NodeInfo of the node at the end of the path, reached from this node and port.
    NodeInfo(Option<(usize, u8)>),
    NodeDesc(usize),
    SwitchInfo(usize),
    PortInfo(usize, u8),
    /// Mellanox's ExtendedPortInfo of a port, before going on through it.
    MlnxExtPortInfo(usize, u8),
}

/// The discovery in progress: libibnetdisc's SMP engine and scan state.
struct Scan<'a> {
    fabric: Fabric,
    by_guid: HashMap<u64, usize>,
    queue: VecDeque<(Vec<u8>, Query)>,
    show_progress: bool,
    out: &'a mut Output,
}

/// `ibnd_discover_fabric` from the local port: walks the subnet through `smi`; with
/// `show_progress` (ibnetdiscover's `-s`) prints each node reached. Errors on the way are
/// reported on stderr and end their branch only; `None` when the walk itself fails.
pub fn discover(smi: &mut dyn Smi, show_progress: bool, out: &mut Output) -> Option<Fabric> {
    let mut scan = Scan {
        fabric: Fabric::default(),
        by_guid: HashMap::new(),
        queue: VecDeque::new(),
        show_progress,
        out,
    };
    scan.queue.push_back((Vec::new(), Query::NodeInfo(None)));
    // Sent, their answers not yet handled, oldest first. The queue is sent in its order and
    // the answers handled in the same order, so the walk is the one of one SMP at a time.
    let mut in_flight: VecDeque<(Vec<u8>, Query, u16, u32)> = VecDeque::new();
    loop {
        while in_flight.len() < IN_FLIGHT {
            let Some((path, query)) = scan.queue.pop_front() else {
                break;
            };
            let (attr, modifier) = match query {
                Query::NodeInfo(_) => (NodeInfo::ATTR_ID, 0),
                Query::NodeDesc(_) => (NodeDescription::ATTR_ID, 0),
                Query::SwitchInfo(_) => (SwitchInfo::ATTR_ID, 0),
                Query::PortInfo(_, port) => (PortInfo::ATTR_ID, u32::from(port)),
                Query::MlnxExtPortInfo(_, port) => (mlnx_ext::ATTR_ID, u32::from(port)),
            };
            scan.fabric.total_mads += 1;
            smi.send(&path, attr, modifier);
            in_flight.push_back((path, query, attr, modifier));
        }
        let Some((path, query, attr, modifier)) = in_flight.pop_front() else {
            break;
        };
        let data = match smi.answer() {
            Ok(data) => data,
            Err(e) => {
                let text = format!(
                    "ibnetdisc: {} Attr {attr:#x}:{modifier}: {e}",
                    dr_text(&path)
                );
                scan.out.error(&text);
                // `mlnx_ext_port_info_err`: the walk goes on without it.
                if let Query::MlnxExtPortInfo(n, port) = query {
                    scan.onward(&path, n, port);
                }
                continue;
            }
        };
        let done = match query {
            Query::NodeInfo(from) => scan.node_info(path, from, &data),
            Query::NodeDesc(n) => {
                scan.fabric.nodes[n].desc = data;
                Ok(())
            }
            Query::SwitchInfo(n) => {
                let info = SwitchInfo::decode(&data).unwrap_or_default();
                scan.fabric.nodes[n].enhanced_port0 = info.enhanced_port0 != 0;
                scan.fabric.nodes[n].switch_info = data;
                Ok(())
            }
            Query::PortInfo(n, port) => scan.port_info(path, n, port, &data),
            Query::MlnxExtPortInfo(n, port) => {
                if let Some(p) = scan.fabric.nodes[n].ports[usize::from(port)].as_mut() {
                    p.mlnx_speed_active = data[mlnx_ext::LINK_SPEED_ACTIVE];
                }
                scan.onward(&path, n, port);
                Ok(())
            }
        };
        if let Err(msg) = done {
            scan.out.error(&format!("ibnetdisc: {msg}"));
            if scan.fabric.nodes.len() >= MAX_NODES || scan.fabric.from.is_none() {
                return None;
            }
        }
    }
    scan.fabric.from?;
    Some(scan.fabric)
}

/// A directed route as libibmad's `portid2str` writes it for ibnetdiscover (DrSLID and
/// DrDLID 0): `DR path slid 0; dlid 0; 0,1,5`.
pub fn dr_text(path: &[u8]) -> String {
    let mut text = String::from("DR path slid 0; dlid 0; 0");
    for hop in path {
        let _ = write!(text, ",{hop}");
    }
    text
}

impl Scan<'_> {
    fn push(&mut self, path: &[u8], query: Query) {
        self.queue.push_back((path.to_vec(), query));
    }

    /// `recv_node_info`: a node reached at the end of `path`, from `from`.
    fn node_info(
        &mut self,
        path: Vec<u8>,
        from: Option<(usize, u8)>,
        data: &[u8; 64],
    ) -> Result<(), String> {
        let info = NodeInfo::decode(data).map_err(|e| e.to_string())?;
        let (n, new) = match self.by_guid.get(&info.node_guid) {
            Some(&n) => (n, false),
            None => {
                if self.fabric.nodes.len() >= MAX_NODES {
                    return Err(format!("more than {MAX_NODES} nodes; discovery stopped"));
                }
                let n = self.fabric.nodes.len();
                self.fabric.nodes.push(Node {
                    info,
                    info_raw: *data,
                    switch_info: [0; 64],
                    desc: [0; 64],
                    enhanced_port0: false,
                    sma_lid: 0,
                    sma_lmc: 0,
                    ports: (0..=info.num_ports).map(|_| None).collect(),
                });
                self.by_guid.insert(info.node_guid, n);
                (n, true)
            }
        };
        let port_num = info.local_port_num;
        let node = &mut self.fabric.nodes[n];
        let Some(slot) = node.ports.get_mut(usize::from(port_num)) else {
            return Err(format!(
                "node {:#018x} answered on port {port_num} of {}",
                node.info.node_guid, node.info.num_ports
            ));
        };
        let port = slot.get_or_insert_with(|| Port {
            num: port_num,
            ..Port::default()
        });
        port.guid = info.port_guid;
        if self.show_progress {
            self.progress(&path, new, n, port_num);
        }
        match from {
            None => self.fabric.from = Some((n, port_num)),
            Some(remote) => self.link((n, port_num), remote)?,
        }
        let switch = self.fabric.nodes[n].is_switch();
        if new {
            self.push(&path, Query::NodeDesc(n));
            if switch {
                self.push(&path, Query::SwitchInfo(n));
                self.push(&path, Query::PortInfo(n, 0));
            }
        }
        if !switch {
            self.push(&path, Query::PortInfo(n, port_num));
        }
        Ok(())
    }

    /// `dump_endnode`: the `-s` line for a node reached.
    fn progress(&mut self, path: &[u8], new: bool, n: usize, port_num: u8) {
        let node = &self.fabric.nodes[n];
        let Some(port) = node.port(port_num) else {
            return;
        };
        let kind = match node.info.node_type {
            NODE_CA => "Channel Adapter".to_owned(),
            NODE_SWITCH => "Switch".to_owned(),
            NODE_ROUTER => "Router".to_owned(),
            t => format!("?({t})?"),
        };
        let end = port.base_lid as u32 + (1u32 << (port.lmc & 7)) - 1;
        let _ = writeln!(
            self.out,
            "{} -> {} {kind} {{{:016x}}} portnum {} lid {}-{} \"{}\"",
            dr_text(path),
            if new { "new" } else { "known" },
            node.info.node_guid,
            if node.is_switch() { 0 } else { port_num },
            port.base_lid,
            end as u16,
            NodeDescription(node.desc).text(),
        );
    }

    /// `link_ports`: joins two ports, unlinking their former partners.
    fn link(&mut self, a: (usize, u8), b: (usize, u8)) -> Result<(), String> {
        if self.port_mut(b).is_none() {
            return Err(format!("no port {} on node {} to link", b.1, b.0));
        }
        for end in [a, b] {
            let old = self.port_mut(end).and_then(|p| p.remote.take());
            if let Some(p) = old.and_then(|old| self.port_mut(old)) {
                p.remote = None;
            }
        }
        if let Some(p) = self.port_mut(a) {
            p.remote = Some(b);
        }
        if let Some(p) = self.port_mut(b) {
            p.remote = Some(a);
        }
        Ok(())
    }

    fn port_mut(&mut self, (n, p): (usize, u8)) -> Option<&mut Port> {
        self.fabric
            .nodes
            .get_mut(n)?
            .ports
            .get_mut(usize::from(p))?
            .as_mut()
    }

    /// `recv_port_info` (and `recv_port0_info` for port 0, which then asks for every port).
    fn port_info(
        &mut self,
        path: Vec<u8>,
        n: usize,
        port_num: u8,
        data: &[u8; 64],
    ) -> Result<(), String> {
        let info = PortInfo::decode(data).map_err(|e| e.to_string())?;
        let node = &mut self.fabric.nodes[n];
        let switch = node.is_switch();
        let default_guid = node.info.port_guid;
        let (sma_lid, sma_lmc) = (node.sma_lid, node.sma_lmc);
        let num_ports = node.info.num_ports;
        let port = node.ports[usize::from(port_num)].get_or_insert_with(|| Port {
            guid: default_guid,
            ..Port::default()
        });
        port.info = info;
        port.info_raw = *data;
        port.num = port_num;
        if port.hashed.is_none() {
            port.hashed = Some(self.fabric.ports_hashed);
            self.fabric.ports_hashed += 1;
        }
        port.base_lid = info.lid;
        port.lmc = info.lmc;
        if port_num == 0 {
            node.sma_lid = info.lid;
            node.sma_lmc = info.lmc;
        } else if switch {
            port.base_lid = sma_lid;
            port.lmc = sma_lmc;
        }
        if self.wants_mlnx_ext(n, port_num) {
            self.push(&path, Query::MlnxExtPortInfo(n, port_num));
        } else {
            self.onward(&path, n, port_num);
        }
        if port_num == 0 {
            for p in 1..=num_ports {
                self.push(&path, Query::PortInfo(n, p));
            }
        }
        Ok(())
    }

    /// Whether libibnetdisc reads Mellanox's ExtendedPortInfo of this port before going on:
    /// a Mellanox device's LinkUp port at QDR without extended speeds (FDR10 or QDR).
    fn wants_mlnx_ext(&self, n: usize, port_num: u8) -> bool {
        let node = &self.fabric.nodes[n];
        let Some(port) = node.port(port_num) else {
            return false;
        };
        if !mlnx_ext::supported(node.info.vendor_id, node.info.device_id) {
            return false;
        }
        let caps_port = if node.is_switch() {
            node.port(0)
        } else {
            Some(port)
        };
        let caps = caps_port.map_or(0, |p| p.info.capability_mask);
        let espeed = if caps & CAP_HAS_EXT_SPEEDS != 0 {
            port.info.link_speed_ext_active
        } else {
            0
        };
        port.info.port_physical_state == LINK_UP && port.info.link_speed_active == 4 && espeed == 0
    }

    /// The end of `recv_port_info`: through a switch port that is LinkUp (not the one the
    /// SMP came in by), or out of the local port, on to the next node.
    fn onward(&mut self, path: &[u8], n: usize, port_num: u8) {
        let from = self.fabric.from;
        let node = &self.fabric.nodes[n];
        let switch = node.is_switch();
        let Some(info) = node.port(port_num).map(|p| p.info) else {
            return;
        };
        let onward = port_num != 0
            && info.port_physical_state == LINK_UP
            && ((switch && port_num != info.local_port_num) || from == Some((n, port_num)));
        if !onward {
            return;
        }
        let from_node = from.map(|(f, _)| f) == Some(n);
        let mut next = path.to_vec();
        if !switch && from_node && path.len() > 1 {
            next.pop();
            self.fabric.max_hops += 1;
        } else if next.len() >= MAX_HOPS {
            self.out.error(&format!(
                "ibnetdisc: add port {port_num} to DR path failed; {}",
                dr_text(path)
            ));
            return;
        } else {
            next.push(port_num);
            if next.len() as u32 > self.fabric.max_hops {
                self.fabric.max_hops += 1;
            }
        }
        self.push(&next, Query::NodeInfo(Some((n, port_num))));
    }
}
