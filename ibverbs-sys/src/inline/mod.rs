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

use core::ffi::{c_int, c_void};
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
            || (*vctx).sz
                < core::mem::size_of::<verbs_context>() - core::mem::offset_of!(verbs_context, $op)
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

// The extended verbs, in modules of their own (each uses the macros above).
mod ex; // the function pointers of ibv_qp_ex (the ibv_wr_* calls) and ibv_cq_ex
mod extended; // extended object creation and calls through verbs_context
pub use ex::*;
pub use extended::*;

#[cfg(test)]
mod tests;
