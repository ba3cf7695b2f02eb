//! Memory regions: `struct ibv_mr`, and the buffers they register.
//!
//! A [`MemoryRegion`] owns the memory it registers and deregisters it before giving the
//! memory back, so the HCA can never touch memory Rust has freed or reused. While registered,
//! the memory is shared with the HCA and possibly remote peers, so it is reached only by
//! atomic copies ([`MemoryRegion::read`], [`MemoryRegion::write`]) or through the `unsafe`
//! slice accessors, never through references that Rust would assume stable.
//!
//! The registration is shared with the memory windows bound to it: it ends
//! (`ibv_dereg_mr`) when the region and every window bound to it are gone.

mod atomic_copy; // copies to and from registered memory (relaxed atomics): unsafe itself
pub(crate) mod dmabuf; // DmaBufRegion (ibv_reg_dmabuf_mr)
pub(crate) mod mapping; // Mapping: the memory sources the crate maps (mmap: unsafe itself)
pub(crate) mod odp; // on-demand paging: ImplicitOdp, advise_mr
mod raw; // the FFI calls of regions: the folder's unsafe, but those 2 files' and as_slice's
pub(crate) mod rereg; // MemoryRegion::rereg (ibv_rereg_mr)

use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::types::AccessFlags;
use crate::wr::{RemoteMemory, Sge};

use raw::Kept;
pub use raw::{page_size, AlignedBuffer, RegistrableMemory};

/// A registered memory region (`ibv_reg_mr`) over memory it owns.
///
/// Dropping it deregisters the region (`ibv_dereg_mr`) and then drops the memory; a memory
/// window bound to the region delays both until the window is deallocated. Should
/// deregistration fail, the memory is leaked rather than freed under the HCA.
pub struct MemoryRegion<B: RegistrableMemory = AlignedBuffer> {
    /// The registration, and what the memory windows bound to the region hold.
    raw: raw::Region<B>,
}

/// `access` as the access argument of `ibv_reg_mr` or `ibv_rereg_mr`, after the rules every
/// registration keeps, whatever the provider:
/// - remote write and remote atomics need `LOCAL_WRITE` (the kernel refuses them alone with
///   `EINVAL`, `ib_check_mr_access`: the HCA writes the region for them);
/// - `ZERO_BASED` is a right of a memory window bind, not of a registration: a region's
///   remote addresses are its virtual addresses ([`MemoryRegion::remote`]), and rxe refuses
///   it (`EOPNOTSUPP`);
/// - `HUGETLB` only with `ON_DEMAND`: the kernel reads it only to page an on-demand region
///   in huge pages; without it, it changes nothing, and rxe refuses it (`EOPNOTSUPP`).
#[inline]
pub(crate) fn check_access(access: AccessFlags) -> Result<i32> {
    let remote = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;
    // The rules in one test on the hot path (folded away for a constant `access`); which
    // one is broken is worked out off it.
    let broken = (access.intersects(remote) && !access.contains(AccessFlags::LOCAL_WRITE))
        || access.contains(AccessFlags::ZERO_BASED)
        || (access.contains(AccessFlags::HUGETLB) && !access.contains(AccessFlags::ON_DEMAND));
    match i32::try_from(access.bits()) {
        Ok(bits) if !broken => Ok(bits),
        _ => Err(access_error(access)),
    }
}

/// The error of [`check_access`] for `access`, which breaks one of its rules.
#[cold]
#[inline(never)]
fn access_error(access: AccessFlags) -> Error {
    let invalid = |rule: &str| Error::InvalidArgument {
        what: "access flags",
        reason: format!("{access:?}: {rule}"),
    };
    let remote = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;
    if access.intersects(remote) && !access.contains(AccessFlags::LOCAL_WRITE) {
        invalid(
            "remote write and remote atomic access need LOCAL_WRITE (the HCA writes the \
             region for them; the kernel refuses them alone)",
        )
    } else if access.contains(AccessFlags::ZERO_BASED) {
        invalid(
            "ZERO_BASED is a right of a memory window bind, not of a registration (a \
             region's remote addresses are its virtual addresses)",
        )
    } else if access.contains(AccessFlags::HUGETLB) && !access.contains(AccessFlags::ON_DEMAND) {
        invalid(
            "HUGETLB only applies to on-demand paging (ON_DEMAND); pinned huge pages register \
             without it",
        )
    } else {
        invalid("does not fit in an int")
    }
}

