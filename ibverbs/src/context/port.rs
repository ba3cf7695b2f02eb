//! Port attributes: `struct ibv_port_attr` from `ibv_query_port`.

use std::fmt;

use bitflags::bitflags;

use crate::context::{raw, Context};
use crate::error::{Error, Result};
use crate::ffi;

/// The logical state of a port (`enum ibv_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PortState {
    /// `IBV_PORT_NOP`: no state change.
    Nop,
    /// `IBV_PORT_DOWN`: the link is down.
    Down,
    /// `IBV_PORT_INIT`: the link is up, waiting for the subnet manager.
    Init,
    /// `IBV_PORT_ARMED`: configured, not yet active.
    Armed,
    /// `IBV_PORT_ACTIVE`: ready to send and receive.
    Active,
    /// `IBV_PORT_ACTIVE_DEFER`: active, but deferring errors.
    ActiveDefer,
    /// A value libibverbs does not name.
    Unknown(u32),
}

impl PortState {
    /// Converts the C value.
    pub fn from_raw(raw: ffi::ibv_port_state) -> Self {
        use ffi::ibv_port_state as S;
        match raw {
            S::IBV_PORT_NOP => PortState::Nop,
            S::IBV_PORT_DOWN => PortState::Down,
            S::IBV_PORT_INIT => PortState::Init,
            S::IBV_PORT_ARMED => PortState::Armed,
            S::IBV_PORT_ACTIVE => PortState::Active,
            S::IBV_PORT_ACTIVE_DEFER => PortState::ActiveDefer,
            other => PortState::Unknown(other.0),
        }
    }

    /// The C value.
    pub fn raw(self) -> u32 {
        use ffi::ibv_port_state as S;
        match self {
            PortState::Nop => S::IBV_PORT_NOP.0,
            PortState::Down => S::IBV_PORT_DOWN.0,
            PortState::Init => S::IBV_PORT_INIT.0,
            PortState::Armed => S::IBV_PORT_ARMED.0,
            PortState::Active => S::IBV_PORT_ACTIVE.0,
            PortState::ActiveDefer => S::IBV_PORT_ACTIVE_DEFER.0,
            PortState::Unknown(raw) => raw,
        }
    }
}

/// The description `ibv_port_state_str` gives, such as `active`.
impl fmt::Display for PortState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = raw::port_state_str(ffi::ibv_port_state(self.raw()));
        f.write_str(&s.to_string_lossy())
    }
}

/// The physical state of a port (`phys_state`, IBTA PortPhysicalState).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PhysState {
    /// 0: no state change.
    NoStateChange,
    /// 1: sleep.
    Sleep,
    /// 2: polling.
    Polling,
    /// 3: disabled.
    Disabled,
    /// 4: port configuration training.
    PortConfigurationTraining,
    /// 5: the link is up.
    LinkUp,
    /// 6: link error recovery.
    LinkErrorRecovery,
    /// 7: PHY test.
    PhyTest,
    /// Another value.
    Unknown(u8),
}

impl PhysState {
    /// Converts the C value.
    pub fn from_raw(raw: u8) -> Self {
        match raw {
            0 => PhysState::NoStateChange,
            1 => PhysState::Sleep,
            2 => PhysState::Polling,
            3 => PhysState::Disabled,
            4 => PhysState::PortConfigurationTraining,
            5 => PhysState::LinkUp,
            6 => PhysState::LinkErrorRecovery,
            7 => PhysState::PhyTest,
            other => PhysState::Unknown(other),
        }
    }

    /// The C value.
    pub fn raw(self) -> u8 {
        match self {
            PhysState::NoStateChange => 0,
            PhysState::Sleep => 1,
            PhysState::Polling => 2,
            PhysState::Disabled => 3,
            PhysState::PortConfigurationTraining => 4,
            PhysState::LinkUp => 5,
            PhysState::LinkErrorRecovery => 6,
            PhysState::PhyTest => 7,
            PhysState::Unknown(raw) => raw,
        }
    }
}

