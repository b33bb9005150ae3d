//! The callable registry: a language callable passed to native code becomes one native
//! Function, the same one each time while that Function lives, so `f` passed twice is one
//! Function (a native "remove listener" finds what "add listener" stored) and comes back as
//! `f` itself (`TieHost::callable_of`).
//!
//! Locking: `entries` is held while a lookup runs and while the host makes a new Function
//! (which must not call back into the registry); Functions upgraded from its weak references
//! are dropped only after it is released, since a last drop runs the Function's drop hook,
//! which calls [`CallableRegistry::forget`].

use std::sync::Mutex;

use crate::address_map::AddressMap;
use crate::arc::{ObjectArc, WeakObjectArc};
use crate::function::{Function, FunctionObj};

/// Host callables and their Functions, by a key the host picks: the callable's address where
/// it has a stable one (CPython), else an identity hash (the JVM), whose collisions the host's
/// `same` test tells apart. Node keeps the same weak reference in a wrap on the JS function
/// itself instead (a JS function has neither a stable address nor an identity hash).
pub struct CallableRegistry {
    entries: Mutex<AddressMap<Vec<Entry>>>,
}

/// One callable under a key: the host's handle of it, and its Function.
type Entry = (usize, WeakObjectArc<FunctionObj>);

impl Default for CallableRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl CallableRegistry {
    pub const fn new() -> Self {
        CallableRegistry { entries: Mutex::new(AddressMap::with_hasher(std::hash::BuildHasherDefault::new())) }
    }

    /// The live Function of the callable under `key` whose handle `same` accepts; else a new
    /// one from `make`, which returns it and the handle its drop hook will pass to
    /// [`CallableRegistry::forget`], registered before it is returned.
    pub fn function_for<E>(
        &self,
        key: usize,
        same: impl Fn(usize) -> bool,
        make: impl FnOnce() -> Result<(Function, usize), E>,
    ) -> Result<Function, E> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let bucket = entries.entry(key).or_default();
        if let Some(f) = bucket.iter().filter(|(handle, _)| same(*handle)).find_map(|(_, f)| f.upgrade()) {
            drop(entries);
            return Ok(Function(f));
        }
        let (f, handle) = make()?;
        // A dead entry of the same callable (its Function is being dropped) is replaced; its
        // drop hook's `forget` then finds the live one and leaves it.
        let stale = match bucket.iter().position(|(h, _)| *h == handle) {
            Some(i) => Some(std::mem::replace(&mut bucket[i], (handle, ObjectArc::downgrade(&f.0)))),
            None => {
                bucket.push((handle, ObjectArc::downgrade(&f.0)));
                None
            }
        };
        drop(entries);
        drop(stale);
        Ok(f)
    }

    /// The Function registered for `handle` under `key` is being dropped (its drop hook runs):
    /// forget its entry, unless a newer live Function of that callable replaced it.
    pub fn forget(&self, key: usize, handle: usize) {
        let (newer, stale);
        {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let Some(bucket) = entries.get_mut(&key) else { return };
            let i = bucket.iter().position(|(h, _)| *h == handle);
            newer = i.and_then(|i| bucket[i].1.upgrade());
            stale = match (i, &newer) {
                (Some(i), None) => Some(bucket.swap_remove(i)),
                _ => None,
            };
            if bucket.is_empty() {
                entries.remove(&key);
            }
        }
        // Dropped unlocked: a last reference runs a drop hook that locks again.
        drop(newer);
        drop(stale);
    }

    /// Callables registered right now (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
