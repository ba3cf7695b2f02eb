//! On-demand paging: ODP regions under every operation rxe supports on them (RC send/recv,
//! write, read, atomics; UD send) where the kernel's rxe has ODP, the typed errors where it
//! has not, prefetch advice and implicit ODP. A test that needs ODP asks
//! `rdma_verbs_test_kit::feature` first: skipped by name where the kernel lacks it, failed
//! where `WITH_RDMA_EXPECT` says it should be there.
//!
//! Every transfer into ODP memory here starts at a page boundary, but the one that shows
//! why an ODP region must start on one (`MemoryRule::OdpPageAligned`): rxe in Linux 7.3.4
//! copies a transfer that starts `offset` bytes into a page of an ODP region to the start of
//! that page instead, a kernel bug these tests found.

use rdma_verbs_test_kit::{assert_clean_drops, feature, open, Feature};
use rdma_verbs_test_kit::{provider_has, Need};

use rdma_verbs::{
    huge_page_size, page_size, AccessFlags, Advice, AlignedBuffer, Error, MemoryRegion, MemoryRule,
    QpType, RecvRequest, RegistrableMemory, SendRequest, WcOpcode, WcStatus,
};
use rdma_verbs_test_kit::pattern;

use crate::common::{contents, poll_one, say, Pair, ALL};

/// `len` bytes of ODP memory with every access right on the pair's PD.
fn odp_mr(p: &Pair, len: usize) -> MemoryRegion {
    let mr = p.pd.alloc_mr(len, ALL | AccessFlags::ON_DEMAND).unwrap();
    assert!(mr.access().contains(AccessFlags::ON_DEMAND));
    mr
}

fn read_u64(mr: &MemoryRegion) -> u64 {
    let mut b = [0; 8];
    mr.read(0, &mut b).unwrap();
    u64::from_ne_bytes(b)
}

#[test]
fn odp_registration_is_checked_against_the_device_caps() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let caps = ctx.query_device().unwrap().odp_caps;
    let got = pd.alloc_mr(4096, ALL | AccessFlags::ON_DEMAND);
    if caps.general.contains(rdma_verbs::OdpGeneralCaps::SUPPORT) {
        // Each remote right needs its RC ODP cap; rxe with ODP has them all.
        assert!(got.is_ok(), "{got:?}");
    } else {
        match got {
            Err(Error::Unsupported { missing, .. }) => {
                assert!(missing.starts_with("IBV_ODP_SUPPORT "), "{missing}")
            }
            other => panic!("expected Error::Unsupported, got {other:?}"),
        }
        // Local access only needs ODP itself, and is refused the same way.
        let local = pd.alloc_mr(4096, AccessFlags::LOCAL_WRITE | AccessFlags::ON_DEMAND);
        assert!(matches!(local, Err(Error::Unsupported { .. })), "{local:?}");
    }
    drop(pd);
    assert_clean_drops();
}

/// The first of `make()`'s values whose memory does not start on a multiple of `unit`
/// (keeping the others alive meanwhile, so that the allocator hands out new memory).
fn off<B: RegistrableMemory>(unit: usize, make: impl Fn() -> B) -> B {
    let mut aligned = Vec::new();
    loop {
        let mut mem = make();
        if mem.as_mut_ptr() as usize % unit != 0 {
            return mem;
        }
        aligned.push(mem);
        assert!(
            aligned.len() < 16,
            "every allocation is {unit}-byte aligned"
        );
    }
}

/// Asserts that registering `mem` with `access` breaks `MemoryRule::OdpPageAligned`, for
/// `why` (such as `page`).
#[track_caller]
fn refused<B: RegistrableMemory>(
    pd: &rdma_verbs::ProtectionDomain,
    mem: B,
    access: AccessFlags,
    why: &str,
) {
    match pd.register(mem, access) {
        Err(Error::MemoryRule {
            rule: MemoryRule::OdpPageAligned,
            reason,
        }) => assert!(reason.contains(why), "{reason}"),
        other => panic!("expected MemoryRule::OdpPageAligned, got {other:?}"),
    }
}

