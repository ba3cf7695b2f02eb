//! Protection domains: `struct ibv_pd`.

pub(crate) mod domain; // ThreadDomain and parent domains (ibv_alloc_td, ibv_alloc_parent_domain)
mod raw; // the FFI calls of PDs, TDs and parent domains: every unsafe block of the folder

use std::fmt;
use std::sync::Arc;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::ffi;
use crate::pd::domain::ThreadDomain;
use raw::RawPd;

/// A protection domain (`ibv_alloc_pd`), deallocated when the last clone and the last object
/// created in it (MRs, QPs, AHs, SRQs, MWs) are dropped.
#[derive(Clone)]
pub struct ProtectionDomain {
    inner: Arc<Inner>,
}

struct Inner {
    /// The `ibv_pd` and its context, deallocated first: the fields are dropped in order.
    raw: RawPd,
    /// Of a parent domain: the PD and thread domain it was made from, deallocated after it.
    parent: Option<(ProtectionDomain, Option<ThreadDomain>)>,
}

impl Context {
    /// Allocates a protection domain (`ibv_alloc_pd`).
    pub fn alloc_pd(&self) -> Result<ProtectionDomain> {
        Ok(ProtectionDomain {
            inner: Arc::new(Inner {
                raw: RawPd::alloc(self)?,
                parent: None,
            }),
        })
    }
}

impl ProtectionDomain {
    /// A PD handle for `raw`, a parent domain made from `parent` and `td`, deallocated with
    /// `ibv_dealloc_pd` before them.
    fn parent_domain(raw: RawPd, parent: &ProtectionDomain, td: Option<&ThreadDomain>) -> Self {
        ProtectionDomain {
            inner: Arc::new(Inner {
                raw,
                parent: Some((parent.clone(), td.cloned())),
            }),
        }
    }

    /// The raw `ibv_pd`, valid while this PD lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_pd {
        self.inner.raw.ptr()
    }

    /// The protection domain of the kernel that this one is: itself, or for a parent domain
    /// the PD it was made from, whose regions its queues may use.
    pub(crate) fn root(&self) -> &ProtectionDomain {
        match &self.inner.parent {
            Some((parent, _)) => parent.root(),
            None => self,
        }
    }

    /// The kernel's handle of the PD (`ibv_pd::handle`).
    pub(crate) fn handle(&self) -> u32 {
        self.inner.raw.handle()
    }

    /// The context the PD belongs to.
    pub fn context(&self) -> &Context {
        self.inner.raw.context()
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
        f.debug_struct("ProtectionDomain")
            .field("device", &self.context().name())
            .field("handle", &self.handle())
            .finish()
    }
}
