//! The object header: the first 24 bytes of every native object.
//!
//! | offset | field | meaning |
//! |---|---|---|
//! | 0 | `combined_ref_count: u64` | strong count in the low 32 bits, weak count in the high 32 |
//! | 8 | `type_index: i32` | index in the type registry |
//! | 12 | `alloc_tag: u32` | which allocator made the object (0 = builtin, no frontend prefix) |
//! | 16 | `deleter: fn(obj, flags)` | 1 = drop the value, 2 = free the memory, 3 = both |
//!
//! A new object starts at strong 1, weak 1: all strong references together hold one weak
//! reference, so the memory outlives the value while weak references may still read the
//! count. Nothing is ever stored over the count word.

use std::sync::atomic::{fence, AtomicU64, Ordering};

/// Deleter flag: run the value's destructor.
pub const DELETE_VALUE: i32 = 1;
/// Deleter flag: return the memory to the allocator that made it.
pub const DELETE_MEMORY: i32 = 2;
/// Both at once (the common case: no weak references outstanding).
pub const DELETE_BOTH: i32 = DELETE_VALUE | DELETE_MEMORY;

const STRONG_ONE: u64 = 1;
const WEAK_ONE: u64 = 1 << 32;
const STRONG_MASK: u64 = 0xffff_ffff;

/// `deleter(obj, flags)`: see [`DELETE_VALUE`], [`DELETE_MEMORY`].
pub type Deleter = unsafe extern "C" fn(obj: *mut ObjectHeader, flags: i32);

/// The header every native object starts with. `#[repr(C)]`, 24 bytes, align 8.
#[repr(C)]
pub struct ObjectHeader {
    pub combined_ref_count: AtomicU64,
    pub type_index: i32,
    pub alloc_tag: u32,
    pub deleter: Deleter,
}

const _: () = {
    assert!(std::mem::size_of::<ObjectHeader>() == 24);
    assert!(std::mem::align_of::<ObjectHeader>() == 8);
    assert!(std::mem::offset_of!(ObjectHeader, combined_ref_count) == 0);
    assert!(std::mem::offset_of!(ObjectHeader, type_index) == 8);
    assert!(std::mem::offset_of!(ObjectHeader, alloc_tag) == 12);
    assert!(std::mem::offset_of!(ObjectHeader, deleter) == 16);
};

impl ObjectHeader {
    /// The count word of a freshly made object: strong 1, weak 1.
    pub const INITIAL_COUNT: u64 = STRONG_ONE | WEAK_ONE;

    /// Whether one strong reference and nothing else holds this object (no other strong or
    /// weak one): a holder of that reference knows no other code can reach the object, and
    /// none can start to until the holder hands a reference out.
    pub fn held_only_once(&self) -> bool {
        self.combined_ref_count.load(Ordering::Acquire) == Self::INITIAL_COUNT
    }

    /// Strong references right now (a snapshot; racy by nature).
    pub fn strong_count(&self) -> u32 {
        (self.combined_ref_count.load(Ordering::Relaxed) & STRONG_MASK) as u32
    }

    /// Weak references right now, including the one all strong references share.
    pub fn weak_count(&self) -> u32 {
        (self.combined_ref_count.load(Ordering::Relaxed) >> 32) as u32
    }
}

/// Add one strong reference. Relaxed: a new reference can only be made from an existing one,
/// which already keeps the object alive.
///
/// # Safety
/// `obj` points to a live object on which the caller holds a strong reference.
#[inline]
pub unsafe fn inc_ref(obj: *mut ObjectHeader) {
    // SAFETY: the caller guarantees `obj` is live.
    unsafe { (*obj).combined_ref_count.fetch_add(STRONG_ONE, Ordering::Relaxed) };
}

/// Add `n` strong references at once (one atomic operation).
///
/// # Safety
/// As [`inc_ref`].
#[inline]
pub unsafe fn inc_ref_n(obj: *mut ObjectHeader, n: u32) {
    // SAFETY: the caller guarantees `obj` is live.
    unsafe { (*obj).combined_ref_count.fetch_add(n as u64 * STRONG_ONE, Ordering::Relaxed) };
}

