//! Attributes of the performance management class (0x04, IBA 16.1): ClassPortInfo (0x0001),
//! PortCounters (0x0012) and PortCountersExtended (0x001D). They are the data of a
//! performance MAD, which starts at byte 64 of the MAD ([`PERF_DATA_OFFSET`]).

use super::bits::{get, layout, set};
use super::{need, MadError};

/// Where the data of a performance (GS) MAD starts: after the common header and 40
/// reserved bytes.
pub const PERF_DATA_OFFSET: usize = 64;

layout! {
    /// PortCounters (IBA 16.1.3.5); bits not listed are reserved (encoded as zero).
    PortCounters, 44;
    /// PortSelect.
    port_select: u8 = (8, 8),
    /// CounterSelect.
    counter_select: u16 = (16, 16),
    /// SymbolErrorCounter.
    symbol_error_counter: u16 = (32, 16),
    /// LinkErrorRecoveryCounter.
    link_error_recovery_counter: u8 = (48, 8),
    /// LinkDownedCounter.
    link_downed_counter: u8 = (56, 8),
    /// PortRcvErrors.
    port_rcv_errors: u16 = (64, 16),
    /// PortRcvRemotePhysicalErrors.
    port_rcv_remote_physical_errors: u16 = (80, 16),
    /// PortRcvSwitchRelayErrors.
    port_rcv_switch_relay_errors: u16 = (96, 16),
    /// PortXmitDiscards.
    port_xmit_discards: u16 = (112, 16),
    /// PortXmitConstraintErrors.
    port_xmit_constraint_errors: u8 = (128, 8),
    /// PortRcvConstraintErrors.
    port_rcv_constraint_errors: u8 = (136, 8),
    /// CounterSelect2.
    counter_select2: u8 = (144, 8),
    /// LocalLinkIntegrityErrors (4 bits).
    local_link_integrity_errors: u8 = (152, 4),
    /// ExcessiveBufferOverrunErrors (4 bits).
    excessive_buffer_overrun_errors: u8 = (156, 4),
    /// QP1Dropped.
    qp1_dropped: u16 = (160, 16),
    /// VL15Dropped.
    vl15_dropped: u16 = (176, 16),
    /// PortXmitData (in units of 4 bytes).
    port_xmit_data: u32 = (192, 32),
    /// PortRcvData (in units of 4 bytes).
    port_rcv_data: u32 = (224, 32),
    /// PortXmitPkts.
    port_xmit_pkts: u32 = (256, 32),
    /// PortRcvPkts.
    port_rcv_pkts: u32 = (288, 32),
    /// PortXmitWait.
    port_xmit_wait: u32 = (320, 32),
}

impl PortCounters {
    /// AttributeID of PortCounters.
    pub const ATTR_ID: u16 = 0x0012;
}

