//! Memory users already own, as registrable memory: anonymous `mmap`, huge pages
//! (`MAP_HUGETLB`), a sealed `memfd`, and file mappings.
//!
//! A [`Mapping`] owns its pages: `munmap` runs when it is dropped, which a
//! [`MemoryRegion`](crate::MemoryRegion) does only after deregistration. What another process
//! can do to a file-backed mapping is the one new hazard: every access to a page of a shared
//! mapping that the file no longer backs, and cannot back again, is `SIGBUS`. A truncation
//! does that, and so does a hole punched in a hugetlbfs file when the huge page pool is
//! empty, or a fault that a regular filesystem fails (`ENOSPC`, an I/O error). So the safe
//! constructors map only memory nobody else can take away: anonymous pages, and shmem
//! (tmpfs) memfds sealed with `F_SEAL_SHRINK`, where a punched hole reads back as zeros
//! ([`MemoryRule::SealedShmemFile`]); any other file goes through the `unsafe`
//! [`Mapping::file_unchecked`], whose caller promises that every page stays backed.
//!
//! A raw file of the folder besides `raw.rs`, kept apart because its unsafety is its whole
//! purpose: the `mmap`, `munmap`, `memfd_create` and `fcntl` calls of memory the mapping
//! owns, the checks that decide which files may be mapped, and the mapping's
//! [`RegistrableMemory`] promise, all in one place.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::mr::{page_size, RegistrableMemory};
use crate::types::MemoryRule;

/// What backs a [`Mapping`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MappingKind {
    /// Anonymous private pages (`MAP_PRIVATE | MAP_ANONYMOUS`).
    Anonymous,
    /// Anonymous private huge pages (`MAP_HUGETLB`) of the system's default huge page size.
    HugePages,
    /// A `memfd` made by [`Mapping::memfd`], sealed against shrinking, mapped `MAP_SHARED`.
    Memfd,
    /// A file the caller opened, mapped `MAP_SHARED`: a sealed shmem memfd
    /// ([`Mapping::file`]), or any file on the caller's promise ([`Mapping::file_unchecked`]).
    File,
}

/// Pages mapped with `mmap` and owned: unmapped (`munmap`) when dropped.
///
/// Registrable ([`ProtectionDomain::register`](crate::ProtectionDomain::register)) like any
/// owned buffer; the mapping is readable and writable (`PROT_READ | PROT_WRITE`).
pub struct Mapping {
    ptr: NonNull<u8>,
    /// Bytes registrable: what was asked for.
    len: usize,
    /// Bytes mapped: `len` rounded up to the page (or huge page) size.
    map_len: usize,
    kind: MappingKind,
    /// The memfd, kept for [`Mapping::memfd_fd`] (udmabuf needs it).
    fd: Option<OwnedFd>,
}

// SAFETY: the mapping is plain owned memory, like a heap buffer.
unsafe impl Send for Mapping {}
// SAFETY: shared access only reads the pointer and lengths.
unsafe impl Sync for Mapping {}

fn invalid(what: &'static str, reason: String) -> Error {
    Error::InvalidArgument { what, reason }
}

/// `len` rounded up to a multiple of `unit` (a power of two), or an error if it is 0 or
/// does not fit.
fn round_len(len: usize, unit: usize) -> Result<usize> {
    if len == 0 {
        return Err(invalid(
            "mapping length",
            "a mapping of 0 bytes cannot be registered".into(),
        ));
    }
    len.checked_next_multiple_of(unit)
        .ok_or_else(|| invalid("mapping length", format!("{len} bytes does not fit")))
}

/// `fstatfs` of `file`: its filesystem's type and block size.
fn statfs(file: &File) -> Result<libc::statfs> {
    let mut st = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: the fd is open (borrowed from file), and st is writable for a struct statfs.
    if unsafe { libc::fstatfs(file.as_raw_fd(), st.as_mut_ptr()) } < 0 {
        return Err(Error::last("fstatfs"));
    }
    // SAFETY: fstatfs succeeded, so it filled st.
    Ok(unsafe { st.assume_init() })
}

/// The default huge page size, from `Hugepagesize:` in /proc/meminfo (what `MAP_HUGETLB`
/// without a size flag uses); `None` when the kernel has no huge pages.
pub fn huge_page_size() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("Hugepagesize:"))?;
    let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

