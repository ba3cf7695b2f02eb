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

    /// The transport of a raw `enum ibv_qp_type` value, if it is one of these.
    #[cfg(feature = "cm")]
    pub(crate) fn from_raw(raw: i32) -> Option<Self> {
        [QpType::Rc, QpType::Uc, QpType::Ud]
            .into_iter()
            .find(|t| t.raw().0 as i32 == raw)
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
