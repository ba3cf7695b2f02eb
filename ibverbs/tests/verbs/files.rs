//! File mappings: writes through a mapping reach the file; the safe `Mapping::file` maps
//! only a file sealed against shrinking, the `unsafe` `Mapping::file_unchecked` any other on
//! the caller's promise; the bad inputs are typed errors.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;

use rdma_verbs_test_kit::{assert_clean_drops, pattern};

use rdma_verbs::{Error, Mapping, MappingKind, QpType};

use crate::common::{exercise, Pair, ALL};

/// A new memfd of `len` bytes as a `File`, sealed with `seals` (none: 0).
fn memfd_file(len: u64, seals: i32) -> File {
    // SAFETY: a NUL-terminated name.
    let raw = unsafe { libc::memfd_create(c"memory-test".as_ptr(), libc::MFD_ALLOW_SEALING) };
    assert!(
        raw >= 0,
        "memfd_create: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a new fd nothing else owns.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(raw) });
    file.set_len(len).unwrap();
    if seals != 0 {
        // SAFETY: an open memfd.
        let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) };
        assert_eq!(rc, 0, "F_ADD_SEALS: {}", std::io::Error::last_os_error());
    }
    file
}

#[test]
fn sealed_file_mapping_writes_reach_the_file() {
    let p = Pair::new(QpType::Rc);
    let file = memfd_file(3 * 4096, libc::F_SEAL_SHRINK);
    let map = Mapping::file(&file, 4096, 8192).unwrap();
    assert_eq!(map.kind(), MappingKind::File);
    let mut mr = p.pd.register(map, ALL).unwrap();
    exercise(&p, &mut mr);
    // The last transfer (a send) left pattern 3 in the mapping, so in the file at 4096.
    let mut on_disk = vec![0; 8192];
    file.read_exact_at(&mut on_disk, 4096).unwrap();
    assert_eq!(on_disk, pattern(3, 8192));
    drop((mr, p));
    assert_clean_drops();
}

#[test]
fn regular_file_mapping_on_the_callers_promise() {
    let p = Pair::new(QpType::Rc);
    // A tmpfs file: a regular file that cannot be sealed. (The VM's shared target dir is
    // 9p, whose files cannot be mapped shared: mmap fails with EINVAL.)
    let path =
        std::path::Path::new("/dev/shm").join(format!("ibverbs-test-{}", std::process::id()));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    file.set_len(8192).unwrap();
    // Not sealed, so the safe constructor refuses it.
    match Mapping::file(&file, 0, 8192) {
        Err(Error::InvalidArgument {
            what: "file",
            reason,
        }) => {
            assert!(reason.contains("F_SEAL_SHRINK"), "{reason}")
        }
        other => panic!("expected Error::InvalidArgument, got {other:?}"),
    }
    // SAFETY: nothing truncates this test's own file while it is mapped.
    let map = unsafe { Mapping::file_unchecked(&file, 0, 8192) }.unwrap();
    let mut mr = p.pd.register(map, ALL).unwrap();
    exercise(&p, &mut mr);
    drop(mr);
    let mut on_disk = vec![0; 8192];
    file.read_exact_at(&mut on_disk, 0).unwrap();
    assert_eq!(on_disk, pattern(3, 8192));
    drop((file, p));
    std::fs::remove_file(path).unwrap();
    assert_clean_drops();
}

#[test]
fn bad_file_mappings_are_typed_errors() {
    let file = memfd_file(8192, libc::F_SEAL_SHRINK);
    assert!(matches!(
        Mapping::file(&file, 100, 4096),
        Err(Error::InvalidArgument {
            what: "file offset",
            ..
        })
    ));
    match Mapping::file(&file, 4096, 8192) {
        Err(Error::OutOfRange {
            what, value, max, ..
        }) => assert_eq!((what, value, max), ("file mapping end", 12288, 8192)),
        other => panic!("expected Error::OutOfRange, got {other:?}"),
    }
    assert!(matches!(
        Mapping::file(&file, 0, 0),
        Err(Error::InvalidArgument { .. })
    ));
    // A read-only fd of a sealed file: a registered mapping is writable.
    let path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let read_only = File::open(path).unwrap();
    match Mapping::file(&read_only, 0, 4096) {
        Err(Error::InvalidArgument {
            what: "file",
            reason,
        }) => {
            assert!(reason.contains("reading and writing"), "{reason}")
        }
        other => panic!("expected Error::InvalidArgument, got {other:?}"),
    }
    // A memfd sealed otherwise (not against shrinking) is refused like any unsealed file.
    let unsealed = memfd_file(4096, libc::F_SEAL_GROW);
    assert!(matches!(
        Mapping::file(&unsealed, 0, 4096),
        Err(Error::InvalidArgument { what: "file", .. })
    ));
    assert_clean_drops();
}