impl Mapping {
    /// `mmap` of `map_len` bytes with `flags`, of `fd` at `offset` (or anonymous with -1).
    fn map(
        len: usize,
        map_len: usize,
        flags: libc::c_int,
        fd: libc::c_int,
        offset: u64,
        kind: MappingKind,
    ) -> io::Result<Mapping> {
        let offset = libc::off_t::try_from(offset)
            .map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        // SAFETY: a new mapping at an address the kernel chooses replaces nothing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: NonNull::new(ptr.cast()).expect("mmap returned NULL"),
            len,
            map_len,
            kind,
            fd: None,
        })
    }

    /// `len` bytes of zeroed anonymous private memory (`mmap` with `MAP_PRIVATE |
    /// MAP_ANONYMOUS`), rounded up to whole pages.
    pub fn anonymous(len: usize) -> Result<Mapping> {
        let map_len = round_len(len, page_size())?;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        Self::map(len, map_len, flags, -1, 0, MappingKind::Anonymous).map_err(|source| {
            Error::Verb {
                verb: "mmap",
                source,
            }
        })
    }

    /// `len` bytes of zeroed anonymous huge pages (`mmap` with `MAP_HUGETLB`, the default
    /// huge page size), rounded up to whole huge pages.
    ///
    /// Fails with [`Error::Unavailable`] when the kernel has no huge pages, or too few are
    /// free (`ENOMEM`: reserve them in `/proc/sys/vm/nr_hugepages`). The kernel reserves
    /// the pages at `mmap`, so later faults cannot fail.
    pub fn huge(len: usize) -> Result<Mapping> {
        let what = "huge pages (MAP_HUGETLB)";
        let huge = huge_page_size().ok_or_else(|| Error::Unavailable {
            what,
            reason: "the kernel reports no Hugepagesize in /proc/meminfo".into(),
        })?;
        let map_len = round_len(len, huge)?;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_HUGETLB;
        Self::map(len, map_len, flags, -1, 0, MappingKind::HugePages).map_err(|source| match source
            .raw_os_error()
        {
            Some(libc::ENOMEM) => Error::Unavailable {
                what,
                reason: format!(
                    "{} free huge pages of {} KiB are needed and fewer are reserved \
                         (/proc/sys/vm/nr_hugepages)",
                    map_len / huge,
                    huge / 1024
                ),
            },
            _ => Error::Verb {
                verb: "mmap",
                source,
            },
        })
    }

    /// `len` bytes of a new zeroed `memfd` (`memfd_create`, named `name` in
    /// `/proc/PID/fd`), sealed with `F_SEAL_SHRINK | F_SEAL_SEAL` and mapped `MAP_SHARED`.
    ///
    /// The seals mean that no one, in this process or another that gets hold of the fd,
    /// can truncate it under the mapping (`ftruncate` to less fails with `EPERM`), nor
    /// change the seals; a hole punched in it (`fallocate`) reads back as zeros
    /// ([`MemoryRule::SealedShmemFile`]). The file is `len` rounded up to whole pages.
    pub fn memfd(name: &str, len: usize) -> Result<Mapping> {
        let map_len = round_len(len, page_size())?;
        let cname = std::ffi::CString::new(name)
            .map_err(|_| invalid("memfd name", format!("{name:?} contains a NUL byte")))?;
        // SAFETY: cname is a NUL-terminated string.
        let raw = unsafe {
            libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        if raw < 0 {
            return Err(Error::last("memfd_create"));
        }
        // SAFETY: memfd_create returned a new fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let size = libc::off_t::try_from(map_len)
            .map_err(|_| invalid("mapping length", format!("{len} bytes does not fit")))?;
        // SAFETY: fd is an open memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), size) } < 0 {
            return Err(Error::last("ftruncate"));
        }
        // SAFETY: fd is an open memfd created with MFD_ALLOW_SEALING.
        let rc = unsafe {
            libc::fcntl(
                fd.as_raw_fd(),
                libc::F_ADD_SEALS,
                libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL,
            )
        };
        if rc < 0 {
            return Err(Error::last("fcntl(F_ADD_SEALS)"));
        }
        let mut map = Self::map(
            len,
            map_len,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
            MappingKind::Memfd,
        )
        .map_err(|source| Error::Verb {
            verb: "mmap",
            source,
        })?;
        map.fd = Some(fd);
        Ok(map)
    }

    /// `len` bytes of `file` from `offset` (a multiple of the page size), mapped
    /// `MAP_SHARED`: writes through the region reach the file.
    ///
    /// Safe because the file must be a shmem (tmpfs) memfd sealed against shrinking
    /// (`F_SEAL_SHRINK`), on which nobody holding the fd can take a page away from the
    /// mapping ([`MemoryRule::SealedShmemFile`]). Any other file, a sealed hugetlbfs memfd
    /// among them, fails with [`Error::MemoryRule`]; map it with the `unsafe`
    /// [`Mapping::file_unchecked`]. The file must be open for reading and writing and at
    /// least `offset + len` bytes long (both checked before the call).
    pub fn file(file: &File, offset: u64, len: usize) -> Result<Mapping> {
        let refuse = |reason: String| Error::MemoryRule {
            rule: MemoryRule::SealedShmemFile,
            reason,
        };
        match statfs(file)?.f_type {
            libc::TMPFS_MAGIC => {}
            libc::HUGETLBFS_MAGIC => {
                return Err(refuse(
                    "it is on hugetlbfs: a hole punched in it (fallocate, which F_SEAL_SHRINK \
                     does not stop) gives its huge pages back to the pool, and the next access \
                     raises SIGBUS when the pool is empty; Mapping::huge gives huge pages no \
                     other process can reach"
                        .into(),
                ))
            }
            other => {
                return Err(refuse(format!(
                    "it is not on shmem (filesystem type {other:#x}): it cannot be sealed, and \
                     a fault on its mapping fails (SIGBUS) after a truncation, on ENOSPC or \
                     on an I/O error; Mapping::file_unchecked maps it on your promise"
                )))
            }
        }
        // SAFETY: the fd is open (borrowed from file).
        let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 || seals & libc::F_SEAL_SHRINK == 0 {
            return Err(refuse(
                "it is not sealed against shrinking (F_SEAL_SHRINK), so another process could \
                 truncate it under the mapping (SIGBUS); Mapping::file_unchecked maps it on \
                 your promise"
                    .into(),
            ));
        }
        // SAFETY: the file is a sealed shmem memfd: it cannot shrink, and a hole punched in
        // it is refilled with zeros at the next fault.
        unsafe { Self::file_unchecked(file, offset, len) }
    }

    /// [`Mapping::file`] for any other file: a regular file on disk, a tmpfs file, a
    /// hugetlbfs file. On hugetlbfs, `offset` is a multiple of its huge page size, and the
    /// mapping is `len` rounded up to whole huge pages.
    ///
    /// # Safety
    /// Every page of `offset..offset + len` must stay backed while the mapping lives: an
    /// access to a page the file no longer backs raises `SIGBUS`, from the safe
    /// [`MemoryRegion::read`] and [`MemoryRegion::write`](crate::MemoryRegion::write) as
    /// well. So nobody (this process or another) may shrink the file below `offset + len`
    /// bytes (`ftruncate`, `O_TRUNC`), nor, on hugetlbfs, punch a hole in the range
    /// (`fallocate(FALLOC_FL_PUNCH_HOLE)`, `madvise(MADV_REMOVE)`) unless a free huge page
    /// is sure to be there for the fault that refills it; and the filesystem must serve
    /// every fault: a regular filesystem fails one on an I/O error or, writing into a hole
    /// or a lazily allocated page, on `ENOSPC`, as does a tmpfs mount with a size limit
    /// (`/dev/shm`) once it is full. (Whatever is written to the file meanwhile is harmless:
    /// registered memory is only reached by atomic copies.)
    ///
    /// [`MemoryRegion::read`]: crate::MemoryRegion::read
    pub unsafe fn file_unchecked(file: &File, offset: u64, len: usize) -> Result<Mapping> {
        // The kernel maps a hugetlbfs file in its huge pages (fstatfs' block size), any
        // other in pages: munmap needs the length rounded the same way.
        let fs = statfs(file)?;
        let unit = match fs.f_type {
            libc::HUGETLBFS_MAGIC => usize::try_from(fs.f_bsize)
                .map_err(|_| invalid("file", format!("hugetlbfs block size {}", fs.f_bsize)))?,
            _ => page_size(),
        };
        let map_len = round_len(len, unit)?;
        if offset % unit as u64 != 0 {
            return Err(invalid(
                "file offset",
                format!("{offset} is not a multiple of the file's page size ({unit})"),
            ));
        }
        // SAFETY: the fd is open (borrowed from file).
        let mode = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
        if mode < 0 {
            return Err(Error::last("fcntl(F_GETFL)"));
        }
        if mode & libc::O_ACCMODE != libc::O_RDWR {
            return Err(invalid(
                "file",
                "it is not open for reading and writing (a registered mapping is both)".into(),
            ));
        }
        let size = file
            .metadata()
            .map_err(|source| Error::Verb {
                verb: "fstat",
                source,
            })?
            .len();
        let end = offset.saturating_add(len as u64);
        Error::at_most("file mapping end", end, size)?;
        Self::map(
            len,
            map_len,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            offset,
            MappingKind::File,
        )
        .map_err(|source| Error::Verb {
            verb: "mmap",
            source,
        })
    }

    /// What backs the mapping.
    pub fn kind(&self) -> MappingKind {
        self.kind
    }

    /// The sealed memfd of a [`Mapping::memfd`] mapping (what `udmabuf` takes), else
    /// `None`.
    pub fn memfd_fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(|fd| fd.as_fd())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr..ptr+map_len is the mapping made in `map`, whose length is rounded to
        // the unit the kernel mapped it in (the page, or the huge page), unmapped once.
        let rc = unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.map_len) };
        crate::drop_error::report("munmap", rc);
    }
}

// SAFETY: the mapping does not move, stays mapped until drop, and nothing else unmaps it;
// no one can take a page away from it (anonymous, or a sealed shmem memfd) unless the caller
// of `file_unchecked` broke its promise.
unsafe impl RegistrableMemory for Mapping {
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
}

impl fmt::Debug for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mapping")
            .field("kind", &self.kind)
            .field("addr", &self.ptr)
            .field("len", &self.len)
            .finish()
    }
}
