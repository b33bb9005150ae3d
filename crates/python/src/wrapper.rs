//! The wrapper objects: a hand-built base type `tether_ffi.Object` with its own
//! tp_alloc/tp_free/tp_dealloc, and the adapter of the core tying state machine to CPython.
//!
//! Layout of every wrapper: `PyObject_HEAD` and its native word, the object it owns (+1)
//! (24 bytes; a class declared weak-referenceable adds CPython's weak-reference list). A
//! wrapper is untied in its own dealloc, while its memory still exists, so it names itself to
//! the core by address (`PyHost` is a word-only host: 8 bytes of slot in front of each native
//! object, no generation). When a wrapper dies while its native object lives, its memory
//! block stays in the object's slot (Inactive) and the next return of that object
//! re-initialises the block in place, so `id()` is stable.
//!
//! The frontend allocator reserves a wrapper head's 16 bytes in front of each object's slot
//! (`TieHost::RESERVE`), so an object and its first wrapper are one allocation: a generated
//! class's wrapper lives there (its "embedded" block), its last word is the object's slot
//! word ([`NativeWord`]), and it goes with the object's memory. A two-field object is one
//! 64-byte block, on one cache line. Wrappers of other sizes (Functions, weak-referenceable
//! classes), Python subclasses' instances and objects of other allocators use blocks of their
//! own. An embedded wrapper that `_move()` empties outlives its object's value: it holds
//! a weak reference to the object (the memory) until it dies ([`MOVED_EMBEDDED`]).

use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use tether_core::arc::ObjectRef;
use tether_core::boundary::{ClaimMode, Previous, Reserve, Returned, TieHost, TAG_INACTIVE};
use tether_core::object::ObjectHeader;
use tether_core::{AnyView, Error};

use crate::errors::PyErrSet;
use crate::{callback, classes, errors, pending, state};

/// The memory of every wrapper: `PyObject_HEAD` and the [`NativeWord`]. A class declared
/// weak-referenceable adds CPython's weak-reference list after it (`classes::build`).
#[repr(C)]
pub struct Wrapper {
    pub ob_base: ffi::PyObject,
    /// The native object (owned +1); in a wrapper that lives in its object's memory, the
    /// object's slot word itself.
    pub native: NativeWord,
}

const _: () = {
    let head = std::mem::size_of::<ffi::PyObject>();
    assert!(std::mem::size_of::<Wrapper>() == head + 8 && std::mem::offset_of!(Wrapper, native) == head);
};

/// A wrapper's last word, read as one of two things:
///
/// - In a wrapper of its own block, the *native word*: the object's address; in bits 0-1 the
///   tag [`NATIVE_TAG`]; in bit 2, whether this frontend's allocator made the object (it has
///   the prefix slot); and the object's type index in the 16 bits above the address when both
///   fit (0 there otherwise: user-space addresses stay below 2^48 on the 64-bit targets CPython
///   runs on, unless a mapping asks for more, and type indices below 2^16 in any real registry).
///   0 when the object was moved out (`_move()`) or not made yet (a Python subclass's instance
///   before the base `__init__`).
/// - In a wrapper that lives in its object's memory (the allocator's reserve in front of the
///   slot: block = wrapper head, slot, header, body), the object's *slot word*: while the slot
///   is Active and names this wrapper, the object is the header right after it. A slot word's
///   low bits are never [`NATIVE_TAG`] (Active 00, Locked 01, Inactive 10). Any other slot word
///   (Detached after `_move()`, or naming a newer wrapper) reads as moved out.
///
/// So a two-field object and its wrapper are one 64-byte block (head 16, slot 8, header 24,
/// two cells 16), which mimalloc aligns to a cache line: an `echo(o)` or `o.first` of an object
/// nothing has touched lately waits for one line, as pyo3's own 64-byte objects do.
#[repr(transparent)]
pub struct NativeWord(AtomicPtr<ObjectHeader>);

/// Where a native word's type index starts.
const TYPE_SHIFT: u32 = 48;
/// The low bits of every native word (never a slot word's).
const NATIVE_TAG: usize = 0b11;
/// The bit that says the object has this frontend's prefix slot (headers are 8-aligned).
const PREFIXED: usize = 0b100;
const ADDRESS_MASK: usize = ((1 << TYPE_SHIFT) - 1) & !(NATIVE_TAG | PREFIXED);
// The word holds an address, three bits below it and 16 bits above it: 64-bit pointers, and
// headers aligned past the bits.
const _: () = assert!(usize::BITS == 64 && std::mem::align_of::<ObjectHeader>() > (NATIVE_TAG | PREFIXED));
// A slot word's tags, which a native word's must differ from in every state.
const _: () = assert!(
    tether_core::slot::TAG_LOCKED | tether_core::slot::TAG_INACTIVE == NATIVE_TAG
        && tether_core::slot::TAG_LOCKED != NATIVE_TAG
        && tether_core::slot::TAG_INACTIVE != NATIVE_TAG
);

/// A wrapper's native object as its [`NativeWord`] gives it.
pub struct Native<'a> {
    /// A borrowed view of the object.
    pub view: AnyView<'a>,
    /// This frontend's allocator made the object.
    pub prefixed: bool,
}

