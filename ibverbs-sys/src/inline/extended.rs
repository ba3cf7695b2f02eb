//! Extended object creation and calls through `verbs_context` (`ibv_create_cq_ex`,
//! `ibv_create_qp_ex`, flows, work queues, counters, device memory, ...).

use core::ffi::{c_int, c_uint, c_void};
use core::ptr;

use super::{set_errno, verbs_get_ctx};
use crate::*;

/// Calls the extended operation `$op` or fails like C: `NULL` with `errno = EOPNOTSUPP`.
macro_rules! ctx_create {
    ($ctx:expr, $op:ident ( $($arg:expr),* )) => {
        match ctx_op!($ctx, $op) {
            Some(f) => f($($arg),*),
            None => {
                set_errno(libc::EOPNOTSUPP);
                ptr::null_mut()
            }
        }
    };
}

/// Calls the extended operation `$op` or returns `EOPNOTSUPP`.
macro_rules! ctx_call {
    ($ctx:expr, $op:ident ( $($arg:expr),* )) => {
        match ctx_op!($ctx, $op) {
            Some(f) => f($($arg),*),
            None => libc::EOPNOTSUPP,
        }
    };
}

/// `ibv_create_cq_ex`: creates an extended CQ.
///
/// # Safety
/// `context` must be live and `cq_attr` valid.
#[inline]
pub unsafe fn ibv_create_cq_ex(
    context: *mut ibv_context,
    cq_attr: *mut ibv_cq_init_attr_ex,
) -> *mut ibv_cq_ex {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, create_cq_ex(context, cq_attr)) }
}

/// `ibv_cq_ex_to_cq`: the `ibv_cq` at the start of an `ibv_cq_ex`.
#[inline]
pub fn ibv_cq_ex_to_cq(cq: *mut ibv_cq_ex) -> *mut ibv_cq {
    cq.cast()
}

/// `ibv_modify_cq`: changes CQ moderation.
///
/// # Safety
/// `cq` must be live and `attr` valid.
#[inline]
pub unsafe fn ibv_modify_cq(cq: *mut ibv_cq, attr: *mut ibv_modify_cq_attr) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_call!((*cq).context, modify_cq(cq, attr)) }
}

/// `ibv_create_qp_ex`: creates a QP with extended attributes (such as the `ibv_wr_*` API).
///
/// # Safety
/// `context` must be live and `qp_init_attr_ex` valid.
#[inline]
pub unsafe fn ibv_create_qp_ex(
    context: *mut ibv_context,
    qp_init_attr_ex: *mut ibv_qp_init_attr_ex,
) -> *mut ibv_qp {
    // SAFETY: pointers valid (caller). The prefix of ibv_qp_init_attr_ex is
    // ibv_qp_init_attr, as C relies on.
    unsafe {
        let mask = (*qp_init_attr_ex).comp_mask;
        if mask == ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0 {
            return ibv_create_qp((*qp_init_attr_ex).pd, qp_init_attr_ex.cast());
        }
        ctx_create!(context, create_qp_ex(context, qp_init_attr_ex))
    }
}

/// `ibv_open_qp`: opens a shareable (XRC target) QP.
///
/// # Safety
/// `context` must be live and `qp_open_attr` valid.
#[inline]
pub unsafe fn ibv_open_qp(
    context: *mut ibv_context,
    qp_open_attr: *mut ibv_qp_open_attr,
) -> *mut ibv_qp {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, open_qp(context, qp_open_attr)) }
}

/// `ibv_modify_qp_rate_limit`: sets a QP's packet pacing.
///
/// # Safety
/// `qp` must be live and `attr` valid.
#[inline]
pub unsafe fn ibv_modify_qp_rate_limit(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_rate_limit_attr,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_call!((*qp).context, modify_qp_rate_limit(qp, attr)) }
}

/// `ibv_create_srq_ex`: creates an SRQ with extended attributes (XRC, tag matching).
///
/// # Safety
/// `context` must be live and `attr` valid.
#[inline]
pub unsafe fn ibv_create_srq_ex(
    context: *mut ibv_context,
    attr: *mut ibv_srq_init_attr_ex,
) -> *mut ibv_srq {
    use ibv_srq_init_attr_mask as M;
    // SAFETY: pointers valid (caller). The prefix of ibv_srq_init_attr_ex is
    // ibv_srq_init_attr, as C relies on.
    unsafe {
        let mask = (*attr).comp_mask;
        let basic = M::IBV_SRQ_INIT_ATTR_PD.0 | M::IBV_SRQ_INIT_ATTR_TYPE.0;
        if mask & !basic == 0
            && mask & M::IBV_SRQ_INIT_ATTR_PD.0 != 0
            && (mask & M::IBV_SRQ_INIT_ATTR_TYPE.0 == 0
                || (*attr).srq_type == ibv_srq_type::IBV_SRQT_BASIC)
        {
            return ibv_create_srq((*attr).pd, attr.cast());
        }
        ctx_create!(context, create_srq_ex(context, attr))
    }
}

