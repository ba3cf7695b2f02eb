//! `ibnetdiscover --diff <cache>` (and `--diffcheck <keys>`): what differs between a cached
//! fabric (`< ` lines) and the current one (`> ` lines), node type by node type.

use std::collections::HashMap;

use super::topology::Out;
use crate::fabric::netdisc::{Fabric, Node, NODE_CA, NODE_ROUTER, NODE_SWITCH};

/// What `--diffcheck` compares (the C `DIFF_FLAG_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks(pub u8);

impl Checks {
    /// Switches.
    pub const SWITCH: u8 = 0x01;
    /// Channel adapters.
    pub const CA: u8 = 0x02;
    /// Routers.
    pub const ROUTER: u8 = 0x04;
    /// Port connections.
    pub const PORT: u8 = 0x08;
    /// LIDs.
    pub const LID: u8 = 0x10;
    /// Node descriptions.
    pub const NODEDESC: u8 = 0x20;

    fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }

    /// The keys of `--diffcheck` (`sw,ca,router,port,lid,nodedesc`, any case); `Err` names
    /// the first other key.
    pub fn parse(text: &str) -> Result<Checks, String> {
        let mut flags = 0;
        for key in text.split(',').filter(|k| !k.is_empty()) {
            flags |= match key.to_ascii_lowercase().as_str() {
                "sw" => Checks::SWITCH,
                "ca" => Checks::CA,
                "router" => Checks::ROUTER,
                "port" => Checks::PORT,
                "lid" => Checks::LID,
                "nodedesc" => Checks::NODEDESC,
                _ => return Err(key.to_owned()),
            };
        }
        Ok(Checks(flags))
    }
}

impl Default for Checks {
    /// Switches, CAs, routers and port connections.
    fn default() -> Checks {
        Checks(Checks::SWITCH | Checks::CA | Checks::ROUTER | Checks::PORT)
    }
}

/// One direction of the comparison.
struct Pass<'a> {
    checks: Checks,
    one: &'a Out<'a>,
    two: &'a Out<'a>,
    /// The second fabric's nodes by GUID (the last one found with it).
    two_by_guid: HashMap<u64, usize>,
    prefix_one: &'static str,
    prefix_two: &'static str,
}

/// `diff`: for each node type asked for, the nodes of `orig` missing from or differing in
/// `new`, then the nodes of `new` missing from `orig`.
pub fn write_diff(orig: &Out, new: &Out, checks: Checks, w: &mut String) {
    for (flag, node_type) in [
        (Checks::SWITCH, NODE_SWITCH),
        (Checks::CA, NODE_CA),
        (Checks::ROUTER, NODE_ROUTER),
    ] {
        if !checks.has(flag) {
            continue;
        }
        let forward = Pass {
            checks,
            one: orig,
            two: new,
            two_by_guid: by_guid(new.fabric),
            prefix_one: "< ",
            prefix_two: "> ",
        };
        for node in orig.fabric.of_type(node_type) {
            forward.node(node, w);
        }
        let only_presence = Checks::PORT | Checks::LID | Checks::NODEDESC;
        let backward = Pass {
            checks: Checks(checks.0 & !only_presence),
            one: new,
            two: orig,
            two_by_guid: by_guid(orig.fabric),
            prefix_one: "> ",
            prefix_two: "< ",
        };
        for node in new.fabric.of_type(node_type) {
            backward.node(node, w);
        }
    }
}

/// The nodes of `fabric` by GUID, the last one found with each (`ibnd_find_node_guid`).
fn by_guid(fabric: &Fabric) -> HashMap<u64, usize> {
    let mut map = HashMap::new();
    for (n, node) in fabric.nodes.iter().enumerate() {
        map.insert(node.info.node_guid, n);
    }
    map
}

