//! The FFI calls of address handles: every unsafe block of `ah/`, so that they can be
//! audited here. [`RawAh`] owns the `ibv_ah` and destroys it on drop; its methods are safe
//! because a live handle is a live object.

use std::ptr::NonNull;

use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;

/// A live `ibv_ah`, destroyed (`ibv_destroy_ah`) on drop. Held by an
/// [`AddressHandle`](crate::AddressHandle) before its PD, which it is dropped ahead of.
pub(super) struct RawAh(NonNull<ffi::ibv_ah>);

// SAFETY: address handles may be used from any thread.
unsafe impl Send for RawAh {}
// SAFETY: the AH is immutable after creation.
unsafe impl Sync for RawAh {}

impl Drop for RawAh {
    fn drop(&mut self) {
        // SAFETY: the AH is live and posted sends that use it are the caller's to complete
        // first (a destroyed AH makes later sends fail, it does not touch memory).
        let rc = unsafe { ffi::ibv_destroy_ah(self.0.as_ptr()) };
        drop_error::report("ibv_destroy_ah", rc);
    }
}

impl RawAh {
    /// `ibv_create_ah` in `pd` from `attr`.
    pub(super) fn create(pd: &ProtectionDomain, attr: &mut ffi::ibv_ah_attr) -> Result<Self> {
        // SAFETY: the PD is live and attr is fully initialised (a `&mut` to the whole C
        // type).
        let raw = unsafe { ffi::ibv_create_ah(pd.ptr(), attr) };
        Ok(RawAh(check_ptr("ibv_create_ah", raw)?))
    }

    /// The raw `ibv_ah`, valid while this handle lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_ah {
        self.0.as_ptr()
    }

    /// The kernel's handle of the AH (`ibv_ah::handle`).
    pub(super) fn handle(&self) -> u32 {
        // SAFETY: the AH is live.
        unsafe { (*self.ptr()).handle }
    }
}

/// `ibv_init_ah_from_wc` on `ctx`'s port `port`: the address vector answering the sender of
/// the receive whose completion is `wc` and whose first 40 bytes are `grh`.
pub(super) fn init_ah_from_wc(
    ctx: &Context,
    port: u8,
    wc: &mut ffi::ibv_wc,
    grh: &mut ffi::ibv_grh,
) -> Result<ffi::ibv_ah_attr> {
    let mut attr = ffi::ibv_ah_attr::default();
    // SAFETY: the context is open; the port need not exist (libibverbs queries it and the
    // kernel refuses one the device lacks; the caller checks it first, for its own error).
    // wc, grh and attr are whole values of their C types (grh a copy of the 40 bytes, aligned
    // as `struct ibv_grh`): libibverbs reads wc and the 40 bytes of grh, writes attr, and
    // keeps no pointer.
    let rc = unsafe { ffi::ibv_init_ah_from_wc(ctx.ptr(), port, wc, grh, &mut attr) };
    if rc != 0 {
        return Err(Error::last("ibv_init_ah_from_wc"));
    }
    Ok(attr)
}
