//! The FFI calls of completion queues, completion channels and extended CQs: every unsafe
//! block of the `cq` folder, behind safe crate-internal handles, so that the folder is
//! audited here.
//!
//! - [`RawCq`] owns an `ibv_cq` with the context and the channel's C object it was
//!   created on ([`CqOrigin`], whose channel is checked to be the context's), and destroys
//!   it before them; the CQ's place among the CQs of its channel is `cq.rs`'s (`CqInner`).
//!   The verbs on it are methods of [`CompletionQueue`], the CQ's one owner (QPs
//!   hold the CQ only to keep it alive): those that may run together take `&self`
//!   (`ibv_poll_cq`, `ibv_req_notify_cq`, `ibv_modify_cq`), `ibv_resize_cq`, which swaps
//!   the CQ's buffer and `cqe`, takes `&mut self`.
//! - [`RawCqEx`] is a CQ made by `ibv_create_cq_ex` whose polling operations and the
//!   readers of its fields ([`WcFields`], a plain value kept here, which `ex.rs` hands on)
//!   were found set. Its [`RawSession`] (borrowing it mutably: one poll of the CQ at a
//!   time) steps `ibv_start_poll` / `ibv_next_poll` and ends on drop (`ibv_end_poll`); the
//!   [`CurrentWc`] a step gives borrows the session and reads the current completion
//!   (`ibv_wc_read_*`).
//! - [`RawChannel`] owns an `ibv_comp_channel` with its context; its events come as
//!   [`CqEvent`]s, each acknowledged (`ibv_ack_cq_events`) when dropped. Its descriptor
//!   ([`RawChannel::fd`]), through which an event could be read and never acknowledged,
//!   reaches the public API only through the folder's one `unsafe` function of it,
//!   `CompletionChannel::raw_fd`.
//! - The descriptors' system calls (`poll(2)`, `O_NONBLOCK`), the device clock
//!   (`ibv_query_rt_values_ex`) and the immediate data of a [`WorkCompletion`] (a union).

use std::ffi::c_int;
use std::marker::PhantomData;
use std::os::fd::RawFd;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use super::{CompletionQueue, WorkCompletion};
use crate::context::Context;
use crate::drop_error;
use crate::error::{check_ptr, Error, Result};
use crate::fd::set_nonblocking;
use crate::ffi;

/// The context a CQ is created on and the channel it reports to (if any), checked to be
/// the context's: what [`create_cq`](Self::create_cq) and
/// [`create_cq_ex`](Self::create_cq_ex) hand to libibverbs, and what the CQ then keeps.
pub(super) struct CqOrigin<'a> {
    ctx: &'a Context,
    channel: Option<&'a Arc<RawChannel>>,
}

impl<'a> CqOrigin<'a> {
    /// `ctx` and `channel`; [`Error::Mismatch`] if the channel is another context's.
    pub(super) fn new(ctx: &'a Context, channel: Option<&'a Arc<RawChannel>>) -> Result<Self> {
        if let Some(channel) = channel {
            ctx.check_same(channel.context(), "completion channel")?;
        }
        Ok(CqOrigin { ctx, channel })
    }

    /// The channel's `ibv_comp_channel`, or null.
    fn channel_ptr(&self) -> *mut ffi::ibv_comp_channel {
        self.channel.map_or(ptr::null_mut(), |c| c.ptr())
    }

    /// Creates a CQ of `cqe` entries (`ibv_create_cq`).
    pub(super) fn create_cq(self, cqe: c_int) -> Result<RawCq> {
        let chan = self.channel_ptr();
        // SAFETY: the context is open; the channel (if any) belongs to it (checked by new)
        // and is kept alive by the CQ.
        let raw = unsafe { ffi::ibv_create_cq(self.ctx.ptr(), cqe, ptr::null_mut(), chan, 0) };
        let raw = check_ptr("ibv_create_cq", raw)?;
        // SAFETY: raw was just created from this origin.
        Ok(unsafe { self.adopt(raw) })
    }

