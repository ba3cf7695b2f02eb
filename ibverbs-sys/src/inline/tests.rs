//! Unit tests of the ports.

use super::*;

#[test]
fn inc_rkey_wraps_the_tag_only() {
    assert_eq!(ibv_inc_rkey(0x1234_5600), 0x1234_5601);
    assert_eq!(ibv_inc_rkey(0x1234_56ff), 0x1234_5600);
    assert_eq!(ibv_inc_rkey(0xffff_ffff), 0xffff_ff00);
}

#[test]
fn qpt_supported_tests_the_type_bit() {
    let caps = 1 << ibv_qp_type::IBV_QPT_RC.0;
    assert_eq!(ibv_is_qpt_supported(caps, ibv_qp_type::IBV_QPT_RC), 1);
    assert_eq!(ibv_is_qpt_supported(caps, ibv_qp_type::IBV_QPT_UD), 0);
    assert_eq!(ibv_is_qpt_supported(u32::MAX, ibv_qp_type(40)), 0);
}

#[test]
fn flow_label_maps_into_the_roce_port_range() {
    assert_eq!(ibv_flow_label_to_udp_sport(0), 0xC000);
    assert_eq!(ibv_flow_label_to_udp_sport(0x1), 0xC001);
    // The high 6 bits fold onto the low 14 bits.
    assert_eq!(ibv_flow_label_to_udp_sport(0x4000), 0xC001);
    assert_eq!(
        ibv_flow_label_to_udp_sport(0xFFFFF),
        0xC000 | (0x3FFF ^ 0x3F)
    );
}

/// Where the provider left a function out, the ports that return a status return
/// `EOPNOTSUPP` as libibverbs's stubs do, instead of calling a null pointer.
#[test]
fn missing_provider_functions_are_eopnotsupp() {
    use core::mem::zeroed;
    // SAFETY: all-zero is a valid value of these plain C structs: null pointers, no
    // operations (`None`), zero counts and an unlocked, zeroed mutex.
    let (mut ctx, mut pd, mut qp, mut cq, mut srq, mut mw) = unsafe {
        (
            zeroed::<ibv_context>(),
            zeroed::<ibv_pd>(),
            zeroed::<ibv_qp>(),
            zeroed::<ibv_cq>(),
            zeroed::<ibv_srq>(),
            zeroed::<ibv_mw>(),
        )
    };
    // SAFETY: as above.
    let (mut qpx, mut cqx, mut dm, mut wq, mut xrcd) = unsafe {
        (
            zeroed::<ibv_qp_ex>(),
            zeroed::<ibv_cq_ex>(),
            zeroed::<ibv_dm>(),
            zeroed::<ibv_wq>(),
            zeroed::<ibv_xrcd>(),
        )
    };
    let ctx_ptr: *mut ibv_context = &mut ctx;
    pd.context = ctx_ptr;
    qp.context = ctx_ptr;
    cq.context = ctx_ptr;
    srq.context = ctx_ptr;
    mw.context = ctx_ptr;
    mw.type_ = ibv_mw_type::IBV_MW_TYPE_1;
    xrcd.context = ctx_ptr;
    let mut send = ibv_send_wr::default();
    let mut recv = ibv_recv_wr::default();
    let mut bad_send = ptr::null_mut();
    let mut bad_recv = ptr::null_mut();
    let mut wc = [ibv_wc::default(); 4];
    let mut bind = ibv_mw_bind::default();
    let mut byte = 0u8;
    let mut attr = ibv_poll_cq_attr::default();
    // SAFETY: every object is valid for the port (a context without operations), and
    // every out-pointer is writable.
    unsafe {
        assert_eq!(
            ibv_post_send(&mut qp, &mut send, &mut bad_send),
            libc::EOPNOTSUPP
        );
        assert_eq!(bad_send, ptr::addr_of_mut!(send));
        assert_eq!(
            ibv_post_recv(&mut qp, &mut recv, &mut bad_recv),
            libc::EOPNOTSUPP
        );
        assert_eq!(bad_recv, ptr::addr_of_mut!(recv));
        bad_recv = ptr::null_mut();
        assert_eq!(
            ibv_post_srq_recv(&mut srq, &mut recv, &mut bad_recv),
            libc::EOPNOTSUPP
        );
        assert_eq!(bad_recv, ptr::addr_of_mut!(recv));
        bad_recv = ptr::null_mut();
        assert_eq!(
            ibv_post_wq_recv(&mut wq, &mut recv, &mut bad_recv),
            libc::EOPNOTSUPP
        );
        assert_eq!(bad_recv, ptr::addr_of_mut!(recv));
        assert_eq!(ibv_poll_cq(&mut cq, 4, wc.as_mut_ptr()), -libc::EOPNOTSUPP);
        assert_eq!(ibv_req_notify_cq(&mut cq, 0), libc::EOPNOTSUPP);
        set_errno(0);
        assert!(ibv_alloc_mw(&mut pd, ibv_mw_type::IBV_MW_TYPE_1).is_null());
        assert_eq!(*libc::__errno_location(), libc::EOPNOTSUPP);
        assert_eq!(ibv_bind_mw(&mut qp, &mut mw, &mut bind), libc::EOPNOTSUPP);
        assert_eq!(ibv_dealloc_mw(&mut mw), libc::EOPNOTSUPP);
        assert_eq!(ibv_close_xrcd(&mut xrcd), libc::EOPNOTSUPP);
        assert_eq!(
            ibv_memcpy_to_dm(&mut dm, 0, ptr::addr_of!(byte).cast(), 1),
            libc::EOPNOTSUPP
        );
        assert_eq!(
            ibv_memcpy_from_dm(ptr::addr_of_mut!(byte).cast(), &mut dm, 0, 1),
            libc::EOPNOTSUPP
        );
        assert_eq!(ibv_wr_complete(&mut qpx), libc::EOPNOTSUPP);
        assert_eq!(ibv_start_poll(&mut cqx, &mut attr), libc::EOPNOTSUPP);
        assert_eq!(ibv_next_poll(&mut cqx), libc::EOPNOTSUPP);
    }
}

#[test]
fn verbs_context_ends_with_the_context() {
    assert_eq!(
        offset_of!(verbs_context, context) + size_of::<ibv_context>(),
        size_of::<verbs_context>()
    );
}
