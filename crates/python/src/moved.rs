//! `x._move()`: the wrapper gives its native reference to the next call it is passed to.
//!
//! `_move()` unties the wrapper at once (it becomes unusable) and returns a `Moved` token
//! owning the +1. Passing the token as an argument hands that reference to the call, which
//! drops it when the call returns; a token that is never passed drops it when it dies.

use std::sync::Mutex;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::PyTypeInfo;
use tether_core::arc::ObjectRef;
use tether_core::Error;

use crate::errors::PyErrSet;
use crate::{errors, wrapper};

/// A native reference moved out of a wrapper, waiting to be passed to a call.
#[pyclass(name = "Moved", module = "tether_ffi._native", frozen)]
pub struct Moved {
    obj: Mutex<Option<ObjectRef>>,
}

/// `_move()` on wrapper `o`.
///
/// # Safety
/// GIL held; `o` is a live object.
pub unsafe fn move_out(py: Python<'_>, o: *mut ffi::PyObject) -> PyResult<Py<Moved>> {
    // SAFETY: GIL held (caller).
    unsafe {
        if !wrapper::is_wrapper(o) {
            errors::raise(Error::type_error("_move() needs a tether object"));
            return Err(PyErr::fetch(py));
        }
        match wrapper::take_for_move(o) {
            Ok(obj) => Py::new(py, Moved { obj: Mutex::new(Some(obj)) }),
            Err(PyErrSet) => Err(PyErr::fetch(py)),
        }
    }
}

/// If `o` is a `Moved` token, take its reference (Err with a Python error if already used).
///
/// # Safety
/// GIL held; `o` live.
pub unsafe fn take_if_moved(o: *mut ffi::PyObject) -> Result<Option<ObjectRef>, PyErrSet> {
    // SAFETY: GIL held (caller).
    unsafe {
        let py = Python::assume_attached();
        let tp = Moved::type_object_raw(py);
        if ffi::PyObject_TypeCheck(o, tp) == 0 {
            return Ok(None);
        }
        let token = &*(Bound::from_borrowed_ptr(py, o).cast_into_unchecked::<Moved>().get() as *const Moved);
        let taken = token.obj.lock().unwrap_or_else(|e| e.into_inner()).take();
        match taken {
            Some(obj) => Ok(Some(obj)),
            None => {
                errors::raise(Error::value("this moved reference was already passed to a call"));
                Err(PyErrSet)
            }
        }
    }
}
