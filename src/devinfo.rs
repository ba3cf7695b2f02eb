//! `ibv_devices` and `ibv_devinfo` of rdma-core's libibverbs utilities, with the same output
//! byte for byte and the same exit status.
//!
//! Everything comes from verbs except `board_id`, which `ibv_devinfo` reads from sysfs.

use std::ffi::OsString;
use std::fmt::{self, Write};

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};
use ibverbs::ffi;
use ibverbs::{
    AtomicCap, Context, Device, DeviceAttr, DeviceCapFlags, DeviceList, GidEntry, GidType,
    LinkLayer, Mtu, OdpGeneralCaps, OdpTransportCaps, PhysState, PortAttr, PortState,
    RawPacketCaps, Speed, Transport, Width,
};

use crate::cli::{self, Output};
use crate::sysfs;

// ---------------------------------------------------------------------------------------
// ibv_devices

/// The output of `ibv_devices` for these devices (name and node GUID).
pub fn write_devices(out: &mut impl Write, devices: &[(&str, u64)]) -> fmt::Result {
    writeln!(out, "    {:<16}\t   node GUID", "device")?;
    writeln!(out, "    {:<16}\t----------------", "------")?;
    for (name, guid) in devices {
        writeln!(out, "    {name:<16}\t{guid:016x}")?;
    }
    Ok(())
}

/// `ibv_devices`: lists the devices and their node GUIDs; returns the exit status. Like the C
/// tool, it takes no arguments and ignores any.
pub fn devices_main() -> i32 {
    let mut out = Output::new();
    let list = match DeviceList::new() {
        Ok(list) => list,
        Err(err) => {
            let text = cli::verbs_error_text(&err);
            out.error(&format!("Failed to get IB devices list: {text}"));
            return 1;
        }
    };
    let devices: Vec<(&str, u64)> = list.iter().map(|d| (d.name(), d.guid())).collect();
    let _ = write_devices(&mut out, &devices);
    out.flush();
    0
}

// ---------------------------------------------------------------------------------------
// ibv_devinfo: the names of values

/// A GUID as four groups of 16 bits, such as `0200:00ff:fe00:0000`.
pub fn guid_str(guid: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        guid >> 48,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// The C value of a transport (`enum ibv_transport_type`).
pub fn transport_value(transport: Transport) -> i32 {
    use ffi::ibv_transport_type as T;
    match transport {
        Transport::InfiniBand => T::IBV_TRANSPORT_IB.0,
        Transport::Iwarp => T::IBV_TRANSPORT_IWARP.0,
        Transport::Usnic => T::IBV_TRANSPORT_USNIC.0,
        Transport::UsnicUdp => T::IBV_TRANSPORT_USNIC_UDP.0,
        Transport::Unspecified => T::IBV_TRANSPORT_UNSPECIFIED.0,
        Transport::Unknown(raw) => raw,
        _ => T::IBV_TRANSPORT_UNKNOWN.0,
    }
}

/// The transport as `ibv_devinfo` names it.
pub fn transport_str(transport: Transport) -> &'static str {
    match transport {
        Transport::InfiniBand => "InfiniBand",
        Transport::Iwarp => "iWARP",
        Transport::Usnic => "usNIC",
        Transport::UsnicUdp => "usNIC UDP",
        Transport::Unspecified => "unspecified",
        _ => "invalid transport",
    }
}

/// A port state as `ibv_devinfo` names it, such as `PORT_ACTIVE`.
pub fn port_state_str(state: PortState) -> &'static str {
    match state {
        PortState::Down => "PORT_DOWN",
        PortState::Init => "PORT_INIT",
        PortState::Armed => "PORT_ARMED",
        PortState::Active => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

/// A physical port state as `ibv_devinfo` names it, such as `LINK_UP`.
pub fn phys_state_str(state: PhysState) -> &'static str {
    match state {
        PhysState::Sleep => "SLEEP",
        PhysState::Polling => "POLLING",
        PhysState::Disabled => "DISABLED",
        PhysState::PortConfigurationTraining => "PORT_CONFIGURATION TRAINNING",
        PhysState::LinkUp => "LINK_UP",
        PhysState::LinkErrorRecovery => "LINK_ERROR_RECOVERY",
        PhysState::PhyTest => "PHY TEST",
        _ => "invalid physical state",
    }
}

/// An atomic capability as `ibv_devinfo` names it, such as `ATOMIC_HCA`.
pub fn atomic_cap_str(cap: AtomicCap) -> &'static str {
    match cap {
        AtomicCap::None => "ATOMIC_NONE",
        AtomicCap::Hca => "ATOMIC_HCA",
        AtomicCap::Glob => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

/// An MTU as `ibv_devinfo` names it, such as `4096`.
pub fn mtu_str(mtu: Mtu) -> &'static str {
    match mtu {
        Mtu::Mtu256 => "256",
        Mtu::Mtu512 => "512",
        Mtu::Mtu1024 => "1024",
        Mtu::Mtu2048 => "2048",
        Mtu::Mtu4096 => "4096",
        _ => "invalid MTU",
    }
}

/// A link width as `ibv_devinfo` names it (it adds the `X`), such as `4`.
pub fn width_str(width: Width) -> &'static str {
    match width {
        Width::X1 => "1",
        Width::X4 => "4",
        Width::X8 => "8",
        Width::X12 => "12",
        Width::X2 => "2",
        _ => "invalid width",
    }
}

/// A lane speed as `ibv_devinfo` names it, such as `25.0 Gbps`.
pub fn speed_str(speed: Speed) -> &'static str {
    match speed {
        Speed::Sdr => "2.5 Gbps",
        Speed::Ddr => "5.0 Gbps",
        Speed::Qdr | Speed::Fdr10 => "10.0 Gbps",
        Speed::Fdr => "14.0 Gbps",
        Speed::Edr => "25.0 Gbps",
        Speed::Hdr => "50.0 Gbps",
        Speed::Ndr => "100.0 Gbps",
        _ => "invalid speed",
    }
}

/// The number of virtual lanes an encoded `max_vl_num` stands for, as `ibv_devinfo` prints it.
pub fn vl_str(max_vl_num: u8) -> &'static str {
    match max_vl_num {
        1 => "1",
        2 => "2",
        3 => "4",
        4 => "8",
        5 => "15",
        _ => "invalid value",
    }
}

/// A link layer as `ibv_devinfo` names it.
pub fn link_layer_str(link_layer: LinkLayer) -> &'static str {
    match link_layer {
        LinkLayer::Unspecified => "Unspecified",
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Ethernet => "Ethernet",
        _ => "Unknown",
    }
}

