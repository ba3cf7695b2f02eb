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

use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::ffi;

/// A completion event channel (`ibv_create_comp_channel`): a file descriptor that becomes
/// readable when a CQ attached to it has an event. Works with `poll`, `epoll` and async
/// runtimes through [`AsFd`]; the descriptor is non-blocking, and
/// [`CompletionQueue::wait`](crate::CompletionQueue::wait) waits with `poll(2)`.
///
/// Any number of CQs may share a channel: each event reaches the CQ it belongs to.
#[derive(Clone)]
pub struct CompletionChannel {
    inner: Arc<Inner>,
}

struct Inner {
    raw: NonNull<ffi::ibv_comp_channel>,
    ctx: Context,
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

// SAFETY: channels may be used from any thread; the event state is behind a mutex.
unsafe impl Send for Inner {}
// SAFETY: as above; ibv_get_cq_event and ibv_ack_cq_events are thread-safe.
unsafe impl Sync for Inner {}

impl Drop for Inner {
    fn drop(&mut self) {
        // Off the reactor before the fd closes.
        #[cfg(feature = "tokio")]
        drop(self.reactor.take());
        // SAFETY: every CQ using the channel holds a clone, so none is left.
        let rc = unsafe { ffi::ibv_destroy_comp_channel(self.raw.as_ptr()) };
        drop_error::report("ibv_destroy_comp_channel", rc);
    }
}

impl Context {
    /// Creates a completion event channel (`ibv_create_comp_channel`) with a non-blocking
    /// descriptor.
    pub fn create_comp_channel(&self) -> Result<CompletionChannel> {
        // SAFETY: the context is open.
        let raw = unsafe { ffi::ibv_create_comp_channel(self.as_raw()) };
        let channel = CompletionChannel {
            inner: Arc::new(Inner {
                raw: check_ptr("ibv_create_comp_channel", raw)?,
                ctx: self.clone(),
                events: Arc::default(),
                read_done: Condvar::new(),
                #[cfg(feature = "tokio")]
                reactor: std::sync::OnceLock::new(),
            }),
        };
        set_nonblocking(channel.as_raw_fd())?;
        Ok(channel)
    }
}

/// Sets `O_NONBLOCK` on `fd` (`fcntl`).
pub(crate) fn set_nonblocking(fd: RawFd) -> Result<()> {
    // SAFETY: fd is the channel's open descriptor.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(Error::last("fcntl"));
    }
    Ok(())
}

impl CompletionChannel {
    /// The raw `ibv_comp_channel`, valid while the channel lives.
    ///
    /// Reading events from it directly (`ibv_get_cq_event`) bypasses the demultiplexing:
    /// the CQs of the channel then miss those events.
    pub fn as_raw(&self) -> *mut ffi::ibv_comp_channel {
        self.inner.raw.as_ptr()
    }

    /// The context the channel belongs to.
    pub fn context(&self) -> &Context {
        &self.inner.ctx
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
        events.stop_waiting(cq);
        events.pending.retain(|slot| slot.key != cq as usize);
    }

    /// Takes one event for `cq`, reading the channel as needed, until `deadline` (forever
    /// if `None`). True if an event was taken, false on timeout.
    pub(crate) fn take_event(
        &self,
        cq: *mut ffi::ibv_cq,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let mut events = self.lock();
        // Whether this thread's last read of the fd found nothing.
        let mut idle = false;
        loop {
            if events.take(cq) {
                return Ok(true);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) && (idle || events.reading) {
                return Ok(false);
            }
            if events.reading {
                let cv = &self.inner.read_done;
                events = match left {
                    None => cv.wait(events).unwrap_or_else(PoisonError::into_inner),
                    Some(left) => {
                        let waited = cv.wait_timeout(events, left);
                        waited.unwrap_or_else(PoisonError::into_inner).0
                    }
                };
                continue;
            }
            events.reading = true;
            drop(events);
            let read = self.read_event(left);
            events = self.lock();
            events.reading = false;
            idle = matches!(read, Ok(None));
            if let Ok(Some(from)) = read {
                events.count(from);
            }
            self.inner.read_done.notify_all();
            read?;
        }
    }

    /// Reads the events queued on the fd without waiting, counting each for its CQ and
    /// waking that CQ's async waiter, until the fd has no more (`EAGAIN`).
    #[cfg(feature = "tokio")]
    pub(crate) fn drain(&self, events: &mut Events) -> Result<()> {
        while let Some(from) = self.get_event()? {
            events.count(from);
        }
        Ok(())
    }

    /// Reads one event, waiting up to `timeout` (forever if `None`) for the fd to become
    /// readable (`poll`). `None` if there was none (timeout, interrupt).
    fn read_event(&self, timeout: Option<Duration>) -> Result<Option<*mut ffi::ibv_cq>> {
        if let Some(cq) = self.get_event()? {
            return Ok(Some(cq));
        }
        let ms = timeout.map_or(-1, |t| {
            // Round up, so a short timeout still waits.
            i32::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
        });
        let mut pfd = libc::pollfd {
            fd: self.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: pfd is one valid pollfd for the duration of the call.
        match unsafe { libc::poll(&mut pfd, 1, ms) } {
            n if n > 0 => self.get_event(),
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

    /// Reads one event if one is queued (`ibv_get_cq_event` on the non-blocking fd).
    fn get_event(&self) -> Result<Option<*mut ffi::ibv_cq>> {
        let mut cq = std::ptr::null_mut();
        let mut cq_ctx = std::ptr::null_mut();
        // SAFETY: the channel is live; the out pointers are valid.
        if unsafe { ffi::ibv_get_cq_event(self.as_raw(), &mut cq, &mut cq_ctx) } == 0 {
            return Ok(Some(cq));
        }
        match std::io::Error::last_os_error() {
            err if err.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            source => Err(Error::Verb {
                verb: "ibv_get_cq_event",
                source,
            }),
        }
    }
}

impl Events {
    fn slot(&mut self, cq: *mut ffi::ibv_cq) -> Option<&mut Slot> {
        self.pending.iter_mut().find(|slot| slot.key == cq as usize)
    }

    /// Counts an event just read for `from`, wakes its async waiter and acknowledges it.
    fn count(&mut self, from: *mut ffi::ibv_cq) {
        if let Some(slot) = self.slot(from) {
            slot.pending += 1;
            if let Some(waker) = slot.waker.take() {
                waker.wake();
            }
        }
        // SAFETY: `from` is a CQ of this channel whose event was just read. Its
        // ibv_destroy_cq, if under way, waits for this acknowledgement, so it is live; it
        // is acknowledged under the lock, after being counted, so its address cannot be
        // reused by a new CQ in between.
        unsafe { ffi::ibv_ack_cq_events(from, 1) };
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

    /// `cq`'s task stops waiting: its waker is dropped.
    pub(crate) fn stop_waiting(&mut self, cq: *mut ffi::ibv_cq) {
        if let Some(slot) = self.slot(cq) {
            slot.waker = None;
        }
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
        wakers.into_iter().for_each(Waker::wake);
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
