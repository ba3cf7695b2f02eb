//! Attributes as libibmad's `dump.c` prints them for `smpquery` (`mad_dump_nodeinfo`,
//! `mad_dump_switchinfo`, infiniband-diags' `dump_portinfo`): one `Name:....value` line per
//! field ([`field`]), each value in its dumper's format. The PortInfo value texts shared
//! with `ibportstate` are in [`portinfo_text`](super::portinfo_text).

use std::fmt::Write as _;

use ibumad::mad::{NodeInfo, PortInfo, PortInfoExtended, SwitchInfo};

use super::portinfo_text::{
    field, link_speed, link_speed_ext, link_speed_ext_enabled, link_speed_ext_set, link_speed_set,
    link_width, link_width_enabled, link_width_supported, phys_state, port_state,
};
use crate::cli::Output;
use crate::ibdiag;

/// `mad_dump_hex`: `0x` and the value's `bytes` bytes in hex digits (the bytes a field of
/// its width fills).
pub fn hex(value: u64, bytes: usize) -> String {
    format!("{value:#0width$x}", width = 2 + 2 * bytes)
}

/// `mad_dump_portinfo_ext` of PortInfoExtended `p`, whose SMP data is `data`. libibmad
/// reads its HDR and NDR fields with plain (not big-endian-in-word) bit offsets, so it
/// shows the 16-bit words at bytes 12, 18, 16 and 22 of the data under those names; they
/// are shown from there here too.
pub fn port_info_ext(p: &PortInfoExtended, data: &[u8; 64]) -> String {
    let word = |at: usize| u64::from(u16::from_be_bytes([data[at], data[at + 1]]));
    let lines = [
        ("CapMask", hex(p.capability_mask.into(), 4)),
        ("FECModeActive", p.fec_mode_active.to_string()),
        (
            "FDRFECModeSupported",
            hex(p.fdr_fec_mode_supported.into(), 2),
        ),
        ("FDRFECModeEnabled", hex(p.fdr_fec_mode_enabled.into(), 2)),
        (
            "EDRFECModeSupported",
            hex(p.edr_fec_mode_supported.into(), 2),
        ),
        ("EDRFECModeEnabled", hex(p.edr_fec_mode_enabled.into(), 2)),
        ("HDRFECModeSupported", hex(word(12), 2)),
        ("HDRFECModeEnabled", hex(word(18), 2)),
        ("NDRFECModeSupported", hex(word(16), 2)),
        ("NDRFECModeEnabled", hex(word(22), 2)),
    ];
    lines
        .iter()
        .map(|(name, value)| field(name, value) + "\n")
        .collect()
}

/// `mad_dump_node_type`.
pub fn node_type(t: u8) -> String {
    match t {
        1 => "Channel Adapter".to_owned(),
        2 => "Switch".to_owned(),
        3 => "Router".to_owned(),
        t => format!("?({t})?"),
    }
}

/// `mad_dump_mtu`: NeighborMTU and MtuCap.
fn mtu(mtu: u8) -> String {
    match mtu {
        1..=5 => (128u32 << mtu).to_string(),
        m => format!("?({m})"),
    }
}

/// `mad_dump_vlcap` (`mad_dump_opervls` also names 0, as `No change`).
fn vls(vls: u8, oper: bool) -> String {
    match vls {
        0 if oper => "No change".to_owned(),
        1 => "VL0".to_owned(),
        2 => "VL0-1".to_owned(),
        3 => "VL0-3".to_owned(),
        4 => "VL0-7".to_owned(),
        5 => "VL0-14".to_owned(),
        v => format!("?({v})"),
    }
}

