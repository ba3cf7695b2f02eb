//! Protection domains: `struct ibv_pd`.

pub(crate) mod domain; // ThreadDomain and parent domains (ibv_alloc_td, ibv_alloc_parent_domain)

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;
use crate::pd::domain::ThreadDomain;

/// A protection domain (`ibv_alloc_pd`), deallocated when the last clone and the last object
/// created in it (MRs, QPs, AHs, SRQs, MWs) are dropped.
#[derive(Clone)]
pub struct ProtectionDomain {
    inner: Arc<Inner>,
}

struct Inner {
    raw: NonNull<ffi::ibv_pd>,
    ctx: Context,
    /// Of a parent domain: the PD and thread domain it was made from, deallocated after it.
    _parent: Option<(ProtectionDomain, Option<ThreadDomain>)>,
}

// SAFETY: protection domains may be used from any thread.
unsafe impl Send for Inner {}
// SAFETY: as above; the verbs taking a PD are thread-safe.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: every object created in this PD holds a clone of the Arc, so none is left;
        // the context outlives this call (self.ctx is dropped after).
        let rc = unsafe { ffi::ibv_dealloc_pd(self.raw.as_ptr()) };
        drop_error::report("ibv_dealloc_pd", rc);
    }
}

impl Context {
    /// Allocates a protection domain (`ibv_alloc_pd`).
    pub fn alloc_pd(&self) -> Result<ProtectionDomain> {
        // SAFETY: the context is open.
        let raw = check_ptr("ibv_alloc_pd", unsafe { ffi::ibv_alloc_pd(self.ptr()) })?;
        Ok(ProtectionDomain {
            inner: Arc::new(Inner {
                raw,
                ctx: self.clone(),
                _parent: None,
            }),
        })
    }
}

impl ProtectionDomain {
    /// A PD handle for `raw`, a parent domain made from `parent` and `td`, deallocated with
    /// `ibv_dealloc_pd` before them.
    pub(crate) fn parent_domain(
        raw: NonNull<ffi::ibv_pd>,
        parent: &ProtectionDomain,
        td: Option<&ThreadDomain>,
    ) -> Self {
        ProtectionDomain {
            inner: Arc::new(Inner {
                raw,
                ctx: parent.context().clone(),
                _parent: Some((parent.clone(), td.cloned())),
            }),
        }
    }

    /// The raw `ibv_pd`, valid while this PD lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_pd {
        self.inner.raw.as_ptr()
    }

    /// The context the PD belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Fails with [`Error::Mismatch`] unless `other` is this same PD.
    pub(crate) fn check_same(&self, other: &ProtectionDomain, what: &'static str) -> Result<()> {
        if Arc::ptr_eq(&self.inner, &other.inner) {
            Ok(())
        } else {
            Err(Error::Mismatch {
                what,
                owner: "protection domain",
            })
        }
    }
}

impl fmt::Debug for ProtectionDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: the PD is live.
        let handle = unsafe { (*self.ptr()).handle };
        f.debug_struct("ProtectionDomain")
            .field("device", &self.inner.ctx.name())
            .field("handle", &handle)
            .finish()
    }
}
