//! Work requests: `struct ibv_sge`, `struct ibv_send_wr` and `struct ibv_recv_wr`.
//!
//! A request is the C struct and the word of requirement bits its constructor works out
//! ([`limits`](crate::wr::limits)), so posting a list costs one check of the OR of those words
//! against the queue's, linking the `next` pointers and one call into the provider. The
//! word is derived from the struct, so only this module writes either: every constructor
//! and flag method that changes what the word depends on (operation, list, inline) works it
//! out again, and the rest of the crate reads the struct only.

pub(crate) mod keys; // the rule that entries are of the queue's PD: regions' keys by PD
pub(crate) mod limits; // the requirement words and the queues' limits
mod post; // checking, linking and posting a list of requests
pub(crate) mod post_error; // PostError
mod raw; // the raw reads of requests and the post call: every unsafe block of the folder
mod recv; // RecvRequest
mod sge; // Sge and the memory of its entries

pub(crate) use post::{check_each, post_failed, post_list, post_many, refused, Limits, Linked};
pub(crate) use raw::{ColdBox, Frame, SendParts, SgList};
pub use recv::RecvRequest;
pub use sge::{DeviceMemory, HostMemory, Sge, SgeMemory};

use std::marker::PhantomData;

use crate::ah::AddressHandle;
use crate::error::{Error, Result};
use crate::ffi;
use crate::types::WrOpcode;
use crate::wr::limits::{inline_need, send_need, ATOMIC_ALIGN, DEVICE_MEMORY, SLOW};

/// Memory of a peer: what it sends so that RDMA reads, writes and atomics can target it
/// (`serde` serialisable with the `serde` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct RemoteMemory {
    /// Start address in the peer's address space (or 0 for zero-based regions).
    pub addr: u64,
    /// Length in bytes.
    pub len: u64,
    /// The peer's remote key.
    pub rkey: u32,
}

impl RemoteMemory {
    /// `len` bytes of a peer's memory from address `addr`, reached with remote key `rkey`:
    /// the three numbers a peer sends.
    pub fn new(addr: u64, len: u64, rkey: u32) -> Self {
        RemoteMemory { addr, len, rkey }
    }

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
    /// What the request needs of a queue pair ([`limits`](crate::wr::limits)).
    need: u64,
    _borrows: PhantomData<&'a ()>,
}

impl<'a> SendRequest<'a> {
    /// The request of `opcode` over `sges`, and its word: the one place both are made.
    #[inline]
    #[expect(
        clippy::field_reassign_with_default,
        reason = "the struct update form copies a zeroed request over (see below)"
    )]
    fn new<M: SgeMemory>(wr_id: u64, opcode: ffi::ibv_wr_opcode, sges: &'a [Sge<'a, M>]) -> Self {
        // Zeroed in place, then the fields set: `..Default::default()` built a zeroed
        // request aside and copied the rest of it over (18 to 22 instructions a request in
        // `scripts/compare-peers`).
        let mut raw = ffi::ibv_send_wr::default();
        raw.wr_id = wr_id;
        raw.opcode = opcode;
        // A list longer than i32::MAX cannot be posted; posting refuses the clamp, which is
        // more than any queue's max_send_sge.
        let sg = SgList::new(sges);
        raw.sg_list = sg.as_ptr();
        raw.num_sge = sg.len() as i32;
        SendRequest {
            need: send_need(opcode, sg) | M::NEED,
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
        if remote.addr % ATOMIC_ALIGN != 0 {
            // The exact check refuses it (WrError::Misaligned).
            wr.need |= SLOW;
        }
        wr
    }

    /// An atomic compare-and-swap (`IBV_WR_ATOMIC_CMP_AND_SWP`) of the 8 bytes at
    /// `remote.addr`, which must be 8-byte aligned (posting refuses another address:
    /// [`WrError::Misaligned`](crate::WrError::Misaligned)); the original value lands in
    /// `result`, which must be 8 bytes (posting refuses another length:
    /// [`WrError::AtomicResultSize`](crate::WrError)).
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
    /// `remote.addr`, which must be 8-byte aligned; the original value lands in `result`,
    /// which must be 8 bytes (both as for [`compare_swap`](Self::compare_swap)).
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
            self.need = inline_need(self.need, self.sg());
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
            ah: ah.ptr(),
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

#[cfg(all(test, feature = "serde"))]
mod serde_tests {
    use super::*;

    #[test]
    fn remote_memory_round_trips_through_json() {
        let mem = RemoteMemory {
            addr: 0x7f00_0000_1000,
            len: 4096,
            rkey: 0x1234,
        };
        let json = serde_json::to_string(&mem).unwrap();
        assert_eq!(serde_json::from_str::<RemoteMemory>(&json).unwrap(), mem);
        assert!(serde_json::from_str::<RemoteMemory>("{\"addr\":1}").is_err());
    }
}