impl NativeWord {
    /// The object whose slot this word is, when it is the slot word of this wrapper's object
    /// and names this wrapper (the wrapper lives in its object's memory).
    #[inline(always)]
    fn in_memory_object(&self, bits: usize) -> Option<*mut ObjectHeader> {
        let this = self as *const NativeWord as *mut u8;
        let wrapper = this.wrapping_sub(std::mem::size_of::<ffi::PyObject>());
        let named = tether_core::slot::SlotState::active_naming(bits, wrapper as usize, PyHost::SERIALIZED).is_some();
        // The header follows the slot word (the allocator's `Reserve::BeforeSlot` layout).
        named.then(|| this.wrapping_add(std::mem::size_of::<NativeWord>()) as *mut ObjectHeader)
    }

    /// The object a native word names (None for any other word: a slot word, or 0).
    #[inline(always)]
    fn native_word_object(word: *mut ObjectHeader) -> Option<*mut ObjectHeader> {
        (word.addr() & NATIVE_TAG == NATIVE_TAG).then(|| word.map_addr(|a| a & ADDRESS_MASK))
    }

    /// The object's address (null: moved out, or not made yet).
    #[inline(always)]
    pub fn object(&self, order: Ordering) -> *mut ObjectHeader {
        let word = self.0.load(order);
        self.in_memory_object(word.addr()).or_else(|| Self::native_word_object(word)).unwrap_or(null_mut())
    }

    /// As [`NativeWord::object`], for a wrapper that never lives in its object's memory (a
    /// Function's: its class is wider than a plain wrapper): the word is a native word or 0.
    #[inline(always)]
    pub fn own_block_object(&self, order: Ordering) -> *mut ObjectHeader {
        let word = self.0.load(order);
        debug_assert!(word.is_null() || word.addr() & NATIVE_TAG == NATIVE_TAG, "a wrapper in its object's memory");
        word.map_addr(|a| a & ADDRESS_MASK)
    }

    /// The object (`None`: moved out, or not made yet), its type index from the word when the
    /// word carries it.
    ///
    /// # Safety
    /// The wrapper (whose +1 keeps the object alive) outlives `'a`.
    #[inline(always)]
    pub unsafe fn native<'a>(&self, order: Ordering) -> Option<Native<'a>> {
        let word = self.0.load(order);
        let bits = word.addr();
        // A wrapper in its object's memory first (every generated class's first wrapper of an
        // object our allocator made): one compare, as a native word never names the wrapper.
        if let Some(obj) = self.in_memory_object(bits) {
            // SAFETY: the wrapper's +1 keeps `obj` alive (the caller's guarantee); its header
            // is in the wrapper's own cache line.
            return Some(Native { view: unsafe { AnyView::from_object_ptr(obj) }, prefixed: true });
        }
        let obj = Self::native_word_object(word)?; // None: moved out, or not made yet
        let type_index = (bits >> TYPE_SHIFT) as i32;
        // A type index in the word says the object is there (`set` writes one only with it).
        let view = if type_index != 0 {
            // SAFETY: the wrapper's +1 keeps `obj` alive (the caller's guarantee); the type
            // index is the header's, written by `set` from it.
            unsafe { AnyView::from_object_ptr_of_type(obj, type_index) }
        } else {
            // SAFETY: the wrapper's +1 keeps `obj` alive (the caller's guarantee); its header
            // gives the type index that did not fit the word.
            unsafe { AnyView::from_object_ptr(obj) }
        };
        Some(Native { view, prefixed: bits & PREFIXED != 0 })
    }

    /// Store `obj`, whose +1 is the wrapper's from now, in a wrapper of its own block;
    /// `prefixed` when this frontend's allocator made it.
    ///
    /// # Safety
    /// `obj` is a live object; the wrapper does not live in `obj`'s memory.
    #[inline(always)]
    pub unsafe fn set(&self, obj: *mut ObjectHeader, prefixed: bool, order: Ordering) {
        // SAFETY: a live object's header is readable (the caller's guarantee).
        let type_index = unsafe { (*obj).type_index } as u32 as usize;
        // Both fit: no address bit at or above the shift, no type bit at or above 64 - shift.
        // Under AddressSanitizer (`--cfg tether_asan`) never: LeakSanitizer follows a word
        // that points into a block (the tag bits), not one with bits above the address, and an
        // object whose wrapper lives at exit would read as leaked.
        let fits = !cfg!(tether_asan) && (obj.addr() >> TYPE_SHIFT) | (type_index >> (64 - TYPE_SHIFT)) == 0;
        let typed = if fits { type_index << TYPE_SHIFT } else { 0 };
        let prefixed = if prefixed { PREFIXED } else { 0 };
        self.0.store(obj.map_addr(|a| a | typed | prefixed | NATIVE_TAG), order);
    }

    /// Take the object out (null when it was moved out already). A native word is left 0; the
    /// caller must serialize with the word's other writers (the GIL), unless `atomic`. A slot
    /// word is left alone: untying the wrapper, which the caller does next, rewrites it.
    #[inline(always)]
    fn take(&self, atomic: bool) -> *mut ObjectHeader {
        let word = self.0.load(Ordering::Acquire);
        if let Some(obj) = self.in_memory_object(word.addr()) {
            return obj;
        }
        if Self::native_word_object(word).is_none() {
            return null_mut();
        }
        let word = if atomic {
            self.0.swap(null_mut(), Ordering::AcqRel)
        } else {
            self.0.store(null_mut(), Ordering::Relaxed);
            word
        };
        // None when a racing `_move()` took it meanwhile.
        Self::native_word_object(word).unwrap_or(null_mut())
    }
}

