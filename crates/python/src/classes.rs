//! One Python class per registered native type, built at run time from reflection.
//!
//! Classes are made lazily (on the first return of an object of that type, or on request)
//! with `PyType_FromSpecWithBases`, as subclasses of the class of the native parent type and
//! ultimately of `tether_ffi.Object`. Fields become getset descriptors whose getter calls the
//! field's native getter directly; methods and the Python-level API are added by the package's
//! class hook. Built classes are never freed.
//!
//! Their metaclass is `tether_ffi.NativeClass` (a subclass of `type`), which marks them
//! immutable to CPython (`Py_TPFLAGS_IMMUTABLETYPE`) and still lets Python set and delete their
//! attributes: the interpreter specializes a call of an immutable class with a `tp_vectorcall`
//! to a direct call of it (3.11's `PRECALL_BUILTIN_CLASS`), so `Pair(x, x)` skips the generic
//! call path (W4 1202 -> 1130 instructions per iteration), and monkeypatching and the
//! package's extensions (`register_object`) keep working.

use std::ffi::{c_void, CString};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;
use tether_core::address_map::AddressMap;

use pyo3::ffi;
use tether_core::any::{Any, AnyView, TypeIndex};
use tether_core::arc::ObjectBox;
use tether_core::cell::CellAccess;
use tether_core::error::take_last_error;
use tether_core::function::FunctionObj;
use tether_core::types::{self, FieldInfo};
use tether_core::Error;

use crate::errors::PyErrSet;
use crate::wrapper::{self, FunctionWrapper, Wrapper};
use crate::{call, convert, errors, state};

const MAX_TYPES: usize = types::MAX_TYPES;

#[allow(clippy::declare_interior_mutable_const)]
const NO_CLASS: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(null_mut());
static CLASSES: [AtomicPtr<ffi::PyTypeObject>; MAX_TYPES] = [NO_CLASS; MAX_TYPES];
static INDEX_OF: Mutex<Option<AddressMap<i32>>> = Mutex::new(None);

/// The class for native type `index`, built on first use. Null with a Python error when the
/// type is unknown.
#[inline]
pub unsafe fn class_for(index: i32) -> *mut ffi::PyTypeObject {
    let cls = match CLASSES.get(index as usize) {
        Some(slot) => slot.load(Ordering::Acquire),
        None => null_mut(),
    };
    if !cls.is_null() {
        return cls;
    }
    // SAFETY: GIL held by the caller.
    unsafe { build(index) }
}

/// The native type index of one of our classes (walking up to the nearest generated class
/// for a user subclass), or None.
#[inline]
pub unsafe fn index_of(cls: *mut ffi::PyTypeObject) -> Option<i32> {
    // Generated classes live as long as the process, so a hit in this lock-free cache (one
    // word: class address << 16 | type index) cannot be stale. Python subclasses, which can be
    // freed and their address reused, are never cached and take the locked path below.
    const WAYS: usize = 256;
    static CACHE: [std::sync::atomic::AtomicU64; WAYS] = [const { std::sync::atomic::AtomicU64::new(0) }; WAYS];
    let way = &CACHE[(cls as usize >> 4) % WAYS];
    let hit = way.load(std::sync::atomic::Ordering::Relaxed);
    if hit != 0 && hit >> 16 == cls as u64 {
        return Some((hit & 0xffff) as i32);
    }
    // SAFETY: the caller's guarantee.
    unsafe { index_of_slow(cls, way) }
}

/// [`index_of`] past its cache: the locked map, and the cache filled for a generated class.
#[cold]
#[inline(never)]
unsafe fn index_of_slow(cls: *mut ffi::PyTypeObject, way: &std::sync::atomic::AtomicU64) -> Option<i32> {
    let map = INDEX_OF.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&i) = map.as_ref().and_then(|m| m.get(&(cls as usize))) {
        if (0..=0xffff).contains(&i) && (cls as u64) < (1 << 47) {
            way.store((cls as u64) << 16 | i as u64, std::sync::atomic::Ordering::Relaxed);
        }
        return Some(i);
    }
    let map = map.as_ref()?;
    let mut t = cls;
    while !t.is_null() {
        if let Some(&i) = map.get(&(t as usize)) {
            return Some(i);
        }
        // SAFETY: a live type object; tp_base is a borrowed live type or null.
        t = unsafe { (*t).tp_base };
    }
    None
}

