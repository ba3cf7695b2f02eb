//! What both stream types do to set a connection up: the id's PD, CQ and QP, the rings
//! with every receive posted, and the connect or accept parameters.

use std::io;

use super::ring::Rings;
use super::wire::{Hello, HEADER};
use crate::cm::{CmId, ConnParam};
use crate::error::Result;
use crate::{CompletionChannel, CompletionQueue, Context, QpType, QueuePair, QueuePairBuilder};

/// Retries after a receiver-not-ready NAK: the protocol never sends into a receive the peer
/// has not posted, so one means a broken peer; the send then fails instead of waiting.
const RNR_RETRIES: u8 = 3;

/// Transport retries after an ACK timeout: 6, so 7 tries in all. Not 7, which rxe (and
/// some HCAs) take as "retry forever": a peer host that vanished would then leave a send,
/// and a shutdown waiting for it, pending for ever.
const RETRIES: u8 = 6;

/// Creates a PD, a CQ on `channel` and, through `create_qp` (the id's), the QP, and
/// registers the rings of `hello` with every receive posted.
pub(crate) fn prepare<'q>(
    ctx: &Context,
    channel: &CompletionChannel,
    hello: Hello,
    create_qp: impl for<'b> FnOnce(QueuePairBuilder<'b>) -> Result<&'q QueuePair>,
) -> Result<(CompletionQueue, Rings)> {
    let pd = ctx.alloc_pd()?;
    // Data and end messages, and control messages on the peer's credits (more wait).
    let sends = u32::from(hello.data) + u32::from(hello.ctrl) + 1;
    let recvs = u32::from(hello.data) + u32::from(hello.ctrl);
    let cq = ctx.create_cq(sends + recvs, Some(channel))?;
    let qp = create_qp(
        pd.create_qp(QpType::Rc, &cq, &cq)
            .max_send_wr(sends)
            .max_recv_wr(recvs)
            .max_inline_data(HEADER as u32),
    )?;
    let mut rings = Rings::new(&pd, hello)?;
    rings.post_receives(qp)?;
    Ok((cq, rings))
}

/// The connect or accept parameters: `hello` as private data, sends only (no RDMA reads).
pub(crate) fn conn_param(hello: &[u8]) -> ConnParam<'_> {
    ConnParam::new()
        .private_data(hello)
        .max_dest_rd_atomic(0)
        .max_rd_atomic(0)
        .retry_cnt(RETRIES)
        .rnr_retry(RNR_RETRIES)
}

/// A stream's QP: made before the stream, kept by its id until the id is dropped.
pub(crate) fn qp(id: &CmId) -> &QueuePair {
    id.qp().expect("a stream's id keeps its QP")
}

pub(crate) fn invalid_data(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why)
}