/// Function wrappers also carry their vectorcall entry point, and take weak references (as
/// Python's own functions do).
#[repr(C)]
pub struct FunctionWrapper {
    pub base: Wrapper,
    pub vectorcall: Option<ffi::vectorcallfunc>,
    pub weaklist: *mut ffi::PyObject,
}

/// `tether_ffi.Object`, the base of every generated class.
pub static BASE_TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(null_mut());

#[inline]
pub fn base_type() -> *mut ffi::PyTypeObject {
    BASE_TYPE.load(Ordering::Relaxed)
}

/// tp_alloc of our classes: zeroed `PyObject_Malloc` memory, initialised as an instance of
/// `tp`. Never triggers a garbage collection (our classes are not GC types).
pub unsafe extern "C" fn wrapper_alloc(tp: *mut ffi::PyTypeObject, _nitems: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    // SAFETY: `tp` is one of our classes; its basicsize covers the whole wrapper.
    unsafe {
        let size = (*tp).tp_basicsize as usize;
        let mem = ffi::PyObject_Malloc(size) as *mut ffi::PyObject;
        if mem.is_null() {
            return ffi::PyErr_NoMemory();
        }
        if size == std::mem::size_of::<Wrapper>() {
            // The common size, zeroed with two stores instead of a `memset` call.
            std::ptr::write_bytes(mem as *mut Wrapper, 0, 1);
        } else {
            std::ptr::write_bytes(mem as *mut u8, 0, size);
        }
        ffi::PyObject_Init(mem, tp)
    }
}

/// tp_free of our classes.
pub unsafe extern "C" fn wrapper_free(block: *mut c_void) {
    // SAFETY: `block` came from `wrapper_alloc`.
    unsafe { ffi::PyObject_Free(block) }
}

/// May a dead wrapper of type `tp` be cached for revival in place? Blocks of our own classes
/// (our tp_free) without `__del__`; and those of Python subclasses of them (deallocated by
/// CPython's subtype_dealloc, which cleared their `__dict__` and slots before calling us)
/// without `__del__`, whose memory layout [`preheader_size`] knows: the block keeps its class,
/// so a revived instance has the same class and `id()`.
unsafe fn revivable(tp: *mut ffi::PyTypeObject) -> bool {
    // SAFETY: `tp` is a live type object.
    unsafe {
        if (*tp).tp_finalize.is_some() || (*tp).tp_del.is_some() {
            return false;
        }
        if deallocs_as_wrapper(tp) {
            return (*tp).tp_free.map(|f| f as usize) == Some(wrapper_free as *const () as usize)
                && (*tp).tp_dictoffset == 0;
        }
        (*tp).tp_itemsize == 0 && (*tp).tp_free.is_some() && preheader_size(tp).is_some()
    }
}

/// Bytes CPython allocates in front of an instance of `tp` (the GC header, managed dict and
/// weak reference pointers), or None for a layout this frontend does not revive in place.
///
/// # Safety
/// `tp` is a live type object.
unsafe fn preheader_size(tp: *mut ffi::PyTypeObject) -> Option<usize> {
    const MANAGED_WEAKREF: u64 = 1 << 3; // 3.12+
    const MANAGED_DICT: u64 = 1 << 4; // 3.11+
    const INLINE_VALUES: u64 = 1 << 2; // 3.13+: values after the body, set up by CPython only

    // SAFETY: `tp` is live (caller).
    let flags = unsafe { ffi::PyType_GetFlags(tp) } as u64;
    let gc = if flags & ffi::Py_TPFLAGS_HAVE_GC != 0 { std::mem::size_of::<[usize; 2]>() } else { 0 };
    if cfg!(Py_3_13) && flags & INLINE_VALUES != 0 {
        return None;
    }
    let managed = if cfg!(Py_3_12) {
        if flags & (MANAGED_DICT | MANAGED_WEAKREF) != 0 {
            16
        } else {
            0
        }
    } else if flags & MANAGED_DICT != 0 {
        16
    } else {
        0
    };
    Some(gc + managed)
}

/// Free a wrapper block cached in a slot (the object it served is being freed, or the slot
/// makes a new wrapper instead). A Python subclass's block holds a reference to its class,
/// dropped here through the pending queue (a class's last reference may run Python code).
///
/// # Safety
/// GIL held; `block` is a cached block nothing else references.
pub unsafe fn free_cached_block(block: *mut ffi::PyObject) {
    // SAFETY: a cached block keeps its type pointer; our classes live for the process and a
    // subclass is kept alive by the block's reference (caller: GIL held).
    unsafe {
        let tp = (*block).ob_type;
        if deallocs_as_wrapper(tp) {
            ffi::PyObject_Free(block as *mut c_void);
        } else {
            free_block(block, tp);
            pending::release(pending::Release::Decref(tp as *mut ffi::PyObject));
        }
    }
}

/// Empty a dying wrapper's weak references (their callbacks run here), when its class takes
/// any. (A Python subclass that added the list itself had it emptied by CPython's
/// `subtype_dealloc` before ours ran.)
///
/// # Safety
/// GIL held; `o` is the dying wrapper (refcount 0).
#[inline]
unsafe fn clear_weak_refs(o: *mut ffi::PyObject) {
    // SAFETY: `o` is a wrapper (caller) of a live type; its list is read only while CPython
    // keeps it, at the offset its type declares.
    unsafe {
        let offset = (*ffi::Py_TYPE(o)).tp_weaklistoffset;
        if offset > 0 && !(*((o as *mut u8).add(offset as usize) as *mut *mut ffi::PyObject)).is_null() {
            ffi::PyObject_ClearWeakRefs(o);
        }
    }
}

