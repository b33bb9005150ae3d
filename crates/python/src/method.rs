//! `tether_ffi.Method`: a native method in a generated class.
//!
//! A descriptor holding the method's Function wrapper. It binds like a Python function
//! (`p.swap` is a bound method) and carries `Py_TPFLAGS_METHOD_DESCRIPTOR`, so `p.swap()`
//! calls straight into the native function with `p` as the first argument, with no bound
//! method object in between.

use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;

use crate::call;
use crate::wrapper;

#[repr(C)]
struct MethodObj {
    ob_base: ffi::PyObject,
    /// The Function wrapper (strong reference).
    func: *mut ffi::PyObject,
    vectorcall: Option<ffi::vectorcallfunc>,
}

extern "C" {
    /// CPython's bound-method constructor (not declared by pyo3-ffi).
    fn PyMethod_New(func: *mut ffi::PyObject, slf: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

static METHOD_TYPE: AtomicPtr<ffi::PyTypeObject> = AtomicPtr::new(null_mut());

unsafe extern "C" fn method_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: `callable` is a MethodObj; the vectorcall contract holds for `args`.
    unsafe { call::function_vectorcall((*(callable as *mut MethodObj)).func, args, nargsf, kwnames) }
}

unsafe extern "C" fn method_descr_get(
    m: *mut ffi::PyObject,
    obj: *mut ffi::PyObject,
    _tp: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held; `m` is a MethodObj, `obj` the instance or null/None for class access.
    unsafe {
        if obj.is_null() || obj == ffi::Py_None() {
            return ffi::Py_NewRef(m);
        }
        PyMethod_New(m, obj)
    }
}

unsafe extern "C" fn method_dealloc(m: *mut ffi::PyObject) {
    // SAFETY: a dying MethodObj: drop its Function reference, free it, release its type.
    unsafe {
        let tp = ffi::Py_TYPE(m);
        ffi::Py_XDECREF((*(m as *mut MethodObj)).func);
        ffi::PyObject_Free(m as *mut c_void);
        ffi::Py_DECREF(tp as *mut ffi::PyObject);
    }
}

/// Build the Method type (once, at import). Null with an error on failure.
///
/// # Safety
/// GIL held.
pub unsafe fn build_type() -> *mut ffi::PyTypeObject {
    // CPython copies the members into the type: they only have to outlive the call below.
    let mut members = [
        ffi::PyMemberDef {
            name: c"__vectorcalloffset__".as_ptr(),
            type_code: ffi::Py_T_PYSSIZET,
            offset: std::mem::offset_of!(MethodObj, vectorcall) as ffi::Py_ssize_t,
            flags: ffi::Py_READONLY,
            doc: null_mut(),
        },
        ffi::PyMemberDef {
            name: c"__func__".as_ptr(),
            type_code: ffi::Py_T_OBJECT_EX,
            offset: std::mem::offset_of!(MethodObj, func) as ffi::Py_ssize_t,
            flags: ffi::Py_READONLY,
            doc: c"The native Function this method calls.".as_ptr(),
        },
        // SAFETY: an all-zero PyMemberDef is the terminator.
        unsafe { std::mem::zeroed() },
    ];
    let mut slots = [
        ffi::PyType_Slot { slot: ffi::Py_tp_dealloc, pfunc: method_dealloc as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_descr_get, pfunc: method_descr_get as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_call, pfunc: ffi::PyVectorcall_Call as *mut c_void },
        ffi::PyType_Slot { slot: ffi::Py_tp_members, pfunc: members.as_mut_ptr() as *mut c_void },
        ffi::PyType_Slot { slot: 0, pfunc: null_mut() },
    ];
    let mut spec = ffi::PyType_Spec {
        name: c"tether_ffi.Method".as_ptr(),
        basicsize: std::mem::size_of::<MethodObj>() as _,
        itemsize: 0,
        flags: (ffi::Py_TPFLAGS_DEFAULT | ffi::Py_TPFLAGS_HAVE_VECTORCALL | ffi::Py_TPFLAGS_METHOD_DESCRIPTOR) as _,
        slots: slots.as_mut_ptr(),
    };
    // SAFETY: a complete spec with a static name; the slots are copied.
    let tp = unsafe { ffi::PyType_FromSpec(&mut spec) } as *mut ffi::PyTypeObject;
    METHOD_TYPE.store(tp, Ordering::Release);
    tp
}

/// A new Method calling Function wrapper `func`. Null with an error on failure.
///
/// # Safety
/// GIL held; `func` is a live object.
pub unsafe fn new_method(func: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: GIL held (caller).
    unsafe {
        if !wrapper::is_wrapper(func) {
            crate::errors::raise(tether_core::Error::type_error("Method() needs a tether Function"));
            return null_mut();
        }
        let tp = METHOD_TYPE.load(Ordering::Acquire);
        let m = ffi::PyObject_Malloc(std::mem::size_of::<MethodObj>()) as *mut ffi::PyObject;
        if m.is_null() {
            return ffi::PyErr_NoMemory();
        }
        std::ptr::write_bytes(m as *mut u8, 0, std::mem::size_of::<MethodObj>());
        ffi::PyObject_Init(m, tp);
        let mo = m as *mut MethodObj;
        (*mo).func = ffi::Py_NewRef(func);
        (*mo).vectorcall = Some(method_vectorcall);
        m
    }
}