layout! {
    /// PortCountersExtended (IBA 16.1.4.11): the 64-bit counters, with the error counters
    /// that ports whose ClassPortInfo CapabilityMask2 has IsAdditionalPortCountersExtended
    /// (bit 1) fill in after the traffic ones.
    PortCountersExtended, 184;
    /// PortSelect.
    port_select: u8 = (8, 8),
    /// CounterSelect.
    counter_select: u16 = (16, 16),
    /// CounterSelect2 (of the additional counters).
    counter_select2: u32 = (32, 32),
    /// PortXmitData (in units of 4 bytes).
    port_xmit_data: u64 = (64, 64),
    /// PortRcvData (in units of 4 bytes).
    port_rcv_data: u64 = (128, 64),
    /// PortXmitPkts.
    port_xmit_pkts: u64 = (192, 64),
    /// PortRcvPkts.
    port_rcv_pkts: u64 = (256, 64),
    /// PortUnicastXmitPkts.
    port_unicast_xmit_pkts: u64 = (320, 64),
    /// PortUnicastRcvPkts.
    port_unicast_rcv_pkts: u64 = (384, 64),
    /// PortMulticastXmitPkts.
    port_multicast_xmit_pkts: u64 = (448, 64),
    /// PortMulticastRcvPkts.
    port_multicast_rcv_pkts: u64 = (512, 64),
    /// SymbolErrorCounter.
    symbol_error_counter: u64 = (576, 64),
    /// LinkErrorRecoveryCounter.
    link_error_recovery_counter: u64 = (640, 64),
    /// LinkDownedCounter.
    link_downed_counter: u64 = (704, 64),
    /// PortRcvErrors.
    port_rcv_errors: u64 = (768, 64),
    /// PortRcvRemotePhysicalErrors.
    port_rcv_remote_physical_errors: u64 = (832, 64),
    /// PortRcvSwitchRelayErrors.
    port_rcv_switch_relay_errors: u64 = (896, 64),
    /// PortXmitDiscards.
    port_xmit_discards: u64 = (960, 64),
    /// PortXmitConstraintErrors.
    port_xmit_constraint_errors: u64 = (1024, 64),
    /// PortRcvConstraintErrors.
    port_rcv_constraint_errors: u64 = (1088, 64),
    /// LocalLinkIntegrityErrors.
    local_link_integrity_errors: u64 = (1152, 64),
    /// ExcessiveBufferOverrunErrors.
    excessive_buffer_overrun_errors: u64 = (1216, 64),
    /// VL15Dropped.
    vl15_dropped: u64 = (1280, 64),
    /// PortXmitWait.
    port_xmit_wait: u64 = (1344, 64),
    /// QP1Dropped.
    qp1_dropped: u64 = (1408, 64),
}

impl PortCountersExtended {
    /// AttributeID of PortCountersExtended.
    pub const ATTR_ID: u16 = 0x001d;
}

layout! {
    /// ClassPortInfo (IBA 13.4.8.1) as a performance MAD's data: what the class supports
    /// and where to redirect or send traps; each GID as its prefix and its GUID.
    ClassPortInfo, 72;
    /// BaseVersion.
    base_version: u8 = (0, 8),
    /// ClassVersion.
    class_version: u8 = (8, 8),
    /// CapabilityMask (for the performance class: bit 8 AllPortSelect, 9 extended width,
    /// 12 PortXmitWait, 15 QP1Dropped, ...).
    capability_mask: u16 = (16, 16),
    /// CapabilityMask2 (27 bits).
    capability_mask2: u32 = (32, 27),
    /// RespTimeValue (5 bits).
    resp_time_value: u8 = (59, 5),
    /// RedirectGID: subnet prefix.
    redirect_gid_prefix: u64 = (64, 64),
    /// RedirectGID: port GUID.
    redirect_gid_guid: u64 = (128, 64),
    /// RedirectTC.
    redirect_tc: u8 = (192, 8),
    /// RedirectSL (4 bits).
    redirect_sl: u8 = (200, 4),
    /// RedirectFL (20 bits).
    redirect_fl: u32 = (204, 20),
    /// RedirectLID.
    redirect_lid: u16 = (224, 16),
    /// RedirectP_Key.
    redirect_pkey: u16 = (240, 16),
    /// RedirectQP (24 bits).
    redirect_qp: u32 = (264, 24),
    /// RedirectQ_Key.
    redirect_qkey: u32 = (288, 32),
    /// TrapGID: subnet prefix.
    trap_gid_prefix: u64 = (320, 64),
    /// TrapGID: port GUID.
    trap_gid_guid: u64 = (384, 64),
    /// TrapTC.
    trap_tc: u8 = (448, 8),
    /// TrapSL (4 bits).
    trap_sl: u8 = (456, 4),
    /// TrapFL (20 bits).
    trap_fl: u32 = (460, 20),
    /// TrapLID.
    trap_lid: u16 = (480, 16),
    /// TrapP_Key.
    trap_pkey: u16 = (496, 16),
    /// TrapHL.
    trap_hl: u8 = (512, 8),
    /// TrapQP (24 bits).
    trap_qp: u32 = (520, 24),
    /// TrapQ_Key.
    trap_qkey: u32 = (544, 32),
}

