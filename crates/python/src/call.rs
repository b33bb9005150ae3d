//! Calling native functions from Python: the Function type's vectorcall, constructors
//! (`tp_new` of the generated classes) and the shared call path.
//!
//! The path: arguments into a stack array of views, `safe_call` directly, the result back
//! through the tie. The GIL is released around the call unless the function is a leaf
//! (`FUNC_LEAF`: it neither blocks nor calls back) or nonblocking (`FUNC_NONBLOCKING`: its
//! callbacks re-enter on this thread, which keeps the GIL).

use std::mem::MaybeUninit;
use std::ptr::null_mut;
use std::sync::atomic::Ordering;

use pyo3::ffi;
use tether_core::any::{Any, AnyView};
use tether_core::arc::ObjectBox;
use tether_core::boundary::{argument_message, ArgumentSource, Called, LeafCall};
use tether_core::function::{FunctionObj, FUNC_INT_ENTRY, FUNC_LEAF, FUNC_NONBLOCKING, FUNC_SIGNED};
use tether_core::object::ObjectHeader;
use tether_core::signature::{bind_call, Bound};
use tether_core::types;
use tether_core::Error;

use crate::convert::{self, Arena};
use crate::errors::PyErrSet;
use crate::wrapper::{self, PyHost, Wrapper};
use crate::{callback, classes, errors, pending, state};

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
            // Leaf calls of one to three arguments (`echo(x)`, `Pair(x, x)`, `add3(1, 2, 3)`,
            // most methods) run the driver with its argument loop unrolled, without the loop's
            // set-up. One wrapper argument inline; everything else in functions of their own
            // (inline, they made this one's registers spill onto the stack: W1 +1-2 ns).
            match args.len() {
                1 if wrapper::deallocs_as_wrapper(ffi::Py_TYPE(*args.as_ptr())) => {
                    call_leaf_of_wrapper(func, f, *args.as_ptr())
                }
                1 => call_of::<true, 1>(func, f, args.as_ptr()),
                2 => call_of::<true, 2>(func, f, args.as_ptr()),
                3 => call_of::<true, 3>(func, f, args.as_ptr()),
                _ => call_many::<true>(func, f, args),
            }
        } else if args.len() == 1 {
            let arg = *args.as_ptr();
            if f.flags & FUNC_NONBLOCKING != 0
                && ffi::Py_TYPE(arg) == std::ptr::addr_of_mut!(ffi::PyFunction_Type)
                && !cfg!(Py_GIL_DISABLED)
            {
                // `call(cb)`: a callback on this thread, with the GIL.
                return call_nonblocking_of_function(func, f, arg);
            }
            // A non-leaf call of one argument: unrolled too, out of line.
            call_of::<false, 1>(func, f, args.as_ptr())
        } else {
            call_many::<false>(func, f, args)
        }
    }
}

/// A call of any number of arguments (a leaf's of more than three), out of line: inline, its
/// driver loop made the vectorcall spill its argument pointer in `echo(x)`, whose reads
/// waited for it (W1 +1.5-2 ns on the Xeon).
///
/// # Safety
/// As [`call_with`].
#[inline(never)]
unsafe fn call_many<const LEAF: bool>(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    args: &[*mut ffi::PyObject],
) -> *mut ffi::PyObject {
    // SAFETY: the caller's guarantees.
    unsafe { call_with::<LEAF, STACK_ARGS>(func, f, args) }
}

