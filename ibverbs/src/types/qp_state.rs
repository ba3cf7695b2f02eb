//! Queue pair states: `enum ibv_qp_state`, and the path migration state of a connected
//! queue pair, `enum ibv_mig_state`.

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

/// The path migration state of an RC or UC queue pair (`enum ibv_mig_state`, the
/// `path_mig_state` of `struct ibv_qp_attr`), read by
/// [`QueuePair::query`](crate::QueuePair::query).
///
/// A QP without an alternate path reports `Migrated`. Loading one
/// ([`QueuePair::load_alt_path`](crate::QueuePair::load_alt_path)) asks for `Rearm`; the
/// HCA arms the path (`Armed`), and reports `Migrated` again once the QP migrated to it
/// (by itself, or on [`QueuePair::migrate_path`](crate::QueuePair::migrate_path)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathMigState {
    /// `IBV_MIG_MIGRATED`: no alternate path is armed (none was loaded, or the QP migrated
    /// to it).
    Migrated,
    /// `IBV_MIG_REARM`: an alternate path was loaded; the HCA is to arm it.
    Rearm,
    /// `IBV_MIG_ARMED`: the alternate path is ready to migrate to.
    Armed,
    /// A state libibverbs does not know: the raw value.
    Unknown(u32),
}

impl PathMigState {
    pub(crate) fn from_raw(raw: ffi::ibv_mig_state) -> Self {
        use ffi::ibv_mig_state as M;
        match raw {
            M::IBV_MIG_MIGRATED => PathMigState::Migrated,
            M::IBV_MIG_REARM => PathMigState::Rearm,
            M::IBV_MIG_ARMED => PathMigState::Armed,
            other => PathMigState::Unknown(other.0),
        }
    }
}
