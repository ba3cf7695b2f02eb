//! The limits a queue was created with (`struct ibv_qp_cap`, `struct ibv_srq_attr`, as the
//! provider granted them) and the check of every work request against them before it
//! reaches the provider.
//!
//! The check is on the data path, so it comes in two steps. The fast one is a single
//! `need & deny == 0`: a request carries one word of requirement bits, computed when it is
//! built ([`send_need`], [`recv_need`]), and a queue caches one word of the bits it does not
//! grant (`deny`). Each bit stands for a set of requests that all fit a queue exactly when
//! the queue grants that bit (an operation, inline or not; an entry count under 16; an
//! inline total up to a power of two), so passing the fast check means fitting, and a
//! list passes when the OR of its words does. What has no bit of its own (16 entries or
//! more, inline data of more than 2^15 bytes, a total over 2^31 bytes, an opcode of 8 or
//! more, an atomic whose result entry is not 8 bytes, inline data from device memory) sets
//! [`SLOW`], which every queue denies, and a UD QP denies every send ([`ANY_SEND`]) so that
//! its address handles are looked at: those requests
//! get the exact check ([`Limits::fits`](crate::wr::Limits::fits)), which sums the lengths
//! in a `u64` (at most `i32::MAX` entries of at most `u32::MAX` bytes cannot overflow it).
//! A receive's word is one bit, its class (an entry count under 15, or [`RECV_SLOW`], the
//! exact check, for the rest), so that a QP posts one receive through a table indexed by it.
//! Working out which limit a refused request broke is left to a cold function.

use crate::context::Context;
use crate::error::{IwarpRule, WrError};
use crate::ffi;
use crate::types::QpType;
use crate::types::{SendOps, WrOpcode};
use crate::wr::keys::KeyCache;
use crate::wr::{Limits, RecvRequest, SendParts, SendRequest, SgList};

/// The longest message RDMA carries: 2^31 bytes.
pub(crate) const MAX_MESSAGE: u64 = 1 << 31;
/// The length of an atomic's result entry: the 8 bytes the atomic reads.
const ATOMIC_RESULT: u64 = 8;
/// The alignment of an atomic's remote address: the 8 bytes it reaches.
pub(crate) const ATOMIC_ALIGN: u64 = 8;

/// Set in a request's word when only the exact check can tell whether it fits; denied by
/// every queue.
pub(crate) const SLOW: u64 = 1 << 63;
/// Set in every send request's word; denied by UD QPs, whose sends' address handles only
/// the exact check looks at.
pub(crate) const ANY_SEND: u64 = 1 << 62;
/// Set in the word of a request with entries of [`DeviceMemory`](crate::DeviceMemory) (by
/// their type); denied by no queue. Inline data from them is refused: made inline, the
/// request's word becomes [`SLOW`] (keeping this bit), and the exact check refuses it.
pub(crate) const DEVICE_MEMORY: u64 = 1 << 61;
/// A send's bits: `1 << opcode` (opcodes under 8), or `1 << (8 + opcode)` with inline data.
const SEND_OP: u32 = 0;
/// A send's bits: `1 << (16 + n)` for `n` entries, `n` under 16.
const SEND_SGE: u32 = 16;
/// A send's bits with inline data: `1 << (32 + b)` for a total of at most `2^b` bytes (and
/// more than `2^(b-1)`, or 0 or 1 for `b` 0), `b` under 16: a power-of-two total, such as
/// 64 bytes in a `max_inline_data` of 64, takes the fast check.
const SEND_INLINE: u32 = 32;

/// The requirement word of a send of raw `opcode` over the list `sg`, without inline data.
/// An atomic (one entry) whose result entry is not 8 bytes takes the exact check, which
/// refuses it.
#[inline]
pub(crate) fn send_need(opcode: ffi::ibv_wr_opcode, sg: SgList<'_>) -> u64 {
    let (total, n) = (sg.total_len(), sg.len());
    if opcode.0 >= 8
        || n >= 16
        || total > MAX_MESSAGE
        || (has(ops::ATOMICS, opcode.0) && total != ATOMIC_RESULT)
    {
        return SLOW;
    }
    ANY_SEND | 1 << (SEND_OP + opcode.0) | 1 << (SEND_SGE + n)
}

