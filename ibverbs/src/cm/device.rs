//! librdmacm's device contexts as [`Context`]s: `rdma_get_devices`.

use std::cell::RefCell;
use std::ptr::NonNull;

use rdmacm_sys as cm;

use crate::context::{Context, WeakContext};
use crate::error::{Error, Result};
use crate::ffi;

/// librdmacm's device list (`rdma_get_devices`), freed on drop (`rdma_free_devices`).
/// While it lives, librdmacm keeps every listed device context open (each is counted as
/// in use), even if the last id on the device goes.
struct DeviceList(NonNull<*mut ffi::ibv_context>);

// SAFETY: the list is only read (at creation) and freed; librdmacm's counts are locked.
unsafe impl Send for DeviceList {}
// SAFETY: as above.
unsafe impl Sync for DeviceList {}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from rdma_get_devices and is freed once.
        unsafe { cm::rdma_free_devices(self.0.as_ptr()) };
    }
}

thread_local! {
    /// The contexts [`context`] handed out on this thread, so that the ids of a device
    /// share one (and its cached attributes) while any of it lives. Per thread, not per
    /// process: no lock on the set-up path, and a context is shared between threads only
    /// by the caller's own hand-over (which orders it), never through a table whose
    /// ordering valgrind's DRD cannot see (std's futex locks; scripts/drd.supp).
    static OPEN: RefCell<Vec<WeakContext>> = const { RefCell::new(Vec::new()) };
}

/// `verbs` (a CM id's device context) as a [`Context`] that holds librdmacm's device list,
/// so the context stays open while the [`Context`] (and so every PD, CQ and QP made from
/// it) lives. While one for `verbs` lives, the same one is returned (a live [`Context`]
/// keeps its `ibv_context` open, so its pointer names no other) on the same thread.
pub(super) fn context(verbs: NonNull<ffi::ibv_context>) -> Result<Context> {
    if let Some(ctx) = OPEN.with_borrow_mut(|open| {
        let mut found = None;
        open.retain(|weak| match weak.upgrade() {
            Some(ctx) => {
                if ctx.ptr() == verbs.as_ptr() {
                    found = Some(ctx);
                }
                true
            }
            None => false,
        });
        found
    }) {
        return Ok(ctx);
    }
    // SAFETY: no count wanted; the result is checked.
    let list = unsafe { cm::rdma_get_devices(std::ptr::null_mut()) };
    let list = DeviceList(NonNull::new(list).ok_or_else(|| Error::last("rdma_get_devices"))?);
    let mut p = list.0.as_ptr();
    // SAFETY: the list is NULL-terminated and valid until freed (list's drop).
    unsafe {
        while !(*p).is_null() {
            if *p == verbs.as_ptr() {
                // The context is open, and stays so while the list lives.
                let ctx = Context::from_raw_kept(verbs, Box::new(list));
                OPEN.with_borrow_mut(|open| open.push(ctx.downgrade()));
                return Ok(ctx);
            }
            p = p.add(1);
        }
    }
    Err(Error::InvalidArgument {
        what: "CM id's device",
        reason: "not in librdmacm's device list (removed?)".into(),
    })
}
