//! The process-wide allocator registry.
//!
//! Every native object is allocated here (Rust objects, containers, errors, functions,
//! plugin and C objects). The builtin allocator (tag 0) is installed statically, so the
//! current allocator is never null. A frontend registers its own allocator once at load
//! (usually [`install_frontend_allocator`], which reserves the tying slot in front of each
//! object) and makes it current. Each object records the tag of the allocator that
//! made it, so objects made earlier keep being freed by their own allocator.
//!
//! An allocator out of memory returns null; [`alloc_object`] then unwinds with
//! [`OutOfMemory`], which the boundary turns into a MemoryError (`testing.fail_allocations`
//! injects such failures into the frontend allocators).

use std::alloc::Layout;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use crate::object::ObjectHeader;
use crate::plugin;
use crate::slot::{AtomicUsize, Reserve, SlotLayout, SlotPrefix};

/// `allocate(ctx, size, align)` returns the object body (where the header goes) or null.
pub type AllocateFn = unsafe extern "C" fn(ctx: *mut c_void, size: usize, align: usize) -> *mut u8;
/// `free(ctx, body, size, align)`: the exact `size`/`align` that were allocated.
pub type FreeFn = unsafe extern "C" fn(ctx: *mut c_void, body: *mut u8, size: usize, align: usize);

/// An allocator a frontend installs. `#[repr(C)]`; see `TetherAllocator` in tether.h.
#[repr(C)]
pub struct CustomAllocator {
    pub allocate: AllocateFn,
    pub free: FreeFn,
    pub ctx: *mut c_void,
    /// Assigned by [`register_allocator`]; written into every object's `alloc_tag`.
    pub tag: u32,
}

// SAFETY: `ctx` is only handed back to the allocator's own functions, which must be callable
// from any thread (that is the contract of registering an allocator).
unsafe impl Sync for CustomAllocator {}
// SAFETY: the reason Send holds is the one above: `ctx` is only handed back to the allocator's own
// functions, which must be callable from any thread (that is the contract of registering an
// allocator).
unsafe impl Send for CustomAllocator {}

const _: () = {
    assert!(std::mem::size_of::<CustomAllocator>() == 32);
    assert!(std::mem::offset_of!(CustomAllocator, allocate) == 0);
    assert!(std::mem::offset_of!(CustomAllocator, free) == 8);
    assert!(std::mem::offset_of!(CustomAllocator, ctx) == 16);
    assert!(std::mem::offset_of!(CustomAllocator, tag) == 24);
};

/// Most allocators a process may register (tags 0..MAX_ALLOCATORS).
pub const MAX_ALLOCATORS: usize = 64;
/// The builtin allocator's tag.
pub const BUILTIN_TAG: u32 = 0;

