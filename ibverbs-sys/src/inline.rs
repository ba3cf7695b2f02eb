//! Rust ports of the `static inline` functions of `<infiniband/verbs.h>`.
//!
//! bindgen cannot bind these: they have no symbol in `libibverbs.so`. Each port does exactly
//! what the C header does: a call through the context's ops table (`ibv_context::ops`), the
//! extended `verbs_context` table, or the function pointers of `ibv_qp_ex` / `ibv_cq_ex`.
//! Signatures and return conventions (errno values returned, or `NULL` with `errno` set) are
//! the C ones.
//!
//! # Calls through provider function pointers
//! C calls these pointers without a check; the ports do not call a null one:
//! - A port that returns a status (an errno, a count, or a pointer with `errno`) checks the
//!   pointer and, where it is null, returns what libibverbs's own stubs for a missing
//!   operation return: `EOPNOTSUPP` (`-EOPNOTSUPP` from [`ibv_poll_cq`], whose errors are
//!   negative; `NULL` with `errno` set from the constructors). A post that fails so points
//!   its `bad_wr` at the first request, as a failing provider does. One compare on the hot
//!   path: libibverbs fills every empty slot of `ibv_context_ops` with such a stub, so the
//!   pointer is not null there in practice, and a provider's `EOPNOTSUPP` means the same.
//! - The `ibv_wr_*` calls of `ibv_qp_ex` and `ibv_end_poll` / `ibv_wc_read_*` of
//!   `ibv_cq_ex` return nothing or a value, with no status to report a missing pointer in:
//!   they require the pointer set, which is part of their `# Safety` contract. A provider
//!   sets the operations an object was created with (rxe leaves the others null), and a
//!   caller that does not know its provider checks the pointer (`(*qp).wr_send.is_some()`)
//!   once, after creating the object. A null one is caught by a debug assertion.

use core::ffi::{c_int, c_uint, c_void};
use core::mem::{offset_of, size_of};
use core::ptr;

use crate::*;

/// `__VERBS_ABI_IS_EXTENDED`: the marker in `ibv_context::abi_compat` of a `verbs_context`.
pub const VERBS_ABI_IS_EXTENDED: *mut c_void = usize::MAX as *mut c_void;

#[inline]
unsafe fn set_errno(err: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() = err };
}

/// The provider function pointer of a call with no status to report its absence in: the
/// caller's contract makes it non-null (see the module docs).
macro_rules! required_op {
    ($ptr:expr) => {
        $ptr.unwrap_unchecked()
    };
}

/// Calls the provider function pointer `$ptr` with `$args`, or evaluates `$missing` when the
/// provider left it null.
macro_rules! call_or {
    ($ptr:expr, ($($arg:expr),*), $missing:expr) => {
        match $ptr {
            Some(f) => f($($arg),*),
            None => $missing,
        }
    };
}

/// `verbs_get_ctx`: the `verbs_context` around `ctx`, or null for a legacy provider.
///
/// # Safety
/// `ctx` must point to a live `ibv_context`.
#[inline]
pub unsafe fn verbs_get_ctx(ctx: *mut ibv_context) -> *mut verbs_context {
    // SAFETY: ctx is a live context (caller); when abi_compat carries the marker it is the
    // last field of a verbs_context, so stepping back by its offset stays in that object.
    unsafe {
        if (*ctx).abi_compat != VERBS_ABI_IS_EXTENDED {
            return ptr::null_mut();
        }
        ctx.byte_sub(offset_of!(verbs_context, context)).cast()
    }
}

/// `verbs_get_ctx_op`: the provider's extended operation `$op`, if the provider's
/// `verbs_context` is large enough to have it and it is set.
macro_rules! ctx_op {
    ($ctx:expr, $op:ident) => {{
        let vctx = verbs_get_ctx($ctx);
        if vctx.is_null()
            || (*vctx).sz < size_of::<verbs_context>() - offset_of!(verbs_context, $op)
        {
            None
        } else {
            (*vctx).$op
        }
    }};
}

// ---------------------------------------------------------------------------------------------
// Data path: ops table of ibv_context.

