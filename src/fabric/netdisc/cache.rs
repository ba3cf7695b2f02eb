//! libibnetdisc's fabric cache file (`ibnd_cache_fabric`, `ibnd_load_fabric`), which
//! `ibnetdiscover --cache` writes and `--load-cache`/`--diff` read: little-endian, a
//! 28-byte header, then each node (in the fabric's node list order) with the keys of its
//! ports, then each port (in the order of libibnetdisc's port GUID hash table). A file is
//! untrusted input: loading fails on anything inconsistent, never panics.

use std::collections::HashMap;

use ibumad::mad::{NodeInfo, PortInfo};

use super::{Fabric, Node, Port};

const MAGIC: u32 = 0x8fe7_832b;
const VERSION: u32 = 1;
/// Buckets of libibnetdisc's GUID hash tables.
const HTSZ: u32 = 137;

/// libibnetdisc's `HASHGUID(guid) % HTSZ`.
fn bucket(guid: u64) -> u32 {
    let (lo, hi) = (guid as u32, (guid >> 32) as u32);
    (lo.wrapping_mul(101) ^ hi.wrapping_mul(103)) % HTSZ
}

/// The cache file of `fabric`, byte for byte as libibnetdisc writes it.
pub fn write(fabric: &Fabric) -> Vec<u8> {
    let mut b = Vec::new();
    let from_guid = fabric
        .from
        .and_then(|(n, _)| fabric.nodes.get(n))
        .map_or(0, |n| n.info.node_guid);
    b.extend(MAGIC.to_le_bytes());
    b.extend(VERSION.to_le_bytes());
    b.extend(0u32.to_le_bytes()); // node count, below
    b.extend(0u32.to_le_bytes()); // port count, below
    b.extend(from_guid.to_le_bytes());
    b.extend(fabric.max_hops.to_le_bytes());
    for node in fabric.nodes.iter().rev() {
        b.extend(node.sma_lid.to_le_bytes());
        b.push(node.sma_lmc);
        b.push(u8::from(node.enhanced_port0));
        b.extend(node.switch_info);
        b.extend(node.info.node_guid.to_le_bytes());
        b.push(node.info.node_type);
        b.push(node.info.num_ports);
        b.extend(node.info_raw);
        b.extend(node.desc);
        let ports: Vec<&Port> = node.ports.iter().flatten().collect();
        b.push(ports.len() as u8);
        for port in ports {
            b.extend(port.guid.to_le_bytes());
            b.push(port.num);
        }
    }
    let mut hashed: Vec<(u32, u32, &Node, &Port)> = fabric
        .nodes
        .iter()
        .flat_map(|n| n.ports.iter().flatten().map(move |p| (n, p)))
        .filter_map(|(n, p)| p.hashed.map(|seq| (bucket(p.guid), seq, n, p)))
        .collect();
    // Bucket by bucket, the latest entered first.
    hashed.sort_by_key(|&(bucket, seq, _, _)| (bucket, std::cmp::Reverse(seq)));
    for &(_, _, node, port) in &hashed {
        b.extend(port.guid.to_le_bytes());
        b.push(port.num);
        b.push(0); // ext_portnum
        b.extend(port.base_lid.to_le_bytes());
        b.push(port.lmc);
        b.extend(port.info_raw);
        b.extend(node.info.node_guid.to_le_bytes());
        match fabric.remote(port) {
            Some((_, rport)) => {
                b.push(1);
                b.extend(rport.guid.to_le_bytes());
                b.push(rport.num);
            }
            None => b.extend([0; 10]),
        }
    }
    b[8..12].copy_from_slice(&(fabric.nodes.len() as u32).to_le_bytes());
    b[12..16].copy_from_slice(&(hashed.len() as u32).to_le_bytes());
    b
}

/// Reads little-endian fields from a cache file, failing at its end.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        if self.0.len() < N {
            return Err("cache file too short".to_owned());
        }
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        let mut out = [0; N];
        out.copy_from_slice(head);
        Ok(out)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take::<1>()?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.take()?))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take()?))
    }
}

/// A port as the file has it: the port, its node's GUID and its remote port's key.
struct PortRecord {
    port: Port,
    node_guid: u64,
    remote: Option<(u64, u8)>,
}

