//! dma-buf memory regions (`ibv_reg_dmabuf_mr`), and dma-bufs the kernel's `udmabuf` makes
//! of a sealed memfd.
//!
//! A dma-buf region registers memory by file descriptor and device address (IOVA), not by
//! a pointer: the crate never reaches its memory. Where it comes from a [`Mapping::memfd`],
//! the CPU reaches the same pages through that mapping, by the atomic copies of any
//! registered memory (another region over the mapping, or the mapping's own owner).
//!
//! Its scatter/gather entries hold device addresses, which the CPU must never read as
//! pointers: they are `Sge<'_, DeviceMemory>`, which requests take as any entry but never
//! with inline data (the provider copies inline data with the CPU, from the entry's
//! address: from a device address, that reads whatever the process has mapped there).
//! Posting refuses such a request before the provider sees it
//! ([`WrError::InlineFromDeviceMemory`](crate::WrError::InlineFromDeviceMemory)).

use std::fmt;
use std::fs::OpenOptions;
use std::ops::RangeBounds;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::error::{Error, Result};
use crate::ffi;
use crate::mr::mapping::Mapping;
use crate::mr::page_size;
use crate::mr::raw::{udmabuf_create, RawMr};
use crate::pd::ProtectionDomain;
use crate::types::AccessFlags;
use crate::wr::{DeviceMemory, RemoteMemory, Sge};

/// A dma-buf: an open file descriptor of the kernel's shared DMA buffers, closed on drop.
#[derive(Debug)]
pub struct DmaBuf {
    fd: OwnedFd,
    len: u64,
}

