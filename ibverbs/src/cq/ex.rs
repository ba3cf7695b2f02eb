//! Extended completion queues: `struct ibv_cq_ex`, `ibv_start_poll` / `ibv_next_poll` /
//! `ibv_end_poll` and the `ibv_wc_read_*` accessors.
//!
//! An [`ExtendedCq`] is made by `ibv_create_cq_ex` with the completion fields asked for
//! ([`WcFields`]). It is a [`CompletionQueue`] too (`ibv_cq_ex_to_cq`, through `Deref`):
//! queue pairs are created with it, it takes a completion channel, and
//! [`poll`](CompletionQueue::poll) / [`poll_until`](CompletionQueue::poll_until) /
//! [`poll_wait`](CompletionQueue::poll_wait) work on it as on any CQ.
//!
//! Between a successful `ibv_start_poll` and `ibv_end_poll` a provider holds the CQ's lock
//! (rxe and mlx5 take a spinlock), so a poll session that is never ended would hang every
//! later poll of the CQ. A session therefore exists only inside the closure of
//! [`ExtendedCq::poll_session`], owned by the crate, which ends it on every way out
//! (return, error, panic); `&mut self` keeps every other poll of the CQ out while it is
//! open. The closure gets `&mut PollSession`, which cannot be moved out, forgotten or kept;
//! a completion read from it borrows the session, so it cannot be read after the session
//! moved on or closed.

use std::ops::Deref;
use std::time::{Duration, Instant};

pub use super::raw::WcFields;

use super::raw::{self, CqOrigin, CurrentWc, RawCqEx, RawSession};
use crate::context::Context;
use crate::cq::channel::CompletionChannel;
use crate::cq::CompletionQueue;
use crate::error::{Error, Result};
use crate::ffi;
use crate::types::WcOpcode;
use crate::types::WcStatus;

/// A completion queue made by `ibv_create_cq_ex`, polled field by field in a
/// [`PollSession`]. Derefs to the [`CompletionQueue`] it also is.
pub struct ExtendedCq {
    /// The CQ and its fields, checked at creation.
    raw: RawCqEx,
    /// Whether sessions step with `ibv_end_poll` + `ibv_start_poll` instead of
    /// `ibv_next_poll` (rxe: see [`RXE_VENDOR_ID`]).
    restart: bool,
}

/// The vendor id rxe reports (`RXE_VENDOR_ID` in the kernel). rdma-core's rxe advances the
/// consumer index twice when `ibv_next_poll` returns `ENOENT` and `ibv_end_poll` follows (as
/// the man page says it must): the CQ then shows stale entries as new completions (and
/// releases before mid-2025 also unlock the CQ twice; rdma-core pull requests 1512 and
/// 1617). Sessions on rxe therefore never call `ibv_next_poll`: each step ends the poll and
/// starts a new one, a sequence that is right on every rdma-core version.
const RXE_VENDOR_ID: u32 = 0xff_ffff;

// ExtendedCq is Send and Sync through its parts: the raw `ibv_cq_ex` is the CQ's own
// pointer (reached through `raw`), and sessions need `&mut self`.

impl Context {
    /// Creates an extended completion queue with at least `min_entries` entries whose
    /// completions carry `fields`, optionally reporting events to `channel`
    /// (`ibv_create_cq_ex`).
    ///
    /// Checked first: more entries than `max_cqe` fail with [`Error::DeviceLimit`]; a
    /// timestamp field on a device without a completion clock (`completion_timestamp_mask`
    /// 0 in [`query_device`](Context::query_device)) with [`Error::Unsupported`]; bits
    /// that name no field of [`WcFields`] (`WcFields::from_bits_retain`; such as
    /// `IBV_WC_EX_WITH_TM_INFO`, whose reader the crate does not have) with
    /// [`Error::InvalidArgument`] naming them, since the provider, which may know them,
    /// would otherwise be blamed. A provider
    /// without extended CQs, or that refuses a field (`EOPNOTSUPP`), or that accepts one but
    /// gives no reader for it, fails with [`Error::Unsupported`] naming the field; nothing is
    /// leaked.
    pub fn create_cq_ex(
        &self,
        min_entries: u32,
        fields: WcFields,
        channel: Option<&CompletionChannel>,
    ) -> Result<ExtendedCq> {
        let origin = CqOrigin::new(self, channel.map(CompletionChannel::raw))?;
        let unknown = fields.bits() & !WcFields::all().bits();
        if unknown != 0 {
            return Err(unknown_fields(unknown));
        }
        let cqe = self.checked_cqe(min_entries)?;
        let timestamps = WcFields::COMPLETION_TIMESTAMP | WcFields::COMPLETION_TIMESTAMP_WALLCLOCK;
        if fields.intersects(timestamps) && self.query_device()?.completion_timestamp_mask == 0 {
            return Err(Error::Unsupported {
                what: "completion timestamps (WcFields::COMPLETION_TIMESTAMP*)",
                missing: "completion_timestamp_mask in ibv_device_attr_ex",
            });
        }
        let own = |cq| CompletionQueue::new(cq, channel);
        let raw = origin.create_cq_ex(cqe, fields, own).map_err(|err| {
            if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
                refused(fields)
            } else {
                err
            }
        })?;
        let restart = self.device_limits()?.vendor_id == RXE_VENDOR_ID;
        Ok(ExtendedCq { raw, restart })
    }
}