    /// Creates a CQ of `cqe` entries whose completions carry `fields` (`ibv_create_cq_ex`),
    /// and checks that the provider set the polling operations and the reader of each
    /// field: [`Error::Unsupported`] naming what is missing if not (the CQ is destroyed).
    /// The failure of the verb itself is its errno ([`Error::Verb`]). Once checked, the CQ
    /// goes to `own`, which makes its owner: the [`CompletionQueue`] of that very CQ.
    pub(super) fn create_cq_ex(
        self,
        cqe: c_int,
        fields: WcFields,
        own: impl FnOnce(RawCq) -> CompletionQueue,
    ) -> Result<RawCqEx> {
        let mut attr = ffi::ibv_cq_init_attr_ex {
            cqe: cqe as u32,
            channel: self.channel_ptr(),
            wc_flags: fields.bits(),
            ..Default::default()
        };
        // SAFETY: the context is open, attr is a valid attribute set (no comp_mask
        // extensions), and the channel (if any) belongs to the context (checked by new) and
        // is kept alive by the CQ.
        let raw = unsafe { ffi::ibv_create_cq_ex(self.ctx.ptr(), &mut attr) };
        let raw = check_ptr("ibv_create_cq_ex", raw)?;
        let base = NonNull::new(ffi::ibv_cq_ex_to_cq(raw.as_ptr())).unwrap_or(raw.cast());
        // SAFETY: raw was just created from this origin; from here the CQ owns it and
        // destroys it on every path.
        let cq = unsafe { self.adopt(base) };
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
        let cq = own(cq);
        debug_assert_eq!(cq.ptr(), base.as_ptr(), "own made the owner of another CQ");
        Ok(RawCqEx { cq, fields })
    }

    /// Takes ownership of `raw`.
    ///
    /// # Safety
    /// `raw` is a live CQ created from this origin (its context, its channel), owned by
    /// nobody else.
    unsafe fn adopt(self, raw: NonNull<ffi::ibv_cq>) -> RawCq {
        RawCq {
            raw,
            ctx: self.ctx.clone(),
            _channel: self.channel.cloned(),
        }
    }
}

/// A CQ's C object, owned: destroyed (`ibv_destroy_cq`) when dropped, before the context
/// and the channel it was created on, which it keeps. Held, through the CQ's `CqInner`, by
/// its [`CompletionQueue`] and by the QPs that use it.
pub(super) struct RawCq {
    raw: NonNull<ffi::ibv_cq>,
    ctx: Context,
    // Kept alive while the CQ uses it; dropped after the CQ.
    _channel: Option<Arc<RawChannel>>,
}

// SAFETY: CQs may be used from any thread; ibv_poll_cq and ibv_req_notify_cq are
// thread-safe.
unsafe impl Send for RawCq {}
// SAFETY: as above.
unsafe impl Sync for RawCq {}

impl Drop for RawCq {
    fn drop(&mut self) {
        // SAFETY: no QP uses the CQ any more (each holds it through an Arc). Every event
        // read for it was acknowledged by the thread that read it (or will be: a CqEvent
        // acknowledges when dropped, and ibv_destroy_cq waits for that). The context and
        // the channel are dropped after this.
        let rc = unsafe { ffi::ibv_destroy_cq(self.raw.as_ptr()) };
        drop_error::report("ibv_destroy_cq", rc);
    }
}

impl RawCq {
    /// The raw `ibv_cq`, valid while the CQ lives.
    pub(super) fn ptr(&self) -> *mut ffi::ibv_cq {
        self.raw.as_ptr()
    }

    /// The context the CQ was created on.
    pub(super) fn context(&self) -> &Context {
        &self.ctx
    }
}

/// The error of an `ibv_poll_cq` that returned `rc`: a negative errno, or a count over the
/// entries asked for, which is what libibverbs's stub for a provider without `poll_cq`
/// returns (`EOPNOTSUPP`, positive). Kept off the polling path.
#[cold]
#[inline(never)]
fn poll_error(rc: i32) -> Error {
    Error::Verb {
        verb: "ibv_poll_cq",
        source: std::io::Error::from_raw_os_error(rc.saturating_abs()),
    }
    .or_unsupported("ibv_poll_cq", "poll_cq in its provider")
}

/// The verbs on a CQ, for its owner: `&self` for those that may run together, `&mut self`
/// for `ibv_resize_cq`, which no poll (nor read of `cqe`) may overlap.
impl CompletionQueue {
    /// The CQ's `cqe`: how many entries it has.
    pub(super) fn cqe(&self) -> c_int {
        // SAFETY: the CQ is live, and `&self` keeps ibv_resize_cq (which writes cqe) out.
        unsafe { (*self.ptr()).cqe }
    }

