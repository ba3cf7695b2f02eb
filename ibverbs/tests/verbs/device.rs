//! Devices, device and port attributes, GIDs and asynchronous events.

use rdma_verbs_test_kit::{provider, provider_has, Need, Provider};
use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use rdma_verbs_test_kit::{assert_clean_drops, device, gid, netdev, open};

use crate::common::{connect, ALL};

use rdma_verbs::{
    AsRaw, AsyncEventKind, Context, DeviceList, Error, EventSource, Gid, GidType, LinkLayer,
    NodeType, PhysState, PortState, QpType, SendRequest, Sge, Transport,
};

#[test]
fn lists_the_test_device() {
    let list = DeviceList::new().expect("ibv_get_device_list");
    assert!(!list.is_empty());
    assert_eq!(list.iter().len(), list.len());
    let dev = list.find(&device()).expect("the test device is listed");
    assert_eq!(dev.name(), device());
    let (node, transport) = match provider() {
        Provider::Rxe => (NodeType::Ca, Transport::InfiniBand),
        Provider::Siw => (NodeType::Rnic, Transport::Iwarp),
    };
    assert_eq!(dev.node_type(), node);
    assert_eq!(dev.transport(), transport);
    assert_ne!(dev.guid(), 0);
}

#[test]
fn unknown_device_is_not_found() {
    match Context::open("no-such-rdma-device") {
        Err(Error::DeviceNotFound { name, available }) => {
            assert_eq!(name, "no-such-rdma-device");
            assert!(available.contains(&device()), "{available}");
        }
        other => panic!("expected DeviceNotFound, got {other:?}"),
    }
}

