//! `ibstat` of infiniband-diags, with the same standard output byte for byte and the same
//! exit status.
//!
//! The C tool reads everything from sysfs through libibumad. Here the values come from verbs,
//! except the three that verbs does not give the same way, read from the same sysfs files with
//! libibumad's rules: `CA type` (`hca_type`), `Firmware version` (`fw_ver`; verbs formats its
//! own, such as `0.0.0` on rxe where sysfs has an empty string) and `Hardware version`
//! (`hw_rev`). `Rate` is computed from the active width and speed as the kernel computes the
//! sysfs `rate` file that libibumad reads.

use std::ffi::OsString;
use std::fmt::{self, Write};

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use ibverbs::{Context, DeviceList, LinkLayer, NodeType, PhysState, PortAttr, PortState, Speed};

use crate::cli::{self, Output};
use crate::sysfs;

/// A node type as `ibstat` names it; `None` for the types it does not list (iWARP and
/// others: libibumad lists node types 1 to 3 only).
pub fn node_type_str(node_type: NodeType) -> Option<&'static str> {
    match node_type {
        NodeType::Ca => Some("CA"),
        NodeType::Switch => Some("Switch"),
        NodeType::Router => Some("Router"),
        _ => None,
    }
}

/// A port state as `ibstat` names it, such as `Active`.
pub fn port_state_str(state: PortState) -> &'static str {
    match state.raw() {
        1 => "Down",
        2 => "Initializing",
        3 => "Armed",
        4 => "Active",
        _ => "???",
    }
}

/// A physical port state as `ibstat` names it, such as `LinkUp`.
pub fn phys_state_str(state: PhysState) -> &'static str {
    match state.raw() {
        0 => "No state change",
        1 => "Sleep",
        2 => "Polling",
        3 => "Disabled",
        4 => "PortConfigurationTraining",
        5 => "LinkUp",
        6 => "LinkErrorRecovery",
        7 => "PhyTest",
        _ => "???",
    }
}

/// A link layer as the kernel's sysfs `link_layer` names it.
pub fn link_layer_str(link_layer: LinkLayer) -> &'static str {
    match link_layer {
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Ethernet => "Ethernet",
        _ => "Unknown",
    }
}

/// The `Rate` value `ibstat` prints, such as `100`, `2.5` or `40 (FDR10)`: the integer Gb/s
/// of the kernel's sysfs `rate` (unknown speeds count as SDR there). `None` for a width the
/// kernel cannot express, where the sysfs file, and so `ibstat`, fails.
pub fn rate_str(attr: &PortAttr) -> Option<String> {
    let lanes = attr.active_width.lanes()?;
    // Tenths of Gb/s per lane, as in the kernel's rate_show().
    let lane = match attr.active_speed {
        Speed::Ddr => 50,
        Speed::Qdr | Speed::Fdr10 => 100,
        Speed::Fdr => 140,
        Speed::Edr => 250,
        Speed::Hdr => 500,
        Speed::Ndr => 1000,
        _ => 25,
    };
    let gbps = lane * lanes / 10;
    Some(if attr.active_speed == Speed::Fdr10 {
        format!("{gbps} (FDR10)")
    } else if gbps == 2 {
        // 1X SDR is 2.5.
        "2.5".to_owned()
    } else {
        gbps.to_string()
    })
}

/// One port as `ibstat` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// The port number.
    pub port: u8,
    /// `State`.
    pub state: &'static str,
    /// `Physical state`.
    pub phys_state: &'static str,
    /// `Rate`.
    pub rate: String,
    /// `Base lid`.
    pub lid: u16,
    /// `LMC`.
    pub lmc: u8,
    /// `SM lid`.
    pub sm_lid: u16,
    /// `Capability mask`.
    pub cap_mask: u32,
    /// `Port GUID`: the interface ID of GID 0.
    pub port_guid: u64,
    /// `Link layer`.
    pub link_layer: &'static str,
}

