//! Building a queue pair: [`QueuePairBuilder`] (`ibv_create_qp`, `ibv_create_qp_ex`) and
//! its move to INIT, giving a [`PreparedQueuePair`].

use super::raw::{QpInit, RawQp};
use super::{create_flags, inline_limit, random_psn, PreparedQueuePair, QueuePair};
use crate::context::device_attr::DeviceCapFlags;
use crate::context::gid::GidEntry;
use crate::context::port::{LinkLayer, PortAttr};
use crate::context::port_cache::SourceGid;
use crate::cq::CompletionQueue;
use crate::error::{Error, IwarpRule, Result};
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::qp::create_flags::QpCreateFlags;
use crate::srq::SharedReceiveQueue;
use crate::types::AccessFlags;
use crate::types::QpType;
use crate::types::SendOps;

/// The error of the failed creation of a QP of `init`, `err` as the provider gave it: the
/// creation flags, the extended send API or the inline data the provider refused, named;
/// else `err`.
#[cold]
pub(super) fn creation_error(init: &QpInit<'_>, err: Error) -> Error {
    let send_ops = ffi::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
    match create_flags::creation_error(init, err) {
        err @ Error::Unsupported { .. } => err,
        err if init.attr().comp_mask & send_ops != 0
            && err.raw_os_error() == Some(libc::EOPNOTSUPP) =>
        {
            Error::Unsupported {
                what: "the extended send API (QueuePairBuilder::send_ops)",
                missing: "create_qp_ex in its provider (ibv_create_qp_ex refused with EOPNOTSUPP)",
            }
        }
        err => inline_limit::creation_error(init, err),
    }
}

/// Parameters of a new queue pair; see [`ProtectionDomain::create_qp`].
pub struct QueuePairBuilder<'a> {
    pub(super) pd: &'a ProtectionDomain,
    pub(super) send_cq: &'a CompletionQueue,
    pub(super) recv_cq: &'a CompletionQueue,
    pub(super) srq: Option<&'a SharedReceiveQueue>,
    pub(super) qp_type: QpType,
    pub(super) caps: ffi::ibv_qp_cap,
    pub(super) sq_sig_all: bool,
    /// The settings rdma_cm decides for a QP on a CM id: `None` unless set.
    pub(super) port: Option<u8>,
    pub(super) gid_index: Option<u8>,
    pub(super) access: Option<AccessFlags>,
    pub(super) qkey: Option<u32>,
    pub(super) send_ops: SendOps,
    pub(super) create_flags: QpCreateFlags,
}

/// The Q_Key UD queue pairs get unless told otherwise.
pub const DEFAULT_QKEY: u32 = 0x1111_1111;

impl ProtectionDomain {
    /// Starts building a queue pair of `qp_type` that completes sends on `send_cq` and
    /// receives on `recv_cq`.
    pub fn create_qp<'a>(
        &'a self,
        qp_type: QpType,
        send_cq: &'a CompletionQueue,
        recv_cq: &'a CompletionQueue,
    ) -> QueuePairBuilder<'a> {
        QueuePairBuilder {
            pd: self,
            send_cq,
            recv_cq,
            srq: None,
            qp_type,
            caps: ffi::ibv_qp_cap {
                max_send_wr: 128,
                max_recv_wr: 128,
                max_send_sge: 1,
                max_recv_sge: 1,
                max_inline_data: 0,
            },
            sq_sig_all: false,
            port: None,
            gid_index: None,
            access: None,
            qkey: None,
            send_ops: SendOps::empty(),
            create_flags: QpCreateFlags::empty(),
        }
    }
}

impl<'a> QueuePairBuilder<'a> {
    /// Send queue depth (default 128).
    pub fn max_send_wr(mut self, n: u32) -> Self {
        self.caps.max_send_wr = n;
        self
    }

    /// Receive queue depth (default 128).
    pub fn max_recv_wr(mut self, n: u32) -> Self {
        self.caps.max_recv_wr = n;
        self
    }

    /// SGEs per send request (default 1).
    pub fn max_send_sge(mut self, n: u32) -> Self {
        self.caps.max_send_sge = n;
        self
    }

    /// SGEs per receive request (default 1).
    pub fn max_recv_sge(mut self, n: u32) -> Self {
        self.caps.max_recv_sge = n;
        self
    }

    /// Bytes a send may carry inline (default 0). More than the provider takes fails to
    /// build with [`Error::DeviceLimit`] naming the most it takes.
    pub fn max_inline_data(mut self, n: u32) -> Self {
        self.caps.max_inline_data = n;
        self
    }

    /// Signal every send, not only those marked signaled (default off).
    pub fn sq_sig_all(mut self, on: bool) -> Self {
        self.sq_sig_all = on;
        self
    }

    /// Take receives from `srq` instead of a receive queue of its own.
    pub fn srq(mut self, srq: &'a SharedReceiveQueue) -> Self {
        self.srq = Some(srq);
        self
    }

    /// The local port (default 1; on a CM id, the id's).
    pub fn port(mut self, port: u8) -> Self {
        self.port = Some(port);
        self
    }

