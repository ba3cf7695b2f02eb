//! Completion queues: `struct ibv_cq` and `struct ibv_wc`.

pub(crate) mod channel; // CompletionChannel (ibv_create_comp_channel)
pub(crate) mod ex; // ExtendedCq (ibv_create_cq_ex, ibv_start_poll)
pub(crate) mod modify; // moderation: CompletionQueue::modify (ibv_modify_cq)
mod raw; // the FFI calls of CQs, channels and extended CQs: every unsafe block of the folder

#[cfg(feature = "cm")]
#[cfg(feature = "tokio")]
pub(crate) use raw::RawChannel; // the reactor

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::cq::channel::CompletionChannel;
use crate::error::{check, Error, Result};
use crate::ffi;
use crate::types::WcOpcode;
use crate::types::WcStatus;
use raw::{CqOrigin, RawCq};

/// A work completion (`struct ibv_wc`), filled in by [`CompletionQueue::poll`].
#[repr(transparent)]
#[derive(Clone, Copy, Default)]
pub struct WorkCompletion {
    raw: ffi::ibv_wc,
}

impl WorkCompletion {
    /// The `wr_id` of the request that completed.
    pub fn wr_id(&self) -> u64 {
        self.raw.wr_id
    }

    /// The status.
    pub fn status(&self) -> WcStatus {
        WcStatus(self.raw.status)
    }

    /// Whether the request succeeded.
    pub fn is_success(&self) -> bool {
        self.status().is_success()
    }

    /// `Ok(self)` on success, else [`Error::Completion`] with the status.
    pub fn ok(&self) -> Result<&Self> {
        if self.is_success() {
            Ok(self)
        } else {
            Err(Error::Completion {
                wr_id: self.raw.wr_id,
                status: self.status(),
                vendor_err: self.raw.vendor_err,
            })
        }
    }

    /// The operation (only meaningful on success).
    pub fn opcode(&self) -> WcOpcode {
        WcOpcode::from_raw(self.raw.opcode)
    }

    /// Bytes received (receives) or the transfer length.
    pub fn byte_len(&self) -> u32 {
        self.raw.byte_len
    }

    /// The immediate data in host order, if the completion carries any.
    pub fn imm_data(&self) -> Option<u32> {
        if self.raw.wc_flags & ffi::ibv_wc_flags::IBV_WC_WITH_IMM.0 != 0 {
            Some(u32::from_be(raw::imm_data(&self.raw)))
        } else {
            None
        }
    }

    /// The local QP number.
    pub fn qp_num(&self) -> u32 {
        self.raw.qp_num
    }

    /// The sender's QP number (UD receives): where an answer goes.
    pub fn src_qp(&self) -> u32 {
        self.raw.src_qp
    }

    /// The sender's LID (UD receives on InfiniBand).
    pub fn slid(&self) -> u16 {
        self.raw.slid
    }

    /// Whether a 40-byte GRH precedes the data (UD receives): the address of the sender,
    /// which [`ProtectionDomain::create_ah_from_wc`](crate::ProtectionDomain::create_ah_from_wc)
    /// answers.
    pub fn has_grh(&self) -> bool {
        self.raw.wc_flags & ffi::ibv_wc_flags::IBV_WC_GRH.0 != 0
    }

    /// The provider's vendor error code (on failure).
    pub fn vendor_err(&self) -> u32 {
        self.raw.vendor_err
    }

    /// The raw completion.
    pub fn as_raw(&self) -> &ffi::ibv_wc {
        &self.raw
    }
}

impl fmt::Debug for WorkCompletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkCompletion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .field("opcode", &self.opcode())
            .field("byte_len", &self.byte_len())
            .field("imm_data", &self.imm_data())
            .field("qp_num", &self.qp_num())
            .field("src_qp", &self.src_qp())
            .finish()
    }
}

/// A completion queue (`ibv_create_cq`).
///
/// Queue pairs using the CQ keep it alive internally, so it is destroyed (`ibv_destroy_cq`)
/// only after them.
pub struct CompletionQueue {
    inner: Arc<CqInner>,
}

