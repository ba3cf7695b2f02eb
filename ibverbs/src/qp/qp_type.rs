//! Queue pair transports: `enum ibv_qp_type`.

use std::fmt;

use crate::ffi;

/// The transport of a queue pair (`enum ibv_qp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

impl QpType {
    pub(crate) fn raw(self) -> ffi::ibv_qp_type {
        match self {
            QpType::Rc => ffi::ibv_qp_type::IBV_QPT_RC,
            QpType::Uc => ffi::ibv_qp_type::IBV_QPT_UC,
            QpType::Ud => ffi::ibv_qp_type::IBV_QPT_UD,
        }
    }
}

impl fmt::Display for QpType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QpType::Rc => "RC",
            QpType::Uc => "UC",
            QpType::Ud => "UD",
        })
    }
}