unsafe extern "C" fn builtin_allocate(_ctx: *mut c_void, size: usize, align: usize) -> *mut u8 {
    match Layout::from_size_align(size.max(1), align) {
        // SAFETY: the layout has non-zero size.
        Ok(layout) => unsafe { std::alloc::alloc(layout) },
        Err(_) => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn builtin_free(_ctx: *mut c_void, body: *mut u8, size: usize, align: usize) {
    // SAFETY: `body` came from `builtin_allocate` with this same size and alignment.
    unsafe { std::alloc::dealloc(body, Layout::from_size_align_unchecked(size.max(1), align)) }
}

static BUILTIN: CustomAllocator =
    CustomAllocator { allocate: builtin_allocate, free: builtin_free, ctx: std::ptr::null_mut(), tag: BUILTIN_TAG };

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: AtomicPtr<CustomAllocator> = AtomicPtr::new(std::ptr::null_mut());
static ALLOCATORS: [AtomicPtr<CustomAllocator>; MAX_ALLOCATORS] = {
    let mut table = [EMPTY; MAX_ALLOCATORS];
    table[0] = AtomicPtr::new(&BUILTIN as *const CustomAllocator as *mut CustomAllocator);
    table
};
static NEXT_TAG: AtomicU32 = AtomicU32::new(1);
static CURRENT_TAG: AtomicU32 = AtomicU32::new(BUILTIN_TAG);
/// Bit `t` set once the allocator of tag `t` is this copy's frontend allocator
/// ([`register_frontend_allocator`]), whose allocation and free run inline here. A tag, not a
/// comparison of entry addresses: function pointers to one function may differ (Miri gives
/// each its own address).
static FRONTEND_TAGS: AtomicU64 = AtomicU64::new(0);

const _: () = assert!(MAX_ALLOCATORS <= 64, "FRONTEND_TAGS has a bit per tag");

/// Is the allocator of `tag` this copy's frontend allocator (`ctx` a [`FrontendCtx`])?
#[inline(always)]
fn is_frontend(tag: u32) -> bool {
    tag < MAX_ALLOCATORS as u32 && FRONTEND_TAGS.load(Ordering::Relaxed) & (1 << tag) != 0
}

/// Register an allocator; returns its tag. It is not current until [`set_current_allocator`].
///
/// # Safety
/// `allocate`/`free` follow the allocator contract (docs/abi.md): callable from any thread
/// with `ctx`, `free` receives exactly what `allocate` returned with the same size and
/// alignment, and `ctx` stays valid for the rest of the process.
pub unsafe fn register_allocator(allocate: AllocateFn, free: FreeFn, ctx: *mut c_void) -> crate::Result<u32> {
    if let Some(api) = plugin::host_api() {
        let mut tag = 0u32;
        // SAFETY: the host's table entry follows the signature declared in `plugin::ApiTable`.
        let rc = unsafe { (api.register_allocator)(allocate, free, ctx, &mut tag) };
        return if rc == 0 { Ok(tag) } else { Err(crate::error::take_last_error()) };
    }
    let tag = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
    if tag as usize >= MAX_ALLOCATORS {
        return Err(crate::Error::runtime(format!("at most {MAX_ALLOCATORS} allocators may be registered")));
    }
    let entry = Box::leak(Box::new(CustomAllocator { allocate, free, ctx, tag }));
    ALLOCATORS[tag as usize].store(entry, Ordering::Release);
    Ok(tag)
}

/// Make `tag` the allocator for every object allocated from now on.
pub fn set_current_allocator(tag: u32) -> crate::Result<()> {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry, see `plugin::ApiTable`.
        return match unsafe { (api.set_current_allocator)(tag) } {
            0 => Ok(()),
            _ => Err(crate::error::take_last_error()),
        };
    }
    if allocator(tag).is_none() {
        return Err(crate::Error::value(format!("no allocator is registered with tag {tag}")));
    }
    CURRENT_TAG.store(tag, Ordering::Release);
    Ok(())
}

/// The current allocator's tag. Never refers to a missing allocator.
pub fn current_allocator_tag() -> u32 {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry, see `plugin::ApiTable`.
        return unsafe { (api.current_allocator_tag)() };
    }
    CURRENT_TAG.load(Ordering::Acquire)
}

/// The allocator registered under `tag`.
pub fn allocator(tag: u32) -> Option<&'static CustomAllocator> {
    let ptr = ALLOCATORS.get(tag as usize)?.load(Ordering::Acquire);
    // SAFETY: entries are leaked `'static` allocators and never removed.
    unsafe { ptr.as_ref() }
}

/// Objects allocated through the registry and not yet freed (process-wide).
pub fn live_objects() -> i64 {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry, see `plugin::ApiTable`.
        return unsafe { (api.live_objects)() };
    }
    crate::thread_alloc::total()
}

/// Allocate the memory of one object with the current allocator and stamp `alloc_tag`.
/// The rest of the header is the caller's to initialise. When the allocator has no memory,
/// this unwinds with an [`OutOfMemory`] payload, which every `catch_panic` turns into the
/// MemoryError ([`crate::error::out_of_memory`]); [`try_alloc_object`] returns it instead.
pub fn alloc_object(size: usize, align: usize) -> *mut ObjectHeader {
    match try_alloc_object(size, align) {
        Some(obj) => obj,
        None => raise_out_of_memory(size, align),
    }
}

/// [`alloc_object`], or None when the allocator has no memory.
pub fn try_alloc_object(size: usize, align: usize) -> Option<*mut ObjectHeader> {
    debug_assert!(size >= std::mem::size_of::<ObjectHeader>() && align >= 8 && align.is_power_of_two());
    // A construct-and-drop loop's allocation takes the block its last free kept, with no call
    // on the way, so this function saves no registers for it (the long way, with calls, saved
    // all six before: W4 12 instructions a construction); everything else goes the long way.
    if let Some(obj) = kept_object(size, align) {
        return Some(obj);
    }
    alloc_object_long_way(size, align)
}

