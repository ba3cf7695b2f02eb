//! Work requests: `struct ibv_sge`, `struct ibv_send_wr` and `struct ibv_recv_wr`.
//!
//! A request is the C struct and the word of requirement bits its constructor works out
//! ([`limits`](crate::limits)), so posting a list costs one check of the OR of those words
//! against the queue's, linking the `next` pointers and one call into the provider. The
//! word is derived from the struct, so only this module writes either: every constructor
//! and flag method that changes what the word depends on (operation, list, inline) works it
//! out again, and the rest of the crate reads the struct only.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;

use crate::ah::AddressHandle;
use crate::error::{Error, Result, WrError};
use crate::ffi;
use crate::limits::{inline_need, recv_need, send_need, DEVICE_MEMORY};
use crate::opcode::WrOpcode;
use crate::post_error::PostError;

/// Where the memory of a scatter/gather entry is: [`HostMemory`] or [`DeviceMemory`].
///
/// Sealed: the two are all there is. Requests take entries of either; what tells them apart
/// is whether the CPU can read the entry's addresses, which inline data needs.
pub trait SgeMemory: sealed::Memory + Copy + Send + Sync + 'static {}

mod sealed {
    /// What a request's requirement word carries for the memory of its entries.
    pub trait Memory {
        /// 0, or [`DEVICE_MEMORY`](crate::limits::DEVICE_MEMORY).
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
/// device address with the CPU ([`WrError::InlineFromDeviceMemory`]).
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
/// region for `'a`. A list of entries is a slice of one kind: an empty one is written
/// `&[] as &[Sge]` (a host list) where nothing else tells the kind.
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
    /// region's device address space).
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

/// The entry an empty list points at.
static NO_SGE: ffi::ibv_sge = ffi::ibv_sge {
    addr: 0,
    length: 0,
    lkey: 0,
};

/// The `sg_list` of a request over `sges`: never dangling, so that the first entry's
/// length can be read without looking at the count (an empty list points at [`NO_SGE`],
/// of length 0). Providers only read the list.
#[inline]
fn sg_list<M: SgeMemory>(sges: &[Sge<'_, M>]) -> *mut ffi::ibv_sge {
    if sges.is_empty() {
        ptr::addr_of!(NO_SGE).cast_mut()
    } else {
        sges.as_ptr().cast_mut().cast()
    }
}

/// Memory of a peer: what it sends so that RDMA reads, writes and atomics can target it
/// (`serde` serialisable with the `serde` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RemoteMemory {
    /// Start address in the peer's address space (or 0 for zero-based regions).
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// The peer's remote key.
    pub rkey: u32,
}

impl RemoteMemory {
    /// The sub-range `offset..offset + len`, checked against this range and, as the
    /// numbers come from a peer, against the end of the address space.
    pub fn slice(&self, offset: u64, len: u64) -> Result<RemoteMemory> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => {
                let addr = self
                    .addr
                    .checked_add(offset)
                    .ok_or_else(|| Error::InvalidArgument {
                        what: "remote range",
                        reason: format!(
                            "{:#x} + {offset} is past the end of the address space",
                            self.addr
                        ),
                    })?;
                Ok(RemoteMemory {
                    addr,
                    len,
                    rkey: self.rkey,
                })
            }
            _ => Err(Error::OutOfRange {
                what: "remote range end",
                value: offset.saturating_add(len),
                min: 0,
                max: self.len,
            }),
        }
    }
}

