//! Rust ports of the `static inline` functions of `<rdma/rdma_cma.h>` and
//! `<rdma/rdma_verbs.h>`, which have no symbol in librdmacm. Each behaves as its C original:
//! the `rdma_post_*` and `rdma_dereg_mr` helpers return 0 or -1 with `errno` set.

use core::ffi::{c_int, c_void};
use core::ptr;

use libc::sockaddr;
use rdma_verbs_sys::{
    ibv_access_flags, ibv_ack_cq_events, ibv_ah, ibv_cq, ibv_dereg_mr, ibv_get_cq_event, ibv_mr,
    ibv_poll_cq, ibv_post_recv, ibv_post_send, ibv_post_srq_recv, ibv_recv_wr, ibv_reg_mr,
    ibv_req_notify_cq, ibv_send_wr, ibv_sge, ibv_wc, ibv_wr_opcode,
};

use crate::{rdma_cm_id, RDMA_UDP_QKEY};

/// `rdma_get_local_addr`: the id's source address (inside the id).
///
/// # Safety
/// `id` must be a live CM id.
#[inline]
pub unsafe fn rdma_get_local_addr(id: *mut rdma_cm_id) -> *mut sockaddr {
    // SAFETY: id is live (caller); the union member's address is the union's.
    unsafe { ptr::addr_of_mut!((*id).route.addr.__bindgen_anon_1.src_addr).cast() }
}

/// `rdma_get_peer_addr`: the id's destination address (inside the id).
///
/// # Safety
/// `id` must be a live CM id.
#[inline]
pub unsafe fn rdma_get_peer_addr(id: *mut rdma_cm_id) -> *mut sockaddr {
    // SAFETY: id is live (caller); the union member's address is the union's.
    unsafe { ptr::addr_of_mut!((*id).route.addr.__bindgen_anon_2.dst_addr).cast() }
}

/// `rdma_seterrno`: a nonzero `ret` goes to `errno` and becomes -1.
#[inline]
pub fn rdma_seterrno(ret: c_int) -> c_int {
    if ret == 0 {
        return 0;
    }
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() = ret };
    -1
}

/// `ibv_reg_mr` on the id's PD with `access`: the three `rdma_reg_*` helpers.
///
/// # Safety
/// As `ibv_reg_mr`; `id` live with a PD.
unsafe fn reg(
    id: *mut rdma_cm_id,
    addr: *mut c_void,
    length: usize,
    access: ibv_access_flags,
) -> *mut ibv_mr {
    // SAFETY: the caller's contract; the flag values fit a c_int.
    unsafe { ibv_reg_mr((*id).pd, addr, length, access.0 as c_int) }
}

/// `rdma_reg_msgs`: registers a buffer for sends and receives on the id's PD.
///
/// # Safety
/// `id` must be live with a PD (a QP made by `rdma_create_qp`); `addr..addr+length` must stay
/// valid until the region is deregistered.
#[inline]
pub unsafe fn rdma_reg_msgs(id: *mut rdma_cm_id, addr: *mut c_void, length: usize) -> *mut ibv_mr {
    // SAFETY: the caller's contract.
    unsafe { reg(id, addr, length, ibv_access_flags::IBV_ACCESS_LOCAL_WRITE) }
}

/// `rdma_reg_read`: registers a buffer the peer may RDMA-read.
///
/// # Safety
/// As [`rdma_reg_msgs`].
#[inline]
pub unsafe fn rdma_reg_read(id: *mut rdma_cm_id, addr: *mut c_void, length: usize) -> *mut ibv_mr {
    let access =
        ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_READ;
    // SAFETY: the caller's contract.
    unsafe { reg(id, addr, length, access) }
}

/// `rdma_reg_write`: registers a buffer the peer may RDMA-write.
///
/// # Safety
/// As [`rdma_reg_msgs`].
#[inline]
pub unsafe fn rdma_reg_write(id: *mut rdma_cm_id, addr: *mut c_void, length: usize) -> *mut ibv_mr {
    let access =
        ibv_access_flags::IBV_ACCESS_LOCAL_WRITE | ibv_access_flags::IBV_ACCESS_REMOTE_WRITE;
    // SAFETY: the caller's contract.
    unsafe { reg(id, addr, length, access) }
}

/// `rdma_dereg_mr`: `ibv_dereg_mr`, with the error in `errno`.
///
/// # Safety
/// As `ibv_dereg_mr`.
#[inline]
pub unsafe fn rdma_dereg_mr(mr: *mut ibv_mr) -> c_int {
    // SAFETY: the caller's contract.
    rdma_seterrno(unsafe { ibv_dereg_mr(mr) })
}

