//! `smpquery`: prints one SMP attribute of a node or port (infiniband-diags 44):
//! `smpquery [options] <op> <dest> [op params]`, the ops NodeInfo, NodeDesc, PortInfo,
//! PortInfoExtended, SwitchInfo, PKeyTable, SL2VLTable, VLArbitration, GUIDInfo and
//! MlnxExtPortInfo (by name or alias, any case), with `-c` (a combined route: `<lid> <dr_path>`), `-x` (PortInfo with extended
//! speeds) and `--node-name-map`.

use std::ffi::OsString;
use std::fmt::{self, Write as _};
use std::process::ExitCode;

use ibumad::mad::{NodeDescription, NodeInfo, PortInfo, PortInfoExtended, SwitchInfo};

use super::dest::{self, Combined, Dest, DestType};
use super::dump;
use super::mlnx_ext;
use super::node_names::NodeNames;
use super::options::{self, Handled, Opt, Tool};
use super::rpc::Rpc;
use crate::cli::{exit_code, prog_name, strtol, Output};
use crate::ibdiag;

/// The letter standing for `--node-name-map`, which has none (the C tool uses 1).
const NODE_NAME_MAP: char = '\u{1}';

/// smpquery's own options.
const OPTS: [Opt; 3] = [
    Opt {
        name: "combined",
        letter: 'c',
        value: None,
        help: "the destination is a LID and a directed route from it",
    },
    Opt {
        name: "node-name-map",
        letter: NODE_NAME_MAP,
        value: Some("<file>"),
        help: "node name map file",
    },
    Opt {
        name: "extended",
        letter: 'x',
        value: None,
        help: "PortInfo with extended speeds",
    },
];

/// An op: what the query runs, given the destination and the op's parameters.
type OpFn = fn(&Query, &Target, &[String], &mut Output) -> Result<(), OpError>;

/// How an op fails.
enum OpError {
    /// The op returns this message (`operation <op>: msg`).
    Op(&'static str),
    /// A query under it exits with this message (the C tool's `IBEXIT` from a helper).
    Exit(&'static str),
}

impl From<&'static str> for OpError {
    fn from(msg: &'static str) -> Self {
        OpError::Op(msg)
    }
}

/// Where the queries go.
enum Target {
    /// A LID, a directed route or a GUID's LID.
    Dest(Dest),
    /// `-c`: a LID and a directed route from it.
    Combined(Combined),
}

impl fmt::Display for Target {
    /// The C `portid2str`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Dest(dest) => dest.fmt(f),
            Target::Combined(route) => route.fmt(f),
        }
    }
}

/// The ops: name, alias, function, whether it takes a port number.
const OPS: [(&str, &str, OpFn, bool); 10] = [
    ("NodeInfo", "NI", node_info, false),
    ("NodeDesc", "ND", node_desc, false),
    ("PortInfo", "PI", port_info, true),
    ("PortInfoExtended", "PIE", port_info_ext, true),
    ("SwitchInfo", "SI", switch_info, false),
    ("PKeyTable", "PKeys", pkey_table, true),
    ("SL2VLTable", "SL2VL", sl2vl_table, true),
    ("VLArbitration", "VLArb", vlarb_table, true),
    ("GUIDInfo", "GI", guid_info, false),
    ("MlnxExtPortInfo", "MEPI", mlnx_ext_port_info, true),
];

/// PortInfo CapabilityMask bit HasCapabilityMask2.
const CAP_HAS_CAP_MASK2: u32 = 1 << 15;
/// PortInfo CapabilityMask2 bit IsPortInfoExtendedSupported.
const CAP2_PORT_INFO_EXT: u16 = 1 << 1;

/// SMP attribute IDs of the tables.
const GUID_INFO: u16 = 0x0014;
const PKEY_TABLE: u16 = 0x0016;
const SL2VL_TABLE: u16 = 0x0017;
const VLARB_TABLE: u16 = 0x0018;

/// What the ops share.
struct Query {
    rpc: Rpc,
    names: NodeNames,
    extended: bool,
    show_keys: bool,
}

/// `smpquery [options] <op> <dest> [op params]`.
pub fn smpquery(args: Vec<OsString>) -> ExitCode {
    let prog = prog_name(&args, "smpquery");
    let mut out = Output::new();
    let status = run(&prog, &args, &mut out);
    out.flush();
    exit_code(status)
}

