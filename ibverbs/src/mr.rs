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

mod atomic_copy; // copies to and from registered memory (relaxed atomics)
pub(crate) mod dmabuf; // DmaBufRegion (ibv_reg_dmabuf_mr)
pub(crate) mod mapping; // Mapping: the memory sources the crate maps, and their rules
pub(crate) mod odp; // on-demand paging: ImplicitOdp, advise_mr
pub(crate) mod rereg; // MemoryRegion::rereg (ibv_rereg_mr)

use std::alloc::{self, Layout};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Bound, RangeBounds};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::types::AccessFlags;
use crate::wr::{RemoteMemory, Sge};

/// Memory with a stable address that can be registered: [`AlignedBuffer`], `Vec<u8>`,
/// `Box<[u8]>`, [`Mapping`](crate::Mapping).
///
/// # Safety
/// `as_mut_ptr` must return the same pointer, valid for reads and writes of `len` bytes, for
/// as long as the value lives and is not accessed otherwise, even when the value is moved.
/// The value must own the memory: if it is leaked (`mem::forget`), the memory must stay
/// allocated and unused by anything else, because a leaked region is never deregistered.
/// (This is why `&mut [u8]` is not registrable.) Dropping the value may free the memory.
pub unsafe trait RegistrableMemory {
    /// Start of the memory.
    fn as_mut_ptr(&mut self) -> *mut u8;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether the length is 0.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// SAFETY: a Vec's heap buffer does not move when the Vec moves, and is not reallocated since
// the MR holds the Vec exclusively.
unsafe impl RegistrableMemory for Vec<u8> {
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_slice().as_mut_ptr()
    }
    fn len(&self) -> usize {
        self.as_slice().len()
    }
}

// SAFETY: a boxed slice's heap buffer does not move when the box moves.
unsafe impl RegistrableMemory for Box<[u8]> {
    fn as_mut_ptr(&mut self) -> *mut u8 {
        (**self).as_mut_ptr()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
}

/// A zeroed, page-aligned heap buffer: what [`ProtectionDomain::alloc_mr`] registers.
pub struct AlignedBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer is plain owned memory.
unsafe impl Send for AlignedBuffer {}
// SAFETY: shared access only reads the pointer and length.
unsafe impl Sync for AlignedBuffer {}

impl AlignedBuffer {
    /// Allocates `len` zeroed bytes aligned to the page size.
    pub fn new(len: usize) -> Result<Self> {
        let invalid = |reason: String| Error::InvalidArgument {
            what: "buffer length",
            reason,
        };
        if len == 0 {
            return Err(invalid("a buffer of 0 bytes cannot be registered".into()));
        }
        let layout = Layout::from_size_align(len, page_size())
            .map_err(|_| invalid(format!("{len} bytes is larger than the address space")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc::alloc_zeroed(layout) }).ok_or(Error::Verb {
            verb: "alloc_zeroed",
            source: std::io::Error::from_raw_os_error(libc::ENOMEM),
        })?;
        Ok(AlignedBuffer { ptr, layout })
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

// SAFETY: the allocation does not move and lives until drop.
unsafe impl RegistrableMemory for AlignedBuffer {
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.layout.size()
    }
}

/// The system's page size in bytes (`sysconf(_SC_PAGESIZE)`): what [`AlignedBuffer`] aligns
/// to, and the granularity in which `ibv_reg_mr` pins memory.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// A registered memory region (`ibv_reg_mr`) over memory it owns.
///
/// Dropping it deregisters the region (`ibv_dereg_mr`) and then drops the memory; a memory
/// window bound to the region delays both until the window is deallocated. Should
/// deregistration fail, the memory is leaked rather than freed under the HCA.
pub struct MemoryRegion<B: RegistrableMemory = AlignedBuffer> {
    /// Taken out only by the region's drop and [`deregister`](Self::deregister).
    reg: ManuallyDrop<Registration<B>>,
    /// What the memory windows bound to the region hold, made when the first is bound (a
    /// region that no window ever binds allocates no shared state): a region dropped while
    /// a window holds it hands its registration over, and the last holder deregisters it.
    kept: OnceLock<Arc<Kept>>,
}

/// The registration.
pub(crate) struct Registration<B: RegistrableMemory> {
    pub(crate) raw: NonNull<ffi::ibv_mr>,
    /// Bytes registered (from `ibv_mr::addr`).
    pub(crate) len: usize,
    pub(crate) access: AccessFlags,
    /// Start and length of `buf`'s memory, read once at registration: what
    /// [`MemoryRegion::rereg`] may move the registration within.
    pub(crate) mem: NonNull<u8>,
    pub(crate) mem_len: usize,
    /// False once a failed `ibv_rereg_mr` left the MR unusable.
    pub(crate) valid: bool,
    // Dropped by hand, after deregistration; never reached through a reference meanwhile.
    buf: ManuallyDrop<B>,
    pub(crate) pd: ProtectionDomain,
    /// The PD a failed `ibv_rereg_mr` was moving the MR to, kept until deregistration.
    pub(crate) stale_pd: Option<ProtectionDomain>,
}

// SAFETY: the MR handle may be used from any thread; the memory is only reached through
// atomic copies, and B itself only when it is dropped (hence B: Send).
unsafe impl<B: RegistrableMemory + Send> Send for Registration<B> {}
// SAFETY: &Registration gives no access to B, and the memory only through atomic copies.
unsafe impl<B: RegistrableMemory + Send> Sync for Registration<B> {}

impl<B: RegistrableMemory> Registration<B> {
    /// `ibv_dereg_mr`, after the region's lkey leaves its context's iWARP read sinks.
    fn dereg(&mut self) -> i32 {
        if let Some(sinks) = self.pd.context().read_sinks() {
            // SAFETY: the MR is registered until the call below.
            sinks.forget(unsafe { self.raw.as_ref() }.lkey);
        }
        // SAFETY: the MR is registered, and no window is bound to it (a window keeps the
        // region's Kept, which deregisters it only when the last holder goes).
        unsafe { ffi::ibv_dereg_mr(self.raw.as_ptr()) }
    }

