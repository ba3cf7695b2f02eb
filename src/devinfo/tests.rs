//! `ibv_devinfo`'s whole output for rxe0 as rdma-core 44 prints it on Linux 6.1, built from
//! what the device reports, and the GID lines of other link layers and GID types.

use rdma_verbs::ffi;
use rdma_verbs::{DeviceAttr, GidEntry, LinkLayer, PortAttr, Transport};

use super::hca::{self, Hca};
use super::port::{self, gid_line};

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
    .unwrap()
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
    hca::write(&mut out, &hca, verbose).unwrap();
    let gids = rxe_gids();
    port::write(
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