/// The capability bits `mad_dump_portcapmask` names, by bit.
const CAP_MASK: [(u32, &str); 30] = [
    (1, "IsSM"),
    (2, "IsNoticeSupported"),
    (3, "IsTrapSupported"),
    (4, "IsOptionalIPDSupported"),
    (5, "IsAutomaticMigrationSupported"),
    (6, "IsSLMappingSupported"),
    (7, "IsMKeyNVRAM"),
    (8, "IsPKeyNVRAM"),
    (9, "IsLedInfoSupported"),
    (10, "IsSMdisabled"),
    (11, "IsSystemImageGUIDsupported"),
    (12, "IsPkeySwitchExternalPortTrapSupported"),
    (14, "IsExtendedSpeedsSupported"),
    (15, "IsCapabilityMask2Supported"),
    (16, "IsCommunicatonManagementSupported"),
    (17, "IsSNMPTunnelingSupported"),
    (18, "IsReinitSupported"),
    (19, "IsDeviceManagementSupported"),
    (20, "IsVendorClassSupported"),
    (21, "IsDRNoticeSupported"),
    (22, "IsCapabilityMaskNoticeSupported"),
    (23, "IsBootManagementSupported"),
    (24, "IsLinkRoundTripLatencySupported"),
    (25, "IsClientRegistrationSupported"),
    (26, "IsOtherLocalChangesNoticeSupported"),
    (27, "IsLinkSpeedWidthPairsTableSupported"),
    (28, "IsVendorSpecificMadsTableSupported"),
    (29, "IsMcastPkeyTrapSuppressionSupported"),
    (30, "IsMulticastFDBTopSupported"),
    (31, "IsHierarchyInfoSupported"),
];

/// The capability bits `mad_dump_portcapmask2` names, by bit.
const CAP_MASK2: [(u32, &str); 11] = [
    (0, "IsSetNodeDescriptionSupported"),
    (1, "IsPortInfoExtendedSupported"),
    (2, "IsVirtualizationSupported"),
    (3, "IsSwitchPortStateTableSupported"),
    (4, "IsLinkWidth2xSupported"),
    (5, "IsLinkSpeedHDRSupported"),
    (6, "IsMKeyProtectBitsExtSupported"),
    (7, "IsEnhancedTrap128Supported"),
    (8, "IsPartitionTopSupported"),
    (9, "IsEnhancedQoSArbiterSupported"),
    (10, "IsLinkSpeedNDRSupported"),
];

/// `mad_dump_portcapmask`/`mad_dump_portcapmask2`: the mask in hex, then one line per bit
/// set that has a name, indented by four tabs.
fn cap_mask(mask: u32, names: &[(u32, &str)]) -> String {
    let mut text = format!("{mask:#x}");
    for (bit, name) in names {
        if mask & (1 << bit) != 0 {
            let _ = write!(text, "\n\t\t\t\t{name}");
        }
    }
    text
}

/// `mad_dump_nodeinfo`: the NodeInfo lines.
pub fn node_info(n: &NodeInfo) -> String {
    let lines = [
        field("BaseVers", &n.base_version.to_string()),
        field("ClassVers", &n.class_version.to_string()),
        field("NodeType", &node_type(n.node_type)),
        field("NumPorts", &n.num_ports.to_string()),
        field("SystemGuid", &hex(n.system_image_guid, 8)),
        field("Guid", &hex(n.node_guid, 8)),
        field("PortGuid", &hex(n.port_guid, 8)),
        field("PartCap", &n.partition_cap.to_string()),
        field("DevId", &hex(n.device_id.into(), 2)),
        field("Revision", &hex(n.revision.into(), 4)),
        field("LocalPort", &n.local_port_num.to_string()),
        field("VendorId", &hex(n.vendor_id.into(), 3)),
    ];
    lines.map(|l| l + "\n").concat()
}

/// `mad_dump_switchinfo`: the SwitchInfo lines.
pub fn switch_info(s: &SwitchInfo) -> String {
    let lines = [
        field("LinearFdbCap", &s.linear_fdb_cap.to_string()),
        field("RandomFdbCap", &s.random_fdb_cap.to_string()),
        field("McastFdbCap", &s.multicast_fdb_cap.to_string()),
        field("LinearFdbTop", &s.linear_fdb_top.to_string()),
        field("DefPort", &s.default_port.to_string()),
        field(
            "DefMcastPrimPort",
            &s.default_multicast_primary_port.to_string(),
        ),
        field(
            "DefMcastNotPrimPort",
            &s.default_multicast_not_primary_port.to_string(),
        ),
        field("LifeTime", &s.life_time_value.to_string()),
        field("StateChange", &s.port_state_change.to_string()),
        field(
            "OptSLtoVLMapping",
            &s.optimized_sl_to_vl_mapping.to_string(),
        ),
        field("LidsPerPort", &s.lids_per_port.to_string()),
        field("PartEnforceCap", &s.partition_enforcement_cap.to_string()),
        field("InboundPartEnf", &s.inbound_enforcement_cap.to_string()),
        field("OutboundPartEnf", &s.outbound_enforcement_cap.to_string()),
        field("FilterRawInbound", &s.filter_raw_inbound_cap.to_string()),
        field("FilterRawOutbound", &s.filter_raw_outbound_cap.to_string()),
        field("EnhancedPort0", &s.enhanced_port0.to_string()),
        field("MulticastFDBTop", &hex(s.multicast_fdb_top.into(), 2)),
    ];
    lines.map(|l| l + "\n").concat()
}