/// `ibv_post_send`: posts a list of send work requests; `EOPNOTSUPP`, with `*bad_wr` the
/// first request, where the provider has no `post_send`.
///
/// # Safety
/// `qp` must be a live QP; `wr` a valid list whose buffers stay valid as the verbs require;
/// `bad_wr` valid for a write.
#[inline]
pub unsafe fn ibv_post_send(
    qp: *mut ibv_qp,
    wr: *mut ibv_send_wr,
    bad_wr: *mut *mut ibv_send_wr,
) -> c_int {
    // SAFETY: qp is live (caller), so is its context; bad_wr is writable (caller).
    unsafe {
        call_or!((*(*qp).context).ops.post_send, (qp, wr, bad_wr), {
            *bad_wr = wr;
            libc::EOPNOTSUPP
        })
    }
}

/// `ibv_post_recv`: posts a list of receive work requests (`EOPNOTSUPP` as
/// [`ibv_post_send`]).
///
/// # Safety
/// As [`ibv_post_send`].
#[inline]
pub unsafe fn ibv_post_recv(
    qp: *mut ibv_qp,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: qp is live (caller), so is its context; bad_wr is writable (caller).
    unsafe {
        call_or!((*(*qp).context).ops.post_recv, (qp, wr, bad_wr), {
            *bad_wr = wr;
            libc::EOPNOTSUPP
        })
    }
}

/// `ibv_post_srq_recv`: posts a list of receive work requests to a shared receive queue
/// (`EOPNOTSUPP` as [`ibv_post_send`]).
///
/// # Safety
/// `srq` must be live; `wr` and `bad_wr` as for [`ibv_post_recv`].
#[inline]
pub unsafe fn ibv_post_srq_recv(
    srq: *mut ibv_srq,
    wr: *mut ibv_recv_wr,
    bad_wr: *mut *mut ibv_recv_wr,
) -> c_int {
    // SAFETY: srq is live (caller), so is its context; bad_wr is writable (caller).
    unsafe {
        call_or!((*(*srq).context).ops.post_srq_recv, (srq, wr, bad_wr), {
            *bad_wr = wr;
            libc::EOPNOTSUPP
        })
    }
}

/// `ibv_poll_cq`: polls up to `num_entries` completions into `wc`; `-EOPNOTSUPP` where
/// the provider has no `poll_cq`.
///
/// libibverbs's stub for a provider without `poll_cq` returns `EOPNOTSUPP` (positive, as
/// if it had polled that many): a caller that trusts the count checks it against
/// `num_entries`.
///
/// # Safety
/// `cq` must be live and `wc` valid for `num_entries` writes.
#[inline]
pub unsafe fn ibv_poll_cq(cq: *mut ibv_cq, num_entries: c_int, wc: *mut ibv_wc) -> c_int {
    // SAFETY: cq is live (caller), so is its context.
    unsafe {
        call_or!(
            (*(*cq).context).ops.poll_cq,
            (cq, num_entries, wc),
            -libc::EOPNOTSUPP
        )
    }
}

/// `ibv_req_notify_cq`: asks for a completion event on the CQ's channel; `EOPNOTSUPP`
/// where the provider has no `req_notify_cq`.
///
/// # Safety
/// `cq` must be live.
#[inline]
pub unsafe fn ibv_req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    // SAFETY: cq is live (caller), so is its context.
    unsafe {
        call_or!(
            (*(*cq).context).ops.req_notify_cq,
            (cq, solicited_only),
            libc::EOPNOTSUPP
        )
    }
}

/// `ibv_alloc_mw`: allocates a memory window of `type_`.
///
/// # Safety
/// `pd` must be live.
#[inline]
pub unsafe fn ibv_alloc_mw(pd: *mut ibv_pd, type_: ibv_mw_type) -> *mut ibv_mw {
    // SAFETY: pd is live (caller), so is its context.
    unsafe {
        call_or!((*(*pd).context).ops.alloc_mw, (pd, type_), {
            set_errno(libc::EOPNOTSUPP);
            ptr::null_mut()
        })
    }
}