    /// Deregisters and gives the memory back (leaked if deregistration fails).
    fn deregister(self) -> Result<B> {
        let mut reg = ManuallyDrop::new(self);
        let rc = reg.dereg();
        // SAFETY: `reg` is never dropped, so the PDs are read out exactly once.
        drop(unsafe { (std::ptr::read(&reg.pd), std::ptr::read(&reg.stale_pd)) });
        crate::error::check("ibv_dereg_mr", rc)?;
        // SAFETY: buf is taken exactly once; the HCA can no longer reach it.
        Ok(unsafe { ManuallyDrop::take(&mut reg.buf) })
    }
}

impl<B: RegistrableMemory> Drop for Registration<B> {
    fn drop(&mut self) {
        let rc = self.dereg();
        if drop_error::report("ibv_dereg_mr", rc) {
            // SAFETY: dropped exactly once, after the HCA lost access to it.
            unsafe { ManuallyDrop::drop(&mut self.buf) };
        }
    }
}

/// What the memory windows bound to a region hold: the region's registration once the
/// region is dropped, deregistered when the last holder goes.
pub(crate) struct Kept(Mutex<Option<Handed>>);

/// A [`Registration`] handed to a [`Kept`] by its dropped region, boxed and type-erased:
/// dropping it drops the registration (deregistration, then the memory).
struct Handed {
    registration: NonNull<()>,
    drop: unsafe fn(NonNull<()>),
}

// SAFETY: a Kept is only made by MemoryRegion::kept, whose memory is Send + 'static: so is
// the registration a Handed owns, and dropping it on any thread, at any time, is sound.
unsafe impl Send for Handed {}

impl Handed {
    fn new<B: RegistrableMemory>(reg: Registration<B>) -> Self {
        /// Drops the boxed `Registration<B>` at `p`.
        unsafe fn drop_boxed<B: RegistrableMemory>(p: NonNull<()>) {
            // SAFETY: p is the Box::into_raw of a Registration<B> (new), dropped once.
            drop(unsafe { Box::from_raw(p.cast::<Registration<B>>().as_ptr()) });
        }
        Handed {
            registration: NonNull::from(Box::leak(Box::new(reg))).cast(),
            drop: drop_boxed::<B>,
        }
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        // SAFETY: the pointer and its drop were made together (new); dropped once.
        unsafe { (self.drop)(self.registration) }
    }
}

impl<B: RegistrableMemory> Drop for MemoryRegion<B> {
    fn drop(&mut self) {
        // SAFETY: taken exactly once; `reg` is not used after.
        let reg = unsafe { ManuallyDrop::take(&mut self.reg) };
        match self.kept.take() {
            None => drop(reg),
            // A window holds it (or held it): the last holder drops the registration.
            Some(kept) => {
                let mut slot = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
                *slot = Some(Handed::new(reg));
            }
        }
    }
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
pub(crate) fn check_access(access: AccessFlags) -> Result<i32> {
    let invalid = |rule: &str| Error::InvalidArgument {
        what: "access flags",
        reason: format!("{access:?}: {rule}"),
    };
    let remote = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC;
    if access.intersects(remote) && !access.contains(AccessFlags::LOCAL_WRITE) {
        return Err(invalid(
            "remote write and remote atomic access need LOCAL_WRITE (the HCA writes the \
             region for them; the kernel refuses them alone)",
        ));
    }
    if access.contains(AccessFlags::ZERO_BASED) {
        return Err(invalid(
            "ZERO_BASED is a right of a memory window bind, not of a registration (a \
             region's remote addresses are its virtual addresses)",
        ));
    }
    if access.contains(AccessFlags::HUGETLB) && !access.contains(AccessFlags::ON_DEMAND) {
        return Err(invalid(
            "HUGETLB only applies to on-demand paging (ON_DEMAND); pinned huge pages register \
             without it",
        ));
    }
    i32::try_from(access.bits()).map_err(|_| invalid("does not fit in an int"))
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
    pub fn register<B: RegistrableMemory>(
        &self,
        mut buf: B,
        access: AccessFlags,
    ) -> Result<MemoryRegion<B>> {
        if buf.is_empty() {
            return Err(Error::InvalidArgument {
                what: "memory region length",
                reason: "a region of 0 bytes cannot be registered".into(),
            });
        }
        let bits = check_access(access)?;
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        let mem = NonNull::new(ptr).ok_or_else(|| Error::InvalidArgument {
            what: "memory",
            reason: "RegistrableMemory::as_mut_ptr returned null".into(),
        })?;
        if access.contains(AccessFlags::ON_DEMAND) {
            crate::mr::odp::check_start(mem, access)?;
            crate::mr::odp::check_caps(self, access)?;
        }
        // SAFETY: the PD is live; buf's memory is valid for len bytes and stays in place
        // until it is deregistered (RegistrableMemory).
        let raw = unsafe { ffi::ibv_reg_mr(self.ptr(), ptr.cast(), len, bits) };
        let raw = check_ptr("ibv_reg_mr", raw).map_err(|e| match e.raw_os_error() {
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
        })?;
        if let Some(sinks) = self.context().read_sinks() {
            // SAFETY: the MR was just registered.
            sinks.note(unsafe { raw.as_ref() }.lkey, access);
        }
        Ok(MemoryRegion {
            reg: ManuallyDrop::new(Registration {
                raw,
                len,
                access,
                mem,
                mem_len: len,
                valid: true,
                buf: ManuallyDrop::new(buf),
                pd: self.clone(),
                stale_pd: None,
            }),
            kept: OnceLock::new(),
        })
    }
}

impl<B: RegistrableMemory> MemoryRegion<B> {
    /// The raw `ibv_mr`, valid while the region lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mr {
        self.reg.raw.as_ptr()
    }

