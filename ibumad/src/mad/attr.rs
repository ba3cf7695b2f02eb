//! SMP attributes (IBA 14.2.5): NodeDescription (0x0010), NodeInfo (0x0011) and PortInfo
//! (0x0015), each the 64 bytes of an SMP's data.

use super::bits::{get, layout, set};
use super::{need, MadError};

/// Size of an SMP attribute.
const SIZE: usize = 64;

/// NodeDescription (IBA 14.2.5.2): 64 bytes of text, NUL-padded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeDescription(pub [u8; SIZE]);

impl NodeDescription {
    /// AttributeID of NodeDescription.
    pub const ATTR_ID: u16 = 0x0010;

    /// Decodes the first 64 bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<NodeDescription, MadError> {
        let mut text = [0; SIZE];
        text.copy_from_slice(need(bytes, SIZE)?);
        Ok(NodeDescription(text))
    }

    /// Encodes the 64 bytes.
    pub fn encode(&self) -> [u8; SIZE] {
        self.0
    }

    /// The text up to the first NUL, with invalid UTF-8 replaced.
    pub fn text(&self) -> String {
        let end = self.0.iter().position(|&b| b == 0).unwrap_or(SIZE);
        String::from_utf8_lossy(&self.0[..end]).into_owned()
    }

    /// The text up to the first NUL with each byte that is not printable ASCII (C's
    /// `isprint`) as a space, as the diagnostic tools print it (`clean_nodedesc`).
    pub fn printable(&self) -> String {
        self.0
            .iter()
            .take_while(|&&b| b != 0)
            .map(|&b| {
                if (0x20..0x7f).contains(&b) {
                    char::from(b)
                } else {
                    ' '
                }
            })
            .collect()
    }
}

/// NodeInfo (IBA 14.2.5.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeInfo {
    /// BaseVersion.
    pub base_version: u8,
    /// ClassVersion.
    pub class_version: u8,
    /// NodeType: 1 channel adapter, 2 switch, 3 router.
    pub node_type: u8,
    /// NumPorts: physical ports.
    pub num_ports: u8,
    /// SystemImageGUID.
    pub system_image_guid: u64,
    /// NodeGUID.
    pub node_guid: u64,
    /// PortGUID of the port the SMP came in by.
    pub port_guid: u64,
    /// PartitionCap.
    pub partition_cap: u16,
    /// DeviceID.
    pub device_id: u16,
    /// Revision.
    pub revision: u32,
    /// LocalPortNum: the port the SMP came in by.
    pub local_port_num: u8,
    /// VendorID (24 bits).
    pub vendor_id: u32,
}

impl NodeInfo {
    /// AttributeID of NodeInfo.
    pub const ATTR_ID: u16 = 0x0011;

    /// Decodes the first 64 bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<NodeInfo, MadError> {
        let b = need(bytes, SIZE)?;
        let g = |offset, width| get(b, offset, width);
        Ok(NodeInfo {
            base_version: g(0, 8) as u8,
            class_version: g(8, 8) as u8,
            node_type: g(16, 8) as u8,
            num_ports: g(24, 8) as u8,
            system_image_guid: g(32, 64),
            node_guid: g(96, 64),
            port_guid: g(160, 64),
            partition_cap: g(224, 16) as u16,
            device_id: g(240, 16) as u16,
            revision: g(256, 32) as u32,
            local_port_num: g(288, 8) as u8,
            vendor_id: g(296, 24) as u32,
        })
    }

    /// Encodes the 64 bytes (VendorID's high 8 bits dropped; reserved bits zero).
    pub fn encode(&self) -> [u8; SIZE] {
        let mut b = [0; SIZE];
        let mut s = |offset, width, value: u64| set(&mut b, offset, width, value);
        s(0, 8, self.base_version.into());
        s(8, 8, self.class_version.into());
        s(16, 8, self.node_type.into());
        s(24, 8, self.num_ports.into());
        s(32, 64, self.system_image_guid);
        s(96, 64, self.node_guid);
        s(160, 64, self.port_guid);
        s(224, 16, self.partition_cap.into());
        s(240, 16, self.device_id.into());
        s(256, 32, self.revision.into());
        s(288, 8, self.local_port_num.into());
        s(296, 24, self.vendor_id.into());
        b
    }
}