/// [`try_alloc_object`] of anything [`kept_object`] does not take: through the host's table
/// in a plugin, else with the current allocator.
#[inline(never)]
fn alloc_object_long_way(size: usize, align: usize) -> Option<*mut ObjectHeader> {
    let obj = if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry, see `plugin::ApiTable`.
        unsafe { (api.alloc_object)(size, align) }
    } else {
        local_alloc_object(size, align)
    };
    (!obj.is_null()).then_some(obj)
}

/// The panic payload of a failed object allocation (raised with `resume_unwind`: no panic
/// hook, no message, no backtrace). `catch_panic` and the frontends' own guards turn it into
/// the MemoryError; an allocation outside any of them still ends the process, as
/// `handle_alloc_error` would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfMemory {
    pub size: usize,
    pub align: usize,
}

#[cold]
#[inline(never)]
pub fn raise_out_of_memory(size: usize, align: usize) -> ! {
    std::panic::resume_unwind(Box::new(OutOfMemory { size, align }))
}

/// A new object's memory from the block the calling thread kept for this layout
/// ([`crate::thread_alloc`]), when the current allocator is a frontend allocator of this
/// process and the thread's cell is the first of its probe run; `None`, having done nothing,
/// otherwise (and while injected failures are pending). No call on the way.
#[inline(always)]
fn kept_object(size: usize, align: usize) -> Option<*mut ObjectHeader> {
    if !KEEP_FREED_BLOCKS || plugin::host_api().is_some() || FAIL_ALLOCATIONS.load(Ordering::Relaxed) > 0 {
        return None;
    }
    let tag = CURRENT_TAG.load(Ordering::Acquire);
    let a = allocator(tag)?;
    if !is_frontend(tag) {
        return None;
    }
    kept_object_of(a, tag, crate::thread_alloc::own_at_first_probe()?, size, align)
}

/// [`kept_object`] of frontend allocator `a` (of tag `tag`) for the thread of cell `own`.
#[inline(always)]
fn kept_object_of(
    a: &CustomAllocator,
    tag: u32,
    own: crate::thread_alloc::Own,
    size: usize,
    align: usize,
) -> Option<*mut ObjectHeader> {
    debug_assert!(is_frontend(tag) && a.tag == tag);
    // SAFETY: a frontend allocator's `ctx` is its leaked `FrontendCtx`.
    let ctx = unsafe { &*(a.ctx as *const FrontendCtx) };
    let offset = round_up_to_align(ctx.prefix, align);
    // No `Layout` check: a kept block's layout is valid, and one that is not kept is left.
    let raw = own.take_block(size.checked_add(offset)?, align.max(8));
    if raw.is_null() {
        return None;
    }
    own.add(1);
    // SAFETY: `raw` is a block of this layout the caller now owns, `offset` from `ctx` and
    // `align`, so the body is fresh memory of at least a header's size, aligned to 8. (The
    // tag first: the prefix's writes end the path, with nothing but the body live across
    // them.)
    unsafe {
        std::ptr::addr_of_mut!((*(raw.add(offset) as *mut ObjectHeader)).alloc_tag).write(tag);
        Some(ctx.init_prefix(raw, offset) as *mut ObjectHeader)
    }
}

/// The object memory of this process's allocator, or null when it has none. Inline in
/// [`alloc_object_long_way`], which keeps one frame for the whole allocation.
#[inline(always)]
pub(crate) fn local_alloc_object(size: usize, align: usize) -> *mut ObjectHeader {
    let tag = CURRENT_TAG.load(Ordering::Acquire);
    let a = allocator(tag).expect("current allocator is registered");
    let own = crate::thread_alloc::own();
    // A frontend allocator (every language's) runs inline with the thread's cell found here;
    // any other through its entry. SAFETY: the allocator's contract: returns memory for
    // `size` bytes at `align`, or null; a frontend allocator's `ctx` is its `FrontendCtx`.
    let body = unsafe {
        if is_frontend(tag) {
            frontend_allocate_in(own, a.ctx, size, align)
        } else {
            (a.allocate)(a.ctx, size, align)
        }
    } as *mut ObjectHeader;
    if body.is_null() {
        return body;
    }
    // SAFETY: `body` is fresh memory of at least a header's size, aligned to 8.
    unsafe { std::ptr::addr_of_mut!((*body).alloc_tag).write(tag) };
    own.add(1);
    body
}

// ---- injected allocation failures (testing.fail_allocations) ------------------------------