/// tp_dealloc of every wrapper: untie, cache the block when allowed, drop the +1.
pub unsafe extern "C" fn wrapper_dealloc(o: *mut ffi::PyObject) {
    // SAFETY: `o` is a dying wrapper (refcount 0, GIL held); every field is read before the
    // block may be handed to the slot, and once it is, the block is only read by CPython's
    // weak reference clearing, which is done with it before any callback runs.
    unsafe {
        let w = o as *mut Wrapper;
        let tp = ffi::Py_TYPE(o);
        // A `__del__` added to one of our classes: run it (it may resurrect the wrapper).
        // User subclasses reach us through subtype_dealloc, which already ran it.
        if (*tp).tp_finalize.is_some() && deallocs_as_wrapper(tp) && ffi::PyObject_CallFinalizerFromDealloc(o) < 0 {
            return;
        }
        let obj = take_native(w);
        if obj.is_null() {
            clear_weak_refs(o);
            ffi::Py_DECREF(tp as *mut ffi::PyObject);
            match forget_moved(o) {
                // The wrapper's memory is its object's: the weak reference goes last.
                Some(memory_of) => tether_core::object::dec_weak(memory_of),
                None => free_block(o, tp),
            }
            return;
        }
        let embedded = is_embedded(o, obj);
        // A wrapper in its object's memory holding the object's only reference (a temporary,
        // `Pair(x, x)` dropped at once): the two die together, with no untie; a class with
        // weak references takes the path below, whose callbacks run after the untie.
        if embedded && (*tp).tp_weaklistoffset == 0 {
            if let Some(held) = state::frontend().take_sole(obj) {
                ffi::Py_DECREF(tp as *mut ffi::PyObject);
                tether_core::object::dec_ref_expecting_last(held.into_raw());
                return;
            }
        }
        // An object whose only reference of any kind is this wrapper's dies with it: nothing
        // could revive the block, and caching it would only hand it to the free hook.
        let sole = (*obj).combined_ref_count.load(Ordering::Acquire) == ObjectHeader::INITIAL_COUNT;
        let cache = !sole && (*obj).alloc_tag == state::tag() && revivable(tp) && !pending::finalizing();
        let replacement = if cache { o as usize | TAG_INACTIVE } else { 0 };
        // Untied first, the object kept alive by its +1 meanwhile: a weak reference's callback
        // may fetch the object again (reviving this very block in place when it is cached).
        let (removed, held) = state::frontend().move_out(obj, o as u64, replacement);
        let cached = cache && removed.is_some();
        clear_weak_refs(o);
        // An embedded block stays with its object (freed with it: by `drop(held)` below when
        // this was the last reference).
        if !cached && !embedded {
            free_block(o, tp);
        }
        // A cached subclass block keeps its class alive (released with the block).
        if !cached || deallocs_as_wrapper(tp) {
            ffi::Py_DECREF(tp as *mut ffi::PyObject);
        }
        // May free the object, and the cached block with it (the free hook); usually this was
        // its only reference (a temporary's wrapper), given up without a locked decrement.
        tether_core::object::dec_ref_expecting_last(held.into_raw());
    }
}

/// Take the native object out of wrapper `w` (null when it was moved out already). With the
/// GIL every reader and writer of the field holds it, so a plain load and store do; a
/// free-threaded build swaps atomically.
///
/// # Safety
/// `w` is a live wrapper; the GIL is held (attached, free-threaded).
#[inline]
unsafe fn take_native(w: *mut Wrapper) -> *mut ObjectHeader {
    // SAFETY: the caller's guarantee.
    unsafe { &(*w).native }.take(cfg!(Py_GIL_DISABLED))
}

/// Embedded wrappers emptied by `_move()` and still alive, each with the object whose memory
/// it lives in (held by one weak reference, dropped when the wrapper dies). Only touched with
/// the GIL held; `_move()` is rare, so `MOVED_EMBEDDED_COUNT` keeps every dealloc's check to
/// one load.
static MOVED_EMBEDDED: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());
static MOVED_EMBEDDED_COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Is an object's embedded block free for a new wrapper? Its first word is the reference count
/// of the wrapper living there: zero in a new reserve (zeroed at allocation) and in a dead
/// wrapper's memory (CPython zeroes it before dealloc); only a live wrapper that `_move()`
/// emptied (so its slot names none) holds it while the slot is Detached.
///
/// # Safety
/// `block` is the embedded block of a live object; GIL held.
#[inline]
unsafe fn embedded_is_free(block: *mut u8) -> bool {
    // SAFETY: the reserve is readable while the object lives (the caller's guarantee).
    unsafe { ffi::Py_REFCNT(block as *mut ffi::PyObject) == 0 }
}

/// The object a moved embedded wrapper `o` keeps the memory of (its weak reference, now the
/// caller's), taking `o` off the list; None for any other wrapper.
fn forget_moved(o: *mut ffi::PyObject) -> Option<*mut ObjectHeader> {
    if MOVED_EMBEDDED_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut moved = MOVED_EMBEDDED.lock().unwrap_or_else(|e| e.into_inner());
    let at = moved.iter().position(|&(w, _)| w == o as usize)?;
    let (_, obj) = moved.swap_remove(at);
    MOVED_EMBEDDED_COUNT.fetch_sub(1, Ordering::Relaxed);
    Some(obj as *mut ObjectHeader)
}

