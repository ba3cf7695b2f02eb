//! [`BatchRequest`]: a request made straight into a batch, one method per operation, with
//! no `ibv_send_wr` in between.

use crate::ah::AddressHandle;
use crate::error::Result;
use crate::ffi;
use crate::wr::{RemoteMemory, SendParts, Sge, SgeMemory};

use super::WrBatch;

/// One request of a [`WrBatch`], made by the batch's method of its operation
/// ([`WrBatch::write`], [`WrBatch::send`], ...), given flags, then added with
/// [`push`](Self::push): `batch.write(1, &sge, remote).signaled().push()?`.
///
/// The same requests as [`SendRequest`](crate::SendRequest)'s, checked the same way, but
/// never laid out as a 136-byte `ibv_send_wr`: its parts go from the arguments to the
/// `ibv_wr_*` calls, in registers, and the check is the exact one with the operation known
/// (`scripts/compare-peers 300` against [`WrBatch::push`] of a `SendRequest`: a batch of
/// one RDMA write 232 instructions against 279, of 16 writes 2133 against 2364). One that
/// is dropped without `push` adds nothing. Its entries and address handle are borrowed for
/// the batch's `'env`, until the batch is posted (see [`WrBatch`]).
#[must_use = "a batch request is added to the batch by push"]
pub struct BatchRequest<'b, 'qp, 'env> {
    /// The batch, which [`push`](Self::push) adds the request to (`raw::push_request`).
    pub(super) batch: &'b mut WrBatch<'qp, 'env>,
    /// The request's parts, which borrow its list and address handle for the batch's
    /// `'env`: until the batch is posted.
    pub(super) parts: SendParts<'env>,
}

impl<'qp, 'env> WrBatch<'qp, 'env> {
    /// The request of `opcode` over `sges`.
    #[inline(always)]
    fn request<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        opcode: ffi::ibv_wr_opcode,
        sges: &'env [Sge<'env, M>],
    ) -> BatchRequest<'_, 'qp, 'env> {
        BatchRequest {
            batch: self,
            parts: SendParts::new(wr_id, opcode, sges),
        }
    }

    /// The request of `opcode` over `sges` to `remote`.
    #[inline(always)]
    fn remote_request<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        opcode: ffi::ibv_wr_opcode,
        sges: &'env [Sge<'env, M>],
        remote: RemoteMemory,
    ) -> BatchRequest<'_, 'qp, 'env> {
        let mut wr = self.request(wr_id, opcode, sges);
        wr.parts.remote_addr = remote.addr;
        wr.parts.rkey = remote.rkey;
        wr
    }

    /// A send (`ibv_wr_send`), as [`SendRequest::send`](crate::SendRequest::send).
    #[inline(always)]
    pub fn send<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        sges: &'env [Sge<'env, M>],
    ) -> BatchRequest<'_, 'qp, 'env> {
        self.request(wr_id, ffi::ibv_wr_opcode::IBV_WR_SEND, sges)
    }

    /// A send with immediate data given in host order (`ibv_wr_send_imm`), as
    /// [`SendRequest::send_with_imm`](crate::SendRequest::send_with_imm).
    #[inline(always)]
    pub fn send_with_imm<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        sges: &'env [Sge<'env, M>],
        imm: u32,
    ) -> BatchRequest<'_, 'qp, 'env> {
        let mut wr = self.request(wr_id, ffi::ibv_wr_opcode::IBV_WR_SEND_WITH_IMM, sges);
        wr.parts.imm = imm.to_be();
        wr
    }

    /// An RDMA write (`ibv_wr_rdma_write`), as
    /// [`SendRequest::write`](crate::SendRequest::write).
    #[inline(always)]
    pub fn write<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        sges: &'env [Sge<'env, M>],
        remote: RemoteMemory,
    ) -> BatchRequest<'_, 'qp, 'env> {
        self.remote_request(wr_id, ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE, sges, remote)
    }

    /// An RDMA write with immediate data given in host order (`ibv_wr_rdma_write_imm`), as
    /// [`SendRequest::write_with_imm`](crate::SendRequest::write_with_imm).
    #[inline(always)]
    pub fn write_with_imm<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        sges: &'env [Sge<'env, M>],
        remote: RemoteMemory,
        imm: u32,
    ) -> BatchRequest<'_, 'qp, 'env> {
        let opcode = ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE_WITH_IMM;
        let mut wr = self.remote_request(wr_id, opcode, sges, remote);
        wr.parts.imm = imm.to_be();
        wr
    }

    /// An RDMA read (`ibv_wr_rdma_read`), as [`SendRequest::read`](crate::SendRequest::read).
    #[inline(always)]
    pub fn read<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        sges: &'env [Sge<'env, M>],
        remote: RemoteMemory,
    ) -> BatchRequest<'_, 'qp, 'env> {
        self.remote_request(wr_id, ffi::ibv_wr_opcode::IBV_WR_RDMA_READ, sges, remote)
    }

    /// An atomic compare-and-swap (`ibv_wr_atomic_cmp_swp`), as
    /// [`SendRequest::compare_swap`](crate::SendRequest::compare_swap): `result` must be
    /// 8 bytes, `remote.addr` 8-byte aligned.
    #[inline(always)]
    pub fn compare_swap<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        result: &'env Sge<'env, M>,
        remote: RemoteMemory,
        compare: u64,
        swap: u64,
    ) -> BatchRequest<'_, 'qp, 'env> {
        let opcode = ffi::ibv_wr_opcode::IBV_WR_ATOMIC_CMP_AND_SWP;
        let mut wr = self.remote_request(wr_id, opcode, std::slice::from_ref(result), remote);
        (wr.parts.compare_add, wr.parts.swap) = (compare, swap);
        wr
    }

    /// An atomic fetch-and-add (`ibv_wr_atomic_fetch_add`), as
    /// [`SendRequest::fetch_add`](crate::SendRequest::fetch_add): `result` must be 8 bytes,
    /// `remote.addr` 8-byte aligned.
    #[inline(always)]
    pub fn fetch_add<M: SgeMemory>(
        &mut self,
        wr_id: u64,
        result: &'env Sge<'env, M>,
        remote: RemoteMemory,
        add: u64,
    ) -> BatchRequest<'_, 'qp, 'env> {
        let opcode = ffi::ibv_wr_opcode::IBV_WR_ATOMIC_FETCH_AND_ADD;
        let mut wr = self.remote_request(wr_id, opcode, std::slice::from_ref(result), remote);
        wr.parts.compare_add = add;
        wr
    }

    /// An atomic write of `value` (`ibv_wr_atomic_write`), as
    /// [`SendRequest::atomic_write`](crate::SendRequest::atomic_write): `remote.addr` must
    /// be 8-byte aligned.
    #[inline(always)]
    pub fn atomic_write(
        &mut self,
        wr_id: u64,
        remote: RemoteMemory,
        value: [u8; 8],
    ) -> BatchRequest<'_, 'qp, 'env> {
        let opcode = ffi::ibv_wr_opcode::IBV_WR_ATOMIC_WRITE;
        let mut wr = self.remote_request(wr_id, opcode, NO_ENTRIES, remote);
        wr.parts.compare_add = u64::from_ne_bytes(value);
        wr
    }
}