/// The IBTA name, such as `LinkUp`.
impl fmt::Display for PhysState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            PhysState::NoStateChange => "NoStateChange",
            PhysState::Sleep => "Sleep",
            PhysState::Polling => "Polling",
            PhysState::Disabled => "Disabled",
            PhysState::PortConfigurationTraining => "PortConfigurationTraining",
            PhysState::LinkUp => "LinkUp",
            PhysState::LinkErrorRecovery => "LinkErrorRecovery",
            PhysState::PhyTest => "PhyTest",
            PhysState::Unknown(raw) => return write!(f, "unknown ({raw})"),
        };
        f.write_str(name)
    }
}

/// A path MTU (`enum ibv_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mtu {
    /// `IBV_MTU_256`.
    Mtu256,
    /// `IBV_MTU_512`.
    Mtu512,
    /// `IBV_MTU_1024`.
    Mtu1024,
    /// `IBV_MTU_2048`.
    Mtu2048,
    /// `IBV_MTU_4096`.
    Mtu4096,
    /// A value libibverbs does not name.
    Unknown(u32),
}

impl Mtu {
    /// Converts the C value.
    pub fn from_raw(raw: ffi::ibv_mtu) -> Self {
        use ffi::ibv_mtu as M;
        match raw {
            M::IBV_MTU_256 => Mtu::Mtu256,
            M::IBV_MTU_512 => Mtu::Mtu512,
            M::IBV_MTU_1024 => Mtu::Mtu1024,
            M::IBV_MTU_2048 => Mtu::Mtu2048,
            M::IBV_MTU_4096 => Mtu::Mtu4096,
            other => Mtu::Unknown(other.0),
        }
    }

    /// The MTU of `bytes` bytes, if that is one of the IB MTUs.
    pub fn from_bytes(bytes: u32) -> Option<Self> {
        match bytes {
            256 => Some(Mtu::Mtu256),
            512 => Some(Mtu::Mtu512),
            1024 => Some(Mtu::Mtu1024),
            2048 => Some(Mtu::Mtu2048),
            4096 => Some(Mtu::Mtu4096),
            _ => None,
        }
    }

    /// The C value.
    pub fn raw(self) -> u32 {
        use ffi::ibv_mtu as M;
        match self {
            Mtu::Mtu256 => M::IBV_MTU_256.0,
            Mtu::Mtu512 => M::IBV_MTU_512.0,
            Mtu::Mtu1024 => M::IBV_MTU_1024.0,
            Mtu::Mtu2048 => M::IBV_MTU_2048.0,
            Mtu::Mtu4096 => M::IBV_MTU_4096.0,
            Mtu::Unknown(raw) => raw,
        }
    }

    /// The size in bytes; `None` for an unknown value.
    pub fn bytes(self) -> Option<u32> {
        match self {
            Mtu::Mtu256 => Some(256),
            Mtu::Mtu512 => Some(512),
            Mtu::Mtu1024 => Some(1024),
            Mtu::Mtu2048 => Some(2048),
            Mtu::Mtu4096 => Some(4096),
            Mtu::Unknown(_) => None,
        }
    }
}

/// The size in bytes, such as `4096`.
impl fmt::Display for Mtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes() {
            Some(bytes) => write!(f, "{bytes}"),
            None => write!(f, "unknown MTU ({})", self.raw()),
        }
    }
}

/// The number of lanes of a link (`active_width`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Width {
    /// 1 lane (raw value 1).
    X1,
    /// 2 lanes (raw value 16).
    X2,
    /// 4 lanes (raw value 2).
    X4,
    /// 8 lanes (raw value 4).
    X8,
    /// 12 lanes (raw value 8).
    X12,
    /// Another value.
    Unknown(u8),
}

impl Width {
    /// Converts the C value.
    pub fn from_raw(raw: u8) -> Self {
        match raw {
            1 => Width::X1,
            16 => Width::X2,
            2 => Width::X4,
            4 => Width::X8,
            8 => Width::X12,
            other => Width::Unknown(other),
        }
    }

    /// The C value.
    pub fn raw(self) -> u8 {
        match self {
            Width::X1 => 1,
            Width::X2 => 16,
            Width::X4 => 2,
            Width::X8 => 4,
            Width::X12 => 8,
            Width::Unknown(raw) => raw,
        }
    }

    /// The number of lanes; `None` for an unknown value.
    pub fn lanes(self) -> Option<u32> {
        match self {
            Width::X1 => Some(1),
            Width::X2 => Some(2),
            Width::X4 => Some(4),
            Width::X8 => Some(8),
            Width::X12 => Some(12),
            Width::Unknown(_) => None,
        }
    }
}

