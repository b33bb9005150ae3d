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
use tether_core::error::take_last_error;
use tether_core::function::{FunctionObj, FUNC_ADOPTS_LENT, FUNC_LEAF};
use tether_core::object::ObjectHeader;
use tether_core::types;
use tether_core::Error;

use crate::convert::{self, Arena};
use crate::errors::PyErrSet;
use crate::wrapper::{self, Wrapper};
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
    // SAFETY: GIL held (caller); every view read below was written by `to_view_into`.
    unsafe {
        // Spare references are only touched under the GIL (`PyHost::SERIALIZED`).
        let mut leaf = state::frontend().leaf_call(LEAF && f.flags & FUNC_ADOPTS_LENT != 0);
        let mut arena = Arena::new();
        let mut stack = [const { MaybeUninit::<AnyView<'_>>::uninit() }; STACK_ARGS];
        let mut heap: Vec<MaybeUninit<AnyView<'_>>>;
        let views: &mut [MaybeUninit<AnyView<'_>>] = if args.len() <= STACK_ARGS {
            &mut stack[..args.len()]
        } else {
            heap = Vec::with_capacity(args.len());
            heap.resize_with(args.len(), MaybeUninit::uninit);
            &mut heap
        };
        for (i, (&a, view)) in args.iter().zip(views.iter_mut()).enumerate() {
            let in_leaf = if LEAF { Some((&mut leaf, i)) } else { None };
            if convert::to_view_into(a, &mut arena, in_leaf, view).is_err() {
                // Arguments lent so far were never passed: give their references back.
                leaf.abandon(views[..i].iter().map(|v| v.assume_init_ref()));
                return null_mut();
            }
        }
        let cells = views.as_ptr() as *const AnyView<'_>;
        let mut result = Any::none();
        let rc = if LEAF {
            (f.safe_call)(func, cells, views.len() as i32, &mut result)
        } else {
            let ts = ffi::PyEval_SaveThread();
            let rc = (f.safe_call)(func, cells, views.len() as i32, &mut result);
            ffi::PyEval_RestoreThread(ts);
            rc
        };
        drop(arena);
        let returned = leaf.settle(if rc == 0 { result.view().as_object_ptr() } else { None });
        pending::drain_refs(); // references the call dropped, now that no native lock is held
        if rc != 0 {
            errors::raise(take_last_error());
            return null_mut();
        }
        if let Some(i) = returned {
            std::mem::forget(result); // the claimed spare, which never left its slot
            return ffi::Py_NewRef(args[i]);
        }
        convert::from_result(result, args)
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