/// `rdma_post_recvv`: posts one receive of `nsge` entries to the id's SRQ, else its QP.
///
/// # Safety
/// `id` must be live with a QP; `sgl` valid for `nsge` entries whose buffers stay registered
/// and valid until the receive completes.
#[inline]
pub unsafe fn rdma_post_recvv(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    sgl: *mut ibv_sge,
    nsge: c_int,
) -> c_int {
    let mut wr = ibv_recv_wr {
        wr_id: context as u64,
        next: ptr::null_mut(),
        sg_list: sgl,
        num_sge: nsge,
    };
    let mut bad = ptr::null_mut();
    // SAFETY: id is live (caller); wr and bad outlive the call.
    let ret = unsafe {
        if (*id).srq.is_null() {
            ibv_post_recv((*id).qp, &mut wr, &mut bad)
        } else {
            ibv_post_srq_recv((*id).srq, &mut wr, &mut bad)
        }
    };
    rdma_seterrno(ret)
}

/// Posts `wr` (one request) on the id's QP.
///
/// # Safety
/// `id` live with a QP; `wr`'s buffers as the verbs require.
unsafe fn post_send(id: *mut rdma_cm_id, mut wr: ibv_send_wr) -> c_int {
    let mut bad = ptr::null_mut();
    // SAFETY: the caller's contract; wr and bad outlive the call.
    rdma_seterrno(unsafe { ibv_post_send((*id).qp, &mut wr, &mut bad) })
}

/// A send request of `opcode` over `sgl`.
fn send_wr(
    context: *mut c_void,
    sgl: *mut ibv_sge,
    nsge: c_int,
    opcode: ibv_wr_opcode,
    flags: c_int,
) -> ibv_send_wr {
    ibv_send_wr {
        wr_id: context as u64,
        sg_list: sgl,
        num_sge: nsge,
        opcode,
        send_flags: flags as u32,
        ..Default::default()
    }
}

/// `rdma_post_sendv`: posts one send of `nsge` entries.
///
/// # Safety
/// As [`rdma_post_recvv`], for a send.
#[inline]
pub unsafe fn rdma_post_sendv(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    sgl: *mut ibv_sge,
    nsge: c_int,
    flags: c_int,
) -> c_int {
    let wr = send_wr(context, sgl, nsge, ibv_wr_opcode::IBV_WR_SEND, flags);
    // SAFETY: the caller's contract.
    unsafe { post_send(id, wr) }
}

/// `rdma_post_readv`: posts one RDMA read of `nsge` entries from `remote_addr`/`rkey`.
///
/// # Safety
/// As [`rdma_post_sendv`].
#[inline]
pub unsafe fn rdma_post_readv(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    sgl: *mut ibv_sge,
    nsge: c_int,
    flags: c_int,
    remote_addr: u64,
    rkey: u32,
) -> c_int {
    let mut wr = send_wr(context, sgl, nsge, ibv_wr_opcode::IBV_WR_RDMA_READ, flags);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    // SAFETY: the caller's contract.
    unsafe { post_send(id, wr) }
}

/// `rdma_post_writev`: posts one RDMA write of `nsge` entries to `remote_addr`/`rkey`.
///
/// # Safety
/// As [`rdma_post_sendv`].
#[inline]
pub unsafe fn rdma_post_writev(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    sgl: *mut ibv_sge,
    nsge: c_int,
    flags: c_int,
    remote_addr: u64,
    rkey: u32,
) -> c_int {
    let mut wr = send_wr(context, sgl, nsge, ibv_wr_opcode::IBV_WR_RDMA_WRITE, flags);
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = rkey;
    // SAFETY: the caller's contract.
    unsafe { post_send(id, wr) }
}

/// One entry over `addr..addr+length` with `mr`'s lkey (0 without `mr`, for inline sends).
///
/// # Safety
/// `mr` is null or a live MR.
unsafe fn sge(addr: *mut c_void, length: usize, mr: *mut ibv_mr) -> ibv_sge {
    ibv_sge {
        addr: addr as u64,
        length: length as u32,
        lkey: if mr.is_null() {
            0
        } else {
            // SAFETY: mr is live when not null (caller).
            unsafe { (*mr).lkey }
        },
    }
}

/// `rdma_post_recv`: posts one receive into `addr..addr+length` of `mr`.
///
/// # Safety
/// As [`rdma_post_recvv`]; `mr` a live MR that covers the buffer (C asserts it).
#[inline]
pub unsafe fn rdma_post_recv(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    addr: *mut c_void,
    length: usize,
    mr: *mut ibv_mr,
) -> c_int {
    // SAFETY: mr is live (caller).
    let (base, len) = unsafe { ((*mr).addr as usize, (*mr).length) };
    debug_assert!(addr as usize >= base && addr as usize + length <= base + len);
    // SAFETY: the caller's contract.
    unsafe {
        let mut sge = sge(addr, length, mr);
        rdma_post_recvv(id, context, &mut sge, 1)
    }
}

/// `rdma_post_send`: posts one send of `addr..addr+length` (`mr` may be null for inline data).
///
/// # Safety
/// As [`rdma_post_sendv`]; `mr` null or a live MR covering the buffer.
#[inline]
pub unsafe fn rdma_post_send(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    addr: *mut c_void,
    length: usize,
    mr: *mut ibv_mr,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let mut sge = sge(addr, length, mr);
        rdma_post_sendv(id, context, &mut sge, 1, flags)
    }
}

