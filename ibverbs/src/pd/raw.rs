//! The FFI calls of protection, thread and parent domains: every unsafe block of `pd/`, so
//! that they can be audited here.
//!
//! [`RawPd`] and [`RawTd`] own their C objects and free them on drop; their methods are
//! safe because a live handle is a live object. Each holds the context it was allocated
//! in: a parent domain is allocated from the handles alone, its TD checked against its
//! PD's context here, beside the call that needs them to match.

use std::ptr::NonNull;

use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;

/// A live `ibv_pd` (a protection domain, or a parent domain) and the context it was
/// allocated in, deallocated (`ibv_dealloc_pd`) on drop, before the context. Held once, in
/// a `ProtectionDomain`'s shared state, before the parent it is dropped ahead of: every
/// object created in it holds a clone of the `ProtectionDomain`, so the handle outlives
/// them all.
pub(super) struct RawPd {
    ptr: NonNull<ffi::ibv_pd>,
    ctx: Context,
}

// SAFETY: protection domains may be used from any thread.
unsafe impl Send for RawPd {}
// SAFETY: as above; the verbs taking a PD are thread-safe.
unsafe impl Sync for RawPd {}

impl Drop for RawPd {
    fn drop(&mut self) {
        // SAFETY: every object created in this PD holds a clone of its ProtectionDomain, so
        // none is left; the context outlives this call (a field, dropped after it), and so
        // do a parent domain's PD and TD (the field after this handle in the
        // ProtectionDomain's state).
        let rc = unsafe { ffi::ibv_dealloc_pd(self.ptr.as_ptr()) };
        drop_error::report("ibv_dealloc_pd", rc);
    }
}

impl RawPd {
    /// Allocates a protection domain in `ctx` (`ibv_alloc_pd`).
    pub(super) fn alloc(ctx: &Context) -> Result<Self> {
        // SAFETY: the context is open.
        let raw = check_ptr("ibv_alloc_pd", unsafe { ffi::ibv_alloc_pd(ctx.ptr()) })?;
        Ok(RawPd {
            ptr: raw,
            ctx: ctx.clone(),
        })
    }

    /// Allocates a parent domain of `pd` in its context, with thread domain `td` if given
    /// (`ibv_alloc_parent_domain`). A TD of another context is [`Error::Mismatch`], before
    /// the call; a provider without parent domains (`EOPNOTSUPP`) gives
    /// [`Error::Unsupported`].
    pub(super) fn alloc_parent(pd: &RawPd, td: Option<&RawTd>) -> Result<Self> {
        if let Some(td) = td {
            pd.ctx.check_same(td.context(), "thread domain")?;
        }
        let mut attr = ffi::ibv_parent_domain_init_attr {
            pd: pd.ptr(),
            td: td.map_or(std::ptr::null_mut(), RawTd::ptr),
            comp_mask: 0,
            alloc: None,
            free: None,
            pd_context: std::ptr::null_mut(),
        };
        // SAFETY: the context, PD and TD are live (their handles are borrowed) and of one
        // context (checked above); attr is initialised with no allocator hooks.
        let raw = unsafe { ffi::ibv_alloc_parent_domain(pd.ctx.ptr(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::last("ibv_alloc_parent_domain").or_unsupported(
                "parent domains (ibv_alloc_parent_domain)",
                "a provider alloc_parent_domain (EOPNOTSUPP)",
            )
        })?;
        Ok(RawPd {
            ptr: raw,
            ctx: pd.ctx.clone(),
        })
    }

    /// The raw `ibv_pd`, valid while this handle lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_pd {
        self.ptr.as_ptr()
    }

    /// The context the PD was allocated in.
    pub(super) fn context(&self) -> &Context {
        &self.ctx
    }

    /// The kernel's handle of the PD (`ibv_pd::handle`).
    pub(super) fn handle(&self) -> u32 {
        // SAFETY: the PD is live.
        unsafe { (*self.ptr()).handle }
    }
}

/// A live `ibv_td` and the context it was allocated in, deallocated (`ibv_dealloc_td`) on
/// drop, before the context. It is a `ThreadDomain`'s shared state: every parent domain
/// made with it holds a clone of the `ThreadDomain`.
pub(super) struct RawTd {
    ptr: NonNull<ffi::ibv_td>,
    ctx: Context,
}

// SAFETY: the handle itself is only passed to ibv_alloc_parent_domain and ibv_dealloc_td;
// the single-thread promise is about the objects of a parent domain, made unsafe there
// (alloc_parent_domain_with_td, in domain.rs).
unsafe impl Send for RawTd {}
// SAFETY: as above.
unsafe impl Sync for RawTd {}

impl Drop for RawTd {
    fn drop(&mut self) {
        // SAFETY: every parent domain made with the TD holds a clone of its ThreadDomain, so
        // none is left; the context outlives the call (a field, dropped after it).
        let rc = unsafe { ffi::ibv_dealloc_td(self.ptr.as_ptr()) };
        drop_error::report("ibv_dealloc_td", rc);
    }
}

impl RawTd {
    /// Allocates a thread domain in `ctx` (`ibv_alloc_td`). A provider without thread
    /// domains (`EOPNOTSUPP`) gives [`Error::Unsupported`].
    pub(super) fn alloc(ctx: &Context) -> Result<Self> {
        let mut attr = ffi::ibv_td_init_attr { comp_mask: 0 };
        // SAFETY: the context is open and attr is initialised.
        let raw = unsafe { ffi::ibv_alloc_td(ctx.ptr(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::last("ibv_alloc_td").or_unsupported(
                "thread domains (ibv_alloc_td)",
                "a provider alloc_td (EOPNOTSUPP)",
            )
        })?;
        Ok(RawTd {
            ptr: raw,
            ctx: ctx.clone(),
        })
    }

    /// The raw `ibv_td`, valid while this handle lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_td {
        self.ptr.as_ptr()
    }

    /// The context the TD was allocated in.
    pub(super) fn context(&self) -> &Context {
        &self.ctx
    }
}
