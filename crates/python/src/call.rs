//! Calling native functions from Python: the Function type's vectorcall, constructors
//! (`tp_new` of the generated classes) and the shared call path.
//!
//! The path: arguments into a stack array of views, `safe_call` directly, the result back
//! through the tie. The GIL is released around the call unless the function is a leaf
//! (`FUNC_LEAF`: it neither blocks nor calls back).

use std::mem::MaybeUninit;
use std::ptr::null_mut;
use std::sync::atomic::Ordering;

use pyo3::ffi;
use tether_core::any::{Any, AnyView};
use tether_core::arc::ObjectBox;
use tether_core::boundary::{argument_message, ArgumentSource, Called, LeafCall};
use tether_core::function::{FunctionObj, FUNC_LEAF};
use tether_core::object::ObjectHeader;
use tether_core::types;
use tether_core::Error;

use crate::convert::{self, Arena};
use crate::errors::PyErrSet;
use crate::wrapper::{self, PyHost, Wrapper};
use crate::{classes, errors, pending, state};

/// Arguments converted on the stack up to this count.
const STACK_ARGS: usize = 8;

/// Call native Function `func` with Python arguments; a new reference or null with an error.
///
/// # Safety
/// GIL held; `func` is a live Function object; `args` are live objects.
#[inline]
pub unsafe fn call_native(func: *mut ObjectHeader, args: &[*mut ffi::PyObject]) -> *mut ffi::PyObject {
    // SAFETY: the caller holds the GIL and keeps `func` and `args` alive for the call.
    unsafe { call_native_inline(func, args) }
}

/// [`call_native`] inlined into its caller (the Function vectorcall, the hottest entry).
#[inline(always)]
unsafe fn call_native_inline(func: *mut ObjectHeader, args: &[*mut ffi::PyObject]) -> *mut ffi::PyObject {
    // SAFETY: GIL held (caller); `func` is a live FunctionObj.
    unsafe {
        pending::drain();
        let f = &(*(func as *const ObjectBox<FunctionObj>)).value;
        // Off the GIL a concurrent `_move()` could release an argument: only leaf calls on
        // GIL builds borrow their arguments.
        if f.flags & FUNC_LEAF != 0 && !cfg!(Py_GIL_DISABLED) {
            call_with::<true>(func, f, args)
        } else {
            call_with::<false>(func, f, args)
        }
    }
}

/// [`call_native`] for leaf calls (`LEAF`: the GIL stays held, wrapper arguments are
/// borrowed or lent a spare) or for calls that release the GIL (arguments hold references).
///
/// # Safety
/// As [`call_native`]; `f` is `func`'s body.
#[inline(always)]
unsafe fn call_with<const LEAF: bool>(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    args: &[*mut ffi::PyObject],
) -> *mut ffi::PyObject {
    let mut arena = Arena::new();
    // The source holds only references: nothing of it escapes the inlined driver, so it
    // stays in registers.
    let mut source = PyArguments { args, arena: &mut arena };
    let mut result = Any::none();
    // SAFETY: GIL held, `func` live and `f` its body, `args` alive for the call (caller).
    let called =
        unsafe { state::frontend().call::<STACK_ARGS, _>(func, f, args.len(), LEAF, &mut source, &mut result) };
    drop(arena);
    // SAFETY: GIL held (caller).
    unsafe {
        match called {
            Ok(Called::Result) => {
                pending::drain_refs(); // references the call dropped, now that no native lock is held
                convert::from_result(result, args)
            }
            Ok(Called::Argument(i)) => {
                pending::drain_refs();
                ffi::Py_NewRef(args[i])
            }
            Err(PyErrSet) => null_mut(),
        }
    }
}

/// The Python arguments of one call: converted in place, temporaries in the arena.
struct PyArguments<'a> {
    args: &'a [*mut ffi::PyObject],
    arena: &'a mut Arena,
}

