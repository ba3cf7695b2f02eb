//! Queue pairs: `struct ibv_qp`, their creation and state transitions.
//!
//! A QP is created by [`QueuePairBuilder::build`], which also moves it to INIT, giving a
//! [`PreparedQueuePair`]: it can take receives and tell its [`Endpoint`] but cannot send.
//! [`PreparedQueuePair::connect`] (RC, UC) or [`PreparedQueuePair::ready`] (UD) moves it
//! through RTR to RTS and gives a [`QueuePair`], the only type with `post_send`.

pub(crate) mod attr; // QueuePair::query (ibv_query_qp) and QpAttributes
mod builder; // QueuePairBuilder: creation (ibv_create_qp, ibv_create_qp_ex) and INIT
#[cfg(feature = "cm")]
pub(crate) mod cm; // a QP on a CM id (rdma_create_qp_ex)
mod connect; // ConnectOptions: RTR and RTS (connect, ready)
pub(crate) mod create_flags; // QpCreateFlags and QueuePairBuilder::create_flags
pub(crate) mod ex; // the extended send path: WrBatch (ibv_wr_*)
mod inline_limit; // the error of a creation asking for too much inline data; the probe creation
pub(crate) mod mcast; // multicast attach and detach (ibv_attach_mcast)
mod path_mig; // AltPath: an alternate path, path migration (load_alt_path, migrate_path)
mod rate_limit; // packet pacing: RateLimit, QueuePair::modify_rate_limit (ibv_modify_qp_rate_limit)
mod raw; // the FFI calls of the QP (RawQp): every unsafe block of the folder but ex/'s
mod recv; // posting receives: QueuePair::post_recv

use std::fmt;
use std::sync::{Mutex, MutexGuard};

use crate::context::port::Mtu;
use crate::error::Result;
use crate::ffi;
use crate::pd::ProtectionDomain;
use crate::route::Endpoint;
use crate::types::Gid;
use crate::types::QpType;
use crate::types::SendOps;
use crate::wr::post_error::PostError;
use crate::wr::{RecvRequest, SendRequest};
pub use builder::{QueuePairBuilder, DEFAULT_QKEY};
pub use connect::ConnectOptions;
pub use path_mig::AltPath;
pub use rate_limit::RateLimit;
use raw::RawQp;

/// A queue pair in INIT: it can take receives but not send yet. See the module docs.
pub struct PreparedQueuePair {
    qp: QueuePair,
}

impl PreparedQueuePair {
    /// The QP, in INIT.
    pub(crate) fn qp(&self) -> &QueuePair {
        &self.qp
    }

    /// The QP, for an owner that moves it out of INIT (a CM id's, `CmId::set_qp`).
    #[cfg(feature = "cm")]
    pub(crate) fn into_qp(self) -> QueuePair {
        self.qp
    }

    /// What the peer needs to connect to this QP.
    pub fn endpoint(&self) -> Endpoint {
        self.qp.endpoint()
    }

    /// The local port the QP was bound to.
    pub fn port(&self) -> u8 {
        self.qp.port
    }

    /// The protection domain.
    pub fn pd(&self) -> &ProtectionDomain {
        self.qp.pd()
    }

    /// The index of the GID the QP sends from, in its port's table.
    pub fn gid_index(&self) -> u8 {
        self.qp.gid_index
    }

    /// Posts receives ahead of the connection (`ibv_post_recv`).
    pub fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        self.qp.post_recv(wrs)
    }

    /// The raw `ibv_qp`, valid while the QP lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_qp {
        self.qp.ptr()
    }
}

impl fmt::Debug for PreparedQueuePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PreparedQueuePair").field(&self.qp).finish()
    }
}

/// The multicast groups of a UD QP, as `(GID, LID)`.
type McastGroups = Vec<(Gid, u16)>;