    /// The protection domain the region is registered in.
    pub fn pd(&self) -> &ProtectionDomain {
        &self.reg.pd
    }

    /// What a window keeps while bound to the region (made by the first).
    pub(crate) fn kept(&self) -> Arc<Kept>
    where
        B: Send + 'static,
    {
        Arc::clone(self.kept.get_or_init(|| Arc::new(Kept(Mutex::new(None)))))
    }

    /// Whether a window keeps the region. With `&mut self`, no window can start to, and
    /// one that stops only lowers the count.
    fn kept_by_window(&mut self) -> bool {
        self.kept
            .get_mut()
            .is_some_and(|kept| Arc::strong_count(kept) > 1)
    }

    /// The registration, if no window holds it.
    pub(crate) fn registration_mut(&mut self) -> Option<&mut Registration<B>> {
        if self.kept_by_window() {
            return None;
        }
        Some(&mut self.reg)
    }

    fn mr(&self) -> &ffi::ibv_mr {
        // SAFETY: the MR is registered while self.reg lives.
        unsafe { self.reg.raw.as_ref() }
    }

    /// The access rights it was registered with.
    pub fn access(&self) -> AccessFlags {
        self.reg.access
    }

    /// The local key, for scatter/gather entries.
    pub fn lkey(&self) -> u32 {
        self.mr().lkey
    }

    /// The remote key, for peers.
    pub fn rkey(&self) -> u32 {
        self.mr().rkey
    }

    /// Where the region starts in its memory: 0 unless [`rereg`](Self::rereg) moved it.
    pub fn offset(&self) -> usize {
        self.base() as usize - self.reg.mem.as_ptr() as usize
    }

