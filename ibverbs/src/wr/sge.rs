//! Scatter/gather entries (`struct ibv_sge`) and the memory they point at.

use std::fmt;
use std::marker::PhantomData;

use crate::ffi;
use crate::wr::limits::DEVICE_MEMORY;

/// Where the memory of a scatter/gather entry is: [`HostMemory`] or [`DeviceMemory`].
///
/// Sealed: the two are all there is. Requests take entries of either; what tells them apart
/// is whether the CPU can read the entry's addresses, which inline data needs.
pub trait SgeMemory: sealed::Memory + Copy + Send + Sync + 'static {}

mod sealed {
    /// What a request's requirement word carries for the memory of its entries.
    pub trait Memory {
        /// 0, or [`DEVICE_MEMORY`](crate::wr::limits::DEVICE_MEMORY).
        const NEED: u64;
    }
}

/// Memory the CPU reaches at the entry's addresses: a [`MemoryRegion`](crate::MemoryRegion)
/// of the process's own memory. The default of [`Sge`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostMemory {}

/// Memory addressed by the device only: a [`DmaBufRegion`](crate::DmaBufRegion), whose
/// entries hold device addresses (IOVAs) that mean nothing to the CPU. Such entries are
/// posted as any other, but never inline: the provider would copy the inline data from the
/// device address with the CPU
/// ([`WrError::InlineFromDeviceMemory`](crate::WrError::InlineFromDeviceMemory)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceMemory {}

impl sealed::Memory for HostMemory {
    const NEED: u64 = 0;
}
impl SgeMemory for HostMemory {}
impl sealed::Memory for DeviceMemory {
    const NEED: u64 = DEVICE_MEMORY;
}
impl SgeMemory for DeviceMemory {}

/// A scatter/gather entry (`struct ibv_sge`): a range of a registered memory region, of
/// host memory (`Sge<'a>`) or device memory (`Sge<'a, DeviceMemory>`, which is never sent
/// inline).
///
/// Made by [`MemoryRegion::sge`](crate::MemoryRegion::sge) and
/// [`DmaBufRegion::sge`](crate::DmaBufRegion::sge), which check the range; it borrows the
/// region for `'a`. A list of entries is a slice of one kind: the empty list is
/// [`Sge::NONE`] (`RecvRequest::new(0, Sge::NONE)`: a receive for a write with immediate).
///
/// It is the 16-byte `ibv_sge` the provider reads, with no room for its region's protection
/// domain: posting looks its key up among the regions the crate registered, and refuses an
/// entry of another PD's region than the queue's
/// ([`WrError::ForeignRegion`](crate::WrError::ForeignRegion)).
#[repr(transparent)]
pub struct Sge<'a, M: SgeMemory = HostMemory> {
    raw: ffi::ibv_sge,
    _mr: PhantomData<(&'a (), M)>,
}

impl<M: SgeMemory> Clone for Sge<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M: SgeMemory> Copy for Sge<'_, M> {}

impl Sge<'static> {
    /// The empty list of entries, for requests that move no data (a receive that a write
    /// with immediate consumes, a zero-length send): a bare `&[]` would leave the kind of
    /// memory unnamed.
    pub const NONE: &'static [Sge<'static>] = &[];
}

impl<M: SgeMemory> Sge<'_, M> {
    pub(crate) fn new(addr: u64, length: u32, lkey: u32) -> Self {
        Sge {
            raw: ffi::ibv_sge { addr, length, lkey },
            _mr: PhantomData,
        }
    }

    /// Start address.
    pub fn addr(&self) -> u64 {
        self.raw.addr
    }

    /// Length in bytes.
    pub fn len(&self) -> u32 {
        self.raw.length
    }

    /// Whether the entry is empty.
    pub fn is_empty(&self) -> bool {
        self.raw.length == 0
    }

    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.raw.lkey
    }
}

impl Sge<'_> {
    /// An entry of host memory from raw values, not tied to a region.
    ///
    /// # Safety
    /// `lkey` must be the local key of a region of this process's memory that stays
    /// registered while any request using the entry may run, and `addr..addr + length`
    /// must lie inside it: addresses the CPU can read, which an inline send copies from.
    /// (An entry of a dma-buf region is made with [`Sge::device_from_raw`].)
    ///
    /// Not checked then: that the region is of the queue's protection domain, unless the
    /// key is of a region the crate registered
    /// ([`WrError::ForeignRegion`](crate::WrError::ForeignRegion)); a region registered
    /// through [`ffi`] in another PD fails in the device, after the post.
    pub unsafe fn from_raw(addr: u64, length: u32, lkey: u32) -> Sge<'static> {
        Sge::new(addr, length, lkey)
    }

    /// An entry of device memory from raw values, not tied to a region: of a dma-buf
    /// region registered outside the crate (`ibv_reg_dmabuf_mr` through [`ffi`]), whose
    /// addresses are device addresses. Posted as any entry, never inline.
    ///
    /// # Safety
    /// `lkey` must be the local key of a region that stays registered while any request
    /// using the entry may run, and `addr..addr + length` must lie inside it (in the
    /// region's device address space). Its protection domain is not checked, as for
    /// [`Sge::from_raw`].
    pub unsafe fn device_from_raw(addr: u64, length: u32, lkey: u32) -> Sge<'static, DeviceMemory> {
        Sge::new(addr, length, lkey)
    }
}

impl<M: SgeMemory> fmt::Debug for Sge<'_, M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(if M::NEED == 0 {
            "Sge"
        } else {
            "Sge<DeviceMemory>"
        })
        .field("addr", &format_args!("{:#x}", self.raw.addr))
        .field("len", &self.raw.length)
        .field("lkey", &format_args!("{:#x}", self.raw.lkey))
        .finish()
    }
}