/// A leaf call of `N` arguments through `f`'s int entry ([`FUNC_INT_ENTRY`]) when every
/// argument is an exact int of one digit (the ones [`convert::to_view_into`] reads in place);
/// `None`, having done nothing, otherwise: the general path then converts, and words what fails.
///
/// # Safety
/// As [`call_native`]; `f` is `func`'s body, a leaf of arity `N` with an int entry; `args`
/// holds `N` arguments.
#[inline(always)]
unsafe fn call_ints<const N: usize>(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    args: *const *mut ffi::PyObject,
) -> Option<*mut ffi::PyObject> {
    let mut ints = [0i64; N];
    for (i, int) in ints.iter_mut().enumerate() {
        // SAFETY: `args` holds `N` live arguments (the caller's guarantee); an exact int has
        // its size word and a digit.
        unsafe {
            let o = *args.add(i);
            if ffi::Py_TYPE(o) != std::ptr::addr_of_mut!(ffi::PyLong_Type) {
                return None;
            }
            *int = convert::compact_long(o)?;
        }
    }
    let entry = f.int_entry()?;
    // SAFETY: a live Function with an int entry, given its arity's ints; GIL held, as a leaf's
    // call keeps it.
    let called = unsafe { tether_core::function::call_int_entry(entry, func, ints) };
    // SAFETY: GIL held (caller).
    unsafe {
        pending::drain_refs();
        Some(match called {
            Ok(value) => ffi::PyLong_FromLongLong(value),
            Err(e) => {
                let PyErrSet = errors::raised(e);
                null_mut()
            }
        })
    }
}

/// `echo(x)`: a leaf called with one wrapper of ours. The same driver as every call, with a
/// source that holds the wrapper alone: no arena to set up and finish (W1 468 -> 450
/// instructions per iteration).
///
/// # Safety
/// As [`call_native`]; `f` is `func`'s body, a leaf; `arg`'s type deallocs as a wrapper.
#[inline(always)]
unsafe fn call_leaf_of_wrapper(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    arg: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `func` live and `f` its body, `arg` alive for the call (caller).
    unsafe { run_call::<1, _>(func, f, std::slice::from_ref(&arg), |_| arg, true, &mut OneWrapper { arg }) }
}

/// The one argument of [`call_leaf_of_wrapper`]: a wrapper of ours.
struct OneWrapper {
    arg: *mut ffi::PyObject,
}

// SAFETY: the view borrows the wrapper's object, whose +1 the wrapper (the caller's argument,
// alive for the call) holds, and comes from `LeafCall::wrapper_argument`.
unsafe impl ArgumentSource<PyHost> for OneWrapper {
    type Error = PyErrSet;

    #[inline(always)]
    unsafe fn convert<'v>(
        &mut self,
        index: usize,
        leaf: Option<&mut LeafCall<'_, PyHost>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> Result<(), PyErrSet> {
        wrapper::prefetch_object_of(self.arg);
        // SAFETY: GIL held; the argument is a live wrapper of ours (the caller's guarantee).
        unsafe { convert::leaf_wrapper_view_into(self.arg, leaf.expect("called as a leaf"), index, view) }
    }

    fn unlocked(&mut self, _call: impl FnOnce() -> i32) -> i32 {
        unreachable!("called as a leaf")
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: PyErrSet) -> PyErrSet {
        <PyArguments<'_> as ArgumentSource<PyHost>>::argument_failed(function, index, error)
    }

    fn failed(error: Error) -> PyErrSet {
        <PyArguments<'_> as ArgumentSource<PyHost>>::failed(error)
    }
}

impl CallArguments for OneWrapper {
    #[inline(always)]
    fn finish(&mut self) {}
}

/// `call(cb)`: a nonblocking function (it keeps the GIL; its callbacks run on this thread)
/// called with one Python function, which is lent the spare Function shell for the call.
/// The same driver as every call, with a source that holds that callable alone: no arena,
/// no general conversion, the shell given back inline.
///
/// # Safety
/// As [`call_native`]; `f` is `func`'s body, nonblocking; `arg` is a Python function; a GIL
/// build.
#[inline(never)]
unsafe fn call_nonblocking_of_function(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    arg: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `func` live and `f` its body, `arg` alive for the call (caller).
    unsafe {
        run_call::<1, _>(func, f, std::slice::from_ref(&arg), |_| arg, false, &mut OneCallable { arg, function: None })
    }
}

/// The one argument of [`call_nonblocking_of_function`]: a Python function, and the Function
/// it gets for the call once converted. Made only there, with the GIL held for the call.
struct OneCallable {
    arg: *mut ffi::PyObject,
    function: Option<callback::ForCall>,
}

