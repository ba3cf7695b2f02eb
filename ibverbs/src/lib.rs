//! Safe, RAII bindings to RDMA verbs (libibverbs from rdma-core): InfiniBand, RoCE and
//! iWARP from Rust without `unsafe`.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use rdma_verbs::{AccessFlags, ConnectOptions, Context, QpType, SendRequest, WorkCompletion};
//!
//! # fn main() -> rdma_verbs::Result<()> {
//! let ctx = Context::open_first()?;
//! let pd = ctx.alloc_pd()?;
//! let cq = ctx.create_cq(16, None)?;
//! let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
//! let mut mr = pd.alloc_mr(4096, access)?;
//! mr.fill(0);
//! mr.write(0, b"hello")?;
//! // Peers may RDMA-write through the QP only if it grants that too (default: LOCAL_WRITE).
//! let qp = pd.create_qp(QpType::Rc, &cq, &cq).access(access).build()?;
//! let local = qp.endpoint(); // LID, QPN, PSN, GID: send it to the peer, receive the peer's
//! # let remote = local;
//! let qp = qp.connect(&remote, &ConnectOptions::new())?;
//! let sge = [mr.sge(0..5)?];
//! # let peer_memory = mr.remote();
//! qp.post_send(&mut [SendRequest::write(1, &sge, peer_memory).signaled()])?;
//! let mut wc = [WorkCompletion::default(); 16];
//! for done in cq.poll_until(&mut wc, 1, Some(Duration::from_secs(1)))? {
//!     done.ok()?;
//! }
//! # Ok(()) }
//! ```
//! `ibverbs/examples/rc_pingpong.rs` is a complete client/server program to copy from; it
//! talks to rdma-core's `ibv_rc_pingpong`.
//!
//! # A first program
//! - **What the peer sends** is an [`Endpoint`]: LID, QP number, PSN and [`Gid`], the four
//!   fields rdma-core's pingpong programs exchange. Everything else is a local choice:
//!   the port and GID index when the QP is built ([`QueuePairBuilder::port`],
//!   [`QueuePairBuilder::gid_index`]), the path MTU and route when it connects
//!   ([`ConnectOptions`]; the path MTU defaults to the port's active MTU).
//! - **GID indexes** are `u8` everywhere, as in `struct ibv_ah_attr`. A QP tells the one it
//!   sends from ([`QueuePair::gid_index`]); by default that is
//!   [`Context::default_gid`] (on RoCE a routable RoCE v2 entry, never the link-local
//!   entry 0). Each sender is given its GID once: a QP by its builder (`connect` sends
//!   from it), an address handle by [`ProtectionDomain::create_ah`]'s `gid_index` (`None`
//!   for the port's default); an index given is used as given, after a check against the
//!   port's table.
//! - **Errors name what failed**: a refused state change is [`Error::Transition`] (`ibv_modify_qp to
//!   RTR failed: ...`), a size over a device cap [`Error::DeviceLimit`] naming the cap
//!   (`max_cqe`, `max_srq_wr`, `max_srq_sge`), a port or GID index out of the device's
//!   range [`Error::OutOfRange`] with the valid range, all checked before the C call.
//! - **Polling**: [`CompletionQueue::poll`] takes what is there;
//!   [`CompletionQueue::poll_until`] spins until at least `n` completions and returns them
//!   (the loop around `poll` that returns its slice does not compile, E0499);
//!   [`CompletionQueue::poll_wait`] sleeps on the completion channel instead (arm, poll,
//!   wait, acknowledge, race-free). Both return the completions polled so far when their
//!   timeout passes, never dropping any.
//! - **Small helpers**: [`RecvRequest`] is `Clone` (post the same receive again),
//!   [`MemoryRegion::fill`] sets every byte, [`page_size`] is the system page size.
//!
//! # Objects
//! Each type wraps one rdma-core object, made by the verb in the table and destroyed on drop
//! by its destroy verb. An object keeps alive what it was created from, so destruction always
//! runs children first: a PD cannot be deallocated while an MR, QP, AH, SRQ or MW of it
//! exists, a CQ not while a QP uses it, a context not while anything of it lives.
//!
//! | type | C object | created by | keeps alive |
//! |---|---|---|---|
//! | [`DeviceList`] / [`Device`] | `ibv_device` | `ibv_get_device_list` | |
//! | [`Context`] | `ibv_context` | `ibv_open_device` | |
//! | [`ProtectionDomain`] | `ibv_pd` | `ibv_alloc_pd` | context |
//! | [`ThreadDomain`] | `ibv_td` | `ibv_alloc_td` | context |
//! | [`ProtectionDomain`] (a parent domain) | `ibv_pd` | `ibv_alloc_parent_domain` | its PD, its thread domain |
//! | [`MemoryRegion`] | `ibv_mr` | `ibv_reg_mr`; changed by `ibv_rereg_mr` ([`MemoryRegion::rereg`]) | PD, its memory |
//! | [`Mapping`] | `mmap` pages: anonymous, huge pages, a sealed memfd, a file | `mmap` (`munmap` on drop) | |
//! | [`DmaBuf`] | a dma-buf fd (from `udmabuf` over a sealed memfd, or another driver) | `UDMABUF_CREATE` ioctl | |
//! | [`DmaBufRegion`] | `ibv_mr` over a dma-buf | `ibv_reg_dmabuf_mr` | PD, its dma-buf |
//! | [`ImplicitOdp`] | `ibv_mr` (implicit ODP) | `ibv_reg_mr` (whole address space) | PD |
//! | [`MemoryWindow`] | `ibv_mw` | `ibv_alloc_mw` | PD, every region it was bound to |
//! | [`CompletionChannel`] | `ibv_comp_channel` | `ibv_create_comp_channel` | context |
//! | [`CompletionQueue`] | `ibv_cq` | `ibv_create_cq` | context, channel |
//! | [`ExtendedCq`] (a [`CompletionQueue`] through `Deref`) | `ibv_cq_ex` | `ibv_create_cq_ex` | context, channel |
//! | [`SharedReceiveQueue`] | `ibv_srq` | `ibv_create_srq` | PD |
//! | [`PreparedQueuePair`] / [`QueuePair`] | `ibv_qp` | `ibv_create_qp` | PD, CQs, SRQ |
//! | a multicast attachment (part of its [`QueuePair`]) | | `ibv_attach_mcast` | |
//! | [`AddressHandle`] | `ibv_ah` | `ibv_create_ah`; `ibv_create_ah_from_wc` ([`ProtectionDomain::create_ah_from_wc`]: back to a datagram's sender) | PD |
//! | `cm::EventChannel` (feature `cm`) | `rdma_event_channel` | `rdma_create_event_channel` | |
//! | `tokio::AsyncCq` (feature `tokio`) | `ibv_cq` and its channel's fd on tokio's reactor | `tokio::AsyncCq::new` | its CQ, the channel's registration |
//! | `tokio::AsyncEvents` (feature `tokio`) | the context's `async_fd` on tokio's reactor | `tokio::AsyncEvents::new` | context |
//! | `tokio::cm::AsyncCmChannel` (features `tokio`, `cm`) | `rdma_event_channel` and its fd on tokio's reactor, each id's queued events | `tokio::cm::AsyncCmChannel::new` | the channel, the registration |
//! | `tokio::cm::AsyncCmId` (features `tokio`, `cm`) | `rdma_cm_id` whose events are awaited | `AsyncCmChannel::create_id`, a `Listener`'s request | its id (destroyed on drop, also when a connect or accept future is dropped), the async channel |
//! | `tokio::AsyncQp` (feature `tokio`) | `ibv_qp` and the regions of its requests in flight | `tokio::AsyncQp::new`, `tokio::cm::AsyncCmId::async_qp` | its QP, CQ, each posted region until its completion (see the `tokio` module: cancellation), and the address handle of each UD send until it completes; a CM id whose QP it wraps keeps the table (and so the QP) alive until the id is destroyed, and clears librdmacm's pointer to the QP first |
//! | `cm::CmId` (feature `cm`) | `rdma_cm_id` | `rdma_create_id`, a connect request | its channel, its QP (made by `rdma_create_qp_ex`, destroyed before the id), its multicast joins (`rdma_join_multicast_ex`; left before the QP and the id are destroyed) |
//!
//! A UD queue pair remembers the multicast groups it joined ([`QueuePair::attach_mcast`])
//! and detaches from each (`ibv_detach_mcast`) before `ibv_destroy_qp`, so it is never
//! destroyed while attached; the QP of a CM id is attached by librdmacm when a join of the
//! id completes and detached when the id leaves the group, which it does before the QP is
//! destroyed (a QP taken out of the id takes its groups along).
//!
//! Thread and parent domains exist only where the provider has them (rxe has not:
//! [`Error::Unsupported`]); a parent domain is a [`ProtectionDomain`] that every verb
//! taking a PD accepts, deallocated (`ibv_dealloc_pd`) before the PD and thread domain it
//! was made from. [`fork_init`] and [`fork_status`] are process-wide.
//!
//! With the `cm` feature, [`Context`]s also come from a CM id (`CmId::context`): librdmacm's
//! own device context, which it keeps open while the [`Context`] lives and which is never
//! closed here; the `cm` module docs give the rules.
//!
//! Objects that are shared (context, PD, channel, SRQ, a region's registration) are
//! reference-counted handles; the count is touched when objects are created, bound and
//! dropped, never on the data path. A memory window keeps each region it was bound to
//! registered until the window is dropped (`ibv_dealloc_mw` first, then `ibv_dereg_mr`),
//! because a region cannot be deregistered while a window is bound to it. A channel may
//! serve any number of CQs; each event reaches the CQ it belongs to. Objects
//! of different contexts or PDs cannot be combined: creating a QP with a CQ of another
//! context, a CQ with another context's channel, or binding a window to another PD's region
//! fails with [`Error::Mismatch`].
//!
//! # Soundness
//! The HCA reads and writes registered memory asynchronously, and a peer with a region's
//! rkey may write into it at any time. The crate keeps that from reaching Rust's memory
//! model by the rules below (the first three; the last two keep what reaches the provider
//! within what it takes):
//!
//! 1. **Registered memory is owned by its region and freed only after deregistration.** A
//!    [`MemoryRegion`] owns its buffer (an [`AlignedBuffer`], `Vec<u8>`, `Box<[u8]>`, or any
//!    [`RegistrableMemory`]). Dropping it calls `ibv_dereg_mr` first, which revokes every
//!    lkey and rkey of the region, and frees the buffer only if that succeeded (a failed
//!    deregistration leaks it). A memory window bound to the region holds the
//!    registration (shared state the region allocates when the first window is bound), so
//!    the region is deregistered only after its last window is deallocated: dropping the
//!    region then hands the registration to the windows, and
//!    [`MemoryRegion::deregister`], which must deregister at once, fails with
//!    [`Error::InvalidArgument`] before reaching the provider. So a work request still in
//!    flight when its region is dropped fails with a protection error instead of touching
//!    freed memory, and memory can be neither freed nor reused under the HCA or a peer. An
//!    on-demand paging region ([`AccessFlags::ON_DEMAND`]) is owned the same way: its pages
//!    are not pinned, but the device may fault them in until `ibv_dereg_mr` returns. An [`ImplicitOdp`] region owns
//!    no memory and is local only (no rkey); entries under its key are made with the
//!    `unsafe` [`Sge::from_raw`]. Borrowed memory (`&mut [u8]`) is not
//!    registrable, because a leaked region (`mem::forget`) would never be deregistered.
//!
//!    Memory users already own is a [`Mapping`], which owns its pages and unmaps them on
//!    drop, so after deregistration, with the length the kernel mapped them in (whole huge
//!    pages on hugetlbfs). What a memory source adds is what other code, another process
//!    holding a file's fd above all, can do to it: a page taken away from a shared mapping
//!    is `SIGBUS` at the next access, from safe code too. So each memory source has a rule,
//!    checked before the memory is mapped or registered ([`Error::MemoryRule`] names the
//!    [`MemoryRule`] broken); the tests named are in `ibverbs/tests/verbs/`:
//!
//!    | memory source | what holds | what the crate checks | tests |
//!    |---|---|---|---|
//!    | `Vec<u8>`, `Box<[u8]>`, [`AlignedBuffer`] | owned heap memory: it does not move, and nothing else reaches it while registered (rule 2) | not empty; the access rights of every registration: remote write and atomics need `LOCAL_WRITE` (the kernel's rule), no `ZERO_BASED` (a window's right), `HUGETLB` only with `ON_DEMAND` | `memory::vec_and_box_under_write_read_and_send`, `memory::access_flag_rules_are_typed_errors` |
//!    | anonymous mmap ([`Mapping::anonymous`]) | private pages no other process reaches | not empty | `memory::anonymous_mapping_under_write_read_and_send` |
//!    | huge pages ([`Mapping::huge`]) | private `MAP_HUGETLB` pages, reserved at `mmap`, so no later fault fails | enough free huge pages ([`Error::Unavailable`]) | `memory::huge_pages_under_write_read_and_send`, `memory::huge_pages_beyond_the_reserve_are_a_typed_error` |
//!    | memfd ([`Mapping::memfd`]) | shmem sealed `F_SEAL_SHRINK \| F_SEAL_SEAL`: whoever holds its fd cannot truncate it or change the seals; a hole punched in it reads back as zeros (the HCA keeps the pinned page: rule 2) | nothing left to check: the crate makes and seals it | `memory::sealed_memfd_under_write_read_and_send_cannot_shrink`, `files::punched_hole_in_a_sealed_memfd_reads_back_zeros` |
//!    | file ([`Mapping::file`]) | as a memfd: only a shmem memfd sealed `F_SEAL_SHRINK` ([`MemoryRule::SealedShmemFile`]). Not hugetlbfs, where a punched hole is `SIGBUS` once the pool is empty, nor a regular filesystem, whose faults fail after a truncation, on `ENOSPC` or an I/O error: those only through the `unsafe` [`Mapping::file_unchecked`], whose caller promises that every page stays backed | the filesystem (`fstatfs`: tmpfs), the seals (`F_GET_SEALS`), a read-write fd, the range inside the file | `files::hugetlbfs_file_is_refused_and_a_punched_hole_is_sigbus`, `files::bad_file_mappings_are_typed_errors`, `files::sealed_file_mapping_writes_reach_the_file`, `files::hugetlbfs_file_mapping_unmaps_whole` |
//!    | dma-buf ([`DmaBufRegion`]) | no Rust memory: registered by fd and device address, which the crate never reads; a udmabuf's pages stay pinned by the dma-buf, whose fd the region keeps open | the range inside the dma-buf; no inline data from its entries, whose addresses are device addresses (the posting path's check) | `memory::dmabuf_from_udmabuf`, and the posting path's inline test |
//!    | on-demand paging ([`AccessFlags::ON_DEMAND`]) | owned like any region; the device faults pages in until `ibv_dereg_mr` returns. rxe copies a transfer to the start of the page where it starts: in a region that starts on a page boundary that is still the region | a page-aligned start, a huge-page-aligned one with `HUGETLB` ([`MemoryRule::OdpPageAligned`]); the device's ODP caps; advice ranges inside the region (prefetching writes nothing); [`ImplicitOdp`] local only, with no safe entry | `odp::odp_refuses_memory_off_the_page`, `odp::odp_read_lands_in_the_entrys_page`, `odp::advise_prefetch_and_its_bad_inputs`, `odp::implicit_odp_is_local_and_typed_where_unsupported` |
//!
//!    [`MemoryRegion::rereg`] (`ibv_rereg_mr`) keeps the rule: a new range is checked to
//!    lie inside the owned memory, new access rights against the rules of every
//!    registration, and a region a window holds cannot be changed. A provider without the
//!    verb (rdma-core's rxe) or a driver that refuses the change answers `EOPNOTSUPP`
//!    having changed nothing: [`Error::Unsupported`], and the region stays as it was. When
//!    rdma-core says any other failed call leaves the MR undefined
//!    (`IBV_REREG_MR_ERR_CMD`), the region is marked invalid ([`ReregState::Invalid`]): it
//!    refuses scatter/gather entries and further changes, keeps both PDs alive, and is
//!    deregistered on drop; whatever its keys now reach is still memory it owns.
//! 2. **Registered memory is reached only through atomic accesses, never through a
//!    reference.** The HCA or a peer may change it at any time, which a Rust reference
//!    forbids, and which would be a data race for any plain load or store. Safe access is
//!    by copy: [`MemoryRegion::read`], [`MemoryRegion::write`] and [`MemoryRegion::read_u8`]
//!    use relaxed atomic loads and stores (aligned machine words for the bulk, single bytes
//!    at the ends). From the Rust side this is race-free: all accesses are atomic, and the
//!    writes need `&mut`. A copy that overlaps a DMA or a peer's write may see or leave a
//!    mix of old and new bytes; which one is ordered by completions exactly as in C (the
//!    provider's barriers in `ibv_poll_cq`). What this does not claim: the HCA is not a
//!    Rust thread, so the language's memory model does not describe its writes; the crate
//!    treats it like another process writing shared memory byte by byte, the usual model
//!    for memory shared with hardware. While registered, the buffer (from the Rust
//!    allocator, or a `Vec` / `Box`) is never reached through a reference; its length is
//!    read once, at registration. The `unsafe` [`MemoryRegion::as_slice`] /
//!    [`MemoryRegion::as_mut_slice`] are there for callers who can prove no DMA is running
//!    and no peer or window has access; reaching the memory as a slice without them, or
//!    by indexing, does not compile (E0133, E0608: [What does not
//!    compile](#what-does-not-compile)).
//! 3. **Work requests carry only checked references.** A scatter/gather entry ([`Sge`]) is
//!    made from a region with its range checked, and borrows the region while the request is
//!    built and posted; the provider copies requests at post time, so nothing posted points
//!    into Rust memory afterwards except through the region's keys (rule 1). Remote
//!    addresses and keys are plain numbers: the remote HCA checks them, so a wrong one gives
//!    a `REM_ACCESS_ERR` completion, never memory corruption.
//! 4. **Nothing reaches the provider that the queue cannot take.** Providers trust the
//!    requests they are given: rxe and mlx5 read `wr.ud.ah` of every UD request, copy inline
//!    data after checking a 32-bit (rxe) or `int` (mlx5) total, and rxe's
//!    `ibv_wr_set_inline_data_list` never added to its total. So every request, before
//!    `ibv_post_send`, `ibv_post_recv`, `ibv_post_srq_recv` or an `ibv_wr_*` call, is checked
//!    against the queue's transport and the capabilities the provider granted at creation
//!    (cached in the queue): the operation exists on the transport (UC has no reads or
//!    atomics, UD only sends) and, in a batch, was enabled; at most `max_send_sge` /
//!    `max_recv_sge` / the SRQ's `max_sge` entries; inline data only on sends and writes and
//!    at most `max_inline_data` bytes, and only from host memory (the provider copies it
//!    with the CPU, so never from a dma-buf region's device addresses: [`DeviceMemory`]);
//!    at most 2^31 bytes in all, summed in a `u64` that cannot overflow; an atomic's result
//!    entry of 8 bytes; a UD send addressed with an address handle of the QP's PD; an
//!    atomic write only in a batch (its 8 bytes ride in the request and are copied by the
//!    provider during `ibv_wr_atomic_write`), to an 8-byte-aligned remote address. A
//!    refused request is an [`Error::Request`] naming the limit ([`WrError`]); of a list,
//!    none is posted. What is checked is derived from the request when it is built: only
//!    its constructors and flag methods write a request, each working the derived word out
//!    again.
//! 5. **No provider function is called through a null pointer.** C calls the provider's
//!    function pointers unchecked. The `rdma-verbs-sys` ports that return a status test
//!    the pointer and answer `EOPNOTSUPP` where it is null, as libibverbs's stubs for a
//!    missing operation do, and the crate reports [`Error::Unsupported`] naming the verb.
//!    The `ibv_wr_*` calls return nothing: when a QP is built, the functions a batch of it
//!    may call (of the operations enabled and on its transport, and the setters) are
//!    checked to be set, or the build fails with [`Error::Unsupported`]; a pushed request
//!    reaches the call of its own opcode only, by a dispatch exhaustive over [`WrOpcode`]
//!    ([`WrError::NotInBatch`] for an opcode without one).
//!
//! Bytes a peer chooses reach libibverbs in one place: the GRH of a received datagram, of
//! which `ibv_init_ah_from_wc` reads 40 bytes through a pointer.
//! [`Context::init_ah_from_wc`] and [`ProtectionDomain::create_ah_from_wc`] refuse a slice
//! of fewer than 40 bytes and hand libibverbs an aligned copy of the first 40, never the
//! slice; they check the header first, so a header of neither kind, a multicast or a zero
//! destination GID (which libibverbs's table search would match to an empty entry) is a
//! typed error ([`AhFromWcError`]) and never reaches it
//! (`ah_from_wc::crafted_and_garbage_headers_are_typed_errors_or_a_handle`: 2000 garbage
//! headers and crafted ones on the device).
//!
//! Destructors never panic: a failed destroy call is counted and reported on stderr with
//! write errors ignored ([`drop_error`]), so a destructor running during an unwind cannot
//! abort the process. Completion events are acknowledged (`ibv_ack_cq_events`) by the
//! thread that reads them, at once, so `ibv_destroy_cq` never waits forever for one.
//!
//! No completion event is lost on a channel that several CQs share: the channel reads its
//! fd with one reader at a time (under a lock), counts each event for the CQ it belongs to
//! and acknowledges it exactly once, and a CQ's wait takes its own events only.
//! [`CompletionQueue::poll_wait`] is the race-free arm / poll / wait loop;
//! [`CompletionQueue::wait`] blocks until an event of its CQ comes, and
//! [`CompletionQueue::wait_timeout`] until then or the timeout (true if an event was taken);
//! the channel's fd is always non-blocking, so neither depends on a blocking mode.
//!
//! Descriptors, callbacks and futures: an event the crate must acknowledge is read only by
//! the crate, and no code of the caller's or of the async runtime (a waker, a buffer's
//! `Drop`) runs under a lock of the crate or with its state half updated. Row by row:
//!
//! | surface | what holds (dropped mid-way, forgotten, panicking) | what the crate checks |
//! |---|---|---|
//! | [`CompletionChannel`]'s fd | every event read is counted for its CQ and acknowledged by the reading thread under the channel's lock, before any waker runs, so `ibv_destroy_cq` never waits for one | no safe accessor: no `AsFd` / `AsRawFd` (a borrowed fd can be duplicated and read); [`CompletionChannel::raw_fd`] is `unsafe` (poll it, never read it); always non-blocking |
//! | the context's async fd | each event is copied and acknowledged (`ibv_ack_async_event`) before it is returned, so no destroy verb waits for one | no safe accessor; [`Context::async_raw_fd`] is `unsafe`; one `tokio::AsyncEvents` per context (the reactor refuses a second, `EEXIST`) |
//! | `cm::EventChannel`'s fd (feature `cm`) | each event is copied and acknowledged (`rdma_ack_cm_event`) before it is returned, so `rdma_destroy_id` never waits | no safe accessor; `EventChannel::raw_fd` is `unsafe` |
//! | the same descriptors reached another way | `/proc/self/fd/N` does not reopen the verbs ones (anonymous inodes: `ENXIO`) and reopens rdma_cm's as a new channel with no events; all three are closed on exec (`FD_CLOEXEC`), so a program the process runs has none of them | tested on the device: the flags of all three, `ENXIO` for the verbs ones |
//! | wakers (feature `tokio`: the runtime's callbacks) | called only after the crate's locks are released and its state is consistent (events acknowledged, a whole batch of completions handed to their ops); one that panics: the others are still woken, then the panic goes on in the task that woke it; one that polls a future of the crate again finds nothing locked; dropped outside the locks too | |
//! | a buffer's `Drop` (a region the `tokio::AsyncQp` table frees) | runs after the table's lock is released and its wakers were woken | |
//! | `cm::CmEvent::expect_kind`'s closure | runs on an acknowledged copy; a panic drops the event (a connect request's new id is destroyed) | |
//! | `tokio::PollCq`, `tokio::CompletionStream` | dropped: the task's waker leaves the channel; the CQ stays armed and an event that came stays counted for the CQ's next poll; forgotten: the waker stays until the CQ's next poll or drop (one spurious wake at most); a stream dropped with completions polled but not yielded loses them (they were the caller's) | |
//! | `tokio::AsyncEvents` | an event is read only when it is returned: a dropped `next_event` loses none; forgotten: the registration and a context handle leak | |
//! | the current tokio runtime (every `tokio` type that registers an fd: `AsyncCq`, `AsyncEvents`, `cm::AsyncCmChannel`, a stream's keepalive timer) | none made, nothing registered, when refused | a runtime is current and has its I/O driver: tokio's registration panics without one, and the crate catches that panic (`Error::InvalidArgument`; with `panic = "abort"` tokio's panic aborts) |
//! | `tokio::Op`, `tokio::Settle` | dropped: the region stays in the QP's table until its completion (or the QP's destruction); forgotten: the table, the QP and the regions leak, nothing is freed early | `tokio::AsyncQp::new` refuses a QP on another CQ, a CQ another QP uses, a QP on an SRQ, and a QP on which anything was posted: every completion on the CQ is the table's, under ids it assigned |
//! | `tokio::cm::AsyncCmId::connect`, `tokio::cm::ConnectRequest::accept` | own the id: dropped, the id is destroyed (nothing half-connected); forgotten, the id and its queue of events leak | the id is never handed out mutably (no `id_mut`: a swapped id would wait on another channel's events) |
//! | `tokio::cm::AsyncCmId::join_multicast`, `join_multicast_ex` | dropped before the join's event: the id leaves the group (the join is cancelled); forgotten: the join stays the id's, left when the id is dropped | the group is a multicast address, the id a bound UD one, not joined to it yet (before librdmacm) |
//! | `tokio::stream::RdmaStream` and its `poll_read` / `poll_write` / `poll_flush` / `poll_shutdown` (features `tokio` and `cm`) | the rings belong to the stream, which drops its id (destroying the QP: the HCA is done with both rings) before deregistering them: dropped mid-transfer, nothing the device may touch is freed; forgotten, the QP, id and rings leak; a read or write dropped at any await loses nothing (each poll copies or returns `Pending` having taken nothing) | every message of the peer is checked before it is used (a header of unknown kind, credits over the peer's slots, more data messages than this side's slots, data after the end, a hello out of range): `InvalidData`, and the QP goes to the error state; a message longer than a slot fails in the HCA; nothing reaches memory outside the rings (`stream` module docs) |
//! | `tokio::cm::AsyncCmId::resolve`, `next_event`, `disconnect`, `tokio::cm::Listener` | borrow the id: dropped or forgotten, the id's events stay queued for its next future; a dropped listener destroys the requests still queued for it (the peers see a reject) | each id's `cm::IdHandle` is its own (a counter, never an address), so no event or handle of a dropped id matches a new one |
//!
//! Queue pairs are typed by state: [`ProtectionDomain::create_qp`] builds a
//! [`PreparedQueuePair`] in INIT, which can post receives and tell its [`Endpoint`] but has
//! no `post_send`; [`PreparedQueuePair::connect`] (RC, UC) or
//! [`PreparedQueuePair::ready`] (UD) gives the [`QueuePair`] that sends. Its state is RTS,
//! or SQE / ERROR once a request failed or after [`QueuePair::to_error`]; the raw
//! [`QueuePair::modify`], which could move it anywhere, is `unsafe`.
//!
//! Between `ibv_wr_start` and its `ibv_wr_complete` / `ibv_wr_abort` a provider holds the
//! send queue's lock, so a [`WrBatch`] exists only inside the closure of
//! [`QueuePair::batch`], owned by the crate, which ends it on every way out (completed on
//! `Ok`, aborted on an error or a panic).
//!
//! Between a successful `ibv_start_poll` and `ibv_end_poll` a provider holds the CQ's lock
//! (rxe and mlx5 take a spinlock), so a [`PollSession`] exists only inside the closure of
//! [`ExtendedCq::poll_session`], which takes the CQ by `&mut` (no other poll of it, plain
//! `ibv_poll_cq` included, can run meanwhile). The crate's frame owns the session and ends
//! it on every way out: when the closure returns `Ok` or an error, and when it panics (the
//! session's `Drop`, during the unwind). `ibv_end_poll` is called exactly when
//! `ibv_start_poll` succeeded, whether or not `ibv_next_poll` then ran dry; when
//! `ibv_start_poll` finds nothing (`ENOENT`) or fails, the provider has already released
//! the lock and nothing is called. (On rxe a session never calls `ibv_next_poll`, whose
//! `ENOENT` followed by `ibv_end_poll` makes rdma-core's rxe show stale entries as new
//! completions: it steps by `ibv_end_poll` + `ibv_start_poll` instead.) A completion
//! ([`ExCompletion`]) borrows the session, so
//! it cannot be read once the session moved on (`ibv_next_poll`) or closed; each
//! `ibv_wc_read_*` accessor is called only for a field the CQ was created with, whose reader
//! the provider was checked to have set (a field it was not created with reads as `None`).
//! Resizing a CQ ([`CompletionQueue::resize`]) takes `&mut` too, since the provider swaps the
//! queue's buffer; an [`ExtendedCq`] gives `&CompletionQueue` only, so its CQ cannot be
//! swapped for one without the extended operations.
//!
//! What each hazard of the posting path meets:
//!
//! | hazard | guarded by | why that way |
//! |---|---|---|
//! | an atomic on an iWARP QP (iWARP has none; a provider may read the request's atomic fields as something else), a UD or UC QP or a hand-made connection on iWARP | typed error: [`WrError::Iwarp`], [`Error::Iwarp`] naming the [`IwarpRule`] | the transport is the device's, known at run time; one request type serves all devices |
//! | a UD send without an address handle (null `wr.ud.ah`), an RDMA or atomic request on a UD QP (a peer's address read as `wr.ud.ah`) | typed error: [`WrError::MissingAddressHandle`], [`WrError::OpcodeNotSupported`] | the transport is a run-time property of a [`QueuePair`]; one request type serves all transports |
//! | inline data over `max_inline_data`, more entries than `max_send_sge`, totals that wrap | typed error: [`WrError::InlineTooLarge`], [`WrError::TooManySge`], [`WrError::MessageTooLong`], [`WrError::InlineNotSupported`] | the limits are what the provider granted at run time |
//! | a forgotten batch (`mem::forget(qp.batch()?)`) leaving the send queue locked | type system: the batch lives in a closure; no call returns one (E0061), and it cannot be moved out (E0507) or kept (E0521) | forgetting needs a value the caller owns; the caller only ever gets `&mut WrBatch` |
//! | a [`BatchRequest`] kept past its batch, or pushed after its address handle dropped | type system: it borrows the batch and the handle (E0521, E0505); one never pushed adds nothing | it is checked in full when pushed (the exact check of a [`SendRequest`]), so nothing about it is trusted before |
//! | an atomic write through `ibv_post_send`, whose request has no place for its data | typed error: [`WrError::BatchOnly`]; a misaligned one [`WrError::Misaligned`] | only `ibv_wr_atomic_write` takes the value, and the check is the one every request passes |
//! | a QP of a parent domain with a thread domain posted from two threads at once (the provider may leave out its locks) | `unsafe`: [`ProtectionDomain::alloc_parent_domain_with_td`], with the one-thread-at-a-time contract | the queue types are `Sync`; the promise is the caller's |
//! | a raw `modify` moving an RTS-typed QP to RESET | type system: [`QueuePair::modify`] is `unsafe` (E0133), with its contract | the typed transitions cover the safe uses; raw attributes can break any promise |
//! | a request whose requirement word went stale (a window bind built as a send, then given the bind's opcode) passing a batch's fast check to its catch-all call (`ibv_wr_atomic_fetch_add`, null on rxe) | privacy: only the constructors write a request, with its word; exhaustive dispatch, typed error [`WrError::NotInBatch`] | the word is what the fast check trusts, so nothing else may write what it is derived from |
//! | a provider function left null (`ibv_wr_*` of an operation not enabled, an ops-table slot) | checked: [`Error::Unsupported`] from the ports' `EOPNOTSUPP`, or when the QP is built for the `ibv_wr_*` a batch may call | one compare per call where the call returns a status; none on the batch's path |
//! | inline data from a dma-buf region's entries, device addresses the provider's CPU copy would read as pointers | type: its entries are `Sge<'_, DeviceMemory>`, whose requests carry that in their word; typed error [`WrError::InlineFromDeviceMemory`] | entries of both kinds go in any request; only inline needs host memory, and the type costs nothing on the data path |
//! | an atomic's result entry of other than 8 bytes | typed error: [`WrError::AtomicResultSize`] | providers refuse it with a bare `EINVAL` |
//!
//! What this costs on the data path: each request carries a word of requirement bits that
//! its constructor worked out (operation, inline or not, entry count, inline length, a
//! total over 2^31), and posting tests it, or the OR of a list's words, against one word of
//! what the queue does not grant; only a request that misses (16 entries or more, long
//! inline data, any UD send) is checked field by field, and the reason is worked out only
//! for a refused one. Posting then links the `next` pointers and calls the provider, and
//! returns a one-word [`PostError`] result; polling writes completions into the caller's buffer, which
//! [`WorkCompletion`] shares the layout of. Neither allocates or touches a reference count.
//! Copies through [`MemoryRegion::read`] / [`MemoryRegion::write`] run a word-at-a-time
//! atomic copy, which the compiler does not vectorize (so slower than `memcpy` on large
//! buffers); the `unsafe` slice accessors avoid it.
//!
//! Why the transport is checked at run time and not typed (`QueuePair<Rc>`, so that an RDMA
//! write on UD would not compile): the check is already free where it matters, since the
//! transport's forbidden operations are bits of the queue's denied word, tested with the
//! rest in one `AND` per post (or per list); a type parameter would take no instruction off
//! that path. It would split every request constructor, batch, async operation and the
//! rdma_cm QP by transport, and a request is built before the QP it goes to is known
//! (perftest's loops pick the QP at run time), so the error would move to the conversion
//! instead of going away. What the types do carry is what a run-time check cannot make
//! free or could forget: the QP's state ([`PreparedQueuePair`] has no `post_send`), the
//! open batch and poll session (closures), and the memory behind an entry
//! (`Sge<'_, DeviceMemory>`).
//!
//! The raw path stays open: every verbs object gives its C object through [`AsRaw`] (the
//! one escape hatch, with the rules its use must keep), and [`ffi`] is the complete
//! `rdma-verbs-sys` binding, including Rust ports of the `static inline` verbs.
//!
//! # What does not compile
//! The borrow and type rules above are checked by the compiler. A region cannot be dropped
//! while a scatter/gather entry of it is alive, so nothing posted points at freed memory:
//! ```compile_fail,E0505
//! # fn f(pd: rdma_verbs::ProtectionDomain, qp: rdma_verbs::QueuePair, peer: rdma_verbs::RemoteMemory) -> rdma_verbs::Result<()> {
//! let mr = pd.alloc_mr(64, rdma_verbs::AccessFlags::LOCAL_WRITE)?;
//! let sge = [mr.sge(..)?];
//! drop(mr);
//! qp.post_send(&mut [rdma_verbs::SendRequest::write(1, &sge, peer)])?;
//! # Ok(()) }
//! ```
//! A queue pair that is not connected has no `post_send`:
//! ```compile_fail,E0599
//! # fn f(pd: rdma_verbs::ProtectionDomain, cq: rdma_verbs::CompletionQueue, mr: rdma_verbs::MemoryRegion) -> rdma_verbs::Result<()> {
//! let qp = pd.create_qp(rdma_verbs::QpType::Rc, &cq, &cq).build()?;
//! let sge = [mr.sge(..)?];
//! qp.post_send(&mut [rdma_verbs::SendRequest::send(1, &sge)])?;
//! # Ok(()) }
//! ```
//! A batch cannot be kept past its closure, which ends it (nor can a poll session):
//! ```compile_fail,E0521
//! # fn f(mut qp: rdma_verbs::QueuePair) -> rdma_verbs::Result<()> {
//! let mut kept = None;
//! qp.batch(|batch| {
//!     kept = Some(batch);
//!     Ok(())
//! })
//! # }
//! ```
//! The descriptors whose events the crate acknowledges are not reachable from safe code:
//! ```compile_fail,E0599
//! # fn f(channel: rdma_verbs::CompletionChannel) {
//! use std::os::fd::AsFd;
//! let fd = channel.as_fd().try_clone_to_owned();
//! # }
//! ```
//! These and the other programs the compiler must reject are the cases of
//! `ibverbs/tests/compile_fail/`, one file each, saying why it must not compile, with the
//! error it must give (checked with `trybuild` by `cargo test`): a region written while an
//! entry of it is alive; a request outliving its scatter/gather list or its address handle;
//! a batch or poll session returned by a call, moved out of its reference, kept or swapped;
//! a completion kept past its session or read after the session moved on; another poll of
//! the CQ while a session is open; the polling loop that returns the slice of
//! [`CompletionQueue::poll`]; [`QueuePair::modify`], [`MemoryRegion::as_slice`] and the raw
//! descriptor numbers without `unsafe`; borrowed memory registered; a region indexed; a
//! descriptor through `AsRawFd` or a public `async_fd`, `cm::EventChannel`'s through `AsFd`;
//! and a `&mut` to a `tokio::cm::AsyncCmId`'s id.
//!
//! # Errors
//! Every fallible call returns [`Error`], which names the verb and carries the errno (a
//! failed state change also names the state, [`Error::Transition`]), or names the argument
//! that was out of range and the limit it broke ([`Error::OutOfRange`],
//! [`Error::DeviceLimit`]), or (for work requests refused before posting) the limit a
//! request broke. Work completions carry their status
//! ([`WcStatus`]); [`WorkCompletion::ok`] turns a failed one into [`Error::Completion`].
//! Destroy calls cannot return errors from `Drop`; a failure is written to stderr (a write
//! error is ignored) and counted by [`drop_error::count`], which the test suite asserts to
//! stay 0.
//!
//! # Stability
//! The crate follows semantic versioning; before 1.0 a breaking change raises the minor
//! version (0.3 to 0.4) and is listed, with what to write instead, in `CHANGELOG.md`.
//! Covered: every public item's name, path and signature, the types' auto traits (`Send`,
//! `Sync`), what a call checks and the error it gives. Not covered: the `ffi` re-export
//! (rdma-core's C API, whatever the installed headers say), the text of error messages,
//! `Debug` output, and items marked `#[doc(hidden)]`.
//!
//! The inputs are built so that they can grow in a minor version:
//! - **Settings** ([`ConnectOptions`], [`Route`], [`QueuePairBuilder`],
//!   [`AddressHandleBuilder`], `cm::ConnParam`, `cm::AddrHints`, `stream::StreamConfig`)
//!   have private fields, a constructor with the defaults (`new`, or the call that starts
//!   the builder) and one chained setter per setting, named after the C field it sets.
//!   A minor version may add a setting, with a default that keeps what code written before
//!   it did.
//! - **Records**, the values a peer sends or a query returns and that go back in
//!   ([`Endpoint`], [`RemoteMemory`], [`AhAttr`], [`GlobalRoute`], `cm::IbAddr`), have
//!   public fields to read and are `#[non_exhaustive]`: made with `new` (the required
//!   values) and `with_*` setters for the rest. A minor version may add a field, which
//!   `new` fills with a default.
//! - **Outputs** (query results, events) are `#[non_exhaustive]` with public fields: a
//!   minor version may add a field. Enums of values the C library may extend are
//!   `#[non_exhaustive]` too: a minor version may add a variant.
//!
//! Outside the crate a struct literal of any of them does not compile (checked by
//! `tests/compile_fail/`), so none of these additions breaks a caller.
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]
// docs.rs (nightly, `--cfg docsrs`): badges naming the feature each gated item needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub use rdma_verbs_sys as ffi;

