//! Posting a list of requests: the check against the queue's limits, the linking and the
//! provider's call, shared by the send and receive queues and the SRQ.

use std::ptr;

use crate::error::{Error, Result, WrError};
use crate::wr::post_error::PostError;
use crate::wr::Frame;

/// The limits a queue checks its work requests `W` against before posting them.
pub(crate) trait Limits<W> {
    /// The requirement bits the queue does not grant: a request whose word has none of them
    /// fits (the data path: one test).
    fn deny(&self) -> u64;
    /// Whether the regions of `wr`'s entries are known to be of the queue's PD (the data
    /// path's test of [`keys`](crate::wr::keys)); else the exact check looks them up.
    fn known(&self, wr: &W) -> bool;
    /// The queue's granted depth, for the error of a post that found it full.
    fn depth(&self) -> u32;
    /// Whether `wr` is within the limits: the exact check, for the requests whose word has
    /// a denied bit.
    fn fits(&self, wr: &W) -> bool;
    /// Which limit `wr` broke (it did not fit).
    fn refusal(&self, wr: &W) -> WrError;
}

/// The work requests of a post, linked through their `next` pointers.
pub(crate) trait Linked {
    type Raw;
    /// The request's requirement word.
    fn need(&self) -> u64;
    /// The raw struct, to link and post: the provider reads it, and posting writes its
    /// `next` only (through [`set_next`](Self::set_next)).
    fn raw(&mut self) -> *mut Self::Raw;
    fn set_next(&mut self, next: *mut Self::Raw);
}