/// IPv6 text exactly as glibc's `inet_ntop(AF_INET6)` writes it: the first longest run of
/// two or more zero groups is `::`, and addresses whose first 96 bits are zero (but for
/// `::` and `::1`-style ones) or IPv4-mapped end in dotted IPv4.
pub fn inet_ntop6(bytes: [u8; 16]) -> String {
    let words: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|w| u16::from_be_bytes([w[0], w[1]]))
        .collect();
    // The first longest run of zero words, if at least two long: (start, length).
    let mut best: Option<(usize, usize)> = None;
    let mut run: Option<(usize, usize)> = None;
    for (i, &w) in words.iter().enumerate() {
        if w == 0 {
            run = Some(run.map_or((i, 1), |(start, len)| (start, len + 1)));
        } else {
            run = None;
        }
        if let Some((start, len)) = run {
            if best.map_or(true, |(_, best_len)| len > best_len) {
                best = Some((start, len));
            }
        }
    }
    let best = best.filter(|&(_, len)| len >= 2);
    let mut text = String::new();
    let mut i = 0;
    while i < 8 {
        if let Some((start, len)) = best {
            if i == start {
                text.push(':');
                i += len;
                continue;
            }
        }
        if i != 0 {
            text.push(':');
        }
        if i == 6 {
            if let Some((0, len)) = best {
                if len == 6 || (len == 5 && words[5] == 0xffff) {
                    let [a, b, c, d] = [bytes[12], bytes[13], bytes[14], bytes[15]];
                    let _ = write!(text, "{a}.{b}.{c}.{d}");
                    return text;
                }
            }
        }
        let _ = write!(text, "{:x}", words[i]);
        i += 1;
    }
    if matches!(best, Some((start, len)) if start + len == 8) {
        text.push(':');
    }
    text
}

/// The line `ibv_devinfo -v` prints for a GID table entry, or `None` if it skips it (the
/// interface ID is 0).
pub fn gid_line(entry: &GidEntry, link_layer: LinkLayer) -> Option<String> {
    if entry.gid.interface_id() == 0 {
        return None;
    }
    let bytes = entry.gid.to_bytes();
    // ibv_devinfo reads the type as sysfs shows it: IB and RoCE v1 alike, else RoCE v2.
    let v1 = matches!(entry.gid_type, GidType::Ib | GidType::RoceV1);
    let suffix = match (link_layer, v1) {
        (LinkLayer::Ethernet, true) => ", RoCE v1",
        (LinkLayer::Ethernet, false) => ", RoCE v2",
        _ => "",
    };
    let text = if v1 {
        let mut hex = String::new();
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let sep = if i == 0 { "" } else { ":" };
            let _ = write!(hex, "{sep}{:02x}{:02x}", pair[0], pair[1]);
        }
        hex
    } else {
        inet_ntop6(bytes)
    };
    Some(format!("\t\t\tGID[{:3}]:\t\t{text}{suffix}\n", entry.index))
}

// ---------------------------------------------------------------------------------------
// ibv_devinfo: device and port blocks

/// The lines of a set of capability bits, known ones by name in `names` order, then the
/// others as `Unknown flags`.
fn write_flags(out: &mut impl Write, bits: u64, names: &[(u64, &str)]) -> fmt::Result {
    let mut known = 0;
    for &(bit, name) in names {
        known |= bit;
        if bits & bit != 0 {
            writeln!(out, "\t\t\t\t\t{name}")?;
        }
    }
    if bits & !known != 0 {
        writeln!(out, "\t\t\t\t\tUnknown flags: 0x{:X}", bits & !known)?;
    }
    Ok(())
}

const DEVICE_CAP_NAMES: &[(DeviceCapFlags, &str)] = &[
    (DeviceCapFlags::RESIZE_MAX_WR, "RESIZE_MAX_WR"),
    (DeviceCapFlags::BAD_PKEY_CNTR, "BAD_PKEY_CNTR"),
    (DeviceCapFlags::BAD_QKEY_CNTR, "BAD_QKEY_CNTR"),
    (DeviceCapFlags::RAW_MULTI, "RAW_MULTI"),
    (DeviceCapFlags::AUTO_PATH_MIG, "AUTO_PATH_MIG"),
    (DeviceCapFlags::CHANGE_PHY_PORT, "CHANGE_PHY_PORT"),
    (DeviceCapFlags::UD_AV_PORT_ENFORCE, "UD_AV_PORT_ENFORCE"),
    (DeviceCapFlags::CURR_QP_STATE_MOD, "CURR_QP_STATE_MOD"),
    (DeviceCapFlags::SHUTDOWN_PORT, "SHUTDOWN_PORT"),
    (DeviceCapFlags::INIT_TYPE, "INIT_TYPE"),
    (DeviceCapFlags::PORT_ACTIVE_EVENT, "PORT_ACTIVE_EVENT"),
    (DeviceCapFlags::SYS_IMAGE_GUID, "SYS_IMAGE_GUID"),
    (DeviceCapFlags::RC_RNR_NAK_GEN, "RC_RNR_NAK_GEN"),
    (DeviceCapFlags::SRQ_RESIZE, "SRQ_RESIZE"),
    (DeviceCapFlags::N_NOTIFY_CQ, "N_NOTIFY_CQ"),
    (DeviceCapFlags::MEM_WINDOW, "MEM_WINDOW"),
    (DeviceCapFlags::UD_IP_CSUM, "UD_IP_CSUM"),
    (DeviceCapFlags::XRC, "XRC"),
    (DeviceCapFlags::MEM_MGT_EXTENSIONS, "MEM_MGT_EXTENSIONS"),
    (DeviceCapFlags::MEM_WINDOW_TYPE_2A, "MEM_WINDOW_TYPE_2A"),
    (DeviceCapFlags::MEM_WINDOW_TYPE_2B, "MEM_WINDOW_TYPE_2B"),
    (DeviceCapFlags::RC_IP_CSUM, "RC_IP_CSUM"),
    (DeviceCapFlags::RAW_IP_CSUM, "RAW_IP_CSUM"),
    (
        DeviceCapFlags::MANAGED_FLOW_STEERING,
        "MANAGED_FLOW_STEERING",
    ),
];

const DEVICE_CAP_EX_NAMES: &[(DeviceCapFlags, &str)] = &[
    (DeviceCapFlags::RAW_SCATTER_FCS, "RAW_SCATTER_FCS"),
    (
        DeviceCapFlags::PCI_WRITE_END_PADDING,
        "PCI_WRITE_END_PADDING",
    ),
];

const ODP_TRANSPORT_NAMES: &[(OdpTransportCaps, &str)] = &[
    (OdpTransportCaps::SEND, "SUPPORT_SEND"),
    (OdpTransportCaps::RECV, "SUPPORT_RECV"),
    (OdpTransportCaps::WRITE, "SUPPORT_WRITE"),
    (OdpTransportCaps::READ, "SUPPORT_READ"),
    (OdpTransportCaps::ATOMIC, "SUPPORT_ATOMIC"),
    (OdpTransportCaps::SRQ_RECV, "SUPPORT_SRQ"),
];