// SAFETY: the view borrows the Function held in `function` (a lent shell or a reference),
// released only after the call.
unsafe impl ArgumentSource<PyHost> for OneCallable {
    type Error = PyErrSet;

    #[inline(always)]
    unsafe fn convert<'v>(
        &mut self,
        _index: usize,
        _leaf: Option<&mut LeafCall<'_, PyHost>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> Result<(), PyErrSet> {
        // SAFETY: GIL held; the callable is alive for the call (the caller's guarantee).
        let function = unsafe { callback::for_call(self.arg)? };
        let object = match &function {
            callback::ForCall::Lent(lent) => lent.function().as_object_ptr(),
            callback::ForCall::Live(function) => function.as_ptr(),
        };
        // SAFETY: a live Function, held by `self.function` until after the call.
        view.write(unsafe { AnyView::from_object_ptr(object) });
        self.function = Some(function);
        Ok(())
    }

    #[inline(always)]
    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        // Nonblocking: its callbacks re-enter on this thread, which keeps the GIL (the
        // argument is a Python callable's Function, which never blocks).
        call()
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: PyErrSet) -> PyErrSet {
        <PyArguments<'_> as ArgumentSource<PyHost>>::argument_failed(function, index, error)
    }

    fn failed(error: Error) -> PyErrSet {
        <PyArguments<'_> as ArgumentSource<PyHost>>::failed(error)
    }
}

impl CallArguments for OneCallable {
    #[inline(always)]
    fn finish(&mut self) {
        match self.function.take() {
            // SAFETY: GIL held (the call's caller): the shell lent to this call goes back.
            Some(callback::ForCall::Lent(lent)) => unsafe { callback::give_back(lent) },
            Some(callback::ForCall::Live(function)) => drop(function),
            None => {}
        }
    }
}

/// A call of exactly `N` arguments, out of line (see [`call_native_inline`]).
///
/// # Safety
/// As [`call_native`]; `LEAF` only for a leaf `f`; `args` holds `N` arguments.
#[inline(never)]
unsafe fn call_of<const LEAF: bool, const N: usize>(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    args: *const *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // A leaf of ints given small ints (`add3(1, 2, 3)`): its int entry, no cells. (Not for
    // one argument, whose leaf calls run inline in the vectorcall: the test cost `echo(x)` 9
    // instructions there.)
    if LEAF && f.flags & FUNC_INT_ENTRY != 0 && f.arity == N as i32 {
        // SAFETY: a leaf of arity N with an int entry, given N arguments (the caller's).
        if let Some(result) = unsafe { call_ints::<N>(func, f, args) } {
            return result;
        }
    }
    // SAFETY: the caller's guarantees; a slice of constant length unrolls the driver's loop.
    unsafe { call_with::<LEAF, N>(func, f, std::slice::from_raw_parts(args, N)) }
}

/// [`call_native`] for leaf calls (`LEAF`: the GIL stays held, wrapper arguments are
/// borrowed or lent a spare) or for calls that release the GIL (arguments hold references).
///
/// # Safety
/// As [`call_native`]; `f` is `func`'s body.
#[inline(always)]
unsafe fn call_with<const LEAF: bool, const N: usize>(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    args: &[*mut ffi::PyObject],
) -> *mut ffi::PyObject {
    // Finished by hand below: the call path never unwinds (a panic here would abort at the
    // `extern "C"` vectorcall), so the drop glue is not needed, and `finish` moves nothing.
    let mut arena = std::mem::ManuallyDrop::new(Arena::for_call());
    // The source holds only references: nothing of it escapes the inlined driver, so it
    // stays in registers.
    let keep_gil = !LEAF && f.flags & FUNC_NONBLOCKING != 0;
    let mut source = PyArguments { args, arena: &mut arena, keep_gil };
    // SAFETY: GIL held, `func` live and `f` its body, `args` alive for the call (caller).
    unsafe { run_call::<N, _>(func, f, args, |i| args[i], LEAF, &mut source) }
}

