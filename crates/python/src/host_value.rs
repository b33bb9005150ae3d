//! Python objects held by native code: any value with no native conversion (a `Payload()`, a
//! set, a lock) crosses as a `tether.HostValue` holding one strong reference, and comes back
//! to Python as the very same object (`echo(o) is o`).

use std::ffi::c_void;

use pyo3::ffi;
use tether_core::arc::ObjectRef;
use tether_core::host_value::{HostLanguage, HostValueObj};

use crate::errors::{self, PyErrSet};
use crate::pending::{self, Release};

/// Python, as the core's host values name it.
pub static PYTHON: HostLanguage = HostLanguage { name: "Python", release: release_value };

/// Drops the reference at the next safe point on a thread with the GIL (never inside native
/// code: a `__del__` may run), or leaks it once the interpreter is finalizing.
unsafe extern "C" fn release_value(value: *mut c_void) {
    pending::release(Release::Decref(value as *mut ffi::PyObject));
}

/// A new host value holding `o`.
///
/// # Safety
/// GIL held; `o` is live.
pub unsafe fn hold(o: *mut ffi::PyObject) -> ObjectRef {
    // SAFETY: `o` is live and the GIL is held (this function's contract), so its type's name is
    // a readable C string and taking a reference is allowed; the HostValue owns that reference
    // and `release_value` gives it back.
    unsafe {
        let name = std::ffi::CStr::from_ptr((*ffi::Py_TYPE(o)).tp_name).to_string_lossy();
        HostValueObj::new(ffi::Py_NewRef(o) as *mut c_void, &PYTHON, &name).into()
    }
}

/// The Python object a host value holds (a new reference), or a TypeError (set) for another
/// language's value.
///
/// # Safety
/// GIL held; `value` is live.
pub unsafe fn value_of(value: &HostValueObj) -> Result<*mut ffi::PyObject, PyErrSet> {
    match value.value_for(&PYTHON) {
        // SAFETY: the HostValue keeps the object alive; the GIL is held (caller).
        Ok(o) => Ok(unsafe { ffi::Py_NewRef(o as *mut ffi::PyObject) }),
        Err(e) => {
            // SAFETY: the GIL is held (caller).
            unsafe { errors::raise(e) };
            Err(PyErrSet)
        }
    }
}