    /// Polls up to `wc.len()` completions into `wc` (`ibv_poll_cq`): how many were filled,
    /// at most `wc.len()`.
    #[inline]
    pub(super) fn poll_cq(&self, wc: &mut [WorkCompletion]) -> Result<usize> {
        let max = i32::try_from(wc.len()).unwrap_or(i32::MAX);
        // SAFETY: the CQ is live; wc has room for `max` entries and WorkCompletion is
        // repr(transparent) over ibv_wc.
        let n = unsafe { ffi::ibv_poll_cq(self.ptr(), max, wc.as_mut_ptr().cast()) };
        // 0..=max, in one compare (a negative errno is a large u32). Over `max` is no count
        // of entries written: a provider writes at most `max` into `wc`, and libibverbs's
        // stub for a missing `poll_cq` returns EOPNOTSUPP (95) having written none.
        if n as u32 <= max as u32 {
            Ok(n as usize)
        } else {
            Err(poll_error(n))
        }
    }

    /// [`poll_cq`](Self::poll_cq), returning the filled part of `wc`. Always inlined: the
    /// body of [`CompletionQueue::poll`], a layer that adds nothing.
    #[inline(always)]
    pub(super) fn poll_filled<'w>(
        &self,
        wc: &'w mut [WorkCompletion],
    ) -> Result<&'w mut [WorkCompletion]> {
        let n = self.poll_cq(wc)?;
        // SAFETY: poll_cq returns at most wc.len().
        Ok(unsafe { wc.get_unchecked_mut(..n) })
    }

    /// Arms the CQ for the next completion, or the next solicited one
    /// (`ibv_req_notify_cq`): its return code.
    pub(super) fn req_notify_cq(&self, solicited_only: bool) -> c_int {
        // SAFETY: the CQ is live.
        unsafe { ffi::ibv_req_notify_cq(self.ptr(), i32::from(solicited_only)) }
    }

    /// Sets completion moderation (`ibv_modify_cq` with `IBV_CQ_MODERATE`): its return
    /// code.
    pub(super) fn moderate_cq(&self, count: u16, period_us: u16) -> c_int {
        let mut attr = ffi::ibv_modify_cq_attr {
            attr_mask: ffi::ibv_cq_attr_mask::IBV_CQ_ATTR_MODERATE.0,
            moderate: ffi::ibv_moderate_cq {
                cq_count: count,
                cq_period: period_us,
            },
        };
        // SAFETY: the CQ is live and attr is a valid moderation request.
        unsafe { ffi::ibv_modify_cq(self.ptr(), &mut attr) }
    }

    /// Resizes the CQ to at least `cqe` entries (`ibv_resize_cq`): its return code.
    pub(super) fn resize_cq(&mut self, cqe: c_int) -> c_int {
        // SAFETY: the CQ is live, and `&mut self` keeps every poll of it (and reads of its
        // `cqe`) out while the provider swaps its buffer.
        unsafe { ffi::ibv_resize_cq(self.ptr(), cqe) }
    }
}

/// The immediate data of `wc` as it came (network order).
#[inline]
pub(super) fn imm_data(wc: &ffi::ibv_wc) -> u32 {
    // SAFETY: the union holds imm_data when IBV_WC_WITH_IMM is set (the caller's test);
    // both members are u32 anyway.
    unsafe { wc.__bindgen_anon_1.imm_data }
}