/// The requirement word `need` of a send over the list `sg` once it carries its data
/// inline (called once per request). From [`DEVICE_MEMORY`], it is [`SLOW`]: the exact
/// check refuses it.
#[inline]
pub(crate) fn inline_need(need: u64, sg: SgList<'_>) -> u64 {
    if need & (SLOW | DEVICE_MEMORY) != 0 {
        return SLOW | need & DEVICE_MEMORY;
    }
    let total = sg.total_len();
    if total > 1 << 15 {
        return SLOW;
    }
    let op = need & 0xff;
    // The b with 2^(b-1) < total <= 2^b (b = 0 for 0 and 1).
    let b = u64::BITS - total.saturating_sub(1).leading_zeros();
    let bucket = 1 << (SEND_INLINE + b);
    need & !0xff | op << 8 | bucket
}

/// The classes of receives: a receive's word is one bit below this.
pub(crate) const RECV_CLASSES: usize = 16;
/// A receive's word when only the exact check can tell whether it fits (its last class);
/// denied by every receive queue.
const RECV_SLOW: u64 = 1 << (RECV_CLASSES - 1);

/// The requirement word of a receive over the `n` entries of `sg`: `1 << n` for `n`
/// under 15 and a total of at most 2^31 bytes, else [`RECV_SLOW`]. Always one bit below
/// [`RECV_CLASSES`]: the QP's post path indexes a table with it. The total is summed
/// whatever `n` (it cannot overflow, see the module docs): skipping it for long lists made
/// the compiler load [`RECV_SLOW`] twice on the path of one entry.
#[inline]
pub(crate) fn recv_need(sg: SgList<'_>) -> u64 {
    let (total, n) = (sg.total_len(), sg.len());
    if n >= RECV_SLOW.trailing_zeros() || total > MAX_MESSAGE {
        RECV_SLOW
    } else {
        1 << n
    }
}

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
    pub const ATOMIC_WRITE: u32 = bit(O::IBV_WR_ATOMIC_WRITE);
    /// What only the extended send API posts.
    pub const BATCH_ONLY: u32 = ATOMIC_WRITE;
    /// What may carry inline data.
    pub const INLINE: u32 = SENDS | WRITES;
}

/// The operations a transport has.
fn transport_ops(qp_type: QpType) -> u32 {
    match qp_type {
        QpType::Rc => {
            ops::SENDS | ops::WRITES | ops::READ | ops::ATOMICS | ops::BIND_MW | ops::ATOMIC_WRITE
        }
        QpType::Uc => ops::SENDS | ops::WRITES | ops::BIND_MW,
        QpType::Ud => ops::SENDS,
    }
}

/// Whether `mask` has the bit of raw opcode `op`. Every opcode a request can be built with
/// is below 32 (the constructors are the crate's), so the shift is taken as it comes.
#[inline(always)]
fn has(mask: u32, op: u32) -> bool {
    debug_assert!(op < 32, "opcode {op}");
    mask.wrapping_shr(op) & 1 != 0
}

/// The send queue limits of a queue pair.
#[derive(Clone, Debug)]
pub(crate) struct SendLimits {
    /// The requirement bits the QP does not grant (see the module docs).
    deny: u64,
    /// The operations allowed: bit `opcode` without inline data, bit `32 + opcode` with.
    ops: u64,
    /// The largest total length: `[MAX_MESSAGE, max_inline_data]`.
    max_total: [u64; 2],
    max_sge: u32,
    max_inline: u32,
    /// The granted `max_send_wr`.
    depth: u32,
    qp_type: QpType,
    /// On iWARP (no atomics), the QP's context, whose read sinks are the regions a read may
    /// not land in; `None` on other transports.
    iwarp: Option<Context>,
    /// The QP's protection domain, which UD address handles must share.
    pd: *mut ffi::ibv_pd,
    /// For a [`WrBatch`](crate::WrBatch): the operations its QP was created for.
    send_ops: Option<SendOps>,
    /// The check that the entries are of the QP's PD.
    keys: KeyCache,
}