/// The error of `ibv_reg_mr` refusing a registration with `access`: `EOPNOTSUPP` named
/// as the access rights the provider lacks.
#[cold]
#[inline(never)]
fn registration_error(e: Error, access: AccessFlags) -> Error {
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) if access.contains(AccessFlags::HUGETLB) => Error::Unsupported {
            what: "on-demand paging in huge pages (AccessFlags::HUGETLB)",
            missing: "IBV_ACCESS_HUGETLB in its driver's registration (refused with \
                      EOPNOTSUPP; rxe has none)",
        },
        Some(libc::EOPNOTSUPP) => Error::Unsupported {
            what: "the access flags of the registration",
            missing: "each of them in its driver's registration (refused with EOPNOTSUPP)",
        },
        _ => e,
    }
}

/// [`Error::InvalidArgument`] for a buffer of 0 bytes.
#[cold]
#[inline(never)]
fn empty_region() -> Error {
    Error::InvalidArgument {
        what: "memory region length",
        reason: "a region of 0 bytes cannot be registered".into(),
    }
}

impl ProtectionDomain {
    /// Allocates a zeroed, page-aligned buffer of `len` bytes and registers it, as
    /// [`register`](Self::register) does.
    pub fn alloc_mr(&self, len: usize, access: AccessFlags) -> Result<MemoryRegion> {
        self.register(AlignedBuffer::new(len)?, access)
    }

    /// Registers `buf` (`ibv_reg_mr`); the region owns it until [`MemoryRegion::deregister`].
    ///
    /// Checked before the call: `access` keeps the rules of every registration
    /// ([`Error::InvalidArgument`]): remote write and remote atomics need
    /// [`AccessFlags::LOCAL_WRITE`]; [`AccessFlags::ZERO_BASED`] is a window's right, not a
    /// region's; [`AccessFlags::HUGETLB`] only with [`AccessFlags::ON_DEMAND`]. With
    /// `ON_DEMAND` (on-demand paging), the memory must start on a page boundary (a huge
    /// page boundary with `HUGETLB`: [`MemoryRule::OdpPageAligned`](crate::MemoryRule),
    /// which a `Vec` or `Box` does not keep), and the device's ODP caps are checked:
    /// [`Error::Unsupported`] names the one missing (ODP itself, or RC write, read or
    /// atomics on ODP memory for the remote rights asked). An access right the provider
    /// refuses (`EOPNOTSUPP`: rxe has no `HUGETLB`) is [`Error::Unsupported`] too.
    #[inline]
    pub fn register<B: RegistrableMemory>(
        &self,
        buf: B,
        access: AccessFlags,
    ) -> Result<MemoryRegion<B>> {
        if buf.is_empty() {
            return Err(empty_region());
        }
        let bits = check_access(access)?;
        let memory = raw::Memory::new(buf)?;
        if access.contains(AccessFlags::ON_DEMAND) {
            crate::mr::odp::check_start(memory.start(), access)?;
            crate::mr::odp::check_caps(self, access)?;
        }
        let reg = raw::Registration::register(self, memory, access, bits)
            .map_err(|e| registration_error(e, access))?;
        crate::wr::keys::note(self, reg.lkey());
        Ok(MemoryRegion {
            raw: raw::Region::new(reg),
        })
    }
}

