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

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use crate::context::Context;
use crate::cq::channel::CompletionChannel;
use crate::cq::CompletionQueue;
use crate::error::{Error, Result};
use crate::ffi;
use crate::types::WcOpcode;
use crate::types::WcStatus;

bitflags::bitflags! {
    /// The fields an extended CQ's completions carry (`enum ibv_create_cq_wc_flags`). The
    /// work request id, status, opcode, vendor error and completion flags are always there.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct WcFields: u64 {
        /// `IBV_WC_EX_WITH_BYTE_LEN`: [`ExCompletion::byte_len`].
        const BYTE_LEN = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_BYTE_LEN.0 as u64;
        /// `IBV_WC_EX_WITH_IMM`: [`ExCompletion::imm_data`].
        const IMM = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_IMM.0 as u64;
        /// `IBV_WC_EX_WITH_QP_NUM`: [`ExCompletion::qp_num`].
        const QP_NUM = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_QP_NUM.0 as u64;
        /// `IBV_WC_EX_WITH_SRC_QP`: [`ExCompletion::src_qp`].
        const SRC_QP = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SRC_QP.0 as u64;
        /// `IBV_WC_EX_WITH_SLID`: [`ExCompletion::slid`].
        const SLID = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SLID.0 as u64;
        /// `IBV_WC_EX_WITH_SL`: [`ExCompletion::sl`].
        const SL = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SL.0 as u64;
        /// `IBV_WC_EX_WITH_DLID_PATH_BITS`: [`ExCompletion::dlid_path_bits`].
        const DLID_PATH_BITS = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_DLID_PATH_BITS.0 as u64;
        /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`: [`ExCompletion::completion_ts`].
        const COMPLETION_TIMESTAMP =
            ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP.0 as u64;
        /// `IBV_WC_EX_WITH_CVLAN`: [`ExCompletion::cvlan`].
        const CVLAN = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_CVLAN.0 as u64;
        /// `IBV_WC_EX_WITH_FLOW_TAG`: [`ExCompletion::flow_tag`].
        const FLOW_TAG = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_FLOW_TAG.0 as u64;
        /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK`:
        /// [`ExCompletion::completion_wallclock_ns`].
        const COMPLETION_TIMESTAMP_WALLCLOCK =
            ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK.0 as u64;
        /// `IBV_WC_STANDARD_FLAGS`: byte count, immediate data, QP numbers, SLID, SL and DLID
        /// path bits.
        const STANDARD = ffi::IBV_WC_STANDARD_FLAGS as u64;
    }
}