/// A CQ as its owner and the QPs that use it hold it: its C object and, if it has one, its
/// channel, whose count of events it joined when created and leaves before it is destroyed.
pub(crate) struct CqInner {
    raw: RawCq,
    channel: Option<CompletionChannel>,
}

impl Drop for CqInner {
    fn drop(&mut self) {
        if let Some(channel) = &self.channel {
            channel.unregister(self.raw.ptr());
        }
        // `raw` then destroys the CQ.
    }
}

impl CqInner {
    /// The raw `ibv_cq`, valid while the CQ lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_cq {
        self.raw.ptr()
    }

    /// The context the CQ was created on.
    pub(crate) fn context(&self) -> &Context {
        self.raw.context()
    }

    /// The channel the CQ reports events to, if any.
    fn channel(&self) -> Option<&CompletionChannel> {
        self.channel.as_ref()
    }
}

impl Context {
    /// Creates a completion queue with at least `min_entries` entries, optionally reporting
    /// completion events to `channel` (`ibv_create_cq`).
    ///
    /// More entries than the device's `max_cqe` fail with [`Error::DeviceLimit`] before
    /// the call.
    pub fn create_cq(
        &self,
        min_entries: u32,
        channel: Option<&CompletionChannel>,
    ) -> Result<CompletionQueue> {
        let origin = CqOrigin::new(self, channel.map(CompletionChannel::raw))?;
        let cqe = self.checked_cqe(min_entries)?;
        Ok(CompletionQueue::new(origin.create_cq(cqe)?, channel))
    }

    /// `min_entries` as the `cqe` of a CQ, or [`Error::DeviceLimit`] over `max_cqe`.
    pub(crate) fn checked_cqe(&self, min_entries: u32) -> Result<i32> {
        let max_cqe = self.device_limits()?.max_cqe;
        i32::try_from(min_entries)
            .ok()
            .filter(|&n| n <= max_cqe)
            .ok_or(Error::DeviceLimit {
                what: "CQ entries",
                value: min_entries.into(),
                limit: "max_cqe",
                max: u64::try_from(max_cqe).unwrap_or(0),
            })
    }
}

impl CompletionQueue {
    /// The owner of `raw`, a CQ just created on `channel` (if any), which it joins.
    fn new(raw: RawCq, channel: Option<&CompletionChannel>) -> Self {
        if let Some(channel) = channel {
            channel.register(raw.ptr());
        }
        CompletionQueue {
            inner: Arc::new(CqInner {
                raw,
                channel: channel.cloned(),
            }),
        }
    }

