//! The limits a queue was created with (`struct ibv_qp_cap`, `struct ibv_srq_attr`, as the
//! provider granted them) and the check of every work request against them before it
//! reaches the provider.
//!
//! The check is on the data path, so it is built to be cheap: the limits are cached when
//! the queue is created, the allowed operations are one bit mask per QP (one for requests
//! with inline data, one without), the lengths are summed in a `u64` (at most `i32::MAX`
//! entries of at most `u32::MAX` bytes cannot overflow it), and working out which limit a
//! refused request broke is left to a cold function.

use crate::error::WrError;
use crate::ffi;
use crate::opcode::{SendOps, WrOpcode};
use crate::qp_type::QpType;
use crate::wr::{RecvRequest, SendRequest};

/// The longest message RDMA carries: 2^31 bytes.
pub(crate) const MAX_MESSAGE: u64 = 1 << 31;

/// The bit of a raw opcode in the masks below.
const fn bit(op: ffi::ibv_wr_opcode) -> u32 {
    1 << op.0
}

mod ops {
    use super::bit;
    use crate::ffi::ibv_wr_opcode as O;

    pub const SENDS: u32 = bit(O::IBV_WR_SEND) | bit(O::IBV_WR_SEND_WITH_IMM);
    pub const WRITES: u32 = bit(O::IBV_WR_RDMA_WRITE) | bit(O::IBV_WR_RDMA_WRITE_WITH_IMM);
    pub const ATOMICS: u32 =
        bit(O::IBV_WR_ATOMIC_CMP_AND_SWP) | bit(O::IBV_WR_ATOMIC_FETCH_AND_ADD);
    pub const READ: u32 = bit(O::IBV_WR_RDMA_READ);
    pub const BIND_MW: u32 = bit(O::IBV_WR_BIND_MW);
    /// What may carry inline data.
    pub const INLINE: u32 = SENDS | WRITES;
}

/// The operations a transport has.
fn transport_ops(qp_type: QpType) -> u32 {
    match qp_type {
        QpType::Rc => ops::SENDS | ops::WRITES | ops::READ | ops::ATOMICS | ops::BIND_MW,
        QpType::Uc => ops::SENDS | ops::WRITES | ops::BIND_MW,
        QpType::Ud => ops::SENDS,
    }
}

/// Whether `mask` has the bit of raw opcode `op` (never for opcodes past the mask).
#[inline(always)]
fn has(mask: u32, op: u32) -> bool {
    mask.checked_shr(op).unwrap_or(0) & 1 != 0
}

/// The send queue limits of a queue pair, checked by [`SendLimits::check`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct SendLimits {
    /// The operations allowed, by raw opcode bit: `[plain, inline]`.
    ops: [u32; 2],
    /// The largest total length: `[MAX_MESSAGE, max_inline_data]`.
    max_total: [u64; 2],
    max_sge: u32,
    max_inline: u32,
    qp_type: QpType,
    /// The QP's protection domain, which UD address handles must share.
    pd: *mut ffi::ibv_pd,
    /// For a [`WrBatch`](crate::WrBatch): the operations its QP was created for.
    send_ops: Option<SendOps>,
}

impl SendLimits {
    /// The limits of a QP of `qp_type` in `pd` that was granted `cap`.
    pub(crate) fn new(qp_type: QpType, cap: &ffi::ibv_qp_cap, pd: *mut ffi::ibv_pd) -> Self {
        let all = transport_ops(qp_type);
        SendLimits {
            ops: [all, all & ops::INLINE],
            max_total: [MAX_MESSAGE, u64::from(cap.max_inline_data).min(MAX_MESSAGE)],
            max_sge: cap.max_send_sge,
            max_inline: cap.max_inline_data,
            qp_type,
            pd,
            send_ops: None,
        }
    }

    /// The QP's transport.
    pub(crate) fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// These limits narrowed to the operations the extended send API was created for.
    pub(crate) fn for_batch(mut self, send_ops: SendOps) -> Self {
        let mut enabled = 0;
        for op in 0..32 {
            let raw = WrOpcode::from_raw(ffi::ibv_wr_opcode(op));
            if raw.send_op().is_some_and(|flag| send_ops.contains(flag)) {
                enabled |= 1 << op;
            }
        }
        self.ops = self.ops.map(|mask| mask & enabled);
        self.send_ops = Some(send_ops);
        self
    }

    /// Checks `wr` against the limits: its operation exists on the transport (and was
    /// enabled, for a batch), it has no more entries than `max_send_sge`, its length is at
    /// most 2^31 bytes or, inline, `max_inline_data`, an atomic's result is 8 bytes, and a
    /// UD send has an address handle of the QP's PD.
    #[inline(always)]
    pub(crate) fn check(&self, wr: &SendRequest<'_>) -> Result<(), WrError> {
        if self.fits(wr.as_raw()) {
            Ok(())
        } else {
            Err(self.refusal(wr.as_raw()))
        }
    }