/// How many frontend allocations fail (`testing.fail_allocations`), once [`FAIL_AFTER`] more
/// have succeeded. Tested with one relaxed load per allocation; only a test sets it.
static FAIL_ALLOCATIONS: AtomicI64 = AtomicI64::new(0);
/// Allocations that still succeed before the injected failures start.
static FAIL_AFTER: AtomicI64 = AtomicI64::new(0);

/// Make `n` allocations of every frontend allocator fail (return null, as an allocator out of
/// memory does) once the next `after` have succeeded, so a failure can land part way through
/// an operation; returns how many earlier injected failures were still pending.
/// `fail_allocations(0, 0)` cancels them.
pub fn fail_allocations(n: i64, after: i64) -> i64 {
    FAIL_AFTER.store(after.max(0), Ordering::Relaxed);
    FAIL_ALLOCATIONS.swap(n.max(0), Ordering::Relaxed)
}

/// Consume one injected failure, if one is due.
#[inline]
fn injected_failure() -> bool {
    FAIL_ALLOCATIONS.load(Ordering::Relaxed) > 0 && take_injected_failure()
}

#[cold]
fn take_injected_failure() -> bool {
    if FAIL_AFTER.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |k| (k > 0).then(|| k - 1)).is_ok() {
        return false;
    }
    FAIL_ALLOCATIONS.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n > 0).then(|| n - 1)).is_ok()
}

/// Return an object's memory to the allocator named by its `alloc_tag`.
///
/// # Safety
/// `obj` was made by [`alloc_object`] with exactly `size`/`align`, its value is dropped and no
/// reference to it remains.
pub unsafe fn free_object(obj: *mut ObjectHeader, size: usize, align: usize) {
    // The free of a construct-and-drop loop, inline with no call but the allocator's hook
    // (the long way's calls had it save every register: W4 9 instructions a free).
    if plugin::host_api().is_none() {
        if let Some(own) = crate::thread_alloc::own_at_first_probe() {
            // SAFETY: this function's contract; `own` is this thread's.
            if unsafe { free_frontend_object(own, obj, size, align, KEEP_FREED_BLOCKS) } {
                return;
            }
        }
    }
    // SAFETY: this function's contract.
    unsafe { free_object_long_way(obj, size, align) }
}

/// [`free_object`] of anything its inline path does not take: through the host's table in a
/// plugin, else with the object's allocator.
///
/// # Safety
/// As [`free_object`].
#[inline(never)]
unsafe fn free_object_long_way(obj: *mut ObjectHeader, size: usize, align: usize) {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry; the caller's guarantees carry over.
        unsafe { (api.free_object)(obj, size, align) };
        return;
    }
    // SAFETY: `obj` came from this process's `alloc_object` with this size and alignment and
    // is freed once (this function's contract).
    unsafe { local_free_object(obj, size, align) }
}

/// Free `obj` if this copy's frontend allocator made it (`false`, having done nothing, if
/// another did), with the calling thread's cell `own`; its block is kept for the thread's
/// next allocation of that layout (`keep`: [`KEEP_FREED_BLOCKS`]; see [`kept_object`]).
///
/// # Safety
/// As [`free_object`]; `own` is the calling thread's.
#[inline(always)]
unsafe fn free_frontend_object(
    own: crate::thread_alloc::Own,
    obj: *mut ObjectHeader,
    size: usize,
    align: usize,
    keep: bool,
) -> bool {
    // SAFETY: the header is readable until the memory goes back (the caller's guarantee).
    let tag = unsafe { (*obj).alloc_tag };
    let Some(a) = allocator(tag) else { return false };
    if !is_frontend(tag) {
        return false;
    }
    own.add(-1);
    // SAFETY: the caller's guarantee; `a` is a frontend allocator.
    unsafe { frontend_free_in(own, a.ctx, obj as *mut u8, size, align, keep) };
    true
}

/// Inline in [`free_object_long_way`], as [`local_alloc_object`] is in its caller.
///
/// # Safety
/// See [`free_object`].
#[inline(always)]
pub(crate) unsafe fn local_free_object(obj: *mut ObjectHeader, size: usize, align: usize) {
    let own = crate::thread_alloc::own();
    // SAFETY: `obj` came from this process's `alloc_object` (the caller's guarantee); a
    // frontend allocator's inline, as in `local_alloc_object`.
    if unsafe { free_frontend_object(own, obj, size, align, KEEP_FREED_BLOCKS) } {
        return;
    }
    // SAFETY: the header is still readable until the memory goes back.
    let tag = unsafe { (*obj).alloc_tag };
    let a = allocator(tag).expect("object carries the tag of a registered allocator");
    own.add(-1);
    // SAFETY: same allocator, size and alignment as the allocation.
    unsafe { (a.free)(a.ctx, obj as *mut u8, size, align) }
}

