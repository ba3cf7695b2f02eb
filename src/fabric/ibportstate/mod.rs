//! `ibportstate [options] <dest dr_path|lid|guid> <portnum> [<op>]` (infiniband-diags 44):
//! prints a port's PortInfo (and, for an active switch port, its peer's), or changes its
//! state, speed, width, LID, ... with a PortInfo Set and prints the answer.

mod ops;
mod peer;
mod show;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;

use ibumad::mad::{NodeInfo, PortInfo};

use super::dest;
use super::getpass::getpass;
use super::mlnx_ext as mlnx;
use super::options::{self, Common, Handled, Tool};
use super::portinfo_text::CAP_HAS_EXT_SPEEDS;
use super::rpc::Rpc;
use crate::cli::{exit_code, prog_name, strtol, Output};
use crate::ibdiag;
use ops::{Setting, StateOp};
use peer::PeerRoute;
use show::Shown;

const USAGE_ARGS: &str = "<dest dr_path|lid|guid> <portnum> [<op>]\n\
    \nSupported ops: enable, disable, on, off, reset, speed, espeed, fdr10,\n\
    \twidth, query, down, arm, active, vls, mtu, lid, smlid, lmc,\n\
    \tmkey, mkeylease, mkeyprot\n";

const EXAMPLES: [&str; 7] = [
    "-C qib0 -P 1 3 1 disable     # by CA name, CA Port Number, lid, physical port number",
    "-C qib0 -P 1 3 1 enable      # by CA name, CA Port Number, lid, physical port number",
    "-D 0 1\t\t\t# (query) by direct route",
    "3 1 reset\t\t\t# by lid",
    "3 1 speed 1\t\t\t# by lid",
    "3 1 width 1\t\t\t# by lid",
    "-D 0 1 lid 0x1234 arm\t\t# by direct route",
];

/// `ibportstate`: the whole tool, `args` with the program name first.
pub fn ibportstate(args: Vec<OsString>) -> ExitCode {
    let prog = prog_name(&args, "ibportstate");
    let mut out = Output::new();
    let status = run(&prog, &args, &mut out);
    out.flush();
    exit_code(status)
}

/// What the tool works on, once the arguments are read.
struct Ctx<'a> {
    prog: &'a str,
    common: Common,
    rpc: Rpc,
}

impl Ctx<'_> {
    /// `IBEXIT` from `function`.
    fn exit(&self, out: &mut Output, function: &str, msg: &str) -> i32 {
        ibdiag::exit(out, self.prog, self.common.debug, function, msg)
    }
}

