//! A device's asynchronous events as a [`Stream`] on tokio.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use ::tokio::io::unix::AsyncFd;
use futures_core::Stream;

use super::raw::{reactor_error, register, Registered};
use crate::context::Context;
use crate::error::Result;
use crate::fd::set_nonblocking;
use crate::types::AsyncEvent;

/// The asynchronous events of a device (`ibv_get_async_event`, each acknowledged with
/// `ibv_ack_async_event` before it is yielded) as a [`Stream`] (feature `tokio`). The
/// stream does not end; an error reading an event is an `Err` item.
///
/// Made by [`AsyncEvents::new`], which makes the context's async fd non-blocking (for good:
/// [`Context::get_async_event`] still blocks, by waiting with `poll`) and registers it
/// with the reactor. One stream per context at a time: the reactor refuses a second
/// registration of the fd. Other readers of the context's events
/// ([`Context::wait_async_event`]) take events from the stream.
pub struct AsyncEvents {
    /// The context's async fd on the reactor; the registration holds the context, so it
    /// comes off the reactor before the context (maybe its last handle) closes.
    fd: AsyncFd<Registered<Context>>,
}

impl AsyncEvents {
    /// Registers `ctx`'s async fd with the current tokio runtime's reactor.
    ///
    /// Fails with [`Error::InvalidArgument`](crate::Error::InvalidArgument) outside a
    /// tokio runtime or in one without an I/O driver, and with the reactor's error
    /// (`EEXIST`) while another stream of the context exists.
    pub fn new(ctx: &Context) -> Result<AsyncEvents> {
        let fd = register(ctx.clone(), "async event stream")?;
        set_nonblocking(ctx.async_fd())?;
        Ok(AsyncEvents { fd })
    }

    /// The context.
    fn ctx(&self) -> &Context {
        self.fd.get_ref().owner()
    }

    /// The next event.
    pub async fn next_event(&mut self) -> Result<AsyncEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(&self, cx: &mut TaskContext<'_>) -> Poll<Result<AsyncEvent>> {
        loop {
            let mut ready = match self.fd.poll_read_ready(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(ready) => ready.map_err(reactor_error)?,
            };
            match self.ctx().try_get_async_event()? {
                Some(event) => return Poll::Ready(Ok(event)),
                None => ready.clear_ready(),
            }
        }
    }
}

impl Stream for AsyncEvents {
    type Item = Result<AsyncEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.poll_event(cx).map(Some)
    }
}

impl std::fmt::Debug for AsyncEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncEvents")
            .field("device", &self.ctx().name())
            .finish()
    }
}