/// The embedded block of `obj`, when `o` is it.
///
/// # Safety
/// `obj` is live.
#[inline]
unsafe fn is_embedded(o: *mut ffi::PyObject, obj: *mut ObjectHeader) -> bool {
    // SAFETY: the caller's guarantee.
    unsafe { state::frontend().reserve_of(obj) }.is_some_and(|block| block as *mut ffi::PyObject == o)
}

/// Start loading the cache line 64 bytes into `o`. A wrapper in its object's memory has the
/// object's slot, header and first fields in that line (or in its own, for the part before it):
/// asked for before `o` itself is read, the two lines load together instead of the second
/// waiting for the pointer in the first (at 2^20 live objects both miss). Only a hint: for any
/// other object it loads a neighbour's line, and a prefetch never faults.
#[inline(always)]
pub fn prefetch_object_of(o: *mut ffi::PyObject) {
    tether_core::boundary::prefetch((o as *const u8).wrapping_add(64));
}

unsafe fn free_block(o: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) {
    // SAFETY: the type's own tp_free for memory it allocated.
    unsafe {
        match (*tp).tp_free {
            Some(free) => free(o as *mut c_void),
            None => ffi::PyObject_Free(o as *mut c_void),
        }
    }
}

/// Is `o` a tether wrapper?
#[inline]
pub unsafe fn is_wrapper(o: *mut ffi::PyObject) -> bool {
    // SAFETY: `o` is a live object.
    unsafe {
        let tp = ffi::Py_TYPE(o);
        deallocs_as_wrapper(tp) || ffi::PyType_IsSubtype(tp, base_type()) != 0
    }
}

/// True for our generated classes (not Python subclasses of them): the one-compare test of
/// the hot paths.
///
/// # Safety
/// `tp` is a live type object.
#[inline]
pub unsafe fn deallocs_as_wrapper(tp: *mut ffi::PyTypeObject) -> bool {
    // SAFETY: `tp` is a live type object (the caller's guarantee); only its dealloc slot is read.
    unsafe { (*tp).tp_dealloc.map(|f| f as usize) == Some(wrapper_dealloc as *const () as usize) }
}

/// The native object of a wrapper, or a Python error if it was moved.
#[inline]
pub unsafe fn native_of(o: *mut ffi::PyObject) -> Result<*mut ObjectHeader, PyErrSet> {
    // SAFETY: `o` is a live wrapper.
    let obj = unsafe { (*(o as *mut Wrapper)).native.object(Ordering::Acquire) };
    if obj.is_null() {
        // SAFETY: GIL held by the caller.
        unsafe { raise_moved(o) };
        Err(PyErrSet)
    } else {
        Ok(obj)
    }
}

/// As [`native_view_of`], with no error raised: `None` for a moved wrapper.
///
/// # Safety
/// As [`native_view_of`].
#[inline(always)]
pub unsafe fn native_if_any<'a>(o: *mut ffi::PyObject) -> Option<Native<'a>> {
    // SAFETY: `o` is a live wrapper that outlives the view (the caller's guarantee).
    unsafe { (*(o as *mut Wrapper)).native.native(Ordering::Acquire) }
}

/// A wrapper's native object, read from the wrapper alone (see [`NativeWord`]), or a Python
/// error if it was moved.
///
/// # Safety
/// GIL held; `o` is a live wrapper that outlives `'a`.
#[inline(always)]
pub unsafe fn native_view_of<'a>(o: *mut ffi::PyObject) -> Result<Native<'a>, PyErrSet> {
    // SAFETY: the caller's guarantee.
    match unsafe { native_if_any(o) } {
        Some(native) => Ok(native),
        None => {
            // SAFETY: GIL held by the caller.
            unsafe { raise_moved(o) };
            Err(PyErrSet)
        }
    }
}

#[cold]
unsafe fn raise_moved(o: *mut ffi::PyObject) {
    // SAFETY: `o` is live; its type name is a C string.
    let name = unsafe { std::ffi::CStr::from_ptr((*ffi::Py_TYPE(o)).tp_name) }.to_string_lossy().into_owned();
    // SAFETY: `o` is live; GIL held.
    let subclass = unsafe { !deallocs_as_wrapper(ffi::Py_TYPE(o)) };
    let message = if subclass {
        format!(
            "this {name} has no native object: its __init__ did not call the base class __init__ \
             (super().__init__(...)), or it was moved (x._move())"
        )
    } else {
        format!("this {name} was moved (x._move()) and can no longer be used; use the object the callee returned")
    };
    // SAFETY: GIL held.
    unsafe { errors::raise(Error::value(message)) };
}

/// `_move()`: untie the wrapper and take its +1 out; the wrapper becomes unusable.
pub unsafe fn take_for_move(o: *mut ffi::PyObject) -> Result<ObjectRef, PyErrSet> {
    // SAFETY: `o` is a live wrapper; taking its object makes us the only owner of its +1.
    unsafe {
        let w = o as *mut Wrapper;
        let obj = take_native(w);
        if obj.is_null() {
            raise_moved(o);
            return Err(PyErrSet);
        }
        if is_embedded(o, obj) {
            // The wrapper lives on in its object's memory, which a weak reference keeps.
            tether_core::object::inc_weak(obj);
            MOVED_EMBEDDED.lock().unwrap_or_else(|e| e.into_inner()).push((o as usize, obj as usize));
            MOVED_EMBEDDED_COUNT.fetch_add(1, Ordering::Relaxed);
        }
        // The removed word is this wrapper itself, which stays alive: nothing to dispose.
        let (_removed, taken) = state::frontend().move_out(obj, o as u64, 0);
        Ok(taken)
    }
}

