//! Device attributes: `struct ibv_device_attr_ex` from `ibv_query_device_ex`.

use std::ffi::c_int;

use bitflags::bitflags;

use crate::context::Context;
use crate::error::Result;
use crate::ffi;

bitflags! {
    /// Device capabilities (`enum ibv_device_cap_flags`, and the high bits of
    /// `device_cap_flags_ex`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct DeviceCapFlags: u64 {
        /// `IBV_DEVICE_RESIZE_MAX_WR`: QPs can be resized.
        const RESIZE_MAX_WR = ffi::ibv_device_cap_flags::IBV_DEVICE_RESIZE_MAX_WR.0 as u64;
        /// `IBV_DEVICE_BAD_PKEY_CNTR`: bad P_Key counter.
        const BAD_PKEY_CNTR = ffi::ibv_device_cap_flags::IBV_DEVICE_BAD_PKEY_CNTR.0 as u64;
        /// `IBV_DEVICE_BAD_QKEY_CNTR`: bad Q_Key counter.
        const BAD_QKEY_CNTR = ffi::ibv_device_cap_flags::IBV_DEVICE_BAD_QKEY_CNTR.0 as u64;
        /// `IBV_DEVICE_RAW_MULTI`: raw packet multicast.
        const RAW_MULTI = ffi::ibv_device_cap_flags::IBV_DEVICE_RAW_MULTI.0 as u64;
        /// `IBV_DEVICE_AUTO_PATH_MIG`: automatic path migration.
        const AUTO_PATH_MIG = ffi::ibv_device_cap_flags::IBV_DEVICE_AUTO_PATH_MIG.0 as u64;
        /// `IBV_DEVICE_CHANGE_PHY_PORT`: a QP's primary port can be changed.
        const CHANGE_PHY_PORT = ffi::ibv_device_cap_flags::IBV_DEVICE_CHANGE_PHY_PORT.0 as u64;
        /// `IBV_DEVICE_UD_AV_PORT_ENFORCE`: the AH port of UD QPs is enforced.
        const UD_AV_PORT_ENFORCE =
            ffi::ibv_device_cap_flags::IBV_DEVICE_UD_AV_PORT_ENFORCE.0 as u64;
        /// `IBV_DEVICE_CURR_QP_STATE_MOD`: the current QP state can be given on modify.
        const CURR_QP_STATE_MOD = ffi::ibv_device_cap_flags::IBV_DEVICE_CURR_QP_STATE_MOD.0 as u64;
        /// `IBV_DEVICE_SHUTDOWN_PORT`: ports can be shut down.
        const SHUTDOWN_PORT = ffi::ibv_device_cap_flags::IBV_DEVICE_SHUTDOWN_PORT.0 as u64;
        /// `IBV_DEVICE_INIT_TYPE`: InitType and InitTypeReply.
        const INIT_TYPE = ffi::ibv_device_cap_flags::IBV_DEVICE_INIT_TYPE.0 as u64;
        /// `IBV_DEVICE_PORT_ACTIVE_EVENT`: the port active event is generated.
        const PORT_ACTIVE_EVENT = ffi::ibv_device_cap_flags::IBV_DEVICE_PORT_ACTIVE_EVENT.0 as u64;
        /// `IBV_DEVICE_SYS_IMAGE_GUID`: system image GUID.
        const SYS_IMAGE_GUID = ffi::ibv_device_cap_flags::IBV_DEVICE_SYS_IMAGE_GUID.0 as u64;
        /// `IBV_DEVICE_RC_RNR_NAK_GEN`: RNR NAKs are generated on RC QPs.
        const RC_RNR_NAK_GEN = ffi::ibv_device_cap_flags::IBV_DEVICE_RC_RNR_NAK_GEN.0 as u64;
        /// `IBV_DEVICE_SRQ_RESIZE`: SRQs can be resized.
        const SRQ_RESIZE = ffi::ibv_device_cap_flags::IBV_DEVICE_SRQ_RESIZE.0 as u64;
        /// `IBV_DEVICE_N_NOTIFY_CQ`: notification after N completions.
        const N_NOTIFY_CQ = ffi::ibv_device_cap_flags::IBV_DEVICE_N_NOTIFY_CQ.0 as u64;
        /// `IBV_DEVICE_MEM_WINDOW`: memory windows.
        const MEM_WINDOW = ffi::ibv_device_cap_flags::IBV_DEVICE_MEM_WINDOW.0 as u64;
        /// `IBV_DEVICE_UD_IP_CSUM`: IP checksum offload on UD QPs.
        const UD_IP_CSUM = ffi::ibv_device_cap_flags::IBV_DEVICE_UD_IP_CSUM.0 as u64;
        /// `IBV_DEVICE_XRC`: XRC transport.
        const XRC = ffi::ibv_device_cap_flags::IBV_DEVICE_XRC.0 as u64;
        /// `IBV_DEVICE_MEM_MGT_EXTENSIONS`: memory management extensions.
        const MEM_MGT_EXTENSIONS =
            ffi::ibv_device_cap_flags::IBV_DEVICE_MEM_MGT_EXTENSIONS.0 as u64;
        /// `IBV_DEVICE_MEM_WINDOW_TYPE_2A`: type 2A memory windows.
        const MEM_WINDOW_TYPE_2A =
            ffi::ibv_device_cap_flags::IBV_DEVICE_MEM_WINDOW_TYPE_2A.0 as u64;
        /// `IBV_DEVICE_MEM_WINDOW_TYPE_2B`: type 2B memory windows.
        const MEM_WINDOW_TYPE_2B =
            ffi::ibv_device_cap_flags::IBV_DEVICE_MEM_WINDOW_TYPE_2B.0 as u64;
        /// `IBV_DEVICE_RC_IP_CSUM`: IP checksum offload on RC QPs.
        const RC_IP_CSUM = ffi::ibv_device_cap_flags::IBV_DEVICE_RC_IP_CSUM.0 as u64;
        /// `IBV_DEVICE_RAW_IP_CSUM`: IP checksum offload on raw packet QPs.
        const RAW_IP_CSUM = ffi::ibv_device_cap_flags::IBV_DEVICE_RAW_IP_CSUM.0 as u64;
        /// `IBV_DEVICE_MANAGED_FLOW_STEERING`: flow steering.
        const MANAGED_FLOW_STEERING =
            ffi::ibv_device_cap_flags::IBV_DEVICE_MANAGED_FLOW_STEERING.0 as u64;
        /// `IBV_DEVICE_RAW_SCATTER_FCS`: the FCS can be scattered on raw packet QPs.
        const RAW_SCATTER_FCS = ffi::IBV_DEVICE_RAW_SCATTER_FCS;
        /// `IBV_DEVICE_PCI_WRITE_END_PADDING`: PCI writes can be padded to a cache line.
        const PCI_WRITE_END_PADDING = ffi::IBV_DEVICE_PCI_WRITE_END_PADDING;
        /// `IB_UVERBS_DEVICE_ATOMIC_WRITE` (bit 40 of the kernel's `device_cap_flags_ex`,
        /// which this rdma-core does not name): atomic write (`IBV_WR_ATOMIC_WRITE`).
        const ATOMIC_WRITE = 1 << 40;
        // Bits a newer provider sets are kept.
        const _ = !0;
    }

    /// General on-demand paging capabilities (`enum ibv_odp_general_caps`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct OdpGeneralCaps: u64 {
        /// `IBV_ODP_SUPPORT`: on-demand paging.
        const SUPPORT = ffi::ibv_odp_general_caps::IBV_ODP_SUPPORT.0 as u64;
        /// `IBV_ODP_SUPPORT_IMPLICIT`: implicit ODP (the whole address space).
        const SUPPORT_IMPLICIT = ffi::ibv_odp_general_caps::IBV_ODP_SUPPORT_IMPLICIT.0 as u64;
        // Bits a newer provider sets are kept.
        const _ = !0;
    }

    /// The operations that support on-demand paging on one transport
    /// (`enum ibv_odp_transport_cap_bits`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct OdpTransportCaps: u32 {
        /// `IBV_ODP_SUPPORT_SEND`.
        const SEND = ffi::ibv_odp_transport_cap_bits::IBV_ODP_SUPPORT_SEND.0;
        /// `IBV_ODP_SUPPORT_RECV`.
        const RECV = ffi::ibv_odp_transport_cap_bits::IBV_ODP_SUPPORT_RECV.0;
        /// `IBV_ODP_SUPPORT_WRITE`.
        const WRITE = ffi::ibv_odp_transport_cap_bits::IBV_ODP_SUPPORT_WRITE.0;
        /// `IBV_ODP_SUPPORT_READ`.
        const READ = ffi::ibv_odp_transport_cap_bits::IBV_ODP_SUPPORT_READ.0;
        /// `IBV_ODP_SUPPORT_ATOMIC`.
        const ATOMIC = ffi::ibv_odp_transport_cap_bits::IBV_ODP_SUPPORT_ATOMIC.0;
        /// `IBV_ODP_SUPPORT_SRQ_RECV`.
        const SRQ_RECV = ffi::ibv_odp_transport_cap_bits::IBV_ODP_SUPPORT_SRQ_RECV.0;
        // Bits a newer provider sets are kept.
        const _ = !0;
    }

    /// Offloads of raw packet QPs (`enum ibv_raw_packet_caps`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct RawPacketCaps: u32 {
        /// `IBV_RAW_PACKET_CAP_CVLAN_STRIPPING`: C-VLAN stripping.
        const CVLAN_STRIPPING = ffi::ibv_raw_packet_caps::IBV_RAW_PACKET_CAP_CVLAN_STRIPPING.0;
        /// `IBV_RAW_PACKET_CAP_SCATTER_FCS`: scattering the FCS.
        const SCATTER_FCS = ffi::ibv_raw_packet_caps::IBV_RAW_PACKET_CAP_SCATTER_FCS.0;
        /// `IBV_RAW_PACKET_CAP_IP_CSUM`: IP checksum offload.
        const IP_CSUM = ffi::ibv_raw_packet_caps::IBV_RAW_PACKET_CAP_IP_CSUM.0;
        /// `IBV_RAW_PACKET_CAP_DELAY_DROP`: delay drop.
        const DELAY_DROP = ffi::ibv_raw_packet_caps::IBV_RAW_PACKET_CAP_DELAY_DROP.0;
        // Bits a newer provider sets are kept.
        const _ = !0;
    }
}

