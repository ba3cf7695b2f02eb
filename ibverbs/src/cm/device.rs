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

use std::cell::RefCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use rdmacm_sys as cm;

use super::raw::{id_table, ChannelInner};
use crate::context::{Context, WeakContext};
use crate::ffi;

/// librdmacm's device list (`rdma_get_devices`), freed on drop (`rdma_free_devices`).
/// While it lives, librdmacm keeps every listed device context open (each is counted as
/// in use), even if the last id on the device goes.
struct DeviceList(NonNull<*mut ffi::ibv_context>);

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from rdma_get_devices and is freed once.
        unsafe { cm::rdma_free_devices(self.0.as_ptr()) };
    }
}

/// `verbs`, listed: librdmacm's device list if it names `verbs` (then the list keeps it
/// open), else `None` (the device was removed, or the list could not be made).
fn listed(verbs: NonNull<ffi::ibv_context>) -> Option<DeviceList> {
    // SAFETY: no count wanted; the result is checked.
    let raw = unsafe { cm::rdma_get_devices(std::ptr::null_mut()) };
    let list = DeviceList(NonNull::new(raw)?);
    let mut p = list.0.as_ptr();
    // SAFETY: the list is NULL-terminated and valid until freed (list's drop).
    unsafe {
        while !(*p).is_null() {
            if *p == verbs.as_ptr() {
                return Some(list);
            }
            p = p.add(1);
        }
    }
    None
}

/// A CM id kept undestroyed because it was the last holder of a removed device (whose
/// context librdmacm would close with it): destroyed when the context is dropped.
struct KeptId {
    raw: NonNull<cm::rdma_cm_id>,
    /// The id's channel, which `rdma_destroy_id` writes to.
    _channel: Arc<ChannelInner>,
}

impl Drop for KeptId {
    fn drop(&mut self) {
        let _table = id_table();
        // SAFETY: the id is live, has no QP (its CmId dropped it first) and none of its
        // events is unacknowledged (each is acknowledged when read); no CmId owns it.
        let rc = unsafe { cm::rdma_destroy_id(self.raw.as_ptr()) };
        crate::drop_error::report("rdma_destroy_id", rc);
    }
}

/// What holds librdmacm's device open once no id of ours does.
enum Kept {
    List { _list: DeviceList },
    Id { _id: KeptId },
}

/// What keeps a CM device [`Context`] open: the ids that hold it, then, once none does
/// while the context is in use, [`Kept`]. Dropped with the context, after everything made
/// from it.
pub(crate) struct Hold {
    verbs: NonNull<ffi::ibv_context>,
    /// The live [`CmId`](super::CmId)s holding this context (each bound to the device,
    /// so each holding librdmacm's device open).
    ids: AtomicUsize,
    kept: OnceLock<Kept>,
}

// SAFETY: the pointers are only compared (verbs) or handed to librdmacm's thread-safe
// calls once (the kept id's destroy, under the id table).
unsafe impl Send for Hold {}
// SAFETY: as above; the count is atomic and `kept` is set once.
unsafe impl Sync for Hold {}

/// A CM id's hold on its device's [`Context`]: taken by [`context`], given back by
/// [`IdContext::release_keeps_id`] before the id is destroyed.
pub(crate) struct IdContext {
    pub(crate) ctx: Context,
    hold: Arc<Hold>,
}

impl IdContext {
    /// The id `id` (live, bound to this device, without a QP) is about to be destroyed.
    /// If it is the last id holding the context while anything else holds it, the context
    /// takes librdmacm's device list; if the device is no longer listed (removed), it
    /// takes the id instead and destroys it when it is dropped: then `true`, and the caller
    /// must not destroy the id.
    #[must_use]
    pub(crate) fn release_keeps_id(
        self,
        id: NonNull<cm::rdma_cm_id>,
        channel: &Arc<ChannelInner>,
    ) -> bool {
        let IdContext { ctx, hold } = self;
        // The count and the context's holders are read after this id's own clone was
        // made: an id that asks for the context later is bound to the device itself.
        if hold.ids.fetch_sub(1, Ordering::AcqRel) != 1 || !ctx.has_other_holders() {
            return false;
        }
        let mut kept_id = false;
        hold.kept.get_or_init(|| match listed(hold.verbs) {
            Some(list) => Kept::List { _list: list },
            None => {
                kept_id = true;
                Kept::Id {
                    _id: KeptId {
                        raw: id,
                        _channel: Arc::clone(channel),
                    },
                }
            }
        });
        kept_id
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
/// and QP made from it) does (see [`IdContext::release_keeps_id`]). While one for `verbs` lives,
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
        verbs,
        ids: AtomicUsize::new(1),
        kept: OnceLock::new(),
    });
    // SAFETY: the context is open (the caller's id holds it), and stays so while the hold
    // lives: its ids hold it, then what it keeps (release_keeps_id).
    let ctx = unsafe { Context::from_raw_kept(verbs, Box::new(Arc::clone(&hold))) };
    OPEN.with_borrow_mut(|open| open.push((ctx.downgrade(), Arc::downgrade(&hold))));
    IdContext { ctx, hold }
}