// ---- the frontend allocator: a tying slot in front of each object -------------------------

/// Called when an object made by a frontend allocator is freed, with its slot word, before
/// the memory goes back (a frontend frees a cached wrapper block there: docs/architecture.md, Tying).
pub type SlotFreeHook = unsafe extern "C" fn(ctx: *mut c_void, slot: *const AtomicUsize);

struct FrontendCtx {
    layout: SlotLayout,
    /// The bytes kept for the host ([`crate::tying::TieHost::RESERVE`]).
    reserve: Reserve,
    /// Where the slot and the reserve start, in bytes before the body, and the prefix's
    /// size: the layout's choices as plain numbers, worked out once at registration.
    slot_back: usize,
    reserve_back: usize,
    prefix: usize,
    on_free: Option<SlotFreeHook>,
    hook_ctx: *mut c_void,
}

impl FrontendCtx {
    fn new(layout: SlotLayout, reserve: Reserve, on_free: Option<SlotFreeHook>, hook_ctx: *mut c_void) -> Self {
        let slot_back = layout.size() + reserve.gap();
        let reserve_back = match reserve {
            Reserve::AfterSlot(bytes) => bytes,
            Reserve::BeforeSlot(bytes) => layout.size() + bytes,
        };
        let prefix = layout.size() + reserve.bytes();
        FrontendCtx { layout, reserve, slot_back, reserve_back, prefix, on_free, hook_ctx }
    }
}

/// Bytes between the start of the allocation and the object body for an alignment, a slot
/// layout and the bytes of the host's reserve (a multiple of 8, on either side of the slot). Both sides use this
/// one function, so allocate and free always agree (tvm-ffi once did not).
///
/// `align` is a power of two (every `Layout`'s is; an allocation asked with another fails in
/// `Layout::from_size_align`), so the round-up is a mask: the division it replaces took ~12
/// cycles on every allocation and free of a tied object (its result feeds the size, so the
/// allocator waited for it). Below 8 it counts as 8, the slot's own alignment.
#[inline]
pub const fn prefix_offset(align: usize, layout: SlotLayout, reserve: usize) -> usize {
    round_up_to_align(layout.size() + reserve, align)
}

/// `prefix` bytes rounded up to `align` (a power of two; below 8 it counts as 8).
#[inline]
const fn round_up_to_align(prefix: usize, align: usize) -> usize {
    let mask = if align < 8 { 7 } else { align - 1 };
    (prefix + mask) & !mask
}

/// The frontend allocator's entry (`CustomAllocator::allocate`).
unsafe extern "C" fn frontend_allocate(ctx: *mut c_void, size: usize, align: usize) -> *mut u8 {
    // SAFETY: the entry's contract, passed on.
    unsafe { frontend_allocate_in(crate::thread_alloc::own(), ctx, size, align) }
}

/// [`frontend_allocate`] with the calling thread's cell `own` (its kept block).
///
/// # Safety
/// `ctx` is a frontend allocator's `FrontendCtx`; `own` is the calling thread's.
#[inline(always)]
unsafe fn frontend_allocate_in(own: crate::thread_alloc::Own, ctx: *mut c_void, size: usize, align: usize) -> *mut u8 {
    if injected_failure() {
        return std::ptr::null_mut();
    }
    // SAFETY: `ctx` is the leaked `FrontendCtx` passed at registration.
    let ctx = unsafe { &*(ctx as *const FrontendCtx) };
    let offset = round_up_to_align(ctx.prefix, align);
    let Ok(mem) = Layout::from_size_align(size + offset, align.max(8)) else {
        return std::ptr::null_mut();
    };
    // SAFETY: non-zero size.
    let raw = unsafe { block_alloc(own, mem, KEEP_FREED_BLOCKS) };
    if raw.is_null() {
        return raw;
    }
    // SAFETY: a block of `mem`, `offset` from this context's prefix and `align`.
    unsafe { ctx.init_prefix(raw, offset) }
}