/// A queue pair ready to send (RTS), destroyed on drop (`ibv_destroy_qp`).
///
/// It keeps its PD, CQs and SRQ alive. Posting is thread-safe (`&self`).
pub struct QueuePair {
    /// The QP itself, destroyed when this drops (after Drop::drop detached it from its
    /// multicast groups), with its PD, CQs and SRQ and the limits its posts check.
    raw: RawQp,
    qp_type: QpType,
    port: u8,
    gid_index: u8,
    gid: Gid,
    lid: u16,
    active_mtu: Mtu,
    /// Whether the port's link layer is Ethernet (RoCE), where every packet has a GRH.
    roce: bool,
    psn: u32,
    /// The multicast groups a UD QP is attached to, detached before it is destroyed (boxed:
    /// only UD QPs have one, and a QP stays small inside a CM event).
    mcast: Option<Box<Mutex<McastGroups>>>,
}

impl QueuePair {
    /// The raw `ibv_qp`, valid while the QP lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_qp {
        self.raw.ptr()
    }

    /// Whether a request was ever posted (or offered to be posted) on the QP: a
    /// `tokio::AsyncQp` wraps only a QP without one.
    #[cfg(feature = "tokio")]
    pub(crate) fn has_posted(&self) -> bool {
        self.raw.has_posted()
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.raw.qp_num()
    }

    /// The operations the extended send API was enabled for (empty if none).
    pub fn send_ops(&self) -> SendOps {
        self.raw.send_ops()
    }

    /// The transport.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// The protection domain.
    pub fn pd(&self) -> &ProtectionDomain {
        self.raw.pd()
    }

    /// Send queue size as created (the provider grants at least what was asked).
    pub fn max_send_wr(&self) -> u32 {
        self.raw.caps().max_send_wr
    }

    /// Receive queue size as created.
    pub fn max_recv_wr(&self) -> u32 {
        self.raw.caps().max_recv_wr
    }

    /// Scatter/gather entries per send request as created: the most [`post_send`]
    /// accepts.
    ///
    /// [`post_send`]: QueuePair::post_send
    pub fn max_send_sge(&self) -> u32 {
        self.raw.caps().max_send_sge
    }

    /// Scatter/gather entries per receive request as created: the most `post_recv`
    /// accepts.
    pub fn max_recv_sge(&self) -> u32 {
        self.raw.caps().max_recv_sge
    }

    /// Inline data limit as created: the most bytes an inline request may carry.
    pub fn max_inline_data(&self) -> u32 {
        self.raw.caps().max_inline_data
    }

    /// Whether the port's link layer is Ethernet (RoCE).
    pub(crate) fn is_roce(&self) -> bool {
        self.roce
    }

    /// The multicast groups of a UD QP, locked (a panic elsewhere cannot corrupt a list);
    /// `None` for other transports.
    pub(crate) fn mcast_groups(&self) -> Option<MutexGuard<'_, McastGroups>> {
        let list = self.mcast.as_ref()?;
        Some(list.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The multicast groups, taken out of the QP (on drop).
    pub(crate) fn take_mcast_groups(&mut self) -> McastGroups {
        let Some(list) = self.mcast.as_mut() else {
            return Vec::new();
        };
        std::mem::take(list.get_mut().unwrap_or_else(|e| e.into_inner()))
    }

    /// What a peer needs to reach this QP.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint {
            qpn: self.qp_num(),
            psn: self.psn,
            lid: self.lid,
            gid: self.gid,
        }
    }

    /// The local port the QP is bound to.
    pub fn port(&self) -> u8 {
        self.port
    }

    /// The index of the GID the QP sends from, in its port's table.
    pub fn gid_index(&self) -> u8 {
        self.gid_index
    }

    /// Modifies the QP (`ibv_modify_qp`) with the raw attributes selected by `mask`.
    ///
    /// The safe transitions are the typed ones ([`QueuePairBuilder::build`] to INIT,
    /// [`PreparedQueuePair::connect`] / [`PreparedQueuePair::ready`] to RTS,
    /// [`to_error`](Self::to_error)); this is the way around them.
    ///
    /// # Safety
    /// The QP must keep what its type and the checks on posting rely on:
    /// - its state stays one a [`QueuePair`] may be in: RTS, or SQD, SQE or ERROR (where
    ///   the HCA also moves a QP by itself), never RESET, INIT or RTR, so that
    ///   the state [`query`](Self::query) reports agrees with the type;
    /// - its capabilities (`IBV_QP_CAP`) do not change: requests are checked against the
    ///   ones granted at creation;
    /// - its transport, port and protection domain stay as created.
    pub unsafe fn modify(
        &self,
        attr: &mut ffi::ibv_qp_attr,
        mask: ffi::ibv_qp_attr_mask,
    ) -> Result<()> {
        // SAFETY: the caller keeps the capabilities (this function's contract).
        unsafe { self.raw.modify(attr, mask) }
    }

    /// `ibv_modify_qp` for the typed transitions and the typed changes in RTS (the
    /// alternate path, a migration request), which keep the promises of
    /// [`modify`](Self::modify). A failed state change is [`Error::Transition`].
    ///
    /// [`Error::Transition`]: crate::Error::Transition
    fn transition(&self, attr: &mut ffi::ibv_qp_attr, mask: ffi::ibv_qp_attr_mask) -> Result<()> {
        self.raw.transition(attr, mask)
    }

    /// Records that the QP's CM id disconnected, which moved the QP out of RTS for good
    /// (see [`post_send`](Self::post_send) on siw).
    #[cfg(feature = "cm")]
    pub(crate) fn mark_disconnected(&self) {
        self.raw.mark_stopped();
    }

    /// Moves the QP to ERROR, which flushes every outstanding request.
    pub fn to_error(&self) -> Result<()> {
        let mut attr = ffi::ibv_qp_attr {
            qp_state: ffi::ibv_qp_state::IBV_QPS_ERR,
            ..Default::default()
        };
        self.transition(&mut attr, ffi::ibv_qp_attr_mask::IBV_QP_STATE)
    }

    /// Posts a list of send requests (`ibv_post_send`).
    ///
    /// Every request is first checked against the QP's transport and the capabilities it
    /// was granted; if one is refused ([`Error::Request`], naming the limit), none is
    /// posted. If the provider fails, the requests before its index were posted:
    /// [`Error::QueueFull`] when the send queue is full, [`Error::Unsupported`] when it has
    /// no `post_send` (or no support for the first request's operation: nothing was
    /// posted), else [`Error::Post`].
    ///
    /// On siw, whose provider never completes a request posted on a QP in ERROR or
    /// disconnected (the kernel flushed its queue once, at the move), a post (send or
    /// receive) on a QP this process moved to ERROR ([`to_error`](Self::to_error),
    /// [`modify`](Self::modify)) or whose CM id it disconnected
    /// ([`CmId::disconnect`](crate::cm::CmId::disconnect)) is refused with
    /// [`Error::Unsupported`], nothing posted. siw's `ibv_query_qp` reports no state, so a
    /// QP the kernel stopped by itself (the peer's disconnect, a failed request) is not
    /// known: on siw, answer a `Disconnected` event with `disconnect` (or `to_error`)
    /// before posting again, and give a wait for a completion there a deadline.
    ///
    /// [`Error::Request`]: crate::Error::Request
    /// [`Error::QueueFull`]: crate::Error::QueueFull
    /// [`Error::Unsupported`]: crate::Error::Unsupported
    /// [`Error::Post`]: crate::Error::Post
    #[inline]
    pub fn post_send(&self, wrs: &mut [SendRequest<'_>]) -> Result<(), PostError> {
        self.raw.post_send(wrs)
    }
}

impl Drop for QueuePair {
    fn drop(&mut self) {
        self.detach_all_mcast();
        // The QP is destroyed as `raw` drops, next.
    }
}

impl fmt::Debug for QueuePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueuePair")
            .field("qp_num", &self.qp_num())
            .field("qp_type", &self.qp_type)
            .field("port", &self.port)
            .finish()
    }
}

/// A random 24-bit packet sequence number: the hash of nothing under a new `RandomState`,
/// whose keys are random per thread and step on with each one made (no system call).
fn random_psn() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let h = std::collections::hash_map::RandomState::new().build_hasher();
    (h.finish() & 0xff_ffff) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_is_24_bits() {
        assert!(random_psn() <= 0xff_ffff);
    }
}