impl SendLimits {
    /// The limits of a QP of `qp_type` in `pd` that was granted `cap`.
    pub(crate) fn new(qp_type: QpType, cap: &ffi::ibv_qp_cap, pd: *mut ffi::ibv_pd) -> Self {
        SendLimits {
            deny: 0,
            ops: op_bits(transport_ops(qp_type) & !ops::BATCH_ONLY),
            max_total: [MAX_MESSAGE, u64::from(cap.max_inline_data).min(MAX_MESSAGE)],
            max_sge: cap.max_send_sge,
            max_inline: cap.max_inline_data,
            depth: cap.max_send_wr,
            qp_type,
            iwarp: None,
            pd,
            send_ops: None,
            keys: KeyCache::none(),
        }
        .with_deny()
    }

    /// These limits with the check that the entries are of `keys`' PD.
    pub(crate) fn with_keys(mut self, keys: KeyCache) -> Self {
        self.keys = keys;
        self
    }

    /// These limits on `ctx`, of an iWARP device: without atomics
    /// ([`IwarpRule::NoAtomics`]), and every read's sink checked against the context's
    /// read sinks ([`IwarpRule::ReadSinkNeedsRemoteWrite`]) by the exact check.
    pub(crate) fn for_iwarp(mut self, ctx: &Context) -> Self {
        self.iwarp = Some(ctx.clone());
        self.ops = op_bits(self.transport_ops() & !ops::BATCH_ONLY);
        self.with_deny()
    }

    /// Whether the QP's device is iWARP ([`for_iwarp`](Self::for_iwarp)).
    fn is_iwarp(&self) -> bool {
        self.iwarp.is_some()
    }

    /// The operations of the QP's transport on its device.
    fn transport_ops(&self) -> u32 {
        let all = transport_ops(self.qp_type);
        if self.is_iwarp() {
            all & !(ops::ATOMICS | ops::ATOMIC_WRITE)
        } else {
            all
        }
    }

    /// These limits with `deny` worked out from the others.
    fn with_deny(mut self) -> Self {
        let mut deny = SLOW;
        for op in 0..8 {
            if self.ops >> op & 1 == 0 {
                deny |= 1 << (SEND_OP + op);
            }
            if self.ops >> (32 + op) & 1 == 0 {
                deny |= 1 << (SEND_OP + 8 + op);
            }
        }
        for n in 0..16 {
            if n > self.max_sge {
                deny |= 1 << (SEND_SGE + n);
            }
        }
        for b in 0..16 {
            if 1 << b > self.max_inline {
                deny |= 1 << (SEND_INLINE + b);
            }
        }
        if self.qp_type == QpType::Ud {
            deny |= ANY_SEND;
        }
        if self.is_iwarp() {
            deny |= 1 << (SEND_OP + ffi::ibv_wr_opcode::IBV_WR_RDMA_READ.0);
        }
        self.deny = deny;
        self
    }

    /// The QP's transport.
    pub(crate) fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// Whether requests of raw `opcode` (without inline data) may be posted: the operation
    /// exists on the transport and, for a batch, was enabled.
    pub(crate) fn allows(&self, opcode: ffi::ibv_wr_opcode) -> bool {
        opcode.0 < 32 && self.ops >> opcode.0 & 1 != 0
    }

    /// These limits narrowed to the operations the extended send API was created for.
    pub(crate) fn for_batch(mut self, send_ops: SendOps) -> Self {
        let mut enabled = 0u32;
        for op in 0..32 {
            let raw = WrOpcode::from_raw(ffi::ibv_wr_opcode(op));
            if raw.send_op().is_some_and(|flag| send_ops.contains(flag)) {
                enabled |= 1 << op;
            }
        }
        self.ops = op_bits(self.transport_ops() & enabled);
        self.send_ops = Some(send_ops);
        self.with_deny()
    }

    /// The exact check of a request's `parts`. Inlined where a batch request is pushed,
    /// whose operation and flags are then known: the tests that cannot fail fold away.
    #[inline(always)]
    pub(crate) fn fits_parts(&self, p: &SendParts<'_>) -> bool {
        let inline = p.flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0;
        // The operation's bit in `ops`: IBV_SEND_INLINE is 8, so `inline << 2` is 32 or 0.
        let bit = p.opcode.0.wrapping_add(inline << 2);
        debug_assert!(p.opcode.0 < 32 && inline >> 3 <= 1);
        self.ops.wrapping_shr(bit) & 1 != 0
            && !(p.device() && inline != 0)
            && p.num_sge() <= self.max_sge
            && fits_total(p, self.max_total[(inline >> 3) as usize])
            && (self.qp_type != QpType::Ud || self.address_fits(p))
            && aligned(p)
            && self.sink_fits(p)
            && self.keys.fits(p.sg().entries())
    }

