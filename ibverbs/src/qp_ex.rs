//! The extended send API: `struct ibv_qp_ex` and the `ibv_wr_*` calls.
//!
//! A QP built with [`QueuePairBuilder::send_ops`](crate::QueuePairBuilder::send_ops) is
//! created with `ibv_create_qp_ex` and can post through a [`WrBatch`]: `ibv_wr_start`, one
//! `ibv_wr_*` call per request writing straight into the send queue, then
//! `ibv_wr_complete`. The requests are the same [`SendRequest`]s as for
//! [`QueuePair::post_send`](crate::QueuePair::post_send).

use crate::error::{check, Error, Result};
use crate::ffi;
use crate::opcode::SendOps;
use crate::qp::{QpType, QueuePair};
use crate::wr::SendRequest;

/// A batch of requests on an extended QP, started by [`QueuePair::batch`]. Posted by
/// [`complete`](Self::complete); dropped without it, the batch is aborted (`ibv_wr_abort`).
pub struct WrBatch<'qp> {
    qp: &'qp mut QueuePair,
    qpx: *mut ffi::ibv_qp_ex,
    done: bool,
}

impl QueuePair {
    /// Starts a batch of extended work requests (`ibv_wr_start`). Fails unless the QP was
    /// built with [`send_ops`](crate::QueuePairBuilder::send_ops).
    pub fn batch(&mut self) -> Result<WrBatch<'_>> {
        let Some(qpx) = self.qp_ex() else {
            return Err(Error::InvalidArgument {
                what: "queue pair",
                reason: "it was built without send_ops, so it has no ibv_wr_* API".into(),
            });
        };
        // SAFETY: qpx is this live QP's extended view; `&mut self` keeps other posts off the
        // QP until the batch ends.
        unsafe { ffi::ibv_wr_start(qpx) };
        Ok(WrBatch {
            qp: self,
            qpx,
            done: false,
        })
    }
}

impl WrBatch<'_> {
    /// Adds `wr` to the batch (`ibv_wr_send`, `ibv_wr_rdma_write`, ... then
    /// `ibv_wr_set_ud_addr` for UD and `ibv_wr_set_sge_list` or, for inline requests,
    /// `ibv_wr_set_inline_data_list`).
    pub fn push(&mut self, wr: &SendRequest<'_>) -> Result<()> {
        use ffi::ibv_wr_opcode as O;
        let raw = wr.as_raw();
        let need = match raw.opcode {
            O::IBV_WR_SEND => SendOps::SEND,
            O::IBV_WR_SEND_WITH_IMM => SendOps::SEND_WITH_IMM,
            O::IBV_WR_RDMA_WRITE => SendOps::RDMA_WRITE,
            O::IBV_WR_RDMA_WRITE_WITH_IMM => SendOps::RDMA_WRITE_WITH_IMM,
            O::IBV_WR_RDMA_READ => SendOps::RDMA_READ,
            O::IBV_WR_ATOMIC_CMP_AND_SWP => SendOps::ATOMIC_CMP_AND_SWP,
            O::IBV_WR_ATOMIC_FETCH_AND_ADD => SendOps::ATOMIC_FETCH_AND_ADD,
            other => {
                return Err(Error::InvalidArgument {
                    what: "work request",
                    reason: format!("opcode {} has no ibv_wr_* form here", other.0),
                })
            }
        };
        if !self.qp.send_ops().contains(need) {
            return Err(Error::InvalidArgument {
                what: "work request",
                reason: format!("the queue pair was built without {need:?}"),
            });
        }
        let qpx = self.qpx;
        let num_sge = usize::try_from(raw.num_sge).unwrap_or(0);
        // SAFETY: qpx is live and inside ibv_wr_start; the operation was enabled at creation
        // (checked above), so its function pointer is set. The union members read are the
        // ones the opcode's constructor wrote. The SGE list is valid for `num_sge` entries
        // (it borrows the request's slice) and, like inline data, is consumed by the calls.
        unsafe {
            (*qpx).wr_id = raw.wr_id;
            (*qpx).wr_flags = raw.send_flags;
            let imm = raw.__bindgen_anon_1.imm_data;
            let rdma = raw.wr.rdma;
            let atomic = raw.wr.atomic;
            match raw.opcode {
                O::IBV_WR_SEND => ffi::ibv_wr_send(qpx),
                O::IBV_WR_SEND_WITH_IMM => ffi::ibv_wr_send_imm(qpx, imm),
                O::IBV_WR_RDMA_WRITE => ffi::ibv_wr_rdma_write(qpx, rdma.rkey, rdma.remote_addr),
                O::IBV_WR_RDMA_WRITE_WITH_IMM => {
                    ffi::ibv_wr_rdma_write_imm(qpx, rdma.rkey, rdma.remote_addr, imm)
                }
                O::IBV_WR_RDMA_READ => ffi::ibv_wr_rdma_read(qpx, rdma.rkey, rdma.remote_addr),
                O::IBV_WR_ATOMIC_CMP_AND_SWP => ffi::ibv_wr_atomic_cmp_swp(
                    qpx,
                    atomic.rkey,
                    atomic.remote_addr,
                    atomic.compare_add,
                    atomic.swap,
                ),
                _ => ffi::ibv_wr_atomic_fetch_add(
                    qpx,
                    atomic.rkey,
                    atomic.remote_addr,
                    atomic.compare_add,
                ),
            }
            if self.qp.qp_type() == QpType::Ud {
                let ud = raw.wr.ud;
                ffi::ibv_wr_set_ud_addr(qpx, ud.ah, ud.remote_qpn, ud.remote_qkey);
            }
            if raw.send_flags & ffi::ibv_send_flags::IBV_SEND_INLINE.0 != 0 {
                let sges = std::slice::from_raw_parts(raw.sg_list, num_sge);
                if let [one] = sges {
                    ffi::ibv_wr_set_inline_data(qpx, one.addr as *mut _, one.length as usize);
                } else {
                    let bufs: Vec<ffi::ibv_data_buf> = sges
                        .iter()
                        .map(|s| ffi::ibv_data_buf {
                            addr: s.addr as *mut _,
                            length: s.length as usize,
                        })
                        .collect();
                    ffi::ibv_wr_set_inline_data_list(qpx, bufs.len(), bufs.as_ptr());
                }
            } else {
                ffi::ibv_wr_set_sge_list(qpx, num_sge, raw.sg_list);
            }
        }
        Ok(())
    }

    /// Posts the batch (`ibv_wr_complete`). On failure none of it was posted.
    pub fn complete(mut self) -> Result<()> {
        self.done = true;
        // SAFETY: qpx is live and inside ibv_wr_start.
        check("ibv_wr_complete", unsafe { ffi::ibv_wr_complete(self.qpx) })
    }
}

impl Drop for WrBatch<'_> {
    fn drop(&mut self) {
        if !self.done {
            // SAFETY: qpx is live and inside ibv_wr_start.
            unsafe { ffi::ibv_wr_abort(self.qpx) };
        }
    }
}