/// What holds a call's arguments for the driver, and lets go of them after the call.
trait CallArguments: ArgumentSource<PyHost, Error = PyErrSet> {
    /// The call is over: release what converting the arguments made (a lent Function goes
    /// back, temporaries go).
    fn finish(&mut self);
}

/// One call through the driver, then its answer to Python: the result, or argument `i` itself
/// (`argument(i)`: for a single argument its register, which reading `args` spilled in
/// `echo(x)`), a new reference; null with the exception set on failure.
///
/// # Safety
/// GIL held; `func` is a live Function and `f` its body; `args` are live for the call and
/// are what `source` converts; `leaf` as for [`state::frontend`]'s `call`.
#[inline(always)]
unsafe fn run_call<const N: usize, S: CallArguments>(
    func: *mut ObjectHeader,
    f: &FunctionObj,
    args: &[*mut ffi::PyObject],
    argument: impl FnOnce(usize) -> *mut ffi::PyObject,
    leaf: bool,
    source: &mut S,
) -> *mut ffi::PyObject {
    let mut result = Any::none();
    // SAFETY: the caller's guarantees.
    let called = unsafe { state::frontend().call::<N, _>(func, f, args.len(), leaf, source, &mut result) };
    source.finish();
    // SAFETY: GIL held (caller).
    unsafe {
        match called {
            Ok(Called::Result) => {
                pending::drain_refs(); // references the call dropped, now that no native lock is held
                convert::from_result(result, args)
            }
            Ok(Called::Argument(i)) => {
                pending::drain_refs();
                ffi::Py_NewRef(argument(i))
            }
            Err(PyErrSet) => null_mut(),
        }
    }
}

/// The Python arguments of one call: converted in place, temporaries in the arena.
struct PyArguments<'a> {
    args: &'a [*mut ffi::PyObject],
    arena: &'a mut Arena,
    /// A nonblocking call keeps the GIL, unless an argument is a native Function that may
    /// block (the callee would call it with the GIL held).
    keep_gil: bool,
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
            convert::to_view_into(arg, self.arena, leaf.map(|l| (l, index)), view)?;
            if self.keep_gil && callback::may_block(view.assume_init_ref()) {
                self.keep_gil = false;
            }
            Ok(())
        }
    }

    #[inline(always)]
    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        if self.keep_gil {
            // Nonblocking: its callbacks re-enter on this thread, which holds the GIL.
            return call();
        }
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

impl CallArguments for PyArguments<'_> {
    #[inline(always)]
    fn finish(&mut self) {
        self.arena.finish();
    }
}

/// tp_vectorcall of Function wrappers.
pub unsafe extern "C" fn function_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython's vectorcall contract: `args` holds `n` live borrowed objects, then one
    // value per name in `kwnames`.
    unsafe {
        // A Function's wrapper is a block of its own (`FunctionWrapper`).
        let func = (*(callable as *mut Wrapper)).native.own_block_object(Ordering::Acquire);
        if func.is_null() {
            return wrapper::native_of(callable).map_or(null_mut(), |_| null_mut());
        }
        vectorcall_native(func, args, nargsf, kwnames)
    }
}

/// Call native Function `func` with a vectorcall's arguments: positional calls of the
/// declared arity (nearly all) pay one comparison for keywords and defaults.
///
/// # Safety
/// GIL held; `func` is a live Function; CPython's vectorcall contract for the rest.
#[inline(always)]
unsafe fn vectorcall_native(
    func: *mut ObjectHeader,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: the caller's guarantees: `args` holds `n` objects, then one per keyword name.
    unsafe {
        let n = nargsf & !ffi::PY_VECTORCALL_ARGUMENTS_OFFSET;
        let n_keywords = if kwnames.is_null() { 0 } else { ffi::PyTuple_GET_SIZE(kwnames) as usize };
        let f = &(*(func as *const ObjectBox<FunctionObj>)).value;
        if n_keywords > 0 || (n as i32 != f.arity && f.flags & FUNC_SIGNED != 0) {
            let given = std::slice::from_raw_parts(args, n + n_keywords);
            let names = if n_keywords == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts((*(kwnames as *mut ffi::PyTupleObject)).ob_item.as_ptr(), n_keywords)
            };
            return call_bound(func, &given[..n], names, &given[n..]);
        }
        let args = if n == 0 { &[][..] } else { std::slice::from_raw_parts(args, n) };
        call_native_inline(func, args)
    }
}