/// `ibv_dealloc_mw`: frees a memory window; `EOPNOTSUPP` where the provider has no
/// `dealloc_mw`.
///
/// # Safety
/// `mw` must be live; it is freed on success.
#[inline]
pub unsafe fn ibv_dealloc_mw(mw: *mut ibv_mw) -> c_int {
    // SAFETY: mw is live (caller), so is its context.
    unsafe { call_or!((*(*mw).context).ops.dealloc_mw, (mw), libc::EOPNOTSUPP) }
}

/// `ibv_inc_rkey`: the rkey with its 8 low bits (the key tag) incremented.
#[inline]
pub fn ibv_inc_rkey(rkey: u32) -> u32 {
    (rkey & !0xff) | (rkey.wrapping_add(1) & 0xff)
}

/// `ibv_bind_mw`: binds a type 1 memory window with a bind work request on `qp`;
/// `EOPNOTSUPP` where the provider has no `bind_mw`.
///
/// # Safety
/// `qp`, `mw` and `mw_bind` (and the MR it names, if any) must be valid.
#[inline]
pub unsafe fn ibv_bind_mw(qp: *mut ibv_qp, mw: *mut ibv_mw, mw_bind: *mut ibv_mw_bind) -> c_int {
    // SAFETY: all pointers valid (caller).
    unsafe {
        let info = &(*mw_bind).bind_info;
        if (*mw).type_ != ibv_mw_type::IBV_MW_TYPE_1 {
            return libc::EINVAL;
        }
        if info.mr.is_null() && (info.addr != 0 || info.length != 0) {
            return libc::EINVAL;
        }
        if !info.mr.is_null() && (*mw).pd != (*info.mr).pd {
            return libc::EPERM;
        }
        call_or!(
            (*(*mw).context).ops.bind_mw,
            (qp, mw, mw_bind),
            libc::EOPNOTSUPP
        )
    }
}

// ---------------------------------------------------------------------------------------------
// Queries.

extern "C" {
    /// The exported `ibv_query_port`, which takes the pre-1.1 attribute layout; C's
    /// `ibv_query_port` is a macro that prefers the provider's extended query.
    #[link_name = "ibv_query_port"]
    fn ibv_query_port_compat(
        context: *mut ibv_context,
        port_num: u8,
        port_attr: *mut _compat_ibv_port_attr,
    ) -> c_int;
}

/// `ibv_query_port`: reads the attributes of port `port_num` (1-based).
///
/// # Safety
/// `context` must be live and `port_attr` valid for writes.
#[inline]
pub unsafe fn ibv_query_port(
    context: *mut ibv_context,
    port_num: u8,
    port_attr: *mut ibv_port_attr,
) -> c_int {
    // SAFETY: context live, port_attr writable (caller). The compat layout is a prefix of
    // ibv_port_attr, which C relies on in the same way.
    unsafe {
        match ctx_op!(context, query_port) {
            Some(query_port) => {
                query_port(context, port_num, port_attr, size_of::<ibv_port_attr>())
            }
            None => {
                ptr::write_bytes(port_attr, 0, 1);
                ibv_query_port_compat(context, port_num, port_attr.cast())
            }
        }
    }
}

/// `ibv_query_device_ex`: reads the extended device attributes, falling back to
/// `ibv_query_device` for providers without the extended query.
///
/// # Safety
/// `context` must be live, `input` null or valid, `attr` valid for writes.
#[inline]
pub unsafe fn ibv_query_device_ex(
    context: *mut ibv_context,
    input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe {
        if !input.is_null() && (*input).comp_mask != 0 {
            return libc::EINVAL;
        }
        if let Some(query) = ctx_op!(context, query_device_ex) {
            let ret = query(context, input, attr, size_of::<ibv_device_attr_ex>());
            if ret != libc::EOPNOTSUPP && ret != libc::ENOSYS {
                return ret;
            }
        }
        ptr::write_bytes(attr, 0, 1);
        ibv_query_device(context, &mut (*attr).orig_attr)
    }
}

