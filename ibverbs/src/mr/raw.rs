//! The FFI calls of memory regions, and the ownership their soundness rests on: every
//! `unsafe` of the folder but the atomic copies (`atomic_copy.rs`) and the `mmap`s of a
//! `Mapping` (`mapping.rs`), its two other raw files, and the `unsafe` slice accessors of a
//! region (`MemoryRegion::as_slice`, `as_mut_slice`), public API whose caller keeps the
//! HCA and peers away.
//!
//! - [`RegistrableMemory`], the contract of memory a region may own, and its heap
//!   implementations: `Vec<u8>`, `Box<[u8]>`, [`AlignedBuffer`] (which owns its allocation).
//! - `RawMr`: an `ibv_mr`, deregistered on drop: the handle of a dma-buf region, of an
//!   implicit ODP region, and of a `Registration`.
//! - `Registration`: an `ibv_mr` over memory it owns (`ibv_reg_mr`), deregistered before the
//!   memory is dropped; its changes (`ibv_rereg_mr`), its advice (`ibv_advise_mr`), and the
//!   atomic copies to and from its memory, which check their range here.
//! - `Region`: a `MemoryRegion`'s registration and what the memory windows bound to it keep
//!   (`Kept`), to which a region dropped while a window holds it hands it over.
//! - `udmabuf_create`: the ioctl that makes a dma-buf of a memfd.

use std::alloc::{self, Layout};
use std::fs::File;
use std::io;
use std::mem::ManuallyDrop;
use std::ops::Range;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::{atomic_copy, resolve_range};
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::types::AccessFlags;
use crate::wr::Sge;

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

/// An `ibv_mr`, deregistered (`ibv_dereg_mr`) on drop. A live handle is a registered MR; it
/// gives its keys and address, never the memory it registers.
pub(crate) struct RawMr(NonNull<ffi::ibv_mr>);

// SAFETY: the MR handle may be used from any thread; a RawMr never reaches the memory.
unsafe impl Send for RawMr {}
// SAFETY: &RawMr only reads the handle's keys and address.
unsafe impl Sync for RawMr {}

impl RawMr {
    /// `ibv_reg_mr` of the whole address space (`NULL`, `SIZE_MAX`) with access `bits`,
    /// which has `IBV_ACCESS_ON_DEMAND`: an implicit ODP region.
    pub(crate) fn implicit_odp(pd: &ProtectionDomain, bits: i32) -> Result<Self> {
        // SAFETY: the PD is live (borrowed); a null address with SIZE_MAX is the implicit
        // form, which registers no memory of ours.
        let raw = unsafe { ffi::ibv_reg_mr(pd.ptr(), std::ptr::null_mut(), usize::MAX, bits) };
        check_ptr("ibv_reg_mr", raw).map(RawMr)
    }

    /// `ibv_reg_dmabuf_mr`: `len` bytes of the dma-buf `fd` from `offset`, at device address
    /// `iova`, with access `bits`.
    pub(crate) fn dmabuf(
        pd: &ProtectionDomain,
        fd: BorrowedFd<'_>,
        offset: u64,
        len: usize,
        iova: u64,
        bits: i32,
    ) -> Result<Self> {
        // SAFETY: the PD is live and the fd open (both borrowed); the kernel checks the
        // dma-buf and range.
        let raw =
            unsafe { ffi::ibv_reg_dmabuf_mr(pd.ptr(), offset, len, iova, fd.as_raw_fd(), bits) };
        check_ptr("ibv_reg_dmabuf_mr", raw).map(RawMr)
    }