/// Each field with its C name and whether the provider set its `read_*` function.
fn readers(cq: &ffi::ibv_cq_ex) -> [(WcFields, &'static str, bool); 11] {
    [
        (
            WcFields::BYTE_LEN,
            "IBV_WC_EX_WITH_BYTE_LEN",
            cq.read_byte_len.is_some(),
        ),
        (
            WcFields::IMM,
            "IBV_WC_EX_WITH_IMM",
            cq.read_imm_data.is_some(),
        ),
        (
            WcFields::QP_NUM,
            "IBV_WC_EX_WITH_QP_NUM",
            cq.read_qp_num.is_some(),
        ),
        (
            WcFields::SRC_QP,
            "IBV_WC_EX_WITH_SRC_QP",
            cq.read_src_qp.is_some(),
        ),
        (
            WcFields::SLID,
            "IBV_WC_EX_WITH_SLID",
            cq.read_slid.is_some(),
        ),
        (WcFields::SL, "IBV_WC_EX_WITH_SL", cq.read_sl.is_some()),
        (
            WcFields::DLID_PATH_BITS,
            "IBV_WC_EX_WITH_DLID_PATH_BITS",
            cq.read_dlid_path_bits.is_some(),
        ),
        (
            WcFields::COMPLETION_TIMESTAMP,
            "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP",
            cq.read_completion_ts.is_some(),
        ),
        (
            WcFields::CVLAN,
            "IBV_WC_EX_WITH_CVLAN",
            cq.read_cvlan.is_some(),
        ),
        (
            WcFields::FLOW_TAG,
            "IBV_WC_EX_WITH_FLOW_TAG",
            cq.read_flow_tag.is_some(),
        ),
        (
            WcFields::COMPLETION_TIMESTAMP_WALLCLOCK,
            "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK",
            cq.read_completion_wallclock_ns.is_some(),
        ),
    ]
}

/// A completion queue made by `ibv_create_cq_ex`, polled field by field in a
/// [`PollSession`]. Derefs to the [`CompletionQueue`] it also is.
pub struct ExtendedCq {
    cq: CompletionQueue,
    fields: WcFields,
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
// pointer (reached through `cq`), and sessions need `&mut self`.

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
        if let Some(channel) = channel {
            self.check_same(channel.context(), "completion channel")?;
        }
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
        let mut attr = ffi::ibv_cq_init_attr_ex {
            cqe: cqe as u32,
            channel: channel.map_or(std::ptr::null_mut(), |c| c.ptr()),
            wc_flags: fields.bits(),
            ..Default::default()
        };
        // SAFETY: the context is open, attr is a valid attribute set (no comp_mask
        // extensions), and the channel (if any) belongs to the context and is kept alive by
        // the CQ.
        let raw = unsafe { ffi::ibv_create_cq_ex(self.ptr(), &mut attr) };
        let Some(raw) = NonNull::new(raw) else {
            let err = Error::last("ibv_create_cq_ex");
            if err.raw_os_error() == Some(libc::EOPNOTSUPP) {
                return Err(refused(fields));
            }
            return Err(err);
        };
        let base = NonNull::new(ffi::ibv_cq_ex_to_cq(raw.as_ptr())).unwrap_or(raw.cast());
        // SAFETY: raw was just created on this context with `channel`; from here the CQ
        // owns it and destroys it on every path.
        let cq = unsafe { CompletionQueue::from_created(self, base, channel) };
        // SAFETY: raw is live (owned by cq); the provider filled its operations.
        let ops = unsafe { raw.as_ref() };
        let core = ops.start_poll.is_some()
            && ops.next_poll.is_some()
            && ops.end_poll.is_some()
            && ops.read_opcode.is_some()
            && ops.read_vendor_err.is_some()
            && ops.read_wc_flags.is_some();
        if !core {
            return Err(Error::Unsupported {
                what: "extended CQ polling (ibv_start_poll)",
                missing: "start_poll, next_poll, end_poll and the core readers in its provider",
            });
        }
        if let Some((_, name, _)) = readers(ops)
            .into_iter()
            .find(|&(flag, _, set)| fields.contains(flag) && !set)
        {
            return Err(Error::Unsupported {
                what: "an extended CQ field",
                missing: name,
            });
        }
        let restart = self.device_limits()?.vendor_id == RXE_VENDOR_ID;
        Ok(ExtendedCq {
            cq,
            fields,
            restart,
        })
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
        &self.cq
    }
}

impl ExtendedCq {
    /// The raw `ibv_cq_ex`, valid while the CQ lives.
    #[inline]
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_cq_ex {
        // ibv_cq_ex begins with the ibv_cq of the same object.
        self.cq.ptr().cast()
    }

    /// The fields the CQ was created with.
    pub fn fields(&self) -> WcFields {
        self.fields
    }

    /// The CQ as a plain [`CompletionQueue`] (also reached through `Deref`).
    pub fn cq(&self) -> &CompletionQueue {
        &self.cq
    }

    /// [`CompletionQueue::resize`] (`ibv_resize_cq`).
    pub fn resize(&mut self, min_entries: u32) -> Result<()> {
        self.cq.resize(min_entries)
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
        let mut session = PollSession {
            cq: NonNull::new(self.ptr()).unwrap_or(NonNull::dangling()),
            fields: self.fields,
            restart: self.restart,
            state: State::Idle,
            _cq: PhantomData,
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
            .field("cq", &self.cq)
            .field("fields", &self.fields)
            .finish()
    }
}

/// Where a [`PollSession`] is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// `ibv_start_poll` not called yet.
    Idle,
    /// A completion is current: the provider holds the CQ's lock.
    Current,
    /// `ibv_next_poll` found no more (or failed): the lock is still held.
    Drained,
    /// `ibv_start_poll` found nothing (or failed): no lock held, nothing to end.
    Closed,
}

/// An open poll of an [`ExtendedCq`], inside [`ExtendedCq::poll_session`].
pub struct PollSession<'cq> {
    cq: NonNull<ffi::ibv_cq_ex>,
    fields: WcFields,
    /// Step with end + start instead of `ibv_next_poll` (rxe).
    restart: bool,
    state: State,
    _cq: PhantomData<&'cq mut ExtendedCq>,
}