/// An ODP registration of a `Vec` (which starts where malloc put it,
/// 16 or 80 bytes into a page) was accepted, and rxe on 7.3 copied an RDMA read into it to
/// the start of its page, over the heap before the `Vec` (`free(): invalid pointer`, or a
/// `SIGSEGV` later). Now any ODP memory that does not start on a page boundary (a huge page
/// one with `HUGETLB`) is refused, on every kernel, before the device is asked.
#[test]
fn odp_refuses_memory_off_the_page() {
    let pd = open().alloc_pd().unwrap();
    let page = page_size();
    let odp = ALL | AccessFlags::ON_DEMAND;
    refused(
        &pd,
        off(page, || vec![0u8; 3 * page]),
        odp,
        "bytes into its",
    );
    refused(
        &pd,
        off(page, || vec![0u8; 100].into_boxed_slice()),
        odp,
        "page",
    );
    let huge = huge_page_size().expect("the kernel has huge pages");
    let buf = off(huge, || AlignedBuffer::new(page).unwrap());
    refused(&pd, buf, odp | AccessFlags::HUGETLB, "huge page");
    // Pinned, the same memory registers: the rule is on-demand paging's.
    pd.register(off(page, || vec![0u8; 3 * page]), ALL).unwrap();
    drop(pd);
    assert_clean_drops();
}

