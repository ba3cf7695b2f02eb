//! The FFI calls of protection, thread and parent domains: every unsafe block of `pd/`, so
//! that they can be audited here.
//!
//! [`RawPd`] and [`RawTd`] own their C objects and free them on drop; their methods are
//! safe because a live handle is a live object. [`ProtectionDomain::alloc_parent_domain_with_td`],
//! `unsafe` for what a thread domain lets the provider leave out, is here too.

use std::ptr::NonNull;

use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;
use crate::pd::domain::ThreadDomain;
use crate::pd::ProtectionDomain;

/// A live `ibv_pd` (a protection domain, or a parent domain), deallocated (`ibv_dealloc_pd`)
/// on drop. Held once, in the [`ProtectionDomain`]'s shared state, before the context and
/// parent it is dropped ahead of: every object created in it holds a clone of the
/// [`ProtectionDomain`], so the handle outlives them all.
pub(super) struct RawPd(NonNull<ffi::ibv_pd>);

// SAFETY: protection domains may be used from any thread.
unsafe impl Send for RawPd {}
// SAFETY: as above; the verbs taking a PD are thread-safe.
unsafe impl Sync for RawPd {}

impl Drop for RawPd {
    fn drop(&mut self) {
        // SAFETY: every object created in this PD holds a clone of its ProtectionDomain, so
        // none is left; the context (and a parent domain's PD and TD) outlive this call, as
        // the fields after this one in the ProtectionDomain's state.
        let rc = unsafe { ffi::ibv_dealloc_pd(self.0.as_ptr()) };
        drop_error::report("ibv_dealloc_pd", rc);
    }
}

impl RawPd {
    /// Allocates a protection domain in `ctx` (`ibv_alloc_pd`).
    pub(super) fn alloc(ctx: &Context) -> Result<Self> {
        // SAFETY: the context is open.
        let raw = check_ptr("ibv_alloc_pd", unsafe { ffi::ibv_alloc_pd(ctx.ptr()) })?;
        Ok(RawPd(raw))
    }

    /// Allocates a parent domain of `pd`, with thread domain `td` if given
    /// (`ibv_alloc_parent_domain`). A TD of another context is [`Error::Mismatch`], before
    /// the call; a provider without parent domains (`EOPNOTSUPP`) gives
    /// [`Error::Unsupported`].
    pub(super) fn alloc_parent(pd: &ProtectionDomain, td: Option<&ThreadDomain>) -> Result<Self> {
        if let Some(td) = td {
            pd.context().check_same(td.context(), "thread domain")?;
        }
        let mut attr = ffi::ibv_parent_domain_init_attr {
            pd: pd.ptr(),
            td: td.map_or(std::ptr::null_mut(), ThreadDomain::ptr),
            comp_mask: 0,
            alloc: None,
            free: None,
            pd_context: std::ptr::null_mut(),
        };
        // SAFETY: the context, PD and TD are live (their handles are borrowed) and of one
        // context (checked above); attr is initialised with no allocator hooks.
        let raw = unsafe { ffi::ibv_alloc_parent_domain(pd.context().ptr(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            Error::last("ibv_alloc_parent_domain").or_unsupported(
                "parent domains (ibv_alloc_parent_domain)",
                "a provider alloc_parent_domain (EOPNOTSUPP)",
            )
        })?;
        Ok(RawPd(raw))
    }

    /// The raw `ibv_pd`, valid while this handle lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_pd {
        self.0.as_ptr()
    }

    /// The kernel's handle of the PD (`ibv_pd::handle`).
    pub(super) fn handle(&self) -> u32 {
        // SAFETY: the PD is live.
        unsafe { (*self.ptr()).handle }
    }
}

/// A live `ibv_td`, deallocated (`ibv_dealloc_td`) on drop. Held once, in the
/// [`ThreadDomain`]'s shared state, before the context: every parent domain made with it
/// holds a clone of the [`ThreadDomain`].
pub(super) struct RawTd(NonNull<ffi::ibv_td>);

// SAFETY: the handle itself is only passed to ibv_alloc_parent_domain and ibv_dealloc_td;
// the single-thread promise is about the objects of a parent domain, made unsafe there
// (alloc_parent_domain_with_td below).
unsafe impl Send for RawTd {}
// SAFETY: as above.
unsafe impl Sync for RawTd {}

impl Drop for RawTd {
    fn drop(&mut self) {
        // SAFETY: every parent domain made with the TD holds a clone of its ThreadDomain, so
        // none is left; the context outlives the call (it is the field after this one).
        let rc = unsafe { ffi::ibv_dealloc_td(self.0.as_ptr()) };
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
        Ok(RawTd(raw))
    }

    /// The raw `ibv_td`, valid while this handle lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_td {
        self.0.as_ptr()
    }
}

impl ProtectionDomain {
    /// Allocates a parent domain of this PD with thread domain `td`
    /// (`ibv_alloc_parent_domain`); see [`alloc_parent_domain`](Self::alloc_parent_domain).
    /// A TD of another context is [`Error::Mismatch`], before the call.
    ///
    /// # Safety
    /// The provider may leave out the locks of objects made in the returned domain: each
    /// queue pair, completion queue and shared receive queue made in it must be used
    /// (posted to, polled, modified) by one thread at a time, although their types are
    /// `Sync`.
    pub unsafe fn alloc_parent_domain_with_td(
        &self,
        td: &ThreadDomain,
    ) -> Result<ProtectionDomain> {
        self.parent_domain_with(Some(td))
    }
}
