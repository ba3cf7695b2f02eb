//! Connecting a queue pair: [`ConnectOptions`], this side's settings of the RTR and RTS
//! transitions, and [`PreparedQueuePair::connect`] (RC, UC) and
//! [`PreparedQueuePair::ready`] (UD) that make them.

use super::{AltPath, PreparedQueuePair, QueuePair};
use crate::context::port::Mtu;
use crate::error::{Error, IwarpRule, Result};
use crate::ffi;
use crate::route::{Endpoint, Route};
use crate::types::QpType;

/// This side's settings of the RTR and RTS transitions of [`PreparedQueuePair::connect`]
/// (the peer's [`Endpoint`] carries only its address); the defaults are perftest's.
///
/// Start from [`ConnectOptions::new`] and set what differs, as a QP is built:
/// `qp.connect(&remote, &ConnectOptions::new().retry_cnt(6).route(Route::new().sl(1)))`.
/// The names are those of `struct ibv_qp_attr`. The local port is the QP's own
/// ([`QueuePairBuilder::port`](crate::QueuePairBuilder::port)): the QP is bound to it when
/// it moves to INIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectOptions {
    path_mtu: Option<Mtu>,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    min_rnr_timer: u8,
    max_rd_atomic: u8,
    max_dest_rd_atomic: u8,
    route: Route,
    alt_path: Option<AltPath>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            path_mtu: None,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            max_rd_atomic: 16,
            max_dest_rd_atomic: 16,
            route: Route::new(),
            alt_path: None,
        }
    }
}

impl ConnectOptions {
    /// perftest's settings: the port's active MTU, ACK timeout 14 (67 ms), 7 retries of each
    /// kind, RNR timer 12 (0.64 ms), 16 reads and atomics each way (clamped to the device),
    /// the default [`Route`], no alternate path.
    pub fn new() -> Self {
        Self::default()
    }

    /// The path MTU (`path_mtu`); by default the active MTU of the QP's port. Both sides
    /// must agree on it when their ports differ (rdma-core's pingpong programs use 1024
    /// unless told).
    pub fn path_mtu(mut self, mtu: Mtu) -> Self {
        self.path_mtu = Some(mtu);
        self
    }

    /// The local ACK timeout exponent (`timeout`, 0 to 31): 4.096 µs × 2^timeout, 0 waiting
    /// forever.
    pub fn timeout(mut self, timeout: u8) -> Self {
        self.timeout = timeout;
        self
    }

    /// Transport retries before `RETRY_EXC_ERR` (`retry_cnt`, 0 to 7).
    ///
    /// rxe (Linux 6.1) never counts down a retry count of 7, so such a QP retries forever
    /// on a dead link: where a lost peer must end in `RETRY_EXC_ERR` on rxe, use 6 or less.
    pub fn retry_cnt(mut self, retries: u8) -> Self {
        self.retry_cnt = retries;
        self
    }

    /// Receiver-not-ready retries before `RNR_RETRY_EXC_ERR` (`rnr_retry`, 0 to 7; 7 is
    /// infinite).
    pub fn rnr_retry(mut self, retries: u8) -> Self {
        self.rnr_retry = retries;
        self
    }

    /// The minimum RNR NAK timer code the QP asks peers to wait (`min_rnr_timer`, 0 to 31).
    pub fn min_rnr_timer(mut self, code: u8) -> Self {
        self.min_rnr_timer = code;
        self
    }

    /// Outstanding RDMA reads and atomics this QP may issue (`max_rd_atomic`; clamped to
    /// the device's `max_qp_init_rd_atom`).
    pub fn max_rd_atomic(mut self, n: u8) -> Self {
        self.max_rd_atomic = n;
        self
    }

    /// Outstanding RDMA reads and atomics this QP accepts (`max_dest_rd_atomic`; clamped to
    /// the device's `max_qp_rd_atom`).
    pub fn max_dest_rd_atomic(mut self, n: u8) -> Self {
        self.max_dest_rd_atomic = n;
        self
    }

    /// The route to the peer: service level, traffic class, hop limit, flow label (the QP
    /// sends from its own GID, [`QueuePair::gid_index`]).
    pub fn route(mut self, route: Route) -> Self {
        self.route = route;
        self
    }

    /// An alternate path to the peer, loaded at the move to RTS (`IBV_QP_ALT_PATH` and
    /// `path_mig_state` `IBV_MIG_REARM`: the HCA is to arm it), as
    /// [`QueuePair::load_alt_path`] loads one later; by default none. Checked before the
    /// first transition as [`AltPath`] says: on a RoCE port (rxe's) it is refused with
    /// [`Error::Unsupported`].
    pub fn alt_path(mut self, path: AltPath) -> Self {
        self.alt_path = Some(path);
        self
    }

