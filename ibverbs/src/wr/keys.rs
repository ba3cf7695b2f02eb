//! The rule that a request's entries are of regions of its queue's protection domain
//! ([`WrError::ForeignRegion`]), checked when it is posted or pushed.
//!
//! An [`Sge`](crate::Sge) is a transparent `ibv_sge`, which a request hands to the provider
//! as it is: it has no room for its region's PD. What identifies the region is its local key,
//! unique among the live regions of one device. So every region the crate registers notes
//! its key here, with its device and PD ([`note`]), until it is deregistered ([`forget`]),
//! and a queue looks the keys of its requests up ([`KeyCache::check`]). A key the crate did
//! not register (an entry made by the `unsafe` [`Sge::from_raw`](crate::Sge::from_raw),
//! whose contract requires a region of the queue's PD) is not known here, and passes.
//!
//! The lookup takes a lock, so a queue keeps the keys that passed in a direct-mapped cache
//! ([`KeyCache::known`]): a slot a key, by the key's index bits, filled at one generation
//! ([`GENERATION`]). Deregistering or re-registering a region moves the generation (its key
//! may be handed out again, in another PD), and so does registering one once a cache has
//! passed a key that was not in the table (the new region may have that key). A post whose
//! keys are all in the cache pays two loads and a compare, and a load and a compare an
//! entry.
//!
//! The table's lock and the caches' atomics order every access here, but DRD, the thread
//! error detector `scripts/memcheck` runs, sees neither (std's locks are futex(2) words):
//! `scripts/drd.supp` names this module's accesses, and why they are race-free.
//!
//! The PD is that of the kernel ([`ProtectionDomain::root`]): a queue of a parent domain
//! takes the regions of the PD it was made from, as the device does.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::WrError;
use crate::ffi;
use crate::pd::ProtectionDomain;

/// A region's PD: its `ibv_pd` (as an address) and the kernel's handle of it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Pd {
    ptr: usize,
    handle: u32,
}

impl Pd {
    fn of(pd: &ProtectionDomain) -> Self {
        let root = pd.root();
        Pd {
            ptr: root.ptr() as usize,
            handle: root.handle(),
        }
    }
}

/// The live regions the crate registered, by local key and device (`ibv_device`, as an
/// address): their PD. A region keeps its PD, so its device, alive while it is here.
static REGIONS: RwLock<BTreeMap<(u32, usize), Pd>> = RwLock::new(BTreeMap::new());

/// What a [`KeyCache`]'s slots were filled at; moved under [`REGIONS`]' write lock by every
/// change that may turn a key that passed into one that does not. 64 bits: it never comes
/// round to a cache's old generation.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Whether a cache passed a key that was not in [`REGIONS`] (set under its read lock) since
/// the generation moved: then registering a region moves it, as the region may have that
/// key.
static UNKNOWN_PASSED: AtomicBool = AtomicBool::new(false);

/// The table, to change. Each change is one call on the map: a panic elsewhere leaves it
/// whole.
fn regions_mut() -> RwLockWriteGuard<'static, BTreeMap<(u32, usize), Pd>> {
    REGIONS.write().unwrap_or_else(|e| e.into_inner())
}

/// The table, to look keys up (queues of several threads at once).
fn regions() -> RwLockReadGuard<'static, BTreeMap<(u32, usize), Pd>> {
    REGIONS.read().unwrap_or_else(|e| e.into_inner())
}

/// `lkey` is the key of a region just registered (or re-registered) in `pd`.
pub(crate) fn note(pd: &ProtectionDomain, lkey: u32) {
    note_on(pd.context().device_ptr() as usize, Pd::of(pd), lkey);
}

/// The region of `lkey` in `pd` is about to be deregistered (or re-registered): its key may
/// be handed out again.
pub(crate) fn forget(pd: &ProtectionDomain, lkey: u32) {
    forget_on(pd.context().device_ptr() as usize, lkey);
}

/// [`note`] of `device`'s key `lkey`, in `pd`.
fn note_on(device: usize, pd: Pd, lkey: u32) {
    let mut regions = regions_mut();
    regions.insert((lkey, device), pd);
    if UNKNOWN_PASSED.swap(false, Relaxed) {
        GENERATION.fetch_add(1, Relaxed);
    }
}