/// Such as `4X`.
impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lanes() {
            Some(lanes) => write!(f, "{lanes}X"),
            None => write!(f, "unknown width ({})", self.raw()),
        }
    }
}

/// The signalling rate of one lane (`active_speed`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Speed {
    /// SDR, 2.5 Gb/s (raw value 1).
    Sdr,
    /// DDR, 5 Gb/s (raw value 2).
    Ddr,
    /// QDR, 10 Gb/s (raw value 4).
    Qdr,
    /// FDR10, 10 Gb/s (raw value 8).
    Fdr10,
    /// FDR, 14 Gb/s (raw value 16).
    Fdr,
    /// EDR, 25 Gb/s (raw value 32).
    Edr,
    /// HDR, 50 Gb/s (raw value 64).
    Hdr,
    /// NDR, 100 Gb/s (raw value 128).
    Ndr,
    /// Another value.
    Unknown(u8),
}

impl Speed {
    /// Converts the C value.
    pub fn from_raw(raw: u8) -> Self {
        match raw {
            1 => Speed::Sdr,
            2 => Speed::Ddr,
            4 => Speed::Qdr,
            8 => Speed::Fdr10,
            16 => Speed::Fdr,
            32 => Speed::Edr,
            64 => Speed::Hdr,
            128 => Speed::Ndr,
            other => Speed::Unknown(other),
        }
    }

    /// The C value.
    pub fn raw(self) -> u8 {
        match self {
            Speed::Sdr => 1,
            Speed::Ddr => 2,
            Speed::Qdr => 4,
            Speed::Fdr10 => 8,
            Speed::Fdr => 16,
            Speed::Edr => 32,
            Speed::Hdr => 64,
            Speed::Ndr => 128,
            Speed::Unknown(raw) => raw,
        }
    }

    /// The nominal data rate of one lane in Gb/s, as the kernel and `ibv_devinfo` name it
    /// (FDR10 is 10, FDR 14); `None` for an unknown value.
    pub fn lane_gbps(self) -> Option<f64> {
        match self {
            Speed::Sdr => Some(2.5),
            Speed::Ddr => Some(5.0),
            Speed::Qdr | Speed::Fdr10 => Some(10.0),
            Speed::Fdr => Some(14.0),
            Speed::Edr => Some(25.0),
            Speed::Hdr => Some(50.0),
            Speed::Ndr => Some(100.0),
            Speed::Unknown(_) => None,
        }
    }
}

/// The IBTA name, such as `EDR`.
impl fmt::Display for Speed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Speed::Sdr => "SDR",
            Speed::Ddr => "DDR",
            Speed::Qdr => "QDR",
            Speed::Fdr10 => "FDR10",
            Speed::Fdr => "FDR",
            Speed::Edr => "EDR",
            Speed::Hdr => "HDR",
            Speed::Ndr => "NDR",
            Speed::Unknown(raw) => return write!(f, "unknown speed ({raw})"),
        };
        f.write_str(name)
    }
}

/// The link layer of a port (`IBV_LINK_LAYER_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LinkLayer {
    /// `IBV_LINK_LAYER_UNSPECIFIED`.
    Unspecified,
    /// `IBV_LINK_LAYER_INFINIBAND`.
    InfiniBand,
    /// `IBV_LINK_LAYER_ETHERNET`: RoCE (and rxe).
    Ethernet,
    /// Another value.
    Unknown(u8),
}

impl LinkLayer {
    /// Converts the C value.
    pub fn from_raw(raw: u8) -> Self {
        match u32::from(raw) {
            ffi::IBV_LINK_LAYER_UNSPECIFIED => LinkLayer::Unspecified,
            ffi::IBV_LINK_LAYER_INFINIBAND => LinkLayer::InfiniBand,
            ffi::IBV_LINK_LAYER_ETHERNET => LinkLayer::Ethernet,
            _ => LinkLayer::Unknown(raw),
        }
    }