impl<B: RegistrableMemory> MemoryRegion<B> {
    /// The raw `ibv_mr`, valid while the region lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mr {
        self.raw.reg().ptr()
    }

    /// The protection domain the region is registered in.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.raw.reg().pd
    }

    /// What a window keeps while bound to the region (made by the first).
    pub(crate) fn kept(&self) -> Arc<Kept>
    where
        B: Send + 'static,
    {
        self.raw.kept()
    }

    /// The access rights it was registered with.
    pub fn access(&self) -> AccessFlags {
        self.raw.reg().access
    }

    /// The local key, for scatter/gather entries.
    pub fn lkey(&self) -> u32 {
        self.raw.reg().lkey()
    }

    /// The remote key, for peers.
    pub fn rkey(&self) -> u32 {
        self.raw.reg().rkey()
    }

    /// Where the region starts in its memory: 0 unless [`rereg`](Self::rereg) moved it.
    pub fn offset(&self) -> usize {
        self.raw.reg().offset()
    }

    /// Whether the region can be used: false once a failed [`rereg`](Self::rereg) left it
    /// invalid ([`ReregState::Invalid`](crate::ReregState::Invalid)); then its keys must not
    /// be given out, and it can only be deregistered.
    pub fn is_valid(&self) -> bool {
        self.raw.reg().valid
    }

    /// Start address of the region.
    pub fn addr(&self) -> u64 {
        self.raw.reg().base() as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.raw.reg().len()
    }

    /// Whether the region is empty (never: empty regions are rejected).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What a peer needs to access the whole region: address, length and rkey.
    pub fn remote(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.addr(),
            len: self.len() as u64,
            rkey: self.rkey(),
        }
    }

    /// A scatter/gather entry for `range` of the region.
    ///
    /// Fails with [`Error::InvalidArgument`] once a failed [`rereg`](Self::rereg) left the
    /// region invalid.
    pub fn sge(&self, range: impl RangeBounds<usize>) -> Result<Sge<'_>> {
        if !self.raw.reg().valid {
            return Err(crate::mr::rereg::invalid_region());
        }
        let (start, length) = sge_span(range, self.len())?;
        // Inside the registered memory (sge_span); only the address is taken.
        let addr = self.raw.reg().base().wrapping_add(start) as u64;
        Ok(Sge::new(addr, length, self.lkey()))
    }

    /// Copies `data` into the region at `offset`, with relaxed atomic stores.
    ///
    /// The HCA may be reading or writing the same bytes (a posted WR, a peer's RDMA write):
    /// ordering against it comes from completions, as in C.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<()> {
        self.raw.reg().write(offset, data)
    }

    /// Sets every byte of the region to `byte`, with relaxed atomic stores (as
    /// [`write`](Self::write)).
    pub fn fill(&mut self, byte: u8) {
        self.raw.reg().fill(byte)
    }

    /// Copies bytes from the region at `offset` into `out`, with relaxed atomic loads.
    ///
    /// A peer or the HCA writing meanwhile may leave `out` with a mix of old and new bytes;
    /// read after the completion that says the data is there, as in C.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.raw.reg().read(offset, out)
    }

    /// Reads the byte at `offset` with a relaxed atomic load, so that a loop waiting for the
    /// HCA or a peer to change it (the last byte of an RDMA write, as `ib_write_lat` polls)
    /// reads memory every time instead of a value the compiler kept.
    #[inline]
    pub fn read_u8(&self, offset: usize) -> Result<u8> {
        self.raw.reg().read_u8(offset)
    }

    /// The region's bytes as a slice.
    ///
    /// # Safety
    /// Nothing may write the memory while the slice lives: no posted receive, RDMA read
    /// response or atomic targets it, and no peer holds remote write or atomic access to it
    /// (through the region's rkey or a window bound to it).
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: the memory is valid for len bytes; the caller excludes writers.
        unsafe { std::slice::from_raw_parts(self.raw.reg().base(), self.len()) }
    }

    /// The region's bytes as a mutable slice.
    ///
    /// # Safety
    /// Nothing else may read or write the memory while the slice lives: no posted work
    /// request references it and no peer holds remote access to it (through the region's
    /// rkey or a window bound to it).
    pub unsafe fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the memory is valid for len bytes; on the Rust side only this handle
        // reaches it (windows hold the registration, not the memory), and &mut self
        // excludes its other users; the caller excludes the HCA and peers.
        unsafe { std::slice::from_raw_parts_mut(self.raw.reg().base(), self.len()) }
    }

    /// Deregisters the region (`ibv_dereg_mr`) and gives the memory back.
    ///
    /// Fails with [`Error::InvalidArgument`] while a memory window is bound to the region;
    /// the region is then deregistered, and the memory dropped, when the last such window
    /// is deallocated.
    #[inline]
    pub fn deregister(self) -> Result<B> {
        self.raw.deregister().map_err(raw::Refused::error)
    }
}