/// How atomic operations are guaranteed (`enum ibv_atomic_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AtomicCap {
    /// `IBV_ATOMIC_NONE`: no atomic operations.
    None,
    /// `IBV_ATOMIC_HCA`: atomic between the QPs of this device.
    Hca,
    /// `IBV_ATOMIC_GLOB`: atomic with respect to every other agent, CPUs included.
    Glob,
    /// A value libibverbs does not name.
    Unknown(u32),
}

impl AtomicCap {
    /// Converts the C value.
    pub fn from_raw(raw: ffi::ibv_atomic_cap) -> Self {
        use ffi::ibv_atomic_cap as A;
        match raw {
            A::IBV_ATOMIC_NONE => AtomicCap::None,
            A::IBV_ATOMIC_HCA => AtomicCap::Hca,
            A::IBV_ATOMIC_GLOB => AtomicCap::Glob,
            other => AtomicCap::Unknown(other.0),
        }
    }

    /// The C value.
    pub fn raw(self) -> u32 {
        use ffi::ibv_atomic_cap as A;
        match self {
            AtomicCap::None => A::IBV_ATOMIC_NONE.0,
            AtomicCap::Hca => A::IBV_ATOMIC_HCA.0,
            AtomicCap::Glob => A::IBV_ATOMIC_GLOB.0,
            AtomicCap::Unknown(raw) => raw,
        }
    }
}

