//! `perfquery`: reads (and resets) a port's performance counters (infiniband-diags 44):
//! `perfquery [options] [<lid|guid> [[port(s)] [reset_mask]]]`, PortCounters by default,
//! PortCountersExtended with `-x`, all ports summed (`-a`) or one by one (`-l`), port lists
//! (`1,4,8`) and ranges (`1-10`), reset after reading (`-r`) or only (`-R`), and the
//! per-SL, per-VL, detail and congestion counters (`-X`, `-S`, `-D`, `-E` and the long
//! options `--oprcvcounters` to `--vlxmittimecc`), PortExtendedSpeedsCounters (`-T`; not
//! its RS-FEC layout, which needs PortInfoExtended) and PortSamplesControl (`-c`).

mod counters;
mod details;
mod samples;

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;

use ibumad::mad::{
    ClassPortInfo, MadHeader, NodeInfo, PortCounters, PortCountersExtended,
    PortExtendedSpeedsCounters, PortSamplesControl, SwitchInfo, PERF_DATA_OFFSET,
};
use ibumad::MAD_SIZE;

use self::counters::{ALL_PORT_SELECT, EXT_WIDTH, EXT_WIDTH_NOIETF, QP1_DROP, XMIT_WAIT};
use super::dest::{self, Dest};
use super::options::{self, Common, Handled, Opt, Tool};
use super::rpc::Rpc;
use crate::cli::{exit_code, prog_name, strtoull, Output};
use crate::ibdiag;

/// Management class and version of performance management.
const PERF_CLASS: u8 = 0x04;
/// The PortSelect that means every port.
const ALL_PORTS: i32 = 0xff;

/// Shorthand for an option without value.
const fn flag(name: &'static str, letter: char, help: &'static str) -> Opt {
    Opt {
        name,
        letter,
        value: None,
        help,
    }
}

/// perfquery's own options.
const OPTS: [Opt; 5] = [
    flag("extended", 'x', "PortCountersExtended"),
    flag("all_ports", 'a', "all ports, summed"),
    flag("loop_ports", 'l', "each port in turn"),
    flag(
        "reset_after_read",
        'r',
        "reset the counters after reading them",
    ),
    flag("Reset_only", 'R', "only reset the counters"),
];

/// `-T` and `-c`, after the detail options.
const MORE_OPTS: [Opt; 2] = [
    flag("extended_speeds", 'T', "PortExtendedSpeedsCounters"),
    flag("smplctl", 'c', "PortSamplesControl"),
];

/// The options that each ask for one attribute, in the order the C tool tries them (the
/// first given in this order wins): the details, `-T` among them, `-c` last.
const QUERIES: &str = "XSDET\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}\u{9}\u{a}\u{b}\u{c}c";

/// What the options and operands ask for (the C `info`).
#[derive(Debug, Default)]
struct Info {
    extended: bool,
    all_ports: bool,
    loop_ports: bool,
    reset: bool,
    reset_only: bool,
    /// The port (or 255, all).
    port: i32,
    /// A list or range of ports.
    ports: Vec<i32>,
    /// The rank in [`QUERIES`] of the first one asked for.
    query: Option<usize>,
}

/// What the queries share.
struct Query<'a> {
    prog: &'a str,
    common: &'a Common,
    rpc: Rpc,
    lid: u16,
    dest: Dest,
    cap_mask: u16,
    cap_mask2: u32,
}

/// `perfquery [options] [<lid|guid> [[port(s)] [reset_mask]]]`.
pub fn perfquery(args: Vec<OsString>) -> ExitCode {
    let prog = prog_name(&args, "perfquery");
    let mut out = Output::new();
    let status = match run(&prog, &args, &mut out) {
        Ok(()) => 0,
        Err(status) => status,
    };
    out.flush();
    exit_code(status)
}