// SAFETY: `to_view_into` keeps what a view borrows in the arena (dropped with the source) or
// in the argument itself (alive for the call); a leaf call's wrapper arguments come from
// `LeafCall::wrapper_argument`, the wrapper's +1 held by the caller's argument.
unsafe impl ArgumentSource<PyHost> for PyArguments<'_> {
    type Error = PyErrSet;

    #[inline(always)]
    unsafe fn convert<'v>(
        &mut self,
        index: usize,
        leaf: Option<&mut LeafCall<'_, PyHost>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> Result<(), PyErrSet> {
        // SAFETY: GIL held, the argument alive for the call (the driver's caller); the driver
        // asks for indices below the count it was given, `args.len()`.
        unsafe {
            let arg = *self.args.get_unchecked(index);
            convert::to_view_into(arg, self.arena, leaf.map(|l| (l, index)), view)
        }
    }

    #[inline(always)]
    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        // SAFETY: the GIL is held here; the call touches no Python object until it is back.
        let ts = unsafe { ffi::PyEval_SaveThread() };
        let rc = call();
        // SAFETY: the thread state saved above.
        unsafe { ffi::PyEval_RestoreThread(ts) };
        rc
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: PyErrSet) -> PyErrSet {
        // SAFETY: GIL held; the conversion left its exception set.
        unsafe { errors::reword_pending(|message| argument_message(function, index, message)) };
        error
    }

    fn failed(error: Error) -> PyErrSet {
        // SAFETY: GIL held.
        unsafe {
            pending::drain_refs();
            errors::raised(error)
        }
    }
}

/// tp_vectorcall of Function wrappers.
pub unsafe extern "C" fn function_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython's vectorcall contract: `args` holds `n` live borrowed objects.
    unsafe {
        if !kwnames.is_null() && ffi::PyTuple_GET_SIZE(kwnames) > 0 {
            return no_keywords(callable);
        }
        let n = nargsf & !ffi::PY_VECTORCALL_ARGUMENTS_OFFSET;
        let func = (*(callable as *mut Wrapper)).obj.load(Ordering::Acquire);
        if func.is_null() {
            return wrapper::native_of(callable).map_or(null_mut(), |_| null_mut());
        }
        let args = if n == 0 { &[][..] } else { std::slice::from_raw_parts(args, n) };
        call_native_inline(func, args)
    }
}

#[cold]
unsafe fn no_keywords(callable: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: GIL held; `callable` is a live Function wrapper.
    unsafe {
        let name = match wrapper::native_of(callable) {
            Ok(f) => {
                (*(f as *const ObjectBox<FunctionObj>)).value.name.view().as_str().unwrap_or("function").to_string()
            }
            Err(PyErrSet) => return null_mut(),
        };
        errors::raise(Error::type_error(format!("{name}() takes no keyword arguments")));
        null_mut()
    }
}

/// tp_new of every generated class: call the type's registered constructor.
pub unsafe extern "C" fn object_new(
    cls: *mut ffi::PyTypeObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held; `args` is a tuple, `kwargs` a dict or null (tp_new contract).
    unsafe {
        let Some(index) = classes::index_of(cls) else {
            errors::raise(Error::type_error("this class is not bound to a native type"));
            return null_mut();
        };
        let info = types::type_info(index);
        let Some(ctor) = info.filter(|i| !i.constructor.is_null()) else {
            let key = info.map(|i| i.key()).unwrap_or("?");
            errors::raise(Error::type_error(format!(
                "cannot create {key} instances: the type has no registered constructor"
            )));
            return null_mut();
        };
        if !kwargs.is_null() && ffi::PyDict_Size(kwargs) > 0 {
            errors::raise(Error::type_error(format!("{}() takes no keyword arguments", ctor.key())));
            return null_mut();
        }
        let n = ffi::PyTuple_GET_SIZE(args) as usize;
        // The tuple's items are contiguous borrowed references.
        let items = std::slice::from_raw_parts((*(args as *mut ffi::PyTupleObject)).ob_item.as_ptr(), n);
        let out = call_native(ctor.constructor, items);
        if out.is_null() || ffi::Py_TYPE(out) == cls || !wrapper::is_wrapper(out) {
            return out;
        }
        if ffi::PyType_IsSubtype(cls, ffi::Py_TYPE(out)) != 0 && classes::class_for(index) != cls {
            // A Python subclass was called: rebind the fresh object to a wrapper of `cls`.
            return rebind_to_subclass(out, cls);
        }
        out
    }
}

/// `out` is the only wrapper of a just-constructed object; give the object a wrapper of the
/// user's subclass `cls` instead.
#[cold]
unsafe fn rebind_to_subclass(out: *mut ffi::PyObject, cls: *mut ffi::PyTypeObject) -> *mut ffi::PyObject {
    // SAFETY: GIL held; `out` is a live wrapper we own a reference to.
    unsafe {
        let alloc = (*cls).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
        let fresh = alloc(cls, 0);
        if fresh.is_null() {
            ffi::Py_DECREF(out);
            return null_mut();
        }
        let obj = match wrapper::take_for_move(out) {
            Ok(obj) => obj,
            Err(PyErrSet) => {
                ffi::Py_DECREF(out);
                ffi::Py_DECREF(fresh);
                return null_mut();
            }
        };
        ffi::Py_DECREF(out);
        wrapper::return_object_as(obj, cls, fresh)
    }
}
