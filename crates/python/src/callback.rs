//! Python callables as native Functions.
//!
//! A callable passed to native code becomes a Function whose data is a strong reference to
//! the callable. The core's callable registry gives the same native Function back while it
//! lives, and `PyHost::callable_of` returns the callable itself for it: `echo(f) is f`.
//! Calling it from any thread attaches to the interpreter (`PyGILState_Ensure`).

use std::ffi::c_void;
use std::ptr::null_mut;

use pyo3::ffi;
use tether_core::any::{Any, AnyView, TypeIndex};
use tether_core::arc::{ObjectBox, ObjectRef};
use tether_core::boundary::CallableRegistry;
use tether_core::error::{catch_panic, set_last_error};
use tether_core::function::{Function, FunctionObj};
use tether_core::object::ObjectHeader;
use tether_core::Error;

use crate::errors::PyErrSet;
use crate::pending::{self, Release};
use crate::{convert, errors};

/// Native name of every Function made from a Python callable (at most 7 bytes: stored inline).
const CALLABLE_NAME: &str = "py.call";

/// Every callable passed to native code, with its Function (keyed by the callable's address).
static CALLABLES: CallableRegistry = CallableRegistry::new();

/// The native Function for a Python callable (the same one while it lives).
///
/// # Safety
/// GIL held; `callable` is live.
pub unsafe fn function_for(callable: *mut ffi::PyObject) -> Result<ObjectRef, PyErrSet> {
    let key = callable as usize;
    let made = CALLABLES.function_for(
        key,
        |handle| handle == key,
        || {
            // SAFETY: `call_callable` follows the call ABI and attaches to Python itself. The
            // native name is never shown for these (the callable itself is returned), so it is
            // a short inline string: no allocation per callable passed.
            let f = unsafe {
                Function::try_from_raw_parts(
                    call_callable,
                    callable as *mut c_void,
                    Some(drop_callable),
                    CALLABLE_NAME,
                    -1,
                    0,
                )
            }?;
            // SAFETY: the Function owns this reference from now on; `drop_callable` releases it.
            // GIL held.
            unsafe { ffi::Py_INCREF(callable) };
            Ok::<_, Error>((f, key))
        },
    );
    match made {
        Ok(f) => Ok(f.0.into()),
        // SAFETY: GIL held (this function's contract); raised outside the registry's lock.
        Err(e) => Err(unsafe { errors::raised(e) }),
    }
}

/// The callable a Function wraps, if it was made by [`function_for`].
///
/// # Safety
/// `obj` is a live object.
#[inline]
pub unsafe fn callable_of(obj: *mut ObjectHeader) -> Option<*mut ffi::PyObject> {
    // SAFETY: a live object; Functions are `ObjectBox<FunctionObj>`.
    unsafe {
        if (*obj).type_index != TypeIndex::FUNCTION {
            return None;
        }
        let f = &(*(obj as *const ObjectBox<FunctionObj>)).value;
        (f.safe_call as usize == call_callable as *const () as usize).then_some(f.data as *mut ffi::PyObject)
    }
}

unsafe extern "C" fn drop_callable(data: *mut c_void) {
    CALLABLES.forget(data as usize, data as usize);
    pending::release(Release::Decref(data as *mut ffi::PyObject));
}

unsafe extern "C" fn call_callable(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    if pending::interpreter_is_finalizing() {
        set_last_error(Error::runtime("the Python interpreter is shutting down"));
        return -1;
    }
    // SAFETY: attaching is allowed from any thread while the interpreter runs.
    let gstate = unsafe { ffi::PyGILState_Ensure() };
    // SAFETY: `handle` is a live Function made by `function_for`; `args` holds `n` cells.
    let outcome = catch_panic(|| unsafe {
        pending::drain();
        let callable = (*(handle as *const ObjectBox<FunctionObj>)).value.data as *mut ffi::PyObject;
        let args = if n <= 0 { &[][..] } else { std::slice::from_raw_parts(args, n as usize) };
        invoke(callable, args)
    });
    // SAFETY: paired with the Ensure above.
    unsafe { ffi::PyGILState_Release(gstate) };
    // SAFETY: the caller's result cell holds None and is ours to fill.
    unsafe { tether_core::function::finish_call(outcome, result) }
}

// Before 3.14, a thread that wants the GIL back while the interpreter finalizes is ended with
// `pthread_exit`, a forced unwind. A callback's Python code can drop and retake the GIL at any
// bytecode, and that unwind must not cross our `extern "C"` frames (the process would abort).
// So the call is declared "C-unwind" and a guard hangs the thread if it is unwound: the same
// answer Python 3.14 gives (pyo3-ffi guards PyGILState_Ensure and PyEval_RestoreThread alike).
extern "C-unwind" {
    #[link_name = "PyObject_Vectorcall"]
    fn PyObject_Vectorcall_unwinding(
        callable: *mut ffi::PyObject,
        args: *const *mut ffi::PyObject,
        nargsf: usize,
        kwnames: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject;
}

/// Dropped only by a forced unwind (see above): parks the thread for good.
struct HangOnForcedUnwind;

impl Drop for HangOnForcedUnwind {
    fn drop(&mut self) {
        loop {
            std::thread::park();
        }
    }
}

/// `PyObject_Vectorcall` that hangs this thread instead of letting interpreter shutdown
/// unwind it.
///
/// # Safety
/// GIL held; the vectorcall contract for `callable`, `args` and `nargsf`.
unsafe fn vectorcall_or_hang(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
) -> *mut ffi::PyObject {
    let guard = HangOnForcedUnwind;
    // SAFETY: the caller holds the GIL and passes live `callable` and `args` (this function's
    // contract); the symbol is CPython's PyObject_Vectorcall, declared as "C-unwind".
    let r = unsafe { PyObject_Vectorcall_unwinding(callable, args, nargsf, null_mut()) };
    std::mem::forget(guard);
    r
}

unsafe fn invoke(callable: *mut ffi::PyObject, args: &[AnyView<'_>]) -> tether_core::Result<Any> {
    // SAFETY: GIL held (attached above).
    unsafe {
        let mut py_args: Vec<*mut ffi::PyObject> = Vec::with_capacity(args.len() + 1);
        py_args.push(null_mut()); // room for PY_VECTORCALL_ARGUMENTS_OFFSET
        for a in args {
            let o = match tether_core::error::catch_out_of_memory(|| a.to_owned_any()) {
                Ok(owned) => convert::from_any(owned),
                Err(e) => {
                    py_args[1..].iter().for_each(|&p| ffi::Py_DECREF(p));
                    return Err(e);
                }
            };
            if o.is_null() {
                let e = errors::take_python_error();
                py_args[1..].iter().for_each(|&p| ffi::Py_DECREF(p));
                return Err(e);
            }
            py_args.push(o);
        }
        let r = vectorcall_or_hang(callable, py_args.as_ptr().add(1), args.len() | ffi::PY_VECTORCALL_ARGUMENTS_OFFSET);
        py_args[1..].iter().for_each(|&p| ffi::Py_DECREF(p));
        if r.is_null() {
            return Err(errors::take_python_error());
        }
        let out = convert::to_any(r);
        ffi::Py_DECREF(r);
        out.map_err(|PyErrSet| errors::take_python_error())
    }
}
