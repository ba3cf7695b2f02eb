//! Automatic path migration (APM): an alternate path's settings refused by name before the
//! call; on RoCE (the test port) the alternate path itself refused, as the kernel refuses
//! it; and what rxe does with a migration request.

use std::time::Duration;

use rdma_verbs_test_kit::{assert_clean_drops, device, poll_one, provider_has, Need};

use rdma_verbs::ffi::{ibv_mig_state, ibv_qp_attr, ibv_qp_attr_mask as M};
use rdma_verbs::{
    AhAttr, AltPath, ConnectOptions, DeviceCapFlags, Error, GlobalRoute, LinkLayer, PathMigState,
    QpState, QpType, QueuePair, SendRequest,
};

use crate::common::Pair;

/// Whether `err` is the refusal of an alternate path on a port that is not InfiniBand.
fn refused_off_infiniband(err: &Error) -> bool {
    matches!(err, Error::Unsupported { what, .. } if what.contains("RoCE"))
}

/// An alternate path from port 1 of the pair's device to `b`, from `a`'s GID.
fn path_to(a: &QueuePair, b: &QueuePair) -> AltPath {
    let grh = GlobalRoute::new(b.endpoint().gid, a.gid_index());
    AltPath::new(AhAttr::new(1).with_grh(grh))
}

