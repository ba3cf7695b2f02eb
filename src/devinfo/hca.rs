//! The device block of `ibv_devinfo` (rdma-core's `print_hca_cap`, up to the ports): a
//! few identity lines, and with `-v` every limit and capability of the device, section by
//! section in the C tool's order.

use std::fmt::{self, Write};

use rdma_verbs::ffi;
use rdma_verbs::{DeviceAttr, Transport};

use super::caps;
use super::names;

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
pub fn write(out: &mut impl Write, hca: &Hca<'_>, verbose: bool) -> fmt::Result {
    let a = hca.attr;
    writeln!(out, "hca_id:\t{}", hca.name)?;
    writeln!(
        out,
        "\ttransport:\t\t\t{} ({})",
        names::transport(hca.transport),
        names::transport_value(hca.transport)
    )?;
    if !a.fw_ver.is_empty() {
        writeln!(out, "\tfw_ver:\t\t\t\t{}", a.fw_ver)?;
    }
    writeln!(out, "\tnode_guid:\t\t\t{}", names::guid(a.node_guid))?;
    writeln!(
        out,
        "\tsys_image_guid:\t\t\t{}",
        names::guid(a.sys_image_guid)
    )?;
    writeln!(out, "\tvendor_id:\t\t\t0x{:04x}", a.vendor_id)?;
    // %d of an unsigned field.
    writeln!(out, "\tvendor_part_id:\t\t\t{}", a.vendor_part_id as i32)?;
    writeln!(out, "\thw_ver:\t\t\t\t0x{:X}", a.hw_ver)?;
    if let Some(board_id) = hca.board_id {
        writeln!(out, "\tboard_id:\t\t\t{board_id}")?;
    }
    writeln!(out, "\tphys_port_cnt:\t\t\t{}", a.phys_port_cnt)?;
    if verbose {
        write_verbose(out, hca)?;
    }
    Ok(())
}

/// What `-v` adds to the device block.
fn write_verbose(out: &mut impl Write, hca: &Hca<'_>) -> fmt::Result {
    let a = hca.attr;
    write_resource_limits(out, a)?;
    write_rdma_read_limits(out, a)?;
    write_object_limits(out, a)?;
    write_odp(out, a)?;
    write_clock(out, a)?;
    if !a.raw_packet_caps.is_empty() {
        writeln!(out, "\traw packet caps:")?;
        caps::write_raw_packet(out, a.raw_packet_caps)?;
    }
    let flags_ex = a.as_raw().device_cap_flags_ex;
    writeln!(out, "\tdevice_cap_flags_ex:\t\t0x{flags_ex:X}")?;
    caps::write_device_cap_flags_ex(out, flags_ex)?;
    write_tso(out, a)?;
    write_rss(out, a)?;
    writeln!(out, "\tmax_wq_type_rq:\t\t\t{}", a.max_wq_type_rq)?;
    write_packet_pacing(out, a)?;
    write_tag_matching(out, a)?;
    write_cq_moderation(out, a)?;
    if a.max_dm_size != 0 {
        writeln!(
            out,
            "\tmaximum available device memory:\t{}Bytes\n",
            a.max_dm_size
        )?;
    }
    writeln!(out, "\tnum_comp_vectors:\t\t{}", hca.num_comp_vectors)
}

/// From `max_mr_size` to `max_pd`, with the `device_cap_flags` list.
fn write_resource_limits(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
    writeln!(out, "\tmax_mr_size:\t\t\t0x{:x}", a.max_mr_size)?;
    writeln!(out, "\tpage_size_cap:\t\t\t0x{:x}", a.page_size_cap)?;
    writeln!(out, "\tmax_qp:\t\t\t\t{}", a.max_qp)?;
    writeln!(out, "\tmax_qp_wr:\t\t\t{}", a.max_qp_wr)?;
    let flags = a.as_raw().orig_attr.device_cap_flags;
    writeln!(out, "\tdevice_cap_flags:\t\t0x{flags:08x}")?;
    caps::write_device_cap_flags(out, flags)?;
    writeln!(out, "\tmax_sge:\t\t\t{}", a.max_sge)?;
    writeln!(out, "\tmax_sge_rd:\t\t\t{}", a.max_sge_rd)?;
    writeln!(out, "\tmax_cq:\t\t\t\t{}", a.max_cq)?;
    writeln!(out, "\tmax_cqe:\t\t\t{}", a.max_cqe)?;
    writeln!(out, "\tmax_mr:\t\t\t\t{}", a.max_mr)?;
    writeln!(out, "\tmax_pd:\t\t\t\t{}", a.max_pd)
}

