//! The full `ibv_query_qp`: a typed snapshot of a queue pair's attributes.

use crate::ah::attr::AhAttr;
use crate::context::port::Mtu;
use crate::error::Result;
use crate::ffi;
use crate::qp::{PreparedQueuePair, QueuePair};
use crate::types::AccessFlags;
use crate::types::Gid;
use crate::types::QpType;
use crate::types::{PathMigState, QpState};

/// A queue pair's attributes as `ibv_query_qp` reports them (`struct ibv_qp_attr` and
/// `struct ibv_qp_init_attr`), taken by [`QueuePair::query`].
///
/// The numbers are the provider's at the time of the call; the fields a transport does
/// not use (the Q_Key of an RC QP, the route of a UD QP) are whatever the provider reports,
/// usually 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QpAttributes {
    /// The transport.
    pub qp_type: QpType,
    /// The current state: RTS, or SQE or ERROR once a request failed or after
    /// [`QueuePair::to_error`](crate::QueuePair::to_error) (the one way to read it).
    pub state: QpState,
    /// The path MTU (RC, UC).
    pub path_mtu: Mtu,
    /// The Q_Key (UD).
    pub qkey: u32,
    /// The next packet sequence number expected (RC, UC).
    pub rq_psn: u32,
    /// The next packet sequence number sent.
    pub sq_psn: u32,
    /// The peer's QP number (RC, UC).
    pub dest_qp_num: u32,
    /// What peers may do to this side's memory (RC, UC).
    pub access: AccessFlags,
    /// The P_Key index.
    pub pkey_index: u16,
    /// The local port.
    pub port: u8,
    /// The route to the peer (RC, UC): the destination LID (InfiniBand).
    pub dest_lid: u16,
    /// The route to the peer: the destination GID (zero without a GRH).
    pub dest_gid: Gid,
    /// The route to the peer: the local GID index it leaves from.
    pub sgid_index: u8,
    /// The route to the peer: the GRH hop limit.
    pub hop_limit: u8,
    /// The route to the peer: the GRH traffic class.
    pub traffic_class: u8,
    /// The route to the peer: the GRH flow label.
    pub flow_label: u32,
    /// The route to the peer: the service level.
    pub sl: u8,
    /// Whether the route carries a GRH.
    pub is_global: bool,
    /// Outstanding RDMA reads and atomics the QP may issue (RC).
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads and atomics the QP accepts (RC).
    pub max_dest_rd_atomic: u8,
    /// The RNR NAK timer code (RC).
    pub min_rnr_timer: u8,
    /// The local ACK timeout exponent (RC).
    pub timeout: u8,
    /// Transport retries (RC).
    pub retry_cnt: u8,
    /// Receiver-not-ready retries (RC).
    pub rnr_retry: u8,
    /// Whether the send queue is draining (SQD).
    pub sq_draining: bool,
    /// The path migration state (RC, UC): `Migrated` until an alternate path is loaded
    /// ([`QueuePair::load_alt_path`](crate::QueuePair::load_alt_path)).
    pub path_mig_state: PathMigState,
    /// The alternate path's address vector (`alt_ah_attr`; all zeros without one).
    pub alt_ah_attr: AhAttr,
    /// The alternate path's local port (`alt_port_num`; 0 without one).
    pub alt_port: u8,
    /// The alternate path's local ACK timeout exponent (`alt_timeout`).
    pub alt_timeout: u8,
    /// The alternate path's P_Key index (`alt_pkey_index`).
    pub alt_pkey_index: u16,
    /// Send queue depth (rxe reports its whole ring, which can be more than the create
    /// granted: 255 for 128).
    pub max_send_wr: u32,
    /// Receive queue depth (0 for a QP on an SRQ; rxe reports its whole ring).
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive.
    pub max_recv_sge: u32,
    /// Inline data limit.
    pub max_inline_data: u32,
    /// Whether every send is signaled (`sq_sig_all` at creation).
    pub sq_sig_all: bool,
}

impl QueuePair {
    /// Queries every attribute of the QP (`ibv_query_qp` with every bit of
    /// `ibv_qp_attr_mask` below `IBV_QP_RATE_LIMIT`) and the attributes it was created
    /// with.
    pub fn query(&self) -> Result<QpAttributes> {
        // Every attribute bit below IBV_QP_RATE_LIMIT, the first one libibverbs' query
        // command cannot carry (it refuses masks with it, EOPNOTSUPP).
        let mask = ffi::ibv_qp_attr_mask::IBV_QP_RATE_LIMIT.0 - 1;
        let (attr, init) = self.raw.query(mask)?;
        let ah = &attr.ah_attr;
        Ok(QpAttributes {
            qp_type: self.qp_type(),
            state: QpState::from_raw(attr.qp_state),
            path_mtu: Mtu::from_raw(attr.path_mtu),
            qkey: attr.qkey,
            rq_psn: attr.rq_psn,
            sq_psn: attr.sq_psn,
            dest_qp_num: attr.dest_qp_num,
            access: AccessFlags::from_bits_retain(attr.qp_access_flags),
            pkey_index: attr.pkey_index,
            port: attr.port_num,
            dest_lid: ah.dlid,
            dest_gid: Gid::from_raw(ah.grh.dgid),
            sgid_index: ah.grh.sgid_index,
            hop_limit: ah.grh.hop_limit,
            traffic_class: ah.grh.traffic_class,
            flow_label: ah.grh.flow_label,
            sl: ah.sl,
            is_global: ah.is_global != 0,
            max_rd_atomic: attr.max_rd_atomic,
            max_dest_rd_atomic: attr.max_dest_rd_atomic,
            min_rnr_timer: attr.min_rnr_timer,
            timeout: attr.timeout,
            retry_cnt: attr.retry_cnt,
            rnr_retry: attr.rnr_retry,
            sq_draining: attr.sq_draining != 0,
            path_mig_state: PathMigState::from_raw(attr.path_mig_state),
            alt_ah_attr: AhAttr::from_raw(&attr.alt_ah_attr),
            alt_port: attr.alt_port_num,
            alt_timeout: attr.alt_timeout,
            alt_pkey_index: attr.alt_pkey_index,
            max_send_wr: init.cap.max_send_wr,
            max_recv_wr: init.cap.max_recv_wr,
            max_send_sge: init.cap.max_send_sge,
            max_recv_sge: init.cap.max_recv_sge,
            max_inline_data: init.cap.max_inline_data,
            sq_sig_all: init.sq_sig_all != 0,
        })
    }
}

impl PreparedQueuePair {
    /// Queries every attribute of the QP in INIT; see [`QueuePair::query`].
    pub fn query(&self) -> Result<QpAttributes> {
        self.qp().query()
    }
}
