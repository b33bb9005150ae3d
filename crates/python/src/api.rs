//! The functions the pure-Python package builds its API on (cold paths; pyo3 is fine here).

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use tether_core::any::{Any, TypeIndex};
use tether_core::arc::ObjectRef;
use tether_core::containers::{ArrayObj, MapObj};
use tether_core::{function, plugin, types, Error};

use crate::convert::{self, Arena};
use crate::errors::PyErrSet;
use crate::{classes, errors, moved, pending, state, wrapper};

/// Take ownership of a new reference (or the pending error when null).
fn owned(py: Python<'_>, p: *mut ffi::PyObject) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: `p` is a new reference or null with an error set.
    unsafe { Bound::from_owned_ptr_or_err(py, p) }
}

fn raise(py: Python<'_>, e: Error) -> PyErr {
    // SAFETY: the GIL is held (we have a token).
    unsafe { errors::raise(e) };
    PyErr::fetch(py)
}

fn return_object(py: Python<'_>, obj: ObjectRef) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: GIL held.
    owned(py, unsafe { wrapper::return_object(obj) })
}

fn native_ref(py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<ObjectRef> {
    // SAFETY: GIL held; the wrapper's +1 keeps the object alive while we add our own.
    unsafe {
        if !wrapper::is_wrapper(o.as_ptr()) {
            return Err(PyTypeError::new_err("expected a tether object"));
        }
        match wrapper::native_of(o.as_ptr()) {
            Ok(p) => Ok(ObjectRef::from_borrowed(p)),
            Err(PyErrSet) => Err(PyErr::fetch(py)),
        }
    }
}

fn from_any(py: Python<'_>, v: Any) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: GIL held.
    owned(py, unsafe { convert::from_any(v) })
}

fn to_any(py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Any> {
    // SAFETY: GIL held; `o` live.
    unsafe { convert::to_any(o.as_ptr()) }.map_err(|PyErrSet| PyErr::fetch(py))
}

/// The global function registered under `name`.
#[pyfunction]
fn get_global_func<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    match function::get_global(name) {
        Some(f) => return_object(py, f.0.into()),
        None => Err(raise(py, Error::value(format!("no global function is registered as {name:?}")))),
    }
}

/// Every registered global function name, sorted.
#[pyfunction]
fn list_global_funcs() -> Vec<String> {
    function::list_globals()
}

/// The Python class of a native type index.
#[pyfunction]
fn class_for_index(py: Python<'_>, index: i32) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: GIL held.
    let cls = unsafe { classes::class_for(index) };
    if cls.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: classes are never freed; take a new reference.
    Ok(unsafe { Bound::from_borrowed_ptr(py, cls as *mut ffi::PyObject) })
}

/// The native type index registered under `key`, or None.
#[pyfunction]
fn type_index_of(key: &str) -> Option<i32> {
    types::type_index_of(key)
}

/// Reflection of a type, by name: `key`, `doc`, `parent`, `has_constructor`, `fields` and
/// `methods` (every member, inherited ones first: `types::all_fields`; a field is `name`, `doc`,
/// `type_hint`, `settable`, a method `name`, `doc`, `is_static`), and `own_methods` (the type's
/// own, with their `func`, which the class defines; inherited ones come through its bases).
#[pyfunction]
fn type_reflection<'py>(py: Python<'py>, index: i32) -> PyResult<Bound<'py, PyDict>> {
    let info = types::type_info(index)
        .ok_or_else(|| raise(py, Error::type_error(format!("no native type has index {index}"))))?;
    let field = |f: &types::FieldInfo| -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", f.name())?;
        d.set_item("doc", f.doc())?;
        d.set_item("type_hint", f.type_hint())?;
        d.set_item("settable", !f.setter.is_null())?;
        Ok(d)
    };
    let method = |m: &types::MethodInfo| -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("name", m.name())?;
        d.set_item("doc", m.doc())?;
        d.set_item("is_static", m.is_static != 0)?;
        Ok(d)
    };
    let own_methods = PyList::empty(py);
    for m in info.methods() {
        let d = method(m)?;
        d.set_item("func", return_object(py, m.func().0.into())?)?;
        own_methods.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("key", info.key())?;
    out.set_item("doc", info.doc())?;
    out.set_item("parent", info.parent)?;
    out.set_item("has_constructor", !info.constructor.is_null())?;
    match info.constructor() {
        Some(ctor) => out.set_item("constructor", return_object(py, ctor.0.into())?)?,
        None => out.set_item("constructor", py.None())?,
    }
    out.set_item("own_methods", own_methods)?;
    out.set_item("fields", types::all_fields(info).into_iter().map(field).collect::<PyResult<Vec<_>>>()?)?;
    out.set_item("methods", types::all_methods(info).into_iter().map(method).collect::<PyResult<Vec<_>>>()?)?;
    Ok(out)
}