/// `ibv_get_srq_num`: the SRQ number of an XRC SRQ.
///
/// # Safety
/// `srq` must be live and `srq_num` valid for writes.
#[inline]
pub unsafe fn ibv_get_srq_num(srq: *mut ibv_srq, srq_num: *mut u32) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_call!((*srq).context, get_srq_num(srq, srq_num)) }
}

/// `ibv_post_srq_ops`: posts tag-matching operations to an SRQ.
///
/// # Safety
/// `srq` must be live and `op` a valid list.
#[inline]
pub unsafe fn ibv_post_srq_ops(
    srq: *mut ibv_srq,
    op: *mut ibv_ops_wr,
    bad_op: *mut *mut ibv_ops_wr,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe {
        match ctx_op!((*srq).context, post_srq_ops) {
            Some(f) => f(srq, op, bad_op),
            None => {
                *bad_op = op;
                libc::EOPNOTSUPP
            }
        }
    }
}

/// `ibv_open_xrcd`: opens an XRC domain.
///
/// # Safety
/// `context` must be live and `attr` valid.
#[inline]
pub unsafe fn ibv_open_xrcd(
    context: *mut ibv_context,
    attr: *mut ibv_xrcd_init_attr,
) -> *mut ibv_xrcd {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, open_xrcd(context, attr)) }
}

/// `ibv_close_xrcd`: closes an XRC domain; `EOPNOTSUPP` where the provider has no
/// `close_xrcd`.
///
/// # Safety
/// `xrcd` must be live.
#[inline]
pub unsafe fn ibv_close_xrcd(xrcd: *mut ibv_xrcd) -> c_int {
    // SAFETY: xrcd is live (caller), so is its context.
    unsafe { ctx_call!((*xrcd).context, close_xrcd(xrcd)) }
}

/// `ibv_alloc_td`: allocates a thread domain.
///
/// # Safety
/// `context` must be live and `init_attr` valid.
#[inline]
pub unsafe fn ibv_alloc_td(
    context: *mut ibv_context,
    init_attr: *mut ibv_td_init_attr,
) -> *mut ibv_td {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, alloc_td(context, init_attr)) }
}

/// `ibv_dealloc_td`: frees a thread domain.
///
/// # Safety
/// `td` must be live.
#[inline]
pub unsafe fn ibv_dealloc_td(td: *mut ibv_td) -> c_int {
    // SAFETY: td live (caller).
    unsafe { ctx_call!((*td).context, dealloc_td(td)) }
}

/// `ibv_alloc_parent_domain`: allocates a parent domain (a PD with a TD and allocators).
///
/// # Safety
/// `context` must be live and `attr` valid.
#[inline]
pub unsafe fn ibv_alloc_parent_domain(
    context: *mut ibv_context,
    attr: *mut ibv_parent_domain_init_attr,
) -> *mut ibv_pd {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, alloc_parent_domain(context, attr)) }
}

/// `ibv_advise_mr`: gives the provider advice (such as prefetch) about MR ranges.
///
/// # Safety
/// `pd` must be live and `sg_list` valid for `num_sge` reads.
#[inline]
pub unsafe fn ibv_advise_mr(
    pd: *mut ibv_pd,
    advice: ib_uverbs_advise_mr_advice,
    flags: u32,
    sg_list: *mut ibv_sge,
    num_sge: u32,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe {
        ctx_call!(
            (*pd).context,
            advise_mr(pd, advice, flags, sg_list, num_sge)
        )
    }
}

/// `ibv_alloc_null_mr`: allocates an MR whose reads return zeroes and writes are dropped.
///
/// # Safety
/// `pd` must be live.
#[inline]
pub unsafe fn ibv_alloc_null_mr(pd: *mut ibv_pd) -> *mut ibv_mr {
    // SAFETY: pd live (caller).
    unsafe { ctx_create!((*pd).context, alloc_null_mr(pd)) }
}

/// `ibv_alloc_dm`: allocates device memory.
///
/// # Safety
/// `context` must be live and `attr` valid.
#[inline]
pub unsafe fn ibv_alloc_dm(context: *mut ibv_context, attr: *mut ibv_alloc_dm_attr) -> *mut ibv_dm {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, alloc_dm(context, attr)) }
}

