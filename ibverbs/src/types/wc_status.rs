//! Work completion statuses: `enum ibv_wc_status`.

use std::fmt;

use crate::ffi;

/// The status of a work completion (`enum ibv_wc_status`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct WcStatus(pub ffi::ibv_wc_status);

impl WcStatus {
    /// `IBV_WC_SUCCESS`.
    pub const SUCCESS: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_SUCCESS);
    /// `IBV_WC_LOC_LEN_ERR`: a receive buffer was too small, or a send too large.
    pub const LOC_LEN_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_LOC_LEN_ERR);
    /// `IBV_WC_LOC_QP_OP_ERR`: the QP could not execute the request.
    pub const LOC_QP_OP_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_LOC_QP_OP_ERR);
    /// `IBV_WC_LOC_PROT_ERR`: an SGE is outside its MR or lacks access.
    pub const LOC_PROT_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_LOC_PROT_ERR);
    /// `IBV_WC_WR_FLUSH_ERR`: flushed because the QP went to the error state.
    pub const WR_FLUSH_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_WR_FLUSH_ERR);
    /// `IBV_WC_REM_INV_REQ_ERR`: the responder found the request invalid.
    pub const REM_INV_REQ_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_REM_INV_REQ_ERR);
    /// `IBV_WC_REM_ACCESS_ERR`: the remote key, address or access rights were wrong.
    pub const REM_ACCESS_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_REM_ACCESS_ERR);
    /// `IBV_WC_REM_OP_ERR`: the responder could not complete the operation.
    pub const REM_OP_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_REM_OP_ERR);
    /// `IBV_WC_RETRY_EXC_ERR`: the transport retry count was exceeded (no answer).
    pub const RETRY_EXC_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_RETRY_EXC_ERR);
    /// `IBV_WC_RNR_RETRY_EXC_ERR`: the receiver had no receive posted, too often.
    pub const RNR_RETRY_EXC_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_RNR_RETRY_EXC_ERR);
    /// `IBV_WC_MW_BIND_ERR`: a memory window bind failed.
    pub const MW_BIND_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_MW_BIND_ERR);
    /// `IBV_WC_GENERAL_ERR`.
    pub const GENERAL_ERR: Self = WcStatus(ffi::ibv_wc_status::IBV_WC_GENERAL_ERR);

    /// Whether this is `IBV_WC_SUCCESS`.
    pub fn is_success(self) -> bool {
        self == Self::SUCCESS
    }

    /// A short lowercase description, such as `"remote access error"`; the same style for
    /// every status (rdma-core's `ibv_wc_status_str` capitalises one of them).
    pub fn as_str(self) -> &'static str {
        self.names().map_or("unknown status", |(_, text)| text)
    }

    /// The status's name without the `IBV_WC_` prefix, such as `"REM_ACCESS_ERR"`; `None`
    /// for a value libibverbs does not define.
    pub fn name(self) -> Option<&'static str> {
        self.names().map(|(name, _)| name)
    }

    fn names(self) -> Option<(&'static str, &'static str)> {
        NAMES.get(usize::try_from(self.0 .0).ok()?).copied()
    }
}

/// Name and description of each `enum ibv_wc_status` value, indexed by it.
const NAMES: [(&str, &str); 24] = [
    ("SUCCESS", "success"),
    ("LOC_LEN_ERR", "local length error"),
    ("LOC_QP_OP_ERR", "local QP operation error"),
    ("LOC_EEC_OP_ERR", "local EE context operation error"),
    ("LOC_PROT_ERR", "local protection error"),
    ("WR_FLUSH_ERR", "work request flushed error"),
    ("MW_BIND_ERR", "memory window bind error"),
    ("BAD_RESP_ERR", "bad response error"),
    ("LOC_ACCESS_ERR", "local access error"),
    ("REM_INV_REQ_ERR", "remote invalid request error"),
    ("REM_ACCESS_ERR", "remote access error"),
    ("REM_OP_ERR", "remote operation error"),
    ("RETRY_EXC_ERR", "transport retry counter exceeded"),
    ("RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"),
    ("LOC_RDD_VIOL_ERR", "local RDD violation error"),
    ("REM_INV_RD_REQ_ERR", "remote invalid RD request error"),
    ("REM_ABORT_ERR", "remote aborted error"),
    ("INV_EECN_ERR", "invalid EE context number error"),
    ("INV_EEC_STATE_ERR", "invalid EE context state error"),
    ("FATAL_ERR", "fatal error"),
    ("RESP_TIMEOUT_ERR", "response timeout error"),
    ("GENERAL_ERR", "general error"),
    ("TM_ERR", "tag matching error"),
    ("TM_RNDV_INCOMPLETE", "tag matching rendezvous incomplete"),
];

/// The description and the name, such as `remote access error (REM_ACCESS_ERR)`; a value
/// libibverbs does not define prints as `unknown status (99)`.
impl fmt::Display for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.names() {
            Some((name, text)) => write!(f, "{text} ({name})"),
            None => write!(f, "unknown status ({})", self.0 .0),
        }
    }
}

impl fmt::Debug for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_prints_in_one_style() {
        for raw in 0..NAMES.len() as u32 {
            let status = WcStatus(ffi::ibv_wc_status(raw));
            let text = status.to_string();
            let name = status.name().unwrap();
            assert_eq!(text, format!("{} ({name})", status.as_str()));
            // Lowercase except acronyms (QP, EE, RNR, RDD), never a capital first word.
            let first = text.split(' ').next().unwrap();
            assert!(
                first == "RNR" || first.chars().all(|c| c.is_ascii_lowercase()),
                "{text}"
            );
        }
        assert_eq!(
            WcStatus(ffi::ibv_wc_status(99)).to_string(),
            "unknown status (99)"
        );
    }
}
