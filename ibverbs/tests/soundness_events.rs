//! The soundness rules outside the posting path, on a real device (run through
//! `scripts/with-rdma`; rxe in CI): completion events on a shared channel, the event
//! descriptors that only `unsafe` code can reach (and what reading one past the crate does),
//! memory windows that keep their region registered, destructors with stderr closed, and
//! the atomic copies to and from registered memory.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rdma_verbs::{
    AccessFlags, AsRaw, AsyncEventKind, CompletionChannel, CompletionQueue, ConnectOptions,
    Context, Error, MemoryRegion, MwType, ProtectionDomain, QpType, QueuePair, RecvRequest,
    SendRequest, SharedReceiveQueue, WcOpcode, WorkCompletion,
};

use rdma_verbs_test_kit::{assert_clean_drops, child_test, open, poll_one, ALL};

const LONG: Duration = Duration::from_secs(10);

/// Two connected RC QPs: `x` receives on `x_cq`, `y` on `y_cq`; both send on `scq`.
struct Pair {
    pd: ProtectionDomain,
    x: QueuePair,
    y: QueuePair,
    scq: CompletionQueue,
}

impl Pair {
    fn new(ctx: &Context, x_cq: &CompletionQueue, y_cq: &CompletionQueue) -> Pair {
        let pd = ctx.alloc_pd().unwrap();
        let scq = ctx.create_cq(64, None).unwrap();
        let x = pd.create_qp(QpType::Rc, &scq, x_cq).access(ALL).build();
        let y = pd.create_qp(QpType::Rc, &scq, y_cq).access(ALL).build();
        let (x, y) = (x.unwrap(), y.unwrap());
        let (ex, ey) = (x.endpoint(), y.endpoint());
        let opts = ConnectOptions::new();
        let x = x.connect(&ey, &opts).unwrap();
        let y = y.connect(&ex, &opts).unwrap();
        Pair { pd, x, y, scq }
    }

    /// Sends one message from `from` to `to`, whose receive completion then waits on its CQ.
    fn send(&self, from: &QueuePair, to: &QueuePair, mr: &MemoryRegion, wr_id: u64) {
        let sge = [mr.sge(..).unwrap()];
        to.post_recv(&mut [RecvRequest::new(wr_id, &sge)]).unwrap();
        from.post_send(&mut [SendRequest::send(wr_id, &sge).signaled()])
            .unwrap();
        let mut wc = [WorkCompletion::default()];
        let done = self.scq.poll_wait(&mut wc, Some(LONG)).unwrap();
        assert_eq!(done.len(), 1, "no send completion within 10 s");
        done[0].ok().unwrap();
    }
}

/// With two CQs on one channel, an event for B is not lost to A's wait.
#[test]
fn shared_channel_event_reaches_its_cq() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let cq_a = ctx.create_cq(16, Some(&channel)).unwrap();
    let cq_b = ctx.create_cq(16, Some(&channel)).unwrap();
    let p = Pair::new(&ctx, &cq_a, &cq_b);
    let mr = p.pd.alloc_mr(64, ALL).unwrap();

    cq_a.req_notify(false).unwrap();
    cq_b.req_notify(false).unwrap();
    p.send(&p.x, &p.y, &mr, 7);
    // A's wait reads B's event from the channel, and keeps it for B.
    assert!(!cq_a.wait_timeout(Duration::from_millis(200)).unwrap());
    assert!(cq_b.wait_timeout(Duration::ZERO).unwrap());
    let mut wc = [WorkCompletion::default(); 4];
    let got = cq_b.poll(&mut wc).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].wr_id(), got[0].opcode()), (7, WcOpcode::Recv));
    // Taken once: no second event for B.
    assert!(!cq_b.wait_timeout(Duration::ZERO).unwrap());

    // A zero timeout still takes an event that is queued on the fd, unread.
    cq_b.req_notify(false).unwrap();
    p.send(&p.x, &p.y, &mr, 9);
    // SAFETY: only polled; the event is taken by wait_timeout.
    let fd = unsafe { channel.raw_fd() };
    assert!(readable(fd), "no event within 10 s");
    assert!(cq_b.wait_timeout(Duration::ZERO).unwrap());
    assert_eq!(cq_b.poll(&mut wc).unwrap()[0].wr_id(), 9);

    // An event read for A by B's wait is acknowledged: A's destroy does not hang on it.
    cq_a.req_notify(false).unwrap();
    p.send(&p.y, &p.x, &mr, 8);
    assert!(!cq_b.wait_timeout(Duration::from_millis(200)).unwrap());
    drop((p, mr, cq_a));
    drop((cq_b, channel));
    assert_clean_drops();
}

