//! Python references that native code lets go of, possibly on a thread without the GIL.
//!
//! A native object may die on any thread. When its slot holds a cached wrapper block
//! (Inactive), or when a native function drops the Python callable it wraps, the Python side
//! must be released too. With the GIL (an attached thread on free-threaded builds) that
//! happens at once; otherwise the pointer is queued and released at the next entry into the
//! frontend. Once interpreter finalization starts everything is leaked instead: a dying
//! interpreter must not be touched.

use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::ffi;

/// Something Python-side to release.
#[derive(Clone, Copy, Debug)]
pub enum Release {
    /// A cached wrapper block (memory, and a Python subclass's reference to its class).
    Block(*mut ffi::PyObject),
    /// A strong reference to drop.
    Decref(*mut ffi::PyObject),
}

// SAFETY: the pointers are only dereferenced by `release_now`, which runs with the GIL.
unsafe impl Send for Release {}

/// Cached blocks freed by threads without the GIL: released at the next entry.
static BLOCKS: Mutex<Vec<Release>> = Mutex::new(Vec::new());
/// References to drop: released at the next entry or right after the current native call.
static REFS: Mutex<Vec<Release>> = Mutex::new(Vec::new());
/// References dropped by a thread that holds the GIL (GIL builds only): the GIL is their
/// lock, so queuing one costs no mutex. Released like `REFS`.
static HELD_REFS: GilOnly<Vec<Release>> = GilOnly(UnsafeCell::new(Vec::new()));
/// Set after anything is queued in any of the three; cleared by the drain that takes them.
/// The one flag every native call tests, twice.
static QUEUED: AtomicBool = AtomicBool::new(false);

/// Data that only threads holding the GIL touch, on builds with a GIL.
struct GilOnly<T>(UnsafeCell<T>);

// SAFETY: every access holds the GIL (see the uses), which serialises them; free-threaded
// builds never touch it.
unsafe impl<T> Sync for GilOnly<T> {}
static FINALIZING: AtomicBool = AtomicBool::new(false);

/// True once interpreter shutdown began (our atexit hook ran, or CPython says so).
pub fn finalizing() -> bool {
    // SAFETY: reads a runtime flag; callable from any thread.
    FINALIZING.load(Ordering::Acquire) || unsafe { interpreter_finalizing() } != 0
}

#[cfg(Py_3_13)]
use ffi::Py_IsFinalizing as interpreter_finalizing;

#[cfg(not(Py_3_13))]
extern "C" {
    /// CPython's name for `Py_IsFinalizing` before 3.13.
    #[link_name = "_Py_IsFinalizing"]
    fn interpreter_finalizing() -> std::ffi::c_int;
}

/// Called from Python's atexit: from now on native frees leak Python memory.
pub fn mark_finalizing() {
    FINALIZING.store(true, Ordering::Release);
}

/// True once CPython itself started finalizing (ignores our atexit flag: Python code may
/// still run in later atexit handlers).
pub fn interpreter_is_finalizing() -> bool {
    // SAFETY: reads a runtime flag; callable from any thread.
    unsafe { interpreter_finalizing() != 0 }
}

/// Release `item`: a block at once if this thread holds the GIL; a reference (whose release
/// may run arbitrary Python code, e.g. `__del__`) always at the next safe point, never
/// inside native code that may hold locks. Queued when the thread has no GIL; leaked during
/// shutdown.
pub fn release(item: Release) {
    if finalizing() {
        return;
    }
    // SAFETY: `PyGILState_Check` only inspects thread state; callable from any thread.
    let holds_gil = unsafe { ffi::PyGILState_Check() } == 1;
    if matches!(item, Release::Block(_)) && holds_gil {
        // SAFETY: this thread holds the GIL (is attached).
        unsafe { release_now(item) };
    } else if !cfg!(Py_GIL_DISABLED) && holds_gil {
        // SAFETY: the GIL is held; `HELD_REFS` is only touched with it.
        unsafe { (*HELD_REFS.0.get()).push(item) };
        QUEUED.store(true, Ordering::Release);
    } else {
        let queue = match item {
            Release::Block(_) => &BLOCKS,
            Release::Decref(_) => &REFS,
        };
        queue.lock().unwrap_or_else(|e| e.into_inner()).push(item);
        QUEUED.store(true, Ordering::Release);
    }
}

/// # Safety
/// The GIL is held.
unsafe fn release_now(item: Release) {
    match item {
        // SAFETY: a cached wrapper block that nobody references.
        Release::Block(block) => unsafe { crate::wrapper::free_cached_block(block) },
        // SAFETY: we own this reference.
        Release::Decref(obj) => unsafe { ffi::Py_DECREF(obj) },
    }
}

/// Release everything queued (at an entry into the frontend). One load when nothing is
/// queued.
///
/// # Safety
/// The GIL is held and arbitrary Python code may run here.
#[inline]
pub unsafe fn drain() {
    if QUEUED.load(Ordering::Relaxed) {
        // SAFETY: the caller holds the GIL, which every queue access needs.
        unsafe { drain_queued(true) }
    }
}

/// Drop the references queued inside native code (right after a native call returns, now
/// that no native lock is held). Cached blocks wait for the next entry.
///
/// # Safety
/// As [`drain`].
#[inline]
pub unsafe fn drain_refs() {
    if QUEUED.load(Ordering::Relaxed) {
        // SAFETY: the caller holds the GIL, which every queue access needs.
        unsafe { drain_queued(false) }
    }
}

#[cold]
unsafe fn drain_queued(blocks: bool) {
    // Cleared before the queues are taken: an item queued meanwhile sets it again.
    QUEUED.swap(false, Ordering::AcqRel);
    // Taken out first: a release may run Python code that queues more, or drains again.
    let mut items = std::mem::take(&mut *REFS.lock().unwrap_or_else(|e| e.into_inner()));
    if !cfg!(Py_GIL_DISABLED) {
        // SAFETY: the caller holds the GIL.
        items.append(unsafe { &mut *HELD_REFS.0.get() });
    }
    let mut waiting = BLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    if blocks {
        items.append(&mut waiting);
    } else if !waiting.is_empty() {
        QUEUED.store(true, Ordering::Relaxed); // still there for the next entry
    }
    drop(waiting);
    if finalizing() {
        return;
    }
    for item in items {
        // SAFETY: the caller holds the GIL.
        unsafe { release_now(item) };
    }
}

/// How many releases wait for the next entry (for tests).
///
/// # Safety
/// The GIL is held.
pub unsafe fn queued() -> usize {
    // SAFETY: the caller holds the GIL.
    let held = if cfg!(Py_GIL_DISABLED) { 0 } else { unsafe { (*HELD_REFS.0.get()).len() } };
    held + BLOCKS.lock().unwrap_or_else(|e| e.into_inner()).len() + REFS.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// The frontend allocator's free hook: a native object made by our allocator is being
/// freed; if its slot caches a wrapper block, that block goes too.
///
/// # Safety
/// Called by the core allocator with the slot of an object nobody can reach any more.
pub unsafe extern "C" fn on_native_free(_ctx: *mut c_void, slot: *const AtomicUsize) {
    // SAFETY: the allocator passes the live slot word of the object being freed.
    if let Some(block) = unsafe { tether_core::boundary::cached_block(slot) } {
        // An embedded block goes with the object's memory.
        if block as *mut u8 != tether_core::boundary::Frontend::<crate::wrapper::PyHost>::reserve_of_slot(slot) {
            release(Release::Block(block as *mut ffi::PyObject));
        }
    }
}