    /// Whether `p`, if a read on iWARP, lands in regions with remote write.
    #[inline(always)]
    fn sink_fits(&self, p: &SendParts<'_>) -> bool {
        if !self.is_iwarp() || p.opcode != ffi::ibv_wr_opcode::IBV_WR_RDMA_READ {
            return true;
        }
        self.sinks_allow(p)
    }

    /// [`sink_fits`](Self::sink_fits) of a read on iWARP.
    #[inline(never)]
    fn sinks_allow(&self, p: &SendParts<'_>) -> bool {
        let sinks = self.iwarp.as_ref().and_then(Context::read_sinks);
        sinks.map_or(true, |sinks| sinks.allow(p.sg().entries()))
    }

    /// Whether a UD send's address handle is set and of the QP's PD.
    #[inline(always)]
    fn address_fits(&self, p: &SendParts<'_>) -> bool {
        p.has_address_in(self.pd)
    }

    /// Which limit `p` broke (it did not fit).
    #[cold]
    #[inline(never)]
    pub(crate) fn refusal_parts(&self, p: SendParts<'_>) -> WrError {
        let p = &p;
        let opcode = WrOpcode::from_raw(p.opcode);
        let op = p.opcode.0;
        let inline = p.flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0 != 0;
        if self.is_iwarp() && has(ops::ATOMICS | ops::ATOMIC_WRITE, op) {
            return WrError::Iwarp {
                opcode,
                rule: IwarpRule::NoAtomics,
            };
        }
        if !self.sink_fits(p) {
            return WrError::Iwarp {
                opcode,
                rule: IwarpRule::ReadSinkNeedsRemoteWrite,
            };
        }
        if !has(transport_ops(self.qp_type), op) {
            return WrError::OpcodeNotSupported {
                opcode,
                qp_type: self.qp_type,
            };
        }
        if self.send_ops.is_none() && has(ops::BATCH_ONLY, op) {
            return WrError::BatchOnly { opcode };
        }
        if self.send_ops.is_some() && opcode.send_op().is_none() {
            return WrError::NotInBatch { opcode };
        }
        if self.ops & 1 << op == 0 {
            return WrError::OpcodeNotEnabled { opcode };
        }
        if inline && !has(ops::INLINE, op) {
            return WrError::InlineNotSupported { opcode };
        }
        if inline && p.device() {
            return WrError::InlineFromDeviceMemory { opcode };
        }
        if p.num_sge() > self.max_sge {
            return WrError::TooManySge {
                requested: p.num_sge(),
                max: self.max_sge,
            };
        }
        let total = p.sg().total_len();
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
        if has(ops::ATOMICS, op) && total != ATOMIC_RESULT {
            return WrError::AtomicResultSize {
                opcode,
                len: total,
                required: ATOMIC_RESULT,
            };
        }
        if !aligned(p) {
            return WrError::Misaligned {
                opcode,
                addr: p.remote_addr,
            };
        }
        if let Err(foreign) = self.keys.check(p.sg().entries()) {
            return foreign;
        }
        if p.ah().is_null() {
            WrError::MissingAddressHandle
        } else {
            WrError::ForeignAddressHandle
        }
    }
}

/// Whether the entries of `p` add up to at most `max` bytes and, for an atomic, to the
/// 8 bytes of its result.
#[inline(always)]
fn fits_total(p: &SendParts<'_>, max: u64) -> bool {
    let total = p.sg().total_len();
    total <= max && (!has(ops::ATOMICS, p.opcode.0) || total == ATOMIC_RESULT)
}

/// The `ops` bits of the operations in `mask`: bit `opcode` without inline data, bit
/// `32 + opcode` with (for those that may carry it).
fn op_bits(mask: u32) -> u64 {
    u64::from(mask) | u64::from(mask & ops::INLINE) << 32
}

/// Whether an atomic's remote address (compare-and-swap, fetch-and-add, atomic write) is
/// aligned to the 8 bytes it reaches, as the verbs require (other requests always are).
#[inline(always)]
fn aligned(p: &SendParts<'_>) -> bool {
    !has(ops::ATOMICS | ops::ATOMIC_WRITE, p.opcode.0) || p.remote_addr % ATOMIC_ALIGN == 0
}

