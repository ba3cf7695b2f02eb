//! Smoke test of the raw bindings on a real RDMA device (run through `scripts/with-rdma`).
//!
//! The device is `$IBVERBS_TEST_DEVICE` (default `rxe0`) and GID index 1 of port 1 must be
//! `$IBVERBS_TEST_GID` (default `::ffff:127.0.0.1`, which rxe on `lo` has). A missing device is
//! a failure, not a skip.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::net::Ipv6Addr;
use std::ptr;

use rdma_verbs_sys::*;

/// Opens `name` from the device list, or panics saying which devices there are.
fn open_device(name: &str) -> *mut ibv_context {
    let mut num = 0;
    // SAFETY: num is a valid out pointer.
    let list = unsafe { ibv_get_device_list(&mut num) };
    assert!(
        !list.is_null(),
        "ibv_get_device_list: {}",
        std::io::Error::last_os_error()
    );
    let num = usize::try_from(num).expect("device count is not negative");
    // SAFETY: the list holds `num` valid device pointers until it is freed.
    let devices = unsafe { std::slice::from_raw_parts(list, num) };
    let names: Vec<String> = devices
        .iter()
        .map(|&d| {
            // SAFETY: each device is valid; its name is a NUL-terminated string.
            unsafe { CStr::from_ptr(ibv_get_device_name(d)) }
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let ctx = match names.iter().position(|n| n == name) {
        // SAFETY: the device pointer comes from the live list.
        Some(i) => unsafe { ibv_open_device(devices[i]) },
        None => ptr::null_mut(),
    };
    // SAFETY: list came from ibv_get_device_list; an opened context outlives it.
    unsafe { ibv_free_device_list(list) };
    assert!(
        !names.is_empty(),
        "no RDMA device found: run the tests through scripts/with-rdma"
    );
    assert!(
        !ctx.is_null(),
        "device {name} not found or not opened; devices: {names:?}"
    );
    ctx
}

#[test]
fn device_port_gid_and_pd() {
    let name = rdma_verbs_test_kit::device();
    let want_gid = Ipv6Addr::from(rdma_verbs_test_kit::gid());
    let ctx = open_device(&name);

    let mut dev = MaybeUninit::<ibv_device_attr>::zeroed();
    // SAFETY: ctx is open and dev is writable.
    assert_eq!(unsafe { ibv_query_device(ctx, dev.as_mut_ptr()) }, 0);
    // SAFETY: ibv_query_device returned 0, so it filled the struct.
    let dev = unsafe { dev.assume_init() };
    assert!(dev.phys_port_cnt >= 1, "{name} has no ports");
    assert!(dev.max_qp > 0 && dev.max_cq > 0 && dev.max_mr > 0);

    let mut port = MaybeUninit::<ibv_port_attr>::zeroed();
    // SAFETY: ctx is open and port is writable.
    assert_eq!(unsafe { ibv_query_port(ctx, 1, port.as_mut_ptr()) }, 0);
    // SAFETY: ibv_query_port returned 0, so it filled the struct.
    let port = unsafe { port.assume_init() };
    assert_eq!(
        port.state,
        ibv_port_state::IBV_PORT_ACTIVE,
        "port 1 of {name}"
    );
    assert!(port.gid_tbl_len > 1);

    let mut gid = ibv_gid::default();
    // SAFETY: ctx is open and gid is writable.
    assert_eq!(unsafe { ibv_query_gid(ctx, 1, 1, &mut gid) }, 0);
    // SAFETY: every bit pattern of the union is a valid byte array.
    let raw = unsafe { gid.raw };
    assert_eq!(
        Ipv6Addr::from(raw),
        want_gid,
        "GID index 1 of {name} port 1"
    );

    let mut entry = ibv_gid_entry::default();
    // SAFETY: ctx is open and entry is writable.
    assert_eq!(unsafe { ibv_query_gid_ex(ctx, 1, 1, &mut entry, 0) }, 0);
    // SAFETY: as above.
    assert_eq!(unsafe { entry.gid.raw }, raw);
    assert_eq!(entry.gid_index, 1);

    // SAFETY: ctx is open.
    let pd = unsafe { ibv_alloc_pd(ctx) };
    assert!(
        !pd.is_null(),
        "ibv_alloc_pd: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: pd was allocated above and is not used afterwards; ctx has no other objects.
    unsafe {
        assert_eq!(ibv_dealloc_pd(pd), 0);
        assert_eq!(ibv_close_device(ctx), 0);
    }
}

#[test]
fn port_out_of_range_is_einval() {
    let ctx = open_device(&rdma_verbs_test_kit::device());
    let mut port = MaybeUninit::<ibv_port_attr>::zeroed();
    // SAFETY: ctx is open and port is writable.
    let rc = unsafe { ibv_query_port(ctx, 0, port.as_mut_ptr()) };
    assert_eq!(rc, libc::EINVAL, "port 0");
    // SAFETY: ctx is open with no other objects.
    assert_eq!(unsafe { ibv_close_device(ctx) }, 0);
}