#[test]
fn opens_by_name() {
    let ctx = open();
    assert_eq!(ctx.name(), device());
    assert!(ctx.num_comp_vectors() >= 1);
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn queries_the_device() {
    let ctx = open();
    let attr = ctx.query_device().expect("ibv_query_device_ex");
    let list = DeviceList::new().unwrap();
    assert_eq!(attr.node_guid, list.find(&device()).unwrap().guid());
    assert!(attr.phys_port_cnt >= 1);
    assert_eq!(ctx.port_count().unwrap(), attr.phys_port_cnt);
    assert_eq!(attr.as_raw().orig_attr.phys_port_cnt, attr.phys_port_cnt);
    assert!(!attr.fw_ver.is_empty());
    assert!(attr.max_qp > 0 && attr.max_qp_wr > 0 && attr.max_cq > 0 && attr.max_cqe > 0);
    assert!(attr.max_mr > 0 && attr.max_pd > 0 && attr.max_sge > 0);
    assert!(attr.max_mr_size > 0 && attr.page_size_cap & 4096 != 0);
    assert_eq!(
        attr.device_cap_flags.bits() as u32,
        attr.as_raw().orig_attr.device_cap_flags
    );
    if device().starts_with("rxe") {
        // Values of the rxe driver (drivers/infiniband/sw/rxe/rxe_param.h).
        assert_eq!(attr.vendor_id, 0xffffff);
        assert_eq!(attr.phys_port_cnt, 1);
        assert_eq!(attr.atomic_cap, rdma_verbs::AtomicCap::Hca);
        assert!(attr.device_cap_flags.contains(
            rdma_verbs::DeviceCapFlags::MEM_WINDOW | rdma_verbs::DeviceCapFlags::SRQ_RESIZE
        ));
    }
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn port_one_is_active_ethernet() {
    let ctx = open();
    let port = ctx.query_port(1).expect("ibv_query_port");
    assert_eq!(port.state, PortState::Active);
    assert_eq!(port.state.to_string(), "active");
    assert_eq!(port.phys_state, PhysState::LinkUp);
    assert_eq!(port.phys_state.to_string(), "LinkUp");
    assert_eq!(port.link_layer, LinkLayer::Ethernet);
    assert_eq!(port.link_layer.to_string(), "Ethernet");
    assert!(port.active_mtu.bytes().is_some());
    assert!(port.active_mtu.bytes() <= port.max_mtu.bytes());
    let rate = port.rate_gbps().expect("known width and speed");
    assert!(rate >= 2.5, "{rate}");
    // rxe: a GID per address of its netdev; siw: one, from its MAC.
    let least = match provider() {
        Provider::Rxe => 2,
        Provider::Siw => 1,
    };
    assert!(port.gid_tbl_len >= least, "{}", port.gid_tbl_len);
    assert_eq!(port.as_raw().gid_tbl_len, port.gid_tbl_len as i32);
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn ports_outside_the_device_are_out_of_range() {
    let ctx = open();
    let count = ctx.port_count().unwrap();
    for bad in [0, count + 1] {
        match ctx.query_port(bad) {
            Err(Error::OutOfRange {
                what: "port",
                value,
                min: 1,
                max,
            }) => {
                assert_eq!(value, u64::from(bad));
                assert_eq!(max, u64::from(count));
            }
            other => panic!("port {bad}: expected OutOfRange, got {other:?}"),
        }
    }
    // rxe has one port: 2 is the first one past it.
    if device().starts_with("rxe") {
        assert!(matches!(
            ctx.query_port(2),
            Err(Error::OutOfRange {
                what: "port",
                value: 2,
                min: 1,
                max: 1
            })
        ));
    }
    assert!(matches!(
        ctx.query_gid(0, 0),
        Err(Error::OutOfRange {
            what: "port",
            value: 0,
            ..
        })
    ));
    assert!(matches!(
        ctx.gid_table(count + 1),
        Err(Error::OutOfRange { what: "port", .. })
    ));
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn gid_index_one_is_the_ipv4_address_on_roce_v2() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let ctx = open();
    let got = ctx.query_gid(1, 1).expect("ibv_query_gid");
    assert_eq!(got, gid());
    let entry = ctx
        .query_gid_ex(1, 1)
        .expect("ibv_query_gid_ex")
        .expect("GID index 1 is set");
    assert_eq!(entry.gid, gid());
    assert_eq!((entry.port, entry.index), (1, 1));
    assert_eq!(entry.gid_type, GidType::RoceV2);
    assert_eq!(entry.gid_type.to_string(), "RoCE v2");
    assert_ne!(entry.ifindex, 0);
    assert_eq!(entry.netdev().as_deref(), Some(netdev().as_str()));
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn gid_table_matches_single_queries() {
    let ctx = open();
    let table = ctx.gid_table(1).expect("ibv_query_gid_table");
    if provider() == Provider::Rxe {
        assert!(table.iter().any(|e| e.index == 1 && e.gid == gid()));
    }
    assert!(table.windows(2).all(|w| w[0].index < w[1].index));
    for entry in &table {
        assert_eq!(entry.port, 1);
        assert!(!entry.gid.is_zero());
        assert_eq!(ctx.query_gid_ex(1, entry.index).unwrap(), Some(*entry));
        assert_eq!(ctx.query_gid(1, entry.index).unwrap(), entry.gid);
    }
    // The entries not in the table are empty.
    let len = ctx.query_port(1).unwrap().gid_tbl_len;
    let unused = (0..=u8::MAX)
        .take_while(|&i| u32::from(i) < len)
        .find(|i| table.iter().all(|e| e.index != *i));
    if let Some(index) = unused {
        assert_eq!(ctx.query_gid_ex(1, index).unwrap(), None);
        assert!(ctx.query_gid(1, index).unwrap().is_zero());
    }
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn gid_index_past_the_table_is_out_of_range() {
    let ctx = open();
    let len = ctx.query_port(1).unwrap().gid_tbl_len;
    let expected = |r: Result<(), Error>| match r {
        Err(Error::OutOfRange {
            what: "GID index",
            value,
            min: 0,
            max,
        }) => assert_eq!((value, max), (u64::from(len), u64::from(len) - 1)),
        other => panic!("expected OutOfRange, got {other:?}"),
    };
    match u8::try_from(len) {
        Ok(past) => {
            expected(ctx.query_gid(1, past).map(drop));
            expected(ctx.query_gid_ex(1, past).map(drop));
        }
        // rxe's table (1024) is longer than any GID index an address vector can name
        // (u8): the last one reads, as an empty entry.
        Err(_) => {
            assert!(ctx.query_gid(1, u8::MAX).unwrap().is_zero());
            assert_eq!(ctx.query_gid_ex(1, u8::MAX).unwrap(), None);
        }
    }
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn gid_conversions() {
    let addr: Ipv6Addr = "fe80::200:ff:fe00:0".parse().unwrap();
    let gid = Gid::from(addr);
    assert_eq!(gid.subnet_prefix(), 0xfe80_0000_0000_0000);
    assert_eq!(gid.interface_id(), 0x0200_00ff_fe00_0000);
    assert_eq!(gid.to_string(), "fe80::200:ff:fe00:0");
    assert_eq!(Ipv6Addr::from(gid), addr);
    assert_eq!(Gid::from_raw(gid.to_raw()), gid);
    assert_eq!(Gid::from_bytes(gid.to_bytes()), gid);
    let mapped: Gid = "::ffff:127.0.0.1".parse().unwrap();
    assert_eq!(mapped.to_string(), "::ffff:127.0.0.1");
    assert_eq!(mapped.interface_id(), 0x0000_ffff_7f00_0001);
    assert_eq!(format!("{mapped:?}"), "Gid(::ffff:127.0.0.1)");
    assert!(Gid::default().is_zero() && !mapped.is_zero());
    assert!("not a gid".parse::<Gid>().is_err());
}

#[test]
fn no_async_event_on_an_idle_device() {
    let ctx = open();
    assert_eq!(
        ctx.wait_async_event(Duration::from_millis(50)).unwrap(),
        None
    );
    // The descriptor is open: fcntl succeeds on it.
    // SAFETY: F_GETFD only reads the descriptor flags; the fd is not read.
    let flags = unsafe { libc::fcntl(ctx.async_raw_fd(), libc::F_GETFD) };
    assert!(flags >= 0, "{}", std::io::Error::last_os_error());
    drop(ctx);
    assert_clean_drops();
}

#[test]
fn cq_overrun_is_an_async_event() {
    let ctx = open();
    let pd = ctx.alloc_pd().expect("ibv_alloc_pd");
    let cq = ctx.create_cq(1, None).expect("ibv_create_cq");
    // More completions than the CQ holds: a signaled empty RDMA write each.
    let n = cq.capacity() + 4;
    let build = || {
        pd.create_qp(QpType::Rc, &cq, &cq)
            .max_send_wr(n)
            .sq_sig_all(true)
            .access(ALL)
            .build()
            .expect("ibv_create_qp")
    };
    let (qp, _peer, _link) = connect(QpType::Rc, build(), build());
    let target = pd.alloc_mr(8, ALL).expect("ibv_reg_mr");
    let mut sends: Vec<SendRequest<'_>> = (0..n)
        .map(|i| SendRequest::write(i.into(), Sge::NONE, target.remote()))
        .collect();
    qp.post_send(&mut sends).expect("ibv_post_send");

    let deadline = Instant::now() + Duration::from_secs(10);
    let event = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = ctx
            .wait_async_event(left)
            .expect("ibv_get_async_event")
            .expect("a CQ error event within 10 s");
        if event.kind == AsyncEventKind::CqErr {
            break event;
        }
    };
    assert_eq!(event.kind.to_string(), "CQ error");
    match event.source {
        EventSource::Cq(id) => assert_eq!(id.addr(), cq.as_raw().as_ptr() as usize),
        other => panic!("expected a CQ source, got {other:?}"),
    }
    drop((qp, target, cq, pd, ctx));
    assert_clean_drops();
}