impl FrontendCtx {
    /// The body of an object in the new block `raw`, `offset` bytes in: its slot initialised
    /// and its reserve zeroed, where every reader looks for them (`SlotLayout::word_of`,
    /// `reserve_at`).
    ///
    /// # Safety
    /// `raw` is a block the caller owns of at least `offset` bytes and a header more, and
    /// `offset` is `round_up_to_align(self.prefix, align)` for the object's alignment.
    #[inline(always)]
    unsafe fn init_prefix(&self, raw: *mut u8, offset: usize) -> *mut u8 {
        let FrontendCtx { layout, reserve, slot_back, reserve_back, prefix, .. } = *self;
        // SAFETY: `offset >= layout.size() + reserve.bytes()` leaves room for the slot and
        // the reserve in front of the body, in either order; both are 8-aligned (offset,
        // the alignment and the reserve are multiples of 8).
        unsafe {
            let body = raw.add(offset);
            let slot = body.sub(slot_back);
            match layout {
                SlotLayout::Full => (slot as *mut SlotPrefix).write(SlotPrefix::new()),
                SlotLayout::WordOnly => (slot as *mut AtomicUsize).write(AtomicUsize::new(0)),
            }
            zero_reserve(body.sub(reserve_back), prefix - layout.size());
            debug_assert_eq!(slot as *mut AtomicUsize, layout.word_of(body as *mut ObjectHeader, reserve));
            debug_assert!(
                reserve.bytes() == 0 || body.sub(reserve_back) == layout.reserve_at(slot as *mut AtomicUsize, reserve)
            );
            body
        }
    }
}

/// Zero a host's reserve of `bytes` (a multiple of 8) at the 8-aligned `start`. A reserve is a
/// few words (CPython's wrapper head: 16 bytes, Node's box: 48), which word stores zero in place, where
/// `write_bytes` of a length known only at run time was a `memset` call per allocation.
///
/// # Safety
/// `start..start + bytes` is writable and 8-aligned.
#[inline(always)]
unsafe fn zero_reserve(start: *mut u8, bytes: usize) {
    // SAFETY: the caller's guarantee; each arm writes exactly `bytes` bytes.
    unsafe {
        match bytes / 8 {
            0 => {}
            1 => start.cast::<[u64; 1]>().write([0; 1]),
            2 => start.cast::<[u64; 2]>().write([0; 2]),
            3 => start.cast::<[u64; 3]>().write([0; 3]),
            4 => start.cast::<[u64; 4]>().write([0; 4]),
            5 => start.cast::<[u64; 5]>().write([0; 5]),
            6 => start.cast::<[u64; 6]>().write([0; 6]),
            // SAFETY: `start..start + bytes` is writable (the caller's guarantee).
            _ => zero_bytes(start, bytes),
        }
    }
}

/// [`zero_reserve`] of a reserve of more than six words, which no frontend has: out of line,
/// so that the allocation paths that inline `zero_reserve` make no call for it.
///
/// # Safety
/// As [`zero_reserve`].
#[cold]
#[inline(never)]
unsafe fn zero_bytes(start: *mut u8, bytes: usize) {
    // SAFETY: the caller's guarantee.
    unsafe { std::ptr::write_bytes(start, 0, bytes) }
}

/// The frontend allocator's entry (`CustomAllocator::free`).
unsafe extern "C" fn frontend_free(ctx: *mut c_void, body: *mut u8, size: usize, align: usize) {
    // SAFETY: the entry's contract, passed on.
    unsafe { frontend_free_in(crate::thread_alloc::own(), ctx, body, size, align, KEEP_FREED_BLOCKS) }
}

/// [`frontend_free`] with the calling thread's cell `own`, where the block is kept (`keep`:
/// [`KEEP_FREED_BLOCKS`], a parameter so that the tests keep blocks in every build).
///
/// # Safety
/// `ctx` is a frontend allocator's `FrontendCtx` and `body` an object it allocated with
/// `size` and `align`, given up; `own` is the calling thread's.
#[inline(always)]
unsafe fn frontend_free_in(
    own: crate::thread_alloc::Own,
    ctx: *mut c_void,
    body: *mut u8,
    size: usize,
    align: usize,
    keep: bool,
) {
    // SAFETY: `ctx` is the leaked `FrontendCtx` passed at registration.
    let fctx = unsafe { &*(ctx as *const FrontendCtx) };
    if let Some(hook) = fctx.on_free {
        // SAFETY: the slot word is in bounds and nobody else can reach the object any more.
        unsafe { hook(fctx.hook_ctx, body.sub(fctx.slot_back) as *const AtomicUsize) };
    }
    let offset = round_up_to_align(fctx.prefix, align);
    // SAFETY: the exact layout `frontend_allocate` used for this size and alignment.
    unsafe { block_free(own, body.sub(offset), Layout::from_size_align_unchecked(size + offset, align.max(8)), keep) }
}