layout! {
    /// PortInfo (IBA 14.2.5.6), up to LinkSpeedExtEnabled; bits not listed are reserved
    /// (encoded as zero).
    PortInfo, 64;
    /// M_Key.
    m_key: u64 = (0, 64),
    /// GidPrefix.
    gid_prefix: u64 = (64, 64),
    /// LID.
    lid: u16 = (128, 16),
    /// MasterSMLID.
    master_sm_lid: u16 = (144, 16),
    /// CapabilityMask.
    capability_mask: u32 = (160, 32),
    /// DiagCode.
    diag_code: u16 = (192, 16),
    /// M_KeyLeasePeriod.
    m_key_lease_period: u16 = (208, 16),
    /// LocalPortNum.
    local_port_num: u8 = (224, 8),
    /// LinkWidthEnabled.
    link_width_enabled: u8 = (232, 8),
    /// LinkWidthSupported.
    link_width_supported: u8 = (240, 8),
    /// LinkWidthActive.
    link_width_active: u8 = (248, 8),
    /// LinkSpeedSupported (4 bits).
    link_speed_supported: u8 = (256, 4),
    /// PortState (4 bits): 1 Down, 2 Initialize, 3 Armed, 4 Active.
    port_state: u8 = (260, 4),
    /// PortPhysicalState (4 bits): 2 Polling, 3 Disabled, 5 LinkUp, ...
    port_physical_state: u8 = (264, 4),
    /// LinkDownDefaultState (4 bits).
    link_down_default_state: u8 = (268, 4),
    /// M_KeyProtectBits (2 bits).
    m_key_protect_bits: u8 = (272, 2),
    /// LMC (3 bits).
    lmc: u8 = (277, 3),
    /// LinkSpeedActive (4 bits).
    link_speed_active: u8 = (280, 4),
    /// LinkSpeedEnabled (4 bits).
    link_speed_enabled: u8 = (284, 4),
    /// NeighborMTU (4 bits).
    neighbor_mtu: u8 = (288, 4),
    /// MasterSMSL (4 bits).
    master_sm_sl: u8 = (292, 4),
    /// VLCap (4 bits).
    vl_cap: u8 = (296, 4),
    /// InitType (4 bits).
    init_type: u8 = (300, 4),
    /// VLHighLimit.
    vl_high_limit: u8 = (304, 8),
    /// VLArbitrationHighCap.
    vl_arbitration_high_cap: u8 = (312, 8),
    /// VLArbitrationLowCap.
    vl_arbitration_low_cap: u8 = (320, 8),
    /// InitTypeReply (4 bits).
    init_type_reply: u8 = (328, 4),
    /// MTUCap (4 bits).
    mtu_cap: u8 = (332, 4),
    /// VLStallCount (3 bits).
    vl_stall_count: u8 = (336, 3),
    /// HOQLife (5 bits).
    hoq_life: u8 = (339, 5),
    /// OperationalVLs (4 bits).
    operational_vls: u8 = (344, 4),
    /// PartitionEnforcementInbound (1 bit).
    partition_enforcement_inbound: u8 = (348, 1),
    /// PartitionEnforcementOutbound (1 bit).
    partition_enforcement_outbound: u8 = (349, 1),
    /// FilterRawInbound (1 bit).
    filter_raw_inbound: u8 = (350, 1),
    /// FilterRawOutbound (1 bit).
    filter_raw_outbound: u8 = (351, 1),
    /// M_KeyViolations.
    m_key_violations: u16 = (352, 16),
    /// P_KeyViolations.
    p_key_violations: u16 = (368, 16),
    /// Q_KeyViolations.
    q_key_violations: u16 = (384, 16),
    /// GUIDCap.
    guid_cap: u8 = (400, 8),
    /// ClientReregister (1 bit).
    client_reregister: u8 = (408, 1),
    /// MulticastPKeyTrapSuppressionEnabled (2 bits).
    multicast_pkey_trap_suppression_enabled: u8 = (409, 2),
    /// SubnetTimeOut (5 bits).
    subnet_timeout: u8 = (411, 5),
    /// RespTimeValue (5 bits).
    resp_time_value: u8 = (419, 5),
    /// LocalPhyErrors (4 bits).
    local_phy_errors: u8 = (424, 4),
    /// OverrunErrors (4 bits).
    overrun_errors: u8 = (428, 4),
    /// MaxCreditHint.
    max_credit_hint: u16 = (432, 16),
    /// LinkRoundTripLatency (24 bits).
    link_round_trip_latency: u32 = (456, 24),
    /// CapabilityMask2.
    capability_mask2: u16 = (480, 16),
    /// LinkSpeedExtActive (4 bits).
    link_speed_ext_active: u8 = (496, 4),
    /// LinkSpeedExtSupported (4 bits).
    link_speed_ext_supported: u8 = (500, 4),
    /// LinkSpeedExtEnabled (5 bits).
    link_speed_ext_enabled: u8 = (507, 5),
}

impl PortInfo {
    /// AttributeID of PortInfo.
    pub const ATTR_ID: u16 = 0x0015;
}
