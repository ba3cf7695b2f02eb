//! Queue pair states: `enum ibv_qp_state`.

use std::fmt;

use crate::ffi;

/// The state of a queue pair (`enum ibv_qp_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QpState {
    /// RESET: just created.
    Reset,
    /// INIT: receives may be posted.
    Init,
    /// RTR: ready to receive.
    Rtr,
    /// RTS: ready to send.
    Rts,
    /// SQD: send queue drained.
    Sqd,
    /// SQE: send queue error.
    Sqe,
    /// ERROR: every request completes with a flush error.
    Error,
    /// A state libibverbs does not know: the raw value.
    Unknown(u32),
}

impl QpState {
    pub(crate) fn from_raw(raw: ffi::ibv_qp_state) -> Self {
        use ffi::ibv_qp_state as S;
        match raw {
            S::IBV_QPS_RESET => QpState::Reset,
            S::IBV_QPS_INIT => QpState::Init,
            S::IBV_QPS_RTR => QpState::Rtr,
            S::IBV_QPS_RTS => QpState::Rts,
            S::IBV_QPS_SQD => QpState::Sqd,
            S::IBV_QPS_SQE => QpState::Sqe,
            S::IBV_QPS_ERR => QpState::Error,
            other => QpState::Unknown(other.0),
        }
    }
}

/// The state's name in the verbs specification: `RESET`, `INIT`, `RTR`, `RTS`, `SQD`,
/// `SQE`, `ERROR`.
impl fmt::Display for QpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            QpState::Reset => "RESET",
            QpState::Init => "INIT",
            QpState::Rtr => "RTR",
            QpState::Rts => "RTS",
            QpState::Sqd => "SQD",
            QpState::Sqe => "SQE",
            QpState::Error => "ERROR",
            QpState::Unknown(raw) => return write!(f, "unknown state {raw}"),
        };
        f.write_str(name)
    }
}