/// Whether the frontend allocator keeps each thread's last freed block for its next
/// allocation of that layout (`thread_alloc`): in release builds. Debug builds, which the
/// sanitizers and valgrind run, free every block at once, so they see any use after a free.
const KEEP_FREED_BLOCKS: bool = !cfg!(debug_assertions);

/// A block of `mem` from the global allocator, or this thread's kept one of that layout
/// (`keep`: [`KEEP_FREED_BLOCKS`], a parameter so that the tests run the kept path in every build).
///
/// # Safety
/// `mem` has a non-zero size.
#[inline(always)]
unsafe fn block_alloc(own: crate::thread_alloc::Own, mem: Layout, keep: bool) -> *mut u8 {
    if keep && mem.size() <= crate::thread_alloc::MAX_KEPT_BLOCK {
        let kept = own.take_block(mem.size(), mem.align());
        if !kept.is_null() {
            return kept;
        }
    }
    // SAFETY: non-zero size (the caller's guarantee).
    unsafe { std::alloc::alloc(mem) }
}

/// Give back a block [`block_alloc`] returned for `mem`: kept for this thread's next allocation
/// of that layout (`keep`), the block kept before freed instead; else freed.
///
/// # Safety
/// `raw` came from [`block_alloc`] with `mem`, and the caller gives it up.
#[inline(always)]
unsafe fn block_free(own: crate::thread_alloc::Own, raw: *mut u8, mem: Layout, keep: bool) {
    let to_free = if keep && mem.size() <= crate::thread_alloc::MAX_KEPT_BLOCK {
        // SAFETY: a global-allocator block of `mem`, given up (the caller's guarantee).
        unsafe { own.keep_block(raw, mem) }
    } else {
        Some((raw, mem))
    };
    if let Some((block, layout)) = to_free {
        // SAFETY: a block of the global allocator with this layout, given up.
        unsafe { std::alloc::dealloc(block, layout) };
    }
}

/// Register an allocator that puts a tying slot of `layout` in front of every object, and
/// `reserve` for the host beside it (a wrapper kept there is read with the slot as one run
/// of bytes), and make it current. Returns its tag:
/// objects whose `alloc_tag` equals it carry the slot. `layout` and `reserve` must be the ones
/// of the host that ties these objects ([`crate::tying::TieHost::LAYOUT`] and
/// [`crate::tying::TieHost::RESERVE`]).
pub fn install_frontend_allocator(
    layout: SlotLayout,
    reserve: Reserve,
    on_free: Option<SlotFreeHook>,
    hook_ctx: *mut c_void,
) -> crate::Result<u32> {
    if reserve.bytes() % 8 != 0 {
        return Err(crate::Error::value(format!(
            "a frontend allocator's reserve must be a multiple of 8, not {}",
            reserve.bytes()
        )));
    }
    let tag = register_frontend_allocator(FrontendCtx::new(layout, reserve, on_free, hook_ctx))?;
    set_current_allocator(tag)?;
    Ok(tag)
}