/// Python's name for a native type key: builtins live in `tether_ffi`.
fn python_name(key: &str) -> String {
    match key.strip_prefix("tether.") {
        Some("Error") => "tether_ffi.ErrorObject".into(),
        Some("Module") => "tether_ffi.ModuleObject".into(),
        Some(rest) => format!("tether_ffi.{rest}"),
        None if key.contains('.') => key.to_string(),
        None => format!("tether_ffi.{key}"),
    }
}

/// A C string that lives as long as the process, for what CPython keeps pointing at (3.11 keeps
/// a heap type's `tp_name` pointing at the spec's name; a getset descriptor its def's name and
/// doc). Held in a static, so it stays reachable (memcheck: no leak) after the types die at exit.
fn keep_cstring(s: &str) -> *const std::ffi::c_char {
    static KEPT: Mutex<Vec<CString>> = Mutex::new(Vec::new());
    let c = CString::new(s.replace('\0', "?")).expect("no NUL");
    let ptr = c.as_ptr();
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(c); // the bytes stay where they are
    ptr
}

fn slot(slot: std::ffi::c_int, pfunc: *mut c_void) -> ffi::PyType_Slot {
    ffi::PyType_Slot { slot, pfunc }
}

/// The slots every wrapper class has: our allocation, dealloc, construction and identity.
fn common_slots() -> Vec<ffi::PyType_Slot> {
    vec![
        slot(ffi::Py_tp_alloc, wrapper::wrapper_alloc as *mut c_void),
        slot(ffi::Py_tp_free, wrapper::wrapper_free as *mut c_void),
        slot(ffi::Py_tp_dealloc, wrapper::wrapper_dealloc as *mut c_void),
        slot(ffi::Py_tp_new, call::object_new as *mut c_void),
        slot(ffi::Py_tp_init, call::object_init as *mut c_void),
        slot(ffi::Py_tp_richcompare, wrapper::wrapper_richcompare as *mut c_void),
        slot(ffi::Py_tp_hash, wrapper::wrapper_hash as *mut c_void),
    ]
}