fn names64<F: Copy>(
    names: &[(F, &'static str)],
    bits: impl Fn(F) -> u64,
) -> Vec<(u64, &'static str)> {
    names.iter().map(|&(f, name)| (bits(f), name)).collect()
}

fn write_odp_transport(out: &mut impl Write, caps: OdpTransportCaps) -> fmt::Result {
    if caps.is_empty() {
        return writeln!(out, "\t\t\t\t\tNO SUPPORT");
    }
    let names = names64(ODP_TRANSPORT_NAMES, |f| f.bits().into());
    write_flags(out, caps.bits().into(), &names)
}

/// The QP types of a capability, as `SUPPORT_RAW_PACKET` / `SUPPORT_UD` lines.
fn write_qp_types(out: &mut impl Write, qpts: u32) -> fmt::Result {
    writeln!(out, "\t\tsupported_qp:")?;
    let raw_packet = 1u64 << ffi::ibv_qp_type::IBV_QPT_RAW_PACKET.0;
    let ud = 1u64 << ffi::ibv_qp_type::IBV_QPT_UD.0;
    let names = [(raw_packet, "SUPPORT_RAW_PACKET"), (ud, "SUPPORT_UD")];
    write_flags(out, qpts.into(), &names)
}

/// The device as `ibv_devinfo` prints it before its ports.
pub struct Hca<'a> {
    /// The device name.
    pub name: &'a str,
    /// Its transport.
    pub transport: Transport,
    /// Its attributes.
    pub attr: &'a DeviceAttr,
    /// The `board_id` of sysfs, if the device has one.
    pub board_id: Option<&'a str>,
    /// `num_comp_vectors` of the context.
    pub num_comp_vectors: u32,
}

/// The device block of `ibv_devinfo` (`-v` for `verbose`), up to its ports.
pub fn write_hca(out: &mut impl Write, hca: &Hca<'_>, verbose: bool) -> fmt::Result {
    let a = hca.attr;
    writeln!(out, "hca_id:\t{}", hca.name)?;
    writeln!(
        out,
        "\ttransport:\t\t\t{} ({})",
        transport_str(hca.transport),
        transport_value(hca.transport)
    )?;
    if !a.fw_ver.is_empty() {
        writeln!(out, "\tfw_ver:\t\t\t\t{}", a.fw_ver)?;
    }
    writeln!(out, "\tnode_guid:\t\t\t{}", guid_str(a.node_guid))?;
    writeln!(out, "\tsys_image_guid:\t\t\t{}", guid_str(a.sys_image_guid))?;
    writeln!(out, "\tvendor_id:\t\t\t0x{:04x}", a.vendor_id)?;
    // %d of an unsigned field.
    writeln!(out, "\tvendor_part_id:\t\t\t{}", a.vendor_part_id as i32)?;
    writeln!(out, "\thw_ver:\t\t\t\t0x{:X}", a.hw_ver)?;
    if let Some(board_id) = hca.board_id {
        writeln!(out, "\tboard_id:\t\t\t{board_id}")?;
    }
    writeln!(out, "\tphys_port_cnt:\t\t\t{}", a.phys_port_cnt)?;
    if verbose {
        write_hca_verbose(out, hca)?;
    }
    Ok(())
}

fn write_hca_verbose(out: &mut impl Write, hca: &Hca<'_>) -> fmt::Result {
    let a = hca.attr;
    let raw = a.as_raw();
    writeln!(out, "\tmax_mr_size:\t\t\t0x{:x}", a.max_mr_size)?;
    writeln!(out, "\tpage_size_cap:\t\t\t0x{:x}", a.page_size_cap)?;
    writeln!(out, "\tmax_qp:\t\t\t\t{}", a.max_qp)?;
    writeln!(out, "\tmax_qp_wr:\t\t\t{}", a.max_qp_wr)?;
    let flags = raw.orig_attr.device_cap_flags;
    writeln!(out, "\tdevice_cap_flags:\t\t0x{flags:08x}")?;
    write_flags(out, flags.into(), &names64(DEVICE_CAP_NAMES, |f| f.bits()))?;
    writeln!(out, "\tmax_sge:\t\t\t{}", a.max_sge)?;
    writeln!(out, "\tmax_sge_rd:\t\t\t{}", a.max_sge_rd)?;
    writeln!(out, "\tmax_cq:\t\t\t\t{}", a.max_cq)?;
    writeln!(out, "\tmax_cqe:\t\t\t{}", a.max_cqe)?;
    writeln!(out, "\tmax_mr:\t\t\t\t{}", a.max_mr)?;
    writeln!(out, "\tmax_pd:\t\t\t\t{}", a.max_pd)?;
    writeln!(out, "\tmax_qp_rd_atom:\t\t\t{}", a.max_qp_rd_atom)?;
    writeln!(out, "\tmax_ee_rd_atom:\t\t\t{}", a.max_ee_rd_atom)?;
    writeln!(out, "\tmax_res_rd_atom:\t\t{}", a.max_res_rd_atom)?;
    writeln!(out, "\tmax_qp_init_rd_atom:\t\t{}", a.max_qp_init_rd_atom)?;
    writeln!(out, "\tmax_ee_init_rd_atom:\t\t{}", a.max_ee_init_rd_atom)?;
    writeln!(
        out,
        "\tatomic_cap:\t\t\t{} ({})",
        atomic_cap_str(a.atomic_cap),
        a.atomic_cap.raw() as i32
    )?;
    writeln!(out, "\tmax_ee:\t\t\t\t{}", a.max_ee)?;
    writeln!(out, "\tmax_rdd:\t\t\t{}", a.max_rdd)?;
    writeln!(out, "\tmax_mw:\t\t\t\t{}", a.max_mw)?;
    writeln!(out, "\tmax_raw_ipv6_qp:\t\t{}", a.max_raw_ipv6_qp)?;
    writeln!(out, "\tmax_raw_ethy_qp:\t\t{}", a.max_raw_ethy_qp)?;
    writeln!(out, "\tmax_mcast_grp:\t\t\t{}", a.max_mcast_grp)?;
    writeln!(out, "\tmax_mcast_qp_attach:\t\t{}", a.max_mcast_qp_attach)?;
    writeln!(
        out,
        "\tmax_total_mcast_qp_attach:\t{}",
        a.max_total_mcast_qp_attach
    )?;
    writeln!(out, "\tmax_ah:\t\t\t\t{}", a.max_ah)?;
    writeln!(out, "\tmax_fmr:\t\t\t{}", a.max_fmr)?;
    if a.max_fmr != 0 {
        writeln!(out, "\tmax_map_per_fmr:\t\t{}", a.max_map_per_fmr)?;
    }
    writeln!(out, "\tmax_srq:\t\t\t{}", a.max_srq)?;
    if a.max_srq != 0 {
        writeln!(out, "\tmax_srq_wr:\t\t\t{}", a.max_srq_wr)?;
        writeln!(out, "\tmax_srq_sge:\t\t\t{}", a.max_srq_sge)?;
    }
    writeln!(out, "\tmax_pkeys:\t\t\t{}", a.max_pkeys)?;
    writeln!(out, "\tlocal_ca_ack_delay:\t\t{}", a.local_ca_ack_delay)?;

    let odp = &a.odp_caps;
    writeln!(out, "\tgeneral_odp_caps:")?;
    let general = [
        (OdpGeneralCaps::SUPPORT.bits(), "ODP_SUPPORT"),
        (
            OdpGeneralCaps::SUPPORT_IMPLICIT.bits(),
            "ODP_SUPPORT_IMPLICIT",
        ),
    ];
    write_flags(out, odp.general.bits(), &general)?;
    for (name, caps) in [
        ("rc", odp.rc),
        ("uc", odp.uc),
        ("ud", odp.ud),
        ("xrc", odp.xrc),
    ] {
        writeln!(out, "\t{name}_odp_caps:")?;
        write_odp_transport(out, caps)?;
    }
    if a.completion_timestamp_mask != 0 {
        writeln!(
            out,
            "\tcompletion timestamp_mask:\t\t\t0x{:016x}",
            a.completion_timestamp_mask
        )?;
    } else {
        writeln!(out, "\tcompletion_timestamp_mask not supported")?;
    }
    if a.hca_core_clock != 0 {
        writeln!(out, "\thca_core_clock:\t\t\t{}kHZ", a.hca_core_clock)?;
    } else {
        writeln!(out, "\tcore clock not supported")?;
    }
    if !a.raw_packet_caps.is_empty() {
        writeln!(out, "\traw packet caps:")?;
        let names = [
            (RawPacketCaps::CVLAN_STRIPPING, "C-VLAN stripping offload"),
            (RawPacketCaps::SCATTER_FCS, "Scatter FCS offload"),
            (RawPacketCaps::IP_CSUM, "IP csum offload"),
            (RawPacketCaps::DELAY_DROP, "Delay drop"),
        ];
        for (cap, name) in names {
            if a.raw_packet_caps.contains(cap) {
                writeln!(out, "\t\t\t\t\t{name}")?;
            }
        }
    }
    writeln!(
        out,
        "\tdevice_cap_flags_ex:\t\t0x{:X}",
        raw.device_cap_flags_ex
    )?;
    write_flags(
        out,
        raw.device_cap_flags_ex & !u64::from(u32::MAX),
        &names64(DEVICE_CAP_EX_NAMES, |f| f.bits()),
    )?;

    writeln!(out, "\ttso_caps:")?;
    // %d of an unsigned field.
    writeln!(out, "\t\tmax_tso:\t\t\t{}", a.tso_caps.max_tso as i32)?;
    if a.tso_caps.max_tso != 0 {
        write_qp_types(out, a.tso_caps.supported_qpts)?;
    }
    let rss = &a.rss_caps;
    writeln!(out, "\trss_caps:")?;
    writeln!(
        out,
        "\t\tmax_rwq_indirection_tables:\t\t\t{}",
        rss.max_rwq_indirection_tables
    )?;
    writeln!(
        out,
        "\t\tmax_rwq_indirection_table_size:\t\t\t{}",
        rss.max_rwq_indirection_table_size
    )?;
    writeln!(
        out,
        "\t\trx_hash_function:\t\t\t\t0x{:x}",
        rss.rx_hash_function
    )?;
    writeln!(
        out,
        "\t\trx_hash_fields_mask:\t\t\t\t0x{:X}",
        rss.rx_hash_fields_mask
    )?;
    if rss.supported_qpts != 0 {
        write_qp_types(out, rss.supported_qpts)?;
    }
    writeln!(out, "\tmax_wq_type_rq:\t\t\t{}", a.max_wq_type_rq)?;
    let pacing = &a.packet_pacing_caps;
    writeln!(out, "\tpacket_pacing_caps:")?;
    writeln!(
        out,
        "\t\tqp_rate_limit_min:\t{}kbps",
        pacing.qp_rate_limit_min
    )?;
    writeln!(
        out,
        "\t\tqp_rate_limit_max:\t{}kbps",
        pacing.qp_rate_limit_max
    )?;
    if pacing.qp_rate_limit_max != 0 {
        write_qp_types(out, pacing.supported_qpts)?;
    }
    let tm = &a.tm_caps;
    if tm.max_num_tags != 0 {
        writeln!(out, "\tmax_rndv_hdr_size:\t\t{}", tm.max_rndv_hdr_size)?;
        writeln!(out, "\tmax_num_tags:\t\t\t{}", tm.max_num_tags)?;
        writeln!(out, "\tmax_ops:\t\t\t{}", tm.max_ops)?;
        writeln!(out, "\tmax_sge:\t\t\t{}", tm.max_sge)?;
        writeln!(out, "\tflags:")?;
        if tm.flags & ffi::ibv_tm_cap_flags::IBV_TM_CAP_RC.0 != 0 {
            writeln!(out, "\t\t\t\t\tIBV_TM_CAP_RC")?;
        }
    } else {
        writeln!(out, "\ttag matching not supported")?;
    }
    let cq_mod = &a.cq_mod_caps;
    if cq_mod.max_cq_count != 0 && cq_mod.max_cq_period != 0 {
        writeln!(out, "\n\tcq moderation caps:")?;
        writeln!(out, "\t\tmax_cq_count:\t{}", cq_mod.max_cq_count)?;
        writeln!(out, "\t\tmax_cq_period:\t{} us\n", cq_mod.max_cq_period)?;
    }
    if a.max_dm_size != 0 {
        writeln!(
            out,
            "\tmaximum available device memory:\t{}Bytes\n",
            a.max_dm_size
        )?;
    }
    writeln!(out, "\tnum_comp_vectors:\t\t{}", hca.num_comp_vectors)
}

/// The block of one port in `ibv_devinfo` (`-v` for `verbose`, which adds the GIDs in
/// `gids`), with the empty line after it.
pub fn write_port(
    out: &mut impl Write,
    port: u8,
    attr: &PortAttr,
    gids: &[GidEntry],
    transport: Transport,
    verbose: bool,
) -> fmt::Result {
    writeln!(out, "\t\tport:\t{port}")?;
    let state = attr.state;
    writeln!(
        out,
        "\t\t\tstate:\t\t\t{} ({})",
        port_state_str(state),
        state.raw() as i32
    )?;
    let (max, active) = (attr.max_mtu, attr.active_mtu);
    writeln!(
        out,
        "\t\t\tmax_mtu:\t\t{} ({})",
        mtu_str(max),
        max.raw() as i32
    )?;
    writeln!(
        out,
        "\t\t\tactive_mtu:\t\t{} ({})",
        mtu_str(active),
        active.raw() as i32
    )?;
    writeln!(out, "\t\t\tsm_lid:\t\t\t{}", attr.sm_lid)?;
    writeln!(out, "\t\t\tport_lid:\t\t{}", attr.lid)?;
    writeln!(out, "\t\t\tport_lmc:\t\t0x{:02x}", attr.lmc)?;
    writeln!(
        out,
        "\t\t\tlink_layer:\t\t{}",
        link_layer_str(attr.link_layer)
    )?;
    if verbose {
        writeln!(out, "\t\t\tmax_msg_sz:\t\t0x{:x}", attr.max_msg_sz)?;
        writeln!(
            out,
            "\t\t\tport_cap_flags:\t\t0x{:08x}",
            attr.port_cap_flags.bits()
        )?;
        writeln!(
            out,
            "\t\t\tport_cap_flags2:\t0x{:04x}",
            attr.port_cap_flags2.bits()
        )?;
        let vl = attr.max_vl_num;
        writeln!(out, "\t\t\tmax_vl_num:\t\t{} ({vl})", vl_str(vl))?;
        writeln!(out, "\t\t\tbad_pkey_cntr:\t\t0x{:x}", attr.bad_pkey_cntr)?;
        writeln!(out, "\t\t\tqkey_viol_cntr:\t\t0x{:x}", attr.qkey_viol_cntr)?;
        writeln!(out, "\t\t\tsm_sl:\t\t\t{}", attr.sm_sl)?;
        writeln!(out, "\t\t\tpkey_tbl_len:\t\t{}", attr.pkey_tbl_len)?;
        writeln!(out, "\t\t\tgid_tbl_len:\t\t{}", attr.gid_tbl_len)?;
        writeln!(out, "\t\t\tsubnet_timeout:\t\t{}", attr.subnet_timeout)?;
        writeln!(out, "\t\t\tinit_type_reply:\t{}", attr.init_type_reply)?;
        let width = attr.active_width;
        writeln!(
            out,
            "\t\t\tactive_width:\t\t{}X ({})",
            width_str(width),
            width.raw()
        )?;
        let speed = attr.active_speed;
        writeln!(
            out,
            "\t\t\tactive_speed:\t\t{} ({})",
            speed_str(speed),
            speed.raw()
        )?;
        if transport == Transport::InfiniBand {
            let phys = attr.phys_state;
            writeln!(
                out,
                "\t\t\tphys_state:\t\t{} ({})",
                phys_state_str(phys),
                phys.raw()
            )?;
        }
        for entry in gids {
            if let Some(line) = gid_line(entry, attr.link_layer) {
                out.write_str(&line)?;
            }
        }
    }
    writeln!(out)
}

// ---------------------------------------------------------------------------------------
// ibv_devinfo: arguments and main

/// The options of `ibv_devinfo` (getopt `d:i:lv`, long `ib-dev`, `ib-port`, `list`, `verbose`).
#[derive(Parser, Debug)]
#[command(
    name = "ibv_devinfo",
    disable_help_flag = true,
    disable_version_flag = true,
    infer_long_args = true
)]
struct DevinfoArgs {
    /// Use IB device DEV (default: every device).
    #[arg(short = 'd', long = "ib-dev", action = ArgAction::Append, allow_hyphen_values = true)]
    ib_dev: Vec<String>,
    /// Use port PORT of the device (default: all ports).
    #[arg(short = 'i', long = "ib-port", action = ArgAction::Append, allow_hyphen_values = true)]
    ib_port: Vec<String>,
    /// Print only the device names.
    #[arg(short = 'l', long = "list", action = ArgAction::Append, num_args = 0, default_missing_value = "")]
    list: Vec<String>,
    /// Print all the attributes of the devices.
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    verbose: u8,
    /// Operands, which ibv_devinfo ignores.
    #[arg(hide = true)]
    operands: Vec<String>,
}