/// A send queue work request (`struct ibv_send_wr`).
///
/// Build one with a constructor per operation, then add flags:
/// `SendRequest::write(1, &sges, remote).signaled()`.
#[repr(C)]
pub struct SendRequest<'a> {
    /// First, so that a pointer to the request is one to its `ibv_send_wr`.
    raw: ffi::ibv_send_wr,
    /// What the request needs of a queue pair ([`limits`](crate::limits)).
    need: u64,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> SendRequest<'a> {
    /// The request of `opcode` over `sges`, and its word: the one place both are made.
    #[inline]
    fn new<M: SgeMemory>(wr_id: u64, opcode: ffi::ibv_wr_opcode, sges: &'a [Sge<'a, M>]) -> Self {
        let mut raw = ffi::ibv_send_wr {
            wr_id,
            opcode,
            ..Default::default()
        };
        raw.sg_list = sg_list(sges);
        // A list longer than i32::MAX cannot be posted; posting refuses the clamp, which is
        // more than any queue's max_send_sge.
        raw.num_sge = i32::try_from(sges.len()).unwrap_or(i32::MAX);
        SendRequest {
            need: send_need(opcode, raw.sg_list, raw.num_sge as u32) | M::NEED,
            raw,
            _borrows: PhantomData,
        }
    }

    /// A send (`IBV_WR_SEND`): the data lands in the peer's next receive.
    #[inline]
    pub fn send<M: SgeMemory>(wr_id: u64, sges: &'a [Sge<'a, M>]) -> Self {
        Self::new(wr_id, ffi::ibv_wr_opcode::IBV_WR_SEND, sges)
    }

    /// A send with 32-bit immediate data (`IBV_WR_SEND_WITH_IMM`), given in host order.
    #[inline]
    pub fn send_with_imm<M: SgeMemory>(wr_id: u64, sges: &'a [Sge<'a, M>], imm: u32) -> Self {
        let mut wr = Self::new(wr_id, ffi::ibv_wr_opcode::IBV_WR_SEND_WITH_IMM, sges);
        wr.raw.__bindgen_anon_1.imm_data = imm.to_be();
        wr
    }

    #[inline]
    fn rdma<M: SgeMemory>(
        wr_id: u64,
        opcode: ffi::ibv_wr_opcode,
        sges: &'a [Sge<'a, M>],
        remote: RemoteMemory,
    ) -> Self {
        let mut wr = Self::new(wr_id, opcode, sges);
        wr.raw.wr.rdma = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_1 {
            remote_addr: remote.addr,
            rkey: remote.rkey,
        };
        wr
    }

    /// An RDMA write (`IBV_WR_RDMA_WRITE`) of the SGEs to `remote.addr`.
    #[inline]
    pub fn write<M: SgeMemory>(wr_id: u64, sges: &'a [Sge<'a, M>], remote: RemoteMemory) -> Self {
        Self::rdma(wr_id, ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE, sges, remote)
    }

    /// An RDMA write with immediate data (`IBV_WR_RDMA_WRITE_WITH_IMM`), which also
    /// consumes a receive at the peer.
    #[inline]
    pub fn write_with_imm<M: SgeMemory>(
        wr_id: u64,
        sges: &'a [Sge<'a, M>],
        remote: RemoteMemory,
        imm: u32,
    ) -> Self {
        let mut wr = Self::rdma(
            wr_id,
            ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE_WITH_IMM,
            sges,
            remote,
        );
        wr.raw.__bindgen_anon_1.imm_data = imm.to_be();
        wr
    }

    /// An RDMA read (`IBV_WR_RDMA_READ`) from `remote.addr` into the SGEs.
    #[inline]
    pub fn read<M: SgeMemory>(wr_id: u64, sges: &'a [Sge<'a, M>], remote: RemoteMemory) -> Self {
        Self::rdma(wr_id, ffi::ibv_wr_opcode::IBV_WR_RDMA_READ, sges, remote)
    }

    #[inline]
    fn atomic<M: SgeMemory>(
        wr_id: u64,
        opcode: ffi::ibv_wr_opcode,
        result: &'a Sge<'a, M>,
        remote: RemoteMemory,
        compare_add: u64,
        swap: u64,
    ) -> Self {
        let mut wr = Self::new(wr_id, opcode, std::slice::from_ref(result));
        wr.raw.wr.atomic = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_2 {
            remote_addr: remote.addr,
            compare_add,
            swap,
            rkey: remote.rkey,
        };
        wr
    }

    /// An atomic compare-and-swap (`IBV_WR_ATOMIC_CMP_AND_SWP`) of the 8 bytes at
    /// `remote.addr`; the original value lands in `result`, which must be 8 bytes (posting
    /// refuses another length: [`WrError::AtomicResultSize`](crate::WrError)).
    #[inline]
    pub fn compare_swap<M: SgeMemory>(
        wr_id: u64,
        result: &'a Sge<'a, M>,
        remote: RemoteMemory,
        compare: u64,
        swap: u64,
    ) -> Self {
        Self::atomic(
            wr_id,
            ffi::ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP,
            result,
            remote,
            compare,
            swap,
        )
    }

    /// An atomic fetch-and-add (`IBV_WR_ATOMIC_FETCH_AND_ADD`) on the 8 bytes at
    /// `remote.addr`; the original value lands in `result`, which must be 8 bytes (as for
    /// [`compare_swap`](Self::compare_swap)).
    #[inline]
    pub fn fetch_add<M: SgeMemory>(
        wr_id: u64,
        result: &'a Sge<'a, M>,
        remote: RemoteMemory,
        add: u64,
    ) -> Self {
        Self::atomic(
            wr_id,
            ffi::ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD,
            result,
            remote,
            add,
            0,
        )
    }

    /// An atomic write (`IBV_WR_ATOMIC_WRITE`, posted by `ibv_wr_atomic_write`) of `value`
    /// to the 8 bytes at `remote.addr`, which must be 8-byte aligned: the peer sees all 8
    /// bytes change at once. Only a [`WrBatch`](crate::WrBatch) of an RC QP built with
    /// [`SendOps::ATOMIC_WRITE`](crate::SendOps::ATOMIC_WRITE) posts it; the peer's QP
    /// and region need `REMOTE_WRITE`.
    #[inline]
    pub fn atomic_write(wr_id: u64, remote: RemoteMemory, value: [u8; 8]) -> Self {
        let mut wr = Self::new(wr_id, ffi::ibv_wr_opcode::IBV_WR_ATOMIC_WRITE, NO_ENTRIES);
        // The value rides in `compare_add`, which WrBatch::push hands to the provider as
        // the 8 bytes to write.
        wr.raw.wr.atomic = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_2 {
            remote_addr: remote.addr,
            compare_add: u64::from_ne_bytes(value),
            swap: 0,
            rkey: remote.rkey,
        };
        wr
    }

    /// A type 2 memory window bind (`IBV_WR_BIND_MW`) of `bind`, which names a window and
    /// a region (checked by [`SendRequest::bind_mw`], its maker). No list.
    pub(crate) fn bind(wr_id: u64, bind: ffi::ibv_send_wr__bindgen_ty_4__bindgen_ty_1) -> Self {
        let mut wr = Self::new(wr_id, ffi::ibv_wr_opcode::IBV_WR_BIND_MW, NO_ENTRIES);
        wr.raw.__bindgen_anon_2.bind_mw = bind;
        wr
    }

    #[inline]
    fn flag(mut self, flag: ffi::ibv_send_flags) -> Self {
        self.raw.send_flags |= flag.0;
        self
    }

    /// Asks for a completion (`IBV_SEND_SIGNALED`); without it, only errors complete when
    /// the QP was created with `sq_sig_all` off.
    #[inline]
    pub fn signaled(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_SIGNALED)
    }

    /// Sends the data inline in the work queue entry (`IBV_SEND_INLINE`): sends and RDMA
    /// writes of at most the QP's `max_inline_data` bytes from host memory (posting checks
    /// all three; the CPU copies the data, so entries of [`DeviceMemory`] are refused).
    #[inline]
    pub fn inline(mut self) -> Self {
        let inline = ffi::ibv_send_flags::IBV_SEND_INLINE;
        if self.raw.send_flags & inline.0 == 0 {
            self.need = inline_need(self.need, self.raw.sg_list, self.raw.num_sge as u32);
        }
        self.flag(inline)
    }

    /// Marks the message solicited (`IBV_SEND_SOLICITED`).
    #[inline]
    pub fn solicited(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_SOLICITED)
    }

    /// Waits for earlier reads and atomics before this request (`IBV_SEND_FENCE`).
    #[inline]
    pub fn fence(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_FENCE)
    }

    /// Addresses a UD send: the address handle, remote QP number and Q_Key. A send on a
    /// UD QP needs it (posting checks that it was called, with a handle of the QP's PD);
    /// RC and UC QPs ignore it on sends, and on RDMA or atomic requests, which are not for
    /// UD QPs, it overwrites the remote address and key.
    #[inline]
    pub fn ud(mut self, ah: &'a AddressHandle, remote_qpn: u32, remote_qkey: u32) -> Self {
        self.raw.wr.ud = ffi::ibv_send_wr__bindgen_ty_2__bindgen_ty_3 {
            ah: ah.as_raw(),
            remote_qpn,
            remote_qkey,
        };
        self
    }

    /// The caller's identifier, returned in the completion.
    pub fn wr_id(&self) -> u64 {
        self.raw.wr_id
    }

    /// The operation.
    pub fn opcode(&self) -> WrOpcode {
        WrOpcode::from_raw(self.raw.opcode)
    }

    /// The raw request. Its `next` is what the last post of it wrote (posting sets it).
    pub fn as_raw(&self) -> &ffi::ibv_send_wr {
        &self.raw
    }

    /// Whether an entry of the request is of [`DeviceMemory`].
    pub(crate) fn device_memory(&self) -> bool {
        self.need & DEVICE_MEMORY != 0
    }
}