impl DmaBuf {
    /// A dma-buf of `len` bytes of the memfd behind `memfd` from `offset` (both multiples of
    /// the page size), made by the kernel's `udmabuf` (`UDMABUF_CREATE` on
    /// `/dev/udmabuf`). The memfd is sealed against shrinking ([`Mapping::memfd`]), as
    /// udmabuf requires; the dma-buf pins its pages.
    ///
    /// Fails with [`Error::Unavailable`] where the kernel has no `/dev/udmabuf`, and with
    /// [`Error::InvalidArgument`] / [`Error::OutOfRange`] for a mapping that is no memfd or
    /// a range that is not page aligned or not inside it, before the call.
    pub fn udmabuf(memfd: &Mapping, offset: usize, len: usize) -> Result<DmaBuf> {
        let fd = memfd.memfd_fd().ok_or_else(|| Error::InvalidArgument {
            what: "mapping",
            reason: format!(
                "a {:?} mapping has no memfd; use Mapping::memfd",
                memfd.kind()
            ),
        })?;
        let page = page_size();
        if len == 0 || offset % page != 0 || len % page != 0 {
            return Err(Error::InvalidArgument {
                what: "udmabuf range",
                reason: format!(
                    "offset {offset} and length {len} must be non-zero multiples of the page \
                     size ({page})"
                ),
            });
        }
        let end = offset.saturating_add(len);
        let size = crate::RegistrableMemory::len(memfd).next_multiple_of(page);
        if end > size {
            return Err(Error::OutOfRange {
                what: "udmabuf range end",
                value: end as u64,
                min: page as u64,
                max: size as u64,
            });
        }
        let dev = OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/udmabuf")
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::Unavailable {
                    what: "udmabuf dma-bufs",
                    reason: "the kernel has no /dev/udmabuf (CONFIG_UDMABUF; modprobe udmabuf)"
                        .into(),
                },
                _ => Error::Verb {
                    verb: "open(/dev/udmabuf)",
                    source: e,
                },
            })?;
        Ok(DmaBuf {
            fd: udmabuf_create(&dev, fd, offset, len)?,
            len: len as u64,
        })
    }

    /// A dma-buf of `len` bytes made elsewhere (a GPU or accelerator driver). The kernel
    /// checks at registration that `fd` is a dma-buf and the range lies inside it.
    pub fn from_fd(fd: OwnedFd, len: u64) -> DmaBuf {
        DmaBuf { fd, len }
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsFd for DmaBuf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A memory region over a dma-buf (`ibv_reg_dmabuf_mr`), which it keeps open;
/// deregistered (`ibv_dereg_mr`) on drop, then the dma-buf is closed.
pub struct DmaBufRegion {
    /// Deregistered first on drop, then the dma-buf is closed and the PD let go.
    raw: RawMr,
    len: usize,
    iova: u64,
    _buf: DmaBuf,
    _pd: ProtectionDomain,
}

impl ProtectionDomain {
    /// Registers `len` bytes of `buf` from `offset`, at device address `iova`
    /// (`ibv_reg_dmabuf_mr`).
    ///
    /// The range is checked against the dma-buf's length before the call
    /// ([`Error::OutOfRange`]); a provider or kernel driver without dma-buf registration
    /// (rxe) gives [`Error::Unsupported`].
    pub fn register_dmabuf(
        &self,
        buf: DmaBuf,
        offset: u64,
        len: usize,
        iova: u64,
        access: AccessFlags,
    ) -> Result<DmaBufRegion> {
        if len == 0 {
            return Err(Error::InvalidArgument {
                what: "memory region length",
                reason: "a region of 0 bytes cannot be registered".into(),
            });
        }
        let end = offset.saturating_add(len as u64);
        if end > buf.len {
            return Err(Error::OutOfRange {
                what: "dma-buf range end",
                value: end,
                min: 1,
                max: buf.len,
            });
        }
        if iova.checked_add(len as u64).is_none() {
            return Err(Error::OutOfRange {
                what: "dma-buf IOVA",
                value: iova,
                min: 0,
                max: u64::MAX - len as u64,
            });
        }
        let bits = i32::try_from(access.bits()).map_err(|_| Error::InvalidArgument {
            what: "access flags",
            reason: format!("{access:?} does not fit in an int"),
        })?;
        let raw = RawMr::dmabuf(self, buf.fd.as_fd(), offset, len, iova, bits);
        let raw = raw.map_err(|e| match e.raw_os_error() {
            Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EPROTONOSUPPORT) => Error::Unsupported {
                what: "dma-buf memory regions (ibv_reg_dmabuf_mr)",
                missing: "dma-buf registration (the provider or its kernel driver \
                                  returned EOPNOTSUPP)",
            },
            _ => e,
        })?;
        if let Some(sinks) = self.context().read_sinks() {
            sinks.note(raw.lkey(), access);
        }
        crate::wr::keys::note(self, raw.lkey());
        Ok(DmaBufRegion {
            raw,
            len,
            iova,
            _buf: buf,
            _pd: self.clone(),
        })
    }
}

impl DmaBufRegion {
    /// The raw `ibv_mr`, valid while the region lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_mr {
        self.raw.ptr()
    }

    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.raw.lkey()
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.raw.rkey()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: empty regions are rejected).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device address of its first byte.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// What a peer needs to access the whole region.
    pub fn remote(&self) -> RemoteMemory {
        RemoteMemory {
            addr: self.iova,
            len: self.len as u64,
            rkey: self.rkey(),
        }
    }

    /// A scatter/gather entry for `range` of the region: device addresses from the IOVA, of
    /// [`DeviceMemory`], which is never sent inline.
    pub fn sge(&self, range: impl RangeBounds<usize>) -> Result<Sge<'_, DeviceMemory>> {
        let (start, length) = super::sge_span(range, self.len)?;
        Ok(Sge::new(self.iova + start as u64, length, self.lkey()))
    }
}

impl Drop for DmaBufRegion {
    // The lkey leaves the read sinks and the crate's keys; then the fields deregister the
    // MR and close the fd.
    fn drop(&mut self) {
        if let Some(sinks) = self._pd.context().read_sinks() {
            sinks.forget(self.lkey());
        }
        crate::wr::keys::forget(&self._pd, self.lkey());
    }
}

impl fmt::Debug for DmaBufRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaBufRegion")
            .field("iova", &format_args!("{:#x}", self.iova))
            .field("len", &self.len)
            .field("lkey", &format_args!("{:#x}", self.lkey()))
            .finish()
    }
}
