//! Python callables as native Functions.
//!
//! A callable passed to native code becomes a Function whose data is a strong reference to
//! the callable. The core's callable registry gives the same native Function back while it
//! lives, and `PyHost::callable_of` returns the callable itself for it: `echo(f) is f`.
//! Calling it from any thread attaches to the interpreter (`PyGILState_Ensure`).
//!
//! A callable passed as a call's argument is lent a Function for that call instead
//! (`LentFunctions`, GIL builds): a reused shell that only borrows the callable, so
//! `call(cb)` registers nothing and allocates nothing; a lent Function still held when the
//! call returns takes its reference to the callable then and is registered like any other.

use std::ffi::c_void;
use std::ptr::null_mut;

use pyo3::ffi;
use tether_core::any::{Any, AnyView, TypeIndex};
use tether_core::arc::{ObjectBox, ObjectRef};
pub use tether_core::boundary::Lent;
use tether_core::boundary::{CallableRegistry, LentFunctions};
use tether_core::error::set_last_error;
use tether_core::function::{Function, FunctionObj, FUNC_LEAF, FUNC_NONBLOCKING};
use tether_core::object::ObjectHeader;
use tether_core::Error;

use crate::errors::PyErrSet;
use crate::pending::{self, Release};
use crate::{convert, errors};

/// Native name of every Function made from a Python callable (at most 7 bytes: stored inline).
const CALLABLE_NAME: &str = "py.call";

/// Every callable passed to native code, with its Function (keyed by the callable's address).
static CALLABLES: CallableRegistry = CallableRegistry::new();

/// The Functions lent to running calls, and the spare shell (GIL builds).
static LENT: LentFunctions = LentFunctions::new();

/// A Function for a Python callable that it does not own yet (`data` null until lent).
fn shell() -> Function {
    // SAFETY: `call_callable` follows the call ABI and attaches to Python itself; `drop_callable`
    // releases `data` when it is set. The native name is never shown for these (the callable
    // itself is returned), so it is a short inline string.
    unsafe { Function::from_raw_parts(call_callable, null_mut(), Some(drop_callable), CALLABLE_NAME, -1, 0) }
}

/// Make the spare shell (at import, with the GIL), so that the native objects alive between
/// calls do not depend on which calls ran.
///
/// # Safety
/// GIL held.
pub unsafe fn prepare() {
    if !cfg!(Py_GIL_DISABLED) {
        // SAFETY: the GIL is held (caller); `shell` has a null `data`.
        unsafe { LENT.prepare(shell) };
    }
}

/// A callable's Function as one call's argument.
pub enum ForCall {
    /// Lent to this call: give it back with [`give_back`] after the call.
    Lent(Lent),
    /// The callable's live Function (registered, or lent to a running call): a new reference.
    Live(ObjectRef),
}

/// The Function for callable `callable` as one call's argument.
///
/// # Safety
/// GIL held; `callable` is live until a lent Function is given back.
#[inline(always)]
pub unsafe fn for_call(callable: *mut ffi::PyObject) -> Result<ForCall, PyErrSet> {
    let key = callable as usize;
    if cfg!(Py_GIL_DISABLED) {
        // No lock keeps the lent ones in order: every callable gets its registered Function.
        // SAFETY: the caller's guarantee.
        return unsafe { function_for(callable) }.map(ForCall::Live);
    }
    if let Some(f) = CALLABLES.live(key, |handle| handle == key) {
        return Ok(ForCall::Live(f.0.into()));
    }
    // SAFETY: GIL held (caller), which orders every use of `LENT`.
    unsafe {
        if let Some(f) = LENT.in_flight(key) {
            return Ok(ForCall::Live(f.0.into()));
        }
        // A new shell is an allocation when there is no spare: a MemoryError, not a panic.
        match LENT.try_lend(key, callable as *mut c_void, shell) {
            Ok(lent) => Ok(ForCall::Lent(lent)),
            Err(e) => Err(errors::raised(e)),
        }
    }
}

