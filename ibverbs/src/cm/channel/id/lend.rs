//! A CM id's QP lent to an owner of its own (the tokio layer's `AsyncQp`) while librdmacm
//! keeps moving it through its states: the id holds the owner until it is destroyed.

use std::any::Any;
use std::ptr;
use std::sync::Arc;

use super::CmId;
use crate::error::{Error, Result};
use crate::qp::QueuePair;

/// What keeps a lent QP alive: the owner `wrap` made of it.
pub(crate) type Keeper = Arc<dyn Any + Send + Sync>;

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
        if self.has_joins() {
            return Err(refused(
                "it has joined multicast groups: make its async QP before joining",
            ));
        }
        let qp = self
            .qp
            .take()
            .ok_or_else(|| refused("it has no QP (create_qp makes it)"))?;
        let raw = qp.ptr();
        // SAFETY: null: librdmacm must not reach the QP while it changes hands (wrap may
        // destroy it).
        unsafe { self.set_librdmacm_qp(ptr::null_mut()) };
        let owner = wrap(*qp)?;
        let keeper: Keeper = owner.clone();
        // SAFETY: the QP lives while `keeper` does, which the id holds until
        // release_lent sets the pointer to null again.
        unsafe { self.set_librdmacm_qp(raw) };
        self.lent = Some(keeper);
        Ok(owner)
    }

    /// Clears librdmacm's pointer to a lent QP and lets its owner go (the QP is destroyed
    /// when the owner's last clone is).
    pub(super) fn release_lent(&mut self) {
        if let Some(keeper) = self.lent.take() {
            // SAFETY: null: librdmacm must not reach the QP once it may be destroyed.
            unsafe { self.set_librdmacm_qp(ptr::null_mut()) };
            drop(keeper);
        }
    }
}