/// Why: an RDMA read of 64 bytes into an ODP region (3 pages from a page boundary), 16 bytes
/// into its second page, lands there, or (rxe on 7.3) at the start of that page; either way
/// nothing before that page changes, so a region that starts on a page boundary holds it.
#[test]
fn odp_read_lands_in_the_entrys_page() {
    if !feature(&open(), Feature::Odp) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let page = page_size();
    let (at, len) = (page + 16, 64);
    let mut src = p.mr(len);
    let data = pattern(5, len);
    src.write(0, &data).unwrap();
    let mut dst = odp_mr(&p, 3 * page);
    dst.fill(0xee);
    let sge = [dst.sge(at..at + len).unwrap()];
    p.a.post_send(&mut [SendRequest::read(1, &sge, src.remote()).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let got = contents(&dst);
    let landed = if got[at..at + len] == data[..] {
        "at the entry"
    } else if got[page..page + len] == data[..] {
        "16 bytes early, at the start of the entry's page"
    } else {
        panic!("the data is nowhere: {:?}", &got[page..at + len]);
    };
    say(format!("odp_read_lands_in_the_entrys_page: {landed}"));
    let mut outside = got[..page].iter().chain(&got[at + len..]);
    assert!(
        outside.all(|&b| b == 0xee),
        "bytes outside the entry's page changed"
    );
    drop((src, dst, p));
    assert_clean_drops();
}

#[test]
fn odp_rc_send_recv_write_read_and_atomics() {
    if !provider_has(Need::Atomics) {
        return;
    }
    if !feature(&open(), Feature::Odp) {
        return;
    }
    let p = Pair::new(QpType::Rc);
    let mut src = odp_mr(&p, 8192);
    let dst = odp_mr(&p, 8192);
    src.fill(0x3c);

    // Send/recv: both sides' pages are faulted in by the transfer.
    let rsge = [dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send(2, &sge).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let wc = poll_one(&p.b_cq);
    assert_eq!(
        (wc.status(), wc.opcode(), wc.byte_len()),
        (WcStatus::SUCCESS, WcOpcode::Recv, 8192)
    );
    assert_eq!(contents(&dst), vec![0x3c; 8192]);

    // RDMA write into, and read back from, the remote ODP region.
    src.write(0, b"on demand").unwrap();
    let wsge = [src.sge(0..9).unwrap()];
    let target = dst.remote().slice(4096, 9).unwrap();
    p.a.post_send(&mut [SendRequest::write(3, &wsge, target).signaled()])
        .unwrap();
    assert_eq!(
        poll_one(&p.a_cq).ok().unwrap().opcode(),
        WcOpcode::RdmaWrite
    );
    let mut got = [0; 9];
    dst.read(4096, &mut got).unwrap();
    assert_eq!(&got, b"on demand");
    let back = [src.sge(4096..4105).unwrap()];
    p.a.post_send(&mut [SendRequest::read(4, &back, target).signaled()])
        .unwrap();
    let wc = poll_one(&p.a_cq);
    assert_eq!(
        (wc.status(), wc.opcode(), wc.byte_len()),
        (WcStatus::SUCCESS, WcOpcode::RdmaRead, 9)
    );
    src.read(4096, &mut got).unwrap();
    assert_eq!(&got, b"on demand");

    // Atomics on an ODP target, with the result in an ODP region.
    let mut counter = odp_mr(&p, 8);
    counter.write(0, &7u64.to_ne_bytes()).unwrap();
    let result = odp_mr(&p, 8);
    let rs = result.sge(..).unwrap();
    p.a.post_send(&mut [SendRequest::fetch_add(5, &rs, counter.remote(), 3).signaled()])
        .unwrap();
    assert_eq!(poll_one(&p.a_cq).ok().unwrap().opcode(), WcOpcode::FetchAdd);
    assert_eq!((read_u64(&result), read_u64(&counter)), (7, 10));
    p.a.post_send(&mut [SendRequest::compare_swap(6, &rs, counter.remote(), 10, 1).signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    assert_eq!((read_u64(&result), read_u64(&counter)), (10, 1));
    drop(p);
    assert_clean_drops();
}

#[test]
fn odp_ud_send() {
    if !feature(&open(), Feature::Odp) {
        return;
    }
    let p = Pair::with(QpType::Ud, |b| b.max_recv_sge(2), |_| {});
    let mut src = odp_mr(&p, 100);
    src.fill(0x77);
    // UD receives start with a 40-byte GRH: it goes to a pinned region, the payload to the
    // start of an ODP one (rxe's UD ODP caps cover sends and receives).
    let grh = p.mr(40);
    let dst = odp_mr(&p, 100);
    let rsge = [grh.sge(..).unwrap(), dst.sge(..).unwrap()];
    p.b.post_recv(&mut [RecvRequest::new(1, &rsge)]).unwrap();
    let remote = p.b.endpoint();
    let ah = p.pd.create_ah(&remote).gid_index(1).build().unwrap();
    let sge = [src.sge(..).unwrap()];
    p.a.post_send(&mut [SendRequest::send(2, &sge)
        .ud(&ah, remote.qpn, rdma_verbs::DEFAULT_QKEY)
        .signaled()])
        .unwrap();
    poll_one(&p.a_cq).ok().unwrap();
    let wc = poll_one(&p.b_cq);
    assert_eq!((wc.status(), wc.byte_len()), (WcStatus::SUCCESS, 140));
    assert_eq!(contents(&dst), vec![0x77; 100]);
    drop(ah);
    drop(p);
    assert_clean_drops();
}

#[test]
fn advise_prefetch_and_its_bad_inputs() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    // A pinned region takes no advice: refused before the call, on any kernel.
    let pinned = pd.alloc_mr(4096, AccessFlags::LOCAL_WRITE).unwrap();
    let got = pinned.advise(Advice::Prefetch, .., true);
    assert!(matches!(got, Err(Error::InvalidArgument { .. })), "{got:?}");
    if feature(&ctx, Feature::Odp) {
        let len = 4 * rdma_verbs::page_size();
        let mr = pd
            .alloc_mr(len, AccessFlags::LOCAL_WRITE | AccessFlags::ON_DEMAND)
            .unwrap();
        // rdma-core's rxe provider has no advise_mr: a typed error, after the checks below.
        for (advice, wait) in [
            (Advice::Prefetch, true),
            (Advice::PrefetchWrite, false),
            (Advice::PrefetchNoFault, true),
        ] {
            match mr.advise(advice, ..len / 2, wait) {
                Ok(()) => {}
                Err(Error::Unsupported { what, .. }) => assert!(what.contains("ibv_advise_mr")),
                Err(e) => panic!("{advice:?}: {e}"),
            }
        }
        // An empty range, one past the end, and write advice without LOCAL_WRITE.
        let empty = mr.advise(Advice::Prefetch, 10..10, true);
        assert!(
            matches!(empty, Err(Error::InvalidArgument { .. })),
            "{empty:?}"
        );
        let past = mr.advise(Advice::Prefetch, 0..len + 1, true);
        assert!(matches!(past, Err(Error::OutOfRange { .. })), "{past:?}");
        let ro = pd
            .alloc_mr(4096, AccessFlags::REMOTE_READ | AccessFlags::ON_DEMAND)
            .unwrap();
        let write = ro.advise(Advice::PrefetchWrite, .., true);
        assert!(
            matches!(write, Err(Error::InvalidArgument { .. })),
            "{write:?}"
        );
    }
    drop(pd);
    assert_clean_drops();
}

#[test]
fn implicit_odp_is_local_and_typed_where_unsupported() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let remote = pd.register_implicit_odp(AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE);
    assert!(
        matches!(remote, Err(Error::InvalidArgument { .. })),
        "{remote:?}"
    );
    let implicit = ctx
        .query_device()
        .unwrap()
        .odp_caps
        .general
        .contains(rdma_verbs::OdpGeneralCaps::SUPPORT_IMPLICIT);
    match pd.register_implicit_odp(AccessFlags::LOCAL_WRITE) {
        Ok(mr) => assert!(
            implicit,
            "registered without IBV_ODP_SUPPORT_IMPLICIT: {mr:?}"
        ),
        Err(Error::Unsupported { missing, .. }) => {
            assert!(!implicit);
            assert!(missing.starts_with("IBV_ODP_SUPPORT_IMPLICIT"), "{missing}");
        }
        Err(e) => panic!("implicit ODP: {e}"),
    }
    drop(pd);
    assert_clean_drops();
}