/// The list of a request that has none.
const NO_ENTRIES: &[Sge<'static>] = &[];

/// A receive queue work request (`struct ibv_recv_wr`).
#[repr(C)]
pub struct RecvRequest<'a> {
    /// First, so that a pointer to the request is one to its `ibv_recv_wr`.
    raw: ffi::ibv_recv_wr,
    /// What the request needs of a queue ([`limits`](crate::limits)).
    need: u64,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> RecvRequest<'a> {
    /// A receive into the SGEs.
    #[inline]
    pub fn new<M: SgeMemory>(wr_id: u64, sges: &'a [Sge<'a, M>]) -> Self {
        let raw = ffi::ibv_recv_wr {
            wr_id,
            next: ptr::null_mut(),
            sg_list: sg_list(sges),
            num_sge: i32::try_from(sges.len()).unwrap_or(i32::MAX),
        };
        RecvRequest {
            need: recv_need(raw.sg_list, raw.num_sge as u32),
            raw,
            _borrows: PhantomData,
        }
    }

    /// The caller's identifier, returned in the completion.
    pub fn wr_id(&self) -> u64 {
        self.raw.wr_id
    }

    /// The raw request. Its `next` is what the last post of it wrote (posting sets it).
    pub fn as_raw(&self) -> &ffi::ibv_recv_wr {
        &self.raw
    }
}