fn run(prog: &str, args: &[OsString], out: &mut Output) -> i32 {
    let mut map_file = None;
    let mut extended = false;
    let mut usage_args = String::from("<op> <dest dr_path|lid|guid> [op params]\n\nOps:\n");
    for (name, alias, _, port) in OPS {
        let port = if port { " [<portnum>]" } else { "" };
        let _ = writeln!(usage_args, "  {name} ({alias}) <addr>{port}");
    }
    let tool = Tool {
        exclude: "",
        opts: &OPTS,
        usage_args: &usage_args,
        examples: &[
            "portinfo 3 1",
            "-G switchinfo 0x2C9000100D051 1",
            "-D nodeinfo 0",
        ],
    };
    let parsed = options::parse(prog, args, &tool, out, |letter, value, _| {
        match letter {
            'x' => extended = true,
            'c' => return Handled::Dest(DestType::Combined),
            _ => map_file = value.map(str::to_owned),
        }
        Handled::Yes
    });
    let (common, operands) = match parsed {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    if operands.len() < 2 {
        return options::usage(prog, &tool, out);
    }
    let exit = |out: &mut Output, msg: &str| ibdiag::exit(out, prog, common.debug, "main", msg);
    let op = &operands[0];
    let Some(&(_, _, op_fn, _)) = OPS.iter().find(|(name, alias, _, _)| {
        name.eq_ignore_ascii_case(op) || alias.eq_ignore_ascii_case(op)
    }) else {
        return exit(out, &format!("operation '{op}' not supported"));
    };
    let rpc = match options::open_rpc(prog, &common, out) {
        Ok(rpc) => rpc,
        Err(status) => return status,
    };
    let (names, warnings) = NodeNames::open(map_file.as_deref());
    for warning in warnings {
        out.error(&warning);
    }
    let (target, params) = if common.dest == DestType::Combined {
        // The C tool joins the two operands into 64 bytes (C's "(null)" for a missing one).
        let path = operands.get(2).map_or("(null)", String::as_str);
        let mut text = format!("{} {path}", operands[1]);
        truncate(&mut text, 63);
        let Some(route) = dest::combined(&rpc, &text) else {
            return exit(out, &format!("can't resolve destination port {text}"));
        };
        (
            Target::Combined(route),
            operands.get(3..).unwrap_or_default(),
        )
    } else {
        let text = &operands[1];
        let Some(dest) = dest::resolve(&rpc, common.dest, text, common.sm_lid, out) else {
            return exit(out, &format!("can't resolve destination port {text}"));
        };
        (Target::Dest(dest), &operands[2..])
    };
    let query = Query {
        rpc,
        names,
        extended,
        show_keys: common.show_keys,
    };
    match op_fn(&query, &target, params, out) {
        Ok(()) => 0,
        Err(OpError::Op(msg)) => exit(out, &format!("operation {op}: {msg}")),
        Err(OpError::Exit(msg)) => exit(out, msg),
    }
}

/// Cuts `text` to at most `max` bytes (at a character boundary).
fn truncate(text: &mut String, max: usize) {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
}

/// The port number parameter (`strtol`; 0 when absent).
fn port_param(params: &[String]) -> i32 {
    params.first().map_or(0, |p| strtol(p) as i32)
}

impl Query {
    /// Gets attribute `attr_id` with `attr_mod` of `dest`; `Err(msg)` when it fails.
    fn get(
        &self,
        target: &Target,
        attr_id: u16,
        attr_mod: u32,
        msg: &'static str,
        out: &mut Output,
    ) -> Result<[u8; 64], &'static str> {
        let data = match target {
            Target::Dest(dest) => self.rpc.smp_get(dest, attr_id, attr_mod, out),
            Target::Combined(route) => self.rpc.smp_get_combined(route, attr_id, attr_mod, out),
        };
        data.ok_or(msg)
    }

    /// NodeInfo of `dest`.
    fn node_info(&self, dest: &Target, out: &mut Output) -> Result<NodeInfo, &'static str> {
        let failed = "node info query failed";
        let data = self.get(dest, NodeInfo::ATTR_ID, 0, failed, out)?;
        NodeInfo::decode(&data).map_err(|_| failed)
    }
}

fn node_info(q: &Query, dest: &Target, _: &[String], out: &mut Output) -> Result<(), OpError> {
    let info = q.node_info(dest, out)?;
    let _ = write!(out, "# Node info: {dest}\n{}", dump::node_info(&info));
    Ok(())
}

fn node_desc(q: &Query, dest: &Target, _: &[String], out: &mut Output) -> Result<(), OpError> {
    let info = q.node_info(dest, out)?;
    let failed = "node desc query failed";
    let data = q.get(dest, NodeDescription::ATTR_ID, 0, failed, out)?;
    let desc = NodeDescription::decode(&data).map_err(|_| failed)?;
    let name = q.names.name(info.node_guid, desc.printable());
    let dots = ".".repeat(32usize.saturating_sub(name.len()).max(1));
    let _ = writeln!(out, "Node Description:{dots}{name}");
    Ok(())
}