impl ClassPortInfo {
    /// AttributeID of ClassPortInfo.
    pub const ATTR_ID: u16 = 0x0001;
}

/// The `count` counters of `width` bits each (1 to 64) that the per-SL, per-VL and detail
/// attributes of the performance class (PortXmitDataSL, PortRcvErrorDetails,
/// PortVLOpPackets, ...) hold one after another from bit 32 of their data, after PortSelect
/// and CounterSelect (read those with [`PortCountersExtended`], which starts the same way).
pub fn counter_run(data: &[u8], width: usize, count: usize) -> Result<Vec<u64>, MadError> {
    if !(1..=64).contains(&width) {
        return Err(MadError::Width(width));
    }
    let bits = 32 + width * count;
    let b = need(data, bits.div_ceil(8))?;
    Ok((0..count).map(|i| get(b, 32 + i * width, width)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_port_info_of_a_switch() {
        // The data of Switch1's answer on scripts/topologies/fabric.net (as `perfquery -d -d
        // 2 1` dumps it): AllPortSelect, extended width and PortXmitWait; RespTimeValue 18.
        let mut data = [0u8; 192];
        data[..8].copy_from_slice(&[1, 1, 0x13, 0, 0, 0, 0, 0x12]);
        let info = ClassPortInfo::decode(&data).unwrap();
        assert_eq!((info.base_version, info.class_version), (1, 1));
        assert_eq!(info.capability_mask, 0x1300);
        assert_eq!((info.capability_mask2, info.resp_time_value), (0, 18));
        assert_eq!(info.encode(), data[..ClassPortInfo::SIZE]);
        let mut data = [0u8; 72];
        data[4..8].copy_from_slice(&[0, 0, 0, 0x40]);
        data[36..40].copy_from_slice(&[0, 0x12, 0x34, 0x56]);
        let info = ClassPortInfo::decode(&data).unwrap();
        assert_eq!((info.capability_mask2, info.resp_time_value), (2, 0));
        assert_eq!(info.redirect_qkey, 0x123456);
    }

    #[test]
    fn counter_runs() {
        let mut data = [0u8; 192];
        data[1] = 3;
        data[4..8].copy_from_slice(&[0, 7, 0xff, 0xff]);
        data[8] = 0b1110_0100;
        assert_eq!(counter_run(&data, 16, 3).unwrap(), [7, 0xffff, 0xe400]);
        assert_eq!(counter_run(&data, 32, 1).unwrap(), [0x0007_ffff]);
        assert_eq!(counter_run(&data[4..], 2, 4).unwrap(), [3, 2, 1, 0]);
        assert!(counter_run(&data[..10], 32, 2).is_err());
        assert!(counter_run(&data, 0, 2).is_err());
        assert!(counter_run(&data, 65, 1).is_err());
        assert_eq!(counter_run(&data, 32, 40).unwrap().len(), 40);
    }

    #[test]
    fn additional_extended_counters() {
        let mut data = [0u8; 192];
        data[4..8].copy_from_slice(&[0, 0, 0x0f, 0xff]);
        data[72..80].copy_from_slice(&7u64.to_be_bytes());
        data[176..184].copy_from_slice(&9u64.to_be_bytes());
        let pce = PortCountersExtended::decode(&data).unwrap();
        assert_eq!(pce.counter_select2, 0xfff);
        assert_eq!((pce.symbol_error_counter, pce.qp1_dropped), (7, 9));
        assert_eq!(pce.encode(), data[..PortCountersExtended::SIZE]);
        assert!(PortCountersExtended::decode(&data[..183]).is_err());
    }
}
