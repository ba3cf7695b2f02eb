//! File mappings: the rule of the safe `Mapping::file` (a shmem memfd sealed against
//! shrinking, `MemoryRule::SealedShmemFile`) against what another process holding the fd can
//! do, played by a second fd of the file in this process: a hole punched in a sealed shmem
//! memfd reads back as zeros, while a hugetlbfs memfd is refused, because a hole punched in
//! it is `SIGBUS` at the next access once the huge page pool is empty (shown in a child
//! process, through the `unsafe` `Mapping::file_unchecked`). Writes through a mapping reach
//! the file; the `unsafe` constructor maps other files, a hugetlbfs file in whole huge pages.

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use rdma_verbs_test_kit::{assert_clean_drops, open, pattern};

use rdma_verbs::{
    huge_page_size, Error, Mapping, MappingKind, MemoryRule, QpType, RegistrableMemory,
};

use crate::common::{contents, exercise, huge_page_pool, say, Pair, ALL};

/// The name of the hugetlbfs memfds, which only the tests that hold the huge page pool
/// make: what `/proc/self/maps` shows of their mappings.
const HUGETLB_NAME: &std::ffi::CStr = c"memory-test-huge";

/// A new memfd (`memfd_create` with `MFD_ALLOW_SEALING | flags`) of `len` bytes as a `File`,
/// sealed with `seals` (none: 0).
fn memfd_file(flags: libc::c_uint, len: u64, seals: i32) -> File {
    let name = match flags & libc::MFD_HUGETLB {
        0 => c"memory-test",
        _ => HUGETLB_NAME,
    };
    // SAFETY: a NUL-terminated name.
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_ALLOW_SEALING | flags) };
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

/// Punches a hole over `len` bytes of `file` from 0 through a second fd of it, as another
/// process holding the fd could (`F_SEAL_SHRINK` does not stop it).
fn punch_hole(file: &File, len: usize) {
    let other = file.try_clone().unwrap();
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    // SAFETY: an open fd; fallocate changes the file, never this process's memory.
    let rc = unsafe { libc::fallocate(other.as_raw_fd(), mode, 0, len as libc::off_t) };
    assert_eq!(rc, 0, "fallocate: {}", std::io::Error::last_os_error());
}

/// Whether `/proc/self/maps` has a mapping of a hugetlbfs memfd that starts at `addr`.
fn huge_memfd_mapped_at(addr: usize) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let (start, name) = (format!("{addr:x}-"), HUGETLB_NAME.to_str().unwrap());
    maps.lines()
        .any(|line| line.starts_with(&start) && line.contains(name))
}

#[test]
fn sealed_file_mapping_writes_reach_the_file() {
    let p = Pair::new(QpType::Rc);
    let file = memfd_file(0, 3 * 4096, libc::F_SEAL_SHRINK);
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
fn punched_hole_in_a_sealed_memfd_reads_back_zeros() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    // A memfd handed over sealed (Mapping::file), and the crate's own (Mapping::memfd),
    // whose fd it lends out.
    let file = memfd_file(0, 8192, libc::F_SEAL_SHRINK);
    let handed = Mapping::file(&file, 0, 8192).unwrap();
    let own = Mapping::memfd("ibverbs-punch", 8192).unwrap();
    let own_fd = File::from(own.memfd_fd().unwrap().try_clone_to_owned().unwrap());
    for (map, fd) in [(handed, &file), (own, &own_fd)] {
        let mut mr = pd.register(map, ALL).unwrap();
        mr.fill(0x5a);
        punch_hole(fd, 8192);
        // The CPU's next access faults a new zero page in (the HCA keeps the pinned one).
        assert_eq!(
            contents(&mr),
            vec![0; 8192],
            "a punched hole reads as zeros"
        );
        mr.write(100, b"after the hole").unwrap();
        let mut back = [0; 14];
        mr.read(100, &mut back).unwrap();
        assert_eq!(&back, b"after the hole");
    }
    drop(pd);
    assert_clean_drops();
}

/// The env var that makes the test below the child that plays the attack.
const HUGETLBFS_ATTACK: &str = "IBVERBS_TEST_HUGETLBFS_ATTACK";

/// A sealed hugetlbfs memfd is refused by `Mapping::file` (which once accepted it); a child
/// process shows what the refusal prevents: a hole punched through a second fd, with the pool
/// empty, makes the region's safe `read` die of `SIGBUS`.
#[test]
fn hugetlbfs_file_is_refused_and_a_punched_hole_is_sigbus() {
    if std::env::var_os(HUGETLBFS_ATTACK).is_some() {
        return hugetlbfs_attack();
    }
    let huge = huge_page_size().expect("the kernel has huge pages");
    let pool = huge_page_pool();
    let file = memfd_file(libc::MFD_HUGETLB, huge as u64, libc::F_SEAL_SHRINK);
    match Mapping::file(&file, 0, huge) {
        Err(Error::MemoryRule {
            rule: MemoryRule::SealedShmemFile,
            reason,
        }) => assert!(reason.contains("hugetlbfs"), "{reason}"),
        other => panic!("expected MemoryRule::SealedShmemFile, got {other:?}"),
    }
    drop(file);
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "files::hugetlbfs_file_is_refused_and_a_punched_hole_is_sigbus",
            "--nocapture",
        ])
        .env(HUGETLBFS_ATTACK, "1")
        .output()
        .unwrap();
    drop(pool);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("reading"),
        "the child got to the read: {stderr}"
    );
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "the child's read dies of SIGBUS ({}): {stderr}",
        out.status
    );
    assert_clean_drops();
}