fn run(prog: &str, args: &[OsString], out: &mut Output) -> Result<(), i32> {
    let mut info = Info::default();
    let opts: Vec<Opt> = OPTS
        .iter()
        .copied()
        .chain(details::DETAILS.iter().map(|d| d.opt))
        .chain(MORE_OPTS)
        .collect();
    let tool = Tool {
        exclude: "DK",
        opts: &opts,
        usage_args: " [<lid|guid> [[port(s)] [reset_mask]]]",
        examples: &[
            "32 1",
            "-x 32 1",
            "-a 32",
            "-r 32 1",
            "-R 32 2 0x0fff",
            "-l 32 1-10",
        ],
    };
    let (common, operands) = options::parse(prog, args, &tool, out, |letter, _, _| {
        match letter {
            'x' => info.extended = true,
            'a' => {
                info.all_ports = true;
                info.port = ALL_PORTS;
            }
            'l' => info.loop_ports = true,
            'r' => info.reset = true,
            'R' => info.reset_only = true,
            _ => {
                // The first one of the order wins, whatever the order given.
                if let Some(i) = QUERIES.chars().position(|c| c == letter) {
                    info.query = Some(info.query.map_or(i, |q| q.min(i)));
                }
            }
        }
        Handled::Yes
    })?;
    let exit = |out: &mut Output, function: &str, msg: &str| {
        ibdiag::exit(out, prog, common.debug, function, msg)
    };
    if let Some(ports) = operands.get(1) {
        parse_ports(ports, &mut info).map_err(|msg| exit(out, "main", msg))?;
    }
    // The reset mask (CounterSelect, then CounterSelect2 from bit 16).
    // PortExtendedSpeedsCounters' CounterSelect (64 bits) takes the whole mask.
    let ext_mask = operands.get(2).map_or(u64::MAX, |text| strtoull(text));
    let mut mask = operands.get(2).map_or(0xffff, |_| ext_mask as i32);
    let rpc = options::open_rpc(prog, &common, out)?;
    let lid = match operands.first() {
        Some(text) => match dest::resolve(&rpc, common.dest, text, common.sm_lid, out) {
            Some(Dest::Lid(lid)) => lid,
            _ => {
                return Err(exit(
                    out,
                    "main",
                    &format!("can't resolve destination port {text}"),
                ))
            }
        },
        None => match dest::local_port(&rpc) {
            Some(port) => {
                info.port = port.port_num as i32;
                port.base_lid as u16
            }
            None => return Err(exit(out, "main", "can't resolve self port (null)")),
        },
    };
    let mut q = Query {
        prog,
        common: &common,
        rpc,
        lid,
        dest: Dest::Lid(lid),
        cap_mask: 0,
        cap_mask2: 0,
    };
    let class_port_info = q
        .pma(ClassPortInfo::ATTR_ID, info.port, None, out)
        .and_then(|data| ClassPortInfo::decode(&data).ok())
        .ok_or_else(|| exit(out, "main", "classportinfo query"))?;
    q.cap_mask = class_port_info.capability_mask;
    q.cap_mask2 = class_port_info.capability_mask2;

    let mut all_ports_loop = false;
    if q.cap_mask & ALL_PORT_SELECT == 0 {
        if !info.all_ports && info.port == ALL_PORTS {
            return Err(exit(out, "main", "AllPortSelect not supported"));
        }
        all_ports_loop = info.all_ports && info.port == ALL_PORTS;
    }
    match info.query.and_then(|i| QUERIES.chars().nth(i)) {
        Some('T') => return q.ext_speeds(&info, ext_mask, out),
        Some('c') => return q.samples_control(info.port, out),
        Some(letter) => {
            if let Some(detail) = details::DETAILS.iter().find(|d| d.opt.letter == letter) {
                return q.detail(detail, &info, mask as u32, out);
            }
        }
        None => {}
    }
    let looping = all_ports_loop || (info.loop_ports && (info.all_ports || info.port == ALL_PORTS));
    let mut first = 1;
    let mut last = 0;
    if looping {
        let node = q
            .rpc
            .smp_get(&q.dest, NodeInfo::ATTR_ID, 0, out)
            .and_then(|data| NodeInfo::decode(&data).ok())
            .ok_or_else(|| exit(out, "main", "smp query nodeinfo failed"))?;
        last = i32::from(node.num_ports);
        if last == 0 {
            return Err(exit(out, "main", "smp query nodeinfo: num ports invalid"));
        }
        if node.node_type == 2 {
            let switch = q
                .rpc
                .smp_get(&q.dest, SwitchInfo::ATTR_ID, 0, out)
                .and_then(|data| SwitchInfo::decode(&data).ok())
                .ok_or_else(|| exit(out, "main", "smp query nodeinfo failed"))?;
            if switch.enhanced_port0 != 0 {
                first = 0;
            }
        }
        if all_ports_loop && !info.loop_ports {
            let msg = "Emulating AllPortSelect by iterating through all ports";
            ibdiag::warn(out, "main", msg);
        }
    }
    let ports: Vec<i32> = if looping {
        (first..=last).collect()
    } else if info.ports.len() > 1 {
        info.ports.clone()
    } else {
        vec![info.port]
    };

    if !info.reset_only {
        let aggregate = if looping {
            all_ports_loop && !info.loop_ports
        } else {
            info.ports.len() > 1 && info.all_ports && !info.loop_ports
        };
        q.dump(info.extended, &ports, aggregate, out)?;
        if !info.reset {
            return Ok(());
        }
    }
    if operands.len() <= 2 && !info.extended {
        if q.cap_mask & XMIT_WAIT != 0 {
            mask |= 1 << 16;
        }
        if q.cap_mask & QP1_DROP != 0 {
            mask |= 1 << 17;
        }
    }
    if info.extended {
        mask |= 0xfff_0000;
        if q.cap_mask & XMIT_WAIT != 0 {
            mask |= 1 << 28;
        }
        if q.cap_mask & QP1_DROP != 0 {
            mask |= 1 << 29;
        }
    }
    for &port in &ports {
        q.reset(info.extended, mask as u32, port, out)?;
    }
    Ok(())
}