fn port_info(q: &Query, dest: &Target, params: &[String], out: &mut Output) -> Result<(), OpError> {
    let port = port_param(params);
    let mut modifier = port as u32;
    if q.extended {
        modifier |= 1 << 31;
    }
    let failed = "port info query failed";
    let data = q.get(dest, PortInfo::ATTR_ID, modifier, failed, out)?;
    let info = PortInfo::decode(&data).map_err(|_| failed)?;
    let text = dump::port_info(&info, q.show_keys, out);
    let _ = write!(out, "# Port info: {dest} port {port}\n{text}");
    Ok(())
}

/// `port_info_extended`: PortInfoExtended of the port, if its PortInfo (port 0's on a
/// switch) says CapabilityMask2 IsPortInfoExtendedSupported (`is_port_info_extended_supported`).
fn port_info_ext(
    q: &Query,
    dest: &Target,
    params: &[String],
    out: &mut Output,
) -> Result<(), OpError> {
    let port = port_param(params);
    let node = q.node_info(dest, out).map_err(OpError::Exit)?;
    let info_port = if node.node_type == 2 { 0 } else { port as u32 };
    let failed = "port info query failed";
    let info = q
        .get(dest, PortInfo::ATTR_ID, info_port, failed, out)
        .and_then(|data| PortInfo::decode(&data).map_err(|_| failed))
        .map_err(OpError::Exit)?;
    let function = "is_port_info_extended_supported";
    if info.capability_mask & CAP_HAS_CAP_MASK2 == 0 {
        ibdiag::warn(out, function, "port info capability mask2 not supported");
        return Err("port info extended not supported".into());
    }
    if info.capability_mask2 & CAP2_PORT_INFO_EXT == 0 {
        let mask2 = info.capability_mask2;
        let msg = format!(
            "port info capability mask2 = {mask2:#x} doesn't indicate PortInfoExtended support"
        );
        ibdiag::warn(out, function, &msg);
        return Err("port info extended not supported".into());
    }
    let failed = "port info extended query failed";
    let data = q.get(dest, PortInfoExtended::ATTR_ID, port as u32, failed, out)?;
    let pie = PortInfoExtended::decode(&data).map_err(|_| failed)?;
    let text = dump::port_info_ext(&pie, &data);
    let _ = write!(out, "# Port info Extended: {dest} port {port}\n{text}");
    Ok(())
}

/// `mlnx_ext_port_info`: Mellanox's ExtendedPortInfo of the port (asked of any device).
fn mlnx_ext_port_info(
    q: &Query,
    dest: &Target,
    params: &[String],
    out: &mut Output,
) -> Result<(), OpError> {
    let port = port_param(params);
    let failed = "Mellanox ext port info query failed";
    let data = q.get(dest, mlnx_ext::ATTR_ID, port as u32, failed, out)?;
    mlnx_ext::show(&dest.to_string(), port, &data, out);
    Ok(())
}

fn switch_info(q: &Query, dest: &Target, _: &[String], out: &mut Output) -> Result<(), OpError> {
    let failed = "switch info query failed";
    let data = q.get(dest, SwitchInfo::ATTR_ID, 0, failed, out)?;
    let info = SwitchInfo::decode(&data).map_err(|_| failed)?;
    let _ = write!(out, "# Switch info: {dest}\n{}", dump::switch_info(&info));
    Ok(())
}

fn pkey_table(
    q: &Query,
    dest: &Target,
    params: &[String],
    out: &mut Output,
) -> Result<(), OpError> {
    let port = port_param(params);
    let info = q.node_info(dest, out)?;
    if port > i32::from(info.num_ports) {
        return Err("invalid port number".into());
    }
    let cap = if info.node_type == 2 && port != 0 {
        let data = q.get(dest, SwitchInfo::ATTR_ID, 0, "switch info failed", out)?;
        SwitchInfo::decode(&data).map_or(0, |s| s.partition_enforcement_cap)
    } else {
        info.partition_cap
    };
    let n = usize::from(cap);
    let blocks = n.div_ceil(32);
    for block in 0..blocks {
        let modifier = block as u32 | (port as u32) << 16;
        let data = q.get(dest, PKEY_TABLE, modifier, "pkey table query failed", out)?;
        let shown = if block + 1 == blocks {
            (n + 7 - block * 32) / 8 * 8
        } else {
            32
        };
        for (row, keys) in data.chunks_exact(16).take(shown / 8).enumerate() {
            let _ = write!(out, "{:4}:", block * 32 + row * 8);
            for key in keys.chunks_exact(2) {
                let _ = write!(out, " 0x{:04x}", u16::from_be_bytes([key[0], key[1]]));
            }
            let _ = writeln!(out);
        }
    }
    let _ = writeln!(out, "{n} pkeys capacity for this port");
    Ok(())
}