/// infiniband-diags' `dump_portinfo` (no indent): the PortInfo lines, the M_Key shown only
/// with `show_keys` (`-K`). A LinkWidthActive that is not one width is also warned about
/// on stderr, as `mad_dump_linkwidth` does.
pub fn port_info(p: &PortInfo, show_keys: bool, out: &mut Output) -> String {
    let m_key = if show_keys {
        hex(p.m_key, 8)
    } else {
        "<not displayed>".to_owned()
    };
    let active_width = link_width(p.link_width_active).unwrap_or_else(|text| {
        let msg = format!("bad width {}", p.link_width_active);
        ibdiag::warn(out, "mad_dump_linkwidth", &msg);
        text
    });
    let lines = [
        field("Mkey", &m_key),
        field("GidPrefix", &hex(p.gid_prefix, 8)),
        field("Lid", &p.lid.to_string()),
        field("SMLid", &p.master_sm_lid.to_string()),
        field("CapMask", &cap_mask(p.capability_mask, &CAP_MASK)),
        field("DiagCode", &hex(p.diag_code.into(), 2)),
        field("MkeyLeasePeriod", &p.m_key_lease_period.to_string()),
        field("LocalPort", &p.local_port_num.to_string()),
        field(
            "LinkWidthEnabled",
            &link_width_enabled(p.link_width_enabled),
        ),
        field(
            "LinkWidthSupported",
            &link_width_supported(p.link_width_supported),
        ),
        field("LinkWidthActive", &active_width),
        field(
            "LinkSpeedSupported",
            &link_speed_set(p.link_speed_supported),
        ),
        field("LinkState", &port_state(p.port_state)),
        field("PhysLinkState", &phys_state(p.port_physical_state)),
        field(
            "LinkDownDefState",
            &link_down_default(p.link_down_default_state),
        ),
        field("ProtectBits", &p.m_key_protect_bits.to_string()),
        field("LMC", &p.lmc.to_string()),
        field("LinkSpeedActive", &link_speed(p.link_speed_active)),
        field("LinkSpeedEnabled", &link_speed_set(p.link_speed_enabled)),
        field("NeighborMTU", &mtu(p.neighbor_mtu)),
        field("SMSL", &p.master_sm_sl.to_string()),
        field("VLCap", &vls(p.vl_cap, false)),
        field("InitType", &hex(p.init_type.into(), 1)),
        field("VLHighLimit", &p.vl_high_limit.to_string()),
        field("VLArbHighCap", &p.vl_arbitration_high_cap.to_string()),
        field("VLArbLowCap", &p.vl_arbitration_low_cap.to_string()),
        field("InitReply", &hex(p.init_type_reply.into(), 1)),
        field("MtuCap", &mtu(p.mtu_cap)),
        field("VLStallCount", &p.vl_stall_count.to_string()),
        field("HoqLife", &p.hoq_life.to_string()),
        field("OperVLs", &vls(p.operational_vls, true)),
        field(
            "PartEnforceInb",
            &p.partition_enforcement_inbound.to_string(),
        ),
        field(
            "PartEnforceOutb",
            &p.partition_enforcement_outbound.to_string(),
        ),
        field("FilterRawInb", &p.filter_raw_inbound.to_string()),
        field("FilterRawOutb", &p.filter_raw_outbound.to_string()),
        field("MkeyViolations", &p.m_key_violations.to_string()),
        field("PkeyViolations", &p.p_key_violations.to_string()),
        field("QkeyViolations", &p.q_key_violations.to_string()),
        field("GuidCap", &p.guid_cap.to_string()),
        field("ClientReregister", &p.client_reregister.to_string()),
        field(
            "McastPkeyTrapSuppressionEnabled",
            &p.multicast_pkey_trap_suppression_enabled.to_string(),
        ),
        field("SubnetTimeout", &p.subnet_timeout.to_string()),
        field("RespTimeVal", &p.resp_time_value.to_string()),
        field("LocalPhysErr", &p.local_phy_errors.to_string()),
        field("OverrunErr", &p.overrun_errors.to_string()),
        field("MaxCreditHint", &p.max_credit_hint.to_string()),
        field("RoundTrip", &p.link_round_trip_latency.to_string()),
        field(
            "CapabilityMask2",
            &cap_mask(p.capability_mask2.into(), &CAP_MASK2),
        ),
        field(
            "LinkSpeedExtActive",
            &link_speed_ext(p.link_speed_ext_active),
        ),
        field(
            "LinkSpeedExtSupported",
            &link_speed_ext_set(p.link_speed_ext_supported),
        ),
        field(
            "LinkSpeedExtEnabled",
            &link_speed_ext_enabled(p.link_speed_ext_enabled),
        ),
    ];
    lines.map(|l| l + "\n").concat()
}