/// What `ibv_devinfo`'s arguments ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DevinfoCommand {
    /// `-l`: list the device names.
    List,
    /// Print the usage to stdout and exit with `status`, after `message` on stderr.
    Usage {
        /// The exit status.
        status: i32,
        /// The getopt message for a bad option.
        message: Option<String>,
    },
    /// Print devices.
    Show {
        /// `-d`: only this device.
        device: Option<String>,
        /// `-i`: only this port (0 for all), truncated to 8 bits as the C tool does.
        port: u8,
        /// `-v`.
        verbose: bool,
    },
}

/// The options of `ibv_devinfo` that take a value.
const DEVINFO_VALUES: &[(char, &str)] = &[('d', "ib-dev"), ('i', "ib-port")];

/// Parses `ibv_devinfo`'s arguments (with the program name first) like its getopt loop:
/// `-l` acts where it stands, so a `-i` with a value that is not positive before it gives
/// the usage and status 1, after it is never read.
pub fn parse_devinfo_args(args: &[OsString]) -> DevinfoCommand {
    let prog = cli::prog_name(args, "ibv_devinfo");
    let matches = match DevinfoArgs::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(err)
            if cli::acting_before_error(args, &err, &[('l', "list")], DEVINFO_VALUES).is_some() =>
        {
            return DevinfoCommand::List
        }
        Err(err) => {
            return DevinfoCommand::Usage {
                status: -1,
                message: Some(cli::getopt_message(
                    &prog,
                    &DevinfoArgs::command(),
                    args,
                    &err,
                )),
            }
        }
    };
    let parsed = match DevinfoArgs::from_arg_matches(&matches) {
        Ok(parsed) => parsed,
        Err(err) => {
            return DevinfoCommand::Usage {
                status: -1,
                message: Some(cli::getopt_message(
                    &prog,
                    &DevinfoArgs::command(),
                    args,
                    &err,
                )),
            }
        }
    };
    let first_list = matches.indices_of("list").and_then(|mut i| i.next());
    let ports: Vec<(usize, i32)> = matches
        .indices_of("ib_port")
        .map(|i| i.collect::<Vec<usize>>())
        .unwrap_or_default()
        .into_iter()
        // strtol into an int, as C assigns it.
        .zip(parsed.ib_port.iter().map(|v| cli::strtol(v) as i32))
        .collect();
    let first_bad_port = ports.iter().find(|(_, p)| *p <= 0).map(|(i, _)| *i);
    match (first_list, first_bad_port) {
        (Some(list), Some(bad)) if list < bad => return DevinfoCommand::List,
        (Some(_), None) => return DevinfoCommand::List,
        (_, Some(_)) => {
            return DevinfoCommand::Usage {
                status: 1,
                message: None,
            }
        }
        (None, None) => {}
    }
    DevinfoCommand::Show {
        device: parsed.ib_dev.last().cloned(),
        // print_hca_cap takes the port as uint8_t.
        port: ports.last().map_or(0, |(_, p)| *p as u8),
        verbose: parsed.verbose > 0,
    }
}