/// Checks a send against the limits: its operation exists on the transport (and was
/// enabled, for a batch), it has no more entries than `max_send_sge`, its length is at most
/// 2^31 bytes or, inline, `max_inline_data` (from host memory only), an atomic's result is
/// 8 bytes and its remote address 8-byte aligned, and a UD send has an address handle of
/// the QP's PD, as are the regions of its entries.
impl Limits<SendRequest<'_>> for SendLimits {
    #[inline(always)]
    fn deny(&self) -> u64 {
        self.deny
    }

    #[inline(always)]
    fn known(&self, wr: &SendRequest<'_>) -> bool {
        self.keys.known(wr.sg().entries())
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    fn fits(&self, wr: &SendRequest<'_>) -> bool {
        self.fits_parts(&SendParts::of(wr))
    }

    #[cold]
    #[inline(never)]
    fn refusal(&self, wr: &SendRequest<'_>) -> WrError {
        self.refusal_parts(SendParts::of(wr))
    }
}

/// The receive queue limits of a queue pair or SRQ.
#[derive(Clone, Debug)]
pub(crate) struct RecvLimits {
    /// The requirement bits the queue does not grant: `1 << n` for `n` over `max_sge`,
    /// [`RECV_SLOW`]; all of them for a QP whose receives come from an SRQ.
    deny: u64,
    /// `max_sge + 1`, or 0 for a QP whose receives come from an SRQ (nothing fits).
    sge_bound: u32,
    max_sge: u32,
    /// The granted `max_recv_wr` or SRQ `max_wr`.
    depth: u32,
    /// The check that the entries are of the queue's PD.
    keys: KeyCache,
}

impl RecvLimits {
    /// The limits of a queue granted `max_wr` requests of `max_sge` entries.
    pub(crate) fn new(max_wr: u32, max_sge: u32) -> Self {
        RecvLimits {
            deny: RECV_SLOW | u64::MAX.checked_shl(max_sge.saturating_add(1)).unwrap_or(0),
            sge_bound: max_sge.saturating_add(1),
            max_sge,
            depth: max_wr,
            keys: KeyCache::none(),
        }
    }

    /// These limits with the check that the entries are of `keys`' PD.
    pub(crate) fn with_keys(mut self, keys: KeyCache) -> Self {
        self.keys = keys;
        self
    }

    /// The limits of a QP that takes its receives from an SRQ: none may be posted to it.
    pub(crate) fn srq() -> Self {
        RecvLimits {
            deny: u64::MAX,
            sge_bound: 0,
            max_sge: 0,
            depth: 0,
            keys: KeyCache::none(),
        }
    }
}