impl PortInfo {
    /// The values of port `port` with attributes `attr` and GID 0 interface ID `port_guid`;
    /// `None` where `ibstat` fails (see [`rate_str`]).
    pub fn new(port: u8, attr: &PortAttr, port_guid: u64) -> Option<Self> {
        Some(PortInfo {
            port,
            state: port_state_str(attr.state),
            phys_state: phys_state_str(attr.phys_state),
            rate: rate_str(attr)?,
            lid: attr.lid,
            lmc: attr.lmc,
            sm_lid: attr.sm_lid,
            cap_mask: attr.port_cap_flags.bits(),
            port_guid,
            link_layer: link_layer_str(attr.link_layer),
        })
    }
}

/// One device as `ibstat` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaInfo {
    /// The device name.
    pub name: String,
    /// The node type name, such as `CA`.
    pub node_type: &'static str,
    /// `CA type` (sysfs `hca_type`).
    pub ca_type: String,
    /// `Number of ports`.
    pub num_ports: u8,
    /// `Firmware version` (sysfs `fw_ver`).
    pub fw_ver: String,
    /// `Hardware version` (sysfs `hw_rev`).
    pub hw_ver: String,
    /// `Node GUID`.
    pub node_guid: u64,
    /// `System image GUID`.
    pub sys_image_guid: u64,
    /// The ports, from 1.
    pub ports: Vec<PortInfo>,
}

/// The device header of `ibstat` (all `-s` prints).
pub fn write_ca(out: &mut impl Write, ca: &CaInfo) -> fmt::Result {
    writeln!(out, "{} '{}'", ca.node_type, ca.name)?;
    writeln!(out, "\t{} type: {}", ca.node_type, ca.ca_type)?;
    writeln!(out, "\tNumber of ports: {}", ca.num_ports)?;
    writeln!(out, "\tFirmware version: {}", ca.fw_ver)?;
    writeln!(out, "\tHardware version: {}", ca.hw_ver)?;
    writeln!(out, "\tNode GUID: 0x{:016x}", ca.node_guid)?;
    writeln!(out, "\tSystem image GUID: 0x{:016x}", ca.sys_image_guid)
}

/// A port block of `ibstat`: indented under its device, or `alone` as `ibstat CA PORT`
/// prints it.
pub fn write_port(out: &mut impl Write, port: &PortInfo, alone: bool) -> fmt::Result {
    let (head, pre) = if alone { ("", "") } else { ("\t", "\t\t") };
    writeln!(out, "{head}Port {}:", port.port)?;
    writeln!(out, "{pre}State: {}", port.state)?;
    writeln!(out, "{pre}Physical state: {}", port.phys_state)?;
    writeln!(out, "{pre}Rate: {}", port.rate)?;
    writeln!(out, "{pre}Base lid: {}", port.lid)?;
    writeln!(out, "{pre}LMC: {}", port.lmc)?;
    writeln!(out, "{pre}SM lid: {}", port.sm_lid)?;
    writeln!(out, "{pre}Capability mask: 0x{:08x}", port.cap_mask)?;
    writeln!(out, "{pre}Port GUID: 0x{:016x}", port.port_guid)?;
    writeln!(out, "{pre}Link layer: {}", port.link_layer)
}

/// The interface ID of GID 0 of each port (`ibstat -p` prints the non-zero ones).
fn port_guids(ctx: &Context) -> ibverbs::Result<Vec<u64>> {
    (1..=ctx.port_count()?)
        .map(|port| Ok(ctx.query_gid(port, 0)?.interface_id()))
        .collect()
}

/// Everything `ibstat` prints about a device.
fn query_ca(name: &str, node_type: &'static str) -> Result<CaInfo, String> {
    let ctx = Context::open(name).map_err(|e| e.to_string())?;
    let attr = ctx.query_device().map_err(|e| e.to_string())?;
    let guids = port_guids(&ctx).map_err(|e| e.to_string())?;
    let mut ports = Vec::new();
    for (port, guid) in (1..=attr.phys_port_cnt).zip(guids) {
        let port_attr = ctx.query_port(port).map_err(|e| e.to_string())?;
        let info = PortInfo::new(port, &port_attr, guid)
            .ok_or_else(|| format!("port {port} has a width sysfs cannot show"))?;
        ports.push(info);
    }
    Ok(CaInfo {
        name: name.to_owned(),
        node_type,
        ca_type: sysfs::read_umad(name, "hca_type", 40),
        num_ports: attr.phys_port_cnt,
        fw_ver: sysfs::read_umad(name, "fw_ver", 20),
        hw_ver: sysfs::read_umad(name, "hw_rev", 20),
        node_guid: attr.node_guid,
        sys_image_guid: attr.sys_image_guid,
        ports,
    })
}

