//! On-demand paging (ODP): regions whose pages the device faults in when it touches them
//! instead of pinning them at registration ([`AccessFlags::ON_DEMAND`]), checked against the
//! device's ODP capabilities before `ibv_reg_mr`; prefetch advice (`ibv_advise_mr`); and
//! implicit ODP, one region over the whole address space.
//!
//! An ODP region owns its memory like any other ([`MemoryRegion`]): the device may fault
//! pages in at any time while it is registered, so the soundness rules are the same, plus
//! one: it starts on a page boundary ([`MemoryRule::OdpPageAligned`]), since rxe copies a
//! transfer into an ODP region to the start of the page where it starts.

use std::fmt;
use std::ops::RangeBounds;
use std::ptr::NonNull;

use crate::error::{check, Error, Result};
use crate::ffi;
use crate::mr::mapping::huge_page_size;
use crate::mr::raw::RawMr;
use crate::mr::{check_access, page_size, MemoryRegion, RegistrableMemory};
use crate::pd::ProtectionDomain;
use crate::types::AccessFlags;
use crate::types::MemoryRule;
use crate::{OdpGeneralCaps, OdpTransportCaps};

/// What the access rights of an ODP region need of the device's RC ODP caps: remote
/// access comes over RC only.
const REMOTE_NEEDS: [(AccessFlags, OdpTransportCaps, &str); 3] = [
    (
        AccessFlags::REMOTE_WRITE,
        OdpTransportCaps::WRITE,
        "IBV_ODP_SUPPORT_WRITE in rc_odp_caps (RC write on ODP memory)",
    ),
    (
        AccessFlags::REMOTE_READ,
        OdpTransportCaps::READ,
        "IBV_ODP_SUPPORT_READ in rc_odp_caps (RC read on ODP memory)",
    ),
    (
        AccessFlags::REMOTE_ATOMIC,
        OdpTransportCaps::ATOMIC,
        "IBV_ODP_SUPPORT_ATOMIC in rc_odp_caps (RC atomics on ODP memory)",
    ),
];

/// Checks, before registering with `access` (which has [`AccessFlags::ON_DEMAND`]), that the
/// device of `pd` has ODP and the RC ODP caps its remote rights need
/// (`ibv_query_device_ex`); [`Error::Unsupported`] names the first that is missing.
pub(crate) fn check_caps(pd: &ProtectionDomain, access: AccessFlags) -> Result<()> {
    let caps = pd.context().query_device()?.odp_caps;
    let what = "on-demand paging (AccessFlags::ON_DEMAND)";
    if !caps.general.contains(OdpGeneralCaps::SUPPORT) {
        return Err(Error::Unsupported {
            what,
            missing: "IBV_ODP_SUPPORT in general_odp_caps",
        });
    }
    for (flag, cap, missing) in REMOTE_NEEDS {
        if access.contains(flag) && !caps.rc.contains(cap) {
            return Err(Error::Unsupported { what, missing });
        }
    }
    Ok(())
}

/// Checks, before registering the memory at `mem` with `access` (which has
/// [`AccessFlags::ON_DEMAND`]), that it starts on a boundary of the kernel's paging unit for
/// it: the page, or with [`AccessFlags::HUGETLB`] the default huge page (the kernel's
/// `HPAGE_SHIFT`). [`MemoryRule::OdpPageAligned`] says why.
pub(crate) fn check_start(mem: NonNull<u8>, access: AccessFlags) -> Result<()> {
    let refuse = |reason: String| Error::MemoryRule {
        rule: MemoryRule::OdpPageAligned,
        reason,
    };
    let (unit, name) = if access.contains(AccessFlags::HUGETLB) {
        let huge = huge_page_size().ok_or_else(|| {
            refuse("HUGETLB pages it in huge pages, and the kernel reports none".into())
        })?;
        (huge, "huge page")
    } else {
        (page_size(), "page")
    };
    let addr = mem.as_ptr() as usize;
    match addr % unit {
        0 => Ok(()),
        into => Err(refuse(format!(
            "it starts at {addr:#x}, {into} bytes into its {unit}-byte {name} (a Vec or Box \
             starts where the allocator put it; AlignedBuffer, alloc_mr and Mapping start on \
             a page boundary)"
        ))),
    }
}

/// `IB_UVERBS_ADVISE_MR_FLAG_FLUSH` (`rdma/ib_user_ioctl_verbs.h`, an enum the bindings do
/// not take): `ibv_advise_mr` returns once the advice is carried out.
const ADVISE_MR_FLAG_FLUSH: u32 = 1 << 0;

/// Advice for [`MemoryRegion::advise`] (`enum ibv_advise_mr_advice`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// `IBV_ADVISE_MR_ADVICE_PREFETCH`: fault the pages in for reading.
    Prefetch,
    /// `IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE`: fault the pages in for writing (needs
    /// [`AccessFlags::LOCAL_WRITE`]).
    PrefetchWrite,
    /// `IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT`: map the pages that are present, fault none.
    PrefetchNoFault,
}