/// Every registered type as (index, key).
#[pyfunction]
fn list_types() -> Vec<(i32, &'static str)> {
    types::list_types()
}

/// Load a plugin: (path, [(name, Function)], [type index]).
#[pyfunction]
fn load_module<'py>(py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyTuple>> {
    let m = py.detach(|| plugin::load_module(path)).map_err(|e| raise(py, e))?;
    let funcs = PyList::empty(py);
    for (name, f) in m.functions() {
        funcs.append((name.as_str(), return_object(py, f.0.clone().into())?))?;
    }
    (m.path(), funcs, m.types().to_vec()).into_pyobject(py)
}

/// Check bindings generated for the plugin at `path` against it: `manifest` is the
/// `(item, hash)` list they recorded; a ValueError naming each added, removed or changed item
/// when the plugin's registry differs (core `manifest::check_manifest`).
#[pyfunction]
fn check_bindings(py: Python<'_>, path: &str, manifest: Vec<(String, String)>) -> PyResult<()> {
    let m = py.detach(|| plugin::load_module(path)).map_err(|e| raise(py, e))?;
    tether_core::manifest::check_manifest(&m, &manifest).map_err(|msg| raise(py, Error::value(msg)))
}

/// Details of a Function wrapper: (name, doc, arity, flags).
#[pyfunction]
fn function_info(py: Python<'_>, f: &Bound<'_, PyAny>) -> PyResult<(String, String, i32, u32)> {
    let obj = native_ref(py, f)?;
    let f = obj.try_cast::<function::FunctionObj>().map_err(|_| PyTypeError::new_err("expected a tether Function"))?;
    let f = function::Function(f);
    Ok((f.name().to_string(), f.doc().to_string(), f.arity(), f.flags()))
}

/// The type key of a wrapper's native object.
#[pyfunction]
fn type_key_of(py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<String> {
    let obj = native_ref(py, o)?;
    Ok(types::kind_name(obj.type_index()))
}

/// Do two wrappers name the same native object?
#[pyfunction]
fn same_as(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<bool> {
    // SAFETY: GIL held.
    if !unsafe { wrapper::is_wrapper(b.as_ptr()) } {
        return Ok(false);
    }
    Ok(native_ref(py, a)?.ptr_eq(&native_ref(py, b)?))
}

/// `x._move()`.
#[pyfunction]
fn move_out(py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<moved::Moved>> {
    // SAFETY: GIL held.
    unsafe { moved::move_out(py, o.as_ptr()) }
}

/// Was the wrapper moved out?
#[pyfunction]
fn is_moved(o: &Bound<'_, PyAny>) -> bool {
    // SAFETY: GIL held; checked to be a wrapper first.
    unsafe {
        wrapper::is_wrapper(o.as_ptr())
            && (*(o.as_ptr() as *mut wrapper::Wrapper)).native.object(std::sync::atomic::Ordering::Acquire).is_null()
    }
}

fn array_of<'a>(py: Python<'_>, obj: &'a ObjectRef) -> PyResult<&'a ArrayObj> {
    obj.downcast_ref::<ArrayObj>().ok_or_else(|| raise(py, Error::type_error("expected a tether Array")))
}

fn map_of<'a>(py: Python<'_>, obj: &'a ObjectRef) -> PyResult<&'a MapObj> {
    obj.downcast_ref::<MapObj>().ok_or_else(|| raise(py, Error::type_error("expected a tether Map")))
}

#[pyfunction]
fn array_len(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<usize> {
    let obj = native_ref(py, a)?;
    Ok(array_of(py, &obj)?.len())
}

#[pyfunction]
fn array_get<'py>(py: Python<'py>, a: &Bound<'py, PyAny>, i: i64) -> PyResult<Bound<'py, PyAny>> {
    let obj = native_ref(py, a)?;
    let item = array_of(py, &obj)?.get(i).map_err(|e| raise(py, e))?.clone();
    from_any(py, item)
}

#[pyfunction]
fn array_items<'py>(py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let obj = native_ref(py, a)?;
    let out = PyList::empty(py);
    for item in array_of(py, &obj)?.items() {
        out.append(from_any(py, item.clone())?)?;
    }
    Ok(out)
}

#[pyfunction]
fn map_len(py: Python<'_>, m: &Bound<'_, PyAny>) -> PyResult<usize> {
    let obj = native_ref(py, m)?;
    Ok(map_of(py, &obj)?.len())
}

/// `m[key]`; raises KeyError when missing.
#[pyfunction]
fn map_get<'py>(py: Python<'py>, m: &Bound<'py, PyAny>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let obj = native_ref(py, m)?;
    let map = map_of(py, &obj)?;
    let mut arena = Arena::new();
    // SAFETY: GIL held; `key` outlives the view.
    let k = unsafe { convert::to_view(key.as_ptr(), &mut arena, false) }.map_err(|PyErrSet| PyErr::fetch(py))?;
    match map.get(&k) {
        Some(v) => from_any(py, v.clone()),
        None => Err(pyo3::exceptions::PyKeyError::new_err(key.clone().unbind())),
    }
}

#[pyfunction]
fn map_contains(py: Python<'_>, m: &Bound<'_, PyAny>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    let obj = native_ref(py, m)?;
    let map = map_of(py, &obj)?;
    let mut arena = Arena::new();
    // SAFETY: as in `map_get`; an unconvertible key is simply absent.
    match unsafe { convert::to_view(key.as_ptr(), &mut arena, false) } {
        Ok(k) => Ok(map.get(&k).is_some()),
        Err(PyErrSet) => {
            drop(PyErr::fetch(py));
            Ok(false)
        }
    }
}

/// [(key, value)] in insertion order.
#[pyfunction]
fn map_items<'py>(py: Python<'py>, m: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
    let obj = native_ref(py, m)?;
    let out = PyList::empty(py);
    for (k, v) in map_of(py, &obj)?.entries() {
        out.append((from_any(py, k.clone())?, from_any(py, v.clone())?))?;
    }
    Ok(out)
}

/// A new native Array from an iterable's items.
#[pyfunction]
fn make_array<'py>(py: Python<'py>, items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let list = PyList::empty(py);
    for item in items.try_iter()? {
        list.append(item?)?;
    }
    let arr = to_any(py, list.as_any())?;
    from_any(py, arr)
}