/// `ibv_free_dm`: frees device memory.
///
/// # Safety
/// `dm` must be live.
#[inline]
pub unsafe fn ibv_free_dm(dm: *mut ibv_dm) -> c_int {
    // SAFETY: dm live (caller).
    unsafe { ctx_call!((*dm).context, free_dm(dm)) }
}

/// `ibv_memcpy_to_dm`: copies host memory into device memory; `EOPNOTSUPP` where the
/// provider left `memcpy_to_dm` unset.
///
/// # Safety
/// `dm` must be live and `host_addr` valid for `length` reads.
#[inline]
pub unsafe fn ibv_memcpy_to_dm(
    dm: *mut ibv_dm,
    dm_offset: u64,
    host_addr: *const c_void,
    length: usize,
) -> c_int {
    // SAFETY: dm live, host_addr readable (caller).
    unsafe {
        call_or!(
            (*dm).memcpy_to_dm,
            (dm, dm_offset, host_addr, length),
            libc::EOPNOTSUPP
        )
    }
}

/// `ibv_memcpy_from_dm`: copies device memory into host memory; `EOPNOTSUPP` where the
/// provider left `memcpy_from_dm` unset.
///
/// # Safety
/// `dm` must be live and `host_addr` valid for `length` writes.
#[inline]
pub unsafe fn ibv_memcpy_from_dm(
    host_addr: *mut c_void,
    dm: *mut ibv_dm,
    dm_offset: u64,
    length: usize,
) -> c_int {
    // SAFETY: dm live, host_addr writable (caller).
    unsafe {
        call_or!(
            (*dm).memcpy_from_dm,
            (host_addr, dm, dm_offset, length),
            libc::EOPNOTSUPP
        )
    }
}

/// `ibv_reg_dm_mr`: registers device memory as an MR.
///
/// # Safety
/// `pd` and `dm` must be live.
#[inline]
pub unsafe fn ibv_reg_dm_mr(
    pd: *mut ibv_pd,
    dm: *mut ibv_dm,
    dm_offset: u64,
    length: usize,
    access: c_uint,
) -> *mut ibv_mr {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!((*pd).context, reg_dm_mr(pd, dm, dm_offset, length, access)) }
}

/// `ibv_create_flow`: attaches a steering rule to a QP.
///
/// # Safety
/// `qp` must be live and `flow` a valid rule.
#[inline]
pub unsafe fn ibv_create_flow(qp: *mut ibv_qp, flow: *mut ibv_flow_attr) -> *mut ibv_flow {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!((*qp).context, ibv_create_flow(qp, flow)) }
}

/// `ibv_destroy_flow`: removes a steering rule.
///
/// # Safety
/// `flow_id` must be live.
#[inline]
pub unsafe fn ibv_destroy_flow(flow_id: *mut ibv_flow) -> c_int {
    // SAFETY: flow live (caller).
    unsafe { ctx_call!((*flow_id).context, ibv_destroy_flow(flow_id)) }
}

/// `ibv_create_flow_action_esp`: creates an IPsec ESP flow action.
///
/// # Safety
/// `ctx` must be live and `esp` valid.
#[inline]
pub unsafe fn ibv_create_flow_action_esp(
    ctx: *mut ibv_context,
    esp: *mut ibv_flow_action_esp_attr,
) -> *mut ibv_flow_action {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(ctx, create_flow_action_esp(ctx, esp)) }
}

/// `ibv_modify_flow_action_esp`: modifies an IPsec ESP flow action.
///
/// # Safety
/// `action` must be live and `esp` valid.
#[inline]
pub unsafe fn ibv_modify_flow_action_esp(
    action: *mut ibv_flow_action,
    esp: *mut ibv_flow_action_esp_attr,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_call!((*action).context, modify_flow_action_esp(action, esp)) }
}

/// `ibv_destroy_flow_action`: destroys a flow action.
///
/// # Safety
/// `action` must be live.
#[inline]
pub unsafe fn ibv_destroy_flow_action(action: *mut ibv_flow_action) -> c_int {
    // SAFETY: action live (caller).
    unsafe { ctx_call!((*action).context, destroy_flow_action(action)) }
}

