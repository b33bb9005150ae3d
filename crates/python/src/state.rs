//! Process-wide state of the frontend: its tie domain (allocator slots and side table), and
//! Python objects handed over by the pure-Python package at import (hooks and exception
//! classes).

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use tether_core::boundary::Frontend;

use crate::wrapper::PyHost;

/// Every object's one Python wrapper is tied here (the process has one interpreter).
static FRONTEND: Frontend<PyHost> = Frontend::new();

#[inline]
pub fn frontend() -> &'static Frontend<PyHost> {
    &FRONTEND
}

/// The tag of this frontend's allocator (objects with it carry a slot prefix).
#[inline]
pub fn tag() -> u32 {
    FRONTEND.tag()
}

/// A Python object kept alive for the life of the process (set once at import).
pub struct PyGlobal(AtomicPtr<ffi::PyObject>);

impl PyGlobal {
    pub const fn new() -> Self {
        PyGlobal(AtomicPtr::new(std::ptr::null_mut()))
    }
    /// Borrowed; null until set.
    #[inline]
    pub fn get(&self) -> *mut ffi::PyObject {
        self.0.load(Ordering::Acquire)
    }
    /// Store a new strong reference (the old one, if any, is leaked: these are immortal).
    ///
    /// # Safety
    /// The GIL is held and `obj` is a live object.
    pub unsafe fn set(&self, obj: *mut ffi::PyObject) {
        // SAFETY: the caller guarantees `obj` is live and the GIL is held.
        unsafe { ffi::Py_INCREF(obj) };
        self.0.store(obj, Ordering::Release);
    }
}

impl Default for PyGlobal {
    fn default() -> Self {
        Self::new()
    }
}

/// `tether_ffi._class_hook(cls, type_index)`: adds Python-level methods to a new class.
pub static CLASS_HOOK: PyGlobal = PyGlobal::new();
/// `tether_ffi._raise_native(kind, message, backtrace) -> exception instance`.
pub static MAKE_ERROR: PyGlobal = PyGlobal::new();
/// `tether_ffi._error_kind(exc) -> str`: the native kind for a Python exception.
pub static ERROR_KIND: PyGlobal = PyGlobal::new();
