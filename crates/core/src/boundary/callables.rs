//! The callable registry: a language callable passed to native code becomes one native
//! Function, the same one each time while that Function lives, so `f` passed twice is one
//! Function (a native "remove listener" finds what "add listener" stored) and comes back as
//! `f` itself (`TieHost::callable_of`).
//!
//! [`LentFunctions`] is the cheap case of a serialized host: a callable passed as a call's
//! argument is lent a reused Function for that call, registered only if the callee keeps it.
//!
//! Locking: `entries` is held while a lookup runs and while the host makes a new Function
//! (which must not call back into the registry); Functions upgraded from its weak references
//! are dropped only after it is released, since a last drop runs the Function's drop hook,
//! which calls [`CallableRegistry::forget`].

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::address_map::AddressMap;
use crate::arc::{ObjectArc, WeakObjectArc};
use crate::function::{Function, FunctionObj};
use crate::object::ObjectHeader;

/// Host callables and their Functions, by a key the host picks: the callable's address where
/// it has a stable one (CPython), else an identity hash (the JVM), whose collisions the host's
/// `same` test tells apart. Node keeps the same weak reference in a wrap on the JS function
/// itself instead (a JS function has neither a stable address nor an identity hash).
pub struct CallableRegistry {
    entries: Mutex<AddressMap<Vec<Entry>>>,
    /// Entries in `entries` (changed under its lock): lets [`CallableRegistry::live`] skip the
    /// lock when there are none.
    count: AtomicUsize,
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
        CallableRegistry {
            entries: Mutex::new(AddressMap::with_hasher(std::hash::BuildHasherDefault::new())),
            count: AtomicUsize::new(0),
        }
    }

    /// The live Function registered for the callable under `key` whose handle `same` accepts,
    /// if any. With no entry at all this takes no lock; a registration racing with the lookup
    /// may be missed (as if the lookup ran first), so callers that must not miss one
    /// serialize lookups and registrations (a serialized host's lock).
    #[inline]
    pub fn live(&self, key: usize, same: impl Fn(usize) -> bool) -> Option<Function> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.live_locked(key, same)
    }

    #[inline(never)]
    fn live_locked(&self, key: usize, same: impl Fn(usize) -> bool) -> Option<Function> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let found = entries.get(&key)?.iter().filter(|(handle, _)| same(*handle)).find_map(|(_, f)| f.upgrade());
        drop(entries);
        found.map(Function)
    }

    /// Register `f`, the Function of the callable under `key` whose drop hook will pass
    /// `handle` to [`CallableRegistry::forget`] (a Function made before it was registered: a
    /// lent one that outlived its call, see [`LentFunctions`]).
    pub fn register(&self, key: usize, handle: usize, f: &Function) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let stale = Self::insert(&mut entries, &self.count, key, handle, f);
        drop(entries);
        drop(stale);
    }

    /// Put `f` under `key` (replacing a dead entry of the same handle, returned to be dropped
    /// once the lock is released).
    fn insert(
        entries: &mut AddressMap<Vec<Entry>>,
        count: &AtomicUsize,
        key: usize,
        handle: usize,
        f: &Function,
    ) -> Option<Entry> {
        let bucket = entries.entry(key).or_default();
        // A dead entry of the same callable (its Function is being dropped) is replaced; its
        // drop hook's `forget` then finds the live one and leaves it.
        match bucket.iter().position(|(h, _)| *h == handle) {
            Some(i) => Some(std::mem::replace(&mut bucket[i], (handle, ObjectArc::downgrade(&f.0)))),
            None => {
                bucket.push((handle, ObjectArc::downgrade(&f.0)));
                count.fetch_add(1, Ordering::Release);
                None
            }
        }
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
        let live = entries.get(&key).and_then(|b| b.iter().filter(|(h, _)| same(*h)).find_map(|(_, f)| f.upgrade()));
        if let Some(f) = live {
            drop(entries);
            return Ok(Function(f));
        }
        let (f, handle) = make()?;
        let stale = Self::insert(&mut entries, &self.count, key, handle, &f);
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
            if stale.is_some() {
                self.count.fetch_sub(1, Ordering::Release);
            }
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

/// Functions lent to one call: a serialized host's callable passed as an argument gets a
/// Function that only borrows it (the caller's argument keeps it alive for the call), so a
/// call that does not keep the Function pays no registration, no reference on the callable
/// and no deferred release. After the call, a Function nothing else holds goes back for the
/// next call (one shell reused, its `data` cleared); one that is still held has escaped: the
/// host takes its own reference to the callable and registers it, and from then on it is an
/// ordinary Function of that callable (its drop hook releases the callable and forgets it).
///
/// A lent Function is in flight from [`LentFunctions::lend`] to [`LentFunctions::reclaim`]:
/// while it is, a lookup of the same callable ([`LentFunctions::in_flight`]) finds it, so a
/// callable stays one Function even inside the call. The shell's drop hook must ignore a null
/// `data` (a surplus shell is dropped with it cleared).
///
/// Locking: every method runs under the serialized host's lock (CPython's GIL): spare and
/// in-flight list are plain data; the lock orders them.
pub struct LentFunctions {
    state: UnsafeCell<LentState>,
}

struct LentState {
    /// The reusable shell: unique, `data` null. Kept filled while no call runs (made again
    /// when a lent one escapes), so the number of live objects does not depend on the calls.
    spare: Option<Function>,
    /// The lent Functions whose call runs: (callable key, Function), no reference held (each
    /// call's [`Lent`] holds one).
    in_flight: Vec<(usize, *mut ObjectHeader)>,
}

// SAFETY: every access happens under the serialized host's lock (the methods' contract),
// which orders them across threads.
unsafe impl Sync for LentFunctions {}

/// A Function lent to one call (a +1 on it): hand it back with [`LentFunctions::reclaim`].
pub struct Lent(Function);

impl Lent {
    /// The lent Function (borrowed for the call).
    pub fn function(&self) -> &Function {
        &self.0
    }
}

impl Default for LentFunctions {
    fn default() -> Self {
        Self::new()
    }
}

impl LentFunctions {
    pub const fn new() -> Self {
        LentFunctions { state: UnsafeCell::new(LentState { spare: None, in_flight: Vec::new() }) }
    }

    /// Make the spare shell now (at startup), so that the shells alive at rest are always one.
    ///
    /// # Safety
    /// The host's lock is held; `make` returns a new Function with a null `data`.
    pub unsafe fn prepare(&self, make: impl FnOnce() -> Function) {
        // SAFETY: under the host's lock (this method's contract).
        let state = unsafe { &mut *self.state.get() };
        if state.spare.is_none() {
            state.spare = Some(make());
        }
    }

    /// The Function lent to a running call for the callable under `key`, if there is one (a
    /// new reference).
    ///
    /// # Safety
    /// The host's lock is held.
    #[inline]
    pub unsafe fn in_flight(&self, key: usize) -> Option<Function> {
        // SAFETY: under the host's lock (this method's contract).
        let state = unsafe { &*self.state.get() };
        let &(_, f) = state.in_flight.iter().rev().find(|(k, _)| *k == key)?;
        // SAFETY: an in-flight Function is kept alive by its call's `Lent`; the reference
        // taken here is the one `from_raw` adopts.
        Some(Function(unsafe {
            crate::object::inc_ref(f);
            ObjectArc::from_raw(f)
        }))
    }

    /// Lend a Function borrowing `data` (the callable under `key`) for one call: the spare
    /// shell aimed at it, or a new shell from `make` (with a null `data`).
    ///
    /// # Safety
    /// The host's lock is held until the matching [`LentFunctions::reclaim`], except where the
    /// call releases it; `data` stays valid until then; the shells' `safe_call` and drop hook
    /// treat `data` as this callable.
    #[inline]
    pub unsafe fn lend(&self, key: usize, data: *mut c_void, make: impl FnOnce() -> Function) -> Lent {
        // SAFETY: this method's contract, passed on.
        unsafe { self.lend_with(key, |body| body.data = data, make) }
    }

    /// [`LentFunctions::lend`] for a host whose shells carry data of their own (made with the
    /// shell, kept across calls): `aim` points the unique shell at the callable under `key`.
    ///
    /// # Safety
    /// As [`LentFunctions::lend`]; what `aim` sets stays valid until the matching
    /// [`LentFunctions::reclaim_with`].
    #[inline(always)]
    pub unsafe fn lend_with(
        &self,
        key: usize,
        aim: impl FnOnce(&mut FunctionObj),
        make: impl FnOnce() -> Function,
    ) -> Lent {
        // SAFETY: under the host's lock (this method's contract).
        let state = unsafe { &mut *self.state.get() };
        let mut f = state.spare.take().unwrap_or_else(make);
        match ObjectArc::get_mut(&mut f.0) {
            Some(body) => aim(body),
            None => unreachable!("a spare shell is unique"),
        }
        state.in_flight.push((key, f.as_object_ptr()));
        Lent(f)
    }

    /// [`LentFunctions::lend`], with an allocation failure (a new shell, a longer in-flight
    /// list) as the MemoryError instead of a panic: the hosts' entry. Nearly every call
    /// allocates nothing and skips the guard.
    ///
    /// # Safety
    /// As [`LentFunctions::lend`].
    #[inline(always)]
    pub unsafe fn try_lend(
        &self,
        key: usize,
        data: *mut c_void,
        make: impl FnOnce() -> Function,
    ) -> crate::Result<Lent> {
        // SAFETY: this method's contract, passed on.
        unsafe { self.try_lend_with(key, |body| body.data = data, make) }
    }

    /// [`LentFunctions::try_lend`] for shells with data of their own, as
    /// [`LentFunctions::lend_with`].
    ///
    /// # Safety
    /// As [`LentFunctions::lend_with`].
    #[inline(always)]
    pub unsafe fn try_lend_with(
        &self,
        key: usize,
        aim: impl FnOnce(&mut FunctionObj),
        make: impl FnOnce() -> Function,
    ) -> crate::Result<Lent> {
        // SAFETY: this method's contract, passed on.
        unsafe {
            if self.lends_without_allocating() {
                return Ok(self.lend_with(key, aim, || unreachable!("a spare shell is there")));
            }
            crate::error::catch_out_of_memory(|| self.lend_with(key, aim, make))
        }
    }

    /// Is the spare shell there, and room in the in-flight list?
    ///
    /// # Safety
    /// The host's lock is held.
    #[inline(always)]
    unsafe fn lends_without_allocating(&self) -> bool {
        // SAFETY: under the host's lock (this method's contract).
        let state = unsafe { &*self.state.get() };
        state.spare.is_some() && state.in_flight.len() < state.in_flight.capacity()
    }

    /// The call `lent` was made for is over. `Ok(())`: nothing else held it; it is the spare
    /// again (or dropped, `data` cleared, when there is one). `Err(f)`: it escaped (something
    /// still holds it): the host takes its own reference to the callable for `f` and registers
    /// it, then drops `f`, and makes a new spare with [`LentFunctions::prepare`] (an allocation
    /// that may fail: not made here, where a failure would drop `f` before the host took its
    /// reference).
    ///
    /// # Safety
    /// The host's lock is held; `lent` came from this registry's [`LentFunctions::lend`].
    #[inline]
    pub unsafe fn reclaim(&self, lent: Lent) -> Result<(), Function> {
        // SAFETY: this method's contract, passed on.
        unsafe { self.reclaim_with(lent, |body| body.data = std::ptr::null_mut()) }
    }

    /// [`LentFunctions::reclaim`] for shells lent by [`LentFunctions::lend_with`]: `clear`
    /// undoes `aim` on a shell that comes back (it runs before the shell is the spare again or
    /// dropped as a surplus one).
    ///
    /// # Safety
    /// The host's lock is held; `lent` came from this registry's [`LentFunctions::lend_with`].
    #[inline(always)]
    pub unsafe fn reclaim_with(&self, lent: Lent, clear: impl FnOnce(&mut FunctionObj)) -> Result<(), Function> {
        // SAFETY: under the host's lock (this method's contract).
        let state = unsafe { &mut *self.state.get() };
        let Lent(mut f) = lent;
        let ptr = f.as_object_ptr();
        // Calls end in the reverse order of their start, so this is nearly always the last.
        if state.in_flight.last().is_some_and(|&(_, p)| p == ptr) {
            state.in_flight.pop();
        } else if let Some(i) = state.in_flight.iter().rposition(|&(_, p)| p == ptr) {
            state.in_flight.remove(i);
        }
        match ObjectArc::get_mut(&mut f.0) {
            Some(body) => {
                clear(body);
                if state.spare.is_none() {
                    state.spare = Some(f);
                }
                Ok(())
            }
            None => Err(f),
        }
    }

    /// Take the spare shell out (a host whose shells hold a reference back to the host's
    /// state drops it while that state is retired, so the two do not keep each other alive).
    ///
    /// # Safety
    /// The host's lock is held.
    pub unsafe fn take_spare(&self) -> Option<Function> {
        // SAFETY: under the host's lock (this method's contract).
        unsafe { (*self.state.get()).spare.take() }
    }
}
