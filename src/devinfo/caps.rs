//! Capability bit sets as `ibv_devinfo -v` lists them: one line per known bit by name, in
//! the C tool's order, then the unknown bits in hex.

use std::fmt::{self, Write};

use rdma_verbs::ffi;
use rdma_verbs::{DeviceCapFlags, OdpGeneralCaps, OdpTransportCaps, RawPacketCaps};

/// The bits of `device_cap_flags`, in the order `ibv_devinfo` lists them.
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

/// The bits of `device_cap_flags_ex` above the first 32 that `ibv_devinfo` names.
const DEVICE_CAP_EX_NAMES: &[(DeviceCapFlags, &str)] = &[
    (DeviceCapFlags::RAW_SCATTER_FCS, "RAW_SCATTER_FCS"),
    (
        DeviceCapFlags::PCI_WRITE_END_PADDING,
        "PCI_WRITE_END_PADDING",
    ),
];

/// The bits of a transport's on-demand paging capabilities.
const ODP_TRANSPORT_NAMES: &[(OdpTransportCaps, &str)] = &[
    (OdpTransportCaps::SEND, "SUPPORT_SEND"),
    (OdpTransportCaps::RECV, "SUPPORT_RECV"),
    (OdpTransportCaps::WRITE, "SUPPORT_WRITE"),
    (OdpTransportCaps::READ, "SUPPORT_READ"),
    (OdpTransportCaps::ATOMIC, "SUPPORT_ATOMIC"),
    (OdpTransportCaps::SRQ_RECV, "SUPPORT_SRQ"),
];

/// `(bit, name)` pairs of a flags type as plain 64-bit masks.
fn names64<F: Copy>(
    names: &[(F, &'static str)],
    bits: impl Fn(F) -> u64,
) -> Vec<(u64, &'static str)> {
    names.iter().map(|&(f, name)| (bits(f), name)).collect()
}

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

/// The lines under `device_cap_flags` (the bits of `ibv_device_attr`).
pub(super) fn write_device_cap_flags(out: &mut impl Write, flags: u32) -> fmt::Result {
    write_flags(out, flags.into(), &names64(DEVICE_CAP_NAMES, |f| f.bits()))
}

/// The lines under `device_cap_flags_ex`: its bits above the 32 of `device_cap_flags`.
pub(super) fn write_device_cap_flags_ex(out: &mut impl Write, flags_ex: u64) -> fmt::Result {
    write_flags(
        out,
        flags_ex & !u64::from(u32::MAX),
        &names64(DEVICE_CAP_EX_NAMES, |f| f.bits()),
    )
}

/// The lines under `general_odp_caps`.
pub(super) fn write_odp_general(out: &mut impl Write, caps: OdpGeneralCaps) -> fmt::Result {
    let names = [
        (OdpGeneralCaps::SUPPORT.bits(), "ODP_SUPPORT"),
        (
            OdpGeneralCaps::SUPPORT_IMPLICIT.bits(),
            "ODP_SUPPORT_IMPLICIT",
        ),
    ];
    write_flags(out, caps.bits(), &names)
}

/// The lines under a transport's `<transport>_odp_caps`: `NO SUPPORT` if none.
pub(super) fn write_odp_transport(out: &mut impl Write, caps: OdpTransportCaps) -> fmt::Result {
    if caps.is_empty() {
        return writeln!(out, "\t\t\t\t\tNO SUPPORT");
    }
    let names = names64(ODP_TRANSPORT_NAMES, |f| f.bits().into());
    write_flags(out, caps.bits().into(), &names)
}

/// The lines under `raw packet caps` (known capabilities only).
pub(super) fn write_raw_packet(out: &mut impl Write, caps: RawPacketCaps) -> fmt::Result {
    let names = [
        (RawPacketCaps::CVLAN_STRIPPING, "C-VLAN stripping offload"),
        (RawPacketCaps::SCATTER_FCS, "Scatter FCS offload"),
        (RawPacketCaps::IP_CSUM, "IP csum offload"),
        (RawPacketCaps::DELAY_DROP, "Delay drop"),
    ];
    for (cap, name) in names {
        if caps.contains(cap) {
            writeln!(out, "\t\t\t\t\t{name}")?;
        }
    }
    Ok(())
}

/// The QP types of a capability, as `SUPPORT_RAW_PACKET` / `SUPPORT_UD` lines.
pub(super) fn write_qp_types(out: &mut impl Write, qpts: u32) -> fmt::Result {
    writeln!(out, "\t\tsupported_qp:")?;
    let raw_packet = 1u64 << ffi::ibv_qp_type::IBV_QPT_RAW_PACKET.0;
    let ud = 1u64 << ffi::ibv_qp_type::IBV_QPT_UD.0;
    let names = [(raw_packet, "SUPPORT_RAW_PACKET"), (ud, "SUPPORT_UD")];
    write_flags(out, qpts.into(), &names)
}
