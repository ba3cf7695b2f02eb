//! librdmacm's device contexts as [`Context`]s: `rdma_get_devices`.

use std::ptr::NonNull;

use rdmacm_sys as cm;

use crate::context::Context;
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

/// `verbs` (a CM id's device context) as a [`Context`] that holds librdmacm's device list,
/// so the context stays open while the [`Context`] (and so every PD, CQ and QP made from
/// it) lives.
pub(super) fn context(verbs: NonNull<ffi::ibv_context>) -> Result<Context> {
    // SAFETY: no count wanted; the result is checked.
    let list = unsafe { cm::rdma_get_devices(std::ptr::null_mut()) };
    let list = DeviceList(NonNull::new(list).ok_or_else(|| Error::last("rdma_get_devices"))?);
    let mut p = list.0.as_ptr();
    // SAFETY: the list is NULL-terminated and valid until freed (list's drop).
    unsafe {
        while !(*p).is_null() {
            if *p == verbs.as_ptr() {
                // The context is open, and stays so while the list lives.
                return Ok(Context::from_raw_kept(verbs, Box::new(list)));
            }
            p = p.add(1);
        }
    }
    Err(Error::InvalidArgument {
        what: "CM id's device",
        reason: "not in librdmacm's device list (removed?)".into(),
    })
}
