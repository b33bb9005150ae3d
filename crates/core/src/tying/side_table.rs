//! Slots for objects without a prefix of this frontend, keyed by address.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use crate::address_map::AddressMap;
use crate::object::ObjectHeader;
use crate::slot::SlotPrefix;

/// Slots for objects that carry no prefix of this frontend (made before it loaded, or by
/// another allocator), keyed by object address.
///
/// An entry is shared (`Arc`) while a thread works on it; it is removed only when its slot
/// is Detached and the table holds the sole reference, so a thread that found an entry
/// always ties into the entry that stays in the table.
pub struct SideTable {
    entries: Mutex<AddressMap<Arc<SlotPrefix>>>,
}

impl SideTable {
    pub const fn new() -> Self {
        SideTable { entries: Mutex::new(AddressMap::with_hasher(std::hash::BuildHasherDefault::new())) }
    }

    /// The entry for `obj`, made Detached if missing.
    pub fn entry(&self, obj: *mut ObjectHeader) -> Arc<SlotPrefix> {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(obj as usize).or_insert_with(|| Arc::new(SlotPrefix::new())).clone()
    }

    /// The entry for `obj`, if there is one.
    pub fn existing(&self, obj: *mut ObjectHeader) -> Option<Arc<SlotPrefix>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).get(&(obj as usize)).cloned()
    }

    /// Drop the entry for `obj` if it is Detached and nobody else holds it.
    pub fn prune(&self, obj: *mut ObjectHeader) {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = map.get(&(obj as usize)) {
            if Arc::strong_count(e) == 1 && e.slot.load(Ordering::Acquire) == 0 {
                map.remove(&(obj as usize));
            }
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
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