/// The call `lent` was lent to is over: its shell goes back, or, when native code kept it,
/// it takes its own reference to the callable and is registered (out of line).
///
/// # Safety
/// GIL held; `lent` came from [`for_call`].
#[inline(always)]
pub unsafe fn give_back(lent: Lent) {
    // SAFETY: GIL held (caller).
    if let Err(kept) = unsafe { LENT.reclaim(lent) } {
        // SAFETY: GIL held (caller); `kept` came back from `reclaim`.
        unsafe { register_kept(kept) };
    }
}

/// A lent shell that native code kept takes its own reference to the callable and is
/// registered; a new spare is made.
///
/// # Safety
/// GIL held; `kept` came back from `LENT.reclaim`.
#[cold]
#[inline(never)]
unsafe fn register_kept(kept: Function) {
    let callable = kept.0.data as *mut ffi::PyObject;
    // SAFETY: GIL held; the callable is alive (the call's argument). From now on the Function
    // owns this reference; `drop_callable` releases it.
    unsafe { ffi::Py_INCREF(callable) };
    CALLABLES.register(callable as usize, callable as usize, &kept);
    // A new spare shell; when there is no memory for it, the next lend makes one.
    // SAFETY: GIL held (caller); `shell` has a null `data`.
    let _ = tether_core::error::catch_out_of_memory(|| unsafe { LENT.prepare(shell) });
}