/// The child: a sealed hugetlbfs memfd mapped on a promise this process breaks on purpose,
/// registered; a second fd (another process's, in the issue) punches a hole; the rest of the
/// pool is reserved; the next read of the region faults.
fn hugetlbfs_attack() {
    let huge = huge_page_size().unwrap();
    let pd = open().alloc_pd().unwrap();
    let file = memfd_file(libc::MFD_HUGETLB, huge as u64, libc::F_SEAL_SHRINK);
    // SAFETY: broken on purpose: the hole punched below leaves the mapping without a page,
    // which kills this child process (its parent checks that it does).
    let map = unsafe { Mapping::file_unchecked(&file, 0, huge) }.unwrap();
    let mut mr = pd.register(map, ALL).unwrap();
    mr.fill(1);
    punch_hole(&file, huge);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let pages = |key: &str| -> usize {
        let line = meminfo.lines().find(|l| l.starts_with(key)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let unreserved = pages("HugePages_Free:") - pages("HugePages_Rsvd:");
    let _rest = (unreserved > 0).then(|| Mapping::huge(unreserved * huge).unwrap());
    say(format!(
        "hole punched, {unreserved} free huge pages reserved: reading"
    ));
    let mut byte = [0; 1];
    mr.read(0, &mut byte).unwrap();
    say(format!("read {byte:?}: no SIGBUS"));
}

/// A hugetlbfs file mapping is unmapped with its whole length (huge pages),
/// so dropping it reports no error and leaves nothing mapped.
#[test]
fn hugetlbfs_file_mapping_unmaps_whole() {
    let huge = huge_page_size().expect("the kernel has huge pages");
    let _pool = huge_page_pool();
    let p = Pair::new(QpType::Rc);
    let file = memfd_file(libc::MFD_HUGETLB, 2 * huge as u64, 0);
    // SAFETY: the test's own file, which nothing truncates or punches while it is mapped.
    let off_page = unsafe { Mapping::file_unchecked(&file, 4096, 4096) };
    match off_page {
        Err(Error::InvalidArgument {
            what: "file offset",
            reason,
        }) => assert!(reason.contains(&huge.to_string()), "{reason}"),
        other => panic!("expected the offset refused, got {other:?}"),
    }
    // SAFETY: as above.
    let mut map = unsafe { Mapping::file_unchecked(&file, huge as u64, 10_000) }.unwrap();
    let addr = map.as_mut_ptr() as usize;
    assert_eq!(addr % huge, 0, "huge-page aligned");
    let mut mr = p.pd.register(map, ALL).unwrap();
    exercise(&p, &mut mr);
    let map = mr.deregister().unwrap();
    assert!(huge_memfd_mapped_at(addr));
    drop(map);
    assert!(!huge_memfd_mapped_at(addr), "the huge page mapping is gone");
    drop((file, p));
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
        Err(Error::MemoryRule {
            rule: MemoryRule::SealedShmemFile,
            reason,
        }) => assert!(reason.contains("F_SEAL_SHRINK"), "{reason}"),
        other => panic!("expected MemoryRule::SealedShmemFile, got {other:?}"),
    }
    // SAFETY: nothing truncates or punches this test's own file while it is mapped, and
    // /dev/shm has room for its two pages.
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
    let file = memfd_file(0, 8192, libc::F_SEAL_SHRINK);
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
    // A memfd sealed otherwise (not against shrinking) is refused like any unsealed file,
    // and a file that is not on shmem (the target dir: 9p in the VM) whatever its seals.
    let unsealed = memfd_file(0, 4096, libc::F_SEAL_GROW);
    let not_shmem = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ibverbs-file-{}", std::process::id()));
    let on_disk = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&not_shmem)
        .unwrap();
    on_disk.set_len(4096).unwrap();
    for (file, why) in [(&unsealed, "F_SEAL_SHRINK"), (&on_disk, "not on shmem")] {
        match Mapping::file(file, 0, 4096) {
            Err(Error::MemoryRule {
                rule: MemoryRule::SealedShmemFile,
                reason,
            }) => assert!(reason.contains(why), "{reason}"),
            other => panic!("expected MemoryRule::SealedShmemFile ({why}), got {other:?}"),
        }
    }
    drop(on_disk);
    std::fs::remove_file(not_shmem).unwrap();
    assert_clean_drops();
}