/// How CPython wrappers are made and revived.
pub struct PyHost;

/// What a new wrapper needs: its class, and the block the caller allocated beforehand for a
/// user subclass (whose allocation may run the garbage collector and so must not happen under
/// the slot lock), or null.
pub struct PyPrepared {
    pub cls: *mut ffi::PyTypeObject,
    pub fresh: *mut ffi::PyObject,
}

/// A new strong reference to a wrapper.
pub type Handle = *mut ffi::PyObject;

// SAFETY: `revive` returns a strong reference only for a live wrapper (incref under the GIL,
// try-incref without it); `create` returns wrapper pointers (16-byte aligned, bits 0-1 clear,
// user-space addresses) that own the given `ObjectRef`.
unsafe impl TieHost for PyHost {
    type Handle = Handle;
    /// A Python exception is set.
    type Error = PyErrSet;
    type Prepared = PyPrepared;
    /// With the GIL every slot transition happens under it (the free hook only takes
    /// Inactive words); free-threaded builds lock each slot instead.
    const SERIALIZED: bool = cfg!(not(Py_GIL_DISABLED));
    /// Wrappers untie in their own dealloc (or `_move()`), while their memory exists.
    const WORD_ONLY: bool = true;
    /// A successful conversion of a leaf call's arguments runs no Python code (no user
    /// methods, no GC-tracked allocation that could run a finalizer), and a failed one abandons
    /// the call before the claim settles. Keep it so when changing `convert::to_view`.
    const CLAIM_MODE: ClaimMode = ClaimMode::AtOnce;
    /// A generated class's wrapper head in front of the slot, whose word is then the
    /// wrapper's last (GIL builds; see the module doc and [`NativeWord`]).
    const RESERVE: Reserve =
        if cfg!(Py_GIL_DISABLED) { Reserve::NONE } else { Reserve::BeforeSlot(std::mem::size_of::<ffi::PyObject>()) };
    /// A wrapper made in the reserve is the `PyObject` there.
    const WRAPPER_AT_RESERVE: bool = true;

    #[inline]
    unsafe fn revive(&self, word: usize) -> Option<Handle> {
        let o = word as *mut ffi::PyObject;
        #[cfg(not(Py_GIL_DISABLED))]
        {
            // SAFETY: with the GIL an Active word names a wrapper whose memory lives: our
            // dealloc unties before anything else. A Python subclass that added its own
            // weak-reference list has it emptied by CPython before our dealloc runs, and a
            // callback there may ask for the object: its wrapper is dying then (count 0), and a
            // new one is made instead of reviving it.
            unsafe {
                if ffi::Py_REFCNT(o) == 0 {
                    return None;
                }
                ffi::Py_INCREF(o);
            }
            Some(o)
        }
        #[cfg(Py_GIL_DISABLED)]
        {
            // SAFETY: the wrapper's memory is live while its word is in the slot (dealloc
            // must lock the slot to remove it); try-incref fails once the count hit zero.
            (unsafe { ffi::PyUnstable_TryIncRef(o) } != 0).then_some(o)
        }
    }

    /// The class of the object's type, built on first use (may run Python code).
    fn prepare(&self, obj: &ObjectRef) -> Result<PyPrepared, PyErrSet> {
        // SAFETY: the protocol runs with the GIL held (every caller is a Python entry point).
        let cls = unsafe { classes::class_for(obj.type_index()) };
        if cls.is_null() {
            return Err(PyErrSet);
        }
        Ok(PyPrepared { cls, fresh: null_mut() })
    }

    // Inline into the tie, its one caller (left out of line, a construction paid the call).
    #[inline(always)]
    unsafe fn create(
        &self,
        prepared: &PyPrepared,
        obj: ObjectRef,
        previous: Previous,
        _generation: u64,
    ) -> Result<(Handle, usize), PyErrSet> {
        let PyPrepared { cls, fresh } = *prepared;
        // SAFETY: GIL held (attached); runs under the slot lock and calls no Python code.
        unsafe {
            let embedded = state::frontend().reserve_of(obj.as_ptr());
            let o = match previous {
                Previous::Inactive(block) => {
                    let block = block as *mut ffi::PyObject;
                    let block_type = (*block).ob_type;
                    if fresh.is_null() && block_type == cls {
                        // Revival in place: same address, refcount 1, type reference taken.
                        ffi::PyObject_Init(block, cls)
                    } else if fresh.is_null() && !deallocs_as_wrapper(block_type) {
                        // A Python subclass's block: revived as that subclass, same address.
                        revive_subclass_block(block, block_type)
                    } else {
                        if embedded != Some(block as *mut u8) {
                            free_cached_block(block);
                        }
                        allocate(prepared)?
                    }
                }
                Previous::Detached => match embedded {
                    Some(block) if fits_embedded(prepared) && embedded_is_free(block) => {
                        // The head only: the word after it is the slot.
                        std::ptr::write_bytes(block as *mut ffi::PyObject, 0, 1);
                        ffi::PyObject_Init(block as *mut ffi::PyObject, cls)
                    }
                    _ => allocate(prepared)?,
                },
                Previous::Dying(_) => allocate(prepared)?,
            };
            if embedded == Some(o as *mut u8) {
                // Its +1 is the wrapper's from now: the slot word naming it, which the tie
                // writes next, is the wrapper's native word (see `NativeWord`).
                let _ = obj.into_raw();
            } else {
                (*(o as *mut Wrapper)).native.set(obj.into_raw(), embedded.is_some(), Ordering::Release);
            }
            let offset = (*cls).tp_vectorcall_offset;
            if offset > 0 {
                *((o as *mut u8).add(offset as usize) as *mut Option<ffi::vectorcallfunc>) =
                    Some(crate::call::function_vectorcall);
            }
            #[cfg(Py_GIL_DISABLED)]
            ffi::PyUnstable_EnableTryIncRef(o);
            Ok((o, o as usize))
        }
    }