/// Drop one strong reference, destroying the value (and maybe the memory) at zero.
///
/// # Safety
/// `obj` points to a live object and the caller gives up one strong reference it owns.
#[inline]
pub unsafe fn dec_ref(obj: *mut ObjectHeader) {
    // SAFETY: the caller owns a strong reference, so the header is readable.
    let old = unsafe { (*obj).combined_ref_count.fetch_sub(STRONG_ONE, Ordering::Release) };
    if old & STRONG_MASK != 1 {
        return;
    }
    // SAFETY: we dropped the last strong reference; see `drop_last_strong`.
    unsafe { drop_last_strong(obj, old) };
}

/// [`dec_ref`] for a reference that is often the object's only one of any kind (a dying
/// wrapper's): when the count word reads strong 1 and no weak reference, no one else can reach
/// the object (every way to it is a counted strong or weak reference), so it is destroyed
/// without the locked decrement. Not [`dec_ref`] itself: the extra load and branch would cost
/// every other release.
///
/// # Safety
/// As [`dec_ref`].
#[inline]
pub unsafe fn dec_ref_expecting_last(obj: *mut ObjectHeader) {
    // SAFETY: the caller owns a strong reference, so the header is readable. The acquire load
    // of the word every earlier release decremented orders their uses before the destruction.
    let count = unsafe { &(*obj).combined_ref_count };
    if count.load(Ordering::Acquire) != STRONG_ONE | WEAK_ONE {
        // SAFETY: the caller's reference, given up once.
        return unsafe { dec_ref(obj) };
    }
    // The word a last decrement leaves (so the destruction sees what it always sees).
    count.store(WEAK_ONE, Ordering::Relaxed);
    // SAFETY: ours was the only reference of any kind: value and memory go together.
    unsafe { ((*obj).deleter)(obj, DELETE_BOTH) };
}

/// Drop `n` strong references at once (one atomic operation), destroying the value at zero.
///
/// # Safety
/// `obj` points to a live object and the caller gives up `n >= 1` strong references it owns.
#[inline]
pub unsafe fn dec_ref_n(obj: *mut ObjectHeader, n: u32) {
    debug_assert!(n >= 1);
    // SAFETY: the caller owns `n` strong references, so the header is readable.
    let old = unsafe { (*obj).combined_ref_count.fetch_sub(n as u64, Ordering::Release) };
    if old & STRONG_MASK != n as u64 {
        return;
    }
    // SAFETY: we dropped the last strong references; `old - (n - 1)` is the word a single
    // decrement of the last one would have seen.
    unsafe { drop_last_strong(obj, old - (n as u64 - 1)) };
}

/// Synchronise with every earlier release decrement of `count` before destroying. A fence,
/// except under ThreadSanitizer (`cargo xtask harden` builds with `--cfg tether_tsan`), which
/// does not model fences and would report every destruction as a race: there an acquire load
/// of the same word does the same job (as std's `Arc` does under TSan).
#[inline(always)]
fn acquire_after_last(count: &AtomicU64) {
    if cfg!(tether_tsan) {
        count.load(Ordering::Acquire);
    } else {
        let _ = count;
        fence(Ordering::Acquire);
    }
}

#[cold]
unsafe fn drop_last_strong(obj: *mut ObjectHeader, old: u64) {
    // SAFETY: the header stays readable: the strong references' shared weak one is still held.
    acquire_after_last(unsafe { &(*obj).combined_ref_count });
    let last = LastStrong { obj, with_memory: old == STRONG_ONE | WEAK_ONE };
    // SAFETY: the last strong reference is gone (this function's contract), given to `destroy` once.
    unsafe { destroy(last) };
}

/// An object whose last strong reference is gone, to destroy: its value, and its memory too
/// when no weak reference remains.
#[derive(Clone, Copy)]
struct LastStrong {
    obj: *mut ObjectHeader,
    with_memory: bool,
}

impl LastStrong {
    /// # Safety
    /// Called once per object, after its last strong reference went.
    unsafe fn run(self) {
        // SAFETY: the value is no longer reachable through a strong reference; the header
        // stays readable because the strong references' shared weak reference is still held.
        let deleter = unsafe { (*self.obj).deleter };
        if self.with_memory {
            // SAFETY: no weak references remain either, so value and memory go together.
            unsafe { deleter(self.obj, DELETE_BOTH) };
        } else {
            // SAFETY: strong count is zero: drop the value, then the collective weak reference.
            unsafe {
                deleter(self.obj, DELETE_VALUE);
                dec_weak(self.obj);
            }
        }
    }
}