/// A copy with the same `wr_id` and scatter/gather list (the list is borrowed, not copied),
/// not linked to any other request.
impl Clone for RecvRequest<'_> {
    fn clone(&self) -> Self {
        RecvRequest {
            raw: ffi::ibv_recv_wr {
                next: ptr::null_mut(),
                ..self.raw
            },
            need: self.need,
            _borrows: PhantomData,
        }
    }
}

/// The limits a queue checks its work requests `W` against before posting them.
pub(crate) trait Limits<W> {
    /// The requirement bits the queue does not grant: a request whose word has none of them
    /// fits (the data path: one test).
    fn deny(&self) -> u64;
    /// The queue's granted depth, for the error of a post that found it full.
    fn depth(&self) -> u32;
    /// Whether `wr` is within the limits: the exact check, for the requests whose word has
    /// a denied bit.
    fn fits(&self, wr: &W) -> bool;
    /// Which limit `wr` broke (it did not fit).
    fn refusal(&self, wr: &W) -> WrError;
}

/// The work requests of a post, linked through their `next` pointers.
pub(crate) trait Linked {
    type Raw;
    /// The request's requirement word.
    fn need(&self) -> u64;
    /// The raw struct, to link and post: the provider reads it, and posting writes its
    /// `next` only (through [`set_next`](Self::set_next)).
    fn raw(&mut self) -> *mut Self::Raw;
    fn set_next(&mut self, next: *mut Self::Raw);
}

impl Linked for SendRequest<'_> {
    type Raw = ffi::ibv_send_wr;
    #[inline(always)]
    fn need(&self) -> u64 {
        self.need
    }
    #[inline(always)]
    fn raw(&mut self) -> *mut ffi::ibv_send_wr {
        &mut self.raw
    }
    #[inline(always)]
    fn set_next(&mut self, next: *mut ffi::ibv_send_wr) {
        self.raw.next = next;
    }
}