/// `ibv_create_wq`: creates a work queue (RSS receive queue).
///
/// # Safety
/// `context` must be live and `wq_init_attr` valid.
#[inline]
pub unsafe fn ibv_create_wq(
    context: *mut ibv_context,
    wq_init_attr: *mut ibv_wq_init_attr,
) -> *mut ibv_wq {
    // SAFETY: pointers valid (caller); a returned wq is a live object we initialise as C does.
    unsafe {
        let wq = ctx_create!(context, create_wq(context, wq_init_attr));
        if !wq.is_null() {
            (*wq).wq_context = (*wq_init_attr).wq_context;
            (*wq).events_completed = 0;
            libc::pthread_mutex_init(&mut (*wq).mutex, ptr::null());
            libc::pthread_cond_init(&mut (*wq).cond, ptr::null());
        }
        wq
    }
}

/// `ibv_modify_wq`: modifies a work queue.
///
/// # Safety
/// `wq` must be live and `wq_attr` valid.
#[inline]
pub unsafe fn ibv_modify_wq(wq: *mut ibv_wq, wq_attr: *mut ibv_wq_attr) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_call!((*wq).context, modify_wq(wq, wq_attr)) }
}

/// `ibv_destroy_wq`: destroys a work queue.
///
/// # Safety
/// `wq` must be live.
#[inline]
pub unsafe fn ibv_destroy_wq(wq: *mut ibv_wq) -> c_int {
    // SAFETY: wq live (caller).
    unsafe { ctx_call!((*wq).context, destroy_wq(wq)) }
}

/// `ibv_post_wq_recv`: posts receive work requests to a work queue (`EOPNOTSUPP` as
/// [`ibv_post_send`]).
///
/// # Safety
/// `wq` must be live, `recv_wr` a valid list and `bad_recv_wr` valid for a write.
#[inline]
pub unsafe fn ibv_post_wq_recv(
    wq: *mut ibv_wq,
    recv_wr: *mut ibv_recv_wr,
    bad_recv_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: wq live, bad_recv_wr writable (caller).
    unsafe {
        call_or!((*wq).post_recv, (wq, recv_wr, bad_recv_wr), {
            *bad_recv_wr = recv_wr;
            libc::EOPNOTSUPP
        })
    }
}

/// `ibv_create_rwq_ind_table`: creates a receive WQ indirection table.
///
/// # Safety
/// `context` must be live and `init_attr` valid.
#[inline]
pub unsafe fn ibv_create_rwq_ind_table(
    context: *mut ibv_context,
    init_attr: *mut ibv_rwq_ind_table_init_attr,
) -> *mut ibv_rwq_ind_table {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, create_rwq_ind_table(context, init_attr)) }
}

/// `ibv_destroy_rwq_ind_table`: destroys a receive WQ indirection table.
///
/// # Safety
/// `table` must be live.
#[inline]
pub unsafe fn ibv_destroy_rwq_ind_table(table: *mut ibv_rwq_ind_table) -> c_int {
    // SAFETY: table live (caller).
    unsafe { ctx_call!((*table).context, destroy_rwq_ind_table(table)) }
}

/// `ibv_create_counters`: creates a counters object.
///
/// # Safety
/// `context` must be live and `init_attr` valid.
#[inline]
pub unsafe fn ibv_create_counters(
    context: *mut ibv_context,
    init_attr: *mut ibv_counters_init_attr,
) -> *mut ibv_counters {
    // SAFETY: pointers valid (caller).
    unsafe { ctx_create!(context, create_counters(context, init_attr)) }
}

/// `ibv_destroy_counters`: destroys a counters object.
///
/// # Safety
/// `counters` must be live.
#[inline]
pub unsafe fn ibv_destroy_counters(counters: *mut ibv_counters) -> c_int {
    // SAFETY: counters live (caller).
    unsafe { ctx_call!((*counters).context, destroy_counters(counters)) }
}

/// `ibv_attach_counters_point_flow`: attaches counters to a flow.
///
/// # Safety
/// All pointers must be valid.
#[inline]
pub unsafe fn ibv_attach_counters_point_flow(
    counters: *mut ibv_counters,
    attr: *mut ibv_counter_attach_attr,
    flow: *mut ibv_flow,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe {
        ctx_call!(
            (*counters).context,
            attach_counters_point_flow(counters, attr, flow)
        )
    }
}

/// `ibv_read_counters`: reads `ncounters` counter values.
///
/// # Safety
/// `counters` must be live and `counters_value` valid for `ncounters` writes.
#[inline]
pub unsafe fn ibv_read_counters(
    counters: *mut ibv_counters,
    counters_value: *mut u64,
    ncounters: u32,
    flags: u32,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe {
        ctx_call!(
            (*counters).context,
            read_counters(counters, counters_value, ncounters, flags)
        )
    }
}