// ---------------------------------------------------------------------------------------
// Arguments and main

/// The options of `ibstat` (getopt `lspz:vdhV` with infiniband-diags' long names).
#[derive(Parser, Debug)]
#[command(
    name = "ibstat",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true
)]
struct IbstatArgs {
    /// List the device names only.
    #[arg(short = 'l', long = "list_of_cas", action = ArgAction::Count)]
    list: u8,
    /// Print the devices without their ports.
    #[arg(short = 's', long = "short", action = ArgAction::Count)]
    short: u8,
    /// Print the port GUIDs only.
    #[arg(short = 'p', long = "port_list", action = ArgAction::Count)]
    port_list: u8,
    /// An ibdiag config file (read by the C tool; no setting of it affects ibstat).
    #[arg(short = 'z', long = "config", action = ArgAction::Append, allow_hyphen_values = true)]
    config: Vec<String>,
    /// More verbose (no effect on ibstat).
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    verbose: u8,
    /// More debug output (no effect on stdout).
    #[arg(short = 'd', long = "debug", action = ArgAction::Count)]
    debug: u8,
    /// Print the usage.
    #[arg(short = 'h', long = "help", action = ArgAction::Append, num_args = 0, default_missing_value = "")]
    help: Vec<String>,
    /// Print the version.
    #[arg(short = 'V', long = "version", action = ArgAction::Append, num_args = 0, default_missing_value = "")]
    version: Vec<String>,
    /// `<ca_name> [portnum]`; more are ignored.
    #[arg(hide = true)]
    operands: Vec<String>,
}

/// What `ibstat`'s arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IbstatCommand {
    /// Print the usage to stderr (after `message`) and exit with status 2.
    Usage {
        /// The getopt message for a bad option.
        message: Option<String>,
    },
    /// `-V`: print the version to stderr, exit 0.
    Version,
    /// Print devices.
    Show {
        /// The device operand.
        ca: Option<String>,
        /// The port operand (`strtol`, as an int); -1 without one.
        port: i32,
        /// `-l`.
        list: bool,
        /// `-s`.
        short: bool,
        /// `-p`.
        port_list: bool,
    },
}

/// Parses `ibstat`'s arguments (with the program name first) like its getopt loop: the first
/// of `-h` and `-V` acts.
pub fn parse_ibstat_args(args: &[OsString]) -> IbstatCommand {
    let prog = cli::prog_name(args, "ibstat");
    let usage = |err: clap::Error| IbstatCommand::Usage {
        message: Some(cli::getopt_message(
            &prog,
            &IbstatArgs::command(),
            args,
            &err,
        )),
    };
    let matches = match IbstatArgs::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err) => {
            let acting = [('h', "help"), ('V', "version")];
            return match cli::acting_before_error(args, &err, &acting, &[]) {
                Some('V') => IbstatCommand::Version,
                Some(_) => IbstatCommand::Usage { message: None },
                None => usage(err),
            };
        }
    };
    let parsed = match IbstatArgs::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(err) => return usage(err),
    };
    let first = |id: &str| matches.indices_of(id).and_then(|mut i| i.next());
    match (first("help"), first("version")) {
        (Some(h), Some(v)) if v < h => return IbstatCommand::Version,
        (Some(_), _) => return IbstatCommand::Usage { message: None },
        (None, Some(_)) => return IbstatCommand::Version,
        (None, None) => {}
    }
    let mut operands = parsed.operands.into_iter();
    let ca = operands.next();
    // strtol into an int, as C assigns it.
    let port = operands.next().map_or(-1, |p| cli::strtol(&p) as i32);
    IbstatCommand::Show {
        ca,
        port,
        list: parsed.list > 0,
        short: parsed.short > 0,
        port_list: parsed.port_list > 0,
    }
}

