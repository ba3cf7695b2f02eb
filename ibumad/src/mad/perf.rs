//! Attributes of the performance management class (0x04, IBA 16.1): PortCounters (0x0012)
//! and PortCountersExtended (0x001D). They are the data of a performance MAD, which starts
//! at byte 64 of the MAD ([`PERF_DATA_OFFSET`]).

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
    /// PortCountersExtended (IBA 16.1.4.11): the 64-bit counters.
    PortCountersExtended, 72;
    /// PortSelect.
    port_select: u8 = (8, 8),
    /// CounterSelect.
    counter_select: u16 = (16, 16),
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
}

impl PortCountersExtended {
    /// AttributeID of PortCountersExtended.
    pub const ATTR_ID: u16 = 0x001d;
}