/// `poll_wait` on two threads sharing a channel; each gets its own completion.
#[test]
fn poll_wait_on_a_shared_channel_from_two_threads() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let cq_a = ctx.create_cq(16, Some(&channel)).unwrap();
    let cq_b = ctx.create_cq(16, Some(&channel)).unwrap();
    let p = Pair::new(&ctx, &cq_a, &cq_b);
    let mr = p.pd.alloc_mr(64, ALL).unwrap();

    // Nothing there: poll_wait returns empty after its timeout.
    let mut wc = [WorkCompletion::default(); 4];
    let start = Instant::now();
    assert!(cq_a
        .poll_wait(&mut wc, Some(Duration::from_millis(100)))
        .unwrap()
        .is_empty());
    assert!(start.elapsed() >= Duration::from_millis(100));

    std::thread::scope(|s| {
        fn wait(cq: &CompletionQueue) -> Vec<u64> {
            let mut wc = [WorkCompletion::default(); 4];
            let got = cq.poll_wait(&mut wc, Some(LONG)).unwrap();
            got.iter().map(|wc| wc.wr_id()).collect()
        }
        let a = s.spawn(|| wait(&cq_a));
        let b = s.spawn(|| wait(&cq_b));
        // Both threads are asleep on the channel (give them time to get there).
        std::thread::sleep(Duration::from_millis(100));
        p.send(&p.x, &p.y, &mr, 1);
        assert_eq!(b.join().unwrap(), [1]);
        p.send(&p.y, &p.x, &mr, 2);
        assert_eq!(a.join().unwrap(), [2]);
    });
    drop((p, mr, cq_a, cq_b, channel));
    assert_clean_drops();
}

/// A bound window keeps its region registered; dropping the region first fails
/// nothing, leaks nothing, and the PD is deallocated.
#[test]
fn bound_window_keeps_its_region_registered() {
    let ctx = open();
    let cq = ctx.create_cq(64, None).unwrap();
    let p = Pair::new(&ctx, &cq, &cq);
    let target = p.pd.alloc_mr(4096, ALL | AccessFlags::MW_BIND).unwrap();
    let mut src = p.pd.alloc_mr(16, ALL).unwrap();
    src.write(0, &[0x44; 16]).unwrap();
    let sge = [src.sge(..).unwrap()];

    let mut mw = p.pd.alloc_mw(MwType::Type1).unwrap();
    let window =
        p.y.bind_mw(&mut mw, &target, 0..1024, AccessFlags::REMOTE_WRITE, 9)
            .unwrap();
    let mut wc = [WorkCompletion::default()];
    let bound = p.scq.poll_wait(&mut wc, Some(LONG)).unwrap();
    assert_eq!(bound[0].ok().unwrap().opcode(), WcOpcode::BindMw);

    // The region goes; the window keeps it registered, so a peer's write lands in live
    // memory and the deregistration does not fail.
    drop(target);
    assert_clean_drops();
    p.x.post_send(&mut [SendRequest::write(1, &sge, window).signaled()])
        .unwrap();
    let done = p.scq.poll_wait(&mut wc, Some(LONG)).unwrap();
    done[0].ok().unwrap();

    // A region cannot be deregistered (given back) while a type 2 window holds it.
    let other = p.pd.alloc_mr(64, ALL | AccessFlags::MW_BIND).unwrap();
    let mw2 = p.pd.alloc_mw(MwType::Type2).unwrap();
    let rkey = rdma_verbs::ffi::ibv_inc_rkey(mw2.rkey());
    let bind = SendRequest::bind_mw(2, &mw2, &other, .., AccessFlags::REMOTE_WRITE, rkey);
    p.y.post_send(&mut [bind.unwrap().signaled()]).unwrap();
    let bound = p.scq.poll_wait(&mut wc, Some(LONG)).unwrap();
    assert_eq!(bound[0].ok().unwrap().opcode(), WcOpcode::BindMw);
    let Err(err) = other.deregister() else {
        panic!("a region was deregistered while a window was bound to it");
    };
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");

    // Deallocating the windows releases the regions, then the PD goes.
    drop((mw, mw2));
    assert_clean_drops();

    // A region whose window is gone is its own again: it is given back.
    let again = p.pd.alloc_mr(64, ALL | AccessFlags::MW_BIND).unwrap();
    let mut mw3 = p.pd.alloc_mw(MwType::Type1).unwrap();
    p.y.bind_mw(&mut mw3, &again, 0..64, AccessFlags::REMOTE_WRITE, 10)
        .unwrap();
    let bound = p.scq.poll_wait(&mut wc, Some(LONG)).unwrap();
    assert_eq!(bound[0].ok().unwrap().opcode(), WcOpcode::BindMw);
    drop(mw3);
    again.deregister().unwrap();
    assert_clean_drops();
    drop((src, p, cq));
    assert_clean_drops();
}

