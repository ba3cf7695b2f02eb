//! Waking tasks. A [`Waker`] is a callback of whatever runtime polls the crate's futures: it
//! may panic, or poll a future of the crate again before it returns. So the crate wakes
//! only with none of its locks held and its state consistent, collecting the wakers to wake
//! while it holds a lock and calling [`wake_all`] after releasing it.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::task::Waker;

/// Wakes every waker of `wakers`, even if one panics; the first panic is then resumed, once
/// all were woken (a task left unwoken could wait forever).
pub(crate) fn wake_all(wakers: impl IntoIterator<Item = Waker>) {
    let mut panicked = None;
    for waker in wakers {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| waker.wake())) {
            panicked.get_or_insert(payload);
        }
    }
    if let Some(payload) = panicked {
        resume_unwind(payload);
    }
}
