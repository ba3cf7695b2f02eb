//! Thread domains and parent domains: `struct ibv_td`, `ibv_alloc_td` and
//! `ibv_alloc_parent_domain`.
//!
//! A thread domain promises the provider that the objects of a parent domain made with it
//! are used by one thread at a time, so that it may leave out their locks. A parent domain
//! is a protection domain ([`ProtectionDomain`]) that every verb taking a PD accepts. Not
//! every provider has them (rxe has neither): there they fail with [`Error::Unsupported`].

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::context::Context;
use crate::drop_error;
use crate::error::{Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;

/// A thread domain (`ibv_alloc_td`), deallocated (`ibv_dealloc_td`) after the last clone
/// and the last parent domain made with it.
#[derive(Clone)]
pub struct ThreadDomain {
    inner: Arc<Inner>,
}

struct Inner {
    raw: NonNull<ffi::ibv_td>,
    ctx: Context,
}

// SAFETY: the handle itself is only passed to ibv_alloc_parent_domain and ibv_dealloc_td;
// the single-thread promise is about the objects of a parent domain, made unsafe there.
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: every parent domain made with the TD holds a clone, so none is left; the
        // context outlives the call (self.ctx drops after).
        let rc = unsafe { ffi::ibv_dealloc_td(self.raw.as_ptr()) };
        drop_error::report("ibv_dealloc_td", rc);
    }
}

/// The error of a provider that has no such operation (`EOPNOTSUPP`), else the verb's.
fn unsupported(verb: &'static str, what: &'static str, missing: &'static str) -> Error {
    let err = Error::last(verb);
    if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
        Error::Unsupported { what, missing }
    } else {
        err
    }
}

impl Context {
    /// Allocates a thread domain (`ibv_alloc_td`). A provider without thread domains
    /// (`EOPNOTSUPP`, such as rxe) gives [`Error::Unsupported`].
    pub fn alloc_td(&self) -> Result<ThreadDomain> {
        let mut attr = ffi::ibv_td_init_attr { comp_mask: 0 };
        // SAFETY: the context is open and attr is initialised.
        let raw = unsafe { ffi::ibv_alloc_td(self.ptr(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            unsupported(
                "ibv_alloc_td",
                "thread domains (ibv_alloc_td)",
                "a provider alloc_td (EOPNOTSUPP)",
            )
        })?;
        Ok(ThreadDomain {
            inner: Arc::new(Inner {
                raw,
                ctx: self.clone(),
            }),
        })
    }
}

impl ThreadDomain {
    /// The raw `ibv_td`, valid while the TD lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_td {
        self.inner.raw.as_ptr()
    }

    /// The context the TD belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }
}

impl fmt::Debug for ThreadDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadDomain")
            .field("device", &self.inner.ctx.name())
            .finish()
    }
}

impl ProtectionDomain {
    /// Allocates a parent domain of this PD without a thread domain
    /// (`ibv_alloc_parent_domain`): a [`ProtectionDomain`] that keeps this one alive. A
    /// provider without parent domains (`EOPNOTSUPP`, such as rxe) gives
    /// [`Error::Unsupported`].
    pub fn alloc_parent_domain(&self) -> Result<ProtectionDomain> {
        self.parent_domain_with(None)
    }

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
        self.context().check_same(td.context(), "thread domain")?;
        self.parent_domain_with(Some(td))
    }

    fn parent_domain_with(&self, td: Option<&ThreadDomain>) -> Result<ProtectionDomain> {
        let mut attr = ffi::ibv_parent_domain_init_attr {
            pd: self.ptr(),
            td: td.map_or(std::ptr::null_mut(), ThreadDomain::ptr),
            comp_mask: 0,
            alloc: None,
            free: None,
            pd_context: std::ptr::null_mut(),
        };
        // SAFETY: the context, PD and TD are live and of one context; attr is initialised
        // with no allocator hooks.
        let raw = unsafe { ffi::ibv_alloc_parent_domain(self.context().ptr(), &mut attr) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            unsupported(
                "ibv_alloc_parent_domain",
                "parent domains (ibv_alloc_parent_domain)",
                "a provider alloc_parent_domain (EOPNOTSUPP)",
            )
        })?;
        Ok(ProtectionDomain::parent_domain(raw, self, td))
    }
}
