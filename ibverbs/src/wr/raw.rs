//! The raw reads of work requests: every unsafe block of `wr/`.
//!
//! A request's C struct holds pointers that posting hands to the provider and that the
//! checks read: its scatter/gather list ([`SgList`]), the member of its `wr` union its
//! operation's constructor wrote ([`SendParts::of`]) and a UD send's address handle. Each
//! is written by the constructors of [`SendRequest`], [`RecvRequest`] and [`SendParts`]
//! only, from borrows the request keeps for its lifetime, and read here. Also here: the call
//! of a post function and the read of the request it stopped at ([`Frame::post`]), and the
//! box whose drop is out of line that makes a [`PostError`](crate::PostError) one word
//! ([`ColdBox`]).

use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::Deref;
use std::ptr;

use crate::ah::AddressHandle;
use crate::ffi;
use crate::wr::limits::DEVICE_MEMORY;
use crate::wr::{HostMemory, RecvRequest, SendRequest, Sge, SgeMemory};

/// The entry an empty list points at.
static NO_SGE: ffi::ibv_sge = ffi::ibv_sge {
    addr: 0,
    length: 0,
    lkey: 0,
};

/// A request's scatter/gather list as its C struct holds it: `len` entries from `ptr`,
/// borrowed for `'a`.
///
/// The pointer is never dangling, so that the first entry's length can be read without
/// looking at the count: an empty list points at [`NO_SGE`], of length 0. The count is at
/// most the length of the slice of [`Sge`]s (a transparent `ibv_sge`) the list was made
/// from. Made from a slice here only ([`new`](Self::new), [`SendParts::new`]), or read back
/// from the request that holds one ([`SendRequest::sg`], [`RecvRequest::sg`]). Providers
/// only read the list.
#[derive(Clone, Copy)]
pub(crate) struct SgList<'a> {
    ptr: *mut ffi::ibv_sge,
    len: u32,
    _entries: PhantomData<&'a [ffi::ibv_sge]>,
}

impl<'a> SgList<'a> {
    /// The list of `sges`, counted up to `i32::MAX` entries, as the `num_sge` of an
    /// `ibv_*_wr` holds it (a longer list cannot be posted: the check refuses the count,
    /// which is more than any queue's limit).
    #[inline(always)]
    pub(crate) fn new<M: SgeMemory>(sges: &'a [Sge<'_, M>]) -> Self {
        SgList {
            ptr: list_ptr(sges),
            len: i32::try_from(sges.len()).unwrap_or(i32::MAX) as u32,
            _entries: PhantomData,
        }
    }

    /// The pointer a request's C struct holds.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut ffi::ibv_sge {
        self.ptr
    }

    /// The number of entries.
    #[inline(always)]
    pub(crate) fn len(self) -> u32 {
        self.len
    }

    /// The first entry, or one of length 0 for an empty list.
    #[inline(always)]
    pub(crate) fn first(self) -> ffi::ibv_sge {
        // SAFETY: the pointer is never dangling (new), and an empty list points at NO_SGE.
        unsafe { *self.ptr }
    }

    /// The entries.
    #[inline(always)]
    pub(crate) fn entries(self) -> &'a [ffi::ibv_sge] {
        // SAFETY: the list is `len` entries of a slice borrowed for 'a, at most its length
        // (new), and Sge is a transparent ibv_sge.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len as usize) }
    }

    /// The sum of the lengths of the entries.
    #[inline(always)]
    pub(crate) fn total_len(self) -> u64 {
        if self.len <= 1 {
            u64::from(self.first().length)
        } else {
            sum_lengths(self.entries())
        }
    }
}

/// The never-dangling pointer of a list over `sges` (see [`SgList`]).
#[inline(always)]
fn list_ptr<M: SgeMemory>(sges: &[Sge<'_, M>]) -> *mut ffi::ibv_sge {
    if sges.is_empty() {
        ptr::addr_of!(NO_SGE).cast_mut()
    } else {
        sges.as_ptr().cast_mut().cast()
    }
}

/// The sum of the lengths of `sges`, a list of several entries (inline: a call here would
/// make every constructor save registers around it).
#[inline]
fn sum_lengths(sges: &[ffi::ibv_sge]) -> u64 {
    sges.iter().map(|s| u64::from(s.length)).sum()
}

impl<'a> SendRequest<'a> {
    /// The request's list: the one its constructor wrote into `sg_list` and `num_sge` from
    /// an [`SgList`] (the only writer of those fields; posting writes `next` only).
    #[inline(always)]
    pub(crate) fn sg(&self) -> SgList<'a> {
        SgList {
            ptr: self.raw.sg_list,
            // Never negative: the constructors set it from an SgList.
            len: self.raw.num_sge as u32,
            _entries: PhantomData,
        }
    }
}