impl Pass<'_> {
    fn header(&self, out: &Out, node: &Node, id_prefix: &str, prefix: &str, w: &mut String) {
        if node.is_switch() {
            out.switch_header(node, id_prefix, prefix, w);
        } else {
            out.ca_header(node, id_prefix, prefix, w);
        }
    }

    fn detail(&self, out: &Out, node: &Node, prefix: &str, w: &mut String) {
        if node.is_switch() {
            out.switch_detail(node, prefix, w);
        } else {
            out.ca_detail(node, prefix, w);
        }
    }

    fn port(&self, out: &Out, node: &Node, num: u8, prefix: &str, w: &mut String) {
        let Some(port) = node.port(num) else {
            return;
        };
        if node.is_switch() {
            out.switch_port(node, port, prefix, w);
        } else {
            out.ca_port(node, port, prefix, w);
        }
    }

    /// `diff_iter_func` for one node of the first fabric.
    fn node(&self, one: &Node, w: &mut String) {
        let found = self.two_by_guid.get(&one.info.node_guid);
        let Some(two) = found.map(|&n| &self.two.fabric.nodes[n]) else {
            let p = self.prefix_one;
            self.header(self.one, one, p, p, w);
            for num in 1..=one.info.num_ports {
                self.port(self.one, one, num, p, w);
            }
            return;
        };
        let c = self.checks;
        if !(c.has(Checks::PORT) || c.has(Checks::LID) || c.has(Checks::NODEDESC)) {
            return;
        }
        let mut shown = false;
        if (c.has(Checks::LID) && one.sma_lid != two.sma_lid)
            || (c.has(Checks::NODEDESC) && one.desc != two.desc)
        {
            self.header(self.one, one, "", self.prefix_one, w);
            self.detail(self.two, two, self.prefix_two, w);
            w.push('\n');
            shown = true;
        }
        if one.info.num_ports != two.info.num_ports {
            if !shown {
                self.header(self.one, one, "", "", w);
            }
            w.push_str(&format!(
                "{}numports = {}\n{}numports = {}\n",
                self.prefix_one, one.info.num_ports, self.prefix_two, two.info.num_ports
            ));
            return;
        }
        if c.has(Checks::PORT) || c.has(Checks::LID) {
            self.ports(one, two, &mut shown, w);
        }
    }

    /// `diff_ports`.
    fn ports(&self, one: &Node, two: &Node, shown: &mut bool, w: &mut String) {
        let c = self.checks;
        for num in 1..=one.info.num_ports {
            let (p1, p2) = (one.port(num), two.port(num));
            let r1 = p1.and_then(|p| self.one.fabric.remote(p));
            let r2 = p2.and_then(|p| self.two.fabric.remote(p));
            let linked1 = p1.is_some_and(|p| p.remote.is_some());
            let linked2 = p2.is_some_and(|p| p.remote.is_some());
            let (mut out1, mut out2) = (false, false);
            if c.has(Checks::PORT) {
                match (p1, p2) {
                    (Some(_), None) => out1 = true,
                    (None, Some(_)) => out2 = true,
                    (Some(a), Some(b)) => {
                        if linked1 && !linked2 {
                            out1 = true;
                        } else if !linked1 && linked2 {
                            out2 = true;
                        } else if a.guid != b.guid
                            || matches!((r1, r2), (Some((_, x)), Some((_, y))) if x.guid != y.guid)
                        {
                            (out1, out2) = (true, true);
                        }
                    }
                    (None, None) => {}
                }
            }
            let both = p1.zip(p2);
            if c.has(Checks::LID) && both.is_some_and(|(a, b)| a.base_lid != b.base_lid) {
                (out1, out2) = (true, true);
            }
            if let (Some((n1, rp1)), Some((n2, rp2))) = (r1, r2) {
                if c.has(Checks::PORT) && c.has(Checks::NODEDESC) && n1.desc != n2.desc {
                    (out1, out2) = (true, true);
                }
                if c.has(Checks::PORT) && c.has(Checks::LID) && rp1.base_lid != rp2.base_lid {
                    (out1, out2) = (true, true);
                }
            }
            for (out, node, fabric_out, prefix) in [
                (out1, one, self.one, self.prefix_one),
                (out2, two, self.two, self.prefix_two),
            ] {
                if !out {
                    continue;
                }
                if !*shown {
                    self.header(self.one, one, "", "", w);
                    *shown = true;
                }
                self.port(fabric_out, node, num, prefix, w);
            }
        }
    }
}