/// The special offset members (`__weaklistoffset__`, `__vectorcalloffset__`) and the list's
/// end: how PyType_FromSpec learns where such fields live. CPython copies the members into the
/// type, so the list only has to outlive `make_type`.
fn offset_members(members: &[(&'static std::ffi::CStr, usize)]) -> Vec<ffi::PyMemberDef> {
    let mut list: Vec<ffi::PyMemberDef> = members
        .iter()
        .map(|&(name, offset)| ffi::PyMemberDef {
            name: name.as_ptr(),
            type_code: ffi::Py_T_PYSSIZET,
            offset: offset as ffi::Py_ssize_t,
            flags: ffi::Py_READONLY,
            doc: null_mut(),
        })
        .collect();
    // SAFETY: an all-zero PyMemberDef ends the list.
    list.push(unsafe { std::mem::zeroed() });
    list
}

unsafe fn make_type(
    name: &str,
    doc: &str,
    basicsize: usize,
    mut slots: Vec<ffi::PyType_Slot>,
    flags: u64,
    bases: *mut ffi::PyObject,
) -> *mut ffi::PyTypeObject {
    // CPython copies the doc; it only has to outlive the call below.
    let doc = (!doc.is_empty()).then(|| CString::new(doc.replace('\0', "?")).expect("no NUL"));
    if let Some(doc) = &doc {
        slots.push(slot(ffi::Py_tp_doc, doc.as_ptr() as *mut c_void));
    }
    slots.push(slot(0, null_mut()));
    // CPython (before 3.12) keeps pointing at the spec's name.
    let mut spec = ffi::PyType_Spec {
        name: keep_cstring(name),
        basicsize: basicsize as std::ffi::c_int,
        itemsize: 0,
        flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_BASETYPE) as _,
        slots: slots.as_mut_ptr(),
    };
    spec.flags |= flags as std::ffi::c_uint;
    // SAFETY: a complete spec; slots are copied by CPython; `bases` is a tuple or null.
    unsafe { ffi::PyType_FromSpecWithBases(&mut spec, bases) as *mut ffi::PyTypeObject }
}

/// `tether_ffi.NativeClass`, the metaclass of the generated classes (made at import, before
/// the base class; never freed).
static NATIVE_CLASS: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(null_mut());

/// Lift the immutable-type flag the generated classes carry for CPython's call specializer;
/// returns what it lifted, for [`restore_specializable`]. Free-threaded builds never set it:
/// their `tp_flags` (atomic there) are not toggled under a lock.
///
/// # Safety
/// GIL held; `tp` is a live type.
#[cfg(not(Py_GIL_DISABLED))]
unsafe fn lift_specializable(tp: *mut ffi::PyTypeObject) -> std::ffi::c_ulong {
    // SAFETY: GIL held (the caller's guarantee), which orders every change of the flags.
    unsafe {
        let lifted = (*tp).tp_flags & ffi::Py_TPFLAGS_IMMUTABLETYPE as std::ffi::c_ulong;
        (*tp).tp_flags &= !lifted;
        lifted
    }
}

/// Put back what [`lift_specializable`] lifted (or set the flag on a new class: pass it).
///
/// # Safety
/// As [`lift_specializable`].
#[cfg(not(Py_GIL_DISABLED))]
unsafe fn restore_specializable(tp: *mut ffi::PyTypeObject, lifted: std::ffi::c_ulong) {
    // SAFETY: as in `lift_specializable`.
    unsafe { (*tp).tp_flags |= lifted };
}

#[cfg(Py_GIL_DISABLED)]
unsafe fn lift_specializable(_tp: *mut ffi::PyTypeObject) -> std::ffi::c_ulong {
    0
}

#[cfg(Py_GIL_DISABLED)]
unsafe fn restore_specializable(_tp: *mut ffi::PyTypeObject, _lifted: std::ffi::c_ulong) {}

/// Build `tether_ffi.NativeClass` (once, at import): a subclass of `type` whose classes are
/// immutable to CPython and mutable to Python code.
///
/// # Safety
/// GIL held.
pub unsafe fn build_metaclass() -> *mut ffi::PyTypeObject {
    let slots = vec![
        slot(ffi::Py_tp_setattro, native_class_setattro as *mut c_void),
        slot(ffi::Py_tp_dealloc, native_class_dealloc as *mut c_void),
    ];
    // SAFETY: GIL held (caller); `type` is a live static type.
    let meta = unsafe {
        let bases = ffi::PyTuple_Pack(1, std::ptr::addr_of_mut!(ffi::PyType_Type) as *mut ffi::PyObject);
        if bases.is_null() {
            return null_mut();
        }
        let meta = make_type(
            "tether_ffi.NativeClass",
            "The type of tether's generated classes: calls of them CPython specializes, and \
             Python code may still set and delete their attributes.",
            0,
            slots,
            0,
            bases,
        );
        ffi::Py_DECREF(bases);
        meta
    };
    NATIVE_CLASS.store(meta, Ordering::Release);
    meta
}

/// Make `cls`, a class this module just built, an instance of `tether_ffi.NativeClass` with
/// the immutable-type flag.
///
/// # Safety
/// GIL held; `cls` is a heap type made by `make_type` (whose metaclass is `type`, or this one),
/// not yet seen by Python code.
unsafe fn adopt_class(cls: *mut ffi::PyTypeObject) {
    let meta = NATIVE_CLASS.load(Ordering::Acquire);
    if meta.is_null() {
        return;
    }
    // SAFETY: GIL held; both metaclasses have `type`'s layout (NativeClass adds no field), so
    // only the class's type changes. The class holds a reference to its heap metaclass
    // (`native_class_dealloc` gives it back); `type`, a static type, was not counted for it.
    unsafe {
        // From 3.12 a subclass of a NativeClass instance is made with its base's metaclass.
        if ffi::Py_TYPE(cls as *mut ffi::PyObject) != meta {
            ffi::Py_INCREF(meta as *mut ffi::PyObject);
            (*(cls as *mut ffi::PyObject)).ob_type = meta;
        }
        restore_specializable(cls, ffi::Py_TPFLAGS_IMMUTABLETYPE as std::ffi::c_ulong);
    }
}

/// `setattr`/`delattr` on a generated class: `type`'s, with the immutable flag lifted for the
/// call (the flag is there for the call specializer, which reads it only when it specializes;
/// `type`'s setattr then drops what was specialized, as for any class).
unsafe extern "C" fn native_class_setattro(
    cls: *mut ffi::PyObject,
    name: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
) -> std::ffi::c_int {
    // SAFETY: CPython calls this with the GIL held on a live NativeClass instance (a type);
    // `type` has a tp_setattro. A nested setattr (from Python code the assignment runs)
    // restores what it found, so the outer one puts the flag back.
    unsafe {
        let tp = cls as *mut ffi::PyTypeObject;
        let lifted = lift_specializable(tp);
        let set = (*std::ptr::addr_of!(ffi::PyType_Type)).tp_setattro.expect("type has tp_setattro");
        let rc = set(cls, name, value);
        restore_specializable(tp, lifted);
        rc
    }
}

/// A NativeClass instance dies (a Python subclass of a generated class; the generated ones
/// live as long as the process): `type`'s dealloc, then its reference to the heap metaclass,
/// as CPython's dealloc of a heap type's instance gives it back.
unsafe extern "C" fn native_class_dealloc(cls: *mut ffi::PyObject) {
    // SAFETY: CPython calls this once for a dead class, which held a reference to its heap
    // metaclass.
    unsafe {
        let meta = ffi::Py_TYPE(cls);
        let dealloc = (*std::ptr::addr_of!(ffi::PyType_Type)).tp_dealloc.expect("type has tp_dealloc");
        dealloc(cls);
        ffi::Py_DECREF(meta as *mut ffi::PyObject);
    }
}

/// Build `tether_ffi.Object` (once, at import).
pub unsafe fn build_base_type() -> *mut ffi::PyTypeObject {
    // No weak-reference list: only classes declared weak-referenceable add one (`build`).
    let slots = common_slots();
    // SAFETY: GIL held at import.
    let tp = unsafe {
        make_type(
            "tether_ffi.Object",
            "The base class of every tether wrapper: one wrapper per native object.",
            std::mem::size_of::<Wrapper>(),
            slots,
            0,
            null_mut(),
        )
    };
    if !tp.is_null() {
        // SAFETY: GIL held; a class just made.
        unsafe { adopt_class(tp) };
        wrapper::BASE_TYPE.store(tp, Ordering::Release);
        CLASSES[TypeIndex::OBJECT as usize].store(tp, Ordering::Release);
        INDEX_OF
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(AddressMap::default)
            .insert(tp as usize, TypeIndex::OBJECT);
    }
    tp
}

#[cold]
unsafe fn build(index: i32) -> *mut ffi::PyTypeObject {
    // SAFETY: GIL held by the caller throughout.
    unsafe {
        let Some(info) = types::type_info(index) else {
            errors::raise(Error::type_error(format!("no native type is registered with index {index}")));
            return null_mut();
        };
        if index == TypeIndex::OBJECT {
            return wrapper::base_type();
        }
        let parent = if info.parent >= TypeIndex::OBJECT { class_for(info.parent) } else { wrapper::base_type() };
        if parent.is_null() {
            return null_mut();
        }
        let is_function = index == TypeIndex::FUNCTION;
        let mut slots = common_slots();
        let mut flags = 0u64;
        let inherited = (*parent).tp_basicsize as usize;
        let (basicsize, mut members) = if is_function {
            slots.push(slot(ffi::Py_tp_call, ffi::PyVectorcall_Call as *mut c_void));
            flags |= ffi::Py_TPFLAGS_HAVE_VECTORCALL;
            let members = offset_members(&[
                (c"__vectorcalloffset__", std::mem::offset_of!(FunctionWrapper, vectorcall)),
                (c"__weaklistoffset__", std::mem::offset_of!(FunctionWrapper, weaklist)),
            ]);
            (std::mem::size_of::<FunctionWrapper>(), members)
        } else if info.is_weak_referenceable() && (*parent).tp_weaklistoffset == 0 {
            // The list after the parent's layout; such a wrapper never fits its object's memory.
            (
                inherited + std::mem::size_of::<*mut ffi::PyObject>(),
                offset_members(&[(c"__weaklistoffset__", inherited)]),
            )
        } else {
            // A weak-referenceable parent's list, or none.
            (inherited, Vec::new())
        };
        if !members.is_empty() {
            slots.push(slot(ffi::Py_tp_members, members.as_mut_ptr() as *mut c_void));
        }
        let bases = ffi::PyTuple_Pack(1, parent as *mut ffi::PyObject);
        if bases.is_null() {
            return null_mut();
        }
        let cls = make_type(&python_name(info.key()), info.doc(), basicsize, slots, flags, bases);
        ffi::Py_DECREF(bases);
        if cls.is_null() {
            return null_mut();
        }
        if add_fields(cls, info).is_err() || set_meta(cls, index, info.key()).is_err() {
            ffi::Py_DECREF(cls as *mut ffi::PyObject);
            return null_mut();
        }
        // `Cls(...)` calls the constructor straight from the caller's arguments (no tuple,
        // no `type_call`); CPython reads a type's `tp_vectorcall` for calls of it and never
        // lets subclasses inherit it.
        (*cls).tp_vectorcall = Some(call::class_vectorcall);
        adopt_class(cls);
        INDEX_OF
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(AddressMap::default)
            .insert(cls as usize, index);
        let hook = state::CLASS_HOOK.get();
        if !hook.is_null() {
            let idx = ffi::PyLong_FromLong(index as _);
            let r =
                ffi::PyObject_CallFunctionObjArgs(hook, cls as *mut ffi::PyObject, idx, null_mut::<ffi::PyObject>());
            ffi::Py_DECREF(idx);
            if r.is_null() {
                return null_mut(); // the class stays registered by pointer but unpublished
            }
            ffi::Py_DECREF(r);
        }
        // Publish; a thread that built the same class meanwhile wins and ours is dropped.
        match CLASSES[index as usize].compare_exchange(null_mut(), cls, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => cls,
            Err(winner) => {
                ffi::Py_DECREF(cls as *mut ffi::PyObject);
                winner
            }
        }
    }
}

unsafe fn set_meta(cls: *mut ffi::PyTypeObject, index: i32, key: &str) -> Result<(), PyErrSet> {
    // SAFETY: GIL held; `cls` is a fresh heap type.
    unsafe {
        let idx = ffi::PyLong_FromLong(index as _);
        let key = ffi::PyUnicode_FromStringAndSize(key.as_ptr() as *const _, key.len() as _);
        let ok = !idx.is_null()
            && !key.is_null()
            && ffi::PyObject_SetAttrString(cls as *mut ffi::PyObject, c"__tether_type_index__".as_ptr(), idx) == 0
            && ffi::PyObject_SetAttrString(cls as *mut ffi::PyObject, c"__tether_type_key__".as_ptr(), key) == 0;
        ffi::Py_XDECREF(idx);
        ffi::Py_XDECREF(key);
        if ok {
            Ok(())
        } else {
            Err(PyErrSet)
        }
    }
}

unsafe fn add_fields(cls: *mut ffi::PyTypeObject, info: &'static types::TypeInfo) -> Result<(), PyErrSet> {
    for field in info.fields() {
        let def = Box::leak(Box::new(ffi::PyGetSetDef {
            name: keep_cstring(field.name()),
            get: Some(field_get),
            set: if field.setter.is_null() { None } else { Some(field_set) },
            doc: if field.doc().is_empty() { std::ptr::null() } else { keep_cstring(field.doc()) },
            // SAFETY: the registry's getters are live Functions, never freed.
            closure: Box::leak(Box::new(FieldClosure { field, cell: unsafe { CellAccess::of(field.getter) } }))
                as *const FieldClosure as *mut c_void,
        }));
        // SAFETY: GIL held; `def` is leaked so it outlives the descriptor.
        unsafe {
            let descr = ffi::PyDescr_NewGetSet(cls, def);
            if descr.is_null() {
                return Err(PyErrSet);
            }
            let rc = ffi::PyObject_SetAttrString(cls as *mut ffi::PyObject, def.name, descr);
            ffi::Py_DECREF(descr);
            if rc != 0 {
                return Err(PyErrSet);
            }
        }
    }
    Ok(())
}

/// A field descriptor's closure: the registry's field (never freed), and where its cell is
/// when the getter is a cell field's, so that a read touches neither the getter nor its data.
struct FieldClosure {
    field: &'static FieldInfo,
    cell: Option<CellAccess>,
}

/// Field getter: reads a cell field itself, else calls the native getter, with the GIL held.
/// The common read (a field of the class's own type holding an object with a live wrapper,
/// its cell free) runs with no call, so no register is saved on its way; anything else
/// goes to [`field_get_general`].
unsafe extern "C" fn field_get(slf: *mut ffi::PyObject, closure: *mut c_void) -> *mut ffi::PyObject {
    wrapper::prefetch_object_of(slf);
    // SAFETY: the descriptor checked `slf`'s type; `closure` is a leaked FieldClosure; the
    // view borrows the wrapper's +1, and the GIL is held.
    unsafe {
        let closure = &*(closure as *const FieldClosure);
        if let (Some(native), Some(access)) = (wrapper::native_if_any(slf), closure.cell) {
            if let Some(cell) = access.cell_of_own_type(native.view) {
                if let Some(live) = wrapper::live_wrapper_in_free(cell) {
                    return live;
                }
            }
        }
        field_get_general(slf, closure)
    }
}

/// [`field_get`]'s every case: a moved wrapper's error, a subtype's cell, a held cell waited
/// for, a value converted, a getter called.
///
/// # Safety
/// As [`field_get`].
#[inline(never)]
unsafe fn field_get_general(slf: *mut ffi::PyObject, closure: &FieldClosure) -> *mut ffi::PyObject {
    // SAFETY: this function's contract; the view borrows the wrapper's +1.
    unsafe {
        let Ok(wrapper::Native { view, .. }) = wrapper::native_view_of(slf) else { return null_mut() };
        if let Some(cell) = closure.cell.and_then(|access| access.cell_of(view)) {
            return read_cell(cell);
        }
        call_getter(closure.field.getter, view)
    }
}

/// A field's value from its getter (a field not stored in a cell), or null with an error set.
///
/// # Safety
/// GIL held; `getter` is a live Function; `this` borrows a live object.
#[inline(never)]
unsafe fn call_getter(getter: *mut tether_core::object::ObjectHeader, this: AnyView<'_>) -> *mut ffi::PyObject {
    // SAFETY: the caller's guarantees; a Function's body is a FunctionObj.
    unsafe {
        let body = &(*(getter as *const ObjectBox<FunctionObj>)).value;
        let mut result = Any::none();
        if (body.safe_call)(getter, &this, 1, &mut result) != 0 {
            errors::raise(take_last_error());
            return null_mut();
        }
        convert::from_any(result)
    }
}

/// A cell field's value: an object's live wrapper straight from the held cell (no count
/// change), anything else converted from a copy.
///
/// # Safety
/// GIL held; `cell` is in a live object.
#[inline]
unsafe fn read_cell(cell: &tether_core::cell::AnyCell) -> *mut ffi::PyObject {
    // SAFETY: GIL held (caller).
    let live = unsafe { wrapper::live_wrapper_in(cell) };
    if !live.is_null() {
        return live;
    }
    // SAFETY: GIL held.
    unsafe { convert::from_any(cell.get()) }
}

/// Field setter: calls the native setter (`del` is refused).
unsafe extern "C" fn field_set(
    slf: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
    closure: *mut c_void,
) -> std::ffi::c_int {
    // SAFETY: as in `field_get`; the setter is non-null (only then is `set` installed).
    unsafe {
        let field = (*(closure as *const FieldClosure)).field;
        if value.is_null() {
            errors::raise(Error::attribute(format!("field {:?} cannot be deleted", field.name())));
            return -1;
        }
        let r = call::call_native(field.setter, &[slf, value]);
        if r.is_null() {
            return -1;
        }
        ffi::Py_DECREF(r);
        0
    }
}
