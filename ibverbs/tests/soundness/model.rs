//! The property test's independent model of the posting rules: the random requests
//! ([`spec`]) and what the crate must answer for each ([`expected`]), worked out from the
//! rules of the verbs and the granted limits, not from the crate's code.

use proptest::prelude::*;
use rdma_verbs::{QpType, WrError, WrOpcode};

use super::send_ops;

pub(super) const OPCODES: [WrOpcode; 7] = [
    WrOpcode::Send,
    WrOpcode::SendWithImm,
    WrOpcode::RdmaWrite,
    WrOpcode::RdmaWriteWithImm,
    WrOpcode::RdmaRead,
    WrOpcode::CompareSwap,
    WrOpcode::FetchAdd,
];

/// Entry lengths: small ones, and one far over any inline limit (only posted inline).
pub(super) const LENGTHS: [u32; 7] = [0, 1, 7, 8, 64, 1000, 4096];
pub(super) const HUGE: u32 = 1 << 24;

/// One random request.
#[derive(Clone, Debug)]
pub(super) struct Spec {
    pub(super) qp_type: QpType,
    pub(super) opcode: WrOpcode,
    pub(super) lengths: Vec<u32>,
    pub(super) inline: bool,
    pub(super) addressed: bool,
    pub(super) remote_offset: u64,
    pub(super) way: Way,
    /// In a batch: pushed once more than the send queue holds, else once.
    pub(super) overfill: bool,
}

/// How a request is posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Way {
    /// `post_send` of a `SendRequest`.
    PostSend,
    /// `WrBatch::push` of a `SendRequest`.
    Push,
    /// A `BatchRequest` of the batch's method for the operation.
    Builder,
}

pub(super) fn spec() -> impl Strategy<Value = Spec> {
    let qp_type = prop_oneof![Just(QpType::Rc), Just(QpType::Uc), Just(QpType::Ud)];
    let length = prop_oneof![
        20 => prop::sample::select(&LENGTHS[..]),
        1 => Just(HUGE),
    ];
    (
        qp_type,
        prop::sample::select(&OPCODES[..]),
        prop::collection::vec(length, 0..=6),
        any::<bool>(),
        prop::bool::weighted(0.8),
        prop_oneof![9 => (0u64..1024).prop_map(|o| o * 8), 1 => 0u64..8192],
        prop_oneof![Just(Way::PostSend), Just(Way::Push), Just(Way::Builder)],
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(qp_type, opcode, mut lengths, inline, addressed, remote_offset, way, overfill)| {
                if matches!(opcode, WrOpcode::CompareSwap | WrOpcode::FetchAdd) {
                    // An atomic has exactly one (result) entry.
                    lengths.truncate(1);
                    if lengths.is_empty() {
                        lengths.push(8);
                    }
                }
                if !inline {
                    // Huge entries only where they are refused: never moved under emulation.
                    for l in &mut lengths {
                        if *l == HUGE {
                            *l = 64;
                        }
                    }
                }
                Spec {
                    qp_type,
                    opcode,
                    lengths,
                    inline,
                    addressed,
                    remote_offset,
                    way,
                    overfill: overfill && way != Way::PostSend,
                }
            },
        )
}

/// The granted limits of the sending QP that the model checks against.
pub(super) struct Granted {
    pub(super) max_sge: u32,
    pub(super) max_inline: u32,
    /// `max_send_wr`: the most a batch holds.
    pub(super) depth: u32,
}

/// What the crate must answer, worked out from the rules (not from its code): the request's
/// own refusal, else, for a batch pushed past the send queue's depth, the push that does not
/// fit: `Err((index, reason))`.
pub(super) fn expected(
    spec: &Spec,
    granted: &Granted,
    remote_addr: u64,
) -> Result<(), (usize, WrError)> {
    refused(spec, granted, remote_addr).map_err(|reason| (0, reason))?;
    if spec.overfill {
        let depth = granted.depth;
        return Err((depth as usize, WrError::BatchFull { depth }));
    }
    Ok(())
}

/// Why the request itself is refused: the transport's operations, the batch's enabled
/// operations, inline only on sends and writes, the granted entry count, the granted inline
/// size, 2^31, an atomic's 8-byte result and 8-byte aligned target, and a UD address.
fn refused(spec: &Spec, granted: &Granted, remote_addr: u64) -> Result<(), WrError> {
    let Granted {
        max_sge,
        max_inline,
        ..
    } = *granted;
    use WrOpcode as O;
    let opcode = spec.opcode;
    let on_transport = match spec.qp_type {
        QpType::Rc => true,
        QpType::Uc => matches!(
            opcode,
            O::Send | O::SendWithImm | O::RdmaWrite | O::RdmaWriteWithImm
        ),
        QpType::Ud => matches!(opcode, O::Send | O::SendWithImm),
    };
    if !on_transport {
        return Err(WrError::OpcodeNotSupported {
            opcode,
            qp_type: spec.qp_type,
        });
    }
    let enabled = send_ops(spec.qp_type).contains(opcode.send_op().unwrap());
    if spec.way != Way::PostSend && !enabled {
        return Err(WrError::OpcodeNotEnabled { opcode });
    }
    if spec.inline
        && !matches!(
            opcode,
            O::Send | O::SendWithImm | O::RdmaWrite | O::RdmaWriteWithImm
        )
    {
        return Err(WrError::InlineNotSupported { opcode });
    }
    let n = spec.lengths.len() as u32;
    if n > max_sge {
        return Err(WrError::TooManySge {
            requested: n,
            max: max_sge,
        });
    }
    let total: u64 = spec.lengths.iter().map(|&l| u64::from(l)).sum();
    if spec.inline && total > u64::from(max_inline) {
        return Err(WrError::InlineTooLarge {
            total,
            max: max_inline,
        });
    }
    if total > 1 << 31 {
        return Err(WrError::MessageTooLong {
            total,
            max: 1 << 31,
        });
    }
    if matches!(opcode, O::CompareSwap | O::FetchAdd) && total != 8 {
        return Err(WrError::AtomicResultSize {
            opcode,
            len: total,
            required: 8,
        });
    }
    if matches!(opcode, O::CompareSwap | O::FetchAdd) && remote_addr % 8 != 0 {
        return Err(WrError::Misaligned {
            opcode,
            addr: remote_addr,
        });
    }
    if spec.qp_type == QpType::Ud && !spec.addressed {
        return Err(WrError::MissingAddressHandle);
    }
    Ok(())
}
