//! Packet pacing: [`RateLimit`] and [`QueuePair::modify_rate_limit`]
//! (`ibv_modify_qp_rate_limit`), checked against the device's `packet_pacing_caps`.

use super::QueuePair;
use crate::error::{check, Error, Result};
use crate::ffi;

/// The send rate limit of [`QueuePair::modify_rate_limit`] (`struct
/// ibv_qp_rate_limit_attr`): the most the QP sends, in kbps, while its send queue has
/// requests and the link is free.
///
/// Start from [`RateLimit::new`] (no limit, the device's burst and packet sizes) and set
/// what differs: `RateLimit::new().rate_limit(1_000_000).max_burst_sz(65536)`. The names
/// are those of the C struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    rate_limit: u32,
    max_burst_sz: u32,
    typical_pkt_sz: u16,
}

impl RateLimit {
    /// No limit (rate 0), and the device's default burst and packet sizes (0 each).
    pub fn new() -> Self {
        Self::default()
    }

    /// The rate in kbps (`rate_limit`); 0 removes the QP's limit. Any other value must lie
    /// within the device's `qp_rate_limit_min..=qp_rate_limit_max`.
    pub fn rate_limit(mut self, kbps: u32) -> Self {
        self.rate_limit = kbps;
        self
    }

    /// The largest burst in bytes (`max_burst_sz`); 0 for the device's default.
    pub fn max_burst_sz(mut self, bytes: u32) -> Self {
        self.max_burst_sz = bytes;
        self
    }

    /// The typical packet size in bytes (`typical_pkt_sz`), which with the burst size
    /// sets the gap between bursts; 0 for the device's default, the port's MTU.
    pub fn typical_pkt_sz(mut self, bytes: u16) -> Self {
        self.typical_pkt_sz = bytes;
        self
    }

    /// The C struct.
    pub(super) fn to_raw(self) -> ffi::ibv_qp_rate_limit_attr {
        ffi::ibv_qp_rate_limit_attr {
            rate_limit: self.rate_limit,
            max_burst_sz: self.max_burst_sz,
            typical_pkt_sz: self.typical_pkt_sz,
            ..Default::default()
        }
    }
}

/// What [`QueuePair::modify_rate_limit`] asks for, in its errors.
const WHAT: &str = "packet pacing (ibv_modify_qp_rate_limit)";

impl QueuePair {
    /// Sets the QP's send rate limit (`ibv_modify_qp_rate_limit`), which the device
    /// enforces by pacing its packets.
    ///
    /// Checked first against the device's `packet_pacing_caps`
    /// ([`query_device`](crate::Context::query_device)): a device reporting no packet
    /// pacing (`qp_rate_limit_max` 0: rxe, siw), or none for the QP's type
    /// (`supported_qpts`), fails with [`Error::Unsupported`]; a rate other than 0 outside
    /// `qp_rate_limit_min..=qp_rate_limit_max` with [`Error::OutOfRange`] naming both. The
    /// verb changes a QP in RTS (an RTS to RTS modify): a QP moved to ERROR is refused by
    /// the provider ([`Error::Verb`], `EINVAL`), as is a burst or packet size the device
    /// cannot take. A provider without the verb (`EOPNOTSUPP`) gives [`Error::Unsupported`]
    /// too.
    pub fn modify_rate_limit(&self, limit: &RateLimit) -> Result<()> {
        let caps = self.pd().context().query_device()?.packet_pacing_caps;
        let qpt_bit = 1u32.checked_shl(self.qp_type().raw().0).unwrap_or(0);
        if caps.qp_rate_limit_max == 0 {
            return Err(Error::Unsupported {
                what: WHAT,
                missing: "qp_rate_limit_max in packet_pacing_caps",
            });
        }
        if caps.supported_qpts & qpt_bit == 0 {
            return Err(Error::Unsupported {
                what: WHAT,
                missing: "the QP's type in packet_pacing_caps.supported_qpts",
            });
        }
        let kbps = limit.rate_limit;
        if kbps != 0 && !(caps.qp_rate_limit_min..=caps.qp_rate_limit_max).contains(&kbps) {
            return Err(Error::OutOfRange {
                what: "rate limit (kbps)",
                value: kbps.into(),
                min: caps.qp_rate_limit_min.into(),
                max: caps.qp_rate_limit_max.into(),
            });
        }
        let rc = self.raw.modify_rate_limit(limit.to_raw());
        check("ibv_modify_qp_rate_limit", rc)
            .map_err(|e| e.or_unsupported(WHAT, "modify_qp_rate_limit in its provider"))
    }
}
