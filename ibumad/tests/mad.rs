//! The MAD types on bytes captured from the simulator (tests/data/fabric-hca1.txt), with the
//! values expected from infiniband-diags' `smpquery`, `sminfo` and `perfquery` on the same
//! fabric, and fuzzed: decoding never panics, and decode/encode round-trip.

use ibumad::mad::{
    counter_run, parse_dr_path, ClassPortInfo, MadError, MadHeader, NodeDescription, NodeInfo,
    PathRecord, PortCounters, PortCountersExtended, PortExtendedSpeedsCounters, PortInfo,
    PortInfoExtended, PortSamplesControl, Route, SaMad, SmInfo, Smp, SwitchInfo, PERF_DATA_OFFSET,
};
use proptest::prelude::*;

/// The captured MAD for attribute `attr` with modifier `modifier` along `path`.
fn captured(attr: u16, modifier: u32, path: &str) -> [u8; 256] {
    let text = include_str!("data/fabric-hca1.txt");
    let line = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| l.starts_with(&format!("{attr:#x} {modifier} {path} ")))
        .unwrap_or_else(|| panic!("no capture of {attr:#x} {modifier} {path}"));
    let hex = line.rsplit(' ').next().unwrap();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    bytes.try_into().expect("256 bytes")
}

#[test]
fn header_of_a_directed_route_get_response() {
    let mad = captured(0x11, 0, "[]");
    let h = MadHeader::decode(&mad).unwrap();
    assert_eq!(
        (h.base_version, h.mgmt_class, h.class_version, h.method),
        (1, 0x81, 1, 0x81)
    );
    assert!(h.is_response());
    assert_eq!(h.status, 0x8000, "D bit set, status 0");
    assert_eq!(h.attr_id, NodeInfo::ATTR_ID);
    assert_eq!(h.encode(), mad[..24], "all header bytes round-trip");
}