impl Linked for RecvRequest<'_> {
    type Raw = ffi::ibv_recv_wr;
    #[inline(always)]
    fn need(&self) -> u64 {
        self.need
    }
    #[inline(always)]
    fn raw(&mut self) -> *mut ffi::ibv_recv_wr {
        &mut self.raw
    }
    #[inline(always)]
    fn set_next(&mut self, next: *mut ffi::ibv_recv_wr) {
        self.raw.next = next;
    }
}

/// Checks every request of `wrs` against `limits`, then hands them to `post` as one list (the
/// provider's return code comes back, and the request it stopped at is written through the
/// second argument on failure) and maps a failure to [`Error::QueueFull`] or
/// [`Error::Post`] with its index; `queue` tells the verb and the queue's depth for that
/// error (it captures the queue, so the error path finds it in the frame). A refused
/// request refuses the whole list: nothing is posted and the error is [`Error::Request`]
/// with its index.
///
/// Posting writes the `next` pointer of every request it passes on (null for the last), so
/// they are never read stale. A single request that passes the fast check is posted inline,
/// at the cost of the test, that store, a store of `queue` and the raw call; anything else
/// goes through [`post_many`].
#[inline(always)]
pub(crate) fn post_list<W: Linked, L: Limits<W>>(
    wrs: &mut [W],
    limits: &L,
    queue: impl Fn() -> (&'static str, u32) + Copy,
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
) -> Result<(), PostError> {
    // `bad` is not read: the index is 0. Made here, not in the branch: the compiler threads
    // the merge of the two paths below best without the end of the frame's lifetime in it.
    let mut frame = Frame::<W::Raw, _>::new(queue);
    if let [one] = wrs {
        if one.need() & limits.deny() == 0 {
            one.set_next(ptr::null_mut());
            return match post(one.raw(), frame.bad()) {
                0 => Ok(()),
                rc => {
                    let (verb, depth) = (frame.keep)();
                    Err(post_failed(verb, 0, rc, depth))
                }
            };
        }
    }
    post_many(post, wrs, limits, queue)
}

/// [`post_list`] for lists of other lengths than one and for requests the fast check did
/// not pass: links the list while ORing the requirement words, tests the OR once and, if
/// it has a denied bit, checks each request exactly.
#[inline(never)]
pub(crate) fn post_many<W: Linked, L: Limits<W>>(
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
    wrs: &mut [W],
    limits: &L,
    queue: impl Fn() -> (&'static str, u32) + Copy,
) -> Result<(), PostError> {
    let mut need = 0;
    let mut head = ptr::null_mut();
    for wr in wrs.iter_mut().rev() {
        need |= wr.need();
        wr.set_next(head);
        head = wr.raw();
    }
    if head.is_null() {
        return Ok(());
    }
    if need & limits.deny() != 0 {
        return post_checked(post, wrs, head, limits, queue);
    }
    post_linked::<W>(post, wrs.len(), head, queue)
}

/// [`post_many`] for a list whose requirement words have a denied bit: checks each request
/// exactly, then posts the list. Out of line, so that [`post_many`] calls nothing but the
/// provider (or this, as a tail call) and keeps no value across a call in a callee-saved
/// register.
#[cold]
#[inline(never)]
fn post_checked<W: Linked, L: Limits<W>>(
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
    wrs: &[W],
    head: *mut W::Raw,
    limits: &L,
    queue: impl Fn() -> (&'static str, u32) + Copy,
) -> Result<(), PostError> {
    check_each(wrs, 0, limits)?;
    post_linked::<W>(post, wrs.len(), head, queue)
}

/// Posts the checked list of `len` requests linked from `head` (the first of a slice of
/// `W`) with `post` and maps a failure.
#[inline(always)]
fn post_linked<W: Linked>(
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
    len: usize,
    head: *mut W::Raw,
    queue: impl Fn() -> (&'static str, u32) + Copy,
) -> Result<(), PostError> {
    let mut frame = Frame::new((queue, head, len));
    match post(head, frame.bad()) {
        0 => Ok(()),
        rc => {
            let (queue, head, len) = frame.keep;
            let (verb, depth) = queue();
            // SAFETY: the provider failed, so it wrote `bad`.
            let bad = unsafe { frame.bad.assume_init() };
            Err(post_error::<W>(verb, head, len, bad, rc, depth))
        }
    }
}

/// What a post keeps across the provider call for its error path (`K`), in the frame next
/// to `bad`: the provider gets the frame's address (it writes `bad` only), so
/// `K` is stored once before the call and loaded on failure, instead of living in
/// callee-saved registers (each saved, moved and restored on every post).
#[repr(C)]
pub(crate) struct Frame<R, K> {
    /// Written by the provider on failure: the request it stopped at.
    pub(crate) bad: MaybeUninit<*mut R>,
    /// What the error path needs.
    pub(crate) keep: K,
}

impl<R, K> Frame<R, K> {
    #[inline(always)]
    pub(crate) fn new(keep: K) -> Self {
        Frame {
            bad: MaybeUninit::uninit(),
            keep,
        }
    }

    /// The `bad` argument of the provider call.
    #[inline(always)]
    pub(crate) fn bad(&mut self) -> *mut *mut R {
        ptr::addr_of_mut!(*self).cast()
    }
}

/// The exact check of each request of `wrs`, the first of which has index `first` in its
/// list or batch: the [`Error::Request`] of the first refused one.
#[inline(never)]
pub(crate) fn check_each<W>(wrs: &[W], first: usize, limits: &impl Limits<W>) -> Result<()> {
    match wrs.iter().position(|wr| !limits.fits(wr)) {
        None => Ok(()),
        Some(i) => Err(refused(first + i, limits.refusal(&wrs[i]))),
    }
}

/// The [`Error::Request`] for request `index`, refused for `reason`.
#[cold]
#[inline(never)]
pub(crate) fn refused(index: usize, reason: WrError) -> Error {
    Error::Request { index, reason }
}

/// The [`Error::Post`] for a failed post of the `len` requests from `head` (a slice of
/// `W`) that stopped at `bad`.
#[cold]
#[inline(never)]
fn post_error<W: Linked>(
    verb: &'static str,
    head: *mut W::Raw,
    len: usize,
    bad: *mut W::Raw,
    rc: i32,
    depth: u32,
) -> PostError {
    // A request's raw struct is its first field, so `bad` is the address of a slice entry.
    let index = (bad as usize).wrapping_sub(head as usize) / std::mem::size_of::<W>();
    post_failed(verb, if index < len { index } else { 0 }, rc, depth)
}

/// The error of a post that failed with `rc` at request `index` of a queue `depth` deep:
/// [`Error::QueueFull`] for `ENOMEM` (how providers say the queue is full),
/// [`Error::Unsupported`] for `EOPNOTSUPP` at the first request (the provider has no post
/// function, or not for that operation: nothing was posted), else [`Error::Post`].
#[cold]
#[inline(never)]
pub(crate) fn post_failed(verb: &'static str, index: usize, rc: i32, depth: u32) -> PostError {
    let source = if rc < 0 {
        std::io::Error::last_os_error()
    } else {
        std::io::Error::from_raw_os_error(rc)
    };
    PostError::from(match source.raw_os_error() {
        Some(libc::ENOMEM) => Error::QueueFull { verb, index, depth },
        Some(libc::EOPNOTSUPP) if index == 0 => Error::Unsupported {
            what: verb,
            missing: match verb {
                "ibv_post_send" => "post_send in its provider (or the first request's operation)",
                "ibv_post_recv" => "post_recv in its provider",
                _ => "post_srq_recv in its provider",
            },
        },
        _ => Error::Post {
            verb,
            index,
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_checked() {
        let m = RemoteMemory {
            addr: 0x1000,
            len: 64,
            rkey: 5,
        };
        let s = m.slice(16, 48).unwrap();
        assert_eq!((s.addr, s.len, s.rkey), (0x1010, 48, 5));
        assert!(matches!(m.slice(16, 49), Err(Error::OutOfRange { .. })));
        assert!(matches!(
            m.slice(u64::MAX, 2),
            Err(Error::OutOfRange { .. })
        ));
        // A range a peer made up, past the end of the address space (this overflowed).
        let bogus = RemoteMemory {
            addr: u64::MAX - 8,
            len: 64,
            rkey: 5,
        };
        assert!(bogus.slice(8, 1).is_ok());
        assert!(matches!(
            bogus.slice(16, 1),
            Err(Error::InvalidArgument { .. })
        ));
    }
}