/// Each setting out of its range, a port the device lacks, a P_Key index past the port's
/// table, a GID index past (or at an empty entry of) its GID table, and a UD QP: each is
/// refused by name before `ibv_modify_qp`. A device without `IBV_DEVICE_AUTO_PATH_MIG` is
/// refused so first (rxe has it).
#[test]
fn an_alternate_path_out_of_range_is_refused_by_name() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let ctx = p.pd.context();
    let has_apm = ctx
        .query_device()
        .unwrap()
        .device_cap_flags
        .contains(DeviceCapFlags::AUTO_PATH_MIG);
    if device().starts_with("rxe") {
        assert!(has_apm, "rxe reports IBV_DEVICE_AUTO_PATH_MIG");
    }
    let path = path_to(&p.a, &p.b);
    if !has_apm {
        for err in [
            p.a.load_alt_path(&path).unwrap_err(),
            p.a.migrate_path().unwrap_err(),
        ] {
            assert!(
                matches!(
                    err,
                    Error::Unsupported {
                        missing: "IBV_DEVICE_AUTO_PATH_MIG in device_cap_flags",
                        ..
                    }
                ),
                "{err:?}"
            );
        }
        return;
    }
    let ports = ctx.port_count().unwrap();
    let pkeys = ctx.query_port(1).unwrap().pkey_tbl_len;
    let (past_ports, past_pkeys) = (u64::from(ports) + 1, u64::from(pkeys));
    let grh = GlobalRoute::new(p.b.endpoint().gid, p.a.gid_index());
    let cases = [
        (path.timeout(32), "alternate path ACK timeout", 32, 31),
        (
            AltPath::new(AhAttr::new(1).with_grh(grh).with_sl(16)),
            "service level",
            16,
            15,
        ),
        (
            AltPath::new(AhAttr::new(1).with_grh(grh.with_flow_label(1 << 20))),
            "flow label",
            1 << 20,
            0xf_ffff,
        ),
        (path.port(ports + 1), "port", past_ports, ports.into()),
        (
            path.pkey_index(pkeys),
            "P_Key index",
            past_pkeys,
            past_pkeys.saturating_sub(1),
        ),
    ];
    for (path, what, value, max) in cases {
        match p.a.load_alt_path(&path) {
            Err(Error::OutOfRange {
                what: w,
                value: v,
                max: m,
                ..
            }) => assert_eq!((w, v, m), (what, value, max)),
            other => panic!("{what} {value}: {other:?}"),
        }
    }
    // An entry past the GID table is out of range; one inside it but empty is refused too.
    let far = AltPath::new(AhAttr::new(1).with_grh(GlobalRoute::new(grh.dgid, 255)));
    let err = p.a.load_alt_path(&far).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "GID index",
                ..
            } | Error::InvalidArgument {
                what: "GID index",
                ..
            }
        ),
        "{err:?}"
    );
    // The same checks at connect, before any transition.
    let qp =
        p.pd.create_qp(QpType::Rc, &p.a_cq, &p.a_cq)
            .build()
            .unwrap();
    let opts = ConnectOptions::new().alt_path(path.timeout(32));
    let err = qp.connect(&p.b.endpoint(), &opts).unwrap_err();
    assert!(
        matches!(
            err,
            Error::OutOfRange {
                what: "alternate path ACK timeout",
                ..
            }
        ),
        "{err:?}"
    );
    // A UD QP has no path to migrate.
    let ud =
        p.pd.create_qp(QpType::Ud, &p.a_cq, &p.a_cq)
            .build()
            .unwrap();
    let ud = ud.ready().unwrap();
    for err in [
        ud.load_alt_path(&path).unwrap_err(),
        ud.migrate_path().unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                Error::InvalidArgument {
                    what: "queue pair type",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    drop((ud, p));
    assert_clean_drops();
}

/// On RoCE (the test port) an alternate path is refused by name, at a load and at connect:
/// Linux's RDMA core takes one on InfiniBand ports only, and the same attributes passed to
/// `ibv_modify_qp` directly fail with `EINVAL`, leaving the QP as it was.
#[test]
fn an_alternate_path_on_roce_is_refused_as_the_kernel_refuses_it() {
    if !provider_has(Need::IbTransport) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let ctx = p.pd.context();
    assert_eq!(ctx.query_port(1).unwrap().link_layer, LinkLayer::Ethernet);
    let flags = ctx.query_device().unwrap().device_cap_flags;
    if !flags.contains(DeviceCapFlags::AUTO_PATH_MIG) {
        return; // refused for the flag: an_alternate_path_out_of_range_is_refused_by_name
    }
    let path = path_to(&p.a, &p.b);
    let err = p.a.load_alt_path(&path).unwrap_err();
    assert!(refused_off_infiniband(&err), "{err:?}");
    assert!(err.to_string().contains("InfiniBand"), "{err}");

    // The kernel's refusal of the same path.
    let grh = rdma_verbs::ffi::ibv_global_route {
        dgid: p.b.endpoint().gid.to_raw(),
        sgid_index: p.a.gid_index(),
        hop_limit: 64,
        ..Default::default()
    };
    let mut attr = ibv_qp_attr {
        alt_ah_attr: rdma_verbs::ffi::ibv_ah_attr {
            grh,
            is_global: 1,
            port_num: 1,
            ..Default::default()
        },
        alt_port_num: 1,
        alt_timeout: 14,
        path_mig_state: ibv_mig_state::IBV_MIG_REARM,
        ..Default::default()
    };
    // SAFETY: the mask names no state (the QP stays in RTS) and no capabilities; the
    // transport, port and PD are unchanged.
    let err = unsafe {
        p.a.modify(&mut attr, M::IBV_QP_ALT_PATH | M::IBV_QP_PATH_MIG_STATE)
    }
    .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::Verb {
                verb: "ibv_modify_qp",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    let q = p.a.query().unwrap();
    assert_eq!((q.state, q.alt_port), (QpState::Rts, 0));
    assert_eq!(q.path_mig_state, PathMigState::Migrated);

    // At connect, before any transition.
    let qp =
        p.pd.create_qp(QpType::Rc, &p.a_cq, &p.a_cq)
            .build()
            .unwrap();
    let opts = ConnectOptions::new().alt_path(path);
    let err = qp.connect(&p.b.endpoint(), &opts).unwrap_err();
    assert!(refused_off_infiniband(&err), "{err:?}");
    drop(p);
    assert_clean_drops();
}

/// What rxe does with a migration request (`path_mig_state` MIGRATED), where no alternate
/// path can be loaded: it records the state it is given, whatever the state was (REARM
/// too, which it never arms), moves no traffic and reports no event; the QP stays in RTS
/// and carries writes on its one path.
#[test]
fn a_migration_request_on_rxe_only_records_the_state() {
    if !provider_has(Need::IbTransport) || !device().starts_with("rxe") {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let ctx = p.pd.context();
    let q = p.a.query().unwrap();
    assert_eq!(q.path_mig_state, PathMigState::Migrated);
    assert_eq!((q.alt_port, q.alt_ah_attr.port), (0, 0));

    p.a.migrate_path().expect("rxe takes a migration request");
    let q = p.a.query().unwrap();
    assert_eq!(
        (q.state, q.path_mig_state),
        (QpState::Rts, PathMigState::Migrated)
    );

    // REARM without an alternate path (the raw call: load_alt_path refuses RoCE): recorded,
    // never armed; a migration request then records MIGRATED again.
    let mut attr = ibv_qp_attr {
        path_mig_state: ibv_mig_state::IBV_MIG_REARM,
        ..Default::default()
    };
    // SAFETY: the mask names no state (the QP stays in RTS) and no capabilities.
    unsafe { p.a.modify(&mut attr, M::IBV_QP_PATH_MIG_STATE) }.expect("rxe takes REARM");
    assert_eq!(p.a.query().unwrap().path_mig_state, PathMigState::Rearm);
    p.a.migrate_path().expect("rxe takes a migration request");
    let q = p.a.query().unwrap();
    assert_eq!(
        (q.state, q.path_mig_state),
        (QpState::Rts, PathMigState::Migrated)
    );
    let event = ctx.wait_async_event(Duration::from_millis(500)).unwrap();
    assert_eq!(event, None, "rxe reports no event of a migration request");

    // The QP carries a write on its one path, as before.
    let mut mr = p.mr(64);
    mr.write(0, b"after migrate").unwrap();
    let sge = [mr.sge(..13).unwrap()];
    let target = mr.remote().slice(32, 13).unwrap();
    p.a.post_send(&mut [SendRequest::write(1, &sge, target).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let mut back = [0; 13];
    mr.read(32, &mut back).unwrap();
    assert_eq!(&back, b"after migrate");
    drop((mr, p));
    assert_clean_drops();
}
