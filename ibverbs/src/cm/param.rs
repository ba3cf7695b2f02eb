//! Connection parameters (`struct rdma_conn_param`) and the private data limits, checked
//! before anything reaches librdmacm.

use rdmacm_sys as cm;

use super::PortSpace;
use crate::error::{Error, Result};

/// Which CM message carries the private data: its size limit depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// `rdma_connect`: an IB CM REQ (SIDR REQ for UD), which also carries rdma_cm's 36-byte
    /// IP header.
    Connect,
    /// `rdma_accept`: a REP (SIDR REP for UD).
    Accept,
    /// `rdma_reject`: a REJ (SIDR REP for UD).
    Reject,
}

/// The most private data `msg` carries on an InfiniBand or RoCE device in `ps`: the IB CM
/// message's private data field (REQ 92, REP 196, REJ 148, SIDR REQ 216, SIDR REP 136
/// bytes) less rdma_cm's 36-byte header on the connecting side. (iWARP's MPA allows more;
/// the IB limits are the ones checked.)
pub fn private_data_limit(msg: Message, ps: PortSpace) -> usize {
    const CMA_HDR: usize = 36;
    match (ps, msg) {
        (PortSpace::Udp, Message::Connect) => 216 - CMA_HDR,
        (PortSpace::Udp, _) => 136,
        (_, Message::Connect) => 92 - CMA_HDR,
        (_, Message::Accept) => 196,
        (_, Message::Reject) => 148,
    }
}

/// Fails with [`Error::OutOfRange`] if `data` is longer than `msg` carries in `ps`.
pub(crate) fn check_private_data(data: &[u8], msg: Message, ps: PortSpace) -> Result<u8> {
    let max = private_data_limit(msg, ps);
    if data.len() > max {
        return Err(Error::OutOfRange {
            what: "private data length",
            value: data.len() as u64,
            min: 0,
            max: max as u64,
        });
    }
    Ok(data.len() as u8) // every limit is below 256
}

/// The parameters of [`CmId::connect`](super::CmId::connect) and
/// [`CmId::accept`](super::CmId::accept) (`struct rdma_conn_param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnParam<'a> {
    /// Sent to the peer in the REQ or REP; at most 56 bytes for an RC connect, 196 for an
    /// accept, 180 / 136 for UD (see [`private_data_limit`]).
    pub private_data: &'a [u8],
    /// RDMA reads and atomics the peer may have outstanding to us (`responder_resources`).
    pub responder_resources: u8,
    /// RDMA reads and atomics we may have outstanding to the peer (`initiator_depth`).
    pub initiator_depth: u8,
    /// Whether the HCA does end-to-end flow control (`flow_control`).
    pub flow_control: bool,
    /// Transport retries on a timeout, 0..=7 (`retry_count`; ignored by an accept).
    pub retry_count: u8,
    /// Retries after a receiver-not-ready NAK, 0..=7, 7 meaning forever (`rnr_retry_count`).
    pub rnr_retry_count: u8,
}

impl Default for ConnParam<'_> {
    /// No private data, one read/atomic each way, flow control, 7 retries of each kind.
    fn default() -> Self {
        ConnParam {
            private_data: &[],
            responder_resources: 1,
            initiator_depth: 1,
            flow_control: true,
            retry_count: 7,
            rnr_retry_count: 7,
        }
    }
}

impl ConnParam<'_> {
    /// The C struct for `msg` in `ps`, after checking every field; it points into the private
    /// data, so it is used while that lives.
    pub(crate) fn to_c(self, msg: Message, ps: PortSpace) -> Result<cm::rdma_conn_param> {
        let len = check_private_data(self.private_data, msg, ps)?;
        for (what, value) in [
            ("retry count", self.retry_count),
            ("RNR retry count", self.rnr_retry_count),
        ] {
            if value > 7 {
                return Err(Error::OutOfRange {
                    what,
                    value: value.into(),
                    min: 0,
                    max: 7,
                });
            }
        }
        Ok(cm::rdma_conn_param {
            private_data: if len == 0 {
                std::ptr::null()
            } else {
                self.private_data.as_ptr().cast()
            },
            private_data_len: len,
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: self.flow_control.into(),
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            ..Default::default()
        })
    }
}