/// `rdma_post_read`: posts one RDMA read into `addr..addr+length` of `mr`.
///
/// # Safety
/// As [`rdma_post_readv`]; `mr` a live MR covering the buffer.
#[inline]
#[allow(clippy::too_many_arguments)] // C's signature
pub unsafe fn rdma_post_read(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    addr: *mut c_void,
    length: usize,
    mr: *mut ibv_mr,
    flags: c_int,
    remote_addr: u64,
    rkey: u32,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let mut sge = sge(addr, length, mr);
        rdma_post_readv(id, context, &mut sge, 1, flags, remote_addr, rkey)
    }
}

/// `rdma_post_write`: posts one RDMA write of `addr..addr+length` (`mr` may be null for inline
/// data).
///
/// # Safety
/// As [`rdma_post_writev`]; `mr` null or a live MR covering the buffer.
#[inline]
#[allow(clippy::too_many_arguments)] // C's signature
pub unsafe fn rdma_post_write(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    addr: *mut c_void,
    length: usize,
    mr: *mut ibv_mr,
    flags: c_int,
    remote_addr: u64,
    rkey: u32,
) -> c_int {
    // SAFETY: the caller's contract.
    unsafe {
        let mut sge = sge(addr, length, mr);
        rdma_post_writev(id, context, &mut sge, 1, flags, remote_addr, rkey)
    }
}

/// `rdma_post_ud_send`: posts one UD send to `ah`/`remote_qpn` with the rdma_cm Q_Key
/// ([`RDMA_UDP_QKEY`]).
///
/// # Safety
/// As [`rdma_post_send`]; `ah` a live address handle.
#[inline]
#[allow(clippy::too_many_arguments)] // C's signature
pub unsafe fn rdma_post_ud_send(
    id: *mut rdma_cm_id,
    context: *mut c_void,
    addr: *mut c_void,
    length: usize,
    mr: *mut ibv_mr,
    flags: c_int,
    ah: *mut ibv_ah,
    remote_qpn: u32,
) -> c_int {
    // SAFETY: mr is null or live (caller).
    let mut sge = unsafe { sge(addr, length, mr) };
    let mut wr = send_wr(context, &mut sge, 1, ibv_wr_opcode::IBV_WR_SEND, flags);
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
    // SAFETY: the caller's contract; sge outlives the call.
    unsafe { post_send(id, wr) }
}

/// Polls `cq` for one completion, arming it and blocking on its channel while it is empty:
/// the loop of `rdma_get_send_comp` / `rdma_get_recv_comp`.
///
/// # Safety
/// `cq` live, created on `channel`'s completion channel (as `rdma_create_qp` does without
/// CQs of the caller's); `wc` valid for one write.
unsafe fn get_comp(
    cq: *mut ibv_cq,
    channel: *mut rdma_verbs_sys::ibv_comp_channel,
    wc: *mut ibv_wc,
) -> c_int {
    loop {
        // SAFETY: the caller's contract for cq, channel and wc; the out pointers are locals.
        unsafe {
            let ret = ibv_poll_cq(cq, 1, wc);
            if ret != 0 {
                return if ret < 0 { rdma_seterrno(ret) } else { ret };
            }
            let ret = ibv_req_notify_cq(cq, 0);
            if ret != 0 {
                return rdma_seterrno(ret);
            }
            let ret = ibv_poll_cq(cq, 1, wc);
            if ret != 0 {
                return if ret < 0 { rdma_seterrno(ret) } else { ret };
            }
            let (mut ev_cq, mut ev_ctx) = (ptr::null_mut(), ptr::null_mut());
            let ret = ibv_get_cq_event(channel, &mut ev_cq, &mut ev_ctx);
            if ret != 0 {
                return ret;
            }
            debug_assert!(ev_cq == cq);
            ibv_ack_cq_events(cq, 1);
        }
    }
}

/// `rdma_get_send_comp`: waits for one completion on the id's send CQ; returns the number
/// polled (1), or -1 with `errno` set.
///
/// # Safety
/// `id` live with a QP whose CQs `rdma_create_qp` created (the id's CQ channels are set);
/// `wc` valid for one write.
#[inline]
pub unsafe fn rdma_get_send_comp(id: *mut rdma_cm_id, wc: *mut ibv_wc) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { get_comp((*id).send_cq, (*id).send_cq_channel, wc) }
}

/// `rdma_get_recv_comp`: waits for one completion on the id's receive CQ, as
/// [`rdma_get_send_comp`].
///
/// # Safety
/// As [`rdma_get_send_comp`].
#[inline]
pub unsafe fn rdma_get_recv_comp(id: *mut rdma_cm_id, wc: *mut ibv_wc) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { get_comp((*id).recv_cq, (*id).recv_cq_channel, wc) }
}