    /// The C value.
    pub fn raw(self) -> u8 {
        // The named values are 0, 1 and 2.
        match self {
            LinkLayer::Unspecified => ffi::IBV_LINK_LAYER_UNSPECIFIED as u8,
            LinkLayer::InfiniBand => ffi::IBV_LINK_LAYER_INFINIBAND as u8,
            LinkLayer::Ethernet => ffi::IBV_LINK_LAYER_ETHERNET as u8,
            LinkLayer::Unknown(raw) => raw,
        }
    }
}

/// `Unspecified`, `InfiniBand` or `Ethernet`.
impl fmt::Display for LinkLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            LinkLayer::Unspecified => "Unspecified",
            LinkLayer::InfiniBand => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
            LinkLayer::Unknown(raw) => return write!(f, "unknown link layer ({raw})"),
        };
        f.write_str(name)
    }
}

bitflags! {
    /// Port capabilities (`enum ibv_port_cap_flags`, IBTA CapabilityMask).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct PortCapFlags: u32 {
        /// `IBV_PORT_SM`: a subnet manager runs on this port.
        const SM = ffi::ibv_port_cap_flags::IBV_PORT_SM.0;
        /// `IBV_PORT_NOTICE_SUP`.
        const NOTICE_SUP = ffi::ibv_port_cap_flags::IBV_PORT_NOTICE_SUP.0;
        /// `IBV_PORT_TRAP_SUP`.
        const TRAP_SUP = ffi::ibv_port_cap_flags::IBV_PORT_TRAP_SUP.0;
        /// `IBV_PORT_OPT_IPD_SUP`.
        const OPT_IPD_SUP = ffi::ibv_port_cap_flags::IBV_PORT_OPT_IPD_SUP.0;
        /// `IBV_PORT_AUTO_MIGR_SUP`.
        const AUTO_MIGR_SUP = ffi::ibv_port_cap_flags::IBV_PORT_AUTO_MIGR_SUP.0;
        /// `IBV_PORT_SL_MAP_SUP`.
        const SL_MAP_SUP = ffi::ibv_port_cap_flags::IBV_PORT_SL_MAP_SUP.0;
        /// `IBV_PORT_MKEY_NVRAM`.
        const MKEY_NVRAM = ffi::ibv_port_cap_flags::IBV_PORT_MKEY_NVRAM.0;
        /// `IBV_PORT_PKEY_NVRAM`.
        const PKEY_NVRAM = ffi::ibv_port_cap_flags::IBV_PORT_PKEY_NVRAM.0;
        /// `IBV_PORT_LED_INFO_SUP`.
        const LED_INFO_SUP = ffi::ibv_port_cap_flags::IBV_PORT_LED_INFO_SUP.0;
        /// `IBV_PORT_SYS_IMAGE_GUID_SUP`.
        const SYS_IMAGE_GUID_SUP = ffi::ibv_port_cap_flags::IBV_PORT_SYS_IMAGE_GUID_SUP.0;
        /// `IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP`.
        const PKEY_SW_EXT_PORT_TRAP_SUP =
            ffi::ibv_port_cap_flags::IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP.0;
        /// `IBV_PORT_EXTENDED_SPEEDS_SUP`.
        const EXTENDED_SPEEDS_SUP = ffi::ibv_port_cap_flags::IBV_PORT_EXTENDED_SPEEDS_SUP.0;
        /// `IBV_PORT_CAP_MASK2_SUP`: `port_cap_flags2` is valid.
        const CAP_MASK2_SUP = ffi::ibv_port_cap_flags::IBV_PORT_CAP_MASK2_SUP.0;
        /// `IBV_PORT_CM_SUP`: connection management.
        const CM_SUP = ffi::ibv_port_cap_flags::IBV_PORT_CM_SUP.0;
        /// `IBV_PORT_SNMP_TUNNEL_SUP`.
        const SNMP_TUNNEL_SUP = ffi::ibv_port_cap_flags::IBV_PORT_SNMP_TUNNEL_SUP.0;
        /// `IBV_PORT_REINIT_SUP`.
        const REINIT_SUP = ffi::ibv_port_cap_flags::IBV_PORT_REINIT_SUP.0;
        /// `IBV_PORT_DEVICE_MGMT_SUP`.
        const DEVICE_MGMT_SUP = ffi::ibv_port_cap_flags::IBV_PORT_DEVICE_MGMT_SUP.0;
        /// `IBV_PORT_VENDOR_CLASS_SUP`.
        const VENDOR_CLASS_SUP = ffi::ibv_port_cap_flags::IBV_PORT_VENDOR_CLASS_SUP.0;
        /// `IBV_PORT_DR_NOTICE_SUP`.
        const DR_NOTICE_SUP = ffi::ibv_port_cap_flags::IBV_PORT_DR_NOTICE_SUP.0;
        /// `IBV_PORT_CAP_MASK_NOTICE_SUP`.
        const CAP_MASK_NOTICE_SUP = ffi::ibv_port_cap_flags::IBV_PORT_CAP_MASK_NOTICE_SUP.0;
        /// `IBV_PORT_BOOT_MGMT_SUP`.
        const BOOT_MGMT_SUP = ffi::ibv_port_cap_flags::IBV_PORT_BOOT_MGMT_SUP.0;
        /// `IBV_PORT_LINK_LATENCY_SUP`.
        const LINK_LATENCY_SUP = ffi::ibv_port_cap_flags::IBV_PORT_LINK_LATENCY_SUP.0;
        /// `IBV_PORT_CLIENT_REG_SUP`.
        const CLIENT_REG_SUP = ffi::ibv_port_cap_flags::IBV_PORT_CLIENT_REG_SUP.0;
        /// `IBV_PORT_IP_BASED_GIDS`: GIDs follow the netdev's IP addresses (RoCE).
        const IP_BASED_GIDS = ffi::ibv_port_cap_flags::IBV_PORT_IP_BASED_GIDS.0;
        // Bits a newer provider sets are kept.
        const _ = !0;
    }

    /// More port capabilities (`enum ibv_port_cap_flags2`, IBTA CapabilityMask2).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct PortCapFlags2: u16 {
        /// `IBV_PORT_SET_NODE_DESC_SUP`.
        const SET_NODE_DESC_SUP = ffi::ibv_port_cap_flags2::IBV_PORT_SET_NODE_DESC_SUP.0 as u16;
        /// `IBV_PORT_INFO_EXT_SUP`.
        const INFO_EXT_SUP = ffi::ibv_port_cap_flags2::IBV_PORT_INFO_EXT_SUP.0 as u16;
        /// `IBV_PORT_VIRT_SUP`.
        const VIRT_SUP = ffi::ibv_port_cap_flags2::IBV_PORT_VIRT_SUP.0 as u16;
        /// `IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP`.
        const SWITCH_PORT_STATE_TABLE_SUP =
            ffi::ibv_port_cap_flags2::IBV_PORT_SWITCH_PORT_STATE_TABLE_SUP.0 as u16;
        /// `IBV_PORT_LINK_WIDTH_2X_SUP`.
        const LINK_WIDTH_2X_SUP = ffi::ibv_port_cap_flags2::IBV_PORT_LINK_WIDTH_2X_SUP.0 as u16;
        /// `IBV_PORT_LINK_SPEED_HDR_SUP`.
        const LINK_SPEED_HDR_SUP = ffi::ibv_port_cap_flags2::IBV_PORT_LINK_SPEED_HDR_SUP.0 as u16;
        /// `IBV_PORT_LINK_SPEED_NDR_SUP`.
        const LINK_SPEED_NDR_SUP = ffi::ibv_port_cap_flags2::IBV_PORT_LINK_SPEED_NDR_SUP.0 as u16;
        // Bits a newer provider sets are kept.
        const _ = !0;
    }
}

