//! Python values <-> native cells.
//!
//! Arguments become borrowed [`AnyView`]s: strings and bytes borrow the Python object's
//! buffer (no copy), wrappers borrow their native object. Anything built for the call
//! (Arrays from lists, Maps from dicts, Functions from callables) lives in an [`Arena`] that
//! the caller drops after the call. Results come back as native Python values for scalars,
//! strings and bytes, and as canonical wrappers for objects.

use std::mem::MaybeUninit;
use std::ptr::null_mut;

use pyo3::ffi;
use tether_core::any::{Any, AnyView, TypeIndex};
use tether_core::boundary::LeafCall;
use tether_core::containers::{ArrayObj, MapObj};
use tether_core::error::catch_out_of_memory;
use tether_core::nesting::{self, Nesting};
use tether_core::Error;

use crate::errors::PyErrSet;
use crate::{callback, errors, host_value, moved, wrapper};

/// Owned values that must outlive the views of one call, and the Function lent to it. Empty
/// (nothing allocated, nothing to drop) for calls whose arguments are all borrowed.
#[derive(Default)]
pub struct Arena {
    keep: Vec<Any>,
    /// The Function lent to this call for its callable argument (`callback::for_call`), given
    /// back when the arena is dropped, after everything in `keep` (which may hold it). Further
    /// callable arguments of the same call get their registered Function, held in `keep`.
    lent: Option<callback::Lent>,
    /// A call's arena (lends Functions), not a conversion's.
    lends: bool,
}

impl Arena {
    /// The arena of one conversion (its values are copied out before it goes).
    pub fn new() -> Self {
        Arena { keep: Vec::new(), lent: None, lends: false }
    }

    /// The arena of one native call: a callable argument is lent a Function for the call.
    pub fn for_call() -> Self {
        Arena { keep: Vec::new(), lent: None, lends: true }
    }

    /// Keep `value` alive and return a view of it (valid while the arena lives).
    fn hold<'a>(&mut self, value: Any) -> AnyView<'a> {
        let (t, l, p) = value.view().raw_parts();
        self.keep.push(value);
        // SAFETY: the cell is self-contained (objects are kept alive by the arena's copy).
        unsafe { AnyView::from_raw_parts(t, l, p) }
    }

    /// The view of callable `o`'s Function for this call (lent, when this is a call's arena
    /// that lent none yet).
    ///
    /// # Safety
    /// GIL held; `o` is a live callable that outlives the arena.
    #[inline]
    unsafe fn callable<'a>(&mut self, o: *mut ffi::PyObject) -> Result<AnyView<'a>, PyErrSet> {
        // SAFETY: GIL held, `o` live for the arena's life (caller).
        unsafe {
            if self.lends && self.lent.is_none() {
                return match callback::for_call(o)? {
                    callback::ForCall::Lent(lent) => {
                        let view = AnyView::from_object_ptr(lent.function().as_object_ptr());
                        self.lent = Some(lent);
                        Ok(view)
                    }
                    callback::ForCall::Live(f) => Ok(self.hold(Any::object(f))),
                };
            }
            let f = callback::function_for(o)?;
            Ok(self.hold(Any::object(f)))
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if let Some(lent) = self.lent.take() {
            self.keep.clear();
            // SAFETY: an arena lends only while the GIL is held, and is dropped with it held
            // (every arena lives in one Python entry point).
            unsafe { callback::give_back(lent) };
        }
    }
}

impl Arena {
    /// Release what the arena holds (it is empty afterwards), inline for the common cases:
    /// nothing kept (a call whose arguments were borrowed, or that was lent a Function).
    #[inline(always)]
    pub fn finish(&mut self) {
        if self.keep.capacity() != 0 {
            self.release_kept();
        }
        if let Some(lent) = self.lent.take() {
            // SAFETY: as in `drop`.
            unsafe { callback::give_back(lent) };
        }
    }

