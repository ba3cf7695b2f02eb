//! The SMP attributes of switches and subnet managers: SwitchInfo (0x0012, IBA 14.2.5.4)
//! and SMInfo (0x0020, 14.2.5.13).

use super::bits::{get, layout, set};
use super::{need, MadError};

layout! {
    /// SwitchInfo (IBA 14.2.5.4); bits not listed are reserved (encoded as zero).
    SwitchInfo, 64;
    /// LinearFDBCap.
    linear_fdb_cap: u16 = (0, 16),
    /// RandomFDBCap.
    random_fdb_cap: u16 = (16, 16),
    /// MulticastFDBCap.
    multicast_fdb_cap: u16 = (32, 16),
    /// LinearFDBTop.
    linear_fdb_top: u16 = (48, 16),
    /// DefaultPort.
    default_port: u8 = (64, 8),
    /// DefaultMulticastPrimaryPort.
    default_multicast_primary_port: u8 = (72, 8),
    /// DefaultMulticastNotPrimaryPort.
    default_multicast_not_primary_port: u8 = (80, 8),
    /// LifeTimeValue (5 bits).
    life_time_value: u8 = (88, 5),
    /// PortStateChange (1 bit).
    port_state_change: u8 = (93, 1),
    /// OptimizedSLtoVLMappingProgramming (2 bits).
    optimized_sl_to_vl_mapping: u8 = (94, 2),
    /// LIDsPerPort.
    lids_per_port: u16 = (96, 16),
    /// PartitionEnforcementCap.
    partition_enforcement_cap: u16 = (112, 16),
    /// InboundEnforcementCap (1 bit).
    inbound_enforcement_cap: u8 = (128, 1),
    /// OutboundEnforcementCap (1 bit).
    outbound_enforcement_cap: u8 = (129, 1),
    /// FilterRawInboundCap (1 bit).
    filter_raw_inbound_cap: u8 = (130, 1),
    /// FilterRawOutboundCap (1 bit).
    filter_raw_outbound_cap: u8 = (131, 1),
    /// EnhancedPort0 (1 bit).
    enhanced_port0: u8 = (132, 1),
    /// MulticastFDBTop.
    multicast_fdb_top: u16 = (144, 16),
}

impl SwitchInfo {
    /// AttributeID of SwitchInfo.
    pub const ATTR_ID: u16 = 0x0012;
}

layout! {
    /// SMInfo (IBA 14.2.5.13).
    SmInfo, 21;
    /// GUID of the subnet manager's port.
    guid: u64 = (0, 64),
    /// SM_Key (zeroed in answers to requesters that do not know it).
    sm_key: u64 = (64, 64),
    /// ActCount: grows while the subnet manager works.
    act_count: u32 = (128, 32),
    /// Priority (4 bits).
    priority: u8 = (160, 4),
    /// SMState (4 bits): 0 not active, 1 discovering, 2 standby, 3 master.
    sm_state: u8 = (164, 4),
}

impl SmInfo {
    /// AttributeID of SMInfo.
    pub const ATTR_ID: u16 = 0x0020;
}
