//! `AnyCell`: a settable `Any` field that any thread may read or replace.
//!
//! Reflected fields are read far more often than written, and every read clones the value
//! (one reference-count increment for an object). A `Mutex<Any>` adds two locked instructions
//! per read: the lock, and the unlock's swap (it must see parked waiters). This cell takes one:
//! a compare-and-swap to enter and a plain release store to leave, spinning, then yielding,
//! under contention. Its critical sections are a 16-byte move or a reference-count increment,
//! never user code: a replaced value is dropped after the cell is released.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::any::Any;

pub struct AnyCell {
    locked: AtomicBool,
    value: UnsafeCell<Any>,
}

// SAFETY: the value is only reached while `locked` is held, so at most one thread touches it at
// a time; `Any` may move between threads (objects are `Send + Sync` by the object contract).
unsafe impl Sync for AnyCell {}

const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Any>();
};

/// Holds the cell's lock; releases it when dropped.
struct Held<'a>(&'a AnyCell);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::Release);
    }
}

impl AnyCell {
    pub fn new(value: Any) -> Self {
        AnyCell { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    #[inline]
    fn hold(&self) -> Held<'_> {
        let mut spins = 0u32;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Held(self)
    }

    /// A copy of the value (a new reference for an object).
    #[inline]
    pub fn get(&self) -> Any {
        let _held = self.hold();
        // SAFETY: the lock is held; cloning runs no user code (a reference-count increment).
        unsafe { (*self.value.get()).clone() }
    }

    /// Store `value`, returning the old one (dropped by the caller, outside the lock).
    #[inline]
    pub fn replace(&self, value: Any) -> Any {
        let _held = self.hold();
        // SAFETY: the lock is held; the old value is moved out, not dropped here.
        unsafe { std::mem::replace(&mut *self.value.get(), value) }
    }

    /// Store `value`; the old one is dropped after the lock is released.
    #[inline]
    pub fn set(&self, value: Any) {
        drop(self.replace(value));
    }

    pub fn into_inner(self) -> Any {
        self.value.into_inner()
    }
}

impl std::fmt::Debug for AnyCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AnyCell").field(&self.get()).finish()
    }
}
