//! Thread domains and parent domains: `struct ibv_td`, `ibv_alloc_td` and
//! `ibv_alloc_parent_domain`.
//!
//! A thread domain promises the provider that the objects of a parent domain made with it
//! are used by one thread at a time, so that it may leave out their locks. A parent domain
//! is a protection domain ([`ProtectionDomain`]) that every verb taking a PD accepts. Not
//! every provider has them (rxe has neither): there they fail with
//! [`Error::Unsupported`](crate::Error::Unsupported).

use std::fmt;
use std::sync::Arc;

use crate::context::Context;
use crate::error::Result;
use crate::ffi;
use crate::pd::raw::{RawPd, RawTd};
use crate::pd::ProtectionDomain;

/// A thread domain (`ibv_alloc_td`), deallocated (`ibv_dealloc_td`) after the last clone
/// and the last parent domain made with it.
#[derive(Clone)]
pub struct ThreadDomain {
    /// The `ibv_td` and its context.
    raw: Arc<RawTd>,
}

impl Context {
    /// Allocates a thread domain (`ibv_alloc_td`). A provider without thread domains
    /// (`EOPNOTSUPP`, such as rxe) gives
    /// [`Error::Unsupported`](crate::Error::Unsupported).
    pub fn alloc_td(&self) -> Result<ThreadDomain> {
        Ok(ThreadDomain {
            raw: Arc::new(RawTd::alloc(self)?),
        })
    }
}

impl ThreadDomain {
    /// The raw `ibv_td`, valid while the TD lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_td {
        self.raw.ptr()
    }

    /// The context the TD belongs to.
    pub fn context(&self) -> &Context {
        self.raw.context()
    }
}

impl fmt::Debug for ThreadDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadDomain")
            .field("device", &self.context().name())
            .finish()
    }
}

impl ProtectionDomain {
    /// Allocates a parent domain of this PD without a thread domain
    /// (`ibv_alloc_parent_domain`): a [`ProtectionDomain`] that keeps this one alive. A
    /// provider without parent domains (`EOPNOTSUPP`, such as rxe) gives
    /// [`Error::Unsupported`](crate::Error::Unsupported).
    pub fn alloc_parent_domain(&self) -> Result<ProtectionDomain> {
        self.parent_domain_with(None)
    }

    /// Allocates a parent domain of this PD with thread domain `td`
    /// (`ibv_alloc_parent_domain`); see [`alloc_parent_domain`](Self::alloc_parent_domain).
    /// A TD of another context is [`Error::Mismatch`](crate::Error::Mismatch), before the
    /// call.
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

    /// A parent domain of this PD, with thread domain `td` if given (one of another context
    /// is [`Error::Mismatch`](crate::Error::Mismatch), before the call).
    fn parent_domain_with(&self, td: Option<&ThreadDomain>) -> Result<ProtectionDomain> {
        let raw = RawPd::alloc_parent(&self.inner.raw, td.map(|td| &*td.raw))?;
        Ok(ProtectionDomain::parent_domain(raw, self, td))
    }
}