/// `mad_dump_linkdowndefstate`.
fn link_down_default(state: u8) -> String {
    match state {
        0 => "NoChange".to_owned(),
        1 => "Sleep".to_owned(),
        2 => "Polling".to_owned(),
        s => format!("?({s})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_info_ext_reads_where_libibmad_reads() {
        let mut data = [0u8; 64];
        data[3] = 1;
        for (i, byte) in data[4..24].iter_mut().enumerate() {
            *byte = i as u8;
        }
        let pie = PortInfoExtended::decode(&data).unwrap();
        let text = port_info_ext(&pie, &data);
        assert_eq!(
            text,
            "CapMask:.........................0x00000001\n\
             FECModeActive:...................1\n\
             FDRFECModeSupported:.............0x0203\n\
             FDRFECModeEnabled:...............0x0405\n\
             EDRFECModeSupported:.............0x0607\n\
             EDRFECModeEnabled:...............0x0809\n\
             HDRFECModeSupported:.............0x0809\n\
             HDRFECModeEnabled:...............0x0e0f\n\
             NDRFECModeSupported:.............0x0c0d\n\
             NDRFECModeEnabled:...............0x1213\n"
        );
    }

    #[test]
    fn values_as_libibmad_dumps_them() {
        assert_eq!(hex(0xa1, 4), "0x000000a1");
        assert_eq!(hex(0, 1), "0x00");
        assert_eq!(hex(0x100000, 8), "0x0000000000100000");
        assert_eq!(node_type(2), "Switch");
        assert_eq!(node_type(9), "?(9)?");
        assert_eq!(mtu(4), "2048");
        assert_eq!(mtu(1), "256");
        assert_eq!(mtu(0), "?(0)");
        assert_eq!(vls(4, false), "VL0-7");
        assert_eq!(vls(0, true), "No change");
        assert_eq!(vls(0, false), "?(0)");
        assert_eq!(link_down_default(2), "Polling");
    }

    #[test]
    fn capability_masks() {
        assert_eq!(
            cap_mask(0x50c04a, &CAP_MASK),
            "0x50c04a\n\t\t\t\tIsSM\n\t\t\t\tIsTrapSupported\n\t\t\t\tIsSLMappingSupported\
             \n\t\t\t\tIsExtendedSpeedsSupported\n\t\t\t\tIsCapabilityMask2Supported\
             \n\t\t\t\tIsVendorClassSupported\n\t\t\t\tIsCapabilityMaskNoticeSupported"
        );
        assert_eq!(cap_mask(0, &CAP_MASK), "0x0");
        assert_eq!(
            cap_mask(0x8000_0000, &CAP_MASK),
            "0x80000000\n\t\t\t\tIsHierarchyInfoSupported"
        );
        assert_eq!(
            cap_mask(0x30, &CAP_MASK2),
            "0x30\n\t\t\t\tIsLinkWidth2xSupported\n\t\t\t\tIsLinkSpeedHDRSupported"
        );
    }
}
