//! Completion event channels: `struct ibv_comp_channel`, and the demultiplexing of their
//! events to the CQs that share a channel.
//!
//! `ibv_get_cq_event` returns whichever CQ's event comes next, so a CQ waiting on a shared
//! channel may read another CQ's event. The channel keeps a pending count per CQ: the event
//! is acknowledged at once (`ibv_ack_cq_events`, exactly once, by the thread that read it)
//! and counted for the CQ it belongs to, whose next wait takes it. One thread at a time
//! reads the fd; the others wait on a condition variable and are woken after every read.
//!
//! Async waiters (the `tokio` feature) use the same counts: each CQ's slot also holds the
//! waker of the task waiting for it, woken when an event for that CQ is counted. The
//! reactor holds no task's waker but the channel's [`FanOut`], which wakes every waiting
//! task: whichever is polled first drains the fd, so no task that is never polled again
//! can keep the others from their events.
//!
//! Every event read from the fd must be acknowledged, or `ibv_destroy_cq` waits forever for
//! it; so the fd is never handed to safe code (no `AsFd`, no `AsRawFd`: a borrowed fd can
//! be duplicated and read). Its readiness is waited for through the crate's own waits
//! ([`CompletionQueue::wait`](crate::CompletionQueue::wait) and its siblings, the `tokio`
//! feature's `AsyncCq`); an event loop of the caller's gets the number through the `unsafe`
//! [`CompletionChannel::raw_fd`]. Wakers (the `tokio` feature) are woken after the lock
//! is released ([`wake_all`]).

use std::fmt;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use super::raw::{CqEvent, RawChannel};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::fd::poll_fds;
use crate::ffi;
use crate::wake::wake_all;

/// A completion event channel (`ibv_create_comp_channel`): a file descriptor that becomes
/// readable when a CQ attached to it has an event. The descriptor is non-blocking and stays
/// inside the channel: [`CompletionQueue::wait`](crate::CompletionQueue::wait) and its
/// siblings wait for it with `poll(2)`, the `tokio` feature's `AsyncCq` on the reactor, and
/// an event loop of the caller's gets its number from the `unsafe`
/// [`raw_fd`](Self::raw_fd).
///
/// Any number of CQs may share a channel: each event reaches the CQ it belongs to.
#[derive(Clone)]
pub struct CompletionChannel {
    inner: Arc<Inner>,
}

struct Inner {
    /// The C object and its context; shared with the fd's registration with tokio's
    /// reactor (the `tokio` feature), which keeps the fd open while it is registered.
    raw: Arc<RawChannel>,
    /// Shared with the [`FanOut`] waker the reactor holds.
    events: Arc<Mutex<Events>>,
    /// Signalled after every read of the fd.
    read_done: Condvar,
    /// The fd's registration with tokio's reactor, made on first async use.
    #[cfg(feature = "tokio")]
    pub(crate) reactor: std::sync::OnceLock<crate::tokio::ChannelFd>,
}

/// Events read from the channel and not yet taken by their CQ.
#[derive(Default)]
pub(crate) struct Events {
    /// The CQs of the channel.
    pending: Vec<Slot>,
    /// Whether a thread is reading the fd.
    reading: bool,
}

/// One CQ of a channel.
struct Slot {
    /// The CQ's address.
    key: usize,
    /// Events read for it and not taken yet.
    pending: u64,
    /// The async task waiting for its next event.
    waker: Option<Waker>,
}

impl Context {
    /// Creates a completion event channel (`ibv_create_comp_channel`) with a non-blocking
    /// descriptor.
    pub fn create_comp_channel(&self) -> Result<CompletionChannel> {
        Ok(CompletionChannel {
            inner: Arc::new(Inner {
                raw: Arc::new(RawChannel::create(self)?),
                events: Arc::default(),
                read_done: Condvar::new(),
                #[cfg(feature = "tokio")]
                reactor: std::sync::OnceLock::new(),
            }),
        })
    }
}

