//! The rule that a request's entries are of regions of its queue's protection domain
//! ([`WrError::ForeignRegion`]), checked when it is posted or pushed.
//!
//! An [`Sge`](crate::Sge) is a transparent `ibv_sge`, which a request hands to the provider
//! as it is: it has no room for its region's PD. What identifies the region is its local key,
//! unique among the live regions of one device. So every region the crate registers notes
//! its key here, with its device and PD ([`note`]), until it is deregistered ([`forget`]),
//! and a queue looks the keys of its requests up ([`KeyCache::check`]). A key the crate did
//! not register (an entry made by the `unsafe` [`Sge::from_raw`](crate::Sge::from_raw)) is
//! not known here, and passes.
//!
//! The lookup takes a lock, so a queue keeps the keys that passed in a small cache
//! ([`KeyCache::known`]), valid until any region is registered, re-registered or
//! deregistered: each of those moves the generation ([`GENERATION`]) every entry of a cache
//! was checked at. A post whose keys are all in the cache pays a load and a compare an
//! entry.
//!
//! The PD is that of the kernel ([`ProtectionDomain::root`]): a queue of a parent domain
//! takes the regions of the PD it was made from, as the device does.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
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

/// Moved under [`REGIONS`]' write lock by every change to it; what a [`KeyCache`] entry
/// was checked at.
static GENERATION: AtomicU32 = AtomicU32::new(0);

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
    let mut regions = regions_mut();
    regions.insert((lkey, pd.context().device_ptr() as usize), Pd::of(pd));
    GENERATION.fetch_add(1, Relaxed);
}

/// The region of `lkey` in `pd` is about to be deregistered (or re-registered): its key may
/// be handed out again.
pub(crate) fn forget(pd: &ProtectionDomain, lkey: u32) {
    let mut regions = regions_mut();
    regions.remove(&(lkey, pd.context().device_ptr() as usize));
    GENERATION.fetch_add(1, Relaxed);
}

/// The cache's entries: a power of two. 32 consecutive regions of a device (by their keys'
/// index) do not evict each other; a queue's caches take 256 bytes each.
const SLOTS: usize = 32;
/// What no entry is: a key at the generation before the first.
const EMPTY: u64 = u64::MAX;

/// A queue's check of its requests' keys: its PD and device, and the keys that passed.
pub(crate) struct KeyCache {
    pd: Pd,
    device: usize,
    /// `generation << 32 | lkey` of keys that passed at that generation, by the key's index
    /// bits (`lkey >> 8`: rxe, siw and mlx5 keep the index of the key above its low byte).
    slots: [AtomicU64; SLOTS],
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
            slots: std::array::from_fn(|_| AtomicU64::new(EMPTY)),
        }
    }

    #[inline(always)]
    fn slot(&self, lkey: u32) -> &AtomicU64 {
        &self.slots[(lkey >> 8) as usize % SLOTS]
    }

    /// Whether every entry of `sges` is known to pass: its key in the cache at the current
    /// generation. The data path's test.
    #[inline(always)]
    pub(crate) fn known(&self, sges: &[ffi::ibv_sge]) -> bool {
        let generation = u64::from(GENERATION.load(Relaxed)) << 32;
        sges.iter()
            .all(|s| self.slot(s.lkey).load(Relaxed) == generation | u64::from(s.lkey))
    }

    /// Whether every entry of `sges` passes: [`known`](Self::known), or else looked up.
    #[inline(always)]
    pub(crate) fn fits(&self, sges: &[ffi::ibv_sge]) -> bool {
        self.known(sges) || self.check(sges).is_ok()
    }

    /// Looks the keys of `sges` up (a read lock of the table), caching those that pass: the
    /// error of the first entry of a region the crate registered in another PD of the
    /// queue's device.
    #[cold]
    #[inline(never)]
    pub(crate) fn check(&self, sges: &[ffi::ibv_sge]) -> Result<(), WrError> {
        let regions = regions();
        let generation = u64::from(GENERATION.load(Relaxed)) << 32;
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
                _ => self
                    .slot(s.lkey)
                    .store(generation | u64::from(s.lkey), Relaxed),
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