fn sl2vl_table(
    q: &Query,
    dest: &Target,
    params: &[String],
    out: &mut Output,
) -> Result<(), OpError> {
    let port = port_param(params);
    let info = q.node_info(dest, out)?;
    if port > i32::from(info.num_ports) {
        return Err("invalid port number".into());
    }
    let _ = writeln!(out, "# SL2VL table: {dest}");
    let _ = write!(out, "#                 SL: |");
    for sl in 0..16 {
        let _ = write!(out, "{sl:2}|");
    }
    let _ = writeln!(out);
    let ins = if info.node_type == 2 {
        0..=i32::from(info.num_ports)
    } else {
        0..=0
    };
    let out_port = if info.node_type == 2 { port } else { 0 };
    for in_port in ins {
        let modifier = (in_port << 8 | out_port) as u32;
        let data = q.get(dest, SL2VL_TABLE, modifier, "slvl query failed", out)?;
        let _ = write!(out, "ports: in {in_port:2}, out {out_port:2}: |");
        for byte in &data[..8] {
            let _ = write!(out, "{:2}|{:2}|", byte >> 4, byte & 0xf);
        }
        let _ = writeln!(out);
    }
    Ok(())
}

fn vlarb_table(
    q: &Query,
    dest: &Target,
    params: &[String],
    out: &mut Output,
) -> Result<(), OpError> {
    let port = port_param(params);
    if port == 0 {
        let info = q.node_info(dest, out)?;
        if info.node_type == 2 {
            let failed = "switch info query failed";
            let data = q.get(dest, SwitchInfo::ATTR_ID, 0, failed, out)?;
            if SwitchInfo::decode(&data).map_or(0, |s| s.enhanced_port0) == 0 {
                let _ = writeln!(out, "# No VLArbitration tables (BSP0): {dest} port 0");
                return Ok(());
            }
        }
    }
    let failed = "port info query failed";
    let data = q.get(dest, PortInfo::ATTR_ID, port as u32, failed, out)?;
    let info = PortInfo::decode(&data).map_err(|_| failed)?;
    let (low, high) = (info.vl_arbitration_low_cap, info.vl_arbitration_high_cap);
    let _ = writeln!(
        out,
        "# VLArbitration tables: {dest} port {port} LowCap {low} HighCap {high}"
    );
    for (name, offset, cap) in [("Low", 1, low), ("High", 3, high)] {
        if cap == 0 {
            continue;
        }
        let _ = write!(out, "# {name} priority VL Arbitration Table:");
        vlarb_entries(q, dest, port, offset, cap.min(32), out)?;
        if cap > 32 {
            vlarb_entries(q, dest, port, offset + 1, cap - 32, out)?;
        }
    }
    Ok(())
}

/// One block of a VL arbitration table (`mad_dump_vlarbitration`): `count` entries of VL
/// and weight.
fn vlarb_entries(
    q: &Query,
    dest: &Target,
    port: i32,
    offset: u32,
    count: u8,
    out: &mut Output,
) -> Result<(), OpError> {
    let modifier = offset << 16 | port as u32;
    let data = q.get(dest, VLARB_TABLE, modifier, "vl arb query failed", out)?;
    let entries = data.chunks_exact(2).take(usize::from(count));
    let _ = write!(out, "\nVL    : |");
    for entry in entries.clone() {
        let _ = write!(out, "0x{:<2X}|", entry[0] & 0xf);
    }
    let _ = write!(out, "\nWEIGHT: |");
    for entry in entries {
        let _ = write!(out, "0x{:<2X}|", entry[1]);
    }
    let _ = writeln!(out);
    Ok(())
}

fn guid_info(q: &Query, dest: &Target, _: &[String], out: &mut Output) -> Result<(), OpError> {
    let failed = "port info failed";
    let data = q.get(dest, PortInfo::ATTR_ID, 0, failed, out)?;
    let n = usize::from(PortInfo::decode(&data).map_err(|_| failed)?.guid_cap);
    let blocks = n.div_ceil(8);
    for block in 0..blocks {
        let data = q.get(dest, GUID_INFO, block as u32, "guid info query failed", out)?;
        let shown = if block + 1 == blocks {
            (n + 1 - block * 8) / 2 * 2
        } else {
            8
        };
        for (row, pair) in data.chunks_exact(16).take(shown / 2).enumerate() {
            let guid =
                |at: usize| u64::from_be_bytes(pair[at..at + 8].try_into().unwrap_or_default());
            let _ = writeln!(
                out,
                "{:4}: 0x{:016x} 0x{:016x}",
                block * 8 + row * 2,
                guid(0),
                guid(8)
            );
        }
    }
    let _ = writeln!(out, "{n} guids capacity for this port");
    Ok(())
}