/// [`Error::InvalidArgument`] for `bits` of `wc_flags` that no [`WcFields`] names.
#[cold]
fn unknown_fields(bits: u64) -> Error {
    let tm = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_TM_INFO.0 as u64;
    let names = if bits & tm != 0 {
        " (IBV_WC_EX_WITH_TM_INFO among them: tag matching, which the crate does not read)"
    } else {
        ""
    };
    Error::InvalidArgument {
        what: "extended CQ fields (WcFields)",
        reason: format!("bits {bits:#x} name no field the crate reads{names}"),
    }
}

/// [`Error::Unsupported`] for a provider's `EOPNOTSUPP` on `fields`: the first field outside
/// the standard set, or extended CQs themselves.
#[cold]
fn refused(fields: WcFields) -> Error {
    let names = [
        (
            WcFields::COMPLETION_TIMESTAMP,
            "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP in its provider",
        ),
        (WcFields::CVLAN, "IBV_WC_EX_WITH_CVLAN in its provider"),
        (
            WcFields::FLOW_TAG,
            "IBV_WC_EX_WITH_FLOW_TAG in its provider",
        ),
        (
            WcFields::COMPLETION_TIMESTAMP_WALLCLOCK,
            "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK in its provider",
        ),
    ];
    match names.into_iter().find(|&(flag, _)| fields.contains(flag)) {
        Some((_, missing)) => Error::Unsupported {
            what: "an extended CQ field",
            missing,
        },
        None => Error::Unsupported {
            what: "extended CQs (ibv_create_cq_ex)",
            missing: "create_cq_ex in its provider",
        },
    }
}

impl Deref for ExtendedCq {
    type Target = CompletionQueue;

    fn deref(&self) -> &CompletionQueue {
        self.raw.cq()
    }
}