    /// The raw `ibv_mr`, valid while the handle lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mr {
        self.0.as_ptr()
    }

    #[inline]
    fn mr(&self) -> &ffi::ibv_mr {
        // SAFETY: the MR is registered while the handle lives.
        unsafe { self.0.as_ref() }
    }

    /// The local key.
    #[inline]
    pub(crate) fn lkey(&self) -> u32 {
        self.mr().lkey
    }

    /// The remote key.
    #[inline]
    pub(crate) fn rkey(&self) -> u32 {
        self.mr().rkey
    }

    /// `ibv_dereg_mr`, returning its result: the handle is gone either way.
    #[inline]
    fn dereg(self) -> i32 {
        let this = ManuallyDrop::new(self);
        // SAFETY: the MR is registered, and `this` is neither used nor dropped after.
        unsafe { ffi::ibv_dereg_mr(this.ptr()) }
    }
}

impl Drop for RawMr {
    fn drop(&mut self) {
        // SAFETY: the MR is registered and not used after this.
        let rc = unsafe { ffi::ibv_dereg_mr(self.ptr()) };
        drop_error::report("ibv_dereg_mr", rc);
    }
}

/// Memory about to be registered: the value that owns it, with its start and length read
/// from it once ([`RegistrableMemory`] keeps them valid while the value lives).
pub(crate) struct Memory<B> {
    buf: B,
    mem: NonNull<u8>,
    len: usize,
}

impl<B: RegistrableMemory> Memory<B> {
    /// Reads `buf`'s start and length; a null start is [`Error::InvalidArgument`].
    #[inline]
    pub(crate) fn new(mut buf: B) -> Result<Self> {
        let (ptr, len) = (buf.as_mut_ptr(), buf.len());
        match NonNull::new(ptr) {
            Some(mem) => Ok(Memory { buf, mem, len }),
            None => Err(null_memory()),
        }
    }

    /// Where the memory starts.
    pub(crate) fn start(&self) -> NonNull<u8> {
        self.mem
    }
}

/// [`Error::InvalidArgument`] for memory whose `as_mut_ptr` is null.
#[cold]
#[inline(never)]
fn null_memory() -> Error {
    Error::InvalidArgument {
        what: "memory",
        reason: "RegistrableMemory::as_mut_ptr returned null".into(),
    }
}

/// The error of a verb that returned null and set `errno`, off the hot path.
#[cold]
#[inline(never)]
fn null_returned(verb: &'static str) -> Error {
    Error::last(verb)
}

/// A registration (`ibv_reg_mr`) over the memory it owns: deregistered before the memory is
/// dropped, and the memory leaked should deregistration fail. The MR's address and `len`
/// always lie inside the owned memory, so the atomic copies of the region reach only it.
pub(crate) struct Registration<B: RegistrableMemory> {
    /// Taken out only by deregistration (drop, [`Registration::deregister`]).
    mr: ManuallyDrop<RawMr>,
    /// Bytes registered from the MR's address (`ibv_mr::addr`), which `rereg` keeps in step.
    len: usize,
    pub(crate) access: AccessFlags,
    /// Start and length of `buf`'s memory, read once at registration: what
    /// `MemoryRegion::rereg` may move the registration within.
    mem: NonNull<u8>,
    mem_len: usize,
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
    /// Registers `memory` in `pd` (`ibv_reg_mr`) with `access`, as the access argument
    /// `bits`, and notes its lkey in the context's iWARP read sinks; the registration owns
    /// the memory from here on.
    #[inline]
    pub(crate) fn register(
        pd: &ProtectionDomain,
        memory: Memory<B>,
        access: AccessFlags,
        bits: i32,
    ) -> Result<Self> {
        let Memory { buf, mem, len } = memory;
        // SAFETY: the PD is live (borrowed); buf's memory is valid for len bytes and stays in
        // place until it is deregistered (RegistrableMemory; `Memory` read both from buf),
        // since the registration owns buf and drops it only after deregistration.
        let raw = unsafe { ffi::ibv_reg_mr(pd.ptr(), mem.as_ptr().cast(), len, bits) };
        let Some(mr) = NonNull::new(raw).map(RawMr) else {
            return Err(null_returned("ibv_reg_mr"));
        };
        // Before the registration is built: no call between its fields' stores and their
        // reads by the caller (which then keeps them in registers).
        if let Some(sinks) = pd.context().read_sinks() {
            sinks.note(mr.lkey(), access);
        }
        Ok(Registration {
            mr: ManuallyDrop::new(mr),
            len,
            access,
            mem,
            mem_len: len,
            valid: true,
            buf: ManuallyDrop::new(buf),
            pd: pd.clone(),
            stale_pd: None,
        })
    }

