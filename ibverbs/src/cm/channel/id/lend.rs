//! A CM id's QP lent to an owner of its own (the tokio layer's `AsyncQp`) while librdmacm
//! keeps moving it through its states: the id holds the owner until it is destroyed. The
//! folder's other unsafe file beside `raw.rs`: that the owner keeps the QP alive is a
//! promise of `wrap`'s, which no type states.

use std::any::Any;
use std::sync::Arc;

use super::raw::Keeper;
use super::CmId;
use crate::error::{Error, Result};
use crate::qp::QueuePair;

impl CmId {
    /// Hands the id's QP to `wrap`, which makes the owner of it that the caller gets, and
    /// keeps a clone of that owner, so the QP lives while librdmacm may reach it (connect
    /// and accept move it to RTR and RTS, disconnect to ERROR) and until the id is
    /// destroyed. The id's [`qp`](Self::qp) is then `None`: only the owner posts on it.
    ///
    /// Refused, before anything changes, if the id has no QP or has joined multicast
    /// groups (join them after: the lent QP is attached to them and detached when the id
    /// leaves them). If `wrap` fails, the QP is destroyed and the id has none.
    pub(crate) fn lend_qp<T: Any + Send + Sync>(
        &mut self,
        wrap: impl FnOnce(QueuePair) -> Result<Arc<T>>,
    ) -> Result<Arc<T>> {
        let refused = |reason: &str| Error::InvalidArgument {
            what: "CM id",
            reason: reason.into(),
        };
        if self.raw.has_joins() {
            return Err(refused(
                "it has joined multicast groups: make its async QP before joining",
            ));
        }
        // librdmacm's pointer to it is cleared: it must not reach the QP while it changes
        // hands (wrap may destroy it).
        let qp = self
            .raw
            .take_qp()
            .ok_or_else(|| refused("it has no QP (create_qp makes it)"))?;
        let raw = qp.ptr();
        let owner = wrap(qp)?;
        let keeper: Keeper = owner.clone();
        // SAFETY: the QP lives while `keeper` does: wrap was handed the QP and made `owner`
        // of it (the one caller, AsyncQp::on_cm_id, gives the AsyncQp's shared state, which
        // owns the QP).
        unsafe { self.raw.lend(raw, keeper) };
        Ok(owner)
    }
}
