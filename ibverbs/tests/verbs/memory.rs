//! Memory users already own: a `Vec` and a `Box`, anonymous mappings, huge pages and a
//! sealed memfd under RDMA write, read and send with the data checked (file mappings are in
//! `files`, on-demand paging in `odp`); the access rights every registration must keep;
//! `ibv_rereg_mr` (new access, range, PD, and a provider without it); `ibv_reg_dmabuf_mr`
//! over a udmabuf; and the bad inputs of each, typed errors with nothing leaked.
//!
//! The VM of scripts/with-rdma reserves 8 huge pages of 2 MiB and has /dev/udmabuf where
//! the kernel has udmabuf (7.3.4; not Debian's 6.1).

use rdma_verbs_test_kit::{provider_has, Need};
use std::os::fd::AsRawFd;

use rdma_verbs_test_kit::{assert_clean_drops, open};

use rdma_verbs::{
    huge_page_size, AccessFlags, AsRaw, DmaBuf, Error, Mapping, MappingKind, MemoryRegion, MwType,
    QpType, RegistrableMemory, Rereg,
};

use crate::common::{contents, exercise, huge_page_pool, poll_one, say, Pair, ALL};

#[test]
fn vec_and_box_under_write_read_and_send() {
    let p = Pair::new(QpType::Rc);
    let mut mr = p.pd.register(vec![0u8; 10_000], ALL).unwrap();
    exercise(&p, &mut mr);
    assert_eq!(mr.deregister().unwrap().len(), 10_000);
    let mut mr =
        p.pd.register(vec![0u8; 5000].into_boxed_slice(), ALL)
            .unwrap();
    exercise(&p, &mut mr);
    drop((mr, p));
    assert_clean_drops();
}

