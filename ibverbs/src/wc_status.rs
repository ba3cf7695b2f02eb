//! Work completion statuses: `enum ibv_wc_status`.

use std::ffi::CStr;
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

    /// The verbs description, such as `"remote access error"` (`ibv_wc_status_str`).
    pub fn as_str(self) -> &'static str {
        // SAFETY: ibv_wc_status_str returns a static string for any value.
        let s = unsafe { CStr::from_ptr(ffi::ibv_wc_status_str(self.0)) };
        s.to_str().unwrap_or("unknown")
    }
}

impl fmt::Display for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.as_str(), self.0 .0)
    }
}

impl fmt::Debug for WcStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