    /// `ibv_dereg_mr`, after the region's lkey leaves its context's iWARP read sinks and the
    /// keys of the crate's regions ([`keys`](crate::wr::keys)). No
    /// window is bound to the MR: a window keeps the region's `Kept`, which drops the
    /// registration only when the last holder goes.
    #[inline]
    fn dereg(&mut self) -> i32 {
        if let Some(sinks) = self.pd.context().read_sinks() {
            sinks.forget(self.lkey());
        }
        crate::wr::keys::forget(&self.pd, self.lkey());
        // SAFETY: taken once, by deregistration (drop or `deregister`), after which the
        // registration is not used.
        unsafe { ManuallyDrop::take(&mut self.mr) }.dereg()
    }

    /// Deregisters `reg` and gives the memory back (leaked if deregistration fails),
    /// reading the fields it needs where they are: the registration is not moved first.
    ///
    /// # Safety
    /// `reg` is neither used nor dropped after: it is taken apart here.
    #[inline]
    unsafe fn deregister_in_place(reg: &mut Self) -> std::result::Result<B, Refused> {
        let rc = reg.dereg();
        // SAFETY: `reg` is never dropped (the caller), so the PDs are read out exactly once.
        drop(unsafe { (std::ptr::read(&reg.pd), std::ptr::read(&reg.stale_pd)) });
        if rc != 0 {
            return Err(Refused::Failed(rc));
        }
        // SAFETY: buf is taken exactly once; the HCA can no longer reach it.
        Ok(unsafe { ManuallyDrop::take(&mut reg.buf) })
    }