bitflags::bitflags! {
    /// The fields an extended CQ's completions carry (`enum ibv_create_cq_wc_flags`). The
    /// work request id, status, opcode, vendor error and completion flags are always there.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct WcFields: u64 {
        /// `IBV_WC_EX_WITH_BYTE_LEN`: [`ExCompletion::byte_len`](crate::ExCompletion::byte_len).
        const BYTE_LEN = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_BYTE_LEN.0 as u64;
        /// `IBV_WC_EX_WITH_IMM`: [`ExCompletion::imm_data`](crate::ExCompletion::imm_data).
        const IMM = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_IMM.0 as u64;
        /// `IBV_WC_EX_WITH_QP_NUM`: [`ExCompletion::qp_num`](crate::ExCompletion::qp_num).
        const QP_NUM = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_QP_NUM.0 as u64;
        /// `IBV_WC_EX_WITH_SRC_QP`: [`ExCompletion::src_qp`](crate::ExCompletion::src_qp).
        const SRC_QP = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SRC_QP.0 as u64;
        /// `IBV_WC_EX_WITH_SLID`: [`ExCompletion::slid`](crate::ExCompletion::slid).
        const SLID = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SLID.0 as u64;
        /// `IBV_WC_EX_WITH_SL`: [`ExCompletion::sl`](crate::ExCompletion::sl).
        const SL = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_SL.0 as u64;
        /// `IBV_WC_EX_WITH_DLID_PATH_BITS`:
        /// [`ExCompletion::dlid_path_bits`](crate::ExCompletion::dlid_path_bits).
        const DLID_PATH_BITS = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_DLID_PATH_BITS.0 as u64;
        /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`:
        /// [`ExCompletion::completion_ts`](crate::ExCompletion::completion_ts).
        const COMPLETION_TIMESTAMP =
            ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_COMPLETION_TIMESTAMP.0 as u64;
        /// `IBV_WC_EX_WITH_CVLAN`: [`ExCompletion::cvlan`](crate::ExCompletion::cvlan).
        const CVLAN = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_CVLAN.0 as u64;
        /// `IBV_WC_EX_WITH_FLOW_TAG`: [`ExCompletion::flow_tag`](crate::ExCompletion::flow_tag).
        const FLOW_TAG = ffi::ibv_create_cq_wc_flags::IBV_WC_EX_WITH_FLOW_TAG.0 as u64;
        /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK`:
        /// [`ExCompletion::completion_wallclock_ns`](crate::ExCompletion::completion_wallclock_ns).
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

/// A CQ made by `ibv_create_cq_ex` ([`CqOrigin::create_cq_ex`]) whose polling operations
/// and the readers of `fields` were found set: what [`RawSession`] and [`CurrentWc`] rely
/// on. It owns its [`CompletionQueue`], so nothing else polls or resizes it.
pub(super) struct RawCqEx {
    cq: CompletionQueue,
    fields: WcFields,
}

impl RawCqEx {
    /// The CQ.
    #[inline]
    pub(super) fn cq(&self) -> &CompletionQueue {
        &self.cq
    }

    /// The fields its completions carry.
    #[inline]
    pub(super) fn fields(&self) -> WcFields {
        self.fields
    }

    /// The raw `ibv_cq_ex`, valid while the CQ lives.
    #[inline]
    pub(super) fn ptr(&self) -> *mut ffi::ibv_cq_ex {
        // ibv_cq_ex begins with the ibv_cq of the same object.
        self.cq.ptr().cast()
    }

    /// [`CompletionQueue::resize`].
    pub(super) fn resize(&mut self, min_entries: u32) -> Result<()> {
        self.cq.resize(min_entries)
    }

    /// Opens a poll session (not started yet) that hands `attr` to `ibv_start_poll`;
    /// `restart` steps it with `ibv_end_poll` + `ibv_start_poll` instead of `ibv_next_poll`.
    #[inline]
    pub(super) fn session<'s>(
        &'s mut self,
        restart: bool,
        attr: &'s mut ffi::ibv_poll_cq_attr,
    ) -> RawSession<'s> {
        RawSession {
            cq: NonNull::new(self.ptr()).unwrap_or(NonNull::dangling()),
            fields: self.fields,
            restart,
            state: State::Idle,
            attr: NonNull::from(attr),
            _cq: PhantomData,
        }
    }
}

/// Where a [`RawSession`] is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// `ibv_start_poll` not called yet.
    Idle,
    /// A completion is current: the provider holds the CQ's lock. The next step is
    /// `ibv_next_poll`.
    Current,
    /// As `Current`, in a session that steps with `ibv_end_poll` + `ibv_start_poll`: a
    /// state of its own, so that a step tests one value.
    Restart,
    /// `ibv_next_poll` found no more (or failed): the lock is still held.
    Drained,
    /// `ibv_start_poll` found nothing (or failed): no lock held, nothing to end.
    Closed,
}

/// A poll of a [`RawCqEx`], which it borrows mutably (no other poll of the CQ meanwhile),
/// ended on drop (`ibv_end_poll`) if `ibv_start_poll` found a completion.
pub(super) struct RawSession<'cq> {
    cq: NonNull<ffi::ibv_cq_ex>,
    fields: WcFields,
    /// Step with end + start instead of `ibv_next_poll` (rxe).
    restart: bool,
    state: State,
    /// What `ibv_start_poll` is given: zeroed once by the session's owner, as a C loop
    /// does, and apart from the session, whose state then stays in registers (the
    /// provider never sees its address).
    attr: NonNull<ffi::ibv_poll_cq_attr>,
    _cq: PhantomData<&'cq mut RawCqEx>,
}