mod ah;
#[cfg(feature = "cm")]
#[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
pub mod cm;
mod context;
mod cq;
mod device;
pub mod drop_error;
mod error;
mod fork;
mod mr;
mod mw;
mod pd;
mod qp;
mod raw;
mod route;
mod srq;
#[cfg(feature = "cm")]
#[cfg_attr(docsrs, doc(cfg(feature = "cm")))]
pub mod stream;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
mod types;
mod wake;
mod wr;

pub use ah::attr::{AhAttr, GlobalRoute};
pub use ah::from_wc::{Completion, GRH_LEN};
pub use ah::{AddressHandle, AddressHandleBuilder};
pub use context::async_event::{AsyncEvent, AsyncEventKind, EventSource, ObjectId};
pub use context::device_attr::{
    AtomicCap, CqModerationCaps, DeviceAttr, DeviceCapFlags, OdpCaps, OdpGeneralCaps,
    OdpTransportCaps, PacketPacingCaps, PciAtomicCaps, RawPacketCaps, RssCaps, TmCaps, TsoCaps,
};
pub use context::gid::GidEntry;
pub use context::port::{
    LinkLayer, Mtu, PhysState, PortAttr, PortCapFlags, PortCapFlags2, PortState, Speed, Width,
};
pub use context::Context;
pub use cq::channel::CompletionChannel;
pub use cq::ex::{ExCompletion, ExtendedCq, PollSession, WcFields};
pub use cq::{CompletionQueue, WorkCompletion};
pub use device::{Device, DeviceList, NodeType, Transport};
pub use error::{AhFromWcError, Error, IwarpRule, Result, WrError};
pub use fork::{fork_init, fork_status, ForkStatus};
pub use mr::dmabuf::{DmaBuf, DmaBufRegion};
pub use mr::mapping::{huge_page_size, Mapping, MappingKind};
pub use mr::odp::{Advice, ImplicitOdp};
pub use mr::rereg::Rereg;
pub use mr::{page_size, AlignedBuffer, MemoryRegion, RegistrableMemory};
pub use mw::{MemoryWindow, MwType};
pub use pd::domain::ThreadDomain;
pub use pd::ProtectionDomain;
pub use qp::attr::QpAttributes;
pub use qp::create_flags::QpCreateFlags;
pub use qp::ex::{BatchRequest, WrBatch};
pub use qp::mcast::MULTICAST_QPN;
pub use qp::{ConnectOptions, PreparedQueuePair, QueuePair, QueuePairBuilder, DEFAULT_QKEY};
pub use raw::AsRaw;
pub use route::{Endpoint, Route};
pub use srq::{SharedReceiveQueue, SrqAttributes};
pub use types::{
    AccessFlags, Gid, GidType, MemoryRule, QpState, QpType, ReregState, SendOps, WcOpcode,
    WcStatus, WrOpcode,
};
pub use wr::post_error::PostError;
pub use wr::{DeviceMemory, HostMemory, RecvRequest, RemoteMemory, SendRequest, Sge, SgeMemory};