    /// The raw `ibv_mr`, valid while the registration lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mr {
        self.mr.ptr()
    }

    /// The local key.
    #[inline]
    pub(crate) fn lkey(&self) -> u32 {
        self.mr.lkey()
    }

    /// The remote key.
    #[inline]
    pub(crate) fn rkey(&self) -> u32 {
        self.mr.rkey()
    }

    /// Where the registration starts (`ibv_mr::addr`), inside the owned memory.
    #[inline]
    pub(crate) fn base(&self) -> *mut u8 {
        self.mr.mr().addr.cast()
    }

    /// Bytes registered.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Where the registration starts in the owned memory.
    pub(crate) fn offset(&self) -> usize {
        self.base() as usize - self.mem.as_ptr() as usize
    }

    /// Copies `data` in at `offset` (`MemoryRegion::write`).
    #[inline]
    pub(crate) fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        let (start, _) = resolve_range(offset..offset.saturating_add(data.len()), self.len)?;
        // SAFETY: the destination lies inside the registered memory, which is only ever
        // accessed atomically while registered.
        unsafe { atomic_copy::store(self.base().add(start), data) };
        Ok(())
    }

    /// Sets every registered byte to `byte` (`MemoryRegion::fill`).
    #[inline]
    pub(crate) fn fill(&self, byte: u8) {
        // SAFETY: the whole registered memory, which is only ever accessed atomically while
        // registered.
        unsafe { atomic_copy::fill(self.base(), self.len, byte) };
    }

    /// Copies out from `offset` into `out` (`MemoryRegion::read`).
    #[inline]
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let (start, _) = resolve_range(offset..offset.saturating_add(out.len()), self.len)?;
        // SAFETY: the source lies inside the registered memory, which is only ever accessed
        // atomically while registered.
        unsafe { atomic_copy::load(self.base().add(start), out) };
        Ok(())
    }

    /// The byte at `offset` (`MemoryRegion::read_u8`).
    #[inline(always)]
    pub(crate) fn read_u8(&self, offset: usize) -> Result<u8> {
        let (start, _) = resolve_range(offset..offset.saturating_add(1), self.len)?;
        // SAFETY: the byte lies inside the registered memory, which is only ever accessed
        // atomically while registered.
        Ok(unsafe { atomic_copy::load_u8(self.base().add(start)) })
    }

    /// `ibv_advise_mr` of `sge` (an entry of this region: `MemoryRegion::advise`) in the
    /// registration's PD, with `flags`; returns its result.
    pub(crate) fn advise(
        &self,
        advice: ffi::ib_uverbs_advise_mr_advice,
        flags: u32,
        sge: &Sge<'_>,
    ) -> i32 {
        let mut raw = ffi::ibv_sge {
            addr: sge.addr(),
            length: sge.len(),
            lkey: sge.lkey(),
        };
        // SAFETY: the PD is live (the registration holds it), and raw is one SGE, which the
        // call only reads: an `Sge` is an entry of registered memory (`MemoryRegion::sge`
        // checks it; the caller of the unsafe `Sge::from_raw` vouches for it), and advice
        // faults pages in without writing them.
        unsafe { ffi::ibv_advise_mr(self.pd.ptr(), advice, flags, &mut raw, 1) }
    }

    /// `ibv_rereg_mr` with new access `bits`, `range` of the owned memory (byte offsets
    /// into it) and `pd`, each if given.
    ///
    /// Refused before the call, which may only ever register owned memory in a PD of the
    /// MR's context: an empty or inverted range ([`Error::InvalidArgument`]), one past the
    /// memory ([`Error::OutOfRange`]), a PD of another device context ([`Error::Mismatch`]).
    /// Returns the call's result and the `errno` it left. A new range becomes the one the
    /// atomic copies reach where libibverbs moved the MR's address to it: on success, and
    /// on `IBV_REREG_MR_ERR_DO_FORK_OLD` (which follows the command's success).
    pub(crate) fn rereg(
        &mut self,
        bits: Option<i32>,
        range: Option<&Range<usize>>,
        pd: Option<&ProtectionDomain>,
    ) -> Result<(i32, io::Error)> {
        let mut flags = 0;
        if bits.is_some() {
            flags |= ffi::ibv_rereg_mr_flags::IBV_REREG_MR_CHANGE_ACCESS.0;
        }
        let (mut addr, mut len) = (std::ptr::null_mut::<u8>(), 0);
        if let Some(range) = range {
            if range.start >= range.end {
                return Err(Error::InvalidArgument {
                    what: "range",
                    reason: format!("{range:?} is empty or inverted; a region has at least 1 byte"),
                });
            }
            if range.end > self.mem_len {
                return Err(Error::OutOfRange {
                    what: "range end",
                    value: range.end as u64,
                    min: 1,
                    max: self.mem_len as u64,
                });
            }
            // SAFETY: range.start < range.end <= mem_len: inside the owned memory.
            addr = unsafe { self.mem.as_ptr().add(range.start) };
            len = range.end - range.start;
            flags |= ffi::ibv_rereg_mr_flags::IBV_REREG_MR_CHANGE_TRANSLATION.0;
        }
        let mut new_pd = std::ptr::null_mut();
        if let Some(new) = pd {
            if new.context().ptr() != self.pd.context().ptr() {
                return Err(Error::Mismatch {
                    what: "protection domain",
                    owner: "device context",
                });
            }
            new_pd = new.ptr();
            flags |= ffi::ibv_rereg_mr_flags::IBV_REREG_MR_CHANGE_PD.0;
        }
        // SAFETY: the MR is registered and no window holds it (a `&mut Registration` comes
        // from `Region::registration_mut`, which checks); the PD (if any) is live and of the
        // same context; the range lies inside the owned memory, which stays mapped until
        // deregistration.
        let rc = unsafe {
            ffi::ibv_rereg_mr(
                self.ptr(),
                flags as i32,
                new_pd,
                addr.cast(),
                len,
                bits.unwrap_or(0),
            )
        };
        let source = io::Error::last_os_error();
        let moved = ffi::ibv_rereg_mr_err_code::IBV_REREG_MR_ERR_DO_FORK_OLD.0;
        if range.is_some() && (rc == 0 || rc == moved) {
            self.len = len;
        }
        Ok((rc, source))
    }
}