impl RawSession<'_> {
    /// The next completion, or `None` when there is no more (`ibv_start_poll` the first
    /// time, `ibv_next_poll` after, or `ibv_end_poll` + `ibv_start_poll` with `restart`).
    /// Once `None`, it stays `None`. The completion borrows the session. Always inlined:
    /// the body of [`PollSession::next_wc`](crate::PollSession::next_wc). Each way
    /// returns on its own (no state worked out and tested again), so that a loop over it
    /// steps from completion to completion with the calls and one test, as in C.
    #[inline(always)]
    pub(super) fn next(&mut self) -> Result<Option<CurrentWc<'_>>> {
        let cq = self.cq.as_ptr();
        // The step of a restarting session first, on its own test: it is the one a loop
        // over rxe's completions takes, one compare and the two calls.
        if self.state == State::Restart {
            // SAFETY: cq is inside a successful start_poll; this ends it, consuming the
            // current completion, and the start below begins the next poll.
            unsafe { ffi::ibv_end_poll(cq) };
            let rc = self.start_poll(cq);
            if rc == 0 {
                return Ok(Some(self.current()));
            }
            self.state = State::Closed;
            return self.stopped(rc);
        }
        let rc = match self.state {
            State::Current => {
                // SAFETY: cq is inside a successful start_poll; its next_poll was found set
                // at creation, as start_poll was (see start_poll below).
                let rc = unsafe {
                    let next = (*cq).next_poll;
                    debug_assert!(next.is_some(), "next_poll checked at creation");
                    next.unwrap_unchecked()(cq)
                };
                if rc == 0 {
                    return Ok(Some(self.current()));
                }
                self.state = State::Drained;
                rc
            }
            State::Idle => {
                let rc = self.start_poll(cq);
                if rc == 0 {
                    self.state = if self.restart {
                        State::Restart
                    } else {
                        State::Current
                    };
                    return Ok(Some(self.current()));
                }
                self.state = State::Closed;
                rc
            }
            State::Restart | State::Drained | State::Closed => return Ok(None),
        };
        self.stopped(rc)
    }

    /// What a step whose call returned `rc` (not 0) gives: `None` for `ENOENT` (no more),
    /// else the error.
    #[inline(always)]
    fn stopped(&self, rc: i32) -> Result<Option<CurrentWc<'_>>> {
        if rc == libc::ENOENT {
            Ok(None)
        } else {
            Err(session_error(self.state, rc))
        }
    }

    /// `ibv_start_poll` of `cq`, the session's CQ, not in a poll: its result. On any
    /// failure start_poll has released what it took: no end_poll then.
    #[inline(always)]
    fn start_poll(&mut self, cq: *mut ffi::ibv_cq_ex) -> i32 {
        // SAFETY: cq is a live extended CQ (borrowed mutably by this session), not in a
        // poll; attr is the session's, valid and not otherwise borrowed. Its start_poll was
        // found set at creation (CqOrigin::create_cq_ex: a provider sets its operations
        // when it makes the CQ and never clears them), so it is called as C calls it,
        // without the test of the ibv_start_poll port.
        unsafe {
            let start = (*cq).start_poll;
            debug_assert!(start.is_some(), "start_poll checked at creation");
            start.unwrap_unchecked()(cq, self.attr.as_ptr())
        }
    }

    /// The completion `cq` holds now.
    #[inline(always)]
    fn current(&self) -> CurrentWc<'_> {
        CurrentWc {
            cq: self.cq,
            fields: self.fields,
            _session: PhantomData,
        }
    }
}

/// The error of a failed `ibv_start_poll` / `ibv_next_poll`, kept off the polling path.
#[cold]
#[inline(never)]
fn session_error(state: State, rc: i32) -> Error {
    let verb = if state == State::Closed {
        "ibv_start_poll"
    } else {
        "ibv_next_poll"
    };
    Error::errno(verb, rc.abs())
}

impl Drop for RawSession<'_> {
    #[inline]
    fn drop(&mut self) {
        if matches!(self.state, State::Current | State::Restart | State::Drained) {
            // SAFETY: cq is inside a successful start_poll, not yet ended.
            unsafe { ffi::ibv_end_poll(self.cq.as_ptr()) };
        }
    }
}