/// [`forget`] of `device`'s key `lkey`.
fn forget_on(device: usize, lkey: u32) {
    let mut regions = regions_mut();
    regions.remove(&(lkey, device));
    GENERATION.fetch_add(1, Relaxed);
}

/// The cache's slots: a power of two. 32 consecutive regions of a device (by their keys'
/// index) do not evict each other; a cache takes 136 bytes.
const SLOTS: usize = 32;

/// The slot of `lkey`: its index bits (`lkey >> 8`: rxe, siw and mlx5 keep the index of the
/// key above its low byte).
#[inline(always)]
fn slot_of(lkey: u32) -> usize {
    (lkey >> 8) as usize % SLOTS
}

/// What slot `i` holds when empty: a key of another slot, which no lookup of it compares
/// equal to.
fn empty(i: usize) -> u32 {
    (((i + 1) % SLOTS) << 8) as u32
}

/// A queue's check of its requests' keys: its PD and device, and the keys that passed.
pub(crate) struct KeyCache {
    pd: Pd,
    device: usize,
    /// The [`GENERATION`] every slot's key passed at (stored, with `Release`, after the
    /// slots were emptied for it); none before the first lookup.
    generation: AtomicU64,
    /// Keys that passed, each in its [`slot_of`], or [`empty`].
    slots: [AtomicU32; SLOTS],
}

impl KeyCache {
    /// The check of a queue in `pd`.
    pub(crate) fn new(pd: &ProtectionDomain) -> Self {
        KeyCache::with(Pd::of(pd), pd.context().device_ptr() as usize)
    }

    /// The check of a queue of no device: every key passes (the unit tests' limits).
    pub(crate) fn none() -> Self {
        KeyCache::with(Pd { ptr: 0, handle: 0 }, 0)
    }

    fn with(pd: Pd, device: usize) -> Self {
        KeyCache {
            pd,
            device,
            generation: AtomicU64::new(u64::MAX),
            slots: std::array::from_fn(|i| AtomicU32::new(empty(i))),
        }
    }

    /// Whether `lkey` is in its slot.
    #[inline(always)]
    fn holds_key(&self, lkey: u32) -> bool {
        self.slots[slot_of(lkey)].load(Relaxed) == lkey
    }

    /// Whether every entry of `sges` is known to pass: the cache is of the current
    /// generation and holds each entry's key. The data path's test.
    #[inline(always)]
    pub(crate) fn known(&self, sges: &[ffi::ibv_sge]) -> bool {
        self.generation.load(Acquire) == GENERATION.load(Relaxed)
            && sges.iter().all(|s| self.holds_key(s.lkey))
    }

    /// Whether every entry of `sges` passes: [`known`](Self::known), or else looked up.
    #[inline(always)]
    pub(crate) fn fits(&self, sges: &[ffi::ibv_sge]) -> bool {
        self.known(sges) || self.check(sges).is_ok()
    }

    /// Looks the keys of `sges` up (a read lock of the table), caching those that pass: the
    /// error of the first entry of a region the crate registered in another PD of the
    /// queue's device. Under the read lock the generation stands still; a cache of an older
    /// one is emptied first.
    #[cold]
    #[inline(never)]
    pub(crate) fn check(&self, sges: &[ffi::ibv_sge]) -> Result<(), WrError> {
        let regions = regions();
        let generation = GENERATION.load(Relaxed);
        if self.generation.load(Acquire) != generation {
            for (i, slot) in self.slots.iter().enumerate() {
                slot.store(empty(i), Relaxed);
            }
            self.generation.store(generation, Release);
        }
        for (entry, s) in sges.iter().enumerate() {
            match regions.get(&(s.lkey, self.device)) {
                Some(pd) if *pd != self.pd => {
                    return Err(WrError::ForeignRegion {
                        entry: entry as u32,
                        lkey: s.lkey,
                        region_pd: pd.handle,
                        queue_pd: self.pd.handle,
                    })
                }
                found => {
                    if found.is_none() {
                        UNKNOWN_PASSED.store(true, Relaxed);
                    }
                    self.slots[slot_of(s.lkey)].store(s.lkey, Relaxed);
                }
            }
        }
        Ok(())
    }
}

