//! Slots for objects without a prefix of this frontend, keyed by address.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::address_map::AddressMap;
use crate::object::ObjectHeader;
use crate::slot::{SlotPrefix, GENERATION_MASK};

/// Slots for objects that carry no prefix of this frontend (made before it loaded, or by
/// another allocator), keyed by object address.
///
/// An entry is shared (`Arc`) while a thread works on it; it is removed only when its slot
/// is Detached and the table holds the sole reference, so a thread that found an entry
/// always ties into the entry that stays in the table.
///
/// Generations never restart: a new entry's first wrapper gets a generation above every
/// pruned entry's, so a finalizer of a wrapper from before a prune that runs late (the JVM's
/// Cleaner orders nothing) cannot name the object's new wrapper and untie it (found by the
/// `slot_machine` fuzz target, `cargo xtask harden`).
pub struct SideTable {
    entries: Mutex<Entries>,
}

struct Entries {
    map: AddressMap<Arc<SlotPrefix>>,
    /// The highest generation a pruned entry had reached; new entries start from it.
    pruned_generation: u64,
}

impl SideTable {
    pub const fn new() -> Self {
        SideTable {
            entries: Mutex::new(Entries {
                map: AddressMap::with_hasher(std::hash::BuildHasherDefault::new()),
                pruned_generation: 0,
            }),
        }
    }

    /// The entry for `obj`, made Detached if missing.
    pub fn entry(&self, obj: *mut ObjectHeader) -> Arc<SlotPrefix> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let start = entries.pruned_generation;
        entries
            .map
            .entry(obj as usize)
            .or_insert_with(|| {
                let prefix = SlotPrefix::new();
                prefix.aux.store(start, Ordering::Relaxed);
                Arc::new(prefix)
            })
            .clone()
    }

    /// The entry for `obj`, if there is one.
    pub fn existing(&self, obj: *mut ObjectHeader) -> Option<Arc<SlotPrefix>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).map.get(&(obj as usize)).cloned()
    }

    /// Drop the entry for `obj` if it is Detached and nobody else holds it.
    pub fn prune(&self, obj: *mut ObjectHeader) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = entries.map.get(&(obj as usize)) else { return };
        if Arc::strong_count(e) == 1 && e.slot.load(Ordering::Acquire) == 0 {
            let generation = e.aux.load(Ordering::Relaxed) & GENERATION_MASK;
            // Generations wrap at 32 bits, as a prefix slot's do.
            let high = entries.pruned_generation.max(generation) & GENERATION_MASK;
            entries.pruned_generation = high;
            entries.map.remove(&(obj as usize));
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for SideTable {
    fn default() -> Self {
        Self::new()
    }
}