/// The usage `ibv_devinfo` prints to stdout.
pub fn devinfo_usage(prog: &str) -> String {
    format!(
        "Usage: {prog}             print the ca attributes\n\
         \n\
         Options:\n\
         \x20 -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n\
         \x20 -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n\
         \x20 -l, --list             print only the IB devices names\n\
         \x20 -v, --verbose          print all the attributes of the IB device(s)\n"
    )
}

/// Prints one device as `print_hca_cap` does; returns its status (0, or 1 to 4 as the C
/// tool, or the errno of a failed port query).
fn print_hca(out: &mut Output, dev: &Device<'_>, port: u8, verbose: bool) -> i32 {
    let Ok(ctx) = dev.open() else {
        out.error("Failed to open device");
        return 1;
    };
    let Ok(attr) = ctx.query_device() else {
        out.error("Failed to query device props");
        return 2;
    };
    if port != 0 && port > attr.phys_port_cnt {
        out.error("Invalid port requested for device");
        return 4;
    }
    let board_id = sysfs::read_ibv(dev.name(), "board_id");
    let hca = Hca {
        name: dev.name(),
        transport: dev.transport(),
        attr: &attr,
        board_id: board_id.as_deref(),
        num_comp_vectors: ctx.num_comp_vectors(),
    };
    let _ = write_hca(out, &hca, verbose);
    for p in 1..=attr.phys_port_cnt {
        if port != 0 && p != port {
            continue;
        }
        if let Err(status) = print_port(out, &ctx, p, hca.transport, verbose) {
            return status;
        }
    }
    0
}

