//! `AnyCell`: a settable `Any` field that any thread may read or replace.
//!
//! Reflected fields are read far more often than written, and every read clones the value
//! (one reference-count increment for an object). A `Mutex<Any>` adds two locked instructions
//! per read: the lock, and the unlock's swap (it must see parked waiters). This cell takes one:
//! a compare-and-swap to enter and a plain release store to leave, spinning, then yielding,
//! under contention. Its critical sections are a 16-byte move or a reference-count increment,
//! never user code: a replaced value is dropped after the cell is released.
//!
//! The lock is the top bit of the value's own head word (the top bit of `small_len`, which no
//! owned value sets: lengths are at most 7 and `LENT_MARK` marks views only), so the cell is
//! the size of an `Any`: a two-field object is 16 bytes smaller than with a separate flag.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::any::Any;

/// The head-word bit that says the cell is held.
const HELD: u64 = 1 << 63;

pub struct AnyCell {
    /// The value's head word, with [`HELD`] set while a thread holds the cell.
    head: AtomicU64,
    /// The value's payload (with its provenance); only touched while the cell is held.
    payload: UnsafeCell<*mut u8>,
}

// SAFETY: the payload is only reached while the cell is held, so at most one thread touches it
// at a time; `Any` may move between threads (objects are `Send + Sync` by the object contract).
unsafe impl Sync for AnyCell {}
// SAFETY: as above; the raw payload pointer is an owned `Any`'s.
unsafe impl Send for AnyCell {}

const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Any>();
    assert!(std::mem::size_of::<AnyCell>() == std::mem::size_of::<Any>());
};

/// Holds the cell; puts `head` back (releasing it) when dropped.
struct Held<'a> {
    cell: &'a AnyCell,
    head: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.cell.head.store(self.head, Ordering::Release);
    }
}

impl AnyCell {
    pub fn new(value: Any) -> Self {
        let (head, payload) = value.into_words();
        debug_assert!(head & HELD == 0, "an owned value never sets the cell's lock bit");
        AnyCell { head: AtomicU64::new(head), payload: UnsafeCell::new(payload) }
    }

    #[inline]
    fn hold(&self) -> Held<'_> {
        let mut spins = 0u32;
        loop {
            let head = self.head.load(Ordering::Relaxed);
            if head & HELD == 0
                && self.head.compare_exchange_weak(head, head | HELD, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return Held { cell: self, head };
            }
            crate::spin::backoff(&mut spins);
        }
    }

    /// A copy of the value (a new reference for an object).
    #[inline]
    pub fn get(&self) -> Any {
        let held = self.hold();
        // SAFETY: the cell is held, so the words are the stored value's; it stays owned by
        // the cell (ManuallyDrop), and cloning runs no user code (a reference-count increment).
        let value = std::mem::ManuallyDrop::new(unsafe { Any::from_words(held.head, *self.payload.get()) });
        Any::clone(&value)
    }

    /// Store `value`, returning the old one (dropped by the caller, outside the lock).
    #[inline]
    pub fn replace(&self, value: Any) -> Any {
        let mut held = self.hold();
        let (head, payload) = value.into_words();
        debug_assert!(head & HELD == 0, "an owned value never sets the cell's lock bit");
        // SAFETY: the cell is held; the old words move out to the caller, the new ones in,
        // and the new head is published as the cell is released.
        let old = unsafe {
            let old = Any::from_words(held.head, *self.payload.get());
            *self.payload.get() = payload;
            old
        };
        held.head = head;
        old
    }

    /// Store `value`; the old one is dropped after the lock is released.
    #[inline]
    pub fn set(&self, value: Any) {
        drop(self.replace(value));
    }

    pub fn into_inner(self) -> Any {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: owned, so not held; the words are the stored value's, moved out once.
        unsafe { Any::from_words(this.head.load(Ordering::Relaxed), *this.payload.get()) }
    }
}

impl Drop for AnyCell {
    fn drop(&mut self) {
        // SAFETY: owned, so not held; the stored value is dropped once.
        drop(unsafe { Any::from_words(*self.head.get_mut(), *self.payload.get_mut()) });
    }
}

impl std::fmt::Debug for AnyCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AnyCell").field(&self.get()).finish()
    }
}