/// How deep destructions may nest on one thread before the next ones are put off: a value's
/// drop releases what it holds, so a chain of a million objects, each holding the next, would
/// otherwise take a million nested frames and overflow the stack (`p = Pair(p, None)` in a
/// loop, then `del p`). Put off, they run in a loop in the outermost destruction, before it
/// returns, on the same thread (as CPython's trashcan does for deep containers).
const DESTRUCTION_NESTING: u32 = 64;

thread_local! {
    /// Destructions running on this thread, nested.
    static DESTRUCTION_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// Destructions put off until the outermost one finishes its own.
    static PUT_OFF: std::cell::RefCell<Vec<LastStrong>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Destroy `last` now, or put it off when destructions already nest [`DESTRUCTION_NESTING`]
/// deep on this thread; the outermost destruction runs what was put off.
///
/// # Safety
/// As [`LastStrong::run`].
unsafe fn destroy(last: LastStrong) {
    // A thread whose locals are being torn down destroys in place (nesting as before).
    let Ok(depth) = DESTRUCTION_DEPTH.try_with(|d| d.get()) else {
        // SAFETY: the caller's guarantee.
        return unsafe { last.run() };
    };
    if depth >= DESTRUCTION_NESTING && PUT_OFF.try_with(|p| p.borrow_mut().push(last)).is_ok() {
        return;
    }
    DESTRUCTION_DEPTH.with(|d| d.set(depth + 1));
    // SAFETY: the caller's guarantee.
    unsafe { last.run() };
    if depth == 0 {
        // Each is popped before it runs (no borrow held while a destructor runs). A list
        // already torn down (a thread-local's drop at thread exit) has nothing put off: every
        // push to it failed and ran in place.
        while let Some(next) = PUT_OFF.try_with(|p| p.borrow_mut().pop()).ok().flatten() {
            // SAFETY: put off above, by a caller with the same guarantee; run once.
            unsafe { next.run() };
        }
    }
    DESTRUCTION_DEPTH.with(|d| d.set(depth));
}

/// Add one weak reference.
///
/// # Safety
/// `obj` is live (strong or weak) and the caller holds a reference to it.
#[inline]
pub unsafe fn inc_weak(obj: *mut ObjectHeader) {
    // SAFETY: the caller guarantees `obj`'s memory is live.
    unsafe { (*obj).combined_ref_count.fetch_add(WEAK_ONE, Ordering::Relaxed) };
}

/// Drop one weak reference, freeing the memory when it was the last.
///
/// # Safety
/// The caller owns one weak reference to `obj`.
#[inline]
pub unsafe fn dec_weak(obj: *mut ObjectHeader) {
    // SAFETY: the caller owns a weak reference, so the memory is live.
    let old = unsafe { (*obj).combined_ref_count.fetch_sub(WEAK_ONE, Ordering::Release) };
    if old >> 32 == 1 {
        // SAFETY: the memory is freed only below, after this.
        acquire_after_last(unsafe { &(*obj).combined_ref_count });
        // SAFETY: the last reference of any kind is gone; the value was dropped when strong
        // reached zero (a weak reference never outlives strong ones with a live value unseen).
        unsafe { ((*obj).deleter)(obj, DELETE_MEMORY) };
    }
}

/// Try to turn a weak reference into a strong one; false when the value is gone.
///
/// # Safety
/// The caller holds a weak (or strong) reference to `obj`.
#[inline]
pub unsafe fn try_upgrade(obj: *mut ObjectHeader) -> bool {
    // SAFETY: a held weak reference keeps the header readable.
    let count = unsafe { &(*obj).combined_ref_count };
    let mut cur = count.load(Ordering::Relaxed);
    loop {
        if cur & STRONG_MASK == 0 {
            return false;
        }
        match count.compare_exchange_weak(cur, cur + STRONG_ONE, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(actual) => cur = actual,
        }
    }
}

/// A Rust type that lives inside a native object: it names its registered type.
///
/// Use [`crate::declare_object!`] or implement it by hand: `TYPE_KEY` is the registry key,
/// and `type_index()` resolves (and caches) the index in the process-wide type registry.
pub trait Object: Sized + 'static {
    /// Registry key, e.g. `"testing.Pair"`.
    const TYPE_KEY: &'static str;
    /// This type's index in the type registry (registered on first use if needed).
    fn type_index() -> i32;
    /// This type's depth in its inheritance chain (0 for a direct child of `Object`).
    fn type_depth() -> i32 {
        crate::types::type_info(Self::type_index()).map(|t| t.depth).unwrap_or(0)
    }
}