impl Advice {
    fn raw(self) -> ffi::ib_uverbs_advise_mr_advice {
        use ffi::ib_uverbs_advise_mr_advice as A;
        match self {
            Advice::Prefetch => A::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH,
            Advice::PrefetchWrite => A::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE,
            Advice::PrefetchNoFault => A::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT,
        }
    }
}

impl<B: RegistrableMemory> MemoryRegion<B> {
    /// Gives the device `advice` about `range` of this ODP region (`ibv_advise_mr`), such
    /// as to fault its pages in before the first transfer. With `wait`
    /// (`IBV_ADVISE_MR_FLAG_FLUSH`) it returns once the pages are mapped. The range is
    /// checked to lie in the region; the device only maps the pages it touches, inside the
    /// region's page-aligned span, and writes nothing, so the range needs no alignment.
    ///
    /// Fails with [`Error::InvalidArgument`] on a pinned region (registered without
    /// [`AccessFlags::ON_DEMAND`]), an empty range, or [`Advice::PrefetchWrite`] without
    /// [`AccessFlags::LOCAL_WRITE`]; with [`Error::OutOfRange`] on a range past the region;
    /// with [`Error::Unsupported`] where the provider has no `advise_mr` (`EOPNOTSUPP`).
    pub fn advise(&self, advice: Advice, range: impl RangeBounds<usize>, wait: bool) -> Result<()> {
        let invalid = |reason: &str| Error::InvalidArgument {
            what: "ibv_advise_mr",
            reason: reason.into(),
        };
        if !self.access().contains(AccessFlags::ON_DEMAND) {
            return Err(invalid(
                "the region is pinned, not on-demand (AccessFlags::ON_DEMAND)",
            ));
        }
        if advice == Advice::PrefetchWrite && !self.access().contains(AccessFlags::LOCAL_WRITE) {
            return Err(invalid("PrefetchWrite needs AccessFlags::LOCAL_WRITE"));
        }
        let sge = self.sge(range)?;
        if sge.is_empty() {
            return Err(invalid("the range is empty"));
        }
        let flags = if wait { ADVISE_MR_FLAG_FLUSH } else { 0 };
        let rc = self.raw.reg().advise(advice.raw(), flags, &sge);
        if rc == libc::EOPNOTSUPP {
            return Err(Error::Unsupported {
                what: "prefetch advice (ibv_advise_mr)",
                missing: "advise_mr in its provider (rdma-core's rxe has none)",
            });
        }
        check("ibv_advise_mr", rc)
    }
}

/// An implicit ODP region (`ibv_reg_mr` of the whole address space with
/// [`AccessFlags::ON_DEMAND`]): one local key for any memory of the process, deregistered on
/// drop. Local access only: a remote key would open the whole address space to peers.
///
/// It owns no memory, so it gives no safe scatter/gather entry: an entry under its key is
/// made with the `unsafe` [`Sge::from_raw`](crate::Sge::from_raw), whose caller vouches for
/// the memory; where the device has rxe's on-demand paging, which copies a transfer to the
/// start of the page where it starts ([`MemoryRule::OdpPageAligned`]), that is the memory
/// from the start of the entry's first page.
pub struct ImplicitOdp {
    /// Deregistered on drop, before the PD is let go.
    raw: RawMr,
    pd: ProtectionDomain,
}

impl ProtectionDomain {
    /// Registers the whole address space for on-demand paging (`ibv_reg_mr(pd, NULL,
    /// SIZE_MAX, access | IBV_ACCESS_ON_DEMAND)`), with local `access` only.
    ///
    /// Fails with [`Error::Unsupported`] where the device does not report
    /// `IBV_ODP_SUPPORT_IMPLICIT` (rxe does not), and with [`Error::InvalidArgument`] for
    /// remote access rights and for access flags no registration takes
    /// ([`ProtectionDomain::register`]).
    pub fn register_implicit_odp(&self, access: AccessFlags) -> Result<ImplicitOdp> {
        let remote =
            AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
        if access.intersects(remote) {
            return Err(Error::InvalidArgument {
                what: "access flags",
                reason: format!(
                    "{access:?}: an implicit ODP region is local only (a remote key would open \
                     the whole address space)"
                ),
            });
        }
        let bits = check_access(access | AccessFlags::ON_DEMAND)?;
        let caps = self.context().query_device()?.odp_caps;
        if !caps.general.contains(OdpGeneralCaps::SUPPORT_IMPLICIT) {
            return Err(Error::Unsupported {
                what: "implicit on-demand paging",
                missing: "IBV_ODP_SUPPORT_IMPLICIT in general_odp_caps",
            });
        }
        let raw = RawMr::implicit_odp(self, bits)?;
        crate::wr::keys::note(self, raw.lkey());
        Ok(ImplicitOdp {
            raw,
            pd: self.clone(),
        })
    }
}

impl Drop for ImplicitOdp {
    // The lkey leaves the crate's keys; then the fields deregister the MR.
    fn drop(&mut self) {
        crate::wr::keys::forget(&self.pd, self.lkey());
    }
}

impl ImplicitOdp {
    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.raw.lkey()
    }

    /// The protection domain the region is registered in.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }
}

impl fmt::Debug for ImplicitOdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImplicitOdp")
            .field("lkey", &format_args!("{:#x}", self.lkey()))
            .finish()
    }
}
