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
    Error::at_most("private data length", data.len() as u64, max as u64)?;
    Ok(data.len() as u8) // every limit is below 256
}

/// The parameters of [`CmId::connect`](super::CmId::connect) and
/// [`CmId::accept`](super::CmId::accept) (`struct rdma_conn_param`).
///
/// Start from [`ConnParam::new`] and set what differs:
/// `id.connect(&ConnParam::new().private_data(b"hello").retry_cnt(6))`. The settings that
/// rdma_cm passes on to the QP have the QP's names (`struct ibv_qp_attr`), as in
/// [`ConnectOptions`](crate::ConnectOptions): `max_rd_atomic` is C's `initiator_depth`,
/// `max_dest_rd_atomic` its `responder_resources`, `retry_cnt` its `retry_count` and
/// `rnr_retry` its `rnr_retry_count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnParam<'a> {
    private_data: &'a [u8],
    max_dest_rd_atomic: u8,
    max_rd_atomic: u8,
    flow_control: bool,
    retry_cnt: u8,
    rnr_retry: u8,
}

impl Default for ConnParam<'_> {
    /// No private data, one read/atomic each way, flow control, 7 retries of each kind.
    fn default() -> Self {
        ConnParam {
            private_data: &[],
            max_dest_rd_atomic: 1,
            max_rd_atomic: 1,
            flow_control: true,
            retry_cnt: 7,
            rnr_retry: 7,
        }
    }
}

impl<'a> ConnParam<'a> {
    /// No private data, one read/atomic each way, flow control, 7 retries of each kind.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sent to the peer in the REQ or REP; at most 56 bytes for an RC connect, 196 for an
    /// accept, 180 / 136 for UD (see [`private_data_limit`]).
    pub fn private_data(mut self, data: &'a [u8]) -> Self {
        self.private_data = data;
        self
    }

    /// RDMA reads and atomics the peer may have outstanding to us (C's
    /// `responder_resources`; the QP's `max_dest_rd_atomic`).
    #[doc(alias = "responder_resources")]
    pub fn max_dest_rd_atomic(mut self, n: u8) -> Self {
        self.max_dest_rd_atomic = n;
        self
    }

    /// RDMA reads and atomics we may have outstanding to the peer (C's `initiator_depth`;
    /// the QP's `max_rd_atomic`).
    #[doc(alias = "initiator_depth")]
    pub fn max_rd_atomic(mut self, n: u8) -> Self {
        self.max_rd_atomic = n;
        self
    }

    /// Whether the HCA does end-to-end flow control (`flow_control`).
    pub fn flow_control(mut self, on: bool) -> Self {
        self.flow_control = on;
        self
    }

    /// Transport retries on a timeout, 0 to 7 (C's `retry_count`; ignored by an accept).
    #[doc(alias = "retry_count")]
    pub fn retry_cnt(mut self, retries: u8) -> Self {
        self.retry_cnt = retries;
        self
    }

    /// Retries after a receiver-not-ready NAK, 0 to 7, 7 meaning forever (C's
    /// `rnr_retry_count`).
    #[doc(alias = "rnr_retry_count")]
    pub fn rnr_retry(mut self, retries: u8) -> Self {
        self.rnr_retry = retries;
        self
    }
}

impl ConnParam<'_> {
    /// The C struct for `msg` in `ps`, after checking every field; it points into the private
    /// data, so it is used while that lives.
    pub(crate) fn to_c(self, msg: Message, ps: PortSpace) -> Result<cm::rdma_conn_param> {
        let len = check_private_data(self.private_data, msg, ps)?;
        for (what, value) in [
            ("retry count", self.retry_cnt),
            ("RNR retry count", self.rnr_retry),
        ] {
            Error::at_most(what, value.into(), 7)?;
        }
        Ok(cm::rdma_conn_param {
            private_data: if len == 0 {
                std::ptr::null()
            } else {
                self.private_data.as_ptr().cast()
            },
            private_data_len: len,
            responder_resources: self.max_dest_rd_atomic,
            initiator_depth: self.max_rd_atomic,
            flow_control: self.flow_control.into(),
            retry_count: self.retry_cnt,
            rnr_retry_count: self.rnr_retry,
            ..Default::default()
        })
    }
}