/// On-demand paging capabilities (`struct ibv_odp_caps` and `xrc_odp_caps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OdpCaps {
    /// General capabilities.
    pub general: OdpGeneralCaps,
    /// Operations of RC QPs.
    pub rc: OdpTransportCaps,
    /// Operations of UC QPs.
    pub uc: OdpTransportCaps,
    /// Operations of UD QPs.
    pub ud: OdpTransportCaps,
    /// Operations of XRC QPs.
    pub xrc: OdpTransportCaps,
}

/// TCP segmentation offload (`struct ibv_tso_caps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TsoCaps {
    /// Largest TSO payload in bytes; 0 without TSO.
    pub max_tso: u32,
    /// QP types with TSO: bit `n` is `enum ibv_qp_type` value `n` (`ibv_is_qpt_supported`).
    pub supported_qpts: u32,
}

/// Receive-side scaling (`struct ibv_rss_caps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RssCaps {
    /// QP types with RSS, one bit per `enum ibv_qp_type` value.
    pub supported_qpts: u32,
    /// Most receive WQ indirection tables.
    pub max_rwq_indirection_tables: u32,
    /// Most entries in one indirection table.
    pub max_rwq_indirection_table_size: u32,
    /// Packet fields the hash can use (`enum ibv_rx_hash_fields`).
    pub rx_hash_fields_mask: u64,
    /// Hash functions (`enum ibv_rx_hash_function_flags`).
    pub rx_hash_function: u8,
}