    /// Fails with [`Error::OutOfRange`] naming the first setting out of its range.
    fn check(&self) -> Result<()> {
        for (what, value, max) in [
            ("ACK timeout", self.timeout, 31u8),
            ("retry count", self.retry_cnt, 7),
            ("RNR retry count", self.rnr_retry, 7),
            ("minimum RNR timer", self.min_rnr_timer, 31),
        ] {
            Error::at_most(what, value.into(), max.into())?;
        }
        self.route.check()
    }
}

impl PreparedQueuePair {
    /// Connects an RC or UC QP to `remote`: INIT → RTR → RTS.
    ///
    /// The QP sends from the GID it was built with ([`QueuePair::gid_index`]). A setting out
    /// of its range is [`Error::OutOfRange`], and an alternate path
    /// ([`ConnectOptions::alt_path`]) is checked as [`AltPath`] says, both before any
    /// transition; a failed transition is [`Error::Transition`], naming the state.
    pub fn connect(self, remote: &Endpoint, opts: &ConnectOptions) -> Result<QueuePair> {
        use ffi::ibv_qp_attr_mask as M;
        let qp = self.qp;
        if qp.qp_type == QpType::Ud {
            return Err(Error::InvalidArgument {
                what: "queue pair type",
                reason: "a UD queue pair has no peer to connect to; use ready()".into(),
            });
        }
        if qp.pd().context().is_iwarp() {
            return Err(Error::Iwarp(IwarpRule::ConnectThroughRdmaCm));
        }
        opts.check()?;
        if let Some(path) = &opts.alt_path {
            path.check(qp.pd().context(), qp.qp_type, qp.port)?;
        }
        let path_mtu = ffi::ibv_mtu(opts.path_mtu.unwrap_or(qp.active_mtu).raw());
        let (max_rd, max_dest_rd) = qp.rd_atomic_limits(opts)?;
        let mut route = opts.route;
        // RoCE packets always carry a GRH; on InfiniBand only when the peer gave a GID
        // (or the caller forces it), as peers that send no GID expect.
        if qp.roce {
            route.force_grh = true;
        }

        let mut rtr = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_RTR,
            path_mtu,
            dest_qp_num: remote.qpn,
            rq_psn: remote.psn & 0xff_ffff,
            ah_attr: route.ah_attr(qp.port, qp.gid_index, remote),
            max_dest_rd_atomic: max_dest_rd,
            min_rnr_timer: opts.min_rnr_timer,
            ..Default::default()
        };
        let mut mask = M::IBV_QP_STATE
            | M::IBV_QP_AV
            | M::IBV_QP_PATH_MTU
            | M::IBV_QP_DEST_QPN
            | M::IBV_QP_RQ_PSN;
        if qp.qp_type == QpType::Rc {
            mask |= M::IBV_QP_MAX_DEST_RD_ATOMIC | M::IBV_QP_MIN_RNR_TIMER;
        }
        qp.transition(&mut rtr, mask)?;

        let mut rts = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_RTS,
            sq_psn: qp.psn,
            timeout: opts.timeout,
            retry_cnt: opts.retry_cnt,
            rnr_retry: opts.rnr_retry,
            max_rd_atomic: max_rd,
            ..Default::default()
        };
        let mut mask = M::IBV_QP_STATE | M::IBV_QP_SQ_PSN;
        if qp.qp_type == QpType::Rc {
            mask |= M::IBV_QP_TIMEOUT
                | M::IBV_QP_RETRY_CNT
                | M::IBV_QP_RNR_RETRY
                | M::IBV_QP_MAX_QP_RD_ATOMIC;
        }
        if let Some(path) = &opts.alt_path {
            mask |= path.apply(&mut rts);
        }
        qp.transition(&mut rts, mask)?;
        Ok(qp)
    }

    /// Makes a UD QP ready to send and receive: INIT → RTR → RTS.
    pub fn ready(self) -> Result<QueuePair> {
        use ffi::ibv_qp_attr_mask as M;
        let qp = self.qp;
        if qp.qp_type != QpType::Ud {
            return Err(Error::InvalidArgument {
                what: "queue pair type",
                reason: "a connected (RC/UC) queue pair needs connect() with a peer".into(),
            });
        }
        let mut rtr = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_RTR,
            ..Default::default()
        };
        qp.transition(&mut rtr, M::IBV_QP_STATE)?;
        let mut rts = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_RTS,
            sq_psn: qp.psn,
            ..Default::default()
        };
        qp.transition(&mut rts, M::IBV_QP_STATE | M::IBV_QP_SQ_PSN)?;
        Ok(qp)
    }
}

impl QueuePair {
    /// The read/atomic depths asked for, clamped to the device's.
    fn rd_atomic_limits(&self, opts: &ConnectOptions) -> Result<(u8, u8)> {
        let dev = self.pd().context().device_limits()?;
        let clamp = |want: u8, max: i32| want.min(u8::try_from(max.max(1)).unwrap_or(u8::MAX));
        Ok((
            clamp(opts.max_rd_atomic, dev.max_qp_init_rd_atom),
            clamp(opts.max_dest_rd_atomic, dev.max_qp_rd_atom),
        ))
    }
}
