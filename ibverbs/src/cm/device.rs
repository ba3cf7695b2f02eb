//! librdmacm's device contexts as [`Context`]s, kept open while they are in use.
//!
//! librdmacm opens a device's `ibv_context` for the first id bound to it and closes it when
//! the device is removed and no id holds it (each bound id and each `rdma_get_devices` list
//! counts as a holder). A [`Context`] made from an id's device may outlive every id: its
//! PD, CQs and QPs need the context open until they are gone. So the ids that asked for the
//! context are counted, and when the last of them goes while anything else holds the
//! context, the context takes librdmacm's device list (`rdma_get_devices`), which holds
//! the device until the context is dropped. A program that destroys its PD and CQs before
//! its last id never takes it: `rdma_get_devices` opens every device librdmacm has not
//! opened yet (milliseconds, once), which `cmtime`'s set-up steps would otherwise pay.
//!
//! The FFI calls are the raw layers' (the device list in `raw.rs`, a kept id's destroy in
//! `channel/id/raw.rs`); the one unsafe block here is the promise this module exists to
//! keep: that the context stays open while a [`Hold`] lives. The id's raw layer holds an
//! [`IdContext`], so this module stands below it: a kept id is its owner as that layer
//! made it, of a type this module does not name.

use std::cell::RefCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::raw::DeviceList;
use crate::context::{Context, WeakContext};
use crate::ffi;

/// What holds librdmacm's device open once no id of ours does: its device list, or the
/// last id of a removed device (kept undestroyed, since librdmacm would close the context
/// with it; destroyed when the context is dropped, by the drop of its owner).
enum Kept {
    List {
        _list: DeviceList,
    },
    /// The id's owner (the id's raw layer's `RawCmId`, whose drop destroys it). In a mutex
    /// only for the hold, shared between threads, to be `Sync` (an id is `Send`, not
    /// `Sync`); nothing locks it.
    Id {
        _id: Mutex<Box<dyn Send>>,
    },
}

/// What keeps a CM device [`Context`] open: the ids that hold it, then, once none does
/// while the context is in use, [`Kept`]. Dropped with the context, after everything made
/// from it.
pub(crate) struct Hold {
    /// The live [`CmId`](super::CmId)s holding this context (each bound to the device,
    /// so each holding librdmacm's device open).
    ids: AtomicUsize,
    kept: OnceLock<Kept>,
}

/// A CM id's hold on its device's [`Context`]: taken by [`context`], given back by
/// [`IdContext::release`] before the id is destroyed.
pub(crate) struct IdContext {
    pub(crate) ctx: Context,
    hold: Arc<Hold>,
}

impl IdContext {
    /// The id holding this (live, bound to this device, without a QP) is about to be
    /// destroyed. If it is the last id holding the context while anything else holds it,
    /// the context takes librdmacm's device list; if the device is no longer listed
    /// (removed), it takes the id instead, as the owner `keep` makes, and destroys it when
    /// it is dropped: the caller, which sees `keep` called, must then not destroy the id.
    pub(crate) fn release(self, keep: impl FnOnce() -> Box<dyn Send>) {
        let IdContext { ctx, hold } = self;
        // The count and the context's holders are read after this id's own clone was
        // made: an id that asks for the context later is bound to the device itself.
        if hold.ids.fetch_sub(1, Ordering::AcqRel) != 1 || !ctx.has_other_holders() {
            return;
        }
        hold.kept
            .get_or_init(|| match DeviceList::listing(ctx.ptr()) {
                Some(list) => Kept::List { _list: list },
                None => Kept::Id {
                    _id: Mutex::new(keep()),
                },
            });
    }
}

thread_local! {
    /// The contexts [`context`] handed out on this thread, so that the ids of a device
    /// share one (and its cached attributes) while any of it lives. Per thread, not per
    /// process: no lock on the set-up path, and a context is shared between threads only
    /// by the caller's own hand-over (which orders it), never through a table whose
    /// ordering valgrind's DRD cannot see (std's futex locks; scripts/drd.supp).
    static OPEN: RefCell<Vec<(WeakContext, Weak<Hold>)>> = const { RefCell::new(Vec::new()) };
}

/// `verbs`, the device context of a live id bound to it, as a [`Context`] the id holds:
/// it stays open while the id lives, and then while the [`Context`] (and so every PD, CQ
/// and QP made from it) does (see [`IdContext::release`]). While one for `verbs` lives,
/// the same one is returned (a live [`Context`] keeps its `ibv_context` open, so its
/// pointer names no other) on the same thread.
pub(crate) fn context(verbs: NonNull<ffi::ibv_context>) -> IdContext {
    let found = OPEN.with_borrow_mut(|open| {
        let mut found = None;
        open.retain(|(weak, hold)| match (weak.upgrade(), hold.upgrade()) {
            (Some(ctx), Some(hold)) => {
                if ctx.ptr() == verbs.as_ptr() {
                    found = Some(IdContext { ctx, hold });
                }
                true
            }
            _ => false,
        });
        found
    });
    if let Some(held) = found {
        held.hold.ids.fetch_add(1, Ordering::AcqRel);
        return held;
    }
    let hold = Arc::new(Hold {
        ids: AtomicUsize::new(1),
        kept: OnceLock::new(),
    });
    // SAFETY: the context is open (the caller's id holds it), and stays so while the hold
    // lives: its ids hold it, then what it keeps (release).
    let ctx = unsafe { Context::from_raw_kept(verbs, Box::new(Arc::clone(&hold))) };
    OPEN.with_borrow_mut(|open| open.push((ctx.downgrade(), Arc::downgrade(&hold))));
    IdContext { ctx, hold }
}