fn run(prog: &str, args: &[OsString], out: &mut Output) -> i32 {
    let tool = Tool {
        exclude: "",
        opts: &[],
        usage_args: USAGE_ARGS,
        examples: &EXAMPLES,
    };
    let no_own = |_: char, _: Option<&str>, _: &mut Output| Handled::No;
    let (common, operands) = match options::parse(prog, args, &tool, out, no_own) {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    if operands.len() < 2 {
        return options::usage(prog, &tool, out);
    }
    let rpc = match options::open_rpc(prog, &common, out) {
        Ok(rpc) => rpc,
        Err(status) => return status,
    };
    let ctx = Ctx { prog, common, rpc };
    let dest_text = &operands[0];
    let resolved = dest::resolve(&ctx.rpc, ctx.common.dest, dest_text, ctx.common.sm_lid, out);
    let Some(dest) = resolved else {
        let msg = format!("can't resolve destination port {dest_text}");
        return ctx.exit(out, "main", &msg);
    };
    let port = strtol(&operands[1]) as i32;
    let mut ask_key = || getpass("New M_Key: ");
    let ops = match ops::parse(&operands[2..], &mut ask_key) {
        Ok(ops) => ops,
        Err(msg) => return ctx.exit(out, "main", &msg),
    };
    match portstate(&ctx, &PeerRoute::Plain(dest), port, &ops, out) {
        Ok(()) => 0,
        Err((function, msg)) => ctx.exit(out, function, &msg),
    }
}

/// What fails: the C function and the `IBEXIT` message.
type Fail = (&'static str, String);

/// `get_node_info`: the node's NodeInfo.
fn node_info(ctx: &Ctx, to: &PeerRoute, out: &mut Output) -> Result<NodeInfo, Fail> {
    to.get(&ctx.rpc, NodeInfo::ATTR_ID, 0, out)
        .and_then(|data| NodeInfo::decode(&data).ok())
        .ok_or(("get_node_info", "smp query nodeinfo failed".to_owned()))
}

/// `get_port_info`: the port's PortInfo and whether it has extended speeds (a switch's
/// port 0 tells for all its ports).
fn port_info(
    ctx: &Ctx,
    to: &PeerRoute,
    port: i32,
    switch: bool,
    out: &mut Output,
) -> Result<(PortInfo, bool), Fail> {
    let get = |port: i32, out: &mut Output| {
        to.get(&ctx.rpc, PortInfo::ATTR_ID, port as u32, out)
            .and_then(|data| PortInfo::decode(&data).ok())
    };
    let port0 = if switch {
        let info = get(0, out).ok_or((
            "get_port_info",
            "smp query port 0 portinfo failed".to_owned(),
        ))?;
        Some(info)
    } else {
        None
    };
    let info = get(port, out).ok_or(("get_port_info", "smp query portinfo failed".to_owned()))?;
    let caps = port0.as_ref().unwrap_or(&info).capability_mask;
    Ok((info, caps & CAP_HAS_EXT_SPEEDS != 0))
}

/// The tool after its arguments: query, then change or check the peer.
fn portstate(
    ctx: &Ctx,
    to: &PeerRoute,
    port: i32,
    ops: &ops::Ops,
    out: &mut Output,
) -> Result<(), Fail> {
    let node = node_info(ctx, to, out)?;
    let switch = node.node_type == 2;
    let keys = [Setting::Mkey, Setting::Mkeylease, Setting::Mkeyprot];
    if keys.iter().any(|&k| ops.get(k).is_some()) && switch && port != 0 {
        let msg = "Can't set M_Key fields on switch port != 0".to_owned();
        return Err(("main", msg));
    }
    let kind = if switch { "Switch" } else { "CA/RT" };
    if ops.changes() {
        let _ = writeln!(out, "Initial {kind} PortInfo:");
    } else {
        let _ = writeln!(out, "{kind} PortInfo:");
    }
    let (info, espeed_cap) = port_info(ctx, to, port, switch, out)?;
    let dest = to.text();
    let shown = Shown {
        dest: &dest,
        port,
        espeed_cap,
        switch,
        show_keys: ctx.common.show_keys,
    };
    show::show(&shown, &info, out);
    let mut ext = [0u8; 64];
    if mlnx::supported(node.vendor_id, node.device_id) {
        ext = to.get(&ctx.rpc, mlnx::ATTR_ID, port as u32, out).ok_or((
            "get_mlnx_ext_port_info",
            "smp query ext portinfo failed".to_owned(),
        ))?;
        mlnx::show(&dest, port, &ext, out);
    }
    if ops.changes() {
        return set(ctx, to, &shown, info, &mut ext, ops, out);
    }
    if switch && port != 0 && info.port_state == 4 {
        check_peer(ctx, to, port, (&info, &ext), espeed_cap, out)?;
    }
    Ok(())
}

/// Changes the port as `ops` say (a PortInfo Set; first an ExtendedPortInfo Set for
/// `fdr10`) and prints the answer.
fn set(
    ctx: &Ctx,
    to: &PeerRoute,
    shown: &Shown,
    mut info: PortInfo,
    ext: &mut [u8; 64],
    ops: &ops::Ops,
    out: &mut Output,
) -> Result<(), Fail> {
    let phys = info.port_physical_state;
    if ops.get(Setting::Lid).is_none() && (info.lid == 0 || info.lid == 0xffff) {
        info.lid = 0x1234;
    }
    if ops.get(Setting::Smlid).is_none() && matches!(info.master_sm_lid, 0 | 0xffff) {
        info.master_sm_lid = 0x1234;
    }
    info.port_state = 0;
    info.port_physical_state = 0;
    match ops.op.unwrap_or_default() {
        StateOp::On if phys != 3 => {
            let _ = writeln!(out, "Port is already in enable state");
            return Ok(());
        }
        StateOp::On | StateOp::Enable | StateOp::Reset => info.port_physical_state = 2,
        StateOp::Off | StateOp::Disable => {
            let _ = writeln!(out, "Disable may be irreversible");
            info.port_physical_state = 3;
        }
        StateOp::Down => info.port_state = 1,
        StateOp::Arm => info.port_state = 3,
        StateOp::Active => info.port_state = 4,
        StateOp::Query => {}
    }
    let value = |s| ops.get(s);
    info.link_speed_enabled = value(Setting::Speed).unwrap_or(0) as u8 & 0xf;
    info.link_speed_ext_enabled = value(Setting::Espeed).unwrap_or(0) as u8 & 0x1f;
    info.link_width_enabled = value(Setting::Width).unwrap_or(0) as u8;
    if let Some(v) = value(Setting::Vls) {
        info.operational_vls = v as u8;
    }
    if let Some(v) = value(Setting::Mtu) {
        info.neighbor_mtu = v as u8;
    }
    if let Some(v) = value(Setting::Lid) {
        info.lid = v as u16;
    }
    if let Some(v) = value(Setting::Smlid) {
        info.master_sm_lid = v as u16;
    }
    if let Some(v) = value(Setting::Lmc) {
        info.lmc = v as u8;
    }
    if let Some(v) = value(Setting::Fdr10) {
        ext[mlnx::STATE_CHANGE_ENABLE] = mlnx::FDR10;
        ext[mlnx::LINK_SPEED_ENABLED] = v as u8;
        let answer = smp_set(ctx, to, mlnx::ATTR_ID, shown.port as u32, ext, out).ok_or((
            "set_mlnx_ext_port_info",
            "smp set MLNX ext portinfo failed".to_owned(),
        ))?;
        let _ = write!(out, "\nAfter MLNXExtendedPortInfo set:\n");
        mlnx::show(shown.dest, shown.port, &answer, out);
    }
    if let Some(v) = value(Setting::Mkey) {
        info.m_key = v;
    }
    if let Some(v) = value(Setting::Mkeylease) {
        info.m_key_lease_period = v as u16;
    }
    if let Some(v) = value(Setting::Mkeyprot) {
        info.m_key_protect_bits = v as u8;
    }
    let modifier = shown.port as u32 | if shown.espeed_cap { 1 << 31 } else { 0 };
    let answer = smp_set(ctx, to, PortInfo::ATTR_ID, modifier, &info.encode(), out)
        .and_then(|data| PortInfo::decode(&data).ok())
        .ok_or(("set_port_info", "smp set portinfo failed".to_owned()))?;
    let _ = write!(out, "\nAfter PortInfo set:\n");
    show::show(shown, &answer, out);
    Ok(())
}

/// `smp_set_via` to the destination (always a plain LID or directed route here).
fn smp_set(
    ctx: &Ctx,
    to: &PeerRoute,
    attr: u16,
    modifier: u32,
    data: &[u8; 64],
    out: &mut Output,
) -> Option<[u8; 64]> {
    match to {
        PeerRoute::Plain(dest) => ctx.rpc.smp_set(dest, attr, modifier, data, out),
        PeerRoute::Combined(_) => None,
    }
}

/// For an active switch port: prints the peer port and warns where the link runs slower
/// or narrower than both ends enable.
fn check_peer(
    ctx: &Ctx,
    to: &PeerRoute,
    port: i32,
    (ours, ours_ext): (&PortInfo, &[u8; 64]),
    espeed_cap: bool,
    out: &mut Output,
) -> Result<(), Fail> {
    let PeerRoute::Plain(dest) = to else {
        return Ok(());
    };
    let peer = PeerRoute::new(&ctx.rpc, dest, port).map_err(|msg| ("main", msg))?;
    let node = node_info(ctx, &peer, out)?;
    let peer_switch = node.node_type == 2;
    let _ = writeln!(out, "Peer PortInfo:");
    let peer_port = i32::from(node.local_port_num);
    let (info, peer_espeed_cap) = port_info(ctx, &peer, peer_port, peer_switch, out)?;
    let mlnx = mlnx::supported(node.vendor_id, node.device_id);
    let ext = if mlnx {
        peer.get(&ctx.rpc, mlnx::ATTR_ID, peer_port as u32, out)
            .ok_or((
                "get_mlnx_ext_port_info",
                "smp query ext portinfo failed".to_owned(),
            ))?
    } else {
        [0; 64]
    };
    let dest = peer.text();
    let shown = Shown {
        dest: &dest,
        port: peer_port,
        espeed_cap: peer_espeed_cap,
        switch: peer_switch,
        show_keys: ctx.common.show_keys,
    };
    show::show(&shown, &info, out);
    if mlnx {
        mlnx::show(&dest, peer_port, &ext, out);
    }
    let ext_speeds = espeed_cap && peer_espeed_cap;
    show::validate(ours, &info, ext_speeds, out);
    let enabled = |e: &[u8; 64]| e[mlnx::LINK_SPEED_ENABLED] & mlnx::FDR10 != 0;
    if !ext_speeds
        && enabled(ours_ext)
        && enabled(&ext)
        && ours_ext[mlnx::LINK_SPEED_ACTIVE] & mlnx::FDR10 == 0
    {
        let lsa = ours.link_speed_active;
        let msg = format!("Peer ports operating at active speed {lsa} rather than FDR10");
        ibdiag::warn(out, "main", &msg);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::dest::{Combined, Dest};

    #[test]
    fn peer_route_text() {
        let route = PeerRoute::Combined(Combined {
            lid: 2,
            slid: 1,
            path: vec![0, 3],
        });
        assert_eq!(route.text(), "Lid 2 DR path slid 1; dlid 65535; 0,3");
        let dr = PeerRoute::Plain(Dest::Dr(vec![0, 1]));
        assert_eq!(dr.text(), "DR path slid 65535; dlid 65535; 0,1");
    }
}