impl PollSession<'_> {
    /// The next completion, or `None` when there is no more (`ibv_start_poll` the first
    /// time, `ibv_next_poll` after; on rxe `ibv_end_poll` + `ibv_start_poll`, since its
    /// `ibv_next_poll` corrupts the CQ when it finds nothing). Once `None`, it stays `None` for this session. The
    /// completion borrows the session: it cannot be read after the next call.
    #[inline]
    pub fn next_wc(&mut self) -> Result<Option<ExCompletion<'_>>> {
        let cq = self.cq.as_ptr();
        if self.state == State::Current && self.restart {
            // SAFETY: cq is inside a successful start_poll; this ends it, consuming the
            // current completion, and the start below begins the next poll.
            unsafe { ffi::ibv_end_poll(cq) };
            self.state = State::Idle;
        }
        let rc = match self.state {
            State::Idle => {
                let mut attr = ffi::ibv_poll_cq_attr { comp_mask: 0 };
                // SAFETY: cq is a live extended CQ (borrowed mutably by this session), not in
                // a poll; its start_poll was checked at creation.
                let rc = unsafe { ffi::ibv_start_poll(cq, &mut attr) };
                // On any failure start_poll has released what it took: no end_poll then.
                self.state = if rc == 0 {
                    State::Current
                } else {
                    State::Closed
                };
                rc
            }
            State::Current => {
                // SAFETY: cq is inside a successful start_poll.
                let rc = unsafe { ffi::ibv_next_poll(cq) };
                if rc != 0 {
                    self.state = State::Drained;
                }
                rc
            }
            State::Drained | State::Closed => return Ok(None),
        };
        match rc {
            0 => Ok(Some(ExCompletion {
                cq: self.cq,
                fields: self.fields,
                _session: PhantomData,
            })),
            libc::ENOENT => Ok(None),
            rc => Err(poll_error(self.state, rc)),
        }
    }
}

/// The error of a failed `ibv_start_poll` / `ibv_next_poll`, kept off the polling path.
#[cold]
#[inline(never)]
fn poll_error(state: State, rc: i32) -> Error {
    let verb = if state == State::Closed {
        "ibv_start_poll"
    } else {
        "ibv_next_poll"
    };
    Error::errno(verb, rc.abs())
}

impl Drop for PollSession<'_> {
    #[inline]
    fn drop(&mut self) {
        if matches!(self.state, State::Current | State::Drained) {
            // SAFETY: cq is inside a successful start_poll, not yet ended.
            unsafe { ffi::ibv_end_poll(self.cq.as_ptr()) };
        }
    }
}

/// The current completion of a [`PollSession`], read field by field (`ibv_wc_read_*`).
/// Fields the CQ was not created with read as `None`.
pub struct ExCompletion<'s> {
    cq: NonNull<ffi::ibv_cq_ex>,
    fields: WcFields,
    _session: PhantomData<&'s mut ()>,
}

/// Reads field `$read` if the CQ has `$flag`.
macro_rules! read_field {
    ($self:ident, $flag:ident, $read:ident) => {
        if $self.fields.contains(WcFields::$flag) {
            // SAFETY: the completion is current (it borrows its open session) and the CQ was
            // created with the field, whose reader was checked to be set.
            Some(unsafe { ffi::$read($self.cq.as_ptr()) })
        } else {
            None
        }
    };
}