/// Why [`Region::deregister`] gave no memory back: small, so that the deregistration's
/// result stays in registers; [`Refused::error`] makes the [`Error`] off the hot path.
pub(crate) enum Refused {
    /// A memory window is bound to the region: it is deregistered when the window goes.
    Held,
    /// `ibv_dereg_mr` returned this (not 0); the memory is leaked.
    Failed(i32),
}

impl Refused {
    /// The error to give the caller.
    #[cold]
    #[inline(never)]
    pub(crate) fn error(self) -> Error {
        match self {
            Refused::Held => Error::InvalidArgument {
                what: "memory region",
                reason: "a memory window is bound to it; it is deregistered when the window \
                         is deallocated"
                    .into(),
            },
            Refused::Failed(rc) => match crate::error::check("ibv_dereg_mr", rc) {
                Err(e) => e,
                Ok(()) => Error::errno("ibv_dereg_mr", rc),
            },
        }
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

// SAFETY: a Kept is only made by Region::kept, whose memory is Send + 'static: so is the
// registration a Handed owns, and dropping it on any thread, at any time, is sound.
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

/// A `MemoryRegion`'s registration, shared with the memory windows bound to the region:
/// dropped while a window holds it, it hands the registration over, and the last holder
/// deregisters it.
pub(crate) struct Region<B: RegistrableMemory> {
    /// Taken apart only by the region's drop and [`Region::deregister`].
    reg: ManuallyDrop<Registration<B>>,
    /// What the memory windows bound to the region hold, made when the first is bound (a
    /// region that no window ever binds allocates no shared state): null, or the
    /// `Arc::into_raw` of the region's own count of it, set once. An atomic pointer rather
    /// than a `OnceLock`, so that the paths with `&mut self` (deregistration, drop) read it
    /// with a plain load: the atomic load of a `OnceLock`'s state there kept the compiler
    /// from holding the region in registers, and a registration with its deregistration
    /// in one function copied the whole region through memory four times.
    kept: AtomicPtr<Kept>,
}

impl<B: RegistrableMemory> Region<B> {
    /// The region of a new registration.
    #[inline]
    pub(crate) fn new(reg: Registration<B>) -> Self {
        Region {
            reg: ManuallyDrop::new(reg),
            kept: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The registration.
    #[inline(always)]
    pub(crate) fn reg(&self) -> &Registration<B> {
        &self.reg
    }

    /// What a window keeps while bound to the region (made by the first).
    pub(crate) fn kept(&self) -> Arc<Kept>
    where
        B: Send + 'static,
    {
        let mut ptr = self.kept.load(Ordering::Acquire);
        if ptr.is_null() {
            let new = Arc::into_raw(Arc::new(Kept(Mutex::new(None)))).cast_mut();
            let null = std::ptr::null_mut();
            match (self.kept).compare_exchange(null, new, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => ptr = new,
                Err(set) => {
                    // SAFETY: `new` came from Arc::into_raw above and was not published.
                    drop(unsafe { Arc::from_raw(new) });
                    ptr = set;
                }
            }
        }
        // SAFETY: ptr is the Arc::into_raw of the region's count, which lives until the
        // region's drop or deregister (both own the region, so not now); the
        // count taken here is the returned handle's.
        unsafe {
            Arc::increment_strong_count(ptr);
            Arc::from_raw(ptr)
        }
    }

    /// The region's own count of what the windows keep, taken out of it (`&mut self`: no
    /// window can start to keep the region meanwhile).
    #[inline]
    fn take_kept(&mut self) -> Option<Arc<Kept>> {
        let ptr = std::mem::replace(self.kept.get_mut(), std::ptr::null_mut());
        // SAFETY: a non-null ptr is the Arc::into_raw of the region's count (kept), taken
        // out once: the field is null from here on.
        (!ptr.is_null()).then(|| unsafe { Arc::from_raw(ptr) })
    }

    /// Whether a window keeps the region. With `&mut self`, no window can start to, and
    /// one that stops only lowers the count.
    #[inline]
    fn kept_by_window(&mut self) -> bool {
        let ptr = *self.kept.get_mut();
        // SAFETY: a non-null ptr is the region's live count (kept), borrowed here and not
        // released (ManuallyDrop).
        !ptr.is_null() && Arc::strong_count(&ManuallyDrop::new(unsafe { Arc::from_raw(ptr) })) > 1
    }

    /// The registration, if no window holds it.
    pub(crate) fn registration_mut(&mut self) -> Option<&mut Registration<B>> {
        if self.kept_by_window() {
            return None;
        }
        Some(&mut self.reg)
    }

    /// Deregisters the region and gives the memory back (leaked if deregistration
    /// fails); [`Refused::Held`] while a window holds it (the region, dropped, then hands
    /// it over).
    #[inline]
    pub(crate) fn deregister(mut self) -> std::result::Result<B, Refused> {
        if self.kept_by_window() {
            return Err(Refused::Held);
        }
        drop(self.take_kept());
        // Neither dropped nor moved: its registration is taken apart in place (and, should
        // that unwind, leaked rather than deregistered twice).
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped after; `kept` was taken out above.
        unsafe { Registration::deregister_in_place(&mut this.reg) }
    }
}

impl<B: RegistrableMemory> Drop for Region<B> {
    fn drop(&mut self) {
        // SAFETY: taken exactly once; `reg` is not used after.
        let reg = unsafe { ManuallyDrop::take(&mut self.reg) };
        match self.take_kept() {
            None => drop(reg),
            // A window holds it (or held it): the last holder drops the registration.
            Some(kept) => {
                let mut slot = kept.0.lock().unwrap_or_else(PoisonError::into_inner);
                *slot = Some(Handed::new(reg));
            }
        }
    }
}

/// `struct udmabuf_create` of `<linux/udmabuf.h>`.
#[repr(C)]
struct UdmabufCreate {
    memfd: u32,
    flags: u32,
    offset: u64,
    size: u64,
}

/// `UDMABUF_FLAGS_CLOEXEC`.
const UDMABUF_FLAGS_CLOEXEC: u32 = 1;
/// `UDMABUF_CREATE`: `_IOW('u', 0x42, struct udmabuf_create)`.
const UDMABUF_CREATE: libc::c_ulong = (1 << 30)
    | ((std::mem::size_of::<UdmabufCreate>() as libc::c_ulong) << 16)
    | ((b'u' as libc::c_ulong) << 8)
    | 0x42;

/// `UDMABUF_CREATE` on `dev` (`/dev/udmabuf`): a close-on-exec dma-buf of `len` bytes of
/// `memfd` from `offset`, which the kernel checks.
pub(crate) fn udmabuf_create(
    dev: &File,
    memfd: BorrowedFd<'_>,
    offset: usize,
    len: usize,
) -> Result<OwnedFd> {
    let arg = UdmabufCreate {
        memfd: memfd.as_raw_fd() as u32,
        flags: UDMABUF_FLAGS_CLOEXEC,
        offset: offset as u64,
        size: len as u64,
    };
    // SAFETY: arg is a valid struct udmabuf_create that the kernel only reads.
    let raw = unsafe { libc::ioctl(dev.as_raw_fd(), UDMABUF_CREATE, &arg) };
    if raw < 0 {
        return Err(Error::last("ioctl(UDMABUF_CREATE)"));
    }
    // SAFETY: the ioctl returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}