/// `ibv_query_gid_ex`: reads one GID table entry with its type and netdev.
///
/// # Safety
/// `context` must be live and `entry` valid for writes.
#[inline]
pub unsafe fn ibv_query_gid_ex(
    context: *mut ibv_context,
    port_num: u32,
    gid_index: u32,
    entry: *mut ibv_gid_entry,
    flags: u32,
) -> c_int {
    // SAFETY: forwarded under the caller's contract.
    unsafe {
        _ibv_query_gid_ex(
            context,
            port_num,
            gid_index,
            entry,
            flags,
            size_of::<ibv_gid_entry>(),
        )
    }
}

/// `ibv_query_gid_table`: reads all valid GID entries of all ports; returns their number or
/// a negative errno.
///
/// # Safety
/// `context` must be live and `entries` valid for `max_entries` writes.
#[inline]
pub unsafe fn ibv_query_gid_table(
    context: *mut ibv_context,
    entries: *mut ibv_gid_entry,
    max_entries: usize,
    flags: u32,
) -> isize {
    // SAFETY: forwarded under the caller's contract.
    unsafe {
        _ibv_query_gid_table(
            context,
            entries,
            max_entries,
            flags,
            size_of::<ibv_gid_entry>(),
        )
    }
}

/// `ibv_query_rt_values_ex`: reads the device's real-time values (clock).
///
/// # Safety
/// `context` must be live and `values` valid.
#[inline]
pub unsafe fn ibv_query_rt_values_ex(
    context: *mut ibv_context,
    values: *mut ibv_values_ex,
) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe {
        match ctx_op!(context, query_rt_values) {
            Some(f) => f(context, values),
            None => libc::EOPNOTSUPP,
        }
    }
}

/// `ibv_is_qpt_supported`: whether bit `qpt` is set in a capability mask.
#[inline]
pub fn ibv_is_qpt_supported(caps: u32, qpt: ibv_qp_type) -> c_int {
    c_int::from(qpt.0 < 32 && caps & (1 << qpt.0) != 0)
}

/// `ibv_flow_label_to_udp_sport`: the RoCE v2 UDP source port for a flow label.
#[inline]
pub fn ibv_flow_label_to_udp_sport(fl: u32) -> u16 {
    let fl_low = fl & 0x03FFF;
    let fl_high = fl & 0xFC000;
    ((fl_low ^ (fl_high >> 14)) | 0xC000) as u16
}

// ---------------------------------------------------------------------------------------------
// Extended object creation through verbs_context.

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

// ---------------------------------------------------------------------------------------------
// The extended work request API (ibv_qp_ex). Valid between ibv_wr_start and
// ibv_wr_complete/abort on a QP created with the matching IBV_QP_EX_WITH_* send ops.