/// Register a frontend allocator of context `ctx` (leaked); returns its tag.
fn register_frontend_allocator(ctx: FrontendCtx) -> crate::Result<u32> {
    let ctx = Box::leak(Box::new(ctx)) as *mut FrontendCtx as *mut c_void;
    // SAFETY: the frontend allocator functions follow the contract; `ctx` is leaked.
    let tag = unsafe { register_allocator(frontend_allocate, frontend_free, ctx) }?;
    if plugin::host_api().is_none() {
        // After the entry is published: a reader that sees the bit finds the allocator.
        FRONTEND_TAGS.fetch_or(1 << tag, Ordering::Release);
    }
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_block_comes_back_for_the_same_layout_only() {
        let mem = Layout::from_size_align(96, 8).unwrap();
        let other = Layout::from_size_align(104, 8).unwrap();
        let own = crate::thread_alloc::own();
        // SAFETY: non-zero sizes; every block is given up once, to `block_free`.
        unsafe {
            let a = block_alloc(own, mem, true);
            block_free(own, a, mem, true);
            assert_eq!(block_alloc(own, mem, true), a, "the kept block, for the same layout");
            let b = block_alloc(own, other, true);
            assert_ne!(b, a);
            block_free(own, a, mem, true);
            let e = block_alloc(own, other, true);
            assert!(e != a, "another layout does not get it");
            block_free(own, e, other, false);
            block_free(own, b, other, true); // kept in place of `a`, which is freed
            assert_eq!(block_alloc(own, other, true), b, "the newest freed block is the one kept");
            block_free(own, b, other, true);
            // Not kept: a block too large, or `keep` off.
            let big = Layout::from_size_align(crate::thread_alloc::MAX_KEPT_BLOCK + 8, 8).unwrap();
            let c = block_alloc(own, big, true);
            block_free(own, c, big, true);
            let d = block_alloc(own, mem, false);
            block_free(own, d, mem, false);
        }
    }

    /// The fast paths of `free_object` and `try_alloc_object` (release builds only, so called
    /// here directly): a freed object's block, its hook run, comes back to the next
    /// allocation of its layout with its slot and reserve fresh and its allocator's tag.
    #[test]
    fn a_freed_object_s_block_comes_back_fresh_to_the_next_object_of_its_layout() {
        static HOOKED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        unsafe extern "C" fn on_free(_ctx: *mut c_void, _slot: *const AtomicUsize) {
            HOOKED.fetch_add(1, Ordering::Relaxed);
        }
        let reserve = Reserve::AfterSlot(16);
        // Not made current: the other tests of this binary allocate meanwhile.
        let tag = register_frontend_allocator(FrontendCtx::new(
            SlotLayout::WordOnly,
            reserve,
            Some(on_free),
            std::ptr::null_mut(),
        ))
        .unwrap();
        let a = allocator(tag).unwrap();
        let ctx_ptr = a.ctx;
        let own = crate::thread_alloc::own();
        assert!(!own.keeps_block(), "a new thread's cell keeps nothing");
        let (size, align) = (48, 8);
        // SAFETY: objects of this allocator with this size and alignment, each freed once; the
        // reserve and the slot are in front of the body (`init_prefix`).
        unsafe {
            let body = frontend_allocate(ctx_ptr, size, align) as *mut ObjectHeader;
            (*body).alloc_tag = tag;
            own.add(1); // as `local_alloc_object` counts it
            let slot = SlotLayout::WordOnly.word_of(body, reserve);
            let reserve_at = SlotLayout::WordOnly.reserve_at(slot, reserve) as *mut u64;
            (*slot).store(0x7e7e, Ordering::Relaxed);
            reserve_at.write(0x5a5a);
            reserve_at.add(1).write(0x5a5a);
            let hooked = HOOKED.load(Ordering::Relaxed);
            assert!(free_frontend_object(own, body, size, align, true), "freed by its allocator");
            assert_eq!(HOOKED.load(Ordering::Relaxed), hooked + 1, "the hook ran");
            assert!(own.keeps_block(), "its block kept");
            assert!(kept_object_of(a, tag, own, size + 8, align).is_none(), "another layout does not get it");
            let again = kept_object_of(a, tag, own, size, align).expect("the kept block");
            assert_eq!(again, body, "the same memory");
            assert_eq!((*again).alloc_tag, tag);
            assert_eq!((*slot).load(Ordering::Relaxed), 0, "a fresh slot");
            assert_eq!((reserve_at.read(), reserve_at.add(1).read()), (0, 0), "a zeroed reserve");
            assert!(!own.keeps_block(), "taken");
            assert!(kept_object_of(a, tag, own, size, align).is_none(), "nothing kept now");
            // Another allocator's object is not freed here.
            let builtin = builtin_allocate(std::ptr::null_mut(), size, align) as *mut ObjectHeader;
            (*builtin).alloc_tag = BUILTIN_TAG;
            assert!(!free_frontend_object(own, builtin, size, align, true));
            builtin_free(std::ptr::null_mut(), builtin as *mut u8, size, align);
            assert!(free_frontend_object(own, again, size, align, true));
            assert_eq!(HOOKED.load(Ordering::Relaxed), hooked + 2);
            assert_eq!(kept_object_of(a, tag, own, size, align), Some(again), "kept again");
            assert!(free_frontend_object(own, again, size, align, false), "freed, not kept");
            assert!(kept_object_of(a, tag, own, size, align).is_none());
        }
    }
}
