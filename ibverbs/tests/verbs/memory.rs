//! Memory users already own: anonymous mappings, huge pages, a sealed memfd and file
//! mappings under RDMA write, read and send with the data checked; `ibv_rereg_mr` (new
//! access, range, PD); `ibv_reg_dmabuf_mr` over a udmabuf; and the bad inputs of each,
//! typed errors with nothing leaked.
//!
//! The VM of scripts/with-rdma reserves 8 huge pages of 2 MiB and has /dev/udmabuf where
//! the kernel has udmabuf (7.3.4; not Debian's 6.1).

use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;

use ibverbs_test_kit::{assert_clean_drops, open, pattern};

use ibverbs::{
    huge_page_size, AccessFlags, DmaBuf, Error, Mapping, MappingKind, MemoryRegion, QpType,
    RecvRequest, RegistrableMemory, Rereg, ReregState, SendRequest, WcOpcode, WcStatus,
};

use crate::common::{contents, poll_one, Pair, ALL};

/// RDMA write from, RDMA read into and a receive into `mem` (registered with [`ALL`] on the
/// pair's PD), each against a heap region, with the data checked.
fn exercise<B: RegistrableMemory>(p: &Pair, mem: &mut MemoryRegion<B>) {
    let len = mem.len().min(64 * 1024);
    let other = p.mr(len);

    // Write: mem -> other.
    let data = pattern(1, len);
    mem.write(0, &data).unwrap();
    let sge = [mem.sge(..len).unwrap()];
    p.a.post_send(&mut [SendRequest::write(1, &sge, other.remote()).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    assert_eq!(contents(&other), data, "RDMA write from the memory");

    // Read: other -> mem.
    let mut other = other;
    let data = pattern(2, len);
    other.write(0, &data).unwrap();
    let sge = [mem.sge(..len).unwrap()];
    p.a.post_send(&mut [SendRequest::read(2, &sge, other.remote()).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let mut got = vec![0; len];
    mem.read(0, &mut got).unwrap();
    assert_eq!(got, data, "RDMA read into the memory");

    // Send: other (on b) -> a receive into mem.
    let data = pattern(3, len);
    other.write(0, &data).unwrap();
    let rsge = [mem.sge(..len).unwrap()];
    p.a.post_recv(&mut [RecvRequest::new(3, &rsge)]).unwrap();
    let sge = [other.sge(..).unwrap()];
    p.b.post_send(&mut [SendRequest::send(4, &sge).signaled()])
        .unwrap();
    poll_one(&p.b_cq).ok().unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(
        (wc.status(), wc.opcode(), wc.byte_len() as usize),
        (WcStatus::SUCCESS, WcOpcode::Recv, len)
    );
    mem.read(0, &mut got).unwrap();
    assert_eq!(got, data, "a send received into the memory");
}

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
fn anonymous_mapping_under_write_read_and_send() {
    let p = Pair::new(QpType::Rc);
    let map = Mapping::anonymous(10_000).unwrap();
    assert_eq!((map.kind(), map.len()), (MappingKind::Anonymous, 10_000));
    let mut mr = p.pd.register(map, ALL).unwrap();
    assert_eq!(
        contents(&mr),
        vec![0; 10_000],
        "anonymous pages start zeroed"
    );
    exercise(&p, &mut mr);
    let map = mr.deregister().unwrap();
    assert_eq!(map.len(), 10_000);
    drop((map, p));
    assert_clean_drops();
}

#[test]
fn huge_pages_under_write_read_and_send() {
    let huge = huge_page_size().expect("the kernel has huge pages");
    let p = Pair::new(QpType::Rc);
    let map = Mapping::huge(huge).unwrap_or_else(|e| {
        panic!("{e} (scripts/with-rdma's VM reserves 8; natively, reserve some)")
    });
    assert_eq!(map.kind(), MappingKind::HugePages);
    let mut mr = p.pd.register(map, ALL | AccessFlags::HUGETLB).unwrap();
    assert_eq!(mr.addr() % huge as u64, 0, "huge-page aligned");
    exercise(&p, &mut mr);
    drop((mr, p));
    assert_clean_drops();
}

#[test]
fn huge_pages_beyond_the_reserve_are_a_typed_error() {
    // 512 huge pages (1 GiB of 2 MiB pages): far more than any test VM reserves.
    let huge = huge_page_size().expect("the kernel has huge pages");
    match Mapping::huge(512 * huge) {
        Err(Error::Unavailable { what, reason }) => {
            assert!(what.contains("MAP_HUGETLB"), "{what}");
            assert!(reason.contains("512 free huge pages"), "{reason}");
        }
        other => panic!("expected Error::Unavailable, got {other:?}"),
    }
    assert!(matches!(
        Mapping::huge(0),
        Err(Error::InvalidArgument { .. })
    ));
    assert_clean_drops();
}

#[test]
fn sealed_memfd_under_write_read_and_send_cannot_shrink() {
    let p = Pair::new(QpType::Rc);
    let map = Mapping::memfd("ibverbs-test", 8192).unwrap();
    assert_eq!(map.kind(), MappingKind::Memfd);
    let fd = map.memfd_fd().unwrap().as_raw_fd();
    let mut mr = p.pd.register(map, ALL).unwrap();
    exercise(&p, &mut mr);
    // SAFETY: fd is the region's memfd, open while the region lives.
    let rc = unsafe { libc::ftruncate(fd, 0) };
    let errno = std::io::Error::last_os_error().raw_os_error();
    assert_eq!(
        (rc, errno),
        (-1, Some(libc::EPERM)),
        "F_SEAL_SHRINK refuses truncation"
    );
    // Growing is allowed, and harmless: the mapping stays backed.
    // SAFETY: as above.
    assert_eq!(unsafe { libc::ftruncate(fd, 16384) }, 0);
    let mut b = [0; 1];
    mr.read(8191, &mut b).unwrap();
    // SAFETY: as above.
    let seals = unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_WRITE) };
    assert_eq!(seals, -1, "F_SEAL_SEAL freezes the seals");
    drop((mr, p));

    assert!(matches!(
        Mapping::memfd("nul\0name", 4096),
        Err(Error::InvalidArgument {
            what: "memfd name",
            ..
        })
    ));
    assert!(matches!(
        Mapping::memfd("empty", 0),
        Err(Error::InvalidArgument { .. })
    ));
    assert_clean_drops();
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
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("memory-test-file");
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

#[test]
fn rereg_access_and_pd_then_transfers() {
    let p = Pair::new(QpType::Rc);
    // Registered local-only in another PD: useless to the pair until changed.
    let other_pd = p.pd.context().alloc_pd().unwrap();
    let mut mr = other_pd
        .register(Mapping::anonymous(4096).unwrap(), AccessFlags::LOCAL_WRITE)
        .unwrap();
    mr.rereg(&Rereg::new().access(ALL).pd(&p.pd)).unwrap();
    assert_eq!(mr.access(), ALL);
    assert!(mr.is_valid());
    assert_eq!(mr.pd().as_raw(), p.pd.as_raw());
    drop(other_pd); // the region no longer keeps it
    exercise(&p, &mut mr);

    // Access alone, back to local only: the peer's RDMA write is then refused.
    mr.rereg(&Rereg::new().access(AccessFlags::LOCAL_WRITE))
        .unwrap();
    assert_eq!(mr.access(), AccessFlags::LOCAL_WRITE);
    drop((mr, p));
    assert_clean_drops();
}

#[test]
fn rereg_bad_inputs_leave_the_region_usable() {
    let p = Pair::new(QpType::Rc);
    let mut mr =
        p.pd.register(Mapping::anonymous(8192).unwrap(), ALL)
            .unwrap();
    let keys = (mr.lkey(), mr.rkey());
    let invalid = |r: ibverbs::Result<()>, what: &str| match r {
        Err(Error::InvalidArgument { what: w, .. }) => assert_eq!(w, what),
        other => panic!("expected Error::InvalidArgument ({what}), got {other:?}"),
    };
    invalid(mr.rereg(&Rereg::new()), "rereg");
    invalid(
        mr.rereg(&Rereg::new().access(AccessFlags::REMOTE_WRITE)),
        "access flags",
    );
    invalid(
        mr.rereg(&Rereg::new().access(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC)),
        "access flags",
    );
    invalid(
        mr.rereg(&Rereg::new().access(ALL | AccessFlags::ON_DEMAND)),
        "access flags",
    );
    invalid(mr.rereg(&Rereg::new().range(100..100)), "range");
    match mr.rereg(&Rereg::new().range(4096..8193)) {
        Err(Error::OutOfRange {
            what, value, max, ..
        }) => assert_eq!((what, value, max), ("range end", 8193, 8192)),
        other => panic!("expected Error::OutOfRange, got {other:?}"),
    }
    let foreign = open().alloc_pd().unwrap();
    assert!(matches!(
        mr.rereg(&Rereg::new().pd(&foreign)),
        Err(Error::Mismatch { .. })
    ));
    // Nothing reached the provider: same keys, same access, still usable.
    assert_eq!((mr.lkey(), mr.rkey(), mr.access()), (keys.0, keys.1, ALL));
    assert!(mr.is_valid());
    exercise(&p, &mut mr);
    drop((mr, foreign, p));
    assert_clean_drops();
}

#[test]
fn rereg_range_within_the_owned_memory() {
    let p = Pair::new(QpType::Rc);
    let mut mr =
        p.pd.register(Mapping::anonymous(3 * 4096).unwrap(), ALL)
            .unwrap();
    let base = mr.addr();
    match mr.rereg(&Rereg::new().range(4096..3 * 4096)) {
        Ok(()) => {
            assert_eq!((mr.offset(), mr.len()), (4096, 8192));
            assert_eq!(mr.addr(), base + 4096);
            exercise(&p, &mut mr);
            let map = mr.deregister().unwrap();
            assert_eq!(map.len(), 3 * 4096, "the whole memory comes back");
        }
        // rxe has no translation change: the kernel refuses the command, which rdma-core
        // says leaves the MR undefined. The region then refuses use, and drops cleanly.
        Err(Error::Rereg {
            code,
            region: ReregState::Invalid,
            source,
        }) => {
            assert_eq!(code, "IBV_REREG_MR_ERR_CMD");
            eprintln!("rereg of the range: {source}");
            assert!(!mr.is_valid());
            assert!(matches!(mr.sge(..), Err(Error::InvalidArgument { .. })));
            assert!(matches!(
                mr.rereg(&Rereg::new().access(ALL)),
                Err(Error::InvalidArgument { .. })
            ));
            assert_eq!((mr.offset(), mr.len()), (0, 3 * 4096));
            drop(mr);
        }
        other => panic!("expected Ok or an invalid region, got {other:?}"),
    }
    drop(p);
    assert_clean_drops();
}

#[test]
fn dmabuf_from_udmabuf() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let map = Mapping::memfd("ibverbs-dmabuf", 8192).unwrap();
    let anon = Mapping::anonymous(8192).unwrap();
    // Bad inputs, checked before anything is opened.
    assert!(matches!(
        DmaBuf::udmabuf(&anon, 0, 4096),
        Err(Error::InvalidArgument {
            what: "mapping",
            ..
        })
    ));
    assert!(matches!(
        DmaBuf::udmabuf(&map, 100, 4096),
        Err(Error::InvalidArgument {
            what: "udmabuf range",
            ..
        })
    ));
    assert!(matches!(
        DmaBuf::udmabuf(&map, 4096, 8192),
        Err(Error::OutOfRange { .. })
    ));
    let has_udmabuf = std::path::Path::new("/dev/udmabuf").exists();
    let buf = match DmaBuf::udmabuf(&map, 0, 8192) {
        Err(Error::Unavailable { what, reason }) if !has_udmabuf => {
            eprintln!("no udmabuf on this kernel: {what}: {reason}");
            drop((map, anon, pd));
            assert_clean_drops();
            return;
        }
        got => got.unwrap(),
    };
    assert_eq!(buf.len(), 8192);
    let past = DmaBuf::udmabuf(&map, 0, 4096).unwrap();
    match pd.register_dmabuf(past, 0, 8192, 0, ALL) {
        Err(Error::OutOfRange { what, .. }) => assert_eq!(what, "dma-buf range end"),
        other => panic!("expected Error::OutOfRange, got {other:?}"),
    }
    match pd.register_dmabuf(buf, 0, 8192, 0, ALL) {
        Err(Error::Unsupported { what, missing }) => {
            eprintln!("{what}: {missing}");
        }
        other => panic!("expected rxe to refuse dma-buf regions, got {other:?}"),
    }
    drop((map, anon, pd));
    assert_clean_drops();
}
