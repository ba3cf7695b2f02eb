//! The FFI calls of memory windows: every `unsafe` block of `mw`.
//!
//! - `RawMw`: an `ibv_mw`, deallocated on drop (`ibv_dealloc_mw`); its type 1 bind
//!   (`ibv_bind_mw`).
//! - `BindInfo`: an `ibv_mw_bind_info` of a range of a region that lives while it does: what
//!   a bind takes.

use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::ptr::NonNull;

use crate::drop_error;
use crate::error::{check_ptr, Result};
use crate::ffi;
use crate::mr::{MemoryRegion, RegistrableMemory};
use crate::pd::ProtectionDomain;
use crate::qp::QueuePair;
use crate::types::AccessFlags;

/// An `ibv_mw`, deallocated (`ibv_dealloc_mw`) on drop. A live handle is an allocated window.
pub(crate) struct RawMw(NonNull<ffi::ibv_mw>);

// SAFETY: memory windows may be used from any thread.
unsafe impl Send for RawMw {}
// SAFETY: &self methods only read the handle.
unsafe impl Sync for RawMw {}

impl RawMw {
    /// `ibv_alloc_mw` of `kind` in `pd`.
    pub(crate) fn alloc(pd: &ProtectionDomain, kind: ffi::ibv_mw_type) -> Result<Self> {
        // SAFETY: the PD is live (borrowed).
        let raw = unsafe { ffi::ibv_alloc_mw(pd.ptr(), kind) };
        check_ptr("ibv_alloc_mw", raw).map(RawMw)
    }

    /// The raw `ibv_mw`, valid while the handle lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mw {
        self.0.as_ptr()
    }

    #[inline]
    fn mw(&self) -> &ffi::ibv_mw {
        // SAFETY: the MW is live while the handle is.
        unsafe { self.0.as_ref() }
    }

    /// The remote key of the last `ibv_bind_mw` or of the allocation.
    #[inline]
    pub(crate) fn rkey(&self) -> u32 {
        self.mw().rkey
    }

    /// The window's type.
    pub(crate) fn kind(&self) -> ffi::ibv_mw_type {
        self.mw().type_
    }

    /// `ibv_bind_mw` of this window on `qp`, signaled, completing with `wr_id`; returns its
    /// result.
    pub(crate) fn bind(&self, qp: &QueuePair, wr_id: u64, info: &BindInfo<'_>) -> i32 {
        let mut bind = ffi::ibv_mw_bind {
            wr_id,
            send_flags: ffi::ibv_send_flags::IBV_SEND_SIGNALED.0,
            bind_info: info.get(),
        };
        // SAFETY: the QP (borrowed), the MW (self) and the MR (borrowed by `info`) are live,
        // and `info`'s range lies in the region (BindInfo::new). Sharing a PD is the device's
        // rule for a bind, which `mw.rs` checks first for a typed error.
        unsafe { ffi::ibv_bind_mw(qp.ptr(), self.ptr(), &mut bind) }
    }
}

impl Drop for RawMw {
    fn drop(&mut self) {
        // SAFETY: the MW is live; deallocating it revokes remote access through it.
        let rc = unsafe { ffi::ibv_dealloc_mw(self.ptr()) };
        drop_error::report("ibv_dealloc_mw", rc);
    }
}

/// An `ibv_mw_bind_info` of a range of a region borrowed for `'a`: its `mr` is live while
/// this is, and its range lies in the region.
pub(crate) struct BindInfo<'a> {
    info: ffi::ibv_mw_bind_info,
    _mr: PhantomData<&'a ()>,
}

impl<'a> BindInfo<'a> {
    /// `range` of `mr` with remote `access`; the range is checked as
    /// [`MemoryRegion::sge`] checks it.
    pub(crate) fn new<B: RegistrableMemory>(
        mr: &'a MemoryRegion<B>,
        range: impl RangeBounds<usize>,
        access: AccessFlags,
    ) -> Result<Self> {
        let sge = mr.sge(range)?;
        Ok(BindInfo {
            info: ffi::ibv_mw_bind_info {
                mr: mr.ptr(),
                addr: sge.addr(),
                length: sge.len().into(),
                mw_access_flags: access.bits(),
            },
            _mr: PhantomData,
        })
    }

    /// The `ibv_mw_bind_info`.
    #[inline]
    pub(crate) fn get(&self) -> ffi::ibv_mw_bind_info {
        self.info
    }
}