/// The current completion of a [`RawSession`], which it borrows: read field by field
/// (`ibv_wc_read_*`). Fields the CQ was not created with read as `None`.
pub(super) struct CurrentWc<'s> {
    cq: NonNull<ffi::ibv_cq_ex>,
    fields: WcFields,
    _session: PhantomData<&'s mut ()>,
}

/// Readers of the fields a CQ may be created without: `None` unless it has the flag.
macro_rules! optional_readers {
    ($($(#[$doc:meta])* $name:ident: $flag:ident, $read:ident -> $ty:ty;)*) => {$(
        $(#[$doc])*
        #[inline]
        pub(super) fn $name(&self) -> Option<$ty> {
            if self.fields.contains(WcFields::$flag) {
                // SAFETY: the completion is current (it borrows its open session) and the
                // CQ was created with the field, whose reader was checked to be set.
                Some(unsafe { ffi::$read(self.cq.as_ptr()) })
            } else {
                None
            }
        }
    )*};
}

impl CurrentWc<'_> {
    #[inline]
    fn head(&self) -> &ffi::ibv_cq_ex {
        // SAFETY: the CQ is live while its session is; start/next_poll wrote wr_id and
        // status, and nothing writes them while the completion is borrowed.
        unsafe { self.cq.as_ref() }
    }

    /// `cq->wr_id`.
    #[inline]
    pub(super) fn wr_id(&self) -> u64 {
        self.head().wr_id
    }

    /// `cq->status`.
    #[inline]
    pub(super) fn status(&self) -> ffi::ibv_wc_status {
        self.head().status
    }

    /// `ibv_wc_read_opcode`.
    #[inline]
    pub(super) fn opcode(&self) -> ffi::ibv_wc_opcode {
        // SAFETY: the completion is current; read_opcode was checked at creation.
        unsafe { ffi::ibv_wc_read_opcode(self.cq.as_ptr()) }
    }

    /// `ibv_wc_read_vendor_err`.
    #[inline]
    pub(super) fn vendor_err(&self) -> u32 {
        // SAFETY: as in opcode.
        unsafe { ffi::ibv_wc_read_vendor_err(self.cq.as_ptr()) }
    }

    /// `ibv_wc_read_wc_flags`.
    #[inline]
    pub(super) fn wc_flags(&self) -> u32 {
        // SAFETY: as in opcode.
        unsafe { ffi::ibv_wc_read_wc_flags(self.cq.as_ptr()) }
    }

    optional_readers! {
        /// `ibv_wc_read_byte_len`.
        byte_len: BYTE_LEN, ibv_wc_read_byte_len -> u32;
        /// `ibv_wc_read_imm_data` (network order).
        imm_data: IMM, ibv_wc_read_imm_data -> u32;
        /// `ibv_wc_read_qp_num`.
        qp_num: QP_NUM, ibv_wc_read_qp_num -> u32;
        /// `ibv_wc_read_src_qp`.
        src_qp: SRC_QP, ibv_wc_read_src_qp -> u32;
        /// `ibv_wc_read_slid`.
        slid: SLID, ibv_wc_read_slid -> u32;
        /// `ibv_wc_read_sl`.
        sl: SL, ibv_wc_read_sl -> u8;
        /// `ibv_wc_read_dlid_path_bits`.
        dlid_path_bits: DLID_PATH_BITS, ibv_wc_read_dlid_path_bits -> u8;
        /// `ibv_wc_read_completion_ts`.
        completion_ts: COMPLETION_TIMESTAMP, ibv_wc_read_completion_ts -> u64;
        /// `ibv_wc_read_completion_wallclock_ns`.
        completion_wallclock_ns: COMPLETION_TIMESTAMP_WALLCLOCK,
            ibv_wc_read_completion_wallclock_ns -> u64;
        /// `ibv_wc_read_cvlan`.
        cvlan: CVLAN, ibv_wc_read_cvlan -> u16;
        /// `ibv_wc_read_flow_tag`.
        flow_tag: FLOW_TAG, ibv_wc_read_flow_tag -> u32;
    }
}

/// Reads the device's raw clock (`ibv_query_rt_values_ex` with
/// `IBV_VALUES_MASK_RAW_CLOCK`): the verb's return code and the clock as the provider
/// filled it.
pub(super) fn query_raw_clock(ctx: &Context) -> (c_int, libc::timespec) {
    let mut values = ffi::ibv_values_ex {
        comp_mask: ffi::ibv_values_mask::IBV_VALUES_MASK_RAW_CLOCK.0,
        // SAFETY: timespec is plain integers, valid zeroed.
        raw_clock: unsafe { std::mem::zeroed() },
    };
    // SAFETY: the context is open and values is a writable ibv_values_ex.
    let rc = unsafe { ffi::ibv_query_rt_values_ex(ctx.ptr(), &mut values) };
    (rc, values.raw_clock)
}

/// A completion channel's C object with its context, owned: destroyed
/// (`ibv_destroy_comp_channel`) when dropped, before the context closes. Its descriptor is
/// non-blocking.
pub(crate) struct RawChannel {
    raw: NonNull<ffi::ibv_comp_channel>,
    ctx: Context,
}

// SAFETY: channels may be used from any thread: ibv_get_cq_event and ibv_ack_cq_events are
// thread-safe (the channel's event state is behind a mutex of its own).
unsafe impl Send for RawChannel {}
// SAFETY: as above.
unsafe impl Sync for RawChannel {}

impl Drop for RawChannel {
    fn drop(&mut self) {
        // SAFETY: every CQ created on the channel holds this handle (RawCq) and is destroyed
        // before dropping it; so none is left.
        let rc = unsafe { ffi::ibv_destroy_comp_channel(self.raw.as_ptr()) };
        drop_error::report("ibv_destroy_comp_channel", rc);
    }
}

impl RawChannel {
    /// Creates a completion event channel on `ctx` (`ibv_create_comp_channel`) and makes
    /// its descriptor non-blocking.
    pub(super) fn create(ctx: &Context) -> Result<RawChannel> {
        // SAFETY: the context is open.
        let raw = unsafe { ffi::ibv_create_comp_channel(ctx.ptr()) };
        let channel = RawChannel {
            raw: check_ptr("ibv_create_comp_channel", raw)?,
            ctx: ctx.clone(),
        };
        set_nonblocking(channel.fd())?;
        Ok(channel)
    }

    /// The raw `ibv_comp_channel`, valid while the channel lives.
    pub(super) fn ptr(&self) -> *mut ffi::ibv_comp_channel {
        self.raw.as_ptr()
    }

    /// The context the channel belongs to.
    pub(super) fn context(&self) -> &Context {
        &self.ctx
    }

    /// The channel's descriptor.
    pub(super) fn fd(&self) -> RawFd {
        // SAFETY: the channel is live; libibverbs sets fd at creation and never changes it.
        unsafe { (*self.ptr()).fd }
    }

    /// Reads one event if one is queued (`ibv_get_cq_event` on the non-blocking fd).
    pub(super) fn get_event(&self) -> Result<Option<CqEvent>> {
        let mut cq = ptr::null_mut();
        let mut cq_ctx = ptr::null_mut();
        // SAFETY: the channel is live; the out pointers are valid.
        if unsafe { ffi::ibv_get_cq_event(self.ptr(), &mut cq, &mut cq_ctx) } == 0 {
            return Ok(Some(CqEvent { cq }));
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

#[cfg(feature = "tokio")]
// SAFETY: libibverbs sets the channel's fd at creation and never changes it; it is closed
// by ibv_destroy_comp_channel, in this handle's drop.
unsafe impl crate::tokio::OwnsFd for RawChannel {
    fn fd(&self) -> RawFd {
        RawChannel::fd(self)
    }
}

/// An event read from a channel ([`RawChannel::get_event`]) and not acknowledged yet: it
/// is acknowledged (`ibv_ack_cq_events`) when dropped, exactly once, by the thread that
/// read it. Until then its CQ is live, since `ibv_destroy_cq` waits for that.
pub(super) struct CqEvent {
    cq: *mut ffi::ibv_cq,
}

impl CqEvent {
    /// The CQ the event is for.
    pub(super) fn cq(&self) -> *mut ffi::ibv_cq {
        self.cq
    }
}

impl Drop for CqEvent {
    fn drop(&mut self) {
        // SAFETY: `cq` is a CQ of a channel whose event was read and not acknowledged: its
        // ibv_destroy_cq, if under way, waits for this acknowledgement, so it is live.
        unsafe { ffi::ibv_ack_cq_events(self.cq, 1) };
    }
}