/// tp_vectorcall of every generated class: `Pair(x, y)` calls the constructor with the
/// caller's argument array, without the argument tuple, `type_call` and `tp_new`/`tp_init`
/// that a class call takes otherwise (our `tp_init` does nothing for what our `tp_new` made).
/// Python subclasses do not inherit it (CPython never does), so theirs stay `tp_new` (empty
/// instance) then `__init__`; a generated class given its own `__new__` or `__init__` from
/// Python takes `type_call` too.
pub unsafe extern "C" fn class_vectorcall(
    callable: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython's vectorcall contract; `callable` is one of our generated classes (the
    // only types this is installed on).
    unsafe {
        let cls = callable as *mut ffi::PyTypeObject;
        let own_new = (*cls).tp_new.map(|f| f as usize) == Some(object_new as *const () as usize);
        let own_init = (*cls).tp_init.map(|f| f as usize) == Some(object_init as *const () as usize);
        if !own_new || !own_init {
            return class_call(cls, args, nargsf, kwnames);
        }
        let Some((_, ctor)) = constructor_of(cls) else {
            return null_mut();
        };
        let func = ctor.constructor;
        let f = &(*(func as *const ObjectBox<FunctionObj>)).value;
        let n = nargsf & !ffi::PY_VECTORCALL_ARGUMENTS_OFFSET;
        // Most constructors are leaves of two or three positional arguments (`Pair(x, x)`):
        // the unrolled call `call_native_inline` would reach for them, taken from here, where
        // no frame is set up for the general path (W4 1130 -> 1119 instructions).
        let leaf = f.flags & FUNC_LEAF != 0 && !cfg!(Py_GIL_DISABLED);
        if kwnames.is_null() && leaf && (n == 2 || n == 3) && n as i32 == f.arity {
            pending::drain();
            return if n == 2 { call_of::<true, 2>(func, f, args) } else { call_of::<true, 3>(func, f, args) };
        }
        construct_vectorcall(func, args, nargsf, kwnames)
    }
}

/// Any other constructor call of a class call ([`vectorcall_native`]), out of line, so that
/// `class_vectorcall` keeps no frame for it.
///
/// # Safety
/// As [`vectorcall_native`].
#[inline(never)]
unsafe fn construct_vectorcall(
    func: *mut ObjectHeader,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: the caller's guarantees.
    unsafe { vectorcall_native(func, args, nargsf, kwnames) }
}

/// A class call as `type_call` makes it (arguments as a tuple and a dict): for a generated
/// class whose `__new__` or `__init__` Python replaced.
///
/// # Safety
/// As [`class_vectorcall`].
#[cold]
unsafe fn class_call(
    cls: *mut ffi::PyTypeObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: as the caller's; the tuple and dict made here are ours to release.
    unsafe {
        let n = nargsf & !ffi::PY_VECTORCALL_ARGUMENTS_OFFSET;
        let n_keywords = if kwnames.is_null() { 0 } else { ffi::PyTuple_GET_SIZE(kwnames) };
        let positional = ffi::PyTuple_New(n as ffi::Py_ssize_t);
        if positional.is_null() {
            return null_mut();
        }
        for i in 0..n {
            ffi::PyTuple_SET_ITEM(positional, i as ffi::Py_ssize_t, ffi::Py_NewRef(*args.add(i)));
        }
        let keywords = if n_keywords == 0 { null_mut() } else { ffi::PyDict_New() };
        for k in 0..n_keywords {
            let name = ffi::PyTuple_GET_ITEM(kwnames, k);
            if keywords.is_null() || ffi::PyDict_SetItem(keywords, name, *args.add(n + k as usize)) != 0 {
                ffi::Py_DECREF(positional);
                ffi::Py_XDECREF(keywords);
                return null_mut();
            }
        }
        let type_call = (*std::ptr::addr_of!(ffi::PyType_Type)).tp_call.expect("type has tp_call");
        let out = type_call(cls as *mut ffi::PyObject, positional, keywords);
        ffi::Py_DECREF(positional);
        ffi::Py_XDECREF(keywords);
        out
    }
}