    #[inline(never)]
    fn release_kept(&mut self) {
        self.keep = Vec::new();
    }
}

/// [`to_view`] written straight into `slot`: the hot wrapper/int branches store the view's fields
/// in place instead of returning it (a returned view is stored in pieces and reloaded whole, a
/// store-forwarding stall per argument). `leaf` is the leaf call argument `index` belongs to,
/// whose wrapper arguments are borrowed or lent a spare; `None` converts as [`to_view`] with
/// `hold` (native references taken on wrapped objects).
///
/// # Safety
/// As [`to_view`]; with `leaf`, the GIL stays held for the whole call.
#[inline(always)]
pub unsafe fn to_view_into<'a>(
    o: *mut ffi::PyObject,
    arena: &mut Arena,
    leaf: Option<(&mut LeafCall<'_, wrapper::PyHost>, usize)>,
    slot: &mut MaybeUninit<AnyView<'a>>,
) -> Result<(), PyErrSet> {
    wrapper::prefetch_object_of(o);
    // SAFETY: GIL held, `o` live (caller).
    unsafe {
        let tp = ffi::Py_TYPE(o);
        let hold = leaf.is_none();
        if let (Some((leaf, index)), true) = (leaf, wrapper::deallocs_as_wrapper(tp)) {
            return leaf_wrapper_view_into(o, leaf, index, slot);
        }
        if tp == std::ptr::addr_of_mut!(ffi::PyLong_Type) {
            if let Some(v) = compact_long(o) {
                slot.write(AnyView::int(v));
                return Ok(());
            }
        }
        slot.write(to_view(o, arena, hold)?);
        Ok(())
    }
}

/// The view of wrapper `o` of ours, argument `index` of a running leaf call (borrowed, or lent
/// a spare; see [`LeafCall::wrapper_argument`]).
///
/// # Safety
/// As [`to_view_into`] with a leaf call; `o`'s type deallocs as a wrapper.
#[inline(always)]
pub unsafe fn leaf_wrapper_view_into<'a>(
    o: *mut ffi::PyObject,
    leaf: &mut LeafCall<'_, wrapper::PyHost>,
    index: usize,
    slot: &mut MaybeUninit<AnyView<'a>>,
) -> Result<(), PyErrSet> {
    // SAFETY: GIL held, `o` a live wrapper (caller). The GIL serialises every slot change; the
    // wrapper's +1 outlives the leaf call. Claimed at once (`PyHost::CLAIM_MODE`).
    unsafe {
        let native = wrapper::native_view_of(o)?;
        slot.write(leaf.wrapper_argument(index, native.view, o as usize, native.prefixed));
    }
    Ok(())
}

/// Convert a Python argument to a view. `hold` takes a native reference on wrapped objects
/// too (used when the GIL is released during the call, so a concurrent `_move()` cannot free
/// an argument under the callee). Err means a Python error is set.
///
/// # Safety
/// GIL held; `o` is alive for as long as the returned view is used.
#[inline]
pub unsafe fn to_view<'a>(o: *mut ffi::PyObject, arena: &mut Arena, hold: bool) -> Result<AnyView<'a>, PyErrSet> {
    // SAFETY: GIL held, `o` live (caller).
    unsafe {
        let tp = ffi::Py_TYPE(o);
        if wrapper::deallocs_as_wrapper(tp) {
            return wrapper_view(o, arena, hold);
        }
        if tp == std::ptr::addr_of_mut!(ffi::PyLong_Type) {
            return long_view(o);
        }
        if tp == std::ptr::addr_of_mut!(ffi::PyUnicode_Type) {
            return str_view(o);
        }
        if tp == std::ptr::addr_of_mut!(ffi::PyFloat_Type) {
            return Ok(AnyView::float(ffi::PyFloat_AS_DOUBLE(o)));
        }
        if o == ffi::Py_None() {
            return Ok(AnyView::none());
        }
        if tp == std::ptr::addr_of_mut!(ffi::PyBool_Type) {
            return Ok(AnyView::bool(o == ffi::Py_True()));
        }
        if tp == std::ptr::addr_of_mut!(ffi::PyFunction_Type) {
            return arena.callable(o);
        }
        // A Python subclass of a generated class (the exact builtins above are none).
        if wrapper::is_wrapper(o) {
            return wrapper_view(o, arena, hold);
        }
        slow_view(o, arena)
    }
}

/// [`to_view`] of a wrapper: its native object, borrowed, or with a reference of its own in
/// the arena when `hold`.
///
/// # Safety
/// As [`to_view`]; `o` is a wrapper.
#[inline]
unsafe fn wrapper_view<'a>(o: *mut ffi::PyObject, arena: &mut Arena, hold: bool) -> Result<AnyView<'a>, PyErrSet> {
    // SAFETY: `o` is a live wrapper (caller), which keeps its object alive.
    unsafe {
        let view = wrapper::native_view_of(o)?.view;
        if hold {
            return Ok(arena.hold(view.to_owned_any()));
        }
        Ok(view)
    }
}