    /// A host value of Python's goes back as the object itself.
    fn host_value_of(&self, value: &tether_core::host_value::HostValueObj) -> Result<Option<Handle>, PyErrSet> {
        // SAFETY: the protocol runs with the GIL held; `value` is live (the caller's object).
        unsafe { crate::host_value::value_of(value) }.map(Some)
    }

    /// A Function made from a Python callable goes back as the callable itself.
    fn callable_of(&self, func: &ObjectRef) -> Result<Option<Handle>, PyErrSet> {
        // SAFETY: `func` is live; a Function made by `function_for` keeps its callable alive,
        // and the protocol runs with the GIL held, so taking a new reference is allowed.
        unsafe {
            let callable = callback::callable_of(func.as_ptr());
            if let Some(c) = callable {
                ffi::Py_INCREF(c);
            }
            Ok(callable)
        }
    }
}

/// Re-initialise the cached block of a Python subclass's instance as a new instance of that
/// subclass: zeroed (the `__dict__` and slots were cleared at its death, so it starts empty,
/// as an instance the subclass's `__new__` made), refcount 1, tracked by the GC again.
///
/// # Safety
/// GIL held; `block` is a cached block of `tp` (checked by `revivable` when it was cached),
/// holding one reference to `tp`.
unsafe fn revive_subclass_block(block: *mut ffi::PyObject, tp: *mut ffi::PyTypeObject) -> *mut ffi::PyObject {
    // SAFETY: the block's allocation spans the pre-header and the basic size (the caller's
    // guarantee); the type is alive (the block's reference), which the new instance takes over.
    unsafe {
        let pre = preheader_size(tp).unwrap_or(0);
        std::ptr::write_bytes((block as *mut u8).sub(pre), 0, pre + (*tp).tp_basicsize as usize);
        let o = ffi::PyObject_Init(block, tp);
        ffi::Py_DECREF(tp as *mut ffi::PyObject); // the block's reference; the instance holds one
        if ffi::PyType_GetFlags(tp) & ffi::Py_TPFLAGS_HAVE_GC != 0 {
            ffi::PyObject_GC_Track(o as *mut c_void);
        }
        o
    }
}

/// Tie native object `obj` (a new object, no wrapper yet) to `this`, an empty instance of a
/// Python subclass (`__init__` of its generated base).
///
/// # Safety
/// GIL held; `this` is a live wrapper without a native object.
pub unsafe fn tie_into(obj: ObjectRef, this: *mut ffi::PyObject) -> Result<(), PyErrSet> {
    // SAFETY: GIL held (caller); the new reference to `this` is the one `return_object_as`
    // consumes, and the handle it returns is ours to drop.
    unsafe {
        let made = return_object_as(obj, ffi::Py_TYPE(this), ffi::Py_NewRef(this));
        if made.is_null() {
            return Err(PyErrSet);
        }
        ffi::Py_DECREF(made);
        if made != this {
            errors::raise(Error::type_error("the native object already has a wrapper"));
            return Err(PyErrSet);
        }
        Ok(())
    }
}

/// Can the new wrapper `prepared` describes live in its object's embedded block? Only an
/// instance of a generated class of the plain wrapper's size, made by us (no block prepared).
///
/// # Safety
/// `prepared.cls` is a live type object.
#[inline]
unsafe fn fits_embedded(prepared: &PyPrepared) -> bool {
    // SAFETY: the caller's guarantee.
    unsafe {
        prepared.fresh.is_null()
            && (*prepared.cls).tp_basicsize as usize == std::mem::size_of::<Wrapper>()
            && deallocs_as_wrapper(prepared.cls)
    }
}

/// The memory of a new wrapper: the block prepared beforehand, or a new one of our class (a
/// MemoryError is set when there is none).
///
/// # Safety
/// GIL held.
unsafe fn allocate(prepared: &PyPrepared) -> Result<*mut ffi::PyObject, PyErrSet> {
    if !prepared.fresh.is_null() {
        return Ok(prepared.fresh);
    }
    // SAFETY: our classes allocate with `wrapper_alloc` (no Python code runs).
    let o = unsafe { wrapper_alloc(prepared.cls, 0) };
    if o.is_null() {
        return Err(PyErrSet);
    }
    Ok(o)
}