/// `ibnd_load_fabric`: the fabric in the cache file `bytes` (node list and type lists in
/// the order they were written; no SMP count).
pub fn load(bytes: &[u8]) -> Result<Fabric, String> {
    let mut r = Reader(bytes);
    if r.u32()? != MAGIC {
        return Err("invalid fabric cache file".to_owned());
    }
    if r.u32()? != VERSION {
        return Err("invalid fabric cache version".to_owned());
    }
    let (node_count, port_count) = (r.u32()?, r.u32()?);
    let from_guid = r.u64()?;
    let max_hops = r.u32()?;
    let mut nodes = Vec::new();
    for _ in 0..node_count {
        nodes.push(load_node(&mut r)?);
    }
    let mut records = Vec::new();
    for _ in 0..port_count {
        records.push(load_port(&mut r)?);
    }
    // The key of each port record; a key names the last record loaded with it, as the C
    // hash chains find it.
    let keys: Vec<(u64, u8)> = records.iter().map(|p| (p.port.guid, p.port.num)).collect();
    let links: Vec<(u64, Option<(u64, u8)>)> =
        records.iter().map(|p| (p.node_guid, p.remote)).collect();
    let last_of: HashMap<(u64, u8), usize> =
        keys.iter().enumerate().map(|(i, &k)| (k, i)).collect();
    let find = |key: (u64, u8)| last_of.get(&key).copied();
    let mut fabric = Fabric {
        max_hops,
        ..Fabric::default()
    };
    // The fabric's node list is the file's order: index 0 is the last node written, and a
    // GUID names the last node loaded with it.
    let mut port_keys = Vec::new();
    for (node, node_keys) in nodes.into_iter().rev() {
        fabric.nodes.push(node);
        port_keys.push(node_keys);
    }
    let mut first_of = HashMap::new();
    for (n, node) in fabric.nodes.iter().enumerate() {
        first_of.entry(node.info.node_guid).or_insert(n);
    }
    let node_index = |guid: u64| {
        first_of
            .get(&guid)
            .copied()
            .ok_or_else(|| format!("Cache invalid: cannot find node {guid:#x}"))
    };
    fabric.from = Some((node_index(from_guid)?, 0));
    // `_rebuild_nodes`: each node takes the ports its keys name.
    let mut placed: Vec<Option<(usize, u8)>> = vec![None; keys.len()];
    let mut ports: Vec<Option<Port>> = records.into_iter().map(|r| Some(r.port)).collect();
    for (n, node_keys) in port_keys.into_iter().enumerate() {
        for key in node_keys {
            let i = find(key).ok_or("Cache invalid: cannot find port")?;
            let mut port = ports[i]
                .take()
                .ok_or("Cache invalid: duplicate port discovered")?;
            let slot = fabric.nodes[n]
                .ports
                .get_mut(usize::from(port.num))
                .ok_or("Cache invalid: a port beyond its node's ports")?;
            port.hashed = Some(fabric.ports_hashed);
            fabric.ports_hashed += 1;
            placed[i] = Some((n, port.num));
            *slot = Some(port);
        }
    }
    // `_rebuild_ports`: every record names a node and, if linked, a port; a placed port is
    // linked to the remote port where that one is placed too.
    for (i, &(node_guid, remote)) in links.iter().enumerate() {
        node_index(node_guid)?;
        let Some(remote) = remote else {
            continue;
        };
        let j = find(remote).ok_or("Cache invalid: cannot find remote port")?;
        if let (Some(here), Some(there)) = (placed[i], placed[j]) {
            let port = fabric.nodes[here.0].ports[usize::from(here.1)].as_mut();
            if let Some(port) = port {
                port.remote = Some(there);
            }
        }
    }
    Ok(fabric)
}

/// One node record and the keys of its ports.
fn load_node(r: &mut Reader) -> Result<(Node, Vec<(u64, u8)>), String> {
    let sma_lid = r.u16()?;
    let sma_lmc = r.u8()?;
    let enhanced_port0 = r.u8()? != 0;
    let switch_info = r.take::<64>()?;
    let guid = r.u64()?;
    let node_type = r.u8()?;
    let num_ports = r.u8()?;
    let info_raw = r.take::<64>()?;
    let desc = r.take::<64>()?;
    let count = r.u8()?;
    let mut keys = Vec::new();
    for _ in 0..count {
        keys.push((r.u64()?, r.u8()?));
    }
    let mut info = NodeInfo::decode(&info_raw).map_err(|e| e.to_string())?;
    // The record's own GUID, type and port count are what libibnetdisc goes by.
    info.node_guid = guid;
    info.node_type = node_type;
    info.num_ports = num_ports;
    let node = Node {
        info,
        info_raw,
        switch_info,
        desc,
        enhanced_port0,
        sma_lid,
        sma_lmc,
        ports: (0..=num_ports).map(|_| None).collect(),
    };
    Ok((node, keys))
}

/// One port record.
fn load_port(r: &mut Reader) -> Result<PortRecord, String> {
    let guid = r.u64()?;
    let num = r.u8()?;
    let _ext_portnum = r.u8()?;
    let base_lid = r.u16()?;
    let lmc = r.u8()?;
    let info_raw = r.take::<64>()?;
    let node_guid = r.u64()?;
    let has_remote = r.u8()? != 0;
    let remote = (r.u64()?, r.u8()?);
    let info = PortInfo::decode(&info_raw).map_err(|e| e.to_string())?;
    Ok(PortRecord {
        port: Port {
            num,
            guid,
            info,
            info_raw,
            hashed: None,
            mlnx_speed_active: 0,
            base_lid,
            lmc,
            remote: None,
        },
        node_guid,
        remote: has_remote.then_some(remote),
    })
}