/// The ports operand: a comma-separated list, a range `min-max`, or one port (each as
/// `strtoul` reads it).
fn parse_ports(text: &str, info: &mut Info) -> Result<(), &'static str> {
    let number = |t: &str| strtoull(t) as i32;
    if text.contains(',') {
        info.ports = text
            .split(',')
            .filter(|t| !t.is_empty())
            .map(number)
            .collect();
    } else if let Some((min, max)) = text.split_once('-') {
        let (min, max) = (number(min), number(max));
        if min >= max {
            return Err("max port must be greater than min port in range");
        }
        info.ports = (min..=max).collect();
    } else {
        info.port = number(text);
        return Ok(());
    }
    info.port = info.ports.first().copied().unwrap_or(0);
    Ok(())
}

impl Query<'_> {
    /// `pma_query_via` (`set`: `performance_reset_via` with that CounterSelect mask):
    /// attribute `attr_id` of port `port` (its PortSelect); the answer's data.
    fn pma(
        &self,
        attr_id: u16,
        port: i32,
        set: Option<u32>,
        out: &mut Output,
    ) -> Option<[u8; MAD_SIZE - PERF_DATA_OFFSET]> {
        if self.common.debug > 0 {
            let msg = format!("lid {} port {port}", self.lid);
            ibdiag::warn(out, "pma_query_via", &msg);
        }
        self.pma_mad(attr_id, port, set.is_some(), out, |data| {
            if let Some(mask) = set {
                let mask = if mask == 0 { u32::MAX } else { mask };
                data[2..4].copy_from_slice(&(mask as u16).to_be_bytes());
                if attr_id == PortCountersExtended::ATTR_ID {
                    data[4..8].copy_from_slice(&(mask >> 16).to_be_bytes());
                } else {
                    data[18] = (mask >> 16) as u8;
                }
            }
        })
    }

    /// A Get (or `set`, a Set) of attribute `attr_id` of port `port` (its PortSelect) with
    /// the data `fill` writes after PortSelect; the answer's data.
    fn pma_mad(
        &self,
        attr_id: u16,
        port: i32,
        set: bool,
        out: &mut Output,
        fill: impl FnOnce(&mut [u8]),
    ) -> Option<[u8; MAD_SIZE - PERF_DATA_OFFSET]> {
        let header = MadHeader {
            base_version: 1,
            mgmt_class: PERF_CLASS,
            class_version: 1,
            method: if set { 0x02 } else { 0x01 },
            attr_id,
            ..MadHeader::default()
        };
        let mut mad = [0u8; MAD_SIZE];
        mad[..MadHeader::SIZE].copy_from_slice(&header.encode());
        let data = &mut mad[PERF_DATA_OFFSET..];
        data[1] = port as u8;
        fill(data);
        let answer = self.rpc.gs(PERF_CLASS, 1, &mad, self.lid, out)?;
        let mut data = [0; MAD_SIZE - PERF_DATA_OFFSET];
        data.copy_from_slice(&answer[PERF_DATA_OFFSET..]);
        Some(data)
    }

    /// `dump_perfcounters` of each of `ports`, each printed or (`aggregate`) summed and the
    /// sum printed as port 255.
    fn dump(
        &self,
        extended: bool,
        ports: &[i32],
        aggregate: bool,
        out: &mut Output,
    ) -> Result<(), i32> {
        let exit = |out: &mut Output, msg| {
            ibdiag::exit(out, self.prog, self.common.debug, "dump_perfcounters", msg)
        };
        let (cap, cap2) = (self.cap_mask, self.cap_mask2);
        let mut sum = PortCounters::default();
        let mut sum_ext = PortCountersExtended::default();
        for &port in ports {
            if !extended {
                let mut pc = self
                    .pma(PortCounters::ATTR_ID, port, None, out)
                    .and_then(|data| PortCounters::decode(&data).ok())
                    .ok_or_else(|| exit(out, "perfquery"))?;
                if cap & XMIT_WAIT == 0 {
                    pc.port_xmit_wait = 0;
                }
                if aggregate {
                    counters::add(&mut sum, &pc);
                } else {
                    self.print(port, &counters::port_counters(&pc), false, out);
                }
                continue;
            }
            if cap & EXT_WIDTH == 0 && cap & EXT_WIDTH_NOIETF == 0 {
                let msg = format!(
                    "PerfMgt ClassPortInfo CapMask 0x{cap:02X}; No extended counter support indicated\n"
                );
                ibdiag::warn(out, "dump_perfcounters", &msg);
            }
            let pce = self
                .pma(PortCountersExtended::ATTR_ID, port, None, out)
                .and_then(|data| PortCountersExtended::decode(&data).ok())
                .ok_or_else(|| exit(out, "perfextquery"))?;
            if aggregate {
                counters::add_ext(&mut sum_ext, &pce, cap, cap2);
            } else {
                let text = counters::port_counters_ext(&pce, cap, cap2);
                self.print(port, &text, true, out);
            }
        }
        if aggregate {
            let text = if extended {
                sum_ext.port_select = ALL_PORTS as u8;
                counters::port_counters_ext(&sum_ext, cap, cap2)
            } else {
                sum.port_select = ALL_PORTS as u8;
                counters::port_counters(&sum)
            };
            self.print(ALL_PORTS, &text, extended, out);
        }
        Ok(())
    }

    /// The heading of port `port`'s counters, then `text`.
    fn print(&self, port: i32, text: &str, extended: bool, out: &mut Output) {
        let (dest, cap) = (&self.dest, self.cap_mask);
        let _ = if extended {
            let cap2 = self.cap_mask2;
            write!(
                out,
                "# Port extended counters: {dest} port {port} (CapMask: 0x{cap:02X} CapMask2: 0x{cap2:07X})\n{text}"
            )
        } else {
            write!(
                out,
                "# Port counters: {dest} port {port} (CapMask: 0x{cap:02X})\n{text}"
            )
        };
    }

    /// `common_func`: prints the counters of `detail` of the port (unless `-R`), then resets
    /// the ones `mask` selects (with `-r` or `-R`).
    fn detail(
        &self,
        detail: &details::Detail,
        info: &Info,
        mask: u32,
        out: &mut Output,
    ) -> Result<(), i32> {
        let name = detail.name;
        let exit = |out: &mut Output, msg: &str| {
            ibdiag::exit(out, self.prog, self.common.debug, "common_func", msg)
        };
        if !info.reset_only {
            let text = self
                .pma(detail.attr_id, info.port, None, out)
                .and_then(|data| detail.lines(&data))
                .ok_or_else(|| exit(out, &format!("cannot query {name}")))?;
            let (dest, port) = (&self.dest, info.port);
            let _ = write!(out, "# {name} counters: {dest} port {port}\n{text}");
        }
        if (info.reset_only || info.reset)
            && self
                .pma(detail.attr_id, info.port, Some(mask), out)
                .is_none()
        {
            return Err(exit(out, &format!("cannot reset {name}")));
        }
        Ok(())
    }

    /// `extended_speeds_query`: prints PortExtendedSpeedsCounters of the port (unless
    /// `-R`), then (`-r`, `-R`) resets the counters `mask` selects (all if 0).
    fn ext_speeds(&self, info: &Info, mask: u64, out: &mut Output) -> Result<(), i32> {
        let (prog, debug) = (self.prog, self.common.debug);
        let attr = PortExtendedSpeedsCounters::ATTR_ID;
        let name = "PortExtendedSpeedsCounters";
        if !info.reset_only {
            let text = self
                .pma(attr, info.port, None, out)
                .and_then(|data| samples::ext_speeds(&data))
                .ok_or_else(|| {
                    let msg = format!("cannot query {name}");
                    ibdiag::exit(out, prog, debug, "common_func", &msg)
                })?;
            let (dest, port) = (&self.dest, info.port);
            let _ = write!(out, "# {name} counters: {dest} port {port}\n{text}");
        }
        if info.reset_only || info.reset {
            if debug > 0 {
                let msg = format!("lid {} port {} mask {mask:#x}", self.lid, info.port);
                ibdiag::debug(out, "ext_speeds_reset_via", &msg);
            }
            let mask = if mask == 0 { u64::MAX } else { mask };
            let fill = |data: &mut [u8]| data[8..16].copy_from_slice(&mask.to_be_bytes());
            if self.pma_mad(attr, info.port, true, out, fill).is_none() {
                let msg = format!("cannot reset {name}");
                return Err(ibdiag::exit(
                    out,
                    prog,
                    debug,
                    "extended_speeds_query",
                    &msg,
                ));
            }
        }
        Ok(())
    }

    /// `dump_portsamples_control`: prints PortSamplesControl of port `port`.
    fn samples_control(&self, port: i32, out: &mut Output) -> Result<(), i32> {
        let (prog, debug) = (self.prog, self.common.debug);
        let text = self
            .pma(PortSamplesControl::ATTR_ID, port, None, out)
            .and_then(|data| samples::samples_control(&data))
            .ok_or_else(|| {
                ibdiag::exit(out, prog, debug, "dump_portsamples_control", "sampctlquery")
            })?;
        let dest = &self.dest;
        let _ = write!(out, "# PortSamplesControl: {dest} port {port}\n{text}");
        Ok(())
    }

    /// `reset_counters`: resets the counters of port `port` that `mask` selects.
    fn reset(&self, extended: bool, mask: u32, port: i32, out: &mut Output) -> Result<(), i32> {
        let (attr, msg) = if extended {
            (PortCountersExtended::ATTR_ID, "perf ext reset")
        } else {
            (PortCounters::ATTR_ID, "perf reset")
        };
        match self.pma(attr, port, Some(mask), out) {
            Some(_) => Ok(()),
            None => Err(ibdiag::exit(
                out,
                self.prog,
                self.common.debug,
                "reset_counters",
                msg,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_like_c() {
        let mut info = Info::default();
        parse_ports("3", &mut info).unwrap();
        assert_eq!((info.port, info.ports.len()), (3, 0));
        parse_ports("1,4,,8", &mut info).unwrap();
        assert_eq!((info.port, info.ports.clone()), (1, vec![1, 4, 8]));
        parse_ports("2-4", &mut info).unwrap();
        assert_eq!((info.port, info.ports.clone()), (2, vec![2, 3, 4]));
        parse_ports("-1", &mut info).unwrap();
        assert_eq!(info.ports, [0, 1]);
        assert!(parse_ports("4-4", &mut info).is_err());
    }
}