impl ExtendedCq {
    /// The raw `ibv_cq_ex`, valid while the CQ lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_cq_ex {
        self.raw.ptr()
    }

    /// The fields the CQ was created with.
    pub fn fields(&self) -> WcFields {
        self.raw.fields()
    }

    /// The CQ as a plain [`CompletionQueue`] (also reached through `Deref`).
    pub fn cq(&self) -> &CompletionQueue {
        self.raw.cq()
    }

    /// [`CompletionQueue::resize`] (`ibv_resize_cq`).
    pub fn resize(&mut self, min_entries: u32) -> Result<()> {
        self.raw.resize(min_entries)
    }

    /// Runs a poll session: `f` reads completions one by one with [`PollSession::next_wc`]
    /// (`ibv_start_poll`, then `ibv_next_poll`); when `f` returns, fails or panics, the
    /// session is ended (`ibv_end_poll`, only if `ibv_start_poll` found a completion).
    ///
    /// ```no_run
    /// # fn f(mut cq: rdma_verbs::ExtendedCq) -> rdma_verbs::Result<()> {
    /// let bytes = cq.poll_session(|session| {
    ///     let mut bytes = 0;
    ///     while let Some(wc) = session.next_wc()? {
    ///         wc.ok()?;
    ///         bytes += wc.byte_len().unwrap_or(0);
    ///     }
    ///     Ok(bytes)
    /// })?;
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn poll_session<R>(
        &mut self,
        f: impl FnOnce(&mut PollSession<'_>) -> Result<R>,
    ) -> Result<R> {
        let mut attr = ffi::ibv_poll_cq_attr { comp_mask: 0 };
        let mut session = PollSession {
            raw: self.raw.session(self.restart, &mut attr),
        };
        f(&mut session)
        // `session` is dropped here on every path, unwinding included, ending it if open.
    }

    /// Runs poll sessions until `f` was given at least `min` completions, spinning between
    /// them, and returns how many it was given: each session hands `f` every completion
    /// there is. Stops early, with fewer, when `timeout` (if any) passed, or with the error
    /// of `f` (the session is ended first). `min` 0 runs one session.
    pub fn poll_each_until(
        &mut self,
        min: usize,
        timeout: Option<Duration>,
        mut f: impl FnMut(&ExCompletion<'_>) -> Result<()>,
    ) -> Result<usize> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut seen = 0;
        loop {
            seen += self.poll_session(|session| {
                let mut n = 0;
                while let Some(wc) = session.next_wc()? {
                    f(&wc)?;
                    n += 1;
                }
                Ok(n)
            })?;
            if seen >= min || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(seen);
            }
            std::hint::spin_loop();
        }
    }
}

impl std::fmt::Debug for ExtendedCq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtendedCq")
            .field("cq", self.raw.cq())
            .field("fields", &self.raw.fields())
            .finish()
    }
}

/// An open poll of an [`ExtendedCq`], inside [`ExtendedCq::poll_session`].
pub struct PollSession<'cq> {
    raw: RawSession<'cq>,
}

impl PollSession<'_> {
    /// The next completion, or `None` when there is no more (`ibv_start_poll` the first
    /// time, `ibv_next_poll` after; on rxe `ibv_end_poll` + `ibv_start_poll`, since its
    /// `ibv_next_poll` corrupts the CQ when it finds nothing). Once `None`, it stays `None` for this session. The
    /// completion borrows the session: it cannot be read after the next call.
    #[inline]
    pub fn next_wc(&mut self) -> Result<Option<ExCompletion<'_>>> {
        self.raw.next().map(|wc| wc.map(|wc| ExCompletion { wc }))
    }
}

/// The current completion of a [`PollSession`], read field by field (`ibv_wc_read_*`).
/// Fields the CQ was not created with read as `None`.
pub struct ExCompletion<'s> {
    wc: CurrentWc<'s>,
}

