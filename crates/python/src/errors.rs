//! Native errors <-> Python exceptions.
//!
//! A native `Error` becomes an instance of `tether_ffi.<Kind>` (a subclass of both
//! `tether_ffi.Error` and the matching builtin exception) made by the package's
//! `_make_error` hook, carrying `.kind` and `.backtrace`. A Python exception raised in a
//! callback travels through native frames as an `Error` whose payload holds the exception
//! object itself, and is re-raised as that same object when it reaches Python again.

use std::ffi::c_void;
use std::ptr::null_mut;

use pyo3::ffi;
use tether_core::any::Any;
use tether_core::arc::ObjectArc;
use tether_core::containers::OpaqueObj;
use tether_core::Error;

use crate::pending::{self, Release};
use crate::state;

/// Marker error: a Python exception is set (raise it by returning NULL / -1 to CPython).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PyErrSet;

/// `OpaqueObj::owner` of payloads made by this frontend ("tethpy").
pub const OWNER: u64 = 0x7465_7468_7079;

fn py_str(s: &str) -> *mut ffi::PyObject {
    // SAFETY: valid UTF-8 of the given length; GIL held by callers.
    unsafe { ffi::PyUnicode_FromStringAndSize(s.as_ptr() as *const _, s.len() as _) }
}

/// Raise `e` as a Python exception.
///
/// # Safety
/// GIL held.
pub unsafe fn raise(e: Error) {
    // SAFETY: GIL held (caller).
    unsafe {
        if let Some(op) = e.payload().view().downcast_ref::<OpaqueObj>() {
            if op.owner == OWNER && !op.ptr.is_null() {
                let exc = op.ptr as *mut ffi::PyObject;
                ffi::PyErr_SetObject(ffi::Py_TYPE(exc) as *mut ffi::PyObject, exc);
                return;
            }
        }
        let hook = state::MAKE_ERROR.get();
        if hook.is_null() {
            let msg = format!("{}: {}", e.kind(), e.message());
            raise_builtin(ffi::PyExc_RuntimeError, &msg);
            return;
        }
        let code = ffi::PyLong_FromLong(e.code().code() as _);
        let (kind, message, bt) = (py_str(e.kind()), py_str(e.message()), py_str(e.backtrace()));
        let exc = if code.is_null() || kind.is_null() || message.is_null() || bt.is_null() {
            null_mut()
        } else {
            ffi::PyObject_CallFunctionObjArgs(hook, code, kind, message, bt, null_mut::<ffi::PyObject>())
        };
        ffi::Py_XDECREF(code);
        ffi::Py_XDECREF(kind);
        ffi::Py_XDECREF(message);
        ffi::Py_XDECREF(bt);
        if !exc.is_null() {
            ffi::PyErr_SetObject(ffi::Py_TYPE(exc) as *mut ffi::PyObject, exc);
            ffi::Py_DECREF(exc);
        }
    }
}

/// [`raise`] `e` and return the marker that a Python error is set.
///
/// # Safety
/// GIL held.
pub unsafe fn raised(e: Error) -> PyErrSet {
    // SAFETY: GIL held (caller).
    unsafe { raise(e) };
    PyErrSet
}

/// Raise a builtin exception type with a message.
///
/// # Safety
/// GIL held.
pub unsafe fn raise_builtin(exc_type: *mut ffi::PyObject, message: &str) {
    let msg = std::ffi::CString::new(message.replace('\0', "?")).expect("no NUL");
    // SAFETY: GIL held (caller).
    unsafe { ffi::PyErr_SetString(exc_type, msg.as_ptr()) };
}

unsafe extern "C" fn release_exception(ptr: *mut c_void) {
    pending::release(Release::Decref(ptr as *mut ffi::PyObject));
}

/// Take the pending Python exception and turn it into a native `Error` carrying it.
///
/// # Safety
/// GIL held and an exception is set.
pub unsafe fn take_python_error() -> Error {
    // SAFETY: GIL held (caller).
    unsafe {
        let exc = fetch_exception();
        if exc.is_null() {
            return Error::runtime("a Python callback failed without an exception");
        }
        let kind = exception_kind(exc);
        let message = {
            let s = ffi::PyObject_Str(exc);
            let text = if s.is_null() {
                ffi::PyErr_Clear();
                String::from("<unprintable exception>")
            } else {
                let mut len = 0;
                let p = ffi::PyUnicode_AsUTF8AndSize(s, &mut len);
                let t = if p.is_null() {
                    ffi::PyErr_Clear();
                    String::from("<unprintable exception>")
                } else {
                    String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize)).into_owned()
                };
                ffi::Py_DECREF(s);
                t
            };
            text
        };
        // The payload owns our reference to the exception (released by its finalizer even when
        // the payload cannot be allocated: then the error is the MemoryError).
        let payload = tether_core::error::catch_out_of_memory(|| {
            ObjectArc::new(OpaqueObj { ptr: exc as *mut c_void, finalize: Some(release_exception), owner: OWNER })
        });
        match payload {
            Ok(payload) => Error::with_payload(&kind, message, Any::object(payload.into())),
            Err(e) => e,
        }
    }
}

