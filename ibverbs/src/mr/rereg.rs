//! Changing a registration in place: `ibv_rereg_mr`.
//!
//! The new range is always within the memory the region owns, so whatever the call does,
//! the region's keys reach only memory it owns: a failure that leaves the MR in an
//! undefined state ([`ReregState::Invalid`]) can make its keys useless, never unsafe.

use std::ops::Range;

use crate::error::{Error, Result};
use crate::ffi;
use crate::mr::raw::Registration;
use crate::mr::{MemoryRegion, RegistrableMemory};
use crate::pd::ProtectionDomain;
use crate::types::AccessFlags;
use crate::types::ReregState;

/// The changes of one [`MemoryRegion::rereg`]: new access rights, a new range of the
/// region's memory, a new protection domain, or any of them together.
#[derive(Clone, Debug, Default)]
pub struct Rereg {
    access: Option<AccessFlags>,
    range: Option<Range<usize>>,
    pd: Option<ProtectionDomain>,
}

impl Rereg {
    /// No change yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// New access rights (`IBV_REREG_MR_CHANGE_ACCESS`).
    pub fn access(mut self, access: AccessFlags) -> Self {
        self.access = Some(access);
        self
    }

    /// A new range of the memory the region owns, as byte offsets into it
    /// (`IBV_REREG_MR_CHANGE_TRANSLATION`).
    pub fn range(mut self, range: Range<usize>) -> Self {
        self.range = Some(range);
        self
    }

    /// A new protection domain of the same device context (`IBV_REREG_MR_CHANGE_PD`).
    pub fn pd(mut self, pd: &ProtectionDomain) -> Self {
        self.pd = Some(pd.clone());
        self
    }
}

/// The error of using a region a failed `ibv_rereg_mr` left invalid.
pub(crate) fn invalid_region() -> Error {
    Error::InvalidArgument {
        what: "memory region",
        reason: "a failed ibv_rereg_mr left it invalid; it can only be deregistered".into(),
    }
}

fn invalid(what: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        what,
        reason: reason.into(),
    }
}

/// `access` as an `ibv_rereg_mr` access argument, after the checks the kernel would fail
/// with a command error (which leaves the MR invalid): the rules of every registration
/// ([`check_access`](crate::mr::check_access)), and no `ON_DEMAND`.
fn check_access(access: AccessFlags) -> Result<i32> {
    if access.contains(AccessFlags::ON_DEMAND) {
        return Err(invalid(
            "access flags",
            "ibv_rereg_mr cannot make a region on-demand paged; register a new one",
        ));
    }
    crate::mr::check_access(access)
}

impl<B: RegistrableMemory> MemoryRegion<B> {
    /// Changes the registration in place (`ibv_rereg_mr`): access rights, the range of
    /// the owned memory it covers, its protection domain. The keys may change; read them
    /// again.
    ///
    /// Checked before the call, leaving the region as it was: a memory window bound to
    /// it, an invalid or on-demand paged region, nothing to change
    /// ([`Error::InvalidArgument`]); access rights that break the rules of every
    /// registration ([`ProtectionDomain::register`]), or `ON_DEMAND`
    /// ([`Error::InvalidArgument`]); an empty or inverted range
    /// ([`Error::InvalidArgument`]) or one past the memory ([`Error::OutOfRange`]); a PD of
    /// another device context ([`Error::Mismatch`]). A provider without the verb, or a
    /// kernel driver that refuses the change (`EOPNOTSUPP`; rdma-core's rxe has no
    /// `rereg_mr`), is [`Error::Unsupported`], with the region as it was. Any other failure
    /// of the call is [`Error::Rereg`], whose [`ReregState`] says whether the region changed
    /// or is left invalid.
    pub fn rereg(&mut self, change: &Rereg) -> Result<()> {
        let reg = self.raw.registration_mut().ok_or_else(|| {
            invalid(
                "memory region",
                "a memory window is bound to it; deallocate the window first",
            )
        })?;
        if !reg.valid {
            return Err(invalid_region());
        }
        if reg.access.contains(AccessFlags::ON_DEMAND) {
            return Err(invalid(
                "memory region",
                "it is on-demand paged; register a new region instead",
            ));
        }
        if change.access.is_none() && change.range.is_none() && change.pd.is_none() {
            return Err(invalid(
                "rereg",
                "nothing to change: give new access, a range or a PD",
            ));
        }
        let bits = change.access.map(check_access).transpose()?;
        let old_lkey = reg.lkey();
        // Refuses a range outside the memory, or a PD of another context, before the call.
        let (rc, source) = reg.rereg(bits, change.range.as_ref(), change.pd.as_ref())?;
        let apply = |reg: &mut Registration<B>| {
            if let Some(access) = change.access {
                reg.access = access;
            }
            if let Some(sinks) = reg.pd.context().read_sinks() {
                sinks.forget(old_lkey);
                sinks.note(reg.lkey(), reg.access);
            }
            crate::wr::keys::forget(&reg.pd, old_lkey);
            if let Some(new) = &change.pd {
                reg.pd = new.clone();
            }
            crate::wr::keys::note(&reg.pd, reg.lkey());
        };
        use ffi::ibv_rereg_mr_err_code as err;
        let (code, region) = match err(rc) {
            _ if rc == 0 => {
                apply(reg);
                return Ok(());
            }
            err::IBV_REREG_MR_ERR_INPUT => ("IBV_REREG_MR_ERR_INPUT", ReregState::Unchanged),
            err::IBV_REREG_MR_ERR_DONT_FORK_NEW => {
                ("IBV_REREG_MR_ERR_DONT_FORK_NEW", ReregState::Unchanged)
            }
            err::IBV_REREG_MR_ERR_DO_FORK_OLD => {
                apply(reg);
                ("IBV_REREG_MR_ERR_DO_FORK_OLD", ReregState::Changed)
            }
            err::IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW => {
                ("IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW", ReregState::Invalid)
            }
            // libibverbs reports any failure of the provider as IBV_REREG_MR_ERR_CMD. With
            // EOPNOTSUPP nothing was done: it is what libibverbs' stand-in for a provider
            // without rereg_mr returns (rdma-core's rxe), and the kernel's answer to a
            // driver without the verb, or to a change the driver refuses before making
            // any (rxe: a new range).
            _ if source.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                return Err(Error::Unsupported {
                    what: "changing a registration (ibv_rereg_mr)",
                    missing: "rereg_mr in its provider, or this change in its kernel driver \
                              (refused with EOPNOTSUPP; the region is unchanged)",
                });
            }
            _ => ("IBV_REREG_MR_ERR_CMD", ReregState::Invalid),
        };
        if region == ReregState::Invalid {
            reg.valid = false;
            // The MR may be in either PD now: both stay allocated until it is deregistered.
            reg.stale_pd = change.pd.clone();
        }
        Err(Error::Rereg {
            code,
            region,
            source,
        })
    }
}