/// A destroy that fails in a destructor during an unwind, with stderr a closed
/// pipe, neither panics nor aborts; it is still counted.
#[test]
fn failed_destroy_with_stderr_closed_does_not_panic() {
    const CHILD: &str = "IBVERBS_TEST_CLOSED_STDERR_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return closed_stderr_child();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "failed_destroy_with_stderr_closed_does_not_panic",
            // Output straight to the (closed) stderr, as outside a test.
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end: every write to the child's stderr fails with EPIPE.
    drop(child.stderr.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the child failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The child: a PD whose deallocation fails (a region made through the raw API is still
/// in it) is dropped while a panic unwinds.
fn closed_stderr_child() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let buf = Box::leak(vec![0u8; 64].into_boxed_slice());
    // SAFETY: the PD is live and `buf` is leaked, so it outlives the region, which is never
    // deregistered (the process exits).
    let raw = unsafe {
        rdma_verbs::ffi::ibv_reg_mr(pd.as_raw().as_ptr(), buf.as_mut_ptr().cast(), 64, 1)
    };
    assert!(!raw.is_null(), "ibv_reg_mr failed");
    let unwound = std::panic::catch_unwind(move || {
        let _pd = pd;
        panic!("unwinding with a PD that cannot be deallocated");
    });
    assert!(unwound.is_err());
    assert_eq!(
        rdma_verbs::drop_error::count(),
        1,
        "the failed dealloc is counted"
    );
}

/// The atomic copies write and read exactly the bytes asked for, at every
/// alignment and length around a word.
#[test]
fn region_copies_at_every_alignment() {
    let ctx = open();
    let pd = ctx.alloc_pd().unwrap();
    let mut mr = pd.alloc_mr(256, AccessFlags::LOCAL_WRITE).unwrap();
    for offset in 0..17 {
        for len in 0..41 {
            mr.write(0, &[0xee; 256]).unwrap();
            let data: Vec<u8> = (0..len).map(|i| i as u8 + 1).collect();
            mr.write(offset, &data).unwrap();
            let mut got = [0u8; 64];
            mr.read(offset, &mut got[..len]).unwrap();
            assert_eq!(&got[..len], &data[..], "offset {offset}, len {len}");
            let mut all = [0u8; 256];
            mr.read(0, &mut all).unwrap();
            assert!(all[..offset].iter().all(|&b| b == 0xee));
            assert!(all[offset + len..].iter().all(|&b| b == 0xee));
            if len > 0 {
                assert_eq!(mr.read_u8(offset + len - 1).unwrap(), len as u8);
            }
        }
    }
    assert!(mr.read_u8(256).is_err());
    assert!(mr.write(250, &[0; 7]).is_err());
    drop((mr, pd));
    assert_clean_drops();
}

/// A loop spinning on `read_u8` sees a peer's RDMA write land (the compiler does
/// not keep the byte), and `read` then sees the whole message.
#[test]
fn read_u8_sees_a_peer_write() {
    let ctx = open();
    let cq = ctx.create_cq(64, None).unwrap();
    let p = Pair::new(&ctx, &cq, &cq);
    let target = p.pd.alloc_mr(4096, ALL).unwrap();
    let mut src = p.pd.alloc_mr(4096, ALL).unwrap();
    let message: Vec<u8> = (0..4096).map(|i| (i % 251) as u8 + 1).collect();
    src.write(0, &message).unwrap();
    let sge = [src.sge(..).unwrap()];
    p.x.post_send(&mut [SendRequest::write(1, &sge, target.remote()).signaled()])
        .unwrap();
    let start = Instant::now();
    while target.read_u8(4095).unwrap() != message[4095] {
        assert!(start.elapsed() < LONG, "the write did not land within 10 s");
        std::hint::spin_loop();
    }
    let mut wc = [WorkCompletion::default()];
    p.scq.poll_wait(&mut wc, Some(LONG)).unwrap()[0]
        .ok()
        .unwrap();
    let mut got = vec![0; 4096];
    target.read(0, &mut got).unwrap();
    assert_eq!(got, message);
    drop((src, target, p, cq));
    assert_clean_drops();
}

/// The channel's descriptor is non-blocking, for event loops, and both event descriptors
/// are closed on exec and cannot be reopened through `/proc/self/fd`.
#[test]
fn channel_fd_is_nonblocking_and_the_event_fds_close_on_exec() {
    let ctx = open();
    let channel: CompletionChannel = ctx.create_comp_channel().unwrap();
    // SAFETY: only its flags are read.
    let fd = unsafe { channel.raw_fd() };
    // SAFETY: fd is the channel's open descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert!(flags >= 0 && flags & libc::O_NONBLOCK != 0);
    // Closed on exec, as the context's async fd: a program this process runs cannot read
    // events of its objects.
    // SAFETY: only their descriptor flags are read.
    let fds = unsafe { [fd, ctx.async_raw_fd()] };
    for fd in fds {
        // SAFETY: fd is open while the channel and the context live.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert!(
            flags >= 0 && flags & libc::FD_CLOEXEC != 0,
            "fd {fd}: {flags}"
        );
        // Nor does /proc reopen them (anonymous inodes), from safe code.
        let reopened = std::fs::File::open(format!("/proc/self/fd/{fd}"));
        let err = reopened.expect_err("an event fd reopened through /proc");
        assert_eq!(err.raw_os_error(), Some(libc::ENXIO), "fd {fd}: {err}");
    }
    drop((channel, ctx));
    assert_clean_drops();
}

/// Whether `fd` becomes readable within 10 s (`poll`).
fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: pfd is a valid pollfd for the duration of the call.
    (unsafe { libc::poll(&mut pfd, 1, 10_000) }) == 1
}

