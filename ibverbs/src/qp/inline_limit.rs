//! The error of a QP creation that asked for more inline data than the provider takes.
//!
//! No device attribute reports the most `max_inline_data` a QP may have (it depends on the
//! provider, and on some on the other capabilities), and `ibv_create_qp` only says
//! `EINVAL`. So when a creation that asked for inline data fails, the limit is found by
//! creating (and at once destroying) QPs of the same attributes with less: at most 33
//! creations, on the error path only.

use crate::drop_error;
use crate::error::Error;
use crate::ffi;

/// Whether a QP of `attr` (a variation of a creation its caller vouched for: live PD, CQs
/// and SRQ of the open context `ctx`) is created; one that is, is destroyed at once.
pub(super) fn creates(ctx: *mut ffi::ibv_context, mut attr: ffi::ibv_qp_init_attr_ex) -> bool {
    // SAFETY: the context is open and the attributes' objects are live and of it (caller).
    let qp = unsafe { ffi::ibv_create_qp_ex(ctx, &mut attr) };
    if qp.is_null() {
        return false;
    }
    // SAFETY: the QP was just created, and nothing else knows it.
    let rc = unsafe { ffi::ibv_destroy_qp(qp) };
    drop_error::report("ibv_destroy_qp", rc);
    true
}

/// The error of the failed creation of a QP of `init` in `ctx`, `err` as the provider gave
/// it: [`Error::DeviceLimit`] naming the largest `max_inline_data` the provider creates
/// such a QP with, when asking for less than `init`'s lets it create one; else `err`.
#[cold]
#[inline(never)]
pub(super) fn creation_error(
    ctx: *mut ffi::ibv_context,
    init: &ffi::ibv_qp_init_attr_ex,
    err: Error,
) -> Error {
    let asked = init.cap.max_inline_data;
    if asked == 0 || err.raw_os_error() != Some(libc::EINVAL) {
        return err;
    }
    let creates = |max_inline_data: u32| {
        let mut attr = *init;
        attr.cap.max_inline_data = max_inline_data;
        creates(ctx, attr)
    };
    if !creates(0) {
        return err;
    }
    // `fits` creates a QP, `over` does not.
    let (mut fits, mut over) = (0, asked);
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        if creates(mid) {
            fits = mid;
        } else {
            over = mid;
        }
    }
    Error::DeviceLimit {
        what: "max_inline_data",
        value: asked.into(),
        limit: "largest max_inline_data a QP of these capabilities is created with",
        max: fits.into(),
    }
}