/// `IBV_QPF_GRH_REQUIRED` (`IB_UVERBS_QPF_GRH_REQUIRED`), a macro bindgen cannot bind.
const QPF_GRH_REQUIRED: u8 = 1;

/// The attributes of a port (`struct ibv_port_attr`), from [`Context::query_port`].
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct PortAttr {
    /// Logical state.
    pub state: PortState,
    /// Largest MTU the port supports.
    pub max_mtu: Mtu,
    /// MTU in use.
    pub active_mtu: Mtu,
    /// Size of the GID table.
    pub gid_tbl_len: u32,
    /// Capabilities.
    pub port_cap_flags: PortCapFlags,
    /// Largest message in bytes.
    pub max_msg_sz: u32,
    /// Bad P_Key counter.
    pub bad_pkey_cntr: u32,
    /// Q_Key violation counter.
    pub qkey_viol_cntr: u32,
    /// Size of the P_Key table.
    pub pkey_tbl_len: u16,
    /// Base LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// LID of the subnet manager.
    pub sm_lid: u16,
    /// LID mask control: the port has `2^lmc` LIDs.
    pub lmc: u8,
    /// Most virtual lanes, encoded (see [`PortAttr::max_vls`]).
    pub max_vl_num: u8,
    /// Service level of the subnet manager.
    pub sm_sl: u8,
    /// Subnet propagation delay (`4.096 us * 2^subnet_timeout`).
    pub subnet_timeout: u8,
    /// InitTypeReply from the subnet manager.
    pub init_type_reply: u8,
    /// Number of lanes.
    pub active_width: Width,
    /// Lane speed.
    pub active_speed: Speed,
    /// Physical state.
    pub phys_state: PhysState,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// Whether address handles for this port need a GRH (`IBV_QPF_GRH_REQUIRED`).
    pub grh_required: bool,
    /// More capabilities.
    pub port_cap_flags2: PortCapFlags2,
    raw: ffi::ibv_port_attr,
}