/// Resolves `range` to `start..end` inside a region of `len` bytes: an end past the region is
/// [`Error::OutOfRange`] naming the length, a start after the end [`Error::InvalidArgument`]
/// (an inverted range). The regions' ranges (`MemoryRegion`, `DmaBufRegion`) all go
/// through it.
pub(crate) fn resolve_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.saturating_add(1),
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end {
        return Err(Error::InvalidArgument {
            what: "range",
            reason: format!("{start}..{end} is inverted: it starts after its end"),
        });
    }
    if end > len {
        return Err(Error::OutOfRange {
            what: "range end",
            value: end as u64,
            min: 0,
            max: len as u64,
        });
    }
    Ok((start, end))
}

/// [`resolve_range`] for a scatter/gather entry: its start and its length, which must fit an
/// SGE's 32 bits ([`Error::OutOfRange`] otherwise).
pub(crate) fn sge_span(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, u32)> {
    let (start, end) = resolve_range(range, len)?;
    let length = u32::try_from(end - start).map_err(|_| Error::OutOfRange {
        what: "SGE length",
        value: (end - start) as u64,
        min: 0,
        max: u32::MAX.into(),
    })?;
    Ok((start, length))
}

impl<B: RegistrableMemory> fmt::Debug for MemoryRegion<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryRegion")
            .field("addr", &format_args!("{:#x}", self.addr()))
            .field("len", &self.len())
            .field("lkey", &format_args!("{:#x}", self.lkey()))
            .field("rkey", &format_args!("{:#x}", self.rkey()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of bound resolves against the length; an inverted range and an end past
    /// the region are refused with their own errors; an SGE's length must fit 32 bits.
    #[test]
    fn ranges_resolve_against_the_length() {
        assert_eq!(resolve_range(.., 64).unwrap(), (0, 64));
        assert_eq!(resolve_range(8..16, 64).unwrap(), (8, 16));
        assert_eq!(resolve_range(8..=15, 64).unwrap(), (8, 16));
        assert_eq!(resolve_range(60.., 64).unwrap(), (60, 64));
        assert_eq!(resolve_range(..=63, 64).unwrap(), (0, 64));
        assert_eq!(resolve_range(64..64, 64).unwrap(), (64, 64));
        assert_eq!(
            resolve_range((Bound::Excluded(3), Bound::Unbounded), 64).unwrap(),
            (4, 64)
        );
        #[allow(clippy::reversed_empty_ranges)]
        let inverted = resolve_range(10..5, 64);
        assert!(
            matches!(inverted, Err(Error::InvalidArgument { what: "range", .. })),
            "{inverted:?}"
        );
        assert!(matches!(
            resolve_range(0..65, 64),
            Err(Error::OutOfRange {
                what: "range end",
                value: 65,
                min: 0,
                max: 64
            })
        ));
        assert!(matches!(
            resolve_range(..=usize::MAX, usize::MAX),
            Ok((0, usize::MAX))
        ));
        assert_eq!(sge_span(8..16, 64).unwrap(), (8, 8));
        let big = u32::MAX as usize + 1;
        assert!(matches!(
            sge_span(.., big),
            Err(Error::OutOfRange {
                what: "SGE length",
                ..
            })
        ));
    }
}
