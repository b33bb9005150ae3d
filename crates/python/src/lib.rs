//! tether's Python frontend: the `tether_ffi._native` extension.
//!
//! Module map:
//! - [`wrapper`] — the hand-built wrapper base type and the CPython adapter of the core's
//!   tying state machine (revival in place keeps `id()` stable)
//! - [`classes`] — one Python class per registered native type, built from reflection
//! - [`call`] — the Function vectorcall, constructors, the shared call path
//! - [`convert`] — Python values <-> native cells
//! - [`callback`] — Python callables as native Functions
//! - [`host_value`] — any other Python object held by native code, coming back as itself
//! - [`errors`] — native errors <-> Python exceptions
//! - [`method`] — native methods in generated classes
//! - [`moved`] — `x._move()`
//! - [`pending`] — releasing Python memory from native frees on any thread
//! - [`api`] — the functions `tether_ffi` (pure Python) builds its API on
//! - [`state`] — process-wide state

#[cfg(feature = "mimalloc")]
mod allocator;
mod api;
mod call;
mod callback;
mod classes;
mod convert;
mod errors;
mod host_value;
mod method;
mod moved;
mod pending;
mod state;
mod wrapper;

use std::sync::OnceLock;

use pyo3::prelude::*;

/// Every Rust allocation of this extension, native objects included, comes from mimalloc
/// (see `allocator`). (Without the `mimalloc` feature, the memcheck build, the system
/// allocator.)
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: allocator::MiMalloc = allocator::MiMalloc;

static ALLOCATOR: OnceLock<Result<u32, String>> = OnceLock::new();

/// Install the frontend allocator once per process: every object allocated from now on
/// carries a tying slot.
fn install_allocator() -> PyResult<u32> {
    let r = ALLOCATOR.get_or_init(|| {
        tether_core::init();
        callback::register_safe_call();
        state::frontend().install_allocator(Some(pending::on_native_free)).map_err(|e| e.to_string())
    });
    r.clone().map_err(pyo3::exceptions::PyRuntimeError::new_err)
}

#[pymodule(gil_used = false)]
#[pyo3(name = "_native")]
fn native_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Another frontend's tether-core runs this process (a JVM that embeds Python, say): this
    // copy must not become a second host.
    if let Some(other) = tether_core::plugin::other_host() {
        let why = tether_core::plugin::other_host_error("tether_ffi", &other);
        return Err(pyo3::exceptions::PyImportError::new_err(why.message().to_string()));
    }
    install_allocator()?;
    let py = m.py();
    // SAFETY: the GIL is held during module init.
    let meta = unsafe { classes::build_metaclass() };
    if meta.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new type object; the module takes a reference of its own.
    m.add("NativeClass", unsafe { Bound::from_borrowed_ptr(py, meta as *mut pyo3::ffi::PyObject) })?;
    // SAFETY: the GIL is held during module init.
    let base = unsafe { classes::build_base_type() };
    if base.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `base` is a new strong reference to the type object.
    let base = unsafe { Bound::from_borrowed_ptr(py, base as *mut pyo3::ffi::PyObject) };
    m.add("Object", base)?;
    // SAFETY: the GIL is held during module init.
    let method_type = unsafe { method::build_type() };
    if method_type.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new type object; the module takes a reference of its own.
    m.add("Method", unsafe { Bound::from_borrowed_ptr(py, method_type as *mut pyo3::ffi::PyObject) })?;
    m.add_class::<moved::Moved>()?;
    // SAFETY: the GIL is held during module init.
    unsafe { callback::prepare() };
    api::register(m)
}