unsafe fn long_view<'a>(o: *mut ffi::PyObject) -> Result<AnyView<'a>, PyErrSet> {
    // SAFETY: `o` is an int.
    if let Some(v) = unsafe { compact_long(o) } {
        return Ok(AnyView::int(v));
    }
    let mut overflow = 0;
    // SAFETY: `o` is an int.
    let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow) };
    if overflow != 0 {
        // SAFETY: GIL held.
        unsafe {
            errors::raise_builtin(ffi::PyExc_OverflowError, "int too large to convert to a 64-bit signed integer")
        };
        return Err(PyErrSet);
    }
    // SAFETY: GIL held (caller).
    if v == -1 && unsafe { !ffi::PyErr_Occurred().is_null() } {
        return Err(PyErrSet);
    }
    Ok(AnyView::int(v))
}

/// The value of an int of at most one digit, read from the object itself (what
/// `PyLong_AsLongLongAndOverflow` does first, without the call and its error checks).
///
/// # Safety
/// `o` is a live exact `int`.
#[inline(always)]
pub unsafe fn compact_long(o: *mut ffi::PyObject) -> Option<i64> {
    // After the object head: the size word (3.11: signed digit count; 3.12+: `lv_tag`, digit
    // count << 3 | sign bits, 0 = positive, 1 = zero, 2 = negative), then 30-bit digits.
    const HEAD: usize = std::mem::size_of::<ffi::PyObject>();
    // SAFETY: every int has its size word and at least one digit (zero included).
    unsafe {
        let size = *((o as *const u8).add(HEAD) as *const isize);
        let digit = *((o as *const u8).add(HEAD + 8) as *const u32) as i64;
        #[cfg(not(Py_3_12))]
        {
            (size.unsigned_abs() <= 1).then_some(size as i64 * digit)
        }
        #[cfg(Py_3_12)]
        {
            let tag = size as usize;
            (tag < 2 << 3).then_some((1 - (tag & 3) as i64) * digit)
        }
    }
}

unsafe fn str_view<'a>(o: *mut ffi::PyObject) -> Result<AnyView<'a>, PyErrSet> {
    let mut len: ffi::Py_ssize_t = 0;
    // SAFETY: `o` is a str; its UTF-8 buffer is cached in the object and lives as long as it.
    unsafe {
        let data = ffi::PyUnicode_AsUTF8AndSize(o, &mut len);
        if data.is_null() {
            return Err(PyErrSet); // lone surrogates: UnicodeEncodeError, a ValueError
        }
        // CPython's UTF-8 cache is valid UTF-8 of `len` bytes.
        let text = std::str::from_utf8_unchecked(std::slice::from_raw_parts(data as *const u8, len as usize));
        AnyView::try_raw_str(text).map_err(|e| errors::raised(e))
    }
}

#[cold]
unsafe fn slow_view<'a>(o: *mut ffi::PyObject, arena: &mut Arena) -> Result<AnyView<'a>, PyErrSet> {
    // SAFETY: GIL held, `o` live (caller).
    unsafe {
        if ffi::PyLong_Check(o) != 0 {
            return long_view(o);
        }
        if ffi::PyUnicode_Check(o) != 0 {
            return str_view(o);
        }
        if ffi::PyFloat_Check(o) != 0 {
            return Ok(AnyView::float(ffi::PyFloat_AsDouble(o)));
        }
        if ffi::PyBytes_Check(o) != 0 {
            let data = ffi::PyBytes_AsString(o) as *const u8;
            let len = ffi::PyBytes_Size(o) as usize;
            // The bytes object's buffer lives as long as `o`, which outlives the view (caller).
            return AnyView::try_raw_bytes(std::slice::from_raw_parts(data, len)).map_err(|e| errors::raised(e));
        }
        if let Some(taken) = moved::take_if_moved(o)? {
            return Ok(arena.hold(Any::object(taken)));
        }
        if is_container(o) {
            return Ok(arena.hold(container_to_any(o, &mut Nesting::new())?));
        }
        if ffi::PyCallable_Check(o) != 0 {
            return arena.callable(o);
        }
        Ok(arena.hold(Any::object(host_value::hold(o))))
    }
}