    /// The raw `ibv_cq`, valid while the CQ lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_cq {
        self.inner.ptr()
    }

    pub(crate) fn inner(&self) -> &Arc<CqInner> {
        &self.inner
    }

    /// The number of entries the CQ actually has.
    pub fn capacity(&self) -> u32 {
        u32::try_from(self.cqe()).unwrap_or(0)
    }

    /// Polls up to `wc.len()` completions into `wc` (`ibv_poll_cq`) and returns the filled
    /// part; empty when there are none. Allocates nothing. A provider without `poll_cq`
    /// gives [`Error::Unsupported`].
    #[inline]
    pub fn poll<'w>(&self, wc: &'w mut [WorkCompletion]) -> Result<&'w mut [WorkCompletion]> {
        self.poll_filled(wc)
    }

    /// Requests a completion event for the next completion, or the next solicited one
    /// (`ibv_req_notify_cq`).
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        check("ibv_req_notify_cq", self.req_notify_cq(solicited_only))
            .map_err(|e| e.or_unsupported("ibv_req_notify_cq", "req_notify_cq in its provider"))
    }

    /// Polls until `wc` holds at least `min` completions, spinning on `ibv_poll_cq` (no
    /// system call, lowest latency, one core busy), and returns the filled part: at least
    /// `min` entries (up to `wc.len()`), fewer only when `timeout` (if any) passed first.
    /// `min` 0 polls once, as [`poll`](Self::poll). Completions are never dropped: what
    /// was polled before the timeout is returned.
    ///
    /// The one call a polling loop needs: a loop that returns the slice of
    /// [`poll`](Self::poll) once it is non-empty does not compile (E0499, the borrow of
    /// `wc` is held across iterations), this does:
    /// ```no_run
    /// # use rdma_verbs::{CompletionQueue, WorkCompletion};
    /// # fn f(cq: &CompletionQueue) -> rdma_verbs::Result<()> {
    /// let mut wc = [WorkCompletion::default(); 16];
    /// for _round in 0..10 {
    ///     for done in cq.poll_until(&mut wc, 1, None)? {
    ///         done.ok()?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    /// Fails with [`Error::OutOfRange`] if `min` is more than `wc.len()`.
    pub fn poll_until<'w>(
        &self,
        wc: &'w mut [WorkCompletion],
        min: usize,
        timeout: Option<Duration>,
    ) -> Result<&'w mut [WorkCompletion]> {
        let n = self.poll_min(wc, min, timeout, None)?;
        Ok(&mut wc[..n])
    }

    /// Event mode: [`poll_until`](Self::poll_until) with `min` 1 that sleeps on the CQ's
    /// channel instead of spinning. Polls; if empty, arms the CQ
    /// ([`req_notify`](Self::req_notify)), polls again (a completion that came before the
    /// arm has no event) and waits for an event; repeats. Race-free: the arm, the wait and
    /// the acknowledgement are all done here. Returns the filled part of `wc`, empty only
    /// when `timeout` (if any) passed first (or `wc` is empty).
    ///
    /// A CQ without a channel spins, exactly as [`poll_until`](Self::poll_until).
    pub fn poll_wait<'w>(
        &self,
        wc: &'w mut [WorkCompletion],
        timeout: Option<Duration>,
    ) -> Result<&'w mut [WorkCompletion]> {
        let min = wc.len().min(1);
        let n = self.poll_min(wc, min, timeout, self.inner.channel())?;
        Ok(&mut wc[..n])
    }

    /// How many entries of `wc` [`poll_until`](Self::poll_until) (no `channel`) or
    /// [`poll_wait`](Self::poll_wait) filled.
    fn poll_min(
        &self,
        wc: &mut [WorkCompletion],
        min: usize,
        timeout: Option<Duration>,
        channel: Option<&CompletionChannel>,
    ) -> Result<usize> {
        if min > wc.len() {
            return Err(Error::OutOfRange {
                what: "minimum completions",
                value: min as u64,
                min: 0,
                max: wc.len() as u64,
            });
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut n = self.poll_cq(wc)?;
        while n < min {
            match channel {
                Some(channel) => {
                    self.req_notify(false)?;
                    n += self.poll_cq(&mut wc[n..])?;
                    if n >= min || !channel.take_event(self.ptr(), deadline)? {
                        break;
                    }
                }
                None if deadline.is_some_and(|d| Instant::now() >= d) => break,
                None => std::hint::spin_loop(),
            }
            n += self.poll_cq(&mut wc[n..])?;
        }
        Ok(n)
    }

    /// Blocks until the CQ's channel has an event for this CQ and takes it
    /// (`ibv_get_cq_event`, `ibv_ack_cq_events`). Arm the CQ first
    /// ([`req_notify`](Self::req_notify)) and poll after; [`poll_wait`](Self::poll_wait)
    /// does all three.
    ///
    /// On a channel shared by several CQs, an event read here for another CQ is kept for
    /// that CQ's next wait.
    pub fn wait(&self) -> Result<()> {
        self.channel()?.take_event(self.ptr(), None)?;
        Ok(())
    }

    /// As [`wait`](Self::wait), giving up after `timeout` (0: only takes an event that is
    /// already there). True if an event was taken.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<bool> {
        self.channel()?
            .take_event(self.ptr(), Some(Instant::now() + timeout))
    }

    /// The CQ's channel; [`Error::InvalidArgument`] if it has none.
    pub(crate) fn channel(&self) -> Result<&CompletionChannel> {
        self.inner.channel().ok_or_else(|| Error::InvalidArgument {
            what: "completion queue",
            reason: "it was created without a completion channel".into(),
        })
    }
}

impl fmt::Debug for CompletionQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("device", &self.inner.context().name())
            .field("capacity", &self.capacity())
            .finish()
    }
}