/// A copy starts with an empty cache.
impl Clone for KeyCache {
    fn clone(&self) -> Self {
        KeyCache::with(self.pd, self.device)
    }
}

impl fmt::Debug for KeyCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyCache")
            .field("pd", &self.pd.handle)
            .finish_non_exhaustive()
    }
}

/// The cache against the table, on made-up devices (addresses no `ibv_device` has) and PDs,
/// so what a device seldom does is done here at will: a key handed out again in another PD,
/// a region moved to another PD, a key the crate did not register that it registers later.
/// (The device tests, `tests/verbs/foreign_pd.rs`, post through real queues.)
#[cfg(test)]
mod tests {
    use super::*;

    /// Held by each test: the table and generation are the process's, and a change by one
    /// test between another's lookup and its test of the cache would fail that test.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
    }

    const PD_A: Pd = Pd {
        ptr: 0x10,
        handle: 1,
    };
    const PD_B: Pd = Pd {
        ptr: 0x20,
        handle: 2,
    };

    fn sges(lkeys: &[u32]) -> Vec<ffi::ibv_sge> {
        lkeys
            .iter()
            .map(|&lkey| ffi::ibv_sge {
                addr: 0,
                length: 8,
                lkey,
            })
            .collect()
    }

    /// That `sges` is refused for `entry`, of `lkey` in [`PD_B`].
    #[track_caller]
    fn assert_refused(cache: &KeyCache, sges: &[ffi::ibv_sge], entry: u32, lkey: u32) {
        assert!(!cache.known(sges));
        assert!(!cache.fits(sges));
        match cache.check(sges) {
            Err(WrError::ForeignRegion {
                entry: e,
                lkey: k,
                region_pd: 2,
                queue_pd: 1,
            }) if (e, k) == (entry, lkey) => {}
            other => panic!("expected entry {entry} refused, got {other:?}"),
        }
    }

    #[test]
    fn keys_pass_once_looked_up_until_their_region_changes() {
        let _one = one_at_a_time();
        let device = 0x1001;
        let cache = KeyCache::with(PD_A, device);
        let (own, foreign) = (0x0100, 0x0207);
        note_on(device, PD_A, own);
        note_on(device, PD_B, foreign);
        let list = sges(&[own, own, own]);
        assert!(!cache.known(&list));
        assert!(cache.fits(&list));
        assert!(cache.known(&list));
        assert_refused(&cache, &sges(&[own, own, foreign]), 2, foreign);
        // Deregistered, and the key handed out again in another PD.
        forget_on(device, own);
        note_on(device, PD_B, own);
        assert_refused(&cache, &list, 0, own);
        // Moved back (a rereg to the queue's PD).
        forget_on(device, own);
        note_on(device, PD_A, own);
        assert!(cache.fits(&list) && cache.known(&list));
        // The same key on another device is another region.
        assert!(KeyCache::with(PD_A, 0x1002).fits(&sges(&[foreign])));
        forget_on(device, own);
        forget_on(device, foreign);
    }

    #[test]
    fn a_key_not_registered_passes_until_it_is_registered() {
        let _one = one_at_a_time();
        let device = 0x2001;
        let cache = KeyCache::with(PD_A, device);
        let (raw, own) = (0x0300, 0x0400);
        note_on(device, PD_A, own);
        let list = sges(&[own, raw]);
        assert!(cache.fits(&list) && cache.known(&list));
        // Registering another region keeps the cache; registering its key does not.
        note_on(device, PD_A, 0x0500);
        note_on(device, PD_B, raw);
        assert_refused(&cache, &list, 1, raw);
        for lkey in [raw, own, 0x0500] {
            forget_on(device, lkey);
        }
    }

    #[test]
    fn an_empty_slot_holds_no_key_of_its_own() {
        let _one = one_at_a_time();
        for i in 0..SLOTS {
            assert_ne!(slot_of(empty(i)), i);
        }
        let cache = KeyCache::with(PD_A, 0x3001);
        assert!(cache.fits(&sges(&[])) && cache.known(&sges(&[])));
        assert!(!cache.known(&sges(&[empty(0)])));
    }
}