impl<'a> RecvRequest<'a> {
    /// The request's list, as [`SendRequest::sg`].
    #[inline(always)]
    pub(crate) fn sg(&self) -> SgList<'a> {
        SgList {
            ptr: self.raw.sg_list,
            // Never negative: RecvRequest::new sets it from an SgList.
            len: self.raw.num_sge as u32,
            _entries: PhantomData,
        }
    }
}

/// What checking and posting read of one send request: the fields of its `ibv_send_wr`
/// (the union members of its operation only), or of a [`BatchRequest`](crate::BatchRequest),
/// which has no `ibv_send_wr`; and whether its entries are of
/// [`DeviceMemory`](crate::DeviceMemory). The list, the memory kind and the address handle
/// are private: they are what the provider reads memory through, so only the constructors
/// here and [`set_ud`](Self::set_ud) write them.
#[derive(Clone, Copy)]
pub(crate) struct SendParts<'a> {
    pub(crate) wr_id: u64,
    pub(crate) opcode: ffi::ibv_wr_opcode,
    pub(crate) flags: u32,
    /// An [`SgList`]'s pointer and count, kept apart so that the parts lay out as before.
    sg_list: *mut ffi::ibv_sge,
    num_sge: u32,
    device: bool,
    /// Of RDMA operations and atomics.
    pub(crate) remote_addr: u64,
    pub(crate) rkey: u32,
    /// Big-endian, as in the request.
    pub(crate) imm: u32,
    /// Of atomics; an atomic write's 8 bytes ride in `compare_add`.
    pub(crate) compare_add: u64,
    pub(crate) swap: u64,
    /// Of a UD send: its address handle (null: none, else one borrowed for `'a`) and remote
    /// QP.
    ah: *mut ffi::ibv_ah,
    pub(crate) remote_qpn: u32,
    pub(crate) remote_qkey: u32,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> SendParts<'a> {
    /// The parts of an operation over `sges`: no flags, no remote, no address.
    #[inline(always)]
    pub(crate) fn new<M: SgeMemory>(
        wr_id: u64,
        opcode: ffi::ibv_wr_opcode,
        sges: &'a [Sge<'_, M>],
    ) -> Self {
        SendParts {
            wr_id,
            opcode,
            flags: 0,
            sg_list: list_ptr(sges),
            // More than u32::MAX entries is more than any queue's max_send_sge: the check
            // refuses the clamp.
            num_sge: u32::try_from(sges.len()).unwrap_or(u32::MAX),
            device: M::NEED & DEVICE_MEMORY != 0,
            remote_addr: 0,
            rkey: 0,
            imm: 0,
            compare_add: 0,
            swap: 0,
            ah: ptr::null_mut(),
            remote_qpn: 0,
            remote_qkey: 0,
            _borrows: PhantomData,
        }
    }

    /// The parts of `wr`.
    #[inline(always)]
    pub(crate) fn of(wr: &SendRequest<'a>) -> Self {
        use ffi::ibv_wr_opcode as O;
        let raw = wr.as_raw();
        let sg = wr.sg();
        let mut parts = SendParts {
            wr_id: raw.wr_id,
            opcode: raw.opcode,
            flags: raw.send_flags,
            sg_list: sg.ptr,
            num_sge: sg.len,
            device: wr.device_memory(),
            // SAFETY: the member is a plain 32-bit number, zeroed or written by the
            // constructor.
            imm: unsafe { raw.__bindgen_anon_1.imm_data },
            ..SendParts::new::<HostMemory>(0, raw.opcode, Sge::NONE)
        };
        // SAFETY: each arm reads the member of the `wr` union its opcode's constructor
        // wrote whole; a send's `ud` member is zeroed unless SendRequest::ud wrote it, with
        // the handle of an AddressHandle the request borrows for 'a.
        unsafe {
            match raw.opcode {
                O::IBV_WR_RDMA_WRITE | O::IBV_WR_RDMA_WRITE_WITH_IMM | O::IBV_WR_RDMA_READ => {
                    let rdma = raw.wr.rdma;
                    (parts.remote_addr, parts.rkey) = (rdma.remote_addr, rdma.rkey);
                }
                O::IBV_WR_ATOMIC_CMP_AND_SWP
                | O::IBV_WR_ATOMIC_FETCH_AND_ADD
                | O::IBV_WR_ATOMIC_WRITE => {
                    let atomic = raw.wr.atomic;
                    (parts.remote_addr, parts.rkey) = (atomic.remote_addr, atomic.rkey);
                    (parts.compare_add, parts.swap) = (atomic.compare_add, atomic.swap);
                }
                O::IBV_WR_SEND | O::IBV_WR_SEND_WITH_IMM => {
                    let ud = raw.wr.ud;
                    (parts.ah, parts.remote_qpn, parts.remote_qkey) =
                        (ud.ah, ud.remote_qpn, ud.remote_qkey);
                }
                _ => {}
            }
        }
        parts
    }

    /// The list.
    #[inline(always)]
    pub(crate) fn sg(&self) -> SgList<'a> {
        SgList {
            ptr: self.sg_list,
            len: self.num_sge,
            _entries: PhantomData,
        }
    }

    /// The number of entries.
    #[inline(always)]
    pub(crate) fn num_sge(&self) -> u32 {
        self.num_sge
    }

    /// Whether the entries are of [`DeviceMemory`](crate::DeviceMemory).
    #[inline(always)]
    pub(crate) fn device(&self) -> bool {
        self.device
    }

    /// The address handle of a UD send: null for none, else one borrowed for `'a`.
    #[inline(always)]
    pub(crate) fn ah(&self) -> *mut ffi::ibv_ah {
        self.ah
    }

    /// Whether the request has an address handle, of the protection domain `pd`.
    #[inline(always)]
    pub(crate) fn has_address_in(&self, pd: *mut ffi::ibv_pd) -> bool {
        // SAFETY: a non-null handle is that of an AddressHandle the request borrows.
        !self.ah.is_null() && unsafe { (*self.ah).pd } == pd
    }

    /// Addresses a UD send: `ah`, the remote QP number and Q_Key.
    #[inline(always)]
    pub(crate) fn set_ud(&mut self, ah: &'a AddressHandle, remote_qpn: u32, remote_qkey: u32) {
        self.ah = ah.ptr();
        self.remote_qpn = remote_qpn;
        self.remote_qkey = remote_qkey;
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
    /// A frame keeping `keep`, with `bad` not written yet.
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

    /// Calls `post`, a provider's post function (as [`post_list`](crate::wr::post_list)
    /// asks: on failure it writes the request it stopped at to its second argument), with
    /// the list from `head` and the frame's `bad`; a failure is the error `failed` makes of
    /// the return code, the request the provider stopped at and what the frame kept.
    #[inline(always)]
    pub(super) fn post<E>(
        mut self,
        post: impl FnOnce(*mut R, *mut *mut R) -> i32,
        head: *mut R,
        failed: impl FnOnce(i32, *mut R, K) -> E,
    ) -> Result<(), E> {
        match post(head, self.bad()) {
            0 => Ok(()),
            rc => {
                let keep = self.keep;
                // SAFETY: the provider failed, so it wrote `bad`.
                let bad = unsafe { self.bad.assume_init() };
                Err(failed(rc, bad, keep))
            }
        }
    }
}

/// A box whose drop is out of line ([`drop_boxed`]): one word, so that a `Result` of one is
/// returned in a register, and dropping it is one call on the path that has one and nothing
/// on the others. [`PostError`](crate::PostError)'s error.
pub(crate) struct ColdBox<T>(ManuallyDrop<Box<T>>);

impl<T> ColdBox<T> {
    /// `value`, boxed.
    pub(crate) fn new(value: T) -> Self {
        ColdBox(ManuallyDrop::new(Box::new(value)))
    }

    /// The value.
    pub(crate) fn into_inner(self) -> T {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the box is taken once and dropped by its
        // new owner only.
        *unsafe { ManuallyDrop::take(&mut this.0) }
    }
}

impl<T> Drop for ColdBox<T> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the field is not used after this.
        drop_boxed(unsafe { ManuallyDrop::take(&mut self.0) });
    }
}

/// Drops the box of a [`ColdBox`], out of line.
#[cold]
#[inline(never)]
fn drop_boxed<T>(boxed: Box<T>) {
    drop(boxed);
}

impl<T> Deref for ColdBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