/// A call the positional path does not take: keyword arguments, or another count than the
/// declared one (defaults to fill in, or a mismatch to word). The function's signature binds
/// them (core's one rule, `signature::bind_call`) into positional order.
///
/// # Safety
/// GIL held; `func` is a live Function; `positional`, `names` (str objects) and `values` are
/// live objects, `names` as many as `values`.
#[cold]
#[inline(never)]
unsafe fn call_bound(
    func: *mut ObjectHeader,
    positional: &[*mut ffi::PyObject],
    names: &[*mut ffi::PyObject],
    values: &[*mut ffi::PyObject],
) -> *mut ffi::PyObject {
    // SAFETY: GIL held and everything live (the caller's guarantee).
    unsafe {
        let f = &(*(func as *const ObjectBox<FunctionObj>)).value;
        let Some(sig) = f.signature() else {
            if names.is_empty() {
                return call_native(func, positional);
            }
            errors::raise(Error::type_error(format!("{}() takes no keyword arguments", f.name_str())));
            return null_mut();
        };
        let mut keywords: Vec<&str> = Vec::with_capacity(names.len());
        for &name in names {
            let mut len: ffi::Py_ssize_t = 0;
            let utf8 = ffi::PyUnicode_AsUTF8AndSize(name, &mut len);
            if utf8.is_null() {
                return null_mut();
            }
            // The str object owns its UTF-8 form while it lives, which is the whole call.
            keywords.push(std::str::from_utf8_unchecked(std::slice::from_raw_parts(utf8 as *const u8, len as usize)));
        }
        let bound = match bind_call(f.name_str(), sig, positional.len(), &keywords) {
            Ok(bound) => bound,
            Err(e) => {
                errors::raise(e);
                return null_mut();
            }
        };
        let mut defaults: Vec<*mut ffi::PyObject> = Vec::new();
        let mut items: Vec<*mut ffi::PyObject> = Vec::with_capacity(bound.len());
        for (b, p) in bound.iter().zip(sig.params()) {
            let item = match *b {
                Bound::Positional(i) => positional[i],
                Bound::Keyword(k) => values[k],
                Bound::Default => {
                    let d = convert::from_any(p.default().cloned().unwrap_or_else(Any::none));
                    if d.is_null() {
                        defaults.into_iter().for_each(|d| ffi::Py_DECREF(d));
                        return null_mut();
                    }
                    defaults.push(d);
                    d
                }
            };
            items.push(item);
        }
        let out = call_native(func, &items);
        defaults.into_iter().for_each(|d| ffi::Py_DECREF(d));
        out
    }
}

/// tp_new of every generated class. A generated class calls its native constructor here. A
/// Python subclass gets an empty instance instead, whose native object the base class's
/// `__init__` ([`object_init`]) makes, so the subclass's own `__init__` may take other
/// arguments (as with pybind11 and nanobind) and must call `super().__init__(...)`.
pub unsafe extern "C" fn object_new(
    cls: *mut ffi::PyTypeObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held; `args` is a tuple, `kwargs` a dict or null (tp_new contract).
    unsafe {
        let Some((index, ctor)) = constructor_of(cls) else {
            return null_mut();
        };
        if classes::class_for(index) != cls {
            let alloc = (*cls).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
            return alloc(cls, 0);
        }
        construct(ctor, args, kwargs)
    }
}