impl PortAttr {
    /// Converts the C structure.
    pub fn from_raw(raw: ffi::ibv_port_attr) -> Self {
        PortAttr {
            state: PortState::from_raw(raw.state),
            max_mtu: Mtu::from_raw(raw.max_mtu),
            active_mtu: Mtu::from_raw(raw.active_mtu),
            gid_tbl_len: u32::try_from(raw.gid_tbl_len).unwrap_or(0),
            port_cap_flags: PortCapFlags::from_bits_retain(raw.port_cap_flags),
            max_msg_sz: raw.max_msg_sz,
            bad_pkey_cntr: raw.bad_pkey_cntr,
            qkey_viol_cntr: raw.qkey_viol_cntr,
            pkey_tbl_len: raw.pkey_tbl_len,
            lid: raw.lid,
            sm_lid: raw.sm_lid,
            lmc: raw.lmc,
            max_vl_num: raw.max_vl_num,
            sm_sl: raw.sm_sl,
            subnet_timeout: raw.subnet_timeout,
            init_type_reply: raw.init_type_reply,
            active_width: Width::from_raw(raw.active_width),
            active_speed: Speed::from_raw(raw.active_speed),
            phys_state: PhysState::from_raw(raw.phys_state),
            link_layer: LinkLayer::from_raw(raw.link_layer),
            grh_required: raw.flags & QPF_GRH_REQUIRED != 0,
            port_cap_flags2: PortCapFlags2::from_bits_retain(raw.port_cap_flags2),
            raw,
        }
    }

    /// The C structure as `ibv_query_port` filled it.
    pub fn as_raw(&self) -> &ffi::ibv_port_attr {
        &self.raw
    }

    /// The link's nominal data rate in Gb/s: lanes times lane speed, such as 100 for 4X EDR;
    /// `None` if the width or speed is unknown.
    pub fn rate_gbps(&self) -> Option<f64> {
        Some(f64::from(self.active_width.lanes()?) * self.active_speed.lane_gbps()?)
    }

    /// The number of data virtual lanes `max_vl_num` encodes (1, 2, 4, 8 or 15).
    pub fn max_vls(&self) -> Option<u8> {
        match self.max_vl_num {
            1 => Some(1),
            2 => Some(2),
            3 => Some(4),
            4 => Some(8),
            5 => Some(15),
            _ => None,
        }
    }
}

impl Context {
    /// The number of physical ports (`phys_port_cnt` of `ibv_query_device`).
    pub fn port_count(&self) -> Result<u8> {
        Ok(self.device_limits()?.phys_port_cnt)
    }

    /// Queries the attributes of port `port` (`ibv_query_port`); ports are numbered from 1.
    ///
    /// Fails with [`Error::OutOfRange`] if the device has no such port.
    pub fn query_port(&self, port: u8) -> Result<PortAttr> {
        let count = self.port_count()?;
        if port == 0 || port > count {
            return Err(Error::OutOfRange {
                what: "port",
                value: port.into(),
                min: 1,
                max: count.into(),
            });
        }
        Ok(PortAttr::from_raw(self.inner.raw.query_port(port)?))
    }
}