/// The rules every registration keeps, checked before the provider: remote write and
/// atomics need local write, `ZERO_BASED` is a window's right, `HUGETLB` goes with
/// `ON_DEMAND`; and what the provider refuses anyway (`HUGETLB` on rxe) is a typed error.
#[test]
fn access_flag_rules_are_typed_errors() {
    let huge = huge_page_size().expect("the kernel has huge pages");
    let pd = open().alloc_pd().unwrap();
    let refused = |access: AccessFlags, rule: &str| match pd.alloc_mr(4096, access) {
        Err(Error::InvalidArgument {
            what: "access flags",
            reason,
        }) => assert!(reason.contains(rule), "{access:?}: {reason}"),
        other => panic!("{access:?}: expected the access flags refused, got {other:?}"),
    };
    // The kernel refuses these alone (EINVAL): the HCA writes the region for them.
    refused(AccessFlags::REMOTE_WRITE, "need LOCAL_WRITE");
    refused(AccessFlags::REMOTE_ATOMIC, "need LOCAL_WRITE");
    refused(
        AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
        "need LOCAL_WRITE",
    );
    // rxe on 7.3 refuses these (EOPNOTSUPP); 6.1's rxe took them and ignored them.
    refused(AccessFlags::all(), "ZERO_BASED");
    refused(
        AccessFlags::LOCAL_WRITE | AccessFlags::ZERO_BASED,
        "ZERO_BASED",
    );
    refused(AccessFlags::LOCAL_WRITE | AccessFlags::HUGETLB, "ON_DEMAND");
    // What the rules allow registers: no rights at all, remote read alone.
    for access in [AccessFlags::empty(), AccessFlags::REMOTE_READ, ALL] {
        pd.alloc_mr(4096, access).unwrap();
    }
    // Every flag a registration may have, over huge pages: on-demand paging in huge pages,
    // which neither kernel's rxe has (6.1: no ODP; 7.3: no HUGETLB).
    let _pool = huge_page_pool();
    let all = AccessFlags::all() - AccessFlags::ZERO_BASED;
    match pd.register(Mapping::huge(huge).unwrap(), all) {
        Err(Error::Unsupported { what, missing }) => say(format!(
            "access_flag_rules_are_typed_errors: {all:?}: {what}: {missing}"
        )),
        other => panic!("expected rxe to refuse {all:?}, got {other:?}"),
    }
    drop(pd);
    assert_clean_drops();
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
    let _pool = huge_page_pool();
    let p = Pair::new(QpType::Rc);
    let map = Mapping::huge(huge).unwrap_or_else(|e| {
        panic!("{e} (scripts/with-rdma's VM reserves 8; natively, reserve some)")
    });
    assert_eq!(map.kind(), MappingKind::HugePages);
    let mut mr = p.pd.register(map, ALL).unwrap();
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

/// Runs `change` on a new region of 3 pages of anonymous memory (registered with `access`
/// in `pd`); where the device re-registers, then `exercise`s it. rdma-core's rxe provider
/// has no `rereg_mr` (libibverbs' stand-in returns `EOPNOTSUPP`): the call is then
/// [`Error::Unsupported`] and the region is as it was.
fn rereg_then_use(
    p: &Pair,
    pd: &rdma_verbs::ProtectionDomain,
    access: AccessFlags,
    change: Rereg,
) -> Option<MemoryRegion<Mapping>> {
    let mut mr = pd
        .register(Mapping::anonymous(3 * 4096).unwrap(), access)
        .unwrap();
    match mr.rereg(&change) {
        Ok(()) => {
            assert!(mr.is_valid());
            exercise(p, &mut mr);
            Some(mr)
        }
        Err(Error::Unsupported { what, missing }) => {
            say(format!("rereg {change:?}: {what}: {missing}"));
            assert!(mr.is_valid());
            assert_eq!((mr.offset(), mr.len(), mr.access()), (0, 3 * 4096, access));
            assert_eq!(mr.pd().as_raw().as_ptr(), pd.as_raw().as_ptr());
            None
        }
        Err(other) => panic!("rereg {change:?}: {other:?}"),
    }
}

/// A rereg on a provider without `rereg_mr` (rdma-core's rxe) leaves the region untouched
/// (it once left it unusable): keeps its keys and carries transfers.
#[test]
fn rereg_without_the_providers_verb_leaves_the_region_usable() {
    let p = Pair::new(QpType::Rc);
    let mut mr =
        p.pd.register(Mapping::anonymous(8192).unwrap(), ALL)
            .unwrap();
    let keys = (mr.lkey(), mr.rkey());
    for change in [
        Rereg::new().access(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ),
        Rereg::new().range(0..4096),
        Rereg::new().pd(&p.pd),
    ] {
        match mr.rereg(&change) {
            Ok(()) => say(format!("rereg {change:?}: the provider re-registers")),
            Err(Error::Unsupported { what, .. }) => {
                assert!(what.contains("ibv_rereg_mr"), "{what}");
                assert_eq!((mr.lkey(), mr.rkey(), mr.len()), (keys.0, keys.1, 8192));
            }
            Err(other) => panic!("rereg {change:?}: {other:?}"),
        }
        assert!(mr.is_valid());
    }
    if mr.access() == ALL && mr.len() == 8192 {
        exercise(&p, &mut mr);
    }
    drop((mr, p));
    assert_clean_drops();
}

#[test]
fn rereg_access_pd_and_range() {
    let p = Pair::new(QpType::Rc);
    // Local-only in another PD: useless to the pair until changed.
    let other_pd = p.pd.context().alloc_pd().unwrap();
    let change = Rereg::new().access(ALL).pd(&p.pd);
    if let Some(mr) = rereg_then_use(&p, &other_pd, AccessFlags::LOCAL_WRITE, change) {
        assert_eq!(mr.access(), ALL);
        assert_eq!(mr.pd().as_raw().as_ptr(), p.pd.as_raw().as_ptr());
    }
    // A range of the owned memory: the region moves, the memory comes back whole.
    if let Some(mr) = rereg_then_use(&p, &p.pd, ALL, Rereg::new().range(4096..3 * 4096)) {
        assert_eq!((mr.offset(), mr.len()), (4096, 8192));
        assert_eq!(mr.deregister().unwrap().len(), 3 * 4096);
    }
    drop((other_pd, p));
    assert_clean_drops();
}

#[test]
fn rereg_bad_inputs_leave_the_region_usable() {
    if !provider_has(Need::Atomics) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let mut mr =
        p.pd.register(Mapping::anonymous(8192).unwrap(), ALL)
            .unwrap();
    let keys = (mr.lkey(), mr.rkey());
    let invalid = |r: rdma_verbs::Result<()>, what: &str| match r {
        Err(Error::InvalidArgument { what: w, .. }) => assert_eq!(w, what),
        other => panic!("expected Error::InvalidArgument ({what}), got {other:?}"),
    };
    invalid(mr.rereg(&Rereg::new()), "rereg");
    invalid(
        mr.rereg(&Rereg::new().access(AccessFlags::REMOTE_WRITE)),
        "access flags",
    );
    invalid(
        mr.rereg(&Rereg::new().access(AccessFlags::REMOTE_ATOMIC)),
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
    drop((mr, foreign));

    // A window bound to the region holds its registration: no rereg under it.
    let mut target = p.pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mut mw = p.pd.alloc_mw(MwType::Type1).unwrap();
    p.b.bind_mw(&mut mw, &target, 0..64, AccessFlags::REMOTE_WRITE, 1)
        .unwrap();
    poll_one(&p.b_cq).ok().unwrap();
    match target.rereg(&Rereg::new().access(ALL)) {
        Err(Error::InvalidArgument { reason, .. }) => {
            assert!(reason.contains("window"), "{reason}")
        }
        other => panic!("expected Error::InvalidArgument, got {other:?}"),
    }
    drop((mw, target, p));
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
            say(format!("dmabuf_from_udmabuf: {what}: {reason}"));
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
            say(format!("dmabuf_from_udmabuf: {what}: {missing}"));
        }
        other => panic!("expected rxe to refuse dma-buf regions, got {other:?}"),
    }
    drop((map, anon, pd));
    assert_clean_drops();
}