/// The list of a request that has none.
const NO_ENTRIES: &[Sge<'static>] = &[];

impl<'env> BatchRequest<'_, '_, 'env> {
    #[inline(always)]
    fn flag(mut self, flag: ffi::ibv_send_flags) -> Self {
        self.parts.flags |= flag.0;
        self
    }

    /// Asks for a completion (`IBV_SEND_SIGNALED`), as
    /// [`SendRequest::signaled`](crate::SendRequest::signaled).
    #[inline(always)]
    pub fn signaled(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_SIGNALED)
    }

    /// Sends the data inline (`IBV_SEND_INLINE`, `ibv_wr_set_inline_data`), as
    /// [`SendRequest::inline`](crate::SendRequest::inline): sends and RDMA writes of at
    /// most the QP's `max_inline_data` bytes of host memory.
    #[inline(always)]
    pub fn inline(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_INLINE)
    }

    /// Marks the message solicited (`IBV_SEND_SOLICITED`).
    #[inline(always)]
    pub fn solicited(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_SOLICITED)
    }

    /// Waits for earlier reads and atomics before this request (`IBV_SEND_FENCE`).
    #[inline(always)]
    pub fn fence(self) -> Self {
        self.flag(ffi::ibv_send_flags::IBV_SEND_FENCE)
    }

    /// Addresses a UD send (`ibv_wr_set_ud_addr`): the address handle, remote QP number
    /// and Q_Key. A send on a UD QP needs it (pushing checks that it was called, with a
    /// handle of the QP's PD); on RC and UC QPs it is ignored. The handle is borrowed for
    /// the batch's `'env`: the provider reads it until the batch is posted.
    #[inline(always)]
    pub fn ud(mut self, ah: &'env AddressHandle, remote_qpn: u32, remote_qkey: u32) -> Self {
        self.parts.set_ud(ah, remote_qpn, remote_qkey);
        self
    }

    /// Adds the request to the batch, checked as [`WrBatch::push`] checks a
    /// [`SendRequest`](crate::SendRequest); a refused one ([`Error::Request`](crate::Error),
    /// with its index in the batch) is not added.
    #[inline(always)]
    pub fn push(self) -> Result<()> {
        super::raw::push_request(self)
    }
}