/// A new native Map from a dict's (or mapping's) items.
#[pyfunction]
fn make_map<'py>(py: Python<'py>, mapping: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    d.call_method1("update", (mapping,))?;
    let m = to_any(py, d.as_any())?;
    from_any(py, m)
}

/// Call a Function wrapper with explicit arguments (used by generated methods).
#[pyfunction]
fn to_native_and_back<'py>(py: Python<'py>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let v = to_any(py, value)?;
    from_any(py, v)
}

/// Python releases waiting for the next entry (frees queued by threads without the GIL).
#[pyfunction]
fn pending_releases(_py: Python<'_>) -> usize {
    // SAFETY: `_py` proves the GIL is held.
    unsafe { pending::queued() }
}

/// Release what other threads queued, now.
#[pyfunction]
fn drain_pending(_py: Python<'_>) {
    // SAFETY: the GIL is held (we have a token).
    unsafe { pending::drain() }
}

/// The slot state of a wrapper's native object: "prefix" or "side" (where identity lives).
#[pyfunction]
fn slot_kind(py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let obj = native_ref(py, o)?;
    Ok(if obj.header().alloc_tag == state::tag() { "prefix" } else { "side" })
}

/// Called from `atexit`: from now on native frees never touch Python.
#[pyfunction]
fn mark_finalizing() {
    pending::mark_finalizing();
}

/// Install the package's hooks: the class hook, the error factory and the kind mapper.
#[pyfunction]
fn set_hooks(class_hook: &Bound<'_, PyAny>, make_error: &Bound<'_, PyAny>, error_kind: &Bound<'_, PyAny>) {
    // SAFETY: GIL held; the references are kept for the life of the process.
    unsafe {
        state::CLASS_HOOK.set(class_hook.as_ptr());
        state::MAKE_ERROR.set(make_error.as_ptr());
        state::ERROR_KIND.set(error_kind.as_ptr());
    }
}

/// The native type index constants the package needs.
#[pyfunction]
fn builtin_indices() -> Vec<(&'static str, i32)> {
    vec![
        ("Object", TypeIndex::OBJECT),
        ("Function", TypeIndex::FUNCTION),
        ("Array", TypeIndex::ARRAY),
        ("Map", TypeIndex::MAP),
        ("Module", TypeIndex::MODULE),
        ("Error", TypeIndex::ERROR),
        ("Opaque", TypeIndex::OPAQUE),
    ]
}

/// Is `o` a tether wrapper?
#[pyfunction]
fn is_object(o: &Bound<'_, PyAny>) -> bool {
    // SAFETY: GIL held.
    unsafe { wrapper::is_wrapper(o.as_ptr()) }
}

