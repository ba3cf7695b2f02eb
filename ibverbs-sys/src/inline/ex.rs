//! The function pointers of `ibv_qp_ex` (the `ibv_wr_*` calls, valid between `ibv_wr_start`
//! and `ibv_wr_complete` / `ibv_wr_abort` on a QP created with the matching
//! `IBV_QP_EX_WITH_*` send ops) and of `ibv_cq_ex` (extended completion polling).

use core::ffi::{c_int, c_uint, c_void};

use crate::*;

// ---------------------------------------------------------------------------------------------
// The extended work request API (ibv_qp_ex). Valid between ibv_wr_start and
// ibv_wr_complete/abort on a QP created with the matching IBV_QP_EX_WITH_* send ops.

/// Declares `ibv_wr_*` ports that forward to the `ibv_qp_ex` function pointer of the same
/// name, which returns nothing: the pointer must be set (see the module docs).
macro_rules! wr_ops {
    ($( $(#[$doc:meta])* $name:ident => $field:ident ( $($arg:ident : $ty:ty),* ); )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `qp` must be a live `ibv_qp_ex` created with this operation enabled, inside
        #[doc = concat!("`ibv_wr_start`, whose provider set `", stringify!($field), "`;")]
        /// pointer arguments must be valid as the verbs require.
        #[inline]
        pub unsafe fn $name(qp: *mut ibv_qp_ex $(, $arg: $ty)*) {
            // SAFETY: qp is live and its provider set this operation (caller).
            unsafe { required_op!((*qp).$field)(qp $(, $arg)*) }
        }
    )*};
}

wr_ops! {
    /// `ibv_wr_atomic_cmp_swp`: starts an atomic compare-and-swap WR.
    ibv_wr_atomic_cmp_swp => wr_atomic_cmp_swp(rkey: u32, remote_addr: u64, compare: u64, swap: u64);
    /// `ibv_wr_atomic_fetch_add`: starts an atomic fetch-and-add WR.
    ibv_wr_atomic_fetch_add => wr_atomic_fetch_add(rkey: u32, remote_addr: u64, add: u64);
    /// `ibv_wr_bind_mw`: starts a memory window bind WR.
    ibv_wr_bind_mw => wr_bind_mw(mw: *mut ibv_mw, rkey: u32, bind_info: *const ibv_mw_bind_info);
    /// `ibv_wr_local_inv`: starts a local invalidate WR.
    ibv_wr_local_inv => wr_local_inv(invalidate_rkey: u32);
    /// `ibv_wr_rdma_read`: starts an RDMA read WR.
    ibv_wr_rdma_read => wr_rdma_read(rkey: u32, remote_addr: u64);
    /// `ibv_wr_rdma_write`: starts an RDMA write WR.
    ibv_wr_rdma_write => wr_rdma_write(rkey: u32, remote_addr: u64);
    /// `ibv_wr_rdma_write_imm`: starts an RDMA write with immediate WR.
    ibv_wr_rdma_write_imm => wr_rdma_write_imm(rkey: u32, remote_addr: u64, imm_data: __be32);
    /// `ibv_wr_send`: starts a send WR.
    ibv_wr_send => wr_send();
    /// `ibv_wr_send_imm`: starts a send with immediate WR.
    ibv_wr_send_imm => wr_send_imm(imm_data: __be32);
    /// `ibv_wr_send_inv`: starts a send with invalidate WR.
    ibv_wr_send_inv => wr_send_inv(invalidate_rkey: u32);
    /// `ibv_wr_send_tso`: starts a TSO send WR.
    ibv_wr_send_tso => wr_send_tso(hdr: *mut c_void, hdr_sz: u16, mss: u16);
    /// `ibv_wr_set_ud_addr`: sets the UD destination of the current WR.
    ibv_wr_set_ud_addr => wr_set_ud_addr(ah: *mut ibv_ah, remote_qpn: u32, remote_qkey: u32);
    /// `ibv_wr_set_xrc_srqn`: sets the XRC SRQ number of the current WR.
    ibv_wr_set_xrc_srqn => wr_set_xrc_srqn(remote_srqn: u32);
    /// `ibv_wr_set_inline_data`: sets inline data of the current WR.
    ibv_wr_set_inline_data => wr_set_inline_data(addr: *mut c_void, length: usize);
    /// `ibv_wr_set_inline_data_list`: sets a list of inline buffers of the current WR.
    ibv_wr_set_inline_data_list => wr_set_inline_data_list(num_buf: usize, buf_list: *const ibv_data_buf);
    /// `ibv_wr_set_sge`: sets the single SGE of the current WR.
    ibv_wr_set_sge => wr_set_sge(lkey: u32, addr: u64, length: u32);
    /// `ibv_wr_set_sge_list`: sets the SGE list of the current WR.
    ibv_wr_set_sge_list => wr_set_sge_list(num_sge: usize, sg_list: *const ibv_sge);
    /// `ibv_wr_start`: begins a batch of WRs.
    ibv_wr_start => wr_start();
    /// `ibv_wr_abort`: drops the batch.
    ibv_wr_abort => wr_abort();
    /// `ibv_wr_atomic_write`: starts an 8-byte atomic write WR.
    ibv_wr_atomic_write => wr_atomic_write(rkey: u32, remote_addr: u64, atomic_wr: *const c_void);
}

/// `ibv_wr_complete`: posts the batch; returns 0 or an errno, `EOPNOTSUPP` where the
/// provider has no `wr_complete`.
///
/// # Safety
/// `qp` must be a live `ibv_qp_ex` inside `ibv_wr_start`.
#[inline]
pub unsafe fn ibv_wr_complete(qp: *mut ibv_qp_ex) -> c_int {
    // SAFETY: qp is live (caller).
    unsafe { call_or!((*qp).wr_complete, (qp), libc::EOPNOTSUPP) }
}

// ---------------------------------------------------------------------------------------------
// Extended completion polling (ibv_cq_ex).

/// Declares `ibv_*` ports that forward to the `ibv_cq_ex` function pointer of the same name,
/// which returns no status: the pointer must be set (see the module docs).
macro_rules! cq_ops {
    ($( $(#[$doc:meta])* $name:ident => $field:ident ( $($arg:ident : $ty:ty),* ) $(-> $ret:ty)?; )*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `cq` must be a live `ibv_cq_ex` whose provider set
        #[doc = concat!("`", stringify!($field), "`;")]
        /// the `read_*` calls are valid between a successful `ibv_start_poll` and
        /// `ibv_end_poll`, for fields the CQ was created with.
        #[inline]
        pub unsafe fn $name(cq: *mut ibv_cq_ex $(, $arg: $ty)*) $(-> $ret)? {
            // SAFETY: cq is live and its provider set this reader (caller).
            unsafe { required_op!((*cq).$field)(cq $(, $arg)*) }
        }
    )*};
}

/// `ibv_start_poll`: starts polling; 0 with the first completion current, `ENOENT`, or an
/// errno (`EOPNOTSUPP` where the provider has no `start_poll`).
///
/// # Safety
/// `cq` must be a live `ibv_cq_ex` and `attr` valid.
#[inline]
pub unsafe fn ibv_start_poll(cq: *mut ibv_cq_ex, attr: *mut ibv_poll_cq_attr) -> c_int {
    // SAFETY: pointers valid (caller).
    unsafe { call_or!((*cq).start_poll, (cq, attr), libc::EOPNOTSUPP) }
}

/// `ibv_next_poll`: moves to the next completion; 0, `ENOENT`, or an errno (`EOPNOTSUPP`
/// where the provider has no `next_poll`).
///
/// # Safety
/// `cq` must be a live `ibv_cq_ex` between a successful `ibv_start_poll` and `ibv_end_poll`.
#[inline]
pub unsafe fn ibv_next_poll(cq: *mut ibv_cq_ex) -> c_int {
    // SAFETY: cq is live (caller).
    unsafe { call_or!((*cq).next_poll, (cq), libc::EOPNOTSUPP) }
}

cq_ops! {
    /// `ibv_end_poll`: ends polling.
    ibv_end_poll => end_poll();
    /// `ibv_wc_read_opcode`: opcode of the current completion.
    ibv_wc_read_opcode => read_opcode() -> ibv_wc_opcode;
    /// `ibv_wc_read_vendor_err`: vendor error of the current completion.
    ibv_wc_read_vendor_err => read_vendor_err() -> u32;
    /// `ibv_wc_read_byte_len`: byte count of the current completion.
    ibv_wc_read_byte_len => read_byte_len() -> u32;
    /// `ibv_wc_read_imm_data`: immediate data (network order) of the current completion.
    ibv_wc_read_imm_data => read_imm_data() -> __be32;
    /// `ibv_wc_read_invalidated_rkey`: the rkey invalidated by the current completion.
    ibv_wc_read_invalidated_rkey => read_imm_data() -> u32;
    /// `ibv_wc_read_qp_num`: local QP number of the current completion.
    ibv_wc_read_qp_num => read_qp_num() -> u32;
    /// `ibv_wc_read_src_qp`: source QP number (UD) of the current completion.
    ibv_wc_read_src_qp => read_src_qp() -> u32;
    /// `ibv_wc_read_wc_flags`: `IBV_WC_*` flags of the current completion.
    ibv_wc_read_wc_flags => read_wc_flags() -> c_uint;
    /// `ibv_wc_read_slid`: source LID of the current completion.
    ibv_wc_read_slid => read_slid() -> u32;
    /// `ibv_wc_read_sl`: service level of the current completion.
    ibv_wc_read_sl => read_sl() -> u8;
    /// `ibv_wc_read_dlid_path_bits`: DLID path bits of the current completion.
    ibv_wc_read_dlid_path_bits => read_dlid_path_bits() -> u8;
    /// `ibv_wc_read_completion_ts`: device timestamp of the current completion.
    ibv_wc_read_completion_ts => read_completion_ts() -> u64;
    /// `ibv_wc_read_completion_wallclock_ns`: wall-clock timestamp of the current completion.
    ibv_wc_read_completion_wallclock_ns => read_completion_wallclock_ns() -> u64;
    /// `ibv_wc_read_cvlan`: VLAN of the current completion.
    ibv_wc_read_cvlan => read_cvlan() -> u16;
    /// `ibv_wc_read_flow_tag`: flow tag of the current completion.
    ibv_wc_read_flow_tag => read_flow_tag() -> u32;
    /// `ibv_wc_read_tm_info`: tag-matching info of the current completion.
    ibv_wc_read_tm_info => read_tm_info(tm_info: *mut ibv_wc_tm_info);
}
