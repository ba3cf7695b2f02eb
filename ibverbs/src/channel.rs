//! Completion event channels: `struct ibv_comp_channel`.

use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;

/// A completion event channel (`ibv_create_comp_channel`): a file descriptor that becomes
/// readable when a CQ attached to it has an event. Works with `poll`, `epoll` and async
/// runtimes through [`AsFd`].
#[derive(Clone)]
pub struct CompletionChannel {
    inner: Arc<Inner>,
}

struct Inner {
    raw: NonNull<ffi::ibv_comp_channel>,
    ctx: Context,
}

// SAFETY: channels may be used from any thread.
unsafe impl Send for Inner {}
// SAFETY: as above; ibv_get_cq_event is thread-safe.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // SAFETY: every CQ using the channel holds a clone, so none is left.
        let rc = unsafe { ffi::ibv_destroy_comp_channel(self.raw.as_ptr()) };
        drop_error::report("ibv_destroy_comp_channel", rc);
    }
}

impl Context {
    /// Creates a completion event channel (`ibv_create_comp_channel`).
    pub fn create_comp_channel(&self) -> Result<CompletionChannel> {
        // SAFETY: the context is open.
        let raw = unsafe { ffi::ibv_create_comp_channel(self.as_raw()) };
        Ok(CompletionChannel {
            inner: Arc::new(Inner {
                raw: check_ptr("ibv_create_comp_channel", raw)?,
                ctx: self.clone(),
            }),
        })
    }
}

impl CompletionChannel {
    /// The raw `ibv_comp_channel`, valid while the channel lives.
    pub fn as_raw(&self) -> *mut ffi::ibv_comp_channel {
        self.inner.raw.as_ptr()
    }

    /// The context the channel belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
    }

    /// Makes [`CompletionQueue::wait`](crate::CompletionQueue::wait) return instead of
    /// blocking when no event is pending (`O_NONBLOCK` on the fd).
    pub fn set_nonblocking(&self, nonblocking: bool) -> Result<()> {
        let fd = self.as_raw_fd();
        // SAFETY: fd is the channel's open descriptor.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(Error::last("fcntl"));
        }
        let flags = if nonblocking {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        // SAFETY: as above.
        if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
            return Err(Error::last("fcntl"));
        }
        Ok(())
    }
}

impl AsRawFd for CompletionChannel {
    fn as_raw_fd(&self) -> RawFd {
        // SAFETY: the channel is live.
        unsafe { (*self.as_raw()).fd }
    }
}

impl AsFd for CompletionChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the fd stays open while the channel (and so this borrow) lives.
        unsafe { BorrowedFd::borrow_raw(self.as_raw_fd()) }
    }
}

impl fmt::Debug for CompletionChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionChannel")
            .field("fd", &self.as_raw_fd())
            .finish()
    }
}
