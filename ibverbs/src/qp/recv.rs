//! Posting receives to a queue pair (`ibv_post_recv`), checked by a table lookup.
//!
//! A receive's requirement word is one bit, its class ([`recv_need`](crate::wr::limits)):
//! `1 << n` for `n` entries, or the class that needs the exact check. The QP keeps, per
//! class, the function a single request of that class is posted with: the provider's
//! `post_recv` (`ibv_context::ops`, read once at creation; `ibv_post_recv` calls the same
//! pointer) where the class fits the queue, else [`refuse`]. So the check of one request is
//! the load of its table entry, not a test and branch of its own, and a refused request
//! comes back from `refuse` to the exact check of a list, where it gets its typed error.

use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::num::NonZeroU64;
use std::ptr;

use super::QueuePair;
use crate::ffi;
use crate::wr::limits::{RecvLimits, RECV_CLASSES};
use crate::wr::post_error::PostError;
use crate::wr::{post_failed, post_many, Frame, Limits, Linked, RecvRequest};

/// The signature of `ibv_context_ops::post_recv`.
type PostRecv = unsafe extern "C" fn(
    *mut ffi::ibv_qp,
    *mut ffi::ibv_recv_wr,
    *mut *mut ffi::ibv_recv_wr,
) -> c_int;

/// What [`refuse`] returns; no provider does (they return 0, an errno value or -1).
const REFUSED: c_int = c_int::MIN;

/// The receive queue of a QP: its limits and its post function by request class.
pub(super) struct RecvQueue {
    limits: RecvLimits,
    by_class: [PostRecv; RECV_CLASSES],
}

impl RecvQueue {
    /// The receive queue of the live QP `qp`, which was granted `limits`.
    pub(super) fn new(qp: *mut ffi::ibv_qp, limits: RecvLimits) -> Self {
        // SAFETY: the QP and its context are live. libibverbs fills every empty slot of
        // the ops table with a stub, and a provider sets it once, when the context opens.
        let provider = unsafe { (*(*qp).context).ops.post_recv }.unwrap_or(refuse);
        let deny = limits.deny();
        RecvQueue {
            limits,
            by_class: std::array::from_fn(|k| if deny >> k & 1 == 0 { provider } else { refuse }),
        }
    }
}

/// The table entry of a class the queue does not take: posts nothing, writes the request
/// to `bad` as a failing provider does and returns [`REFUSED`].
unsafe extern "C" fn refuse(
    _qp: *mut ffi::ibv_qp,
    wr: *mut ffi::ibv_recv_wr,
    bad: *mut *mut ffi::ibv_recv_wr,
) -> c_int {
    // SAFETY: `bad` is the frame slot of QueuePair::post_recv, which is writable.
    unsafe { *bad = wr };
    REFUSED
}

impl QueuePair {
    /// Posts a list of receive requests (`ibv_post_recv`), checked as
    /// [`post_send`](Self::post_send) checks sends.
    #[inline]
    pub fn post_recv(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        self.mark_posted();
        // Only the QP is kept across the provider call, in the frame next to `bad`.
        let mut frame = Frame::<ffi::ibv_recv_wr, _>::new(self);
        if let [one] = wrs {
            let need = one.need();
            debug_assert!(
                need.is_power_of_two() && need < 1 << RECV_CLASSES,
                "{need:#x}"
            );
            // SAFETY: a receive's requirement word is one bit below RECV_CLASSES
            // (limits::recv_need, the only maker of RecvRequest::need): not zero, and the
            // bit's index is in the table.
            let post = unsafe {
                let class = NonZeroU64::new_unchecked(need).trailing_zeros();
                *self.recv.by_class.get_unchecked(class as usize)
            };
            one.set_next(ptr::null_mut());
            let wr = ptr::from_mut(one).cast();
            // SAFETY: the QP is live; `post` is its provider's post_recv for a class it
            // takes (so the request fits its limits), or `refuse`. The request is alone
            // (next is null) and its SGEs borrow live registered regions.
            return match unsafe { post(self.ptr(), wr, frame.bad()) } {
                0 => Ok(()),
                rc => frame.keep.one_failed(rc, frame.bad),
            };
        }
        self.post_recv_many(wrs)
    }

    /// [`post_recv`](Self::post_recv) of a single request that `post` did not post: a
    /// refused one gets the exact check, a provider's failure its error.
    #[cold]
    #[inline(never)]
    fn one_failed(
        &self,
        rc: c_int,
        bad: MaybeUninit<*mut ffi::ibv_recv_wr>,
    ) -> Result<(), PostError> {
        if rc != REFUSED {
            return Err(post_failed(
                "ibv_post_recv",
                0,
                rc,
                self.recv.limits.depth(),
            ));
        }
        // SAFETY: `refuse` wrote the pointer it was given: the whole one request of
        // post_recv's list, which is borrowed for this call and whose first field is its
        // `ibv_recv_wr`.
        let one = unsafe { &mut *bad.assume_init().cast::<RecvRequest<'_>>() };
        self.post_recv_many(std::slice::from_mut(one))
    }

    /// [`post_recv`](Self::post_recv) of any other list: linked, checked and posted.
    fn post_recv_many(&self, wrs: &mut [RecvRequest<'_>]) -> Result<(), PostError> {
        let queue = || ("ibv_post_recv", self.recv.limits.depth());
        post_many(
            |head, bad| {
                // SAFETY: the QP is live; every request was checked against its limits,
                // the list is linked and every SGE borrows a live registered region.
                unsafe { ffi::ibv_post_recv(self.ptr(), head, bad) }
            },
            wrs,
            &self.recv.limits,
            queue,
        )
    }
}