/// Rate limiting of QPs (`struct ibv_packet_pacing_caps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PacketPacingCaps {
    /// Lowest rate limit in kbps.
    pub qp_rate_limit_min: u32,
    /// Highest rate limit in kbps; 0 without packet pacing.
    pub qp_rate_limit_max: u32,
    /// QP types with packet pacing, one bit per `enum ibv_qp_type` value.
    pub supported_qpts: u32,
}

/// Tag matching (`struct ibv_tm_caps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TmCaps {
    /// Largest rendezvous header.
    pub max_rndv_hdr_size: u32,
    /// Most tags; 0 without tag matching.
    pub max_num_tags: u32,
    /// `enum ibv_tm_cap_flags`.
    pub flags: u32,
    /// Most outstanding list operations.
    pub max_ops: u32,
    /// Most SGEs in a tagged buffer.
    pub max_sge: u32,
}

/// CQ moderation (`struct ibv_cq_moderation_caps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CqModerationCaps {
    /// Most completions per event.
    pub max_cq_count: u16,
    /// Longest moderation period in microseconds.
    pub max_cq_period: u16,
}

/// Atomic operations from PCI (`struct ibv_pci_atomic_caps`), as operand sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PciAtomicCaps {
    /// Fetch-and-add.
    pub fetch_add: u16,
    /// Swap.
    pub swap: u16,
    /// Compare-and-swap.
    pub compare_swap: u16,
}