impl ExCompletion<'_> {
    /// The `wr_id` of the request that completed (`cq->wr_id`).
    #[inline]
    pub fn wr_id(&self) -> u64 {
        self.wc.wr_id()
    }

    /// The status (`cq->status`).
    #[inline]
    pub fn status(&self) -> WcStatus {
        WcStatus(self.wc.status())
    }

    /// Whether the request succeeded.
    #[inline]
    pub fn is_success(&self) -> bool {
        self.status().is_success()
    }

    /// `Ok(())` on success, else [`Error::Completion`] with the status.
    #[inline]
    pub fn ok(&self) -> Result<()> {
        if self.is_success() {
            Ok(())
        } else {
            Err(Error::Completion {
                wr_id: self.wr_id(),
                status: self.status(),
                vendor_err: self.vendor_err(),
            })
        }
    }

    /// The operation (`ibv_wc_read_opcode`; only meaningful on success).
    #[inline]
    pub fn opcode(&self) -> WcOpcode {
        WcOpcode::from_raw(self.opcode_raw())
    }

    /// The operation as the C value (`ibv_wc_read_opcode`).
    #[inline]
    pub(crate) fn opcode_raw(&self) -> ffi::ibv_wc_opcode {
        self.wc.opcode()
    }

    /// The provider's vendor error code (`ibv_wc_read_vendor_err`).
    #[inline]
    pub fn vendor_err(&self) -> u32 {
        self.wc.vendor_err()
    }

    /// The `IBV_WC_*` flags of the completion (`ibv_wc_read_wc_flags`).
    #[inline]
    pub fn wc_flags(&self) -> u32 {
        self.wc.wc_flags()
    }

    /// Whether a 40-byte GRH precedes the data (UD receives; `IBV_WC_GRH`): the address of
    /// the sender, which
    /// [`ProtectionDomain::create_ah_from_wc`](crate::ProtectionDomain::create_ah_from_wc)
    /// answers (inside the session).
    #[inline]
    pub fn has_grh(&self) -> bool {
        self.wc_flags() & ffi::ibv_wc_flags::IBV_WC_GRH.0 != 0
    }

    /// Bytes received or transferred (`ibv_wc_read_byte_len`).
    #[inline]
    pub fn byte_len(&self) -> Option<u32> {
        self.wc.byte_len()
    }

    /// The immediate data in host order, if the CQ has [`WcFields::IMM`] and the completion
    /// carries any (`IBV_WC_WITH_IMM`; `ibv_wc_read_imm_data`).
    #[inline]
    pub fn imm_data(&self) -> Option<u32> {
        if self.wc_flags() & ffi::ibv_wc_flags::IBV_WC_WITH_IMM.0 == 0 {
            return None;
        }
        self.wc.imm_data().map(u32::from_be)
    }

    /// The local QP number (`ibv_wc_read_qp_num`).
    #[inline]
    pub fn qp_num(&self) -> Option<u32> {
        self.wc.qp_num()
    }

    /// The sender's QP number (UD receives; `ibv_wc_read_src_qp`).
    #[inline]
    pub fn src_qp(&self) -> Option<u32> {
        self.wc.src_qp()
    }

    /// The sender's LID (`ibv_wc_read_slid`).
    #[inline]
    pub fn slid(&self) -> Option<u32> {
        self.wc.slid()
    }

    /// The service level (`ibv_wc_read_sl`).
    #[inline]
    pub fn sl(&self) -> Option<u8> {
        self.wc.sl()
    }

    /// The destination LID path bits (`ibv_wc_read_dlid_path_bits`).
    #[inline]
    pub fn dlid_path_bits(&self) -> Option<u8> {
        self.wc.dlid_path_bits()
    }

    /// The device's timestamp of the completion, in its clock's ticks
    /// (`ibv_wc_read_completion_ts`).
    #[inline]
    pub fn completion_ts(&self) -> Option<u64> {
        self.wc.completion_ts()
    }

    /// The completion's wall-clock time in nanoseconds
    /// (`ibv_wc_read_completion_wallclock_ns`).
    #[inline]
    pub fn completion_wallclock_ns(&self) -> Option<u64> {
        self.wc.completion_wallclock_ns()
    }

    /// The customer VLAN (`ibv_wc_read_cvlan`).
    #[inline]
    pub fn cvlan(&self) -> Option<u16> {
        self.wc.cvlan()
    }

    /// The flow tag (`ibv_wc_read_flow_tag`).
    #[inline]
    pub fn flow_tag(&self) -> Option<u32> {
        self.wc.flow_tag()
    }
}

impl std::fmt::Debug for ExCompletion<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExCompletion")
            .field("wr_id", &self.wr_id())
            .field("status", &self.status())
            .field("opcode", &self.opcode())
            .field("byte_len", &self.byte_len())
            .field("imm_data", &self.imm_data())
            .field("qp_num", &self.qp_num())
            .finish()
    }
}

impl Context {
    /// Reads the device's raw clock (`ibv_query_rt_values_ex` with
    /// `IBV_VALUES_MASK_RAW_CLOCK`), as the provider filled `tv_sec` / `tv_nsec` (mlx5
    /// puts its free-running counter in `tv_nsec`). Fails with [`Error::Unsupported`] where
    /// the provider has no `query_rt_values` (`EOPNOTSUPP`).
    pub fn query_raw_clock(&self) -> Result<Duration> {
        let (rc, raw_clock) = raw::query_raw_clock(self);
        if rc == libc::EOPNOTSUPP {
            return Err(Error::Unsupported {
                what: "the device clock (ibv_query_rt_values_ex)",
                missing: "query_rt_values in its provider",
            });
        }
        crate::error::check("ibv_query_rt_values_ex", rc)?;
        let secs = u64::try_from(raw_clock.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(raw_clock.tv_nsec).unwrap_or(0);
        Ok(Duration::from_secs(secs) + Duration::from_nanos(nanos))
    }
}