#[test]
fn node_info_of_this_ca_and_of_the_switch() {
    let smp = Smp::decode(&captured(0x11, 0, "[]")).unwrap();
    assert_eq!(smp.status, 0);
    let ni = NodeInfo::decode(&smp.data).unwrap();
    // smpquery -D nodeinfo 0
    assert_eq!(
        (
            ni.base_version,
            ni.class_version,
            ni.node_type,
            ni.num_ports
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(ni.system_image_guid, 0x10_0000);
    assert_eq!(ni.node_guid, 0x10_0000);
    assert_eq!(ni.port_guid, 0x10_0001);
    assert_eq!((ni.partition_cap, ni.device_id, ni.revision), (64, 0, 0xa1));
    assert_eq!((ni.local_port_num, ni.vendor_id), (1, 0));
    assert_eq!(ni.encode(), smp.data);

    let smp = Smp::decode(&captured(0x11, 0, "[1]")).unwrap();
    let Route::Directed {
        inbound,
        hop_pointer,
        path,
        ..
    } = &smp.route
    else {
        panic!("directed route expected: {:?}", smp.route)
    };
    assert!(*inbound);
    // ibsim answers with the hop pointer it was sent (0), where a switch would have moved it.
    assert_eq!((*hop_pointer, path.as_slice()), (0, &[1u8][..]));
    let ni = NodeInfo::decode(&smp.data).unwrap();
    assert_eq!(
        (ni.node_type, ni.num_ports, ni.node_guid),
        (2, 8, 0x20_0000)
    );
}

#[test]
fn node_description() {
    let smp = Smp::decode(&captured(0x10, 0, "[]")).unwrap();
    let nd = NodeDescription::decode(&smp.data).unwrap();
    assert_eq!(nd.text(), "Hca1");
    assert_eq!(nd.printable(), "Hca1");
    assert_eq!(nd.encode(), smp.data);
    let mut odd = smp.data;
    odd[1..4].copy_from_slice(b"\t\xe9\x7f");
    let nd = NodeDescription::decode(&odd).unwrap();
    assert_eq!(nd.printable(), "H   ");
}

#[test]
fn port_info_of_an_active_ca_port() {
    let smp = Smp::decode(&captured(0x15, 1, "[]")).unwrap();
    assert_eq!(smp.attr_mod, 1);
    let pi = PortInfo::decode(&smp.data).unwrap();
    // smpquery -D portinfo 0 1
    assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(
        (pi.lid, pi.master_sm_lid, pi.capability_mask),
        (1, 1, 0x50c04a)
    );
    assert_eq!(
        (pi.diag_code, pi.m_key_lease_period, pi.local_port_num),
        (0, 4089, 1)
    );
    assert_eq!(
        (
            pi.link_width_enabled,
            pi.link_width_supported,
            pi.link_width_active
        ),
        (2, 0x1f, 2)
    );
    assert_eq!(
        (
            pi.link_speed_supported,
            pi.port_state,
            pi.port_physical_state
        ),
        (7, 4, 5)
    );
    assert_eq!((pi.link_down_default_state, pi.lmc), (2, 0));
    assert_eq!(
        (pi.link_speed_active, pi.link_speed_enabled, pi.neighbor_mtu),
        (1, 1, 4)
    );
    assert_eq!(
        (
            pi.vl_cap,
            pi.vl_arbitration_high_cap,
            pi.vl_arbitration_low_cap
        ),
        (4, 8, 8)
    );
    assert_eq!(
        (
            pi.mtu_cap,
            pi.vl_stall_count,
            pi.hoq_life,
            pi.operational_vls
        ),
        (4, 7, 0, 4)
    );
    assert_eq!(
        (pi.guid_cap, pi.subnet_timeout, pi.capability_mask2),
        (32, 31, 0x30)
    );
    assert_eq!(pi.link_speed_ext_active, 0);
    assert_eq!(
        pi.encode(),
        smp.data,
        "every bit of the capture is a known field or zero"
    );
}

#[test]
fn port_info_of_a_switch_port() {
    let smp = Smp::decode(&captured(0x15, 2, "[1]")).unwrap();
    let pi = PortInfo::decode(&smp.data).unwrap();
    assert_eq!(
        (pi.port_state, pi.port_physical_state, pi.hoq_life),
        (4, 5, 16)
    );
    assert_eq!(
        (pi.lid, pi.capability_mask),
        (0, 0),
        "only port 0 of a switch has them"
    );
}

#[test]
fn switch_info() {
    let smp = Smp::decode(&captured(0x12, 0, "[1]")).unwrap();
    let si = SwitchInfo::decode(&smp.data).unwrap();
    // smpquery -D switchinfo 0,1
    assert_eq!(
        (si.linear_fdb_cap, si.random_fdb_cap, si.multicast_fdb_cap),
        (30720, 0, 1024)
    );
    assert_eq!(
        (si.linear_fdb_top, si.default_port, si.life_time_value),
        (7, 0, 18)
    );
    assert_eq!((si.lids_per_port, si.partition_enforcement_cap), (0, 64));
    assert_eq!(
        (si.filter_raw_inbound_cap, si.filter_raw_outbound_cap),
        (1, 1)
    );
    assert_eq!((si.enhanced_port0, si.multicast_fdb_top), (0, 0));
    assert_eq!(si.encode(), smp.data);
}

#[test]
fn sm_info_of_the_master() {
    let smp = Smp::decode(&captured(0x20, 0, "[]")).unwrap();
    let sm = SmInfo::decode(&smp.data).unwrap();
    // sminfo: sm lid 1 sm guid 0x100001, ... priority 0 state 3 SMINFO_MASTER; asked on
    // the SM's own port, which shows opensm's default SM_Key, 1.
    assert_eq!(
        (sm.guid, sm.sm_key, sm.priority, sm.sm_state),
        (0x10_0001, 1, 0, 3)
    );
    assert!(sm.act_count > 0);
    assert_eq!(sm.encode(), smp.data[..SmInfo::SIZE]);
}

#[test]
fn port_counters_of_a_switch_port() {
    let mad = captured(0x12, 0, "lid2port1");
    let h = MadHeader::decode(&mad).unwrap();
    assert_eq!(
        (h.mgmt_class, h.method, h.status, h.attr_id),
        (0x04, 0x81, 0, PortCounters::ATTR_ID)
    );
    let data = &mad[PERF_DATA_OFFSET..];
    let pc = PortCounters::decode(data).unwrap();
    // perfquery 2 1: the error counters are zero, the traffic ones count opensm's MADs.
    assert_eq!((pc.port_select, pc.counter_select), (1, 0));
    assert_eq!(
        (pc.symbol_error_counter, pc.port_rcv_errors, pc.vl15_dropped),
        (0, 0, 0)
    );
    assert!(pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0, "{pc:?}");
    assert!(pc.port_xmit_data > pc.port_xmit_pkts, "{pc:?}");
    assert_eq!(pc.encode(), data[..PortCounters::SIZE]);

    let mad = captured(0x1d, 0, "lid2port1");
    let data = &mad[PERF_DATA_OFFSET..];
    let pce = PortCountersExtended::decode(data).unwrap();
    assert_eq!(pce.port_select, 1);
    assert!(
        pce.port_xmit_pkts >= u64::from(pc.port_xmit_pkts),
        "{pce:?}"
    );
    assert_eq!(
        (pce.port_unicast_xmit_pkts, pce.port_multicast_rcv_pkts),
        (0, 0)
    );
    assert_eq!(pce.encode(), data[..PortCountersExtended::SIZE]);
}

/// Decoding then encoding gives the first 128 bytes back (header, M_Key, DR LIDs, data);
/// of the paths only the entries 1 to HopCount are kept: ibsim leaves stale bytes after
/// them (outside the route, ignored by the receivers).
#[test]
fn smps_round_trip() {
    for (attr, modifier, path) in [
        (0x11, 0, "[]"),
        (0x10, 0, "[]"),
        (0x15, 1, "[]"),
        (0x11, 0, "[1]"),
        (0x15, 2, "[1]"),
    ] {
        let mad = captured(attr, modifier, path);
        let smp = Smp::decode(&mad).unwrap();
        let again = smp.encode().unwrap();
        assert_eq!(again[..128], mad[..128], "{attr:#x} {path}");
        assert_eq!(Smp::decode(&again).unwrap(), smp, "{attr:#x} {path}");
    }
}

#[test]
fn directed_route_requests_encode_the_path() {
    let mad = Smp::get(PortInfo::ATTR_ID, 3, Route::directed(&[1, 4]))
        .encode()
        .unwrap();
    assert_eq!(
        mad[..8],
        [1, 0x81, 1, 0x01, 0, 0, 0, 2],
        "Get, D clear, hop pointer 0, 2 hops"
    );
    assert_eq!(mad[16..18], [0, 0x15]);
    assert_eq!(mad[20..24], [0, 0, 0, 3]);
    assert_eq!(mad[32..36], [0xff; 4], "permissive DrSLID and DrDLID");
    assert_eq!(mad[128..131], [0, 1, 4], "InitialPath[1..]");
    let lid = Smp::get(NodeInfo::ATTR_ID, 0, Route::Lid).encode().unwrap();
    assert_eq!(lid[..4], [1, 0x01, 1, 0x01]);
}

#[test]
fn bad_input_is_an_error() {
    assert_eq!(
        MadHeader::decode(&[0; 23]),
        Err(MadError::TooShort {
            needed: 24,
            got: 23
        })
    );
    assert!(matches!(
        NodeInfo::decode(&[0; 10]),
        Err(MadError::TooShort { .. })
    ));
    let mut mad = captured(0x11, 0, "[1]");
    mad[7] = 64;
    assert_eq!(Smp::decode(&mad), Err(MadError::HopCount(64)));
    mad[1] = 0x04;
    assert_eq!(Smp::decode(&mad), Err(MadError::Class(0x04)));
    assert!(Smp::get(0x11, 0, Route::directed(&[1; 64]))
        .encode()
        .is_err());
}

#[test]
fn dr_paths_parse_as_the_tools_write_them() {
    assert_eq!(parse_dr_path("0"), Ok(vec![]));
    assert_eq!(parse_dr_path("0,1,4"), Ok(vec![1, 4]));
    for bad in ["", "1", "0,", "0,x", "0,256", "0,-1", "0;1"] {
        assert!(
            matches!(parse_dr_path(bad), Err(MadError::Path(_))),
            "{bad:?}"
        );
    }
    let long = format!("0{}", ",1".repeat(64));
    assert_eq!(parse_dr_path(&long), Err(MadError::HopCount(64)));
}

proptest! {
    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = MadHeader::decode(&bytes);
        let _ = Smp::decode(&bytes);
        let _ = NodeInfo::decode(&bytes);
        let _ = NodeDescription::decode(&bytes);
        let _ = PortInfo::decode(&bytes);
        let _ = SwitchInfo::decode(&bytes);
        let _ = SmInfo::decode(&bytes);
        let _ = PortCounters::decode(&bytes);
        let _ = PortCountersExtended::decode(&bytes);
        let _ = ClassPortInfo::decode(&bytes);
        let _ = PortSamplesControl::decode(&bytes);
        let _ = PortInfoExtended::decode(&bytes);
        let _ = PortExtendedSpeedsCounters::decode(&bytes);
        for width in [0, 2, 16, 32, 64, 65] {
            let _ = counter_run(&bytes, width, 16);
        }
        let _ = SaMad::decode(&bytes);
        let _ = PathRecord::decode(&bytes);
        let _ = parse_dr_path(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn decode_encode_decode_is_stable(bytes in proptest::array::uniform32(any::<u8>()), tail in proptest::collection::vec(any::<u8>(), 224)) {
        let mut mad = bytes.to_vec();
        mad.extend(tail);
        mad[1] = if mad[0] & 1 == 0 { 0x01 } else { 0x81 };
        mad[7] %= 64;
        let smp = Smp::decode(&mad).unwrap();
        prop_assert_eq!(Smp::decode(&smp.encode().unwrap()).unwrap(), smp.clone());
        let pi = PortInfo::decode(&smp.data).unwrap();
        prop_assert_eq!(PortInfo::decode(&pi.encode()).unwrap(), pi);
        let ni = NodeInfo::decode(&smp.data).unwrap();
        prop_assert_eq!(NodeInfo::decode(&ni.encode()).unwrap(), ni);
        let si = SwitchInfo::decode(&smp.data).unwrap();
        prop_assert_eq!(SwitchInfo::decode(&si.encode()).unwrap(), si);
        let pie = PortInfoExtended::decode(&smp.data).unwrap();
        prop_assert_eq!(PortInfoExtended::decode(&pie.encode()).unwrap(), pie);
        let pce = PortCountersExtended::decode(&mad[PERF_DATA_OFFSET..]).unwrap();
        prop_assert_eq!(PortCountersExtended::decode(&pce.encode()).unwrap(), pce);
        let psc = PortSamplesControl::decode(&mad[PERF_DATA_OFFSET..]).unwrap();
        prop_assert_eq!(PortSamplesControl::decode(&psc.encode()).unwrap(), psc);
        let pesc = PortExtendedSpeedsCounters::decode(&mad[PERF_DATA_OFFSET..]).unwrap();
        prop_assert_eq!(PortExtendedSpeedsCounters::decode(&pesc.encode()).unwrap(), pesc);
    }
}