/// The attributes of a device (`struct ibv_device_attr_ex`), from [`Context::query_device`].
///
/// Counts that C declares as `int` are `u32` here (a negative value, which no provider
/// reports, reads as 0). [`DeviceAttr::as_raw`] gives the C structure as queried.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DeviceAttr {
    /// Firmware version, such as `16.35.2000`.
    pub fw_ver: String,
    /// Node GUID, in host byte order.
    pub node_guid: u64,
    /// System image GUID, in host byte order.
    pub sys_image_guid: u64,
    /// Largest memory region in bytes.
    pub max_mr_size: u64,
    /// Supported page sizes: bit `n` means pages of `2^n` bytes.
    pub page_size_cap: u64,
    /// IEEE vendor ID.
    pub vendor_id: u32,
    /// Vendor part ID.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Most QPs.
    pub max_qp: u32,
    /// Most outstanding work requests on a QP.
    pub max_qp_wr: u32,
    /// Capabilities: `device_cap_flags` with the high bits of `device_cap_flags_ex`.
    pub device_cap_flags: DeviceCapFlags,
    /// Most SGEs per work request of non-RD QPs.
    pub max_sge: u32,
    /// Most SGEs per work request of RD QPs.
    pub max_sge_rd: u32,
    /// Most CQs.
    pub max_cq: u32,
    /// Most entries in a CQ.
    pub max_cqe: u32,
    /// Most memory regions.
    pub max_mr: u32,
    /// Most protection domains.
    pub max_pd: u32,
    /// Most outstanding RDMA reads and atomics a QP can answer.
    pub max_qp_rd_atom: u32,
    /// Most outstanding RDMA reads and atomics an EE context can answer.
    pub max_ee_rd_atom: u32,
    /// Most resources for incoming RDMA reads and atomics.
    pub max_res_rd_atom: u32,
    /// Most outstanding RDMA reads and atomics a QP can initiate.
    pub max_qp_init_rd_atom: u32,
    /// Most outstanding RDMA reads and atomics an EE context can initiate.
    pub max_ee_init_rd_atom: u32,
    /// Atomicity guarantee.
    pub atomic_cap: AtomicCap,
    /// Most EE contexts.
    pub max_ee: u32,
    /// Most reliable datagram domains.
    pub max_rdd: u32,
    /// Most memory windows.
    pub max_mw: u32,
    /// Most raw IPv6 datagram QPs.
    pub max_raw_ipv6_qp: u32,
    /// Most raw Ethertype datagram QPs.
    pub max_raw_ethy_qp: u32,
    /// Most multicast groups.
    pub max_mcast_grp: u32,
    /// Most QPs attached to one multicast group.
    pub max_mcast_qp_attach: u32,
    /// Most QP attachments to multicast groups in total.
    pub max_total_mcast_qp_attach: u32,
    /// Most address handles.
    pub max_ah: u32,
    /// Most fast memory regions.
    pub max_fmr: u32,
    /// Most remaps per FMR before an unmap.
    pub max_map_per_fmr: u32,
    /// Most SRQs.
    pub max_srq: u32,
    /// Most work requests in an SRQ.
    pub max_srq_wr: u32,
    /// Most SGEs per SRQ work request.
    pub max_srq_sge: u32,
    /// Number of partition keys.
    pub max_pkeys: u16,
    /// Local CA ack delay (`4.096 us * 2^local_ca_ack_delay`).
    pub local_ca_ack_delay: u8,
    /// Number of physical ports.
    pub phys_port_cnt: u8,
    /// On-demand paging.
    pub odp_caps: OdpCaps,
    /// Valid bits of completion timestamps; 0 without timestamps.
    pub completion_timestamp_mask: u64,
    /// Frequency of the completion timestamp clock in kHz; 0 if unknown.
    pub hca_core_clock: u64,
    /// TCP segmentation offload.
    pub tso_caps: TsoCaps,
    /// Receive-side scaling.
    pub rss_caps: RssCaps,
    /// Most receive work queues (`ibv_create_wq`).
    pub max_wq_type_rq: u32,
    /// Packet pacing.
    pub packet_pacing_caps: PacketPacingCaps,
    /// Offloads of raw packet QPs.
    pub raw_packet_caps: RawPacketCaps,
    /// Tag matching.
    pub tm_caps: TmCaps,
    /// CQ moderation.
    pub cq_mod_caps: CqModerationCaps,
    /// Device memory in bytes (`ibv_alloc_dm`); 0 without.
    pub max_dm_size: u64,
    /// Atomic operations from PCI.
    pub pci_atomic_caps: PciAtomicCaps,
    /// Number of ports, also beyond the 255 `phys_port_cnt` can count.
    pub phys_port_cnt_ex: u32,
    raw: ffi::ibv_device_attr_ex,
}

/// A C `int` count: negative values, which no provider reports, become 0.
fn count(value: c_int) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

