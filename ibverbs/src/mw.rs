//! Memory windows: `struct ibv_mw`, remote access to part of a region, granted and revoked
//! without re-registering.
//!
//! A window keeps every region it was bound to registered until it is deallocated: a region
//! cannot be deregistered while a window is bound to it (`ibv_dereg_mr` fails with EINVAL),
//! and a bind's outcome is known only from its completion, so the window holds the
//! region's registration from the bind call on. `ibv_dealloc_mw` invalidates the window;
//! then the regions are released.

mod raw; // the FFI calls of memory windows: every unsafe block of the window

use std::fmt;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{check, Error, Result};
use crate::ffi;
use crate::mr::{MemoryRegion, RegistrableMemory};
use crate::pd::ProtectionDomain;
use crate::qp::QueuePair;
use crate::types::AccessFlags;
use crate::wr::{RemoteMemory, SendRequest};
use raw::{BindInfo, RawMw};

/// The kind of a memory window (`enum ibv_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MwType {
    /// Type 1: bound with [`QueuePair::bind_mw`], usable from any QP of the PD.
    Type1,
    /// Type 2: bound with a [`SendRequest::bind_mw`] work request, tied to that QP.
    Type2,
}

/// A memory window (`ibv_alloc_mw`). It keeps the regions it is bound to registered until
/// it is dropped (`ibv_dealloc_mw`).
pub struct MemoryWindow {
    /// Deallocated first on drop.
    raw: RawMw,
    /// The registrations of the regions the window was bound to; dropped after the window
    /// is deallocated, before the PD.
    regions: Mutex<Vec<Arc<dyn Send + Sync>>>,
    pd: ProtectionDomain,
}

impl ProtectionDomain {
    /// Allocates a memory window (`ibv_alloc_mw`).
    pub fn alloc_mw(&self, kind: MwType) -> Result<MemoryWindow> {
        let kind = match kind {
            MwType::Type1 => ffi::ibv_mw_type::IBV_MW_TYPE_1,
            MwType::Type2 => ffi::ibv_mw_type::IBV_MW_TYPE_2,
        };
        let raw = RawMw::alloc(self, kind).map_err(|e| {
            e.or_unsupported("memory windows (ibv_alloc_mw)", "alloc_mw in its provider")
        })?;
        Ok(MemoryWindow {
            raw,
            regions: Mutex::default(),
            pd: self.clone(),
        })
    }
}

impl MemoryWindow {
    /// The raw `ibv_mw`, valid while the window lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mw {
        self.raw.ptr()
    }

    /// The remote key of the last `ibv_bind_mw` (type 1) or allocation; a type 2 window
    /// takes the key given to [`SendRequest::bind_mw`].
    pub fn rkey(&self) -> u32 {
        self.raw.rkey()
    }

    /// The window's kind.
    pub fn kind(&self) -> MwType {
        match self.raw.kind() {
            ffi::ibv_mw_type::IBV_MW_TYPE_1 => MwType::Type1,
            _ => MwType::Type2,
        }
    }

    /// [`Error::InvalidArgument`] unless the window is of `kind`, which `verb` binds.
    fn check_kind(&self, kind: MwType, verb: &str) -> Result<()> {
        if self.kind() == kind {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            what: "memory window",
            reason: format!("a {:?} window is not bound with {verb}", self.kind()),
        })
    }

    /// Keeps `mr` registered until the window is deallocated.
    fn keep<B: RegistrableMemory + Send + 'static>(&self, mr: &MemoryRegion<B>) {
        let reg: Arc<dyn Send + Sync> = mr.kept();
        // Nothing panics while holding the lock; a poisoned list is still consistent.
        let mut regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        let same =
            |kept: &Arc<dyn Send + Sync>| std::ptr::addr_eq(Arc::as_ptr(kept), Arc::as_ptr(&reg));
        if !regions.iter().any(same) {
            regions.push(reg);
        }
    }
}

impl fmt::Debug for MemoryWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryWindow")
            .field("rkey", &format_args!("{:#x}", self.rkey()))
            .finish()
    }
}

/// The `ibv_mw_bind_info` for `range` of `mr`, checked to lie in the region and share the PD;
/// the window keeps the region registered from here on.
fn bind_info<'a, B: RegistrableMemory + Send + 'static>(
    mw: &MemoryWindow,
    mr: &'a MemoryRegion<B>,
    range: impl RangeBounds<usize>,
    access: AccessFlags,
) -> Result<BindInfo<'a>> {
    mw.pd.check_same(mr.pd(), "memory region")?;
    let info = BindInfo::new(mr, range, access)?;
    mw.keep(mr);
    Ok(info)
}

impl QueuePair {
    /// Binds a type 1 window to `range` of `mr` with remote `access` (`ibv_bind_mw`), and
    /// returns the memory a peer may now reach through it. The bind completes on the send
    /// CQ with `wr_id`. The window keeps `mr` registered until it is dropped.
    ///
    /// Checked first: the window is of type 1, and the QP, the window and the region share
    /// a protection domain ([`Error::Mismatch`] naming the one that does not).
    pub fn bind_mw<B: RegistrableMemory + Send + 'static>(
        &self,
        mw: &mut MemoryWindow,
        mr: &MemoryRegion<B>,
        range: impl RangeBounds<usize>,
        access: AccessFlags,
        wr_id: u64,
    ) -> Result<RemoteMemory> {
        mw.check_kind(MwType::Type1, "QueuePair::bind_mw")?;
        mw.pd.check_same(self.pd(), "queue pair")?;
        let info = bind_info(mw, mr, range, access)?;
        let rc = mw.raw.bind(self, wr_id, &info);
        check("ibv_bind_mw", rc).map_err(|e| {
            e.or_unsupported(
                "type 1 memory window binds (ibv_bind_mw)",
                "bind_mw in its provider",
            )
        })?;
        let info = info.get();
        Ok(RemoteMemory {
            addr: info.addr,
            len: info.length,
            rkey: mw.rkey(),
        })
    }
}

impl<'a> SendRequest<'a> {
    /// A type 2 window bind (`IBV_WR_BIND_MW`) of `range` of `mr` with remote `access`,
    /// under the new key `rkey` (make it with [`ffi::ibv_inc_rkey`] from the window's
    /// current key). The peer may use the window once the request completes. The window
    /// keeps `mr` registered until it is dropped. Posted with
    /// [`QueuePair::post_send`]; a [`WrBatch`](crate::WrBatch) refuses it
    /// ([`WrError::NotInBatch`](crate::WrError::NotInBatch)).
    ///
    /// Checked first: the window is of type 2 and shares the region's protection domain.
    pub fn bind_mw<B: RegistrableMemory + Send + 'static>(
        wr_id: u64,
        mw: &'a MemoryWindow,
        mr: &'a MemoryRegion<B>,
        range: impl RangeBounds<usize>,
        access: AccessFlags,
        rkey: u32,
    ) -> Result<Self> {
        mw.check_kind(MwType::Type2, "SendRequest::bind_mw")?;
        let info = bind_info(mw, mr, range, access)?;
        Ok(SendRequest::bind(
            wr_id,
            ffi::ibv_send_wr__bindgen_ty_4__bindgen_ty_1 {
                mw: mw.ptr(),
                rkey,
                bind_info: info.get(),
            },
        ))
    }
}
