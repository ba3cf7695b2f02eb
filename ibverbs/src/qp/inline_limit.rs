//! The error of a QP creation that asked for more inline data than the provider takes.
//!
//! No device attribute reports the most `max_inline_data` a QP may have (it depends on the
//! provider, and on some on the other capabilities), and `ibv_create_qp` only says
//! `EINVAL`. So when a creation that asked for inline data fails, the limit is found by
//! creating (and at once destroying) QPs of the same attributes with less: at most 33
//! creations, on the error path only.

use super::raw::{QpInit, RawQp};
use crate::error::Error;

/// Whether a QP of `init` is created; one that is, is destroyed at once.
pub(super) fn creates(init: &QpInit<'_>) -> bool {
    RawQp::create(init).is_ok()
}

/// The error of the failed creation of a QP of `init`, `err` as the provider gave it:
/// [`Error::DeviceLimit`] naming the largest `max_inline_data` the provider creates such a
/// QP with, when asking for less than `init`'s lets it create one; else `err`.
#[cold]
#[inline(never)]
pub(super) fn creation_error(init: &QpInit<'_>, err: Error) -> Error {
    let asked = init.attr().cap.max_inline_data;
    if asked == 0 || err.raw_os_error() != Some(libc::EINVAL) {
        return err;
    }
    let creates = |max_inline_data: u32| creates(&init.with_max_inline_data(max_inline_data));
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