impl DeviceAttr {
    /// Converts the C structure.
    pub fn from_raw(raw: ffi::ibv_device_attr_ex) -> Self {
        let o = &raw.orig_attr;
        let fw_ver: Vec<u8> = o
            .fw_ver
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        let high_bits = raw.device_cap_flags_ex & !u64::from(u32::MAX);
        DeviceAttr {
            fw_ver: String::from_utf8_lossy(&fw_ver).into_owned(),
            node_guid: u64::from_be(o.node_guid),
            sys_image_guid: u64::from_be(o.sys_image_guid),
            max_mr_size: o.max_mr_size,
            page_size_cap: o.page_size_cap,
            vendor_id: o.vendor_id,
            vendor_part_id: o.vendor_part_id,
            hw_ver: o.hw_ver,
            max_qp: count(o.max_qp),
            max_qp_wr: count(o.max_qp_wr),
            device_cap_flags: DeviceCapFlags::from_bits_retain(
                u64::from(o.device_cap_flags) | high_bits,
            ),
            max_sge: count(o.max_sge),
            max_sge_rd: count(o.max_sge_rd),
            max_cq: count(o.max_cq),
            max_cqe: count(o.max_cqe),
            max_mr: count(o.max_mr),
            max_pd: count(o.max_pd),
            max_qp_rd_atom: count(o.max_qp_rd_atom),
            max_ee_rd_atom: count(o.max_ee_rd_atom),
            max_res_rd_atom: count(o.max_res_rd_atom),
            max_qp_init_rd_atom: count(o.max_qp_init_rd_atom),
            max_ee_init_rd_atom: count(o.max_ee_init_rd_atom),
            atomic_cap: AtomicCap::from_raw(o.atomic_cap),
            max_ee: count(o.max_ee),
            max_rdd: count(o.max_rdd),
            max_mw: count(o.max_mw),
            max_raw_ipv6_qp: count(o.max_raw_ipv6_qp),
            max_raw_ethy_qp: count(o.max_raw_ethy_qp),
            max_mcast_grp: count(o.max_mcast_grp),
            max_mcast_qp_attach: count(o.max_mcast_qp_attach),
            max_total_mcast_qp_attach: count(o.max_total_mcast_qp_attach),
            max_ah: count(o.max_ah),
            max_fmr: count(o.max_fmr),
            max_map_per_fmr: count(o.max_map_per_fmr),
            max_srq: count(o.max_srq),
            max_srq_wr: count(o.max_srq_wr),
            max_srq_sge: count(o.max_srq_sge),
            max_pkeys: o.max_pkeys,
            local_ca_ack_delay: o.local_ca_ack_delay,
            phys_port_cnt: o.phys_port_cnt,
            odp_caps: OdpCaps {
                general: OdpGeneralCaps::from_bits_retain(raw.odp_caps.general_caps),
                rc: OdpTransportCaps::from_bits_retain(raw.odp_caps.per_transport_caps.rc_odp_caps),
                uc: OdpTransportCaps::from_bits_retain(raw.odp_caps.per_transport_caps.uc_odp_caps),
                ud: OdpTransportCaps::from_bits_retain(raw.odp_caps.per_transport_caps.ud_odp_caps),
                xrc: OdpTransportCaps::from_bits_retain(raw.xrc_odp_caps),
            },
            completion_timestamp_mask: raw.completion_timestamp_mask,
            hca_core_clock: raw.hca_core_clock,
            tso_caps: TsoCaps {
                max_tso: raw.tso_caps.max_tso,
                supported_qpts: raw.tso_caps.supported_qpts,
            },
            rss_caps: RssCaps {
                supported_qpts: raw.rss_caps.supported_qpts,
                max_rwq_indirection_tables: raw.rss_caps.max_rwq_indirection_tables,
                max_rwq_indirection_table_size: raw.rss_caps.max_rwq_indirection_table_size,
                rx_hash_fields_mask: raw.rss_caps.rx_hash_fields_mask,
                rx_hash_function: raw.rss_caps.rx_hash_function,
            },
            max_wq_type_rq: raw.max_wq_type_rq,
            packet_pacing_caps: PacketPacingCaps {
                qp_rate_limit_min: raw.packet_pacing_caps.qp_rate_limit_min,
                qp_rate_limit_max: raw.packet_pacing_caps.qp_rate_limit_max,
                supported_qpts: raw.packet_pacing_caps.supported_qpts,
            },
            raw_packet_caps: RawPacketCaps::from_bits_retain(raw.raw_packet_caps),
            tm_caps: TmCaps {
                max_rndv_hdr_size: raw.tm_caps.max_rndv_hdr_size,
                max_num_tags: raw.tm_caps.max_num_tags,
                flags: raw.tm_caps.flags,
                max_ops: raw.tm_caps.max_ops,
                max_sge: raw.tm_caps.max_sge,
            },
            cq_mod_caps: CqModerationCaps {
                max_cq_count: raw.cq_mod_caps.max_cq_count,
                max_cq_period: raw.cq_mod_caps.max_cq_period,
            },
            max_dm_size: raw.max_dm_size,
            pci_atomic_caps: PciAtomicCaps {
                fetch_add: raw.pci_atomic_caps.fetch_add,
                swap: raw.pci_atomic_caps.swap,
                compare_swap: raw.pci_atomic_caps.compare_swap,
            },
            phys_port_cnt_ex: raw.phys_port_cnt_ex,
            raw,
        }
    }

    /// The C structure as `ibv_query_device_ex` filled it.
    pub fn as_raw(&self) -> &ffi::ibv_device_attr_ex {
        &self.raw
    }
}

impl Context {
    /// Queries the device's attributes (`ibv_query_device_ex`, which falls back to
    /// `ibv_query_device` for providers without the extended query).
    pub fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr::from_raw(self.inner.raw.query_device_ex()?))
    }

    /// Number of completion vectors for `ibv_create_cq` (`ibv_context::num_comp_vectors`).
    pub fn num_comp_vectors(&self) -> u32 {
        count(self.inner.raw.num_comp_vectors())
    }
}