/// Checks a receive: the queue takes receives, it has at most `max_sge` entries, they add
/// up to at most 2^31 bytes, and their regions are of the queue's PD.
impl Limits<RecvRequest<'_>> for RecvLimits {
    #[inline(always)]
    fn deny(&self) -> u64 {
        self.deny
    }

    #[inline(always)]
    fn known(&self, wr: &RecvRequest<'_>) -> bool {
        self.keys.known(wr.sg().entries())
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    fn fits(&self, wr: &RecvRequest<'_>) -> bool {
        let sg = wr.sg();
        sg.len() < self.sge_bound && sg.total_len() <= MAX_MESSAGE && self.keys.fits(sg.entries())
    }

    #[cold]
    #[inline(never)]
    fn refusal(&self, wr: &RecvRequest<'_>) -> WrError {
        let sg = wr.sg();
        let n = sg.len();
        if self.sge_bound == 0 {
            WrError::ReceivesFromSrq
        } else if n > self.max_sge {
            WrError::TooManySge {
                requested: n,
                max: self.max_sge,
            }
        } else if let Err(foreign) = self.keys.check(sg.entries()) {
            foreign
        } else {
            WrError::MessageTooLong {
                total: sg.total_len(),
                max: MAX_MESSAGE,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wr::{DeviceMemory, HostMemory, Linked, Sge};

    /// The rule of entries of device memory, made from their type: a request over them
    /// passes the fast check as any other without inline data, and with inline data fails
    /// it and is refused by the exact check, naming the reason, on a QP and in a batch. (A
    /// real dma-buf region needs a device that registers one; rxe does not.)
    #[test]
    fn inline_data_from_device_memory_is_refused() {
        let cap = ffi::ibv_qp_cap {
            max_send_wr: 1,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 64,
        };
        let post = SendLimits::new(QpType::Rc, &cap, std::ptr::null_mut());
        let batch = post.clone().for_batch(SendOps::SEND);
        let host = [Sge::<HostMemory>::new(0x1000, 16, 1)];
        let device = [Sge::<DeviceMemory>::new(0x1000, 16, 1)];
        for limits in [post, batch] {
            for wr in [
                SendRequest::send(1, &host),
                SendRequest::send(1, &host).inline(),
                SendRequest::send(1, &device),
            ] {
                assert_eq!(wr.need() & limits.deny(), 0);
                assert!(limits.fits(&wr));
            }
            let wr = SendRequest::send(1, &device).inline();
            assert_ne!(wr.need() & limits.deny(), 0);
            assert!(!limits.fits(&wr));
            assert_eq!(
                limits.refusal(&wr),
                WrError::InlineFromDeviceMemory {
                    opcode: WrOpcode::Send
                }
            );
        }
    }

    /// An atomic to a remote address off 8-byte alignment fails the fast check and is
    /// refused by the exact check, naming the address, on a QP and in a batch; an aligned
    /// one takes the fast check.
    #[test]
    fn atomics_off_8_byte_alignment_are_refused() {
        let cap = ffi::ibv_qp_cap {
            max_send_wr: 1,
            max_recv_wr: 1,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        };
        let post = SendLimits::new(QpType::Rc, &cap, std::ptr::null_mut());
        let ops = SendOps::ATOMIC_CMP_AND_SWP | SendOps::ATOMIC_FETCH_AND_ADD;
        let batch = post.clone().for_batch(ops);
        let result = Sge::<HostMemory>::new(0x1000, 8, 1);
        for limits in [post, batch] {
            for addr in [0x2000, 0x2008, 0x2001, 0x2004, 0x200f] {
                let remote = crate::wr::RemoteMemory::new(addr, 8, 2);
                for (wr, opcode) in [
                    (
                        SendRequest::compare_swap(1, &result, remote, 0, 1),
                        WrOpcode::CompareSwap,
                    ),
                    (
                        SendRequest::fetch_add(2, &result, remote, 1),
                        WrOpcode::FetchAdd,
                    ),
                ] {
                    if addr % 8 == 0 {
                        assert_eq!(wr.need() & limits.deny(), 0, "{addr:#x}");
                        assert!(limits.fits(&wr));
                    } else {
                        assert_ne!(wr.need() & limits.deny(), 0, "{addr:#x}");
                        assert!(!limits.fits(&wr));
                        assert_eq!(limits.refusal(&wr), WrError::Misaligned { opcode, addr });
                    }
                }
            }
        }
    }

    /// The fast check never lets through an inline request the exact check refuses, and a
    /// power-of-two total up to `max_inline_data` takes it.
    #[test]
    fn inline_buckets_agree_with_the_exact_check() {
        let write = ffi::ibv_wr_opcode::IBV_WR_RDMA_WRITE;
        for max_inline in [0, 1, 2, 63, 64, 65, 127, 128, 220, 1 << 15, 1 << 16] {
            let cap = ffi::ibv_qp_cap {
                max_send_wr: 1,
                max_recv_wr: 1,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: max_inline,
            };
            let limits = SendLimits::new(QpType::Rc, &cap, std::ptr::null_mut());
            for total in (0..=70).chain([127, 128, 129, 220, 221, (1 << 15) - 1, 1 << 15]) {
                let sges = [Sge::<HostMemory>::new(0x1000, total, 1)];
                let sg = SgList::new(&sges);
                let need = inline_need(send_need(write, sg), sg);
                let fits = u64::from(total) <= u64::from(max_inline);
                if need & limits.deny == 0 {
                    assert!(fits, "{total} bytes passed the fast check of {max_inline}");
                }
                if fits && total.is_power_of_two() {
                    assert_eq!(need & limits.deny, 0, "{total} of {max_inline}");
                }
            }
        }
    }
}
