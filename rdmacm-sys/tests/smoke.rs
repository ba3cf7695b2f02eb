//! Smoke test of the raw bindings on the rdma_cm device (run through `scripts/with-rdma`,
//! which names it in `$WITH_RDMA_CM_DEVICE` and its address in `$WITH_RDMA_CM_ADDR`): an
//! event channel and an id, bound to the device's address, resolving that address and the
//! route to it. A missing device or address is a failure, not a skip.

use std::ffi::CStr;
use std::net::Ipv4Addr;
use std::ptr;

use rdma_verbs_sys::ibv_get_device_name;
use rdmacm_sys::*;

/// `addr`:`port` as a `sockaddr_in`.
fn sockaddr(addr: Ipv4Addr, port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(addr).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// Waits for the next event on `channel`, checks it is `want` for `id` with status 0, acks it.
fn expect_event(channel: *mut rdma_event_channel, id: *mut rdma_cm_id, want: rdma_cm_event_type) {
    let mut event = ptr::null_mut();
    // SAFETY: channel is live; event is a valid out pointer.
    let ret = unsafe { rdma_get_cm_event(channel, &mut event) };
    assert_eq!(
        ret,
        0,
        "rdma_get_cm_event: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: the event is valid until acked.
    let (got, status, ev_id) = unsafe { ((*event).event, (*event).status, (*event).id) };
    // SAFETY: event came from rdma_get_cm_event and is acked once.
    assert_eq!(unsafe { rdma_ack_cm_event(event) }, 0);
    assert_eq!((got, status), (want, 0), "event (type, status)");
    assert_eq!(ev_id, id);
}

#[test]
fn bind_and_resolve_own_address() {
    let device = rdma_verbs_test_kit::cm_device();
    let std::net::IpAddr::V4(addr) = rdma_verbs_test_kit::cm_addr() else {
        panic!("the CM address is not IPv4");
    };

    // SAFETY: no arguments.
    let channel = unsafe { rdma_create_event_channel() };
    assert!(
        !channel.is_null(),
        "rdma_create_event_channel: {}",
        std::io::Error::last_os_error()
    );
    let mut id = ptr::null_mut();
    // SAFETY: channel is live; id is a valid out pointer.
    let ret = unsafe {
        rdma_create_id(
            channel,
            &mut id,
            ptr::null_mut(),
            rdma_port_space::RDMA_PS_TCP,
        )
    };
    assert_eq!(
        ret,
        0,
        "rdma_create_id: {}",
        std::io::Error::last_os_error()
    );

    let mut src = sockaddr(addr, 0);
    // SAFETY: id is live; src is a sockaddr_in, which bind reads by its family.
    let ret = unsafe { rdma_bind_addr(id, ptr::addr_of_mut!(src).cast()) };
    assert_eq!(
        ret,
        0,
        "rdma_bind_addr({addr}): {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a bound id has its device.
    let name = unsafe { CStr::from_ptr(ibv_get_device_name((*(*id).verbs).device)) };
    assert_eq!(name.to_str(), Ok(device.as_str()), "the device of {addr}");
    // SAFETY: id is live; the address lies inside it.
    let local = unsafe { *rdma_get_local_addr(id).cast::<libc::sockaddr_in>() };
    assert_eq!(u32::from_be(local.sin_addr.s_addr), u32::from(addr));
    // SAFETY: id is live.
    assert_ne!(unsafe { rdma_get_src_port(id) }, 0, "bind picks a port");

    let mut dst = sockaddr(addr, 7471);
    // SAFETY: id is live; dst is a sockaddr_in; no source address (the bound one is used).
    let ret =
        unsafe { rdma_resolve_addr(id, ptr::null_mut(), ptr::addr_of_mut!(dst).cast(), 2000) };
    assert_eq!(
        ret,
        0,
        "rdma_resolve_addr: {}",
        std::io::Error::last_os_error()
    );
    expect_event(channel, id, rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED);
    // SAFETY: id is live; the address lies inside it.
    let peer = unsafe { *rdma_get_peer_addr(id).cast::<libc::sockaddr_in>() };
    assert_eq!(
        (
            u32::from_be(peer.sin_addr.s_addr),
            u16::from_be(peer.sin_port)
        ),
        (u32::from(addr), 7471)
    );

    // SAFETY: id is live with a resolved address.
    let ret = unsafe { rdma_resolve_route(id, 2000) };
    assert_eq!(
        ret,
        0,
        "rdma_resolve_route: {}",
        std::io::Error::last_os_error()
    );
    expect_event(
        channel,
        id,
        rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED,
    );

    // SAFETY: id is live, has no QP and no unacked event; destroyed once, before its channel.
    assert_eq!(unsafe { rdma_destroy_id(id) }, 0);
    // SAFETY: the channel's only id is gone.
    unsafe { rdma_destroy_event_channel(channel) };
}