/// The RDMA read and atomic limits, from `max_qp_rd_atom` to `atomic_cap`.
fn write_rdma_read_limits(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
    writeln!(out, "\tmax_qp_rd_atom:\t\t\t{}", a.max_qp_rd_atom)?;
    writeln!(out, "\tmax_ee_rd_atom:\t\t\t{}", a.max_ee_rd_atom)?;
    writeln!(out, "\tmax_res_rd_atom:\t\t{}", a.max_res_rd_atom)?;
    writeln!(out, "\tmax_qp_init_rd_atom:\t\t{}", a.max_qp_init_rd_atom)?;
    writeln!(out, "\tmax_ee_init_rd_atom:\t\t{}", a.max_ee_init_rd_atom)?;
    writeln!(
        out,
        "\tatomic_cap:\t\t\t{} ({})",
        names::atomic_cap(a.atomic_cap),
        a.atomic_cap.raw() as i32
    )
}

/// The other limits of `ibv_device_attr`, from `max_ee` to `local_ca_ack_delay`.
fn write_object_limits(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
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
    writeln!(out, "\tlocal_ca_ack_delay:\t\t{}", a.local_ca_ack_delay)
}

/// The on-demand paging capabilities: general, then per transport.
fn write_odp(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
    let odp = &a.odp_caps;
    writeln!(out, "\tgeneral_odp_caps:")?;
    caps::write_odp_general(out, odp.general)?;
    for (name, transport) in [
        ("rc", odp.rc),
        ("uc", odp.uc),
        ("ud", odp.ud),
        ("xrc", odp.xrc),
    ] {
        writeln!(out, "\t{name}_odp_caps:")?;
        caps::write_odp_transport(out, transport)?;
    }
    Ok(())
}

/// The completion timestamp mask and the core clock, or that they are not supported.
fn write_clock(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
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
        writeln!(out, "\thca_core_clock:\t\t\t{}kHZ", a.hca_core_clock)
    } else {
        writeln!(out, "\tcore clock not supported")
    }
}

/// The TCP segmentation offload capabilities.
fn write_tso(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
    writeln!(out, "\ttso_caps:")?;
    // %d of an unsigned field.
    writeln!(out, "\t\tmax_tso:\t\t\t{}", a.tso_caps.max_tso as i32)?;
    if a.tso_caps.max_tso != 0 {
        caps::write_qp_types(out, a.tso_caps.supported_qpts)?;
    }
    Ok(())
}

/// The receive-side scaling capabilities.
fn write_rss(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
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
        caps::write_qp_types(out, rss.supported_qpts)?;
    }
    Ok(())
}

/// The packet pacing (QP rate limit) capabilities.
fn write_packet_pacing(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
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
        caps::write_qp_types(out, pacing.supported_qpts)?;
    }
    Ok(())
}

/// The tag matching capabilities, or that it is not supported.
fn write_tag_matching(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
    let tm = &a.tm_caps;
    if tm.max_num_tags == 0 {
        return writeln!(out, "\ttag matching not supported");
    }
    writeln!(out, "\tmax_rndv_hdr_size:\t\t{}", tm.max_rndv_hdr_size)?;
    writeln!(out, "\tmax_num_tags:\t\t\t{}", tm.max_num_tags)?;
    writeln!(out, "\tmax_ops:\t\t\t{}", tm.max_ops)?;
    writeln!(out, "\tmax_sge:\t\t\t{}", tm.max_sge)?;
    writeln!(out, "\tflags:")?;
    if tm.flags & ffi::ibv_tm_cap_flags::IBV_TM_CAP_RC.0 != 0 {
        writeln!(out, "\t\t\t\t\tIBV_TM_CAP_RC")?;
    }
    Ok(())
}

/// The CQ moderation capabilities, if the device has them.
fn write_cq_moderation(out: &mut impl Write, a: &DeviceAttr) -> fmt::Result {
    let cq_mod = &a.cq_mod_caps;
    if cq_mod.max_cq_count != 0 && cq_mod.max_cq_period != 0 {
        writeln!(out, "\n\tcq moderation caps:")?;
        writeln!(out, "\t\tmax_cq_count:\t{}", cq_mod.max_cq_count)?;
        writeln!(out, "\t\tmax_cq_period:\t{} us\n", cq_mod.max_cq_period)?;
    }
    Ok(())
}