/// Is `o` a list, tuple or dict (converted to an Array or Map, item by item)?
///
/// # Safety
/// GIL held; `o` live.
unsafe fn is_container(o: *mut ffi::PyObject) -> bool {
    // SAFETY: type checks on a live object (caller).
    unsafe { ffi::PyList_Check(o) != 0 || ffi::PyTuple_Check(o) != 0 || ffi::PyDict_Check(o) != 0 }
}

/// A list or tuple as a native Array, a dict as a Map, converting nested containers through
/// `nesting` (a cycle or too deep a nesting is a ValueError before anything reaches native
/// code). Err means a Python error is set.
///
/// # Safety
/// GIL held; `o` is a live list, tuple or dict.
unsafe fn container_to_any(o: *mut ffi::PyObject, nesting: &mut Nesting<usize>) -> Result<Any, PyErrSet> {
    // SAFETY: GIL held (caller).
    nesting.enter(o as usize, |a, b| a == b).map_err(|e| unsafe { errors::raised(e) })?;
    // SAFETY: GIL held and `o` a live list, tuple or dict (this function's contract).
    let converted = unsafe { container_items(o, nesting) };
    nesting.leave();
    converted
}

/// [`container_to_any`]'s body, once `o` is entered.
///
/// # Safety
/// As [`container_to_any`].
unsafe fn container_items(o: *mut ffi::PyObject, nesting: &mut Nesting<usize>) -> Result<Any, PyErrSet> {
    // SAFETY: GIL held, `o` live (caller). Converting items runs no Python code (no user
    // methods are called), so the container cannot change under the loops.
    unsafe {
        if ffi::PyDict_Check(o) != 0 {
            let size = ffi::PyDict_Size(o).max(0) as usize;
            nesting::check_items(size).map_err(|e| errors::raised(e))?;
            let mut entries = Vec::with_capacity(size);
            let mut pos: ffi::Py_ssize_t = 0;
            let (mut k, mut v) = (null_mut(), null_mut());
            while ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) != 0 {
                // Borrowed from the dict; take references in case conversion runs code.
                ffi::Py_INCREF(k);
                ffi::Py_INCREF(v);
                let pair = item_to_any(k, nesting).and_then(|kk| item_to_any(v, nesting).map(|vv| (kk, vv)));
                ffi::Py_DECREF(k);
                ffi::Py_DECREF(v);
                entries.push(pair?);
            }
            let map = catch_out_of_memory(|| MapObj::new(entries)).map_err(|e| errors::raised(e))?;
            return Ok(Any::object(map.into()));
        }
        // A list or tuple: its items are contiguous borrowed references (no copy).
        let seq = ffi::PySequence_Fast(o, c"".as_ptr());
        if seq.is_null() {
            return Err(PyErrSet);
        }
        let n = ffi::PySequence_Size(seq);
        if let Err(e) = nesting::check_items(n.max(0) as usize) {
            ffi::Py_DECREF(seq);
            return Err(errors::raised(e));
        }
        let mut items = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            let item = ffi::PySequence_GetItem(seq, i);
            if item.is_null() {
                ffi::Py_DECREF(seq);
                return Err(PyErrSet);
            }
            let r = item_to_any(item, nesting);
            ffi::Py_DECREF(item);
            match r {
                Ok(v) => items.push(v),
                Err(PyErrSet) => {
                    ffi::Py_DECREF(seq);
                    return Err(PyErrSet);
                }
            }
        }
        ffi::Py_DECREF(seq);
        let array = catch_out_of_memory(|| ArrayObj::new(items)).map_err(|e| errors::raised(e))?;
        Ok(Any::object(array.into()))
    }
}

/// One item of a container being converted: nested containers one level down, anything else
/// as [`to_any`].
///
/// # Safety
/// GIL held; `o` live.
unsafe fn item_to_any(o: *mut ffi::PyObject, nesting: &mut Nesting<usize>) -> Result<Any, PyErrSet> {
    // SAFETY: GIL held and `o` live (this function's contract); only its type is read before converting.
    unsafe {
        if !wrapper::is_wrapper(o) && is_container(o) {
            return container_to_any(o, nesting);
        }
        to_any(o)
    }
}