/// The native Function for a Python callable (the same one while it lives).
///
/// # Safety
/// GIL held; `callable` is live.
pub unsafe fn function_for(callable: *mut ffi::PyObject) -> Result<ObjectRef, PyErrSet> {
    let key = callable as usize;
    // SAFETY: GIL held (caller).
    if let Some(f) = (!cfg!(Py_GIL_DISABLED)).then(|| unsafe { LENT.in_flight(key) }).flatten() {
        return Ok(f.0.into());
    }
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

/// Would calling the argument `view` block with the GIL held? True for a native Function
/// that is neither a leaf nor nonblocking (a Function made from a Python callable re-enters on
/// the calling thread).
///
/// # Safety
/// `view` is a live argument view.
#[inline]
pub unsafe fn may_block(view: &AnyView<'_>) -> bool {
    if view.type_index() != TypeIndex::FUNCTION {
        return false;
    }
    let Some(obj) = view.as_object_ptr() else { return false };
    // SAFETY: a live Function (the caller's view); its body is read only.
    let f = unsafe { &(*(obj as *const ObjectBox<FunctionObj>)).value };
    f.flags & (FUNC_LEAF | FUNC_NONBLOCKING) == 0 && f.safe_call as usize != call_callable as *const () as usize
}

unsafe extern "C" fn drop_callable(data: *mut c_void) {
    if data.is_null() {
        return; // a shell that was never lent out, or came back
    }
    CALLABLES.forget(data as usize, data as usize);
    pending::release(Release::Decref(data as *mut ffi::PyObject));
}

/// Make [`call_callable`] a catching frame (once, at module init), so its body runs under
/// `catch_panic_registered`, with no per-call mark (two calls per callback under `catch_panic`).
pub fn register_safe_call() {
    tether_core::error::register_catching_safe_call(call_callable);
}

unsafe extern "C" fn call_callable(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    // A callback from a nonblocking call runs on the thread that holds the GIL: nothing to
    // take (PyGILState_Ensure would only count it), and Python code may run there even while
    // the interpreter finalizes (a `__del__` can call native code). Its body runs inline here;
    // with the attaching path beside it, LLVM kept the catch frame out of line, its captures
    // stored and read back through pointers (W7 `call(cb)` ~8 ns slower on the AMD EPYC).
    // SAFETY: only reads this thread's and the runtime's thread state.
    if unsafe { holds_gil() } {
        // SAFETY: this function's contract, with the GIL held.
        return unsafe { run_callback(handle, args, n, result) };
    }
    // SAFETY: this function's contract, on a thread that does not hold the GIL.
    unsafe { call_callable_attaching(handle, args, n, result) }
}

/// [`call_callable`] on a thread that does not hold the GIL: it attaches while the interpreter
/// runs, else fails.
///
/// # Safety
/// As [`call_callable`]; this thread does not hold the GIL.
#[cold]
#[inline(never)]
unsafe fn call_callable_attaching(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    if pending::interpreter_is_finalizing() {
        set_last_error(Error::runtime("the Python interpreter is shutting down"));
        return -1;
    }
    // SAFETY: the interpreter runs; this thread does not hold the GIL.
    let gstate = unsafe { ffi::PyGILState_Ensure() };
    // Under `catch_panic`, which marks its own frame (a tail call could leave this registered
    // one off the stack), so the fast path's catch keeps its single call site, and stays inline.
    // SAFETY: this function's contract, with the GIL now held.
    let outcome = tether_core::error::catch_panic(|| unsafe { callback_body(handle, args, n, result) });
    // SAFETY: paired with the Ensure above.
    unsafe { ffi::PyGILState_Release(gstate) };
    tether_core::function::call_status(outcome)
}

/// A callback's body under [`call_callable`]'s catch: that function is a registered catching
/// frame.
///
/// # Safety
/// As [`callback_body`].
#[inline(always)]
unsafe fn run_callback(handle: *mut ObjectHeader, args: *const AnyView<'_>, n: i32, result: *mut Any) -> i32 {
    // SAFETY: this function's contract.
    let outcome = tether_core::error::catch_panic_registered(|| unsafe { callback_body(handle, args, n, result) });
    tether_core::function::call_status(outcome)
}

/// A callback's body: the callable called with the `n` cells at `args`, its value written
/// into `result`.
///
/// # Safety
/// GIL held; `handle` is a live Function made by `function_for`; `args` holds `n` cells; the
/// caller's result cell holds None and is ours to fill (the caller returns `call_status`).
#[inline(always)]
unsafe fn callback_body(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> tether_core::Result<()> {
    // SAFETY: this function's contract.
    unsafe {
        pending::drain();
        let callable = (*(handle as *const ObjectBox<FunctionObj>)).value.data as *mut ffi::PyObject;
        let args = if n <= 0 { &[][..] } else { std::slice::from_raw_parts(args, n as usize) };
        result.write(invoke(callable, args)?);
        Ok(())
    }
}

/// Does this thread hold the GIL (on free-threaded builds: is it attached)? Its thread state
/// (the one `PyGILState_Ensure` would use) is the interpreter's current one.
///
/// # Safety
/// The interpreter is initialised.
#[inline]
unsafe fn holds_gil() -> bool {
    // SAFETY: both read thread state without changing it (the caller's guarantee).
    unsafe {
        let mine = ffi::PyGILState_GetThisThreadState();
        !mine.is_null() && mine == current_thread_state()
    }
}

#[cfg(Py_3_13)]
use ffi::PyThreadState_GetUnchecked as current_thread_state;

#[cfg(not(Py_3_13))]
extern "C" {
    /// The thread state holding the GIL, or null: `PyThreadState_GetUnchecked` before 3.13.
    #[link_name = "_PyThreadState_UncheckedGet"]
    fn current_thread_state() -> *mut ffi::PyThreadState;
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

/// A vectorcall entry, declared "C-unwind" (see above).
type VectorcallUnwinding = unsafe extern "C-unwind" fn(
    *mut ffi::PyObject,
    *const *mut ffi::PyObject,
    usize,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;

/// `PyObject_Vectorcall` that hangs this thread instead of letting interpreter shutdown
/// unwind it. A Python function (the usual callback) is entered through its own vectorcall
/// entry: `PyObject_Vectorcall` adds a thread-state lookup and a check that the result agrees
/// with the error indicator, which a Python function's entry always keeps (~25 instructions of
/// each callback).
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
    // contract). A `function` object's type has `Py_TPFLAGS_HAVE_VECTORCALL` and a positive
    // `tp_vectorcall_offset`, where the object keeps its entry (never null for a function);
    // the entry follows the vectorcall ABI, declared "C-unwind" as PyObject_Vectorcall is.
    let r = unsafe {
        let tp = ffi::Py_TYPE(callable);
        let entry = if tp == std::ptr::addr_of_mut!(ffi::PyFunction_Type) {
            *((callable as *const u8).offset((*tp).tp_vectorcall_offset) as *const Option<VectorcallUnwinding>)
        } else {
            None
        };
        match entry {
            Some(entry) => entry(callable, args, nargsf, null_mut()),
            None => PyObject_Vectorcall_unwinding(callable, args, nargsf, null_mut()),
        }
    };
    std::mem::forget(guard);
    r
}

/// Arguments passed to a callback without a heap allocation (one slot in front is for
/// `PY_VECTORCALL_ARGUMENTS_OFFSET`).
const INLINE_CALLBACK_ARGS: usize = 7;

/// Inlined into the catch frame's closure: left out of line (which LLVM chose once the crate
/// grew), W7 `call(cb)` took ~8 ns more (Intel Xeon, 75 -> 82 ns).
#[inline(always)]
unsafe fn invoke(callable: *mut ffi::PyObject, args: &[AnyView<'_>]) -> tether_core::Result<Any> {
    if args.is_empty() {
        // The slot in front that `PY_VECTORCALL_ARGUMENTS_OFFSET` lends, and no arguments.
        let mut front = null_mut::<ffi::PyObject>();
        // SAFETY: GIL held (attached by the caller); one past `front` is an empty array.
        return unsafe {
            let r =
                vectorcall_or_hang(callable, std::ptr::addr_of_mut!(front).add(1), ffi::PY_VECTORCALL_ARGUMENTS_OFFSET);
            callback_result(r)
        };
    }
    let mut inline = [null_mut::<ffi::PyObject>(); INLINE_CALLBACK_ARGS + 1];
    let mut heap: Vec<*mut ffi::PyObject>;
    let py_args: &mut [*mut ffi::PyObject] = if args.len() <= INLINE_CALLBACK_ARGS {
        &mut inline[..args.len() + 1]
    } else {
        heap = vec![null_mut(); args.len() + 1];
        &mut heap
    };
    // SAFETY: GIL held (attached by the caller).
    unsafe {
        for (i, a) in args.iter().enumerate() {
            // Strings and bytes are copied into objects of their own: an allocation that may fail.
            let o = match tether_core::error::catch_out_of_memory(|| a.to_owned_any()) {
                Ok(owned) => convert::from_any(owned),
                Err(e) => {
                    py_args[1..=i].iter().for_each(|&p| ffi::Py_DECREF(p));
                    return Err(e);
                }
            };
            if o.is_null() {
                let e = errors::take_python_error();
                py_args[1..=i].iter().for_each(|&p| ffi::Py_DECREF(p));
                return Err(e);
            }
            py_args[i + 1] = o;
        }
        let r = vectorcall_or_hang(callable, py_args.as_ptr().add(1), args.len() | ffi::PY_VECTORCALL_ARGUMENTS_OFFSET);
        py_args[1..].iter().for_each(|&p| ffi::Py_DECREF(p));
        callback_result(r)
    }
}

/// A callback's outcome: the value of `r` (a new reference, which goes), or the error raised.
///
/// # Safety
/// GIL held; `r` is what a call returned.
#[inline(always)]
unsafe fn callback_result(r: *mut ffi::PyObject) -> tether_core::Result<Any> {
    // SAFETY: GIL held (caller); a non-null `r` is a new reference.
    unsafe {
        if r.is_null() {
            return Err(errors::take_python_error());
        }
        let out = convert::result_to_any(r);
        ffi::Py_DECREF(r);
        out.map_err(|PyErrSet| errors::take_python_error())
    }
}
