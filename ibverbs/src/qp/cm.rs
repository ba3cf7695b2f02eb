//! A [`QueuePair`] for a QP that librdmacm created (`rdma_create_qp`): a child of `qp` so
//! that it fills the same private fields as [`QueuePairBuilder::build`](super::QueuePairBuilder::build).

use std::ptr::NonNull;
use std::sync::Arc;

use super::{random_psn, QueuePair, RecvQueue};
use crate::context::port::LinkLayer;
use crate::cq::CompletionQueue;
use crate::error::Result;
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::qp::qp_type::QpType;
use crate::wr::limits::{RecvLimits, SendLimits};
use crate::wr::opcode::SendOps;

/// What [`QueuePair::adopt`] needs to know of the QP besides its handle.
pub(crate) struct Adopted<'a> {
    /// The transport it was created with.
    pub qp_type: QpType,
    /// Its capabilities as the provider granted them.
    pub caps: ffi::ibv_qp_cap,
    /// The port of the CM id it was created on.
    pub port: u8,
    /// The PD it was created in.
    pub pd: &'a ProtectionDomain,
    /// Its send CQ.
    pub send_cq: &'a CompletionQueue,
    /// Its receive CQ.
    pub recv_cq: &'a CompletionQueue,
}

impl QueuePair {
    /// Takes ownership of `raw`, which keeps `what`'s PD and CQs alive as a built QP does
    /// and is destroyed on drop (`ibv_destroy_qp`). Fails, leaving `raw` to the caller, when
    /// the port cannot be queried.
    ///
    /// # Safety
    /// `raw` must be a live QP of `what.pd` on `what`'s CQs, destroyed by nothing else
    /// (librdmacm must have forgotten it, or forget it before this value drops).
    pub(crate) unsafe fn adopt(raw: NonNull<ffi::ibv_qp>, what: Adopted<'_>) -> Result<Self> {
        let ctx = what.pd.context();
        let port = ctx.query_port(what.port)?;
        let entry = ctx.default_gid(what.port)?;
        Ok(QueuePair {
            raw,
            qp_ex: None,
            send_ops: SendOps::empty(),
            qp_type: what.qp_type,
            caps: what.caps,
            send_limits: SendLimits::new(what.qp_type, &what.caps, what.pd.ptr()),
            recv: RecvQueue::new(
                raw.as_ptr(),
                RecvLimits::new(what.caps.max_recv_wr, what.caps.max_recv_sge),
            ),
            port: what.port,
            gid_index: entry.index,
            gid: entry.gid,
            lid: port.lid,
            active_mtu: port.active_mtu,
            roce: port.link_layer == LinkLayer::Ethernet,
            psn: random_psn(),
            pd: what.pd.clone(),
            _send_cq: Arc::clone(what.send_cq.inner()),
            _recv_cq: Arc::clone(what.recv_cq.inner()),
            _srq: None,
            mcast: (what.qp_type == QpType::Ud).then(Box::default),
            posted: Default::default(),
        })
    }
}