/// Convert a Python value to an owned cell (strings copied).
///
/// # Safety
/// GIL held; `o` live.
pub unsafe fn to_any(o: *mut ffi::PyObject) -> Result<Any, PyErrSet> {
    // Finished by hand (nothing here unwinds: see `call::call_with`).
    let mut arena = std::mem::ManuallyDrop::new(Arena::new());
    // SAFETY: GIL held and `o` live (this function's contract); the view is copied before the
    // arena it may borrow from goes.
    let owned = unsafe { to_view(o, &mut arena, false) }.and_then(|view| {
        // Strings and bytes are copied into objects of their own: an allocation that may fail.
        // SAFETY: GIL held (this function's contract).
        catch_out_of_memory(|| view.to_owned_any()).map_err(|e| unsafe { errors::raised(e) })
    });
    arena.finish();
    owned
}

/// [`to_any`] of what a Python callback returned: a wrapper's reference is one of its slot's
/// spares when there is one (a returned wrapper usually goes straight back to Python, whose
/// return keeps it as a spare again, so the round trip changes no count). Not for argument
/// conversions: a leaf call may hold a claim on a slot's spare while it converts.
///
/// # Safety
/// GIL held; `o` live; no leaf call's argument conversion is running on this thread (a
/// callback runs inside a non-leaf call: leaf functions never call back).
#[inline]
pub unsafe fn result_to_any(o: *mut ffi::PyObject) -> Result<Any, PyErrSet> {
    // SAFETY: GIL held and `o` live, no spare claimed (this function's contract).
    unsafe {
        if wrapper::deallocs_as_wrapper(ffi::Py_TYPE(o)) {
            let obj = wrapper::native_of(o)?;
            return Ok(Any::object(crate::state::frontend().new_reference(obj)));
        }
        to_any(o)
    }
}

/// Convert an owned result to a Python object (new reference), or null with an error set.
///
/// # Safety
/// GIL held.
#[inline]
pub unsafe fn from_any(v: Any) -> *mut ffi::PyObject {
    // SAFETY: GIL held (the caller's guarantee); no argument list, so nothing is returned as an argument.
    unsafe { from_result(v, &[]) }
}

/// As [`from_any`], for the result of a call with Python arguments `args`: an object that is
/// one of them comes back as that argument (see `wrapper::return_argument`).
///
/// # Safety
/// As [`from_any`]; `args` are live objects.
#[inline(always)]
pub unsafe fn from_result(v: Any, args: &[*mut ffi::PyObject]) -> *mut ffi::PyObject {
    let t = v.type_index();
    if TypeIndex::returns_as_wrapper(t) {
        // SAFETY: GIL held (caller).
        return unsafe {
            match wrapper::return_argument(v.into_object().expect("object kind"), args) {
                Ok(arg) => arg,
                Err(obj) => wrapper::return_object(obj),
            }
        };
    }
    if t == TypeIndex::INT {
        // SAFETY: GIL held (caller).
        return unsafe { ffi::PyLong_FromLongLong(v.view().as_int().unwrap_or(0)) };
    }
    // SAFETY: GIL held (the caller's guarantee); `v` is an owned value this call consumes.
    unsafe { from_value(v) }
}

/// [`from_result`] for a result that is neither an object nor an int.
///
/// # Safety
/// As [`from_any`].
unsafe fn from_value(v: Any) -> *mut ffi::PyObject {
    // SAFETY: GIL held (caller).
    unsafe {
        match v.type_index() {
            TypeIndex::NONE => ffi::Py_NewRef(ffi::Py_None()),
            TypeIndex::INT => ffi::PyLong_FromLongLong(v.view().as_int().unwrap_or(0)),
            TypeIndex::BOOL => ffi::PyBool_FromLong(v.view().as_bool().unwrap_or(false) as _),
            TypeIndex::FLOAT => ffi::PyFloat_FromDouble(v.view().as_float().unwrap_or(0.0)),
            TypeIndex::SMALL_STR | TypeIndex::STR | TypeIndex::RAW_STR => {
                let view = v.view();
                let s = view.as_str().unwrap_or("");
                ffi::PyUnicode_FromStringAndSize(s.as_ptr() as *const _, s.len() as _)
            }
            TypeIndex::SMALL_BYTES | TypeIndex::BYTES | TypeIndex::RAW_BYTES => {
                let view = v.view();
                let b = view.as_bytes().unwrap_or(&[]);
                ffi::PyBytes_FromStringAndSize(b.as_ptr() as *const _, b.len() as _)
            }
            TypeIndex::OPAQUE_PTR => ffi::PyLong_FromUnsignedLongLong(v.view().raw_parts().2),
            t => {
                errors::raise(Error::type_error(format!("cannot convert a native value of kind {t} to Python")));
                null_mut()
            }
        }
    }
}