    #[inline(always)]
    fn fits(&self, raw: &ffi::ibv_send_wr) -> bool {
        let inline = usize::from(raw.send_flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0 != 0);
        let op = raw.opcode.0;
        // Never negative: the request constructors set it from a slice length.
        let n = raw.num_sge as u32;
        if !has(self.ops[inline], op) | (n > self.max_sge) {
            return false;
        }
        let total = total_len(raw.sg_list, n);
        let atomic_ok = !has(ops::ATOMICS, op) || total == 8;
        (total <= self.max_total[inline]) & atomic_ok
            && (self.qp_type != QpType::Ud || self.address_fits(raw))
    }

    /// Whether a UD send's address handle is set and of the QP's PD.
    fn address_fits(&self, raw: &ffi::ibv_send_wr) -> bool {
        // SAFETY: on a UD QP only sends get here, whose `wr` union is zero unless
        // SendRequest::ud wrote it, with the handle of an AddressHandle the request borrows.
        let ah = unsafe { raw.wr.ud.ah };
        // SAFETY: a non-null handle is live (see above).
        !ah.is_null() && unsafe { (*ah).pd } == self.pd
    }

    /// Which limit `raw` broke (it did not fit).
    #[cold]
    #[inline(never)]
    fn refusal(&self, raw: &ffi::ibv_send_wr) -> WrError {
        let opcode = WrOpcode::from_raw(raw.opcode);
        let op = raw.opcode.0;
        let inline = raw.send_flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0 != 0;
        if !has(transport_ops(self.qp_type), op) {
            return WrError::OpcodeNotSupported {
                opcode,
                qp_type: self.qp_type,
            };
        }
        if !has(self.ops[0], op) {
            return WrError::OpcodeNotEnabled { opcode };
        }
        if inline && !has(ops::INLINE, op) {
            return WrError::InlineNotSupported { opcode };
        }
        let n = raw.num_sge as u32;
        if n > self.max_sge {
            return WrError::TooManySge {
                requested: n,
                max: self.max_sge,
            };
        }
        let total = total_len(raw.sg_list, n);
        if inline && total > self.max_total[1] {
            return WrError::InlineTooLarge {
                total,
                max: self.max_inline,
            };
        }
        if total > MAX_MESSAGE {
            return WrError::MessageTooLong {
                total,
                max: MAX_MESSAGE,
            };
        }
        if has(ops::ATOMICS, op) {
            return WrError::AtomicResultLength { len: total };
        }
        // SAFETY: as in address_fits.
        if unsafe { raw.wr.ud.ah }.is_null() {
            WrError::MissingAddressHandle
        } else {
            WrError::ForeignAddressHandle
        }
    }
}

/// The receive queue limits of a queue pair or SRQ, checked by [`RecvLimits::check`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct RecvLimits {
    /// `max_sge + 1`, or 0 for a QP whose receives come from an SRQ (nothing fits).
    sge_bound: u32,
    max_sge: u32,
}

impl RecvLimits {
    /// The limits of a queue granted `max_sge` entries per receive.
    pub(crate) fn new(max_sge: u32) -> Self {
        RecvLimits {
            sge_bound: max_sge.saturating_add(1),
            max_sge,
        }
    }

    /// The limits of a QP that takes its receives from an SRQ: none may be posted to it.
    pub(crate) fn srq() -> Self {
        RecvLimits {
            sge_bound: 0,
            max_sge: 0,
        }
    }

    /// Checks `wr`: the queue takes receives, it has at most `max_sge` entries, and they
    /// add up to at most 2^31 bytes.
    #[inline(always)]
    pub(crate) fn check(&self, wr: &RecvRequest<'_>) -> Result<(), WrError> {
        let raw = wr.as_raw();
        // Never negative: RecvRequest::new sets it from a slice length.
        let n = raw.num_sge as u32;
        if n < self.sge_bound && total_len(raw.sg_list, n) <= MAX_MESSAGE {
            Ok(())
        } else {
            Err(self.refusal(raw))
        }
    }

    #[cold]
    #[inline(never)]
    fn refusal(&self, raw: &ffi::ibv_recv_wr) -> WrError {
        let n = raw.num_sge as u32;
        if self.sge_bound == 0 {
            WrError::ReceivesFromSrq
        } else if n > self.max_sge {
            WrError::TooManySge {
                requested: n,
                max: self.max_sge,
            }
        } else {
            WrError::MessageTooLong {
                total: total_len(raw.sg_list, n),
                max: MAX_MESSAGE,
            }
        }
    }
}

/// The sum of the lengths of the `n` entries at `sges`.
#[inline(always)]
fn total_len(sges: *const ffi::ibv_sge, n: u32) -> u64 {
    // SAFETY: a request's list is the slice of Sges it borrows (Sge is a transparent
    // ibv_sge), at least `n` long; an empty slice's pointer is dangling but aligned.
    let sges = unsafe { std::slice::from_raw_parts(sges, n as usize) };
    sges.iter().map(|s| u64::from(s.length)).sum()
}