/// The objects of [`armed_write`], kept until the event was waited for.
type Armed = (CompletionQueue, QueuePair, MemoryRegion, ProtectionDomain);

/// A signaled RDMA write on a QP connected to itself, whose CQ (on `channel`) was armed:
/// the CQ's event is then queued on the channel's fd.
fn armed_write(ctx: &Context, channel: &CompletionChannel) -> Armed {
    let cq = ctx.create_cq(16, Some(channel)).unwrap();
    let pd = ctx.alloc_pd().unwrap();
    let qp = pd.create_qp(QpType::Rc, &cq, &cq).access(ALL).build();
    let qp = qp.unwrap();
    let me = qp.endpoint();
    let qp = qp.connect(&me, &ConnectOptions::new()).unwrap();
    let mr = pd.alloc_mr(64, ALL).unwrap();
    let sge = [mr.sge(0..8).unwrap()];
    cq.req_notify(false).unwrap();
    qp.post_send(&mut [SendRequest::write(1, &sge, mr.remote()).signaled()])
        .unwrap();
    assert_eq!(poll_one(&cq).wr_id(), 1);
    (cq, qp, mr, pd)
}

/// A shared receive queue whose limit event (`IBV_EVENT_SRQ_LIMIT_REACHED`) has been
/// raised: a limit of 4 armed over 4 posted receives, one of which a send took (the event
/// comes when fewer than the limit are left). Returns the SRQ and what must outlive it.
fn srq_past_its_limit(ctx: &Context) -> (SharedReceiveQueue, Pair, MemoryRegion) {
    let pd = ctx.alloc_pd().unwrap();
    let srq = pd.create_srq(16, 1).unwrap();
    let (scq, rcq) = (
        ctx.create_cq(8, None).unwrap(),
        ctx.create_cq(8, None).unwrap(),
    );
    let s = pd.create_qp(QpType::Rc, &scq, &scq).build().unwrap();
    let r = pd
        .create_qp(QpType::Rc, &rcq, &rcq)
        .srq(&srq)
        .build()
        .unwrap();
    let (es, er) = (s.endpoint(), r.endpoint());
    let opts = ConnectOptions::new();
    let (x, y) = (
        s.connect(&er, &opts).unwrap(),
        r.connect(&es, &opts).unwrap(),
    );
    let mr = pd.alloc_mr(64, ALL).unwrap();
    let sges: Vec<_> = (0..4)
        .map(|i| [mr.sge(i * 16..i * 16 + 16).unwrap()])
        .collect();
    let mut recvs: Vec<_> = sges.iter().map(|sge| RecvRequest::new(0, sge)).collect();
    srq.post_recv(&mut recvs).unwrap();
    srq.set_limit(4).unwrap();
    let sge = [mr.sge(0..8).unwrap()];
    x.post_send(&mut [SendRequest::send(1, &sge).signaled()])
        .unwrap();
    poll_one(&scq).ok().unwrap();
    poll_one(&rcq).ok().unwrap();
    (srq, Pair { pd, x, y, scq }, mr)
}

/// Set in the child process of the tests below.
const HANG_CHILD: &str = "IBVERBS_TEST_HANG_CHILD";