/// The signature of a Function wrapper, or None when it has none: `(params, result, receiver)`,
/// each parameter `(name, annotation, has_default, default, keyword)`, annotations written as
/// Python writes them (`signature::render_type`).
#[pyfunction]
fn function_signature<'py>(py: Python<'py>, f: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyTuple>>> {
    use tether_core::signature::{render_type, Language};
    let obj = native_ref(py, f)?;
    let f = obj.try_cast::<function::FunctionObj>().map_err(|_| PyTypeError::new_err("expected a tether Function"))?;
    let Some(sig) = f.signature() else { return Ok(None) };
    let params = PyList::empty(py);
    for (i, p) in sig.params().iter().enumerate() {
        let name = if p.name().is_empty() { format!("arg{i}") } else { p.name().to_string() };
        let default = match p.default() {
            // SAFETY: GIL held; a plain value (interned defaults are never objects).
            Some(d) => owned(py, unsafe { convert::from_any(d.clone()) })?,
            None => py.None().into_bound(py),
        };
        params.append((name, render_type(p.ty(), Language::Python), p.default().is_some(), default, p.keyword()))?;
    }
    Some((params, render_type(sig.result(), Language::Python), sig.has_receiver()).into_pyobject(py)).transpose()
}

/// A native method (descriptor) calling Function wrapper `func`.
#[pyfunction]
fn make_method<'py>(py: Python<'py>, func: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: GIL held.
    owned(py, unsafe { crate::method::new_method(func.as_ptr()) })
}

/// Put `value` straight into a class's dict (for names like `__name__` that `setattr` on a
/// type would treat as the type's own attribute).
#[pyfunction]
fn set_class_attr(
    cls: &Bound<'_, pyo3::types::PyType>,
    name: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: GIL held; `cls` is a type object whose dict we update, then invalidate caches.
    unsafe {
        let tp = cls.as_ptr() as *mut ffi::PyTypeObject;
        if ffi::PyDict_SetItem((*tp).tp_dict, name.as_ptr(), value.as_ptr()) != 0 {
            return Err(PyErr::fetch(cls.py()));
        }
        ffi::PyType_Modified(tp);
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("MAX_NESTING_DEPTH", tether_core::nesting::MAX_DEPTH)?;
    // The constants shared across languages, from their one source (core constants.rs).
    let constants = pyo3::types::PyDict::new(m.py());
    for &(name, value) in tether_core::constants::SHARED {
        constants.set_item(name, value)?;
    }
    m.add("CONSTANTS", constants)?;
    m.add("ERROR_KINDS", pyo3::types::PyTuple::new(m.py(), tether_core::constants::ERROR_KINDS)?)?;
    m.add_function(wrap_pyfunction!(get_global_func, m)?)?;
    m.add_function(wrap_pyfunction!(list_global_funcs, m)?)?;
    m.add_function(wrap_pyfunction!(class_for_index, m)?)?;
    m.add_function(wrap_pyfunction!(type_index_of, m)?)?;
    m.add_function(wrap_pyfunction!(type_reflection, m)?)?;
    m.add_function(wrap_pyfunction!(list_types, m)?)?;
    m.add_function(wrap_pyfunction!(load_module, m)?)?;
    m.add_function(wrap_pyfunction!(check_bindings, m)?)?;
    m.add_function(wrap_pyfunction!(function_info, m)?)?;
    m.add_function(wrap_pyfunction!(function_signature, m)?)?;
    m.add_function(wrap_pyfunction!(type_key_of, m)?)?;
    m.add_function(wrap_pyfunction!(same_as, m)?)?;
    m.add_function(wrap_pyfunction!(move_out, m)?)?;
    m.add_function(wrap_pyfunction!(is_moved, m)?)?;
    m.add_function(wrap_pyfunction!(array_len, m)?)?;
    m.add_function(wrap_pyfunction!(array_get, m)?)?;
    m.add_function(wrap_pyfunction!(array_items, m)?)?;
    m.add_function(wrap_pyfunction!(map_len, m)?)?;
    m.add_function(wrap_pyfunction!(map_get, m)?)?;
    m.add_function(wrap_pyfunction!(map_contains, m)?)?;
    m.add_function(wrap_pyfunction!(map_items, m)?)?;
    m.add_function(wrap_pyfunction!(make_array, m)?)?;
    m.add_function(wrap_pyfunction!(make_map, m)?)?;
    m.add_function(wrap_pyfunction!(to_native_and_back, m)?)?;
    m.add_function(wrap_pyfunction!(pending_releases, m)?)?;
    m.add_function(wrap_pyfunction!(drain_pending, m)?)?;
    m.add_function(wrap_pyfunction!(slot_kind, m)?)?;
    m.add_function(wrap_pyfunction!(mark_finalizing, m)?)?;
    m.add_function(wrap_pyfunction!(set_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_indices, m)?)?;
    m.add_function(wrap_pyfunction!(is_object, m)?)?;
    m.add_function(wrap_pyfunction!(set_class_attr, m)?)?;
    m.add_function(wrap_pyfunction!(make_method, m)?)?;
    Ok(())
}