/// Reword the pending exception: its message becomes `reword(message)` (its `args` replaced;
/// its type, traceback and attributes kept). Used to name the argument a conversion failed on.
///
/// # Safety
/// GIL held and an exception is set.
pub unsafe fn reword_pending(reword: impl FnOnce(&str) -> String) {
    // SAFETY: GIL held (caller); every object below is a new reference we release once.
    unsafe {
        let exc = fetch_exception();
        if exc.is_null() {
            return;
        }
        // A UnicodeError's words are made from its fields, not its args: reword its reason.
        let unicode = ffi::PyObject_IsInstance(exc, ffi::PyExc_UnicodeError) == 1;
        let text = if unicode { ffi::PyObject_GetAttrString(exc, c"reason".as_ptr()) } else { ffi::PyObject_Str(exc) };
        let mut len = 0;
        let p = if text.is_null() { null_mut() } else { ffi::PyUnicode_AsUTF8AndSize(text, &mut len) };
        if p.is_null() {
            ffi::PyErr_Clear();
        } else {
            let message = String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize));
            if unicode {
                let reason = py_str(&reword(&message));
                if reason.is_null() || ffi::PyObject_SetAttrString(exc, c"reason".as_ptr(), reason) != 0 {
                    ffi::PyErr_Clear(); // keep the original words
                }
                ffi::Py_XDECREF(reason);
                ffi::Py_XDECREF(text);
                return restore_exception(exc);
            }
            let words = py_str(&reword(&message));
            let args = if words.is_null() { null_mut() } else { ffi::PyTuple_New(1) };
            if !args.is_null() {
                ffi::PyTuple_SET_ITEM(args, 0, words); // the tuple takes the reference
                if ffi::PyObject_SetAttrString(exc, c"args".as_ptr(), args) != 0 {
                    ffi::PyErr_Clear(); // keep the original words
                }
                ffi::Py_DECREF(args);
            } else {
                ffi::Py_XDECREF(words);
                ffi::PyErr_Clear();
            }
        }
        ffi::Py_XDECREF(text);
        restore_exception(exc);
    }
}

/// Make `exc` (a normalised exception; the reference is taken over) the pending exception.
unsafe fn restore_exception(exc: *mut ffi::PyObject) {
    // SAFETY: GIL held (caller); `exc` is an owned exception instance.
    unsafe {
        #[cfg(Py_3_12)]
        {
            ffi::PyErr_SetRaisedException(exc)
        }
        #[cfg(not(Py_3_12))]
        {
            let tp = ffi::Py_NewRef(ffi::Py_TYPE(exc) as *mut ffi::PyObject);
            ffi::PyErr_Restore(tp, exc, ffi::PyException_GetTraceback(exc));
        }
    }
}

/// The pending exception as one normalised object (new reference), or null.
unsafe fn fetch_exception() -> *mut ffi::PyObject {
    // SAFETY: GIL held (caller).
    unsafe {
        #[cfg(Py_3_12)]
        {
            ffi::PyErr_GetRaisedException()
        }
        #[cfg(not(Py_3_12))]
        {
            let (mut t, mut v, mut tb) = (null_mut(), null_mut(), null_mut());
            ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
            if t.is_null() {
                return null_mut();
            }
            ffi::PyErr_NormalizeException(&mut t, &mut v, &mut tb);
            if !tb.is_null() && !v.is_null() {
                ffi::PyException_SetTraceback(v, tb);
            }
            ffi::Py_XDECREF(t);
            ffi::Py_XDECREF(tb);
            v
        }
    }
}

/// The native kind for a Python exception (via the package's `_error_kind`).
unsafe fn exception_kind(exc: *mut ffi::PyObject) -> String {
    // SAFETY: GIL held (caller).
    unsafe {
        let hook = state::ERROR_KIND.get();
        if hook.is_null() {
            return "RuntimeError".into();
        }
        let r = ffi::PyObject_CallFunctionObjArgs(hook, exc, null_mut::<ffi::PyObject>());
        if r.is_null() {
            ffi::PyErr_Clear();
            return "RuntimeError".into();
        }
        let mut len = 0;
        let p = ffi::PyUnicode_AsUTF8AndSize(r, &mut len);
        let kind = if p.is_null() {
            ffi::PyErr_Clear();
            "RuntimeError".into()
        } else {
            String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len as usize)).into_owned()
        };
        ffi::Py_DECREF(r);
        kind
    }
}