/// The usage `ibstat` prints to stderr.
pub fn ibstat_usage(prog: &str) -> String {
    format!(
        "\nUsage: {prog} [options] [<ca_name> [portnum]]\n\n\
         Options:\n\
         \x20 --list_of_cas, -l       print only the names of the devices\n\
         \x20 --short, -s             print the devices without their ports\n\
         \x20 --port_list, -p         print only the port GUIDs\n\
         \x20 --config, -z <config>   an ibdiag config file (accepted; ibstat uses none of it)\n\
         \x20 --verbose, -v           more verbose (no effect)\n\
         \x20 --debug, -d             raise the debug level (no effect)\n\
         \x20 --help, -h              print this help\n\
         \x20 --version, -V           print the version\n\n\
         Examples:\n\
         \x20 {prog} -l        # the device names\n\
         \x20 {prog} mlx5_0 1  # port 1 of mlx5_0\n"
    )
}

/// `ibpanic:` as infiniband-diags prints it; the status is 255.
fn panic(out: &mut Output, msg: &str) -> i32 {
    out.error(&format!("ibpanic: [{}] main: {msg}", std::process::id()));
    -1
}

/// The devices `ibstat` shows, sorted by name; `None` if they cannot be listed.
fn ca_names() -> Result<Vec<(String, &'static str)>, ibverbs::Error> {
    let list = match DeviceList::new() {
        Ok(list) => list,
        // No RDMA support in the kernel: like a missing /sys/class/infiniband for libibumad.
        Err(err) if err.raw_os_error() == Some(ENOSYS) => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut names: Vec<(String, &'static str)> = list
        .iter()
        .filter_map(|d| Some((d.name().to_owned(), node_type_str(d.node_type())?)))
        .collect();
    names.sort();
    Ok(names)
}

/// `ENOSYS` (Linux), the errno of `ibv_get_device_list` without kernel support.
const ENOSYS: i32 = 38;

/// `ibstat` with these arguments (program name first); returns the exit status.
pub fn ibstat_main(args: &[OsString]) -> i32 {
    let prog = cli::prog_name(args, "ibstat");
    let mut out = Output::new();
    let (ca, port, list, short, port_list) = match parse_ibstat_args(args) {
        IbstatCommand::Usage { message } => {
            if let Some(message) = message {
                out.error(&message);
            }
            out.error(&ibstat_usage(&prog));
            return 2;
        }
        IbstatCommand::Version => {
            let version = env!("CARGO_PKG_VERSION");
            out.error(&format!("{prog} BUILD VERSION: ibverbs-tools {version}"));
            return 0;
        }
        IbstatCommand::Show {
            ca,
            port,
            list,
            short,
            port_list,
        } => (ca, port, list, short, port_list),
    };
    let names = match ca_names() {
        Ok(names) => names,
        Err(err) => return panic(&mut out, &format!("can't list IB device names: {err}")),
    };
    let selected: Vec<(String, &'static str)> = match ca {
        Some(ca) => match names.into_iter().find(|(name, _)| *name == ca) {
            Some(found) => vec![found],
            None => return panic(&mut out, &format!("'{ca}' IB device can't be found")),
        },
        None => names,
    };
    if port_list {
        for (name, _) in &selected {
            let guids = Context::open(name).and_then(|ctx| port_guids(&ctx));
            match guids {
                Ok(guids) => {
                    for guid in guids.into_iter().filter(|&g| g != 0) {
                        let _ = writeln!(out, "0x{guid:016x}");
                    }
                }
                Err(err) => return panic(&mut out, &format!("can't list ports: {err}")),
            }
        }
        out.flush();
        return 0;
    }
    for (name, node_type) in &selected {
        if list {
            let _ = writeln!(out, "{name}");
            continue;
        }
        let info = match query_ca(name, node_type) {
            Ok(info) => info,
            Err(err) => {
                return panic(
                    &mut out,
                    &format!("stat of IB device '{name}' failed: {err}"),
                )
            }
        };
        if !short && port >= 0 {
            let Some(p) = info.ports.iter().find(|p| i32::from(p.port) == port) else {
                out.error(&format!(
                    "ibwarn: [{}] ca_stat: {node_type}: '{name}' has no port number {port} - max ({})",
                    std::process::id(),
                    info.num_ports
                ));
                return panic(&mut out, &format!("stat of IB device '{name}' failed"));
            };
            let _ = writeln!(out, "{node_type}: '{name}'");
            let _ = write_port(&mut out, p, true);
            continue;
        }
        let _ = write_ca(&mut out, &info);
        if !short {
            for p in &info.ports {
                let _ = write_port(&mut out, p, false);
            }
        }
    }
    out.flush();
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibverbs::ffi;

    fn port(width: u8, speed: u8) -> PortAttr {
        PortAttr::from_raw(ffi::ibv_port_attr {
            state: ffi::ibv_port_state::IBV_PORT_ACTIVE,
            port_cap_flags: 0x0001_0000,
            active_width: width,
            active_speed: speed,
            phys_state: 5,
            link_layer: ffi::IBV_LINK_LAYER_ETHERNET as u8,
            ..Default::default()
        })
    }

    /// rxe0 as ibstat shows it (rdma-core 44, Linux 6.1).
    fn rxe() -> CaInfo {
        CaInfo {
            name: "rxe0".to_owned(),
            node_type: "CA",
            ca_type: String::new(),
            num_ports: 1,
            fw_ver: String::new(),
            hw_ver: String::new(),
            node_guid: 0x0200_00ff_fe00_0000,
            sys_image_guid: 0x0200_00ff_fe00_0000,
            ports: vec![PortInfo::new(1, &port(1, 1), 0x0200_00ff_fe00_0000).unwrap()],
        }
    }

    #[test]
    fn ibstat_of_rxe() {
        let ca = rxe();
        let mut out = String::new();
        write_ca(&mut out, &ca).unwrap();
        assert_eq!(out, IBSTAT_S);
        write_port(&mut out, &ca.ports[0], false).unwrap();
        assert_eq!(out, IBSTAT);
        let mut alone = String::from("CA: 'rxe0'\n");
        write_port(&mut alone, &ca.ports[0], true).unwrap();
        assert_eq!(alone, IBSTAT_PORT);
    }

    #[test]
    fn rates() {
        // Widths: 1 = 1X, 16 = 2X, 2 = 4X, 4 = 8X, 8 = 12X. Speeds: 1 = SDR ... 128 = NDR.
        assert_eq!(rate_str(&port(1, 1)).unwrap(), "2.5");
        assert_eq!(rate_str(&port(2, 1)).unwrap(), "10");
        assert_eq!(rate_str(&port(16, 1)).unwrap(), "5");
        assert_eq!(rate_str(&port(1, 2)).unwrap(), "5");
        assert_eq!(rate_str(&port(8, 4)).unwrap(), "120");
        assert_eq!(rate_str(&port(2, 8)).unwrap(), "40 (FDR10)");
        assert_eq!(rate_str(&port(2, 16)).unwrap(), "56");
        assert_eq!(rate_str(&port(1, 16)).unwrap(), "14");
        assert_eq!(rate_str(&port(2, 32)).unwrap(), "100");
        assert_eq!(rate_str(&port(16, 64)).unwrap(), "100");
        assert_eq!(rate_str(&port(4, 128)).unwrap(), "800");
        // The kernel counts an unknown speed as SDR, and fails on an unknown width.
        assert_eq!(rate_str(&port(2, 0)).unwrap(), "10");
        assert_eq!(rate_str(&port(3, 1)), None);
    }

    #[test]
    fn names_of_values() {
        assert_eq!(port_state_str(PortState::Active), "Active");
        assert_eq!(port_state_str(PortState::Init), "Initializing");
        assert_eq!(port_state_str(PortState::Nop), "???");
        assert_eq!(port_state_str(PortState::ActiveDefer), "???");
        assert_eq!(phys_state_str(PhysState::NoStateChange), "No state change");
        assert_eq!(phys_state_str(PhysState::Disabled), "Disabled");
        assert_eq!(phys_state_str(PhysState::PhyTest), "PhyTest");
        assert_eq!(phys_state_str(PhysState::Unknown(8)), "???");
        assert_eq!(link_layer_str(LinkLayer::InfiniBand), "InfiniBand");
        assert_eq!(link_layer_str(LinkLayer::Unspecified), "Unknown");
        assert_eq!(node_type_str(NodeType::Switch), Some("Switch"));
        assert_eq!(node_type_str(NodeType::Rnic), None);
    }

    fn parse(args: &[&str]) -> IbstatCommand {
        let args: Vec<OsString> = std::iter::once("ibstat")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        parse_ibstat_args(&args)
    }

    fn show(ca: Option<&str>, port: i32, flags: &str) -> IbstatCommand {
        IbstatCommand::Show {
            ca: ca.map(str::to_owned),
            port,
            list: flags.contains('l'),
            short: flags.contains('s'),
            port_list: flags.contains('p'),
        }
    }

    #[test]
    fn arguments() {
        assert_eq!(parse(&[]), show(None, -1, ""));
        assert_eq!(parse(&["rxe0"]), show(Some("rxe0"), -1, ""));
        assert_eq!(parse(&["rxe0", "1", "more"]), show(Some("rxe0"), 1, ""));
        assert_eq!(parse(&["rxe0", "x"]), show(Some("rxe0"), 0, ""));
        assert_eq!(parse(&["rxe0", "--", "-1"]), show(Some("rxe0"), -1, ""));
        assert_eq!(
            parse(&["-ls", "-p", "-z", "cfg", "-vd"]),
            show(None, -1, "lsp")
        );
        assert_eq!(parse(&["--short", "--list_of_cas"]), show(None, -1, "ls"));
        assert_eq!(parse(&["-h"]), IbstatCommand::Usage { message: None });
        assert_eq!(parse(&["-V"]), IbstatCommand::Version);
        assert_eq!(parse(&["-V", "-h"]), IbstatCommand::Version);
        assert_eq!(parse(&["-h", "-V"]), IbstatCommand::Usage { message: None });
        assert_eq!(
            parse(&["rxe0", "-1"]),
            IbstatCommand::Usage {
                message: Some("ibstat: invalid option -- '1'".to_owned()),
            }
        );
        assert_eq!(
            parse(&["--ver"]),
            IbstatCommand::Usage {
                message: Some(
                    "ibstat: option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
                        .to_owned()
                ),
            }
        );
    }

    const IBSTAT: &str = "\
        CA 'rxe0'\n\
        \tCA type: \n\
        \tNumber of ports: 1\n\
        \tFirmware version: \n\
        \tHardware version: \n\
        \tNode GUID: 0x020000fffe000000\n\
        \tSystem image GUID: 0x020000fffe000000\n\
        \tPort 1:\n\
        \t\tState: Active\n\
        \t\tPhysical state: LinkUp\n\
        \t\tRate: 2.5\n\
        \t\tBase lid: 0\n\
        \t\tLMC: 0\n\
        \t\tSM lid: 0\n\
        \t\tCapability mask: 0x00010000\n\
        \t\tPort GUID: 0x020000fffe000000\n\
        \t\tLink layer: Ethernet\n\
    ";

    const IBSTAT_S: &str = "\
        CA 'rxe0'\n\
        \tCA type: \n\
        \tNumber of ports: 1\n\
        \tFirmware version: \n\
        \tHardware version: \n\
        \tNode GUID: 0x020000fffe000000\n\
        \tSystem image GUID: 0x020000fffe000000\n\
    ";

    const IBSTAT_PORT: &str = "\
        CA: 'rxe0'\n\
        Port 1:\n\
        State: Active\n\
        Physical state: LinkUp\n\
        Rate: 2.5\n\
        Base lid: 0\n\
        LMC: 0\n\
        SM lid: 0\n\
        Capability mask: 0x00010000\n\
        Port GUID: 0x020000fffe000000\n\
        Link layer: Ethernet\n\
    ";
}