    /// Whether the region can be used: false once a failed [`rereg`](Self::rereg) left it
    /// invalid ([`ReregState::Invalid`](crate::ReregState::Invalid)); then its keys must not
    /// be given out, and it can only be deregistered.
    pub fn is_valid(&self) -> bool {
        self.reg.valid
    }

    /// Start address of the region.
    pub fn addr(&self) -> u64 {
        self.mr().addr as u64
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.reg.len
    }

    /// Whether the region is empty (never: empty regions are rejected).
    pub fn is_empty(&self) -> bool {
        self.reg.len == 0
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
        if !self.reg.valid {
            return Err(crate::mr::rereg::invalid_region());
        }
        let (start, length) = sge_span(range, self.len())?;
        // SAFETY: start..start + length lies inside the registered memory (sge_span).
        let addr = unsafe { self.base().add(start) } as u64;
        Ok(Sge::new(addr, length, self.lkey()))
    }

    /// Copies `data` into the region at `offset`, with relaxed atomic stores.
    ///
    /// The HCA may be reading or writing the same bytes (a posted WR, a peer's RDMA write):
    /// ordering against it comes from completions, as in C.
    pub fn write(&mut self, offset: usize, data: &[u8]) -> Result<()> {
        let (start, _) = self.bounds(offset..offset.saturating_add(data.len()))?;
        // SAFETY: the destination lies inside the registered memory, which is only ever
        // accessed atomically while registered.
        unsafe { atomic_copy::store(self.base().add(start), data) };
        Ok(())
    }

    /// Sets every byte of the region to `byte`, with relaxed atomic stores (as
    /// [`write`](Self::write)).
    pub fn fill(&mut self, byte: u8) {
        // SAFETY: the whole registered memory, which is only ever accessed atomically while
        // registered.
        unsafe { atomic_copy::fill(self.base(), self.len(), byte) };
    }

    /// Copies bytes from the region at `offset` into `out`, with relaxed atomic loads.
    ///
    /// A peer or the HCA writing meanwhile may leave `out` with a mix of old and new bytes;
    /// read after the completion that says the data is there, as in C.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let (start, _) = self.bounds(offset..offset.saturating_add(out.len()))?;
        // SAFETY: the source lies inside the registered memory, which is only ever accessed
        // atomically while registered.
        unsafe { atomic_copy::load(self.base().add(start), out) };
        Ok(())
    }

    /// Reads the byte at `offset` with a relaxed atomic load, so that a loop waiting for the
    /// HCA or a peer to change it (the last byte of an RDMA write, as `ib_write_lat` polls)
    /// reads memory every time instead of a value the compiler kept.
    #[inline]
    pub fn read_u8(&self, offset: usize) -> Result<u8> {
        let (start, _) = self.bounds(offset..offset.saturating_add(1))?;
        // SAFETY: the byte lies inside the registered memory, which is only ever accessed
        // atomically while registered.
        Ok(unsafe { atomic_copy::load_u8(self.base().add(start)) })
    }

    /// The region's bytes as a slice.
    ///
    /// # Safety
    /// Nothing may write the memory while the slice lives: no posted receive, RDMA read
    /// response or atomic targets it, and no peer holds remote write or atomic access to it
    /// (through the region's rkey or a window bound to it).
    pub unsafe fn as_slice(&self) -> &[u8] {
        // SAFETY: the memory is valid for len bytes; the caller excludes writers.
        unsafe { std::slice::from_raw_parts(self.base(), self.len()) }
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
        unsafe { std::slice::from_raw_parts_mut(self.base(), self.len()) }
    }

    /// Deregisters the region (`ibv_dereg_mr`) and gives the memory back.
    ///
    /// Fails with [`Error::InvalidArgument`] while a memory window is bound to the region;
    /// the region is then deregistered, and the memory dropped, when the last such window
    /// is deallocated.
    pub fn deregister(mut self) -> Result<B> {
        if self.kept_by_window() {
            return Err(Error::InvalidArgument {
                what: "memory region",
                reason: "a memory window is bound to it; it is deregistered when the window \
                         is deallocated"
                    .into(),
            });
        }
        // SAFETY: taken exactly once: `self` is forgotten below without its drop, holding
        // nothing else (`kept`, held by no window, is dropped first).
        let reg = unsafe { ManuallyDrop::take(&mut self.reg) };
        drop(self.kept.take());
        std::mem::forget(self);
        reg.deregister()
    }

    fn base(&self) -> *mut u8 {
        self.mr().addr.cast()
    }

    /// Resolves `range` to `start..end` inside the region ([`resolve_range`]).
    fn bounds(&self, range: impl RangeBounds<usize>) -> Result<(usize, usize)> {
        resolve_range(range, self.len())
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
