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
    inner: Arc<Inner>,
}

struct Inner {
    /// The `ibv_td`, deallocated first: the fields are dropped in order.
    raw: RawTd,
    ctx: Context,
}

impl Context {
    /// Allocates a thread domain (`ibv_alloc_td`). A provider without thread domains
    /// (`EOPNOTSUPP`, such as rxe) gives
    /// [`Error::Unsupported`](crate::Error::Unsupported).
    pub fn alloc_td(&self) -> Result<ThreadDomain> {
        Ok(ThreadDomain {
            inner: Arc::new(Inner {
                raw: RawTd::alloc(self)?,
                ctx: self.clone(),
            }),
        })
    }
}

impl ThreadDomain {
    /// The raw `ibv_td`, valid while the TD lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_td {
        self.inner.raw.ptr()
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
    /// [`Error::Unsupported`](crate::Error::Unsupported).
    pub fn alloc_parent_domain(&self) -> Result<ProtectionDomain> {
        self.parent_domain_with(None)
    }

    /// A parent domain of this PD, with thread domain `td` if given (one of another context
    /// is [`Error::Mismatch`](crate::Error::Mismatch), before the call).
    pub(super) fn parent_domain_with(&self, td: Option<&ThreadDomain>) -> Result<ProtectionDomain> {
        let raw = RawPd::alloc_parent(self, td)?;
        Ok(ProtectionDomain::parent_domain(raw, self, td))
    }
}