impl ExCompletion<'_> {
    #[inline]
    fn raw(&self) -> &ffi::ibv_cq_ex {
        // SAFETY: the CQ is live while its session is; start/next_poll wrote wr_id and
        // status, and nothing writes them while the completion is borrowed.
        unsafe { self.cq.as_ref() }
    }

    /// The `wr_id` of the request that completed (`cq->wr_id`).
    #[inline]
    pub fn wr_id(&self) -> u64 {
        self.raw().wr_id
    }

    /// The status (`cq->status`).
    #[inline]
    pub fn status(&self) -> WcStatus {
        WcStatus(self.raw().status)
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
        // SAFETY: the completion is current; read_opcode was checked at creation.
        unsafe { ffi::ibv_wc_read_opcode(self.cq.as_ptr()) }
    }

    /// The provider's vendor error code (`ibv_wc_read_vendor_err`).
    #[inline]
    pub fn vendor_err(&self) -> u32 {
        // SAFETY: as in opcode.
        unsafe { ffi::ibv_wc_read_vendor_err(self.cq.as_ptr()) }
    }

    /// The `IBV_WC_*` flags of the completion (`ibv_wc_read_wc_flags`).
    #[inline]
    pub fn wc_flags(&self) -> u32 {
        // SAFETY: as in opcode.
        unsafe { ffi::ibv_wc_read_wc_flags(self.cq.as_ptr()) }
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
        read_field!(self, BYTE_LEN, ibv_wc_read_byte_len)
    }

    /// The immediate data in host order, if the CQ has [`WcFields::IMM`] and the completion
    /// carries any (`IBV_WC_WITH_IMM`; `ibv_wc_read_imm_data`).
    #[inline]
    pub fn imm_data(&self) -> Option<u32> {
        if self.wc_flags() & ffi::ibv_wc_flags::IBV_WC_WITH_IMM.0 == 0 {
            return None;
        }
        read_field!(self, IMM, ibv_wc_read_imm_data).map(u32::from_be)
    }

    /// The local QP number (`ibv_wc_read_qp_num`).
    #[inline]
    pub fn qp_num(&self) -> Option<u32> {
        read_field!(self, QP_NUM, ibv_wc_read_qp_num)
    }

    /// The sender's QP number (UD receives; `ibv_wc_read_src_qp`).
    #[inline]
    pub fn src_qp(&self) -> Option<u32> {
        read_field!(self, SRC_QP, ibv_wc_read_src_qp)
    }

    /// The sender's LID (`ibv_wc_read_slid`).
    #[inline]
    pub fn slid(&self) -> Option<u32> {
        read_field!(self, SLID, ibv_wc_read_slid)
    }

    /// The service level (`ibv_wc_read_sl`).
    #[inline]
    pub fn sl(&self) -> Option<u8> {
        read_field!(self, SL, ibv_wc_read_sl)
    }

    /// The destination LID path bits (`ibv_wc_read_dlid_path_bits`).
    #[inline]
    pub fn dlid_path_bits(&self) -> Option<u8> {
        read_field!(self, DLID_PATH_BITS, ibv_wc_read_dlid_path_bits)
    }

    /// The device's timestamp of the completion, in its clock's ticks
    /// (`ibv_wc_read_completion_ts`).
    #[inline]
    pub fn completion_ts(&self) -> Option<u64> {
        read_field!(self, COMPLETION_TIMESTAMP, ibv_wc_read_completion_ts)
    }

    /// The completion's wall-clock time in nanoseconds
    /// (`ibv_wc_read_completion_wallclock_ns`).
    #[inline]
    pub fn completion_wallclock_ns(&self) -> Option<u64> {
        read_field!(
            self,
            COMPLETION_TIMESTAMP_WALLCLOCK,
            ibv_wc_read_completion_wallclock_ns
        )
    }

    /// The customer VLAN (`ibv_wc_read_cvlan`).
    #[inline]
    pub fn cvlan(&self) -> Option<u16> {
        read_field!(self, CVLAN, ibv_wc_read_cvlan)
    }

    /// The flow tag (`ibv_wc_read_flow_tag`).
    #[inline]
    pub fn flow_tag(&self) -> Option<u32> {
        read_field!(self, FLOW_TAG, ibv_wc_read_flow_tag)
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
        let mut values = ffi::ibv_values_ex {
            comp_mask: ffi::ibv_values_mask::IBV_VALUES_MASK_RAW_CLOCK.0,
            // SAFETY: timespec is plain integers, valid zeroed.
            raw_clock: unsafe { std::mem::zeroed() },
        };
        // SAFETY: the context is open and values is a writable ibv_values_ex.
        let rc = unsafe { ffi::ibv_query_rt_values_ex(self.ptr(), &mut values) };
        if rc == libc::EOPNOTSUPP {
            return Err(Error::Unsupported {
                what: "the device clock (ibv_query_rt_values_ex)",
                missing: "query_rt_values in its provider",
            });
        }
        crate::error::check("ibv_query_rt_values_ex", rc)?;
        let secs = u64::try_from(values.raw_clock.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(values.raw_clock.tv_nsec).unwrap_or(0);
        Ok(Duration::from_secs(secs) + Duration::from_nanos(nanos))
    }
}