/// Checks every request of `wrs` against `limits`, then hands them to `post` as one list (the
/// provider's return code comes back, and the request it stopped at is written through the
/// second argument on failure) and maps a failure to [`Error::QueueFull`] or
/// [`Error::Post`] with its index; `queue` tells the verb and the queue's depth for that
/// error (it captures the queue, so the error path finds it in the frame). A refused
/// request refuses the whole list: nothing is posted and the error is [`Error::Request`]
/// with its index.
///
/// Posting writes the `next` pointer of every request it passes on (null for the last), so
/// they are never read stale. A single request that passes the fast check is posted inline,
/// at the cost of the test, that store, a store of `queue` and the raw call; anything else
/// goes through [`post_many`]. Each test of a request also tests that its entries' keys are
/// known to be of the queue's PD ([`Limits::known`]).
#[inline(always)]
pub(crate) fn post_list<W: Linked, L: Limits<W>>(
    wrs: &mut [W],
    limits: &L,
    queue: impl Fn() -> (&'static str, u32) + Copy,
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
) -> Result<(), PostError> {
    // `bad` is not read: the index is 0. Made here, not in the branch: the compiler threads
    // the merge of the two paths below best without the end of the frame's lifetime in it.
    let mut frame = Frame::<W::Raw, _>::new(queue);
    if let [one] = wrs {
        if one.need() & limits.deny() == 0 && limits.known(one) {
            one.set_next(ptr::null_mut());
            return match post(one.raw(), frame.bad()) {
                0 => Ok(()),
                rc => {
                    let (verb, depth) = (frame.keep)();
                    Err(post_failed(verb, 0, rc, depth))
                }
            };
        }
    }
    post_many(post, wrs, limits, queue)
}

/// [`post_list`] for lists of other lengths than one and for requests the fast check did
/// not pass: links the list while ORing the requirement words and testing the entries'
/// keys ([`Limits::known`]), tests the OR once and, if it has a denied bit or a key was not
/// known, checks each request exactly.
#[inline(never)]
pub(crate) fn post_many<W: Linked, L: Limits<W>>(
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
    wrs: &mut [W],
    limits: &L,
    queue: impl Fn() -> (&'static str, u32) + Copy,
) -> Result<(), PostError> {
    let mut need = 0;
    let mut known = true;
    let mut head = ptr::null_mut();
    for wr in wrs.iter_mut().rev() {
        need |= wr.need();
        known &= limits.known(wr);
        wr.set_next(head);
        head = wr.raw();
    }
    if head.is_null() {
        return Ok(());
    }
    if need & limits.deny() != 0 || !known {
        return post_checked(post, wrs, head, limits, queue);
    }
    post_linked::<W>(post, wrs.len(), head, queue)
}

/// [`post_many`] for a list whose requirement words have a denied bit: checks each request
/// exactly, then posts the list. Out of line, so that [`post_many`] calls nothing but the
/// provider (or this, as a tail call) and keeps no value across a call in a callee-saved
/// register.
#[cold]
#[inline(never)]
fn post_checked<W: Linked, L: Limits<W>>(
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
    wrs: &[W],
    head: *mut W::Raw,
    limits: &L,
    queue: impl Fn() -> (&'static str, u32) + Copy,
) -> Result<(), PostError> {
    check_each(wrs, 0, limits)?;
    post_linked::<W>(post, wrs.len(), head, queue)
}

/// The exact check of each request of `wrs`, the first of which has index `first` in its
/// list or batch: the [`Error::Request`] of the first refused one.
#[inline(never)]
pub(crate) fn check_each<W>(wrs: &[W], first: usize, limits: &impl Limits<W>) -> Result<()> {
    match wrs.iter().position(|wr| !limits.fits(wr)) {
        None => Ok(()),
        Some(i) => Err(refused(first + i, limits.refusal(&wrs[i]))),
    }
}

/// The [`Error::Request`] for request `index`, refused for `reason`.
#[cold]
#[inline(never)]
pub(crate) fn refused(index: usize, reason: WrError) -> Error {
    Error::Request { index, reason }
}

/// Posts the checked list of `len` requests linked from `head` (the first of a slice of
/// `W`) with `post`, a provider's post function (as [`post_list`] asks), and maps a
/// failure.
#[inline(always)]
fn post_linked<W: Linked>(
    post: impl FnOnce(*mut W::Raw, *mut *mut W::Raw) -> i32,
    len: usize,
    head: *mut W::Raw,
    queue: impl Fn() -> (&'static str, u32) + Copy,
) -> Result<(), PostError> {
    Frame::new((queue, head, len)).post(post, head, |rc, bad, (queue, head, len)| {
        let (verb, depth) = queue();
        post_error::<W>(verb, head, len, bad, rc, depth)
    })
}

/// The [`Error::Post`] for a failed post of the `len` requests from `head` (a slice of
/// `W`) that stopped at `bad`.
#[cold]
#[inline(never)]
fn post_error<W: Linked>(
    verb: &'static str,
    head: *mut W::Raw,
    len: usize,
    bad: *mut W::Raw,
    rc: i32,
    depth: u32,
) -> PostError {
    // A request's raw struct is its first field, so `bad` is the address of a slice entry.
    let index = (bad as usize).wrapping_sub(head as usize) / std::mem::size_of::<W>();
    post_failed(verb, if index < len { index } else { 0 }, rc, depth)
}

/// The error of a post that failed with `rc` at request `index` of a queue `depth` deep:
/// [`Error::QueueFull`] for `ENOMEM` (how providers say the queue is full),
/// [`Error::Unsupported`] for `EOPNOTSUPP` at the first request (the provider has no post
/// function, or not for that operation: nothing was posted), else [`Error::Post`].
#[cold]
#[inline(never)]
pub(crate) fn post_failed(verb: &'static str, index: usize, rc: i32, depth: u32) -> PostError {
    // An errno, as the verbs' documentation says; -1 with errno set, as some providers
    // return; or a negated errno, as siw's provider returns.
    let source = match rc {
        -1 => std::io::Error::last_os_error(),
        rc => std::io::Error::from_raw_os_error(rc.saturating_abs()),
    };
    PostError::from(match source.raw_os_error() {
        // ENOMEM on rxe and most providers, ENOSPC on siw.
        Some(libc::ENOMEM | libc::ENOSPC) => Error::QueueFull { verb, index, depth },
        Some(libc::EOPNOTSUPP) if index == 0 => Error::Unsupported {
            what: verb,
            missing: match verb {
                "ibv_post_send" => "post_send in its provider (or the first request's operation)",
                "ibv_post_recv" => "post_recv in its provider",
                _ => "post_srq_recv in its provider",
            },
        },
        _ => Error::Post {
            verb,
            index,
            source,
        },
    })
}