    /// The GID index the QP sends from and its endpoint carries (default:
    /// [`Context::default_gid`](crate::Context::default_gid), on RoCE the first RoCE v2
    /// GID with an IPv4 address; on InfiniBand 0).
    pub fn gid_index(mut self, index: u8) -> Self {
        self.gid_index = Some(index);
        self
    }

    /// What peers may do to this side's memory through the QP (RC, UC; default
    /// `LOCAL_WRITE` only; on a CM id, rdma_cm's). Regions still need their own rights.
    pub fn access(mut self, access: AccessFlags) -> Self {
        self.access = Some(access);
        self
    }

    /// The Q_Key of a UD QP (default [`DEFAULT_QKEY`]; on a CM id, rdma_cm's).
    pub fn qkey(mut self, qkey: u32) -> Self {
        self.qkey = Some(qkey);
        self
    }

    /// Creates the QP with the extended send API (`ibv_create_qp_ex`) for `ops`, so that
    /// [`QueuePair::batch`] can post through `ibv_wr_*`. [`SendOps::ATOMIC_WRITE`] on a
    /// device without atomic write fails to build ([`Error::Unsupported`]).
    pub fn send_ops(mut self, ops: SendOps) -> Self {
        self.send_ops = ops;
        self
    }

    /// Creates the QP (`ibv_create_qp`, or `ibv_create_qp_ex` with
    /// [`send_ops`](Self::send_ops)) and moves it to INIT (`ibv_modify_qp`).
    ///
    /// The port's attributes and GID come from the context's copy of the port: read on
    /// first use, used for at most a second, read again for an index it lacks, after
    /// [`Context::default_gid`](crate::Context::default_gid), and after a port or GID
    /// event the program reads ([`Context::get_async_event`](crate::Context::get_async_event)).
    /// Creating many QPs queries the port once, as C programs do.
    pub fn build(self) -> Result<PreparedQueuePair> {
        let ctx = self.pd.context();
        let init = self.check_parts()?;
        let port_num = self.port.unwrap_or(1);
        let source = match self.gid_index {
            Some(index) => SourceGid::Index(index),
            None => SourceGid::Default,
        };
        let (port, gid) = ctx.port_gid(port_num, source)?;
        let mut raw = RawQp::create(&init).map_err(|err| creation_error(&init, err))?;
        raw.enable_batches()?;
        let qp = self.wrap(raw, port_num, &gid, &port);

        use ffi::ibv_qp_attr_mask as M;
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_INIT,
            pkey_index: 0,
            port_num,
            ..Default::default()
        };
        let mut mask = M::IBV_QP_STATE | M::IBV_QP_PKEY_INDEX | M::IBV_QP_PORT;
        if qp.qp_type == QpType::Ud {
            attr.qkey = self.qkey.unwrap_or(DEFAULT_QKEY);
            mask |= M::IBV_QP_QKEY;
        } else {
            attr.qp_access_flags = self.access.unwrap_or(AccessFlags::LOCAL_WRITE).bits();
            mask |= M::IBV_QP_ACCESS_FLAGS;
        }
        qp.transition(&mut attr, mask)?;
        Ok(PreparedQueuePair { qp })
    }

    /// The PD the QP is created in.
    #[cfg(feature = "cm")]
    pub(crate) fn pd(&self) -> &ProtectionDomain {
        self.pd
    }

    /// Checks that the CQs and SRQ are of the PD's device ([`QpInit::new`]) and that the
    /// device has the send operations asked for: the creation attributes of the QP.
    pub(super) fn check_parts(&self) -> Result<QpInit<'a>> {
        let init = QpInit::new(self)?;
        let ctx = self.pd.context();
        if ctx.is_iwarp() {
            if self.qp_type != QpType::Rc {
                return Err(Error::Iwarp(IwarpRule::RcOnly {
                    qp_type: self.qp_type,
                }));
            }
            let atomics = SendOps::ATOMIC_CMP_AND_SWP
                .union(SendOps::ATOMIC_FETCH_AND_ADD)
                .union(SendOps::ATOMIC_WRITE);
            if self.send_ops.intersects(atomics) {
                return Err(Error::Iwarp(IwarpRule::NoAtomics));
            }
        }
        if self.send_ops.contains(SendOps::ATOMIC_WRITE)
            && !ctx
                .query_device()?
                .device_cap_flags
                .contains(DeviceCapFlags::ATOMIC_WRITE)
        {
            return Err(Error::Unsupported {
                what: "atomic write (SendOps::ATOMIC_WRITE)",
                missing: "IB_UVERBS_DEVICE_ATOMIC_WRITE in device_cap_flags_ex",
            });
        }
        Ok(init)
    }

    /// The [`QueuePair`] of `raw`, created from the builder; it sends from `gid` of
    /// `port_num`.
    pub(super) fn wrap(
        &self,
        raw: RawQp,
        port_num: u8,
        gid: &GidEntry,
        port: &PortAttr,
    ) -> QueuePair {
        QueuePair {
            raw,
            qp_type: self.qp_type,
            port: port_num,
            gid_index: gid.index,
            gid: gid.gid,
            lid: port.lid,
            active_mtu: port.active_mtu,
            roce: port.link_layer == LinkLayer::Ethernet,
            psn: random_psn(),
            mcast: (self.qp_type == QpType::Ud).then(Box::default),
        }
    }
}