fn print_port(
    out: &mut Output,
    ctx: &Context,
    port: u8,
    transport: Transport,
    verbose: bool,
) -> Result<(), i32> {
    let attr = ctx.query_port(port).map_err(|err| {
        out.error(&format!("Failed to query port {port} props"));
        err.raw_os_error().unwrap_or(-1)
    })?;
    let gids = if verbose {
        ctx.gid_table(port).map_err(|err| {
            let text = cli::verbs_error_text(&err);
            out.error(&format!("Failed to query gid to port {port}: {text}"));
            -1
        })?
    } else {
        Vec::new()
    };
    let _ = write_port(out, port, &attr, &gids, transport, verbose);
    Ok(())
}

/// `ibv_devinfo` with these arguments (program name first); returns the exit status.
pub fn devinfo_main(args: &[OsString]) -> i32 {
    let prog = cli::prog_name(args, "ibv_devinfo");
    let mut out = Output::new();
    let (device, port, verbose) = match parse_devinfo_args(args) {
        DevinfoCommand::Usage { status, message } => {
            if let Some(message) = message {
                out.error(&message);
            }
            let _ = out.write_str(&devinfo_usage(&prog));
            out.flush();
            return status;
        }
        DevinfoCommand::List => {
            let list = match DeviceList::new() {
                Ok(list) => list,
                Err(err) => {
                    let text = cli::verbs_error_text(&err);
                    out.error(&format!("Failed to get IB devices list: {text}"));
                    return -1;
                }
            };
            let n = list.len();
            let _ = writeln!(out, "{n} HCA{} found:", if n == 1 { "" } else { "s" });
            for dev in list.iter() {
                let _ = writeln!(out, "\t{}", dev.name());
            }
            let _ = writeln!(out);
            out.flush();
            return 0;
        }
        DevinfoCommand::Show {
            device,
            port,
            verbose,
        } => (device, port, verbose),
    };
    let list = match DeviceList::new() {
        Ok(list) => list,
        Err(err) => {
            let text = cli::verbs_error_text(&err);
            out.error(&format!("Failed to get IB devices list: {text}"));
            return -1;
        }
    };
    let mut status = 0;
    match device {
        Some(name) => match list.iter().find(|d| d.name() == name) {
            Some(dev) => status |= print_hca(&mut out, &dev, port, verbose),
            None => {
                out.error(&format!("IB device '{name}' wasn't found"));
                status = -1;
            }
        },
        None if list.is_empty() => {
            out.error("No IB devices found");
            status = -1;
        }
        None => {
            for dev in list.iter() {
                status |= print_hca(&mut out, &dev, port, verbose);
            }
        }
    }
    out.flush();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rxe0 reports (rdma-core 44, Linux 6.1).
    fn rxe_attr() -> DeviceAttr {
        let mut raw = ffi::ibv_device_attr_ex::default();
        let o = &mut raw.orig_attr;
        for (dst, src) in o.fw_ver.iter_mut().zip(b"0.0.0") {
            *dst = *src as _;
        }
        o.node_guid = 0x0200_00ff_fe00_0000u64.to_be();
        o.sys_image_guid = 0x0200_00ff_fe00_0000u64.to_be();
        o.max_mr_size = u64::MAX;
        o.page_size_cap = 0xffff_f000;
        o.vendor_id = 0xffffff;
        o.max_qp = 1048560;
        o.max_qp_wr = 1048576;
        o.device_cap_flags = 0x0122_3c76;
        o.max_sge = 32;
        o.max_sge_rd = 32;
        o.max_cq = 1048576;
        o.max_cqe = 32767;
        o.max_mr = 524287;
        o.max_pd = 1048576;
        o.max_qp_rd_atom = 128;
        o.max_res_rd_atom = 258048;
        o.max_qp_init_rd_atom = 128;
        o.atomic_cap = ffi::ibv_atomic_cap::IBV_ATOMIC_HCA;
        o.max_mw = 524287;
        o.max_mcast_grp = 8192;
        o.max_mcast_qp_attach = 56;
        o.max_total_mcast_qp_attach = 458752;
        o.max_ah = 32767;
        o.max_srq = 917503;
        o.max_srq_wr = 1048576;
        o.max_srq_sge = 27;
        o.max_pkeys = 64;
        o.local_ca_ack_delay = 15;
        o.phys_port_cnt = 1;
        raw.device_cap_flags_ex = 0x0122_3c76;
        DeviceAttr::from_raw(raw)
    }

    fn rxe_port() -> PortAttr {
        PortAttr::from_raw(ffi::ibv_port_attr {
            state: ffi::ibv_port_state::IBV_PORT_ACTIVE,
            max_mtu: ffi::ibv_mtu::IBV_MTU_4096,
            active_mtu: ffi::ibv_mtu::IBV_MTU_4096,
            gid_tbl_len: 1024,
            port_cap_flags: 0x0001_0000,
            max_msg_sz: 0x80_0000,
            pkey_tbl_len: 1,
            max_vl_num: 1,
            active_width: 1,
            active_speed: 1,
            phys_state: 5,
            link_layer: ffi::IBV_LINK_LAYER_ETHERNET as u8,
            ..Default::default()
        })
    }

    fn entry(index: u32, gid: &str, gid_type: ffi::ibv_gid_type) -> GidEntry {
        let addr: std::net::Ipv6Addr = gid.parse().unwrap();
        GidEntry::from_raw(&ffi::ibv_gid_entry {
            gid: ffi::ibv_gid { raw: addr.octets() },
            gid_index: index,
            port_num: 1,
            gid_type: gid_type.0,
            ndev_ifindex: 1,
        })
    }

    fn rxe_gids() -> Vec<GidEntry> {
        let v2 = ffi::ibv_gid_type::IBV_GID_TYPE_ROCE_V2;
        vec![
            entry(0, "fe80::200:ff:fe00:0", v2),
            entry(1, "::ffff:127.0.0.1", v2),
            entry(2, "::1", v2),
        ]
    }

    fn rxe_output(verbose: bool) -> String {
        let attr = rxe_attr();
        let hca = Hca {
            name: "rxe0",
            transport: Transport::InfiniBand,
            attr: &attr,
            board_id: None,
            num_comp_vectors: 2,
        };
        let mut out = String::new();
        write_hca(&mut out, &hca, verbose).unwrap();
        let gids = rxe_gids();
        write_port(
            &mut out,
            1,
            &rxe_port(),
            &gids,
            Transport::InfiniBand,
            verbose,
        )
        .unwrap();
        out
    }

    #[test]
    fn devinfo_of_rxe() {
        assert_eq!(rxe_output(false), DEVINFO);
    }

    #[test]
    fn devinfo_verbose_of_rxe() {
        assert_eq!(rxe_output(true), DEVINFO_V);
    }

    #[test]
    fn devices_of_rxe() {
        let mut out = String::new();
        write_devices(&mut out, &[("rxe0", 0x0200_00ff_fe00_0000)]).unwrap();
        assert_eq!(out, DEVICES);
    }

    #[test]
    fn usage() {
        assert_eq!(devinfo_usage("ibv_devinfo"), USAGE);
    }

    #[test]
    fn names_of_values() {
        assert_eq!(guid_str(0x0002_c903_0010_fa0e), "0002:c903:0010:fa0e");
        assert_eq!(guid_str(u64::MAX), "ffff:ffff:ffff:ffff");
        assert_eq!(transport_str(Transport::Iwarp), "iWARP");
        assert_eq!(transport_value(Transport::Iwarp), 1);
        assert_eq!(transport_value(Transport::Unknown(9)), 9);
        assert_eq!(port_state_str(PortState::Active), "PORT_ACTIVE");
        assert_eq!(port_state_str(PortState::Down), "PORT_DOWN");
        assert_eq!(port_state_str(PortState::ActiveDefer), "invalid state");
        assert_eq!(phys_state_str(PhysState::LinkUp), "LINK_UP");
        assert_eq!(phys_state_str(PhysState::Polling), "POLLING");
        assert_eq!(
            phys_state_str(PhysState::Unknown(9)),
            "invalid physical state"
        );
        assert_eq!(mtu_str(Mtu::Mtu1024), "1024");
        assert_eq!(mtu_str(Mtu::Unknown(7)), "invalid MTU");
        assert_eq!(width_str(Width::from_raw(2)), "4");
        assert_eq!(width_str(Width::from_raw(8)), "12");
        assert_eq!(width_str(Width::from_raw(16)), "2");
        assert_eq!(width_str(Width::from_raw(3)), "invalid width");
        assert_eq!(speed_str(Speed::from_raw(8)), "10.0 Gbps");
        assert_eq!(speed_str(Speed::from_raw(16)), "14.0 Gbps");
        assert_eq!(speed_str(Speed::from_raw(32)), "25.0 Gbps");
        assert_eq!(speed_str(Speed::from_raw(128)), "100.0 Gbps");
        assert_eq!(speed_str(Speed::from_raw(3)), "invalid speed");
        assert_eq!(vl_str(4), "8");
        assert_eq!(vl_str(5), "15");
        assert_eq!(vl_str(0), "invalid value");
        assert_eq!(atomic_cap_str(AtomicCap::Glob), "ATOMIC_GLOB");
        assert_eq!(link_layer_str(LinkLayer::InfiniBand), "InfiniBand");
        assert_eq!(link_layer_str(LinkLayer::Unknown(5)), "Unknown");
    }

    #[test]
    fn ipv6_text_like_glibc() {
        // Expected values from glibc's inet_ntop.
        let cases = [
            ("::", "::"),
            ("::1", "::1"),
            ("::2", "::2"),
            ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
            ("::1.2.3.4", "::1.2.3.4"),
            ("::0.0.1.0", "::100"),
            ("fe80::200:ff:fe00:0", "fe80::200:ff:fe00:0"),
            ("1:0:0:1:0:0:0:1", "1:0:0:1::1"),
            ("1:0:0:1:0:0:1:1", "1::1:0:0:1:1"),
            ("1::", "1::"),
            ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"),
            ("0:0:1::", "0:0:1::"),
            ("::ffff:0:1.2.3.4", "::ffff:0:102:304"),
            ("::ffff:0.0.0.0", "::ffff:0.0.0.0"),
            ("1:0:2:0:3:0:4:0", "1:0:2:0:3:0:4:0"),
            ("2001:db8::ff00:42:8329", "2001:db8::ff00:42:8329"),
            ("::1:ffff:1.2.3.4", "::1:ffff:102:304"),
        ];
        for (addr, text) in cases {
            let addr: std::net::Ipv6Addr = addr.parse().unwrap();
            assert_eq!(inet_ntop6(addr.octets()), text, "{addr}");
        }
    }

    #[test]
    fn gid_lines() {
        let v1 = ffi::ibv_gid_type::IBV_GID_TYPE_ROCE_V1;
        let ib = ffi::ibv_gid_type::IBV_GID_TYPE_IB;
        let e = entry(3, "fe80::2:c903:10:fa0e", ib);
        assert_eq!(
            gid_line(&e, LinkLayer::InfiniBand).unwrap(),
            "\t\t\tGID[  3]:\t\tfe80:0000:0000:0000:0002:c903:0010:fa0e\n"
        );
        let e = entry(12, "::ffff:10.0.0.1", v1);
        assert_eq!(
            gid_line(&e, LinkLayer::Ethernet).unwrap(),
            "\t\t\tGID[ 12]:\t\t0000:0000:0000:0000:0000:ffff:0a00:0001, RoCE v1\n"
        );
        // A zero interface ID is skipped.
        assert_eq!(
            gid_line(&entry(4, "fe80::", ib), LinkLayer::InfiniBand),
            None
        );
    }

    fn parse(args: &[&str]) -> DevinfoCommand {
        let args: Vec<OsString> = std::iter::once("ibv_devinfo")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        parse_devinfo_args(&args)
    }

    fn show(device: Option<&str>, port: u8, verbose: bool) -> DevinfoCommand {
        DevinfoCommand::Show {
            device: device.map(str::to_owned),
            port,
            verbose,
        }
    }

    #[test]
    fn arguments() {
        let usage1 = DevinfoCommand::Usage {
            status: 1,
            message: None,
        };
        assert_eq!(parse(&[]), show(None, 0, false));
        assert_eq!(parse(&["-v", "-d", "rxe0"]), show(Some("rxe0"), 0, true));
        assert_eq!(parse(&["-drxe0", "-i1"]), show(Some("rxe0"), 1, false));
        assert_eq!(parse(&["--ib-dev=a", "-d", "b"]), show(Some("b"), 0, false));
        assert_eq!(parse(&["--ib-port", "0x2"]), show(None, 2, false));
        assert_eq!(parse(&["-i", "257"]), show(None, 1, false));
        assert_eq!(parse(&["--verb", "operand"]), show(None, 0, true));
        assert_eq!(parse(&["-i", "0"]), usage1);
        assert_eq!(parse(&["-i", "-1"]), usage1);
        assert_eq!(parse(&["-i", "x"]), usage1);
        assert_eq!(parse(&["-l"]), DevinfoCommand::List);
        assert_eq!(parse(&["-l", "-i", "0"]), DevinfoCommand::List);
        assert_eq!(parse(&["-i", "0", "-l"]), usage1);
        assert_eq!(parse(&["-vl", "-d", "x"]), DevinfoCommand::List);
        assert_eq!(
            parse(&["-x"]),
            DevinfoCommand::Usage {
                status: -1,
                message: Some("ibv_devinfo: invalid option -- 'x'".to_owned()),
            }
        );
        assert_eq!(
            parse(&["--help"]),
            DevinfoCommand::Usage {
                status: -1,
                message: Some("ibv_devinfo: unrecognized option '--help'".to_owned()),
            }
        );
    }

    const DEVINFO: &str = "\
        hca_id:\trxe0\n\
        \ttransport:\t\t\tInfiniBand (0)\n\
        \tfw_ver:\t\t\t\t0.0.0\n\
        \tnode_guid:\t\t\t0200:00ff:fe00:0000\n\
        \tsys_image_guid:\t\t\t0200:00ff:fe00:0000\n\
        \tvendor_id:\t\t\t0xffffff\n\
        \tvendor_part_id:\t\t\t0\n\
        \thw_ver:\t\t\t\t0x0\n\
        \tphys_port_cnt:\t\t\t1\n\
        \t\tport:\t1\n\
        \t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\
        \t\t\tmax_mtu:\t\t4096 (5)\n\
        \t\t\tactive_mtu:\t\t4096 (5)\n\
        \t\t\tsm_lid:\t\t\t0\n\
        \t\t\tport_lid:\t\t0\n\
        \t\t\tport_lmc:\t\t0x00\n\
        \t\t\tlink_layer:\t\tEthernet\n\
        \n\
    ";

    const DEVINFO_V: &str = "\
        hca_id:\trxe0\n\
        \ttransport:\t\t\tInfiniBand (0)\n\
        \tfw_ver:\t\t\t\t0.0.0\n\
        \tnode_guid:\t\t\t0200:00ff:fe00:0000\n\
        \tsys_image_guid:\t\t\t0200:00ff:fe00:0000\n\
        \tvendor_id:\t\t\t0xffffff\n\
        \tvendor_part_id:\t\t\t0\n\
        \thw_ver:\t\t\t\t0x0\n\
        \tphys_port_cnt:\t\t\t1\n\
        \tmax_mr_size:\t\t\t0xffffffffffffffff\n\
        \tpage_size_cap:\t\t\t0xfffff000\n\
        \tmax_qp:\t\t\t\t1048560\n\
        \tmax_qp_wr:\t\t\t1048576\n\
        \tdevice_cap_flags:\t\t0x01223c76\n\
        \t\t\t\t\tBAD_PKEY_CNTR\n\
        \t\t\t\t\tBAD_QKEY_CNTR\n\
        \t\t\t\t\tAUTO_PATH_MIG\n\
        \t\t\t\t\tCHANGE_PHY_PORT\n\
        \t\t\t\t\tUD_AV_PORT_ENFORCE\n\
        \t\t\t\t\tPORT_ACTIVE_EVENT\n\
        \t\t\t\t\tSYS_IMAGE_GUID\n\
        \t\t\t\t\tRC_RNR_NAK_GEN\n\
        \t\t\t\t\tSRQ_RESIZE\n\
        \t\t\t\t\tMEM_WINDOW\n\
        \t\t\t\t\tMEM_MGT_EXTENSIONS\n\
        \t\t\t\t\tMEM_WINDOW_TYPE_2B\n\
        \tmax_sge:\t\t\t32\n\
        \tmax_sge_rd:\t\t\t32\n\
        \tmax_cq:\t\t\t\t1048576\n\
        \tmax_cqe:\t\t\t32767\n\
        \tmax_mr:\t\t\t\t524287\n\
        \tmax_pd:\t\t\t\t1048576\n\
        \tmax_qp_rd_atom:\t\t\t128\n\
        \tmax_ee_rd_atom:\t\t\t0\n\
        \tmax_res_rd_atom:\t\t258048\n\
        \tmax_qp_init_rd_atom:\t\t128\n\
        \tmax_ee_init_rd_atom:\t\t0\n\
        \tatomic_cap:\t\t\tATOMIC_HCA (1)\n\
        \tmax_ee:\t\t\t\t0\n\
        \tmax_rdd:\t\t\t0\n\
        \tmax_mw:\t\t\t\t524287\n\
        \tmax_raw_ipv6_qp:\t\t0\n\
        \tmax_raw_ethy_qp:\t\t0\n\
        \tmax_mcast_grp:\t\t\t8192\n\
        \tmax_mcast_qp_attach:\t\t56\n\
        \tmax_total_mcast_qp_attach:\t458752\n\
        \tmax_ah:\t\t\t\t32767\n\
        \tmax_fmr:\t\t\t0\n\
        \tmax_srq:\t\t\t917503\n\
        \tmax_srq_wr:\t\t\t1048576\n\
        \tmax_srq_sge:\t\t\t27\n\
        \tmax_pkeys:\t\t\t64\n\
        \tlocal_ca_ack_delay:\t\t15\n\
        \tgeneral_odp_caps:\n\
        \trc_odp_caps:\n\
        \t\t\t\t\tNO SUPPORT\n\
        \tuc_odp_caps:\n\
        \t\t\t\t\tNO SUPPORT\n\
        \tud_odp_caps:\n\
        \t\t\t\t\tNO SUPPORT\n\
        \txrc_odp_caps:\n\
        \t\t\t\t\tNO SUPPORT\n\
        \tcompletion_timestamp_mask not supported\n\
        \tcore clock not supported\n\
        \tdevice_cap_flags_ex:\t\t0x1223C76\n\
        \ttso_caps:\n\
        \t\tmax_tso:\t\t\t0\n\
        \trss_caps:\n\
        \t\tmax_rwq_indirection_tables:\t\t\t0\n\
        \t\tmax_rwq_indirection_table_size:\t\t\t0\n\
        \t\trx_hash_function:\t\t\t\t0x0\n\
        \t\trx_hash_fields_mask:\t\t\t\t0x0\n\
        \tmax_wq_type_rq:\t\t\t0\n\
        \tpacket_pacing_caps:\n\
        \t\tqp_rate_limit_min:\t0kbps\n\
        \t\tqp_rate_limit_max:\t0kbps\n\
        \ttag matching not supported\n\
        \tnum_comp_vectors:\t\t2\n\
        \t\tport:\t1\n\
        \t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\
        \t\t\tmax_mtu:\t\t4096 (5)\n\
        \t\t\tactive_mtu:\t\t4096 (5)\n\
        \t\t\tsm_lid:\t\t\t0\n\
        \t\t\tport_lid:\t\t0\n\
        \t\t\tport_lmc:\t\t0x00\n\
        \t\t\tlink_layer:\t\tEthernet\n\
        \t\t\tmax_msg_sz:\t\t0x800000\n\
        \t\t\tport_cap_flags:\t\t0x00010000\n\
        \t\t\tport_cap_flags2:\t0x0000\n\
        \t\t\tmax_vl_num:\t\t1 (1)\n\
        \t\t\tbad_pkey_cntr:\t\t0x0\n\
        \t\t\tqkey_viol_cntr:\t\t0x0\n\
        \t\t\tsm_sl:\t\t\t0\n\
        \t\t\tpkey_tbl_len:\t\t1\n\
        \t\t\tgid_tbl_len:\t\t1024\n\
        \t\t\tsubnet_timeout:\t\t0\n\
        \t\t\tinit_type_reply:\t0\n\
        \t\t\tactive_width:\t\t1X (1)\n\
        \t\t\tactive_speed:\t\t2.5 Gbps (1)\n\
        \t\t\tphys_state:\t\tLINK_UP (5)\n\
        \t\t\tGID[  0]:\t\tfe80::200:ff:fe00:0, RoCE v2\n\
        \t\t\tGID[  1]:\t\t::ffff:127.0.0.1, RoCE v2\n\
        \t\t\tGID[  2]:\t\t::1, RoCE v2\n\
        \n\
    ";

    const DEVICES: &str = "\
        \x20   device          \t   node GUID\n\
        \x20   ------          \t----------------\n\
        \x20   rxe0            \t020000fffe000000\n\
    ";

    const USAGE: &str = "\
        Usage: ibv_devinfo             print the ca attributes\n\
        \n\
        Options:\n\
        \x20 -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n\
        \x20 -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n\
        \x20 -l, --list             print only the IB devices names\n\
        \x20 -v, --verbose          print all the attributes of the IB device(s)\n\
    ";
}