/// tp_init of every generated class: makes the native object of a Python subclass's instance
/// (see [`object_new`]) and ties it to that instance. Nothing for an instance that has its
/// native object already (a generated class's, made by tp_new).
pub unsafe extern "C" fn object_init(
    this: *mut ffi::PyObject,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> std::ffi::c_int {
    // SAFETY: GIL held; `this` is an instance of one of our classes (tp_init contract).
    unsafe {
        if !(*(this as *mut Wrapper)).native.object(Ordering::Acquire).is_null() {
            return 0;
        }
        let cls = ffi::Py_TYPE(this);
        let Some((_, ctor)) = constructor_of(cls) else {
            return -1;
        };
        let out = construct(ctor, args, kwargs);
        if out.is_null() {
            return -1;
        }
        let made = if !wrapper::is_wrapper(out) {
            Err(Error::type_error("the native constructor did not return a native object"))
        } else if ffi::Py_REFCNT(out) != 1 {
            Err(Error::type_error(
                "the native constructor returned an object that already has a wrapper; it cannot become an instance of this subclass",
            ))
        } else {
            Ok(())
        };
        if let Err(e) = made {
            ffi::Py_DECREF(out);
            errors::raise(e);
            return -1;
        }
        let obj = wrapper::take_for_move(out);
        ffi::Py_DECREF(out);
        match obj {
            Ok(obj) => match wrapper::tie_into(obj, this) {
                Ok(()) => 0,
                Err(PyErrSet) => -1,
            },
            Err(PyErrSet) => -1,
        }
    }
}

/// The type index and constructor of the native type of class `cls` (a generated class or a
/// Python subclass of one), or None with a TypeError set.
///
/// # Safety
/// GIL held.
#[inline]
unsafe fn constructor_of(cls: *mut ffi::PyTypeObject) -> Option<(i32, &'static types::TypeInfo)> {
    // SAFETY: GIL held (caller).
    unsafe {
        let Some(index) = classes::index_of(cls) else {
            errors::raise(Error::type_error("this class is not bound to a native type"));
            return None;
        };
        let info = types::type_info(index);
        match info.filter(|i| !i.constructor.is_null()) {
            Some(ctor) => Some((index, ctor)),
            None => no_constructor(info),
        }
    }
}

/// [`constructor_of`]'s TypeError for a type without a constructor.
///
/// # Safety
/// GIL held.
#[cold]
unsafe fn no_constructor(info: Option<&types::TypeInfo>) -> Option<(i32, &'static types::TypeInfo)> {
    let key = info.map(|i| i.key()).unwrap_or("?");
    // SAFETY: GIL held (caller).
    unsafe {
        errors::raise(Error::type_error(format!(
            "cannot create {key} instances: the type has no registered constructor"
        )))
    };
    None
}

/// Call the native constructor `ctor` with a tp_new/tp_init's arguments.
///
/// # Safety
/// GIL held; `args` is a tuple, `kwargs` a dict or null.
unsafe fn construct(
    ctor: &types::TypeInfo,
    args: *mut ffi::PyObject,
    kwargs: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `args` a tuple and `kwargs` a dict or null (caller).
    unsafe {
        let n = ffi::PyTuple_GET_SIZE(args) as usize;
        // The tuple's items are contiguous borrowed references.
        let items = std::slice::from_raw_parts((*(args as *mut ffi::PyTupleObject)).ob_item.as_ptr(), n);
        if kwargs.is_null() || ffi::PyDict_Size(kwargs) == 0 {
            let f = &(*(ctor.constructor as *const ObjectBox<FunctionObj>)).value;
            if n as i32 != f.arity && f.flags & FUNC_SIGNED != 0 {
                call_bound(ctor.constructor, items, &[], &[])
            } else {
                call_native(ctor.constructor, items)
            }
        } else {
            let (mut names, mut values) = (Vec::new(), Vec::new());
            let (mut pos, mut key, mut value): (ffi::Py_ssize_t, *mut ffi::PyObject, *mut ffi::PyObject) =
                (0, null_mut(), null_mut());
            // The dict is the call's own and lives through it; its items are borrowed.
            while ffi::PyDict_Next(kwargs, &mut pos, &mut key, &mut value) != 0 {
                names.push(key);
                values.push(value);
            }
            call_bound(ctor.constructor, items, &names, &values)
        }
    }
}