impl CompletionChannel {
    /// The raw `ibv_comp_channel`, valid while the channel lives.
    ///
    /// Reading events from it directly (`ibv_get_cq_event`) bypasses the demultiplexing:
    /// the CQs of the channel then miss those events.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_comp_channel {
        self.inner.raw.ptr()
    }

    /// The context the channel belongs to.
    pub fn context(&self) -> &Context {
        self.inner.raw.context()
    }

    /// The channel's descriptor, for the crate's own waits.
    pub(crate) fn fd(&self) -> RawFd {
        self.inner.raw.fd()
    }

    /// The channel's file descriptor, to wait for its readiness in an event loop of the
    /// caller's (`poll`, `epoll`, a reactor's registration); once it is readable, take the
    /// event through the crate: [`CompletionQueue::wait_timeout`] with a zero timeout (or
    /// [`poll_wait`](crate::CompletionQueue::poll_wait)), for each CQ of the channel.
    ///
    /// ```no_run
    /// # fn f(ctx: rdma_verbs::Context) -> rdma_verbs::Result<()> {
    /// let channel = ctx.create_comp_channel()?;
    /// let cq = ctx.create_cq(16, Some(&channel))?;
    /// cq.req_notify(false)?;
    /// // SAFETY: the fd is only polled for readiness; the event is taken by wait_timeout.
    /// let fd = unsafe { channel.raw_fd() };
    /// let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    /// // SAFETY: pfd is one valid pollfd.
    /// if unsafe { libc::poll(&mut pfd, 1, 1000) } == 1 {
    ///     cq.wait_timeout(std::time::Duration::ZERO)?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Safety
    /// The descriptor may only be waited on for readiness. The caller must not read from it
    /// (`read`, `ibv_get_cq_event`, anything that does), duplicate it for anything that
    /// reads, close it, or change its flags (it stays non-blocking). An event read past the
    /// channel is never acknowledged, and `ibv_destroy_cq` then blocks forever in the CQ's
    /// drop; a blocking descriptor stalls the channel's reads. It is open while the channel
    /// lives.
    ///
    /// [`CompletionQueue::wait_timeout`]: crate::CompletionQueue::wait_timeout
    pub unsafe fn raw_fd(&self) -> RawFd {
        self.fd()
    }

    /// The C object: what a CQ created on the channel keeps, and (the `tokio` feature) what
    /// the fd's registration with tokio's reactor keeps.
    pub(crate) fn raw(&self) -> &Arc<RawChannel> {
        &self.inner.raw
    }

    /// The fd's registration with tokio's reactor (set by the first async CQ).
    #[cfg(feature = "tokio")]
    pub(crate) fn reactor(&self) -> &std::sync::OnceLock<crate::tokio::ChannelFd> {
        &self.inner.reactor
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Events> {
        lock(&self.inner.events)
    }

    /// The waker to register with the reactor: wakes every task waiting on a CQ of the
    /// channel.
    #[cfg(feature = "tokio")]
    pub(crate) fn fan_out(&self) -> Waker {
        Waker::from(Arc::new(FanOut(Arc::clone(&self.inner.events))))
    }

    /// Adds a CQ created on this channel.
    pub(crate) fn register(&self, cq: *mut ffi::ibv_cq) {
        self.lock().pending.push(Slot {
            key: cq as usize,
            pending: 0,
            waker: None,
        });
    }

    /// Removes a CQ before it is destroyed. Events for it read later are acknowledged and
    /// dropped; its `ibv_destroy_cq` waits for those acknowledgements.
    pub(crate) fn unregister(&self, cq: *mut ffi::ibv_cq) {
        let mut events = self.lock();
        let waker = events.stop_waiting(cq);
        events.pending.retain(|slot| slot.key != cq as usize);
        drop(events);
        drop(waker); // outside the lock: a waker's drop is the runtime's code
    }

    /// Takes one event for `cq`, reading the channel as needed, until `deadline` (forever
    /// if `None`). True if an event was taken, false on timeout.
    pub(crate) fn take_event(
        &self,
        cq: *mut ffi::ibv_cq,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        // Whether this thread's last read of the fd found nothing.
        let mut idle = false;
        loop {
            let mut events = self.lock();
            let left = loop {
                if events.take(cq) {
                    return Ok(true);
                }
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                if left == Some(Duration::ZERO) && (idle || events.reading) {
                    return Ok(false);
                }
                if !events.reading {
                    break left;
                }
                let cv = &self.inner.read_done;
                events = match left {
                    None => cv.wait(events).unwrap_or_else(PoisonError::into_inner),
                    Some(left) => {
                        let waited = cv.wait_timeout(events, left);
                        waited.unwrap_or_else(PoisonError::into_inner).0
                    }
                };
            };
            events.reading = true;
            drop(events);
            let read = self.read_event(left);
            let mut events = self.lock();
            events.reading = false;
            idle = matches!(read, Ok(None));
            let woken = read.map(|event| event.and_then(|event| events.count(event)));
            self.inner.read_done.notify_all();
            drop(events);
            wake_all(woken?);
        }
    }

    /// Reads the events queued on the fd without waiting, counting each for its CQ, until
    /// the fd has no more (`EAGAIN`); the async waiters of those CQs go to `wakes`, to be
    /// woken by the caller once it holds no lock of the crate.
    #[cfg(feature = "tokio")]
    pub(crate) fn drain(&self, wakes: &mut Vec<Waker>) -> Result<()> {
        let mut events = self.lock();
        while let Some(event) = self.inner.raw.get_event()? {
            wakes.extend(events.count(event));
        }
        Ok(())
    }

    /// Reads one event, waiting up to `timeout` (forever if `None`) for the fd to become
    /// readable (`poll`). `None` if there was none (timeout, interrupt).
    fn read_event(&self, timeout: Option<Duration>) -> Result<Option<CqEvent>> {
        if let Some(event) = self.inner.raw.get_event()? {
            return Ok(Some(event));
        }
        let ms = timeout.map_or(-1, |t| {
            // Round up, so a short timeout still waits.
            i32::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
        });
        let mut pfd = [libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        match poll_fds(&mut pfd, ms) {
            n if n > 0 => self.inner.raw.get_event(),
            0 => Ok(None),
            _ => match std::io::Error::last_os_error() {
                err if err.kind() == std::io::ErrorKind::Interrupted => Ok(None),
                source => Err(Error::Verb {
                    verb: "poll",
                    source,
                }),
            },
        }
    }
}

impl Events {
    fn slot(&mut self, cq: *mut ffi::ibv_cq) -> Option<&mut Slot> {
        self.pending.iter_mut().find(|slot| slot.key == cq as usize)
    }

    /// Counts an event just read for its CQ and acknowledges it; returns its async waiter,
    /// to be woken once the lock is released.
    #[must_use = "the waiter must be woken"]
    fn count(&mut self, event: CqEvent) -> Option<Waker> {
        let waker = self.slot(event.cq()).and_then(|slot| {
            slot.pending += 1;
            slot.waker.take()
        });
        // Acknowledged here (`ibv_ack_cq_events`, the event's drop), under the lock, after
        // being counted, so the CQ's address cannot be reused by a new CQ in between.
        // Nothing of the caller's runs before it.
        drop(event);
        waker
    }

    /// Takes one pending event of `cq`, if it has one.
    pub(crate) fn take(&mut self, cq: *mut ffi::ibv_cq) -> bool {
        match self.slot(cq) {
            Some(slot) if slot.pending > 0 => {
                slot.pending -= 1;
                true
            }
            _ => false,
        }
    }

    /// Records `waker` as the task waiting for `cq`'s next event.
    #[cfg(feature = "tokio")]
    pub(crate) fn wait(&mut self, cq: *mut ffi::ibv_cq, waker: &Waker) {
        if let Some(slot) = self.slot(cq) {
            match &mut slot.waker {
                Some(old) if old.will_wake(waker) => {}
                other => *other = Some(waker.clone()),
            }
        }
    }

    /// `cq`'s task stops waiting: its waker is returned, to be dropped outside the lock.
    #[must_use = "drop the waker outside the lock"]
    pub(crate) fn stop_waiting(&mut self, cq: *mut ffi::ibv_cq) -> Option<Waker> {
        self.slot(cq).and_then(|slot| slot.waker.take())
    }
}

/// Locks a channel's event state.
fn lock(events: &Mutex<Events>) -> MutexGuard<'_, Events> {
    // Nothing panics while holding the lock; a poisoned state is still consistent.
    events.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The waker the reactor holds for a channel's fd: wakes the task waiting on each CQ of
/// the channel (each re-registers when polled), so the first of them polled drains the fd.
/// It holds the event state only, not the channel (whose registration holds it).
#[cfg(feature = "tokio")]
struct FanOut(Arc<Mutex<Events>>);

#[cfg(feature = "tokio")]
impl std::task::Wake for FanOut {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let wakers: Vec<Waker> = lock(&self.0)
            .pending
            .iter_mut()
            .filter_map(|slot| slot.waker.take())
            .collect();
        // Woken outside the lock.
        wake_all(wakers);
    }
}

impl fmt::Debug for CompletionChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionChannel")
            .field("fd", &self.fd())
            .finish()
    }
}