/// The fast return of an object that came in as argument (`echo(p)`): when one of `args` is
/// a wrapper of ours that the object's prefix slot names, it is the canonical wrapper, so it
/// is returned as is and the result's +1 stays in the slot as a spare. Gives `obj` back
/// otherwise. GIL builds only (the slot is read without its lock).
///
/// # Safety
/// GIL held; `args` are live objects.
#[inline]
pub unsafe fn return_argument(obj: ObjectRef, args: &[*mut ffi::PyObject]) -> Result<*mut ffi::PyObject, ObjectRef> {
    if cfg!(Py_GIL_DISABLED) {
        return Err(obj);
    }
    // SAFETY: GIL held (it serialises slot changes); a wrapper's fields are read only after its
    // type says it is one; wrappers own their +1 and untie in dealloc.
    unsafe {
        let wrappers = args
            .iter()
            .enumerate()
            .filter(|&(_, &a)| deallocs_as_wrapper(ffi::Py_TYPE(a)))
            .map(|(i, &a)| (i, (*(a as *mut Wrapper)).native.object(Ordering::Relaxed), a as usize));
        state::frontend().result_argument(obj, wrappers, None).map(|i| ffi::Py_NewRef(args[i]))
    }
}

/// Return a native object to Python: its canonical wrapper (revived or new). Every native
/// object handed to Python goes through here. Null with a Python error on failure. Out of
/// line, with core's return inlined into it: LLVM's choice otherwise varies with unrelated
/// code (W4 +45 instructions when it inlined this one and left core's out).
#[inline(never)]
pub unsafe fn return_object(obj: ObjectRef) -> *mut ffi::PyObject {
    match state::frontend().return_object(&PyHost, obj) {
        Ok(Returned::HostValue(o)) => {
            // The return may have dropped the last native reference to the value: let go of
            // the Python one now rather than at the next call (`del o` frees at once).
            // SAFETY: the GIL is held (this function's contract), at a point where Python code
            // may run (a result or a callback argument being converted).
            unsafe { pending::drain_refs() };
            o
        }
        Ok(returned) => returned.into_handle(),
        Err(PyErrSet) => null_mut(),
    }
}

/// As [`live_wrapper_in`], but `None` at once when another thread holds the cell at this
/// instant (a fast path with no spin loop on it; see `Frontend::live_in_free_cell`), as well
/// as when there is no live wrapper.
///
/// # Safety
/// GIL held; `cell` is in a live object.
#[inline(always)]
pub unsafe fn live_wrapper_in_free(cell: &tether_core::cell::AnyCell) -> Option<*mut ffi::PyObject> {
    // SAFETY: as in `live_wrapper_in`.
    unsafe { state::frontend().live_in_free_cell(&PyHost, cell, tether_core::TypeIndex::returns_as_wrapper) }
}

/// The live wrapper of the object cell field `cell` holds (a new reference), or null when
/// there is none or the value is not a tied kind (see `tying::revive_in_cell`).
///
/// # Safety
/// GIL held; `cell` is in a live object.
#[inline]
pub unsafe fn live_wrapper_in(cell: &tether_core::cell::AnyCell) -> *mut ffi::PyObject {
    // SAFETY: GIL held (PyHost is serialized by it) and `cell` is in a live object (this
    // function's contract); `revive` only increments a reference count.
    match unsafe { state::frontend().live_in_cell(&PyHost, cell, tether_core::TypeIndex::returns_as_wrapper) } {
        Some(o) => o,
        None => null_mut(),
    }
}

/// As [`return_object`]; a new wrapper gets class `cls` (a subclass the user called) and
/// the block `fresh` allocated for it, which this consumes.
///
/// # Safety
/// GIL held; `fresh` is a new reference to an unused instance of `cls`.
pub unsafe fn return_object_as(
    obj: ObjectRef,
    cls: *mut ffi::PyTypeObject,
    fresh: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let prepared = PyPrepared { cls, fresh };
    // SAFETY: GIL held (caller); `fresh` is ours until a new wrapper takes it.
    unsafe {
        match state::frontend().return_prepared(&PyHost, obj, &prepared) {
            Ok(returned) => {
                let o = returned.into_handle();
                if o != fresh {
                    ffi::Py_DECREF(fresh);
                }
                o
            }
            Err(PyErrSet) => {
                ffi::Py_DECREF(fresh);
                null_mut()
            }
        }
    }
}

/// tp_richcompare: equality is native identity.
pub unsafe extern "C" fn wrapper_richcompare(
    a: *mut ffi::PyObject,
    b: *mut ffi::PyObject,
    op: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held; `a` is a wrapper, `b` any live object.
    unsafe {
        if (op != ffi::Py_EQ && op != ffi::Py_NE) || !is_wrapper(b) {
            return ffi::Py_NewRef(ffi::Py_NotImplemented());
        }
        let pa = (*(a as *mut Wrapper)).native.object(Ordering::Acquire);
        let pb = (*(b as *mut Wrapper)).native.object(Ordering::Acquire);
        let same = if pa.is_null() || pb.is_null() { a == b } else { pa == pb };
        ffi::Py_NewRef(if same == (op == ffi::Py_EQ) { ffi::Py_True() } else { ffi::Py_False() })
    }
}

/// tp_hash: the native object's address.
pub unsafe extern "C" fn wrapper_hash(o: *mut ffi::PyObject) -> ffi::Py_hash_t {
    // SAFETY: `o` is a live wrapper.
    let p = unsafe { (*(o as *mut Wrapper)).native.object(Ordering::Acquire) };
    let addr = if p.is_null() { o as usize } else { p as usize };
    let h = (addr >> 4) as ffi::Py_hash_t;
    if h == -1 {
        -2
    } else {
        h
    }
}