/// Declares `ibv_wr_*` ports that forward to the `ibv_qp_ex` function pointer of the same
/// name, which returns nothing: the pointer must be set (see the module docs).
macro_rules! wr_ops {
    ($( $(#[$doc:meta])* $name:ident => $field:ident ( $($arg:ident : $ty:ty),* ); )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `qp` must be a live `ibv_qp_ex` created with this operation enabled, inside
        #[doc = concat!("`ibv_wr_start`, whose provider set `", stringify!($field), "`;")]
        /// pointer arguments must be valid as the verbs require.
        #[inline]
        pub unsafe fn $name(qp: *mut ibv_qp_ex $(, $arg: $ty)*) {
            // SAFETY: qp is live and its provider set this operation (caller).
            unsafe { required_op!((*qp).$field)(qp $(, $arg)*) }
        }
    )*};
}

wr_ops! {
    /// `ibv_wr_atomic_cmp_swp`: starts an atomic compare-and-swap WR.
    ibv_wr_atomic_cmp_swp => wr_atomic_cmp_swp(rkey: u32, remote_addr: u64, compare: u64, swap: u64);
    /// `ibv_wr_atomic_fetch_add`: starts an atomic fetch-and-add WR.
    ibv_wr_atomic_fetch_add => wr_atomic_fetch_add(rkey: u32, remote_addr: u64, add: u64);
    /// `ibv_wr_bind_mw`: starts a memory window bind WR.
    ibv_wr_bind_mw => wr_bind_mw(mw: *mut ibv_mw, rkey: u32, bind_info: *const ibv_mw_bind_info);
    /// `ibv_wr_local_inv`: starts a local invalidate WR.
    ibv_wr_local_inv => wr_local_inv(invalidate_rkey: u32);
    /// `ibv_wr_rdma_read`: starts an RDMA read WR.
    ibv_wr_rdma_read => wr_rdma_read(rkey: u32, remote_addr: u64);
    /// `ibv_wr_rdma_write`: starts an RDMA write WR.
    ibv_wr_rdma_write => wr_rdma_write(rkey: u32, remote_addr: u64);
    /// `ibv_wr_rdma_write_imm`: starts an RDMA write with immediate WR.
    ibv_wr_rdma_write_imm => wr_rdma_write_imm(rkey: u32, remote_addr: u64, imm_data: __be32);
    /// `ibv_wr_send`: starts a send WR.
    ibv_wr_send => wr_send();
    /// `ibv_wr_send_imm`: starts a send with immediate WR.
    ibv_wr_send_imm => wr_send_imm(imm_data: __be32);
    /// `ibv_wr_send_inv`: starts a send with invalidate WR.
    ibv_wr_send_inv => wr_send_inv(invalidate_rkey: u32);
    /// `ibv_wr_send_tso`: starts a TSO send WR.
    ibv_wr_send_tso => wr_send_tso(hdr: *mut c_void, hdr_sz: u16, mss: u16);
    /// `ibv_wr_set_ud_addr`: sets the UD destination of the current WR.
    ibv_wr_set_ud_addr => wr_set_ud_addr(ah: *mut ibv_ah, remote_qpn: u32, remote_qkey: u32);
    /// `ibv_wr_set_xrc_srqn`: sets the XRC SRQ number of the current WR.
    ibv_wr_set_xrc_srqn => wr_set_xrc_srqn(remote_srqn: u32);
    /// `ibv_wr_set_inline_data`: sets inline data of the current WR.
    ibv_wr_set_inline_data => wr_set_inline_data(addr: *mut c_void, length: usize);
    /// `ibv_wr_set_inline_data_list`: sets a list of inline buffers of the current WR.
    ibv_wr_set_inline_data_list => wr_set_inline_data_list(num_buf: usize, buf_list: *const ibv_data_buf);
    /// `ibv_wr_set_sge`: sets the single SGE of the current WR.
    ibv_wr_set_sge => wr_set_sge(lkey: u32, addr: u64, length: u32);
    /// `ibv_wr_set_sge_list`: sets the SGE list of the current WR.
    ibv_wr_set_sge_list => wr_set_sge_list(num_sge: usize, sg_list: *const ibv_sge);
    /// `ibv_wr_start`: begins a batch of WRs.
    ibv_wr_start => wr_start();
    /// `ibv_wr_abort`: drops the batch.
    ibv_wr_abort => wr_abort();
    /// `ibv_wr_atomic_write`: starts an 8-byte atomic write WR.
    ibv_wr_atomic_write => wr_atomic_write(rkey: u32, remote_addr: u64, atomic_wr: *const c_void);
}

/// `ibv_wr_complete`: posts the batch; returns 0 or an errno, `EOPNOTSUPP` where the
/// provider has no `wr_complete`.
///
/// # Safety
/// `qp` must be a live `ibv_qp_ex` inside `ibv_wr_start`.
#[inline]
pub unsafe fn ibv_wr_complete(qp: *mut ibv_qp_ex) -> c_int {
    // SAFETY: qp is live (caller).
    unsafe { call_or!((*qp).wr_complete, (qp), libc::EOPNOTSUPP) }
}

// ---------------------------------------------------------------------------------------------
// Extended completion polling (ibv_cq_ex).

/// Declares `ibv_*` ports that forward to the `ibv_cq_ex` function pointer of the same name,
/// which returns no status: the pointer must be set (see the module docs).
macro_rules! cq_ops {
    ($( $(#[$doc:meta])* $name:ident => $field:ident ( $($arg:ident : $ty:ty),* ) $(-> $ret:ty)?; )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `cq` must be a live `ibv_cq_ex` whose provider set
        #[doc = concat!("`", stringify!($field), "`;")]
        /// the `read_*` calls are valid between a successful `ibv_start_poll` and
        /// `ibv_end_poll`, for fields the CQ was created with.
        #[inline]
        pub unsafe fn $name(cq: *mut ibv_cq_ex $(, $arg: $ty)*) $(-> $ret)? {
            // SAFETY: cq is live and its provider set this reader (caller).
            unsafe { required_op!((*cq).$field)(cq $(, $arg)*) }
        }
    )*};
}

/// `ibv_start_poll`: starts polling; 0 with the first completion current, `ENOENT`, or an
/// errno (`EOPNOTSUPP` where the provider has no `start_poll`).
///
/// # Safety
/// `cq` must be a live `ibv_cq_ex` and `attr` valid.
#[inline]
pub unsafe fn ibv_start_poll(cq: *mut ibv_cq_ex, attr: *mut ibv_poll_cq_attr) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { call_or!((*cq).start_poll, (cq, attr), libc::EOPNOTSUPP) }
}

/// `ibv_next_poll`: moves to the next completion; 0, `ENOENT`, or an errno (`EOPNOTSUPP`
/// where the provider has no `next_poll`).
///
/// # Safety
/// `cq` must be a live `ibv_cq_ex` between a successful `ibv_start_poll` and `ibv_end_poll`.
#[inline]
pub unsafe fn ibv_next_poll(cq: *mut ibv_cq_ex) -> c_int {
    // SAFETY: cq is live (caller).
    unsafe { call_or!((*cq).next_poll, (cq), libc::EOPNOTSUPP) }
}

cq_ops! {
    /// `ibv_end_poll`: ends polling.
    ibv_end_poll => end_poll();
    /// `ibv_wc_read_opcode`: opcode of the current completion.
    ibv_wc_read_opcode => read_opcode() -> ibv_wc_opcode;
    /// `ibv_wc_read_vendor_err`: vendor error of the current completion.
    ibv_wc_read_vendor_err => read_vendor_err() -> u32;
    /// `ibv_wc_read_byte_len`: byte count of the current completion.
    ibv_wc_read_byte_len => read_byte_len() -> u32;
    /// `ibv_wc_read_imm_data`: immediate data (network order) of the current completion.
    ibv_wc_read_imm_data => read_imm_data() -> __be32;
    /// `ibv_wc_read_invalidated_rkey`: the rkey invalidated by the current completion.
    ibv_wc_read_invalidated_rkey => read_imm_data() -> u32;
    /// `ibv_wc_read_qp_num`: local QP number of the current completion.
    ibv_wc_read_qp_num => read_qp_num() -> u32;
    /// `ibv_wc_read_src_qp`: source QP number (UD) of the current completion.
    ibv_wc_read_src_qp => read_src_qp() -> u32;
    /// `ibv_wc_read_wc_flags`: `IBV_WC_*` flags of the current completion.
    ibv_wc_read_wc_flags => read_wc_flags() -> c_uint;
    /// `ibv_wc_read_slid`: source LID of the current completion.
    ibv_wc_read_slid => read_slid() -> u32;
    /// `ibv_wc_read_sl`: service level of the current completion.
    ibv_wc_read_sl => read_sl() -> u8;
    /// `ibv_wc_read_dlid_path_bits`: DLID path bits of the current completion.
    ibv_wc_read_dlid_path_bits => read_dlid_path_bits() -> u8;
    /// `ibv_wc_read_completion_ts`: device timestamp of the current completion.
    ibv_wc_read_completion_ts => read_completion_ts() -> u64;
    /// `ibv_wc_read_completion_wallclock_ns`: wall-clock timestamp of the current completion.
    ibv_wc_read_completion_wallclock_ns => read_completion_wallclock_ns() -> u64;
    /// `ibv_wc_read_cvlan`: VLAN of the current completion.
    ibv_wc_read_cvlan => read_cvlan() -> u16;
    /// `ibv_wc_read_flow_tag`: flow tag of the current completion.
    ibv_wc_read_flow_tag => read_flow_tag() -> u32;
    /// `ibv_wc_read_tm_info`: tag-matching info of the current completion.
    ibv_wc_read_tm_info => read_tm_info(tm_info: *mut ibv_wc_tm_info);
}

#[cfg(test)]
mod tests {
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
}