/// Reads one event (`len` bytes) from a duplicate of `fd`, as safe code could through the
/// `AsFd` / `BorrowedFd` accessors the crate had, then says so on stderr; returns it.
fn read_past_the_crate(fd: std::os::fd::RawFd, len: usize) -> Vec<u8> {
    use std::io::Read;
    assert!(readable(fd), "no event within 10 s");
    // SAFETY: fd is open (the caller's object lives); this breaks the accessor's contract
    // on purpose: the duplicate is read.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let mut file = std::fs::File::from(fd.try_clone_to_owned().unwrap());
    let mut event = vec![0; len];
    assert_eq!(file.read(&mut event).unwrap(), len);
    eprintln!("read an event past the crate; dropping");
    event
}

/// Runs `test` again in a child, which reads an event past the crate and drops its object:
/// asserts that the child is still in that drop after 5 s (it is killed then).
fn assert_drop_hangs(test: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    match child_test(test, HANG_CHILD).finish_by(deadline) {
        Err(output) => assert!(
            output.contains("read an event past the crate; dropping"),
            "the child hung elsewhere:\n{output}"
        ),
        Ok(done) => panic!("the drop returned ({}):\n{}", done.status, done.context()),
    }
}

/// Why `CompletionChannel::raw_fd` is `unsafe`, and why the channel has no `AsFd` any more
/// (issue 26: safe code duplicated it and read an event): an event read past the channel is
/// never acknowledged, and `ibv_destroy_cq` in the CQ's drop then waits for it forever.
/// In a child, killed after 5 s.
#[test]
fn an_event_read_past_the_channel_hangs_the_cq_drop() {
    if std::env::var_os(HANG_CHILD).is_none() {
        return assert_drop_hangs("an_event_read_past_the_channel_hangs_the_cq_drop");
    }
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let (cq, qp, mr, pd) = armed_write(&ctx, &channel);
    // SAFETY: broken on purpose, in this child only.
    let fd = unsafe { channel.raw_fd() };
    // struct ib_uverbs_comp_event_desc: the CQ's handle.
    let _ = read_past_the_crate(fd, 8);
    drop((qp, mr, pd));
    drop(cq);
    eprintln!("the CQ was destroyed");
}

/// The same for the context's async fd (`Context::async_fd` returned a `BorrowedFd`): an SRQ
/// event read past the context is never acknowledged, and `ibv_destroy_srq` waits forever.
#[test]
fn an_async_event_read_past_the_context_hangs_the_srq_drop() {
    if std::env::var_os(HANG_CHILD).is_none() {
        return assert_drop_hangs("an_async_event_read_past_the_context_hangs_the_srq_drop");
    }
    let ctx = open();
    let (srq, p, mr) = srq_past_its_limit(&ctx);
    // SAFETY: broken on purpose, in this child only.
    let fd = unsafe { ctx.async_raw_fd() };
    // struct ib_uverbs_async_event_desc: element, event type, reserved.
    let event = read_past_the_crate(fd, 16);
    let kind = u32::from_ne_bytes(event[8..12].try_into().unwrap());
    let limit = rdma_verbs::ffi::ibv_event_type::IBV_EVENT_SRQ_LIMIT_REACHED;
    assert_eq!(kind, limit.0, "not the SRQ's event");
    drop((p, mr));
    drop(srq);
    eprintln!("the SRQ was destroyed");
}

/// What the raw fds are for: an event loop of the caller's waits for their readiness, and
/// the crate takes the events (acknowledged), so the CQ and SRQ drop at once.
#[test]
fn the_raw_fds_wait_for_readiness_and_the_crate_takes_the_events() {
    let ctx = open();
    let channel = ctx.create_comp_channel().unwrap();
    let armed = armed_write(&ctx, &channel);
    // SAFETY: only polled; the event is taken by wait_timeout.
    let fd = unsafe { channel.raw_fd() };
    assert!(readable(fd), "no CQ event in 10 s");
    assert!(armed.0.wait_timeout(Duration::ZERO).unwrap());

    let (srq, p, mr) = srq_past_its_limit(&ctx);
    // SAFETY: only polled; the event is taken by wait_async_event.
    let fd = unsafe { ctx.async_raw_fd() };
    assert!(readable(fd), "no SRQ event in 10 s");
    let event = ctx.wait_async_event(Duration::ZERO).unwrap();
    assert_eq!(event.map(|e| e.kind), Some(AsyncEventKind::SrqLimitReached));
    drop((armed, channel, p, mr, srq, ctx));
    assert_clean_drops();
}
