//! The `native` methods of `dev.tether.ffi.Native` (all static).
//!
//! Hot paths (`call0`, `call1`, `call`, `release`, container reads) use raw JNI; cold paths
//! that take Java strings read them through the jni crate (`EnvUnowned` + `JString`).

use jni::objects::{JClass, JString};
use jni::{EnvUnowned, Outcome};
use jni_sys::{jboolean, jclass, jint, jlong, jobject, jobjectArray, jstring, JNIEnv};
use tether_core::arc::ObjectBox;
use tether_core::boundary::{argument_message, ArgumentSource, Called, LeafCall};
use tether_core::containers::{ArrayObj, MapObj};
use tether_core::function::FunctionObj;
use tether_core::object::ObjectHeader;
use tether_core::plugin::{self, ModuleObj};
use tether_core::signature::{language_name, render_signature, render_type, Language};
use tether_core::thread_spares::SpareCell;
use tether_core::types::{self, FieldInfo, MethodInfo, TypeInfo};
use tether_core::{function, Any, AnyView, Error, ObjectRef, Result, TypeIndex};

use crate::convert::{self, decode, decode_arrays, to_java};
use crate::errors::{guard, guard_call};
use crate::jenv::Env;
use crate::{callback, classes, tie};

type Null = jobject;
fn null() -> Null {
    std::ptr::null_mut()
}

/// A Java string argument as a Rust string (jni crate: modified UTF-8 decoded properly).
fn rust_string(env: &mut EnvUnowned<'_>, s: &JString<'_>, what: &str) -> Result<String> {
    match env.with_env(|e| s.try_to_string(e)).into_outcome() {
        Outcome::Ok(s) => Ok(s),
        Outcome::Err(e) => {
            // SAFETY: the env of the native call `env` borrows.
            unsafe { Env::from_raw(env.as_raw()) }.clear_exception();
            Err(Error::type_error(format!("{what}: expected a string ({e})")))
        }
        Outcome::Panic(_) => Err(Error::runtime(format!("{what}: reading the string panicked"))),
    }
}

/// Call the Function at `func` with decoded arguments through the core's call driver and
/// convert its result.
///
/// # Safety
/// `func` is a live Function handle.
unsafe fn call_function(env: Env, func: jlong, args: &[Any]) -> Result<jobject> {
    // SAFETY: Java keeps the Function behind `func` reachable for the call (this function's contract).
    let f = unsafe { function_at(func) }?;
    if usize::try_from(f.arity) != Ok(args.len()) && f.signature().is_some() {
        let defaults = f.defaults_left_out(args.len())?;
        if !defaults.is_empty() {
            let all: Vec<Any> = args.iter().cloned().chain(defaults).collect();
            // SAFETY: this function's contract; `all` holds the arguments and the defaults.
            return unsafe { call_bound(env, func, f, &all) };
        }
    }
    // SAFETY: this function's contract.
    unsafe { call_bound(env, func, f, args) }
}

/// [`call_function`] once the arguments are complete.
///
/// # Safety
/// `f` is the live Function at `func`, which Java keeps reachable for the call.
unsafe fn call_bound(env: Env, func: jlong, f: &FunctionObj, args: &[Any]) -> Result<jobject> {
    let mut result = Any::none();
    let mut source = DecodedArguments { items: args };
    // SAFETY: a live Function and its body; `args` outlive the call. Not a leaf call: the JVM
    // is no serialized host, so arguments hold their own references.
    let called = unsafe {
        tie::FRONTEND.call::<8, _>(func as *mut ObjectHeader, f, args.len(), false, &mut source, &mut result)
    }?;
    // Only a leaf call can give back its claimed argument.
    debug_assert_eq!(called, Called::Result);
    to_java(env, result)
}

/// Arguments decoded from Java before the call (decoding consumes every owned handle Java
/// passed, so it cannot stop at the first failure).
struct DecodedArguments<'a> {
    items: &'a [Any],
}

// SAFETY: every view borrows a decoded cell of `items`, which the caller keeps for the call;
// no leaf call (the JVM is not serialized), so no wrapper argument is borrowed.
unsafe impl ArgumentSource<tie::JavaHost> for DecodedArguments<'_> {
    type Error = Error;

    unsafe fn convert<'v>(
        &mut self,
        index: usize,
        _leaf: Option<&mut LeafCall<'_, tie::JavaHost>>,
        view: &mut std::mem::MaybeUninit<AnyView<'v>>,
    ) -> Result<()> {
        let item: &'v Any = {
            // SAFETY: `items` outlives the call (the caller's); the view lives as long.
            unsafe { &*(&self.items[index] as *const Any) }
        };
        view.write(item.view());
        Ok(())
    }

    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        // The JVM holds no lock a native call must release.
        call()
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: Error) -> Error {
        error.reworded(argument_message(function, index, error.message()))
    }

    fn failed(error: Error) -> Error {
        error
    }
}

/// The Function behind a handle Java passed.
///
/// # Safety
/// `func` is null or a live object's handle that Java keeps reachable for the call.
#[inline(always)]
pub(crate) unsafe fn function_at<'a>(func: jlong) -> Result<&'a FunctionObj> {
    // SAFETY: this function's contract.
    unsafe { function_if_any(func) }.ok_or_else(|| Error::type_error("not a tether Function handle"))
}

/// [`function_at`], `None` for a handle that is not a Function's.
///
/// # Safety
/// As [`function_at`].
#[inline(always)]
pub(crate) unsafe fn function_if_any<'a>(func: jlong) -> Option<&'a FunctionObj> {
    let handle = func as *mut ObjectHeader;
    if handle.is_null() || !convert::is_function(handle) {
        return None;
    }
    // SAFETY: checked type; the caller keeps the Function alive.
    Some(unsafe { &(*(handle as *const ObjectBox<FunctionObj>)).value })
}

/// `views` followed by the defaults the call leaves out (kept alive in `defaults`).
fn with_defaults<'a>(f: &FunctionObj, views: &[AnyView<'a>], defaults: &'a mut Vec<Any>) -> Result<Vec<AnyView<'a>>> {
    *defaults = f.defaults_left_out(views.len())?;
    Ok(views.iter().copied().chain(defaults.iter().map(Any::view)).collect())
}

/// A call of `f` whose argument count is not its arity ([`call_encoded`]'s cold path): the
/// defaults filled in (or the binding's TypeError), then called; its result stays in `result`.
///
/// # Safety
/// As [`invoke`]; no view is lent.
#[cold]
#[inline(never)]
unsafe fn invoke_with_defaults(func: jlong, f: &FunctionObj, views: &[AnyView<'_>], result: &mut Any) -> Result<()> {
    let mut defaults = Vec::new();
    let all = with_defaults(f, views, &mut defaults)?;
    // SAFETY: the caller's guarantees; the defaults live in `defaults` for the call.
    unsafe { invoke(func, f, &all, result) }
}

/// Call `f` (the Function at `func`), its owned result written into `result` (None before).
///
/// # Safety
/// `f` is [`function_at`]`(func)`'s; lent views in `args` only if `f` adopts them.
#[inline(always)]
unsafe fn invoke(func: jlong, f: &FunctionObj, args: &[AnyView<'_>], result: &mut Any) -> Result<()> {
    // SAFETY: the call ABI: a live function, `args.len()` cells, a None result cell.
    let rc = unsafe { (f.safe_call)(func as *mut ObjectHeader, args.as_ptr(), args.len() as i32, result) };
    if rc != 0 {
        return Err(tether_core::error::take_last_error());
    }
    Ok(())
}

/// Decode up to three `(kind, bits, ref)` arguments and call `func` with them, its owned
/// result written into `result` (which holds None). Every argument is decoded even after a
/// failure, so owned handles are always consumed.
///
/// An object argument whose wrapper this thread kept a spare reference for (see
/// `Frontend::result_argument`) gets it lent, when the function adopts lent arguments: no atomic
/// increment in the callee.
///
/// A callable argument (`KIND_CALLABLE`) is lent a Function held in `lent`, which the caller
/// drops (reclaiming it) once it is done with the result; callers pass `None` when no
/// argument is a callable (the calls without one stay as they were: no `LentArgs` to drop).
///
/// Returns the wrapper of the argument the result is, if it is one of the object arguments
/// (`echo(p)`): a local reference of the calling native method, returned to Java as is. With
/// `keep_spare`, the result's extra reference then becomes this thread's spare (`result` is
/// left None); without, it stays in `result`.
///
/// # Safety
/// Java encoded the arguments with `Marshal`, keeps each `ref` and the function reachable.
#[inline(always)]
unsafe fn call_encoded<'e, const N: usize>(
    env: Env<'e>,
    func: jlong,
    args: &[(jlong, jlong, jobject); N],
    keep_spare: bool,
    result: &mut Any,
    mut lent: Option<&mut callback::LentArgs<'e, N>>,
) -> Result<Option<jobject>> {
    let mut hold: [Any; N] = std::array::from_fn(|_| Any::none());
    let mut views = [AnyView::none(); N];
    let mut first_error = None;
    for (i, ((view, h), &(k, b, r))) in views.iter_mut().zip(hold.iter_mut()).zip(args).enumerate() {
        // Objects and ints are written in place: a view returned by `decode` is stored in
        // pieces and reloaded whole, a store-forwarding stall per argument. An object comes
        // with its wrapper's word (its type: no header read) or a plain kind.
        match tie::word_kind(k) {
            // SAFETY: Java encoded this argument with `Marshal` and keeps its wrapper, and so
            // the object behind the handle, alive for the call (this function's contract); a
            // typed word is that wrapper's.
            convert::KIND_OBJECT => *view = unsafe { tie::object_argument(b as *mut ObjectHeader, k) },
            convert::KIND_INT => *view = AnyView::int(b),
            // A callable's word carries its lend token above the kind (`Callbacks.lendToken`).
            convert::KIND_CALLABLE if lent.is_some() => {
                let lent = lent.as_deref_mut().expect("checked");
                match lent.lend(i, r, b as i32, (k as u64) >> 8) {
                    // SAFETY: `lent` holds the Function until the caller is done with the call
                    // and its result.
                    Ok(f) => *view = unsafe { AnyView::from_object_ptr(f) },
                    Err(e) => {
                        first_error.get_or_insert((i, e));
                    }
                }
            }
            // SAFETY: Java encoded `(k, b, r)` with `Marshal` and keeps `r` reachable (this function's contract).
            kind => match unsafe { decode(env, kind, b, r, h) } {
                Ok(v) => *view = v,
                Err(e) => {
                    first_error.get_or_insert((i, e));
                }
            },
        }
    }
    // SAFETY: `func` is a live handle Java keeps reachable (this function's contract).
    let f = unsafe { function_at(func) }?;
    if let Some((index, error)) = first_error {
        return Err(convert::ArgumentError { index, error }.named(f, false));
    }
    if usize::try_from(f.arity) != Ok(args.len()) && f.signature().is_some() {
        // SAFETY: `f` is `func`'s body and Java keeps it and every argument alive (this
        // function's contract); the views borrow `hold` or those arguments, and none is lent.
        unsafe { invoke_with_defaults(func, f, &views[..], result) }?;
        return Ok(None);
    }
    // Only calls with a wrapper argument look for the thread's cell (for the `ints*` natives
    // the kinds are constants and this folds away).
    let is_object = |word: jlong| tie::word_kind(word) == convert::KIND_OBJECT;
    let spares = args.iter().any(|&(word, _, _)| is_object(word)).then(tie::spare_cell).flatten();
    // The object whose spare was lent, and its generation.
    let mut lent_spare = None;
    if let (Some(cell), true) = (&spares, f.flags & function::FUNC_ADOPTS_LENT != 0) {
        // The cell holds one entry: the first argument that matches it takes it.
        for (view, &(word, bits, r)) in views.iter_mut().zip(args) {
            if is_object(word) && !r.is_null() {
                let obj = bits as *mut ObjectHeader;
                // SAFETY: Java keeps the wrapper reachable and passed its word, from which the
                // view was made; `f` adopts lent views.
                if let Some((lent, generation)) = unsafe { tie::lend_spare(cell, obj, *view, word) } {
                    *view = lent;
                    lent_spare = Some((obj, generation));
                    break;
                }
            }
        }
    }
    // A lending call records the `TetherInstance` its callbacks return (`callback::MemoWindow`).
    let window = lent.as_deref_mut().map(callback::LentArgs::window);
    // SAFETY: `f` is `func`'s body and Java keeps it and every argument alive (this
    // function's contract); lent views only for an adopting `f`.
    let called = unsafe { invoke(func, f, &views[..], result) };
    drop(window);
    called?;
    // A function returning one of its object arguments gets that argument's wrapper back
    // without a tie: a wrapper Java can still pass is strongly reachable and not closed, so
    // it is the one in the slot (a slot only moves on once its weak ref is cleared). The
    // argument is a local reference of this native frame: no `NewLocalRef` (that was a sixth
    // of an `echo` call).
    // The argument's word says which generation to keep the spare under (no slot read; the
    // step `Frontend::result_argument` takes with the slot's generation).
    if let Some(ptr) = result.view().as_object_ptr() {
        let argument = args
            .iter()
            .position(|&(word, bits, r)| is_object(word) && !r.is_null() && bits as *mut ObjectHeader == ptr);
        if let (Some(i), true) = (argument, keep_spare) {
            let obj = std::mem::take(result).into_object().expect("an object kind");
            // SAFETY: Java keeps argument i's wrapper, whose word it passed, reachable for the
            // call; `spares` is this thread's cell, the one a lent spare came from.
            unsafe { return_argument_spare(obj, args[i].0, lent_spare, spares.as_ref()) };
        }
        // The `TetherInstance` a callback returned (`cb.call()` is `x`): its wrapper, as an
        // argument's: a live, not closed wrapper is the one in the slot. Its handle is read
        // again (a fast field read): a later callback of the same call may have closed it, and
        // the object it owned may be gone and its address the result's.
        // (A `match`, not `Option::filter`, which LLVM left out of line in every `call*` native.)
        let memo = match lent.as_deref() {
            Some(l)
                if l.memo.obj == ptr
                    && !l.memo.wrapper.is_null()
                    // SAFETY: a live local reference to a `TetherInstance` (the memo's), whose
                    // `handle` field was resolved at init.
                    && unsafe { env.get_long_field(l.memo.wrapper, classes::get().instance_handle) }
                        == ptr as jlong =>
            {
                Some(&l.memo)
            }
            _ => None,
        };
        if let (None, Some(memo), true) = (argument, memo, keep_spare) {
            let obj = std::mem::take(result).into_object().expect("an object kind");
            // The thread's cell: the call's, or the one the callback found taking the result.
            let looked_up;
            let cell = match (&spares, &memo.cell) {
                (Some(cell), _) | (None, Some(cell)) => Some(cell),
                (None, None) => {
                    looked_up = tie::spare_cell();
                    looked_up.as_ref()
                }
            };
            // SAFETY: the memo's wrapper, of `memo.word`, is a local reference of this native
            // frame (it stays reachable until the call returns) and holds `obj`.
            unsafe { tie::keep_result_spare(obj, memo.word, cell) };
            return Ok(Some(memo.wrapper));
        }
        return Ok(argument.map(|i| args[i].2));
    }
    Ok(None)
}

/// Is `word` (a call native's kind word) one [`call_plain`] takes: a wrapper's word, an int or
/// null?
#[inline(always)]
pub(crate) fn is_plain(word: jlong) -> bool {
    matches!(tie::word_kind(word), convert::KIND_OBJECT | convert::KIND_INT | convert::KIND_NONE)
}

/// What [`call_plain`] did: the result is argument `i`'s wrapper, or a value.
pub(crate) enum Plain {
    Argument(usize),
    Value(Any),
}

/// [`call_encoded`] for arguments that are all [`is_plain`], as many as `f`'s arity, with no
/// JNI: nothing to decode or hold, no callable to lend, no defaults. A wrapper argument gets
/// this thread's spare lent (when `f` adopts lent arguments); a result that is a wrapper
/// argument keeps its +1 as the next spare and comes back as that argument's position. The
/// critical downcalls take this path (`critical.rs`); it is not shared with `call_encoded`,
/// whose code came out ~30 instructions longer per `call(cb)` when its spare steps were
/// factored out into functions both could call.
///
/// # Safety
/// `f` is the live Function at `func`, which Java keeps reachable with every wrapper argument,
/// whose word it passed; every word is plain; `cell` is the calling thread's spare cell, and
/// the thread is marked for a leaf call (so, until this returns, it runs no other entry that
/// could keep or take a spare).
#[inline(always)]
pub(crate) unsafe fn call_plain<const N: usize>(
    func: jlong,
    f: &FunctionObj,
    args: &[(jlong, jlong); N],
    cell: &SpareCell<'_>,
) -> Result<Plain> {
    let is_object = |word: jlong| tie::word_kind(word) == convert::KIND_OBJECT;
    let adopts = f.flags & function::FUNC_ADOPTS_LENT != 0;
    let mut views = [AnyView::none(); N];
    // The argument lent this thread's spare (the cell's one entry: the first that matches
    // takes it).
    let mut lent_spare = None;
    for (i, (view, &(word, bits))) in views.iter_mut().zip(args).enumerate() {
        if is_object(word) {
            let obj = bits as *mut ObjectHeader;
            // SAFETY: Java keeps the wrapper, and so its object, alive for the call; its word.
            *view = unsafe { tie::object_argument(obj, word) };
            if adopts && lent_spare.is_none() {
                // SAFETY: Java keeps the wrapper reachable for the call and passed its word, from which
                // the view was made; `f` adopts lent views.
                if let Some((lent, _)) = unsafe { tie::lend_spare(cell, obj, *view, word) } {
                    *view = lent;
                    lent_spare = Some(i);
                }
            }
        } else if tie::word_kind(word) == convert::KIND_INT {
            *view = AnyView::int(bits);
        }
    }
    let result = match f.value_entry() {
        Some(entry) if N <= function::VALUE_ENTRY_ARGS => {
            // SAFETY: `f`'s value entry, of arity N (the caller checked), with views as for
            // its `safe_call`: Java keeps `f` and every argument alive; lent views only for an
            // adopting `f`.
            unsafe { function::call_value_entry(entry, func as *mut ObjectHeader, views) }?
        }
        _ => {
            let mut result = Any::none();
            // SAFETY: `f` is `func`'s body and Java keeps it and every argument alive; lent
            // views only for an adopting `f`.
            unsafe { invoke(func, f, &views, &mut result) }?;
            result
        }
    };
    let Some(ptr) = result.view().as_object_ptr() else { return Ok(Plain::Value(result)) };
    // The lent argument came back (`echo`): its +1 is the spare again.
    if let Some(i) = lent_spare {
        if args[i].1 as *mut ObjectHeader == ptr {
            // SAFETY: the result's strong reference, moved out of `result`, which is forgotten.
            let obj = unsafe { ObjectRef::from_raw(ptr) };
            std::mem::forget(result);
            // SAFETY: Java keeps argument i's wrapper reachable for the call; `cell` is this
            // thread's, the spare was taken from it for this call, and the thread, marked,
            // ran no other entry since (this function's contract).
            unsafe { cell.restore_untouched(obj) };
            return Ok(Plain::Argument(i));
        }
    }
    let Some(i) = args.iter().position(|&(word, bits)| is_object(word) && bits as *mut ObjectHeader == ptr) else {
        return Ok(Plain::Value(result));
    };
    // SAFETY: the result's strong reference, moved out of `result`, which is forgotten.
    let obj = unsafe { ObjectRef::from_raw(ptr) };
    std::mem::forget(result);
    // SAFETY: Java keeps argument i's wrapper, whose word it passed, reachable for the call;
    // `cell` is this thread's.
    unsafe { tie::keep_result_spare(obj, args[i].0, Some(cell)) };
    Ok(Plain::Argument(i))
}

/// A call's result `obj` is an argument (passed with `word`): its +1 back to the spare it
/// was lent from when it is that argument's (`lent_spare`: the object and generation), else
/// kept as a spare under the word's generation.
///
/// # Safety
/// As `tie::keep_result_spare`; `lent_spare` is what `tie::lend_spare` lent from `cell` for
/// this call.
#[inline(always)]
unsafe fn return_argument_spare(
    obj: ObjectRef,
    word: jlong,
    lent_spare: Option<(*mut ObjectHeader, u64)>,
    cell: Option<&SpareCell<'_>>,
) {
    match (lent_spare, cell) {
        // SAFETY: the caller's guarantee; the lent argument's wrapper is held for the call.
        (Some((lent, generation)), Some(cell)) if lent == obj.as_ptr() => unsafe {
            tie::restore_result_spare(obj, generation, cell)
        },
        // SAFETY: the caller's guarantee.
        _ => unsafe { tie::keep_result_spare(obj, word, cell) },
    }
}

/// [`call_encoded`], its result as a Java object.
///
/// # Safety
/// As [`call_encoded`].
#[inline(always)]
unsafe fn call_encoded_object<const N: usize>(
    env: Env,
    func: jlong,
    args: &[(jlong, jlong, jobject); N],
) -> Result<jobject> {
    if has_callable(args) {
        // SAFETY: the caller's guarantee.
        return unsafe { call_lending_object(env, func, args) };
    }
    let mut result = Any::none();
    // SAFETY: the caller's guarantee: Marshal-encoded arguments, reachable refs and Function.
    match unsafe { call_encoded(env, func, args, true, &mut result, None) }? {
        Some(r) => Ok(r),
        None => to_java(env, result),
    }
}

/// Is one of the arguments a callable (`KIND_CALLABLE`, lent a Function for the call)?
#[inline(always)]
fn has_callable(args: &[(jlong, jlong, jobject)]) -> bool {
    args.iter().any(|&(word, _, _)| tie::word_kind(word) == convert::KIND_CALLABLE)
}

/// [`call_encoded_object`] with callables to lend: inline in each `call*` native, behind the
/// callable test (its own call was measurable in `call(cb)`; the calls without a callable take
/// the other branch and run the same code as before).
///
/// # Safety
/// As [`call_encoded`].
#[inline(always)]
unsafe fn call_lending_object<const N: usize>(
    env: Env,
    func: jlong,
    args: &[(jlong, jlong, jobject); N],
) -> Result<jobject> {
    let mut lent = callback::LentArgs::new(env);
    let mut result = Any::none();
    // SAFETY: the caller's guarantee: Marshal-encoded arguments, reachable refs and Function.
    let out = match unsafe { call_encoded(env, func, args, true, &mut result, Some(&mut lent)) } {
        Ok(Some(r)) => Ok(r),
        // Converted before `lent` goes: a lent Function coming back is no escape.
        Ok(None) => to_java(env, result),
        Err(e) => Err(e),
    };
    lent.finish();
    // Every item went back: nothing is left for the drop glue, an out-of-line call.
    std::mem::forget(lent);
    out
}

/// What the `call*L` natives return when the result is not a plain int (or is an int equal
/// to this value): the result then waits in [`PENDING`] for `Native.takePending()`.
/// Java reads it as `Native.PENDING` (`Native.constant("PENDING_RESULT")`).
pub const PENDING_RESULT: jlong = i64::MIN + 0x7e7e;

thread_local! {
    /// A result a `call*L` native could not return as a `long`, or a critical downcall's
    /// result or error (`critical.rs`); taken at once by Java (`Native.takePending`).
    static PENDING: std::cell::Cell<Option<Result<Any>>> = const { std::cell::Cell::new(None) };
}

/// Park `outcome` for `Native.takePending` (see [`PENDING`]); returns [`PENDING_RESULT`].
pub(crate) fn park(outcome: Result<Any>) -> jlong {
    // A thread that is exiting runs no more Java to take it.
    let _ = PENDING.try_with(|p| p.set(Some(outcome)));
    PENDING_RESULT
}

/// [`call_encoded`] for a call site whose results have been ints: an int result comes back as
/// a plain `long` (Java boxes it, no upcall to `Long.valueOf` from here); anything else is
/// parked in [`PENDING`] and [`PENDING_RESULT`] returned.
///
/// # Safety
/// As [`call_encoded`].
#[inline(always)]
unsafe fn call_encoded_long<const N: usize>(
    env: Env,
    func: jlong,
    args: &[(jlong, jlong, jobject); N],
) -> Result<jlong> {
    if has_callable(args) {
        // SAFETY: the caller's guarantee.
        return unsafe { call_lending_long(env, func, args) };
    }
    let mut result = Any::none();
    // SAFETY: Marshal-encoded arguments whose refs and Function Java keeps reachable (this
    // function's contract). An argument coming back is parked as the object itself (not the
    // local reference, which dies with this frame); the take ties it to the same wrapper.
    unsafe { call_encoded(env, func, args, false, &mut result, None) }?;
    long_result(result)
}

/// [`call_encoded_long`] with callables to lend (out of line: not measured inline, unlike
/// [`call_lending_object`]).
///
/// # Safety
/// As [`call_encoded`].
#[inline(never)]
unsafe fn call_lending_long<const N: usize>(
    env: Env,
    func: jlong,
    args: &[(jlong, jlong, jobject); N],
) -> Result<jlong> {
    let mut lent = callback::LentArgs::new(env);
    let mut result = Any::none();
    // SAFETY: as in `call_encoded_long`: Marshal-encoded arguments, reachable refs and Function.
    unsafe { call_encoded(env, func, args, false, &mut result, Some(&mut lent)) }?;
    // A lent Function parked here escapes (registered when `lent` goes), as any kept one.
    long_result(result)
}

/// The `ints*` natives' common case: a Function whose int entry takes exactly these ints,
/// called from a frame that holds nothing for the general case ([`ints_general`], out of
/// line): its int, or an error or an int that reads as [`PENDING_RESULT`] parked (Java's
/// `longResult` takes it). `None` when `func` has no such entry, or is not a Function.
///
/// # Safety
/// Java keeps the Function at `func` reachable for the call.
#[inline(always)]
pub(crate) unsafe fn int_entry_call<const N: usize>(func: jlong, ints: [jlong; N]) -> Option<jlong> {
    // SAFETY: a reachable Function's handle, or anything else (checked).
    let f = unsafe { function_if_any(func) }?;
    let entry = f.int_entry().filter(|_| usize::try_from(f.arity) == Ok(N))?;
    // SAFETY: `func` is a live Function with an int entry, given its arity's ints.
    match unsafe { function::call_int_entry(entry, func as *mut ObjectHeader, ints) } {
        Ok(value) if value != PENDING_RESULT => Some(value),
        outcome => Some(park_int(outcome)),
    }
}

/// [`park`] an int entry's error, or its int that reads as [`PENDING_RESULT`]: out of line,
/// so the common case makes no call but the entry's.
#[cold]
#[inline(never)]
fn park_int(outcome: Result<i64>) -> jlong {
    park(outcome.map(Any::int))
}

/// The `ints*` natives' other cases ([`call_ints`]): out of line, so the common case
/// ([`int_entry_call`]) keeps no frame for them. The ints go as scalars, which stay in
/// registers where an array would be stored on the way in.
///
/// # Safety
/// As [`call_ints`]; `env` is the calling thread's live env.
#[inline(always)]
unsafe fn ints_general<const N: usize>(env: *mut JNIEnv, func: jlong, ints: [jlong; N]) -> jlong {
    let at = |i: usize| if i < N { ints[i] } else { 0 };
    // SAFETY: this function's contract.
    unsafe { ints_general_of::<N>(env, func, at(0), at(1), at(2)) }
}

/// [`ints_general`] out of line.
///
/// # Safety
/// As [`ints_general`].
#[inline(never)]
unsafe fn ints_general_of<const N: usize>(env: *mut JNIEnv, func: jlong, a0: jlong, a1: jlong, a2: jlong) -> jlong {
    let ints: [jlong; N] = std::array::from_fn(|i| [a0, a1, a2][i]);
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: this function's contract.
    guard_call(env, 0, || unsafe { call_ints(func, ints) })
}

/// [`call_encoded_long`] for arguments that are all ints (the `ints*` natives, `callLong`)
/// when [`int_entry_call`] does not apply: the same outcome, without the general decoding's
/// state (a held value per argument to drop, the first failure, wrapper arguments' spares and
/// result): ints decode to views that cannot fail and own nothing.
///
/// # Safety
/// Java keeps the Function at `func` reachable for the call.
#[inline(always)]
pub(crate) unsafe fn call_ints<const N: usize>(func: jlong, ints: [jlong; N]) -> Result<jlong> {
    // SAFETY: a reachable Function's handle (this function's contract).
    let f = unsafe { function_at(func) }?;
    let views = ints.map(AnyView::int);
    let mut result = Any::none();
    if usize::try_from(f.arity) != Ok(N) && f.signature().is_some() {
        // SAFETY: `f` is `func`'s body, which Java keeps alive; the views own nothing.
        unsafe { invoke_with_defaults(func, f, &views, &mut result) }?;
    } else {
        // SAFETY: `f` is `func`'s body, which Java keeps alive; the int views own and lend nothing.
        unsafe { invoke(func, f, &views, &mut result) }?;
    }
    long_result(result)
}

/// A `call*L` result: the int, or [`PENDING_RESULT`] with the value parked.
#[inline(always)]
fn long_result(result: Any) -> Result<jlong> {
    if let Some(i) = result.view().as_int() {
        if i != PENDING_RESULT {
            return Ok(i);
        }
    }
    Ok(park(Ok(result)))
}

fn string_array(env: Env, items: &[&str]) -> Result<jobjectArray> {
    let array = env.new_object_array(items.len() as i32, classes::get().string);
    if array.is_null() {
        env.clear_exception();
        return Err(Error::runtime("cannot allocate a String[]"));
    }
    for (i, s) in items.iter().enumerate() {
        let js = env.new_string(s);
        env.object_array_set(array, i as i32, js);
        env.delete_local_ref(js);
    }
    Ok(array)
}

fn info(type_index: jint) -> Result<&'static TypeInfo> {
    types::type_info(type_index).ok_or_else(|| Error::value(format!("no type is registered with index {type_index}")))
}

/// # Safety
/// `handle` is live (its wrapper is reachable for the call).
unsafe fn borrowed(handle: jlong) -> Result<ObjectRef> {
    if handle == 0 {
        return Err(Error::value("null tether handle"));
    }
    // SAFETY: a live object (this function's contract); the new reference is ours.
    Ok(unsafe { ObjectRef::from_borrowed(handle as *mut ObjectHeader) })
}

/// # Safety
/// `handle` is live and of type `T` (`index`).
unsafe fn body<'a, T>(handle: jlong, index: i32, what: &str) -> Result<&'a T> {
    let h = handle as *mut ObjectHeader;
    // SAFETY: a non-null `handle` is a live object (this function's contract): its header is
    // readable.
    if h.is_null() || unsafe { (*h).type_index } != index {
        return Err(Error::type_error(format!("not a tether {what} handle")));
    }
    // SAFETY: checked type.
    Ok(unsafe { &(*(h as *const ObjectBox<T>)).value })
}

// ---- load-time ---------------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_init(env: *mut JNIEnv, _c: jclass) {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    if let Some(why) = crate::start_refusal() {
        env.throw_new(c"java/lang/IllegalStateException", &why);
        return;
    }
    if let Err(msg) = classes::init(env) {
        env.throw_new(c"java/lang/UnsatisfiedLinkError", &format!("tether_java cannot initialise: {msg}"));
    }
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_release(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
    generation: jlong,
) {
    if handle != 0 {
        // SAFETY: the Cleaner action / close() owns the wrapper's +1 and runs once.
        unsafe { tie::release(Env::from_raw(env), handle as *mut ObjectHeader, generation as u64) }
    }
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_track(
    env: *mut JNIEnv,
    _c: jclass,
    wrapper: jobject,
    handle: jlong,
    word: jlong,
) -> jlong {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: `TetherInstance.track` passes itself (a local reference) with its live handle
    // and word; it is not closed (its `handle()` checked).
    guard(env, word, || unsafe { tie::track(env, wrapper, handle as *mut ObjectHeader, word) })
}

// ---- calls ---------------------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_call0(env: *mut JNIEnv, _c: jclass, func: jlong) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java passes the handle of a reachable TetherFunction.
    guard(env, null(), || unsafe { call_function(env, func, &[]) })
}

/// The array-free call natives. `encoded`: arguments as `(kind, bits, ref)` triples encoded by
/// `Marshal` (1-3 arguments skip the array encoding), the result through `$call`
/// ([`call_encoded_object`], or [`call_encoded_long`] for the `call*L` variants that call
/// sites whose results have been ints use). `ints`: a `call*L` whose arguments are all ints,
/// passed as bare `long`s (a third of the parameters: the JNI stub moves fewer of them, and no
/// `Long` reaches native code, so the JIT can drop the boxes).
macro_rules! call_natives {
    (encoded: $($name:ident($($k:ident $b:ident $r:ident),*) -> $ret:ty = $call:ident or $fail:expr;)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "system" fn $name(env: *mut JNIEnv, _c: jclass, func: jlong $(, $k: jlong, $b: jlong, $r: jobject)*) -> $ret {
            // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
            // SAFETY: Java encodes with `Marshal` and keeps each `ref` (a wrapper) and the
            // function reachable for the call.
            guard_call(env, $fail, || unsafe { $call(env, func, &[$(($k, $b, $r)),*]) })
        }
    )*};
    (ints: $($name:ident($($a:ident),*);)*) => {$(
        #[no_mangle]
        pub extern "system" fn $name(env: *mut JNIEnv, _c: jclass, func: jlong $(, $a: jlong)*) -> jlong {
            // SAFETY: Java keeps the function reachable; ints need nothing else alive; JNI
            // passes the calling thread's live env.
            unsafe { int_entry_call(func, [$($a),*]).unwrap_or_else(|| ints_general(env, func, [$($a),*])) }
        }
    )*};
}

call_natives! { encoded:
    Java_dev_tether_ffi_Native_call2(k0 b0 r0, k1 b1 r1) -> jobject = call_encoded_object or null();
    Java_dev_tether_ffi_Native_call3(k0 b0 r0, k1 b1 r1, k2 b2 r2) -> jobject = call_encoded_object or null();
    Java_dev_tether_ffi_Native_call0L() -> jlong = call_encoded_long or 0;
    Java_dev_tether_ffi_Native_call1L(k0 b0 r0) -> jlong = call_encoded_long or 0;
    Java_dev_tether_ffi_Native_call2L(k0 b0 r0, k1 b1 r1) -> jlong = call_encoded_long or 0;
    Java_dev_tether_ffi_Native_call3L(k0 b0 r0, k1 b1 r1, k2 b2 r2) -> jlong = call_encoded_long or 0;
}

call_natives! { ints:
    Java_dev_tether_ffi_Native_ints1(a);
    Java_dev_tether_ffi_Native_ints2(a, b);
    Java_dev_tether_ffi_Native_ints3(a, b, c);
}

/// `Native.call1`: a leaf with one plain argument takes the critical entry's marked path
/// (`critical::leaf_call1`: no local reference made, a result that is the argument returned
/// as `r0` itself); any other call the encoded one. (Java calls a leaf through `leaf1` or the
/// critical downcall first; this takes what they leave.)
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_call1(
    env: *mut JNIEnv,
    _c: jclass,
    func: jlong,
    k0: jlong,
    b0: jlong,
    r0: jobject,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java encodes with `Marshal` and keeps `r0` (the wrapper whose word is `k0`) and
    // the Function reachable for the call.
    match unsafe { crate::critical::leaf_call1(func, k0, b0) } {
        Some(Ok(Plain::Argument(_))) => r0,
        Some(outcome) => call1_outcome(env, r0, outcome),
        // SAFETY: Marshal-encoded, `r0` and the Function reachable for the call (Java's promise).
        None => guard_call(env, null(), || unsafe { call_encoded_object(env, func, &[(k0, b0, r0)]) }),
    }
}

/// `call1`'s leaf call that did not return its argument: the value as a Java object, or the
/// error thrown.
#[inline(never)]
fn call1_outcome(env: Env, r0: jobject, outcome: Result<Plain>) -> jobject {
    guard_call(env, null(), || match outcome? {
        Plain::Value(result) => to_java(env, result),
        Plain::Argument(_) => Ok(r0),
    })
}

/// `Native.leaf1`: the critical downcall's `call1` (`critical::tether_java_critical_call1`:
/// the same marked leaf call, answers and parked outcomes) through JNI, for JDKs without
/// critical downcalls: every parameter and the result a `long`, so the JNI stub handles no
/// object references.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_leaf1(
    _env: *mut JNIEnv,
    _c: jclass,
    func: jlong,
    word: jlong,
    bits: jlong,
) -> jlong {
    // SAFETY: Java keeps the Function and the wrapper whose word it passed reachable for the call.
    unsafe { crate::critical::leaf_call1_answer(func, word, bits) }
}

/// The result a `call*L` native or a critical downcall parked (see [`PENDING`]), as a Java
/// object, or its error thrown.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_takePending(env: *mut JNIEnv, _c: jclass) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || match PENDING.with(|p| p.take()) {
        Some(outcome) => to_java(env, outcome?),
        None => Err(Error::runtime("no pending call result on this thread")),
    })
}

/// The getter Function of field `name` of a type (or an ancestor), 0 if there is none. The
/// registry never frees getters, so the pointer stays valid for the process's life.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_fieldGetter<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    type_index: jint,
    name: JString<'l>,
) -> jlong {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, 0, || {
        let name = rust_string(&mut jenv, &name, "field name")?;
        Ok(field_named(info(type_index)?, &name).map_or(0, |f| f.getter as jlong))
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_call(
    env: *mut JNIEnv,
    _c: jclass,
    func: jlong,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: as in call1, for every element.
        let args = match unsafe { decode_arrays(env, kinds, bits, refs) } {
            Ok(args) => args,
            // SAFETY: as in call0.
            Err(e) => return Err(e.named(unsafe { function_at(func) }?, false)),
        };
        // SAFETY: as in call0.
        unsafe { call_function(env, func, &args) }
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_callbackFunction(
    env: *mut JNIEnv,
    _c: jclass,
    callable: jobject,
    id_hash: jint,
) -> jlong {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, 0, || callback::function_for(env, callable, id_hash).map(|p| p as jlong))
}

/// `Native.putResult(slot, kind, bits, ref)`: a callback's result for the native frame that
/// called it (`callback::put_result`). Writes errors into the slot; never throws.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_putResult(
    env: *mut JNIEnv,
    _c: jclass,
    slot: jlong,
    kind: jint,
    bits: jlong,
    r: jobject,
) {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    let Some(slot) = result_slot(slot) else { return };
    // SAFETY: only `Callbacks` calls this, with the slot address the running callback on this
    // thread handed it (or 0 for it), and keeps `r` reachable; `put_result` writes the slot
    // only at its end.
    unsafe { put_guarded(slot, || callback::put_result(env, slot, kind, bits, r)) }
}

/// The result slot `Callbacks` names: its address, or for 0 the slot of the callback this
/// thread runs through `invoke0` (none when no such callback runs: nothing to write).
fn result_slot(address: jlong) -> Option<*mut callback::ResultSlot> {
    let slot = if address == 0 { callback::current_slot() } else { address as *mut callback::ResultSlot };
    (!slot.is_null()).then_some(slot)
}

/// Run `put`, which writes a callback's outcome into `slot`; a panic in it becomes the slot's
/// error instead of unwinding into Java.
///
/// # Safety
/// `slot` is the running callback's `ResultSlot` on this thread, and `put` writes it only at
/// its end (so a panic leaves it a valid `ResultSlot`).
unsafe fn put_guarded(slot: *mut callback::ResultSlot, put: impl FnOnce()) {
    if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(put)) {
        // SAFETY: the caller's guarantee.
        unsafe { *slot = Some(Err(tether_core::error::panic_error(panic))) };
    }
}

/// `Native.putThrown(slot, t, kind, message)`: as `putResult`, for a callback that threw `t`.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_putThrown(
    env: *mut JNIEnv,
    _c: jclass,
    slot: jlong,
    t: jobject,
    kind: jstring,
    message: jstring,
) {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    let Some(slot) = result_slot(slot) else { return };
    // SAFETY: only `Callbacks` calls this, with the slot address the running callback on this
    // thread handed it (or 0 for it); `t`, `kind` and `message` are this call's live local
    // references; `put_thrown` writes the slot only at its end.
    unsafe { put_guarded(slot, || callback::put_thrown(env, slot, t, kind, message)) }
}

/// `Native.hostValue(value, typeName)`: an owned handle to a new host value holding `value`.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_hostValue(
    env: *mut JNIEnv,
    _c: jclass,
    value: jobject,
    type_name: jstring,
) -> jlong {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, 0, || crate::host_value::hold(env, value, &env.get_string(type_name)).map(|p| p as jlong))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_functionName(env: *mut JNIEnv, _c: jclass, func: jlong) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: Java passes a reachable TetherFunction's handle.
        let f = unsafe { body::<FunctionObj>(func, TypeIndex::FUNCTION, "Function") }?;
        Ok(env.new_string(f.name.view().as_str().unwrap_or("")))
    })
}

/// `Native.argumentMessage(function, index, message)`: the core's words for an argument Java
/// could not encode (`argument_message`: `testing.add() argument 'b': ...`, the parameter's
/// name when the signature has one); `index` is 0-based among the Function's own arguments.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_argumentMessage<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    func: jlong,
    index: jint,
    message: JString<'l>,
) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let message = rust_string(&mut jenv, &message, "message")?;
        // SAFETY: Java passes a reachable TetherFunction's handle.
        let f = unsafe { function_at(func) }?;
        Ok(env.new_string(&argument_message(f, index.max(0) as usize, &message)))
    })
}

/// `Native.memberArgumentMessage(typeIndex, typeKey, method, index, message)`: as
/// `argumentMessage` for argument `index` (0-based, as the caller wrote it) of a method
/// (`method`, by its registry or Java name) or, when `method` is null, the constructor of the
/// type at `typeKey` (or, when that is null, `typeIndex`). A type, method or constructor
/// that does not exist is the error the call would have raised.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_memberArgumentMessage<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    type_index: jint,
    type_key: JString<'l>,
    method: JString<'l>,
    index: jint,
    message: JString<'l>,
) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let message = rust_string(&mut jenv, &message, "message")?;
        let info = if type_key.is_null() {
            info(type_index)?
        } else {
            let key = rust_string(&mut jenv, &type_key, "type key")?;
            info(types::type_index_of(&key).ok_or_else(|| Error::key(format!("no type is registered as {key:?}")))?)?
        };
        let index = index.max(0) as usize;
        let text = if method.is_null() {
            let ctor = info.constructor().ok_or_else(|| no_constructor(info))?;
            argument_message(&ctor.0, index, &message)
        } else {
            let name = rust_string(&mut jenv, &method, "method name")?;
            let m = method_named(info, &name)?;
            argument_message(&m.func().0, index + (m.is_static == 0) as usize, &message)
        };
        Ok(env.new_string(&text))
    })
}

fn no_constructor(info: &TypeInfo) -> Error {
    Error::type_error(format!("{} has no constructor", info.key()))
}

/// The method `name` of a type or an ancestor: by its registry name, else by its Java name
/// (`language_name`: `incrementBy` for `increment_by`).
fn method_named(info: &'static TypeInfo, name: &str) -> Result<&'static MethodInfo> {
    types::find_method(info, name)
        .or_else(|| types::all_methods(info).into_iter().find(|m| language_name(m.name(), Language::Java) == name))
        .ok_or_else(|| Error::attribute(format!("{} has no method {name:?}", info.key())))
}

/// The field `name` of a type or an ancestor, by its registry name or its Java name.
fn field_named(info: &'static TypeInfo, name: &str) -> Option<&'static FieldInfo> {
    types::find_field(info, name)
        .or_else(|| types::all_fields(info).into_iter().find(|f| language_name(f.name(), Language::Java) == name))
}

/// The registry's name of `obj`'s field `name` (which may be its Java name), or `name` as
/// given when there is no such field (the registry's error then names it).
fn registry_field_name<'a>(obj: &ObjectRef, name: &'a str) -> &'a str {
    match info(obj.type_index()).ok().and_then(|i| field_named(i, name)) {
        Some(f) => f.name(),
        None => name,
    }
}

// ---- signatures ----------------------------------------------------------------------------

/// The short name of a registered name (`add` for `testing.add`).
fn short_name(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// A Function's declaration as Java writes it (`render_signature`, the receiver left out:
/// `Long add(Long a, Long b)`), or the best we know without a signature.
fn java_signature(name: &str, f: &FunctionObj) -> String {
    match f.signature() {
        Some(sig) => render_signature(name, sig, Language::Java),
        None => {
            let params = match usize::try_from(f.arity) {
                Ok(n) => (0..n).map(|i| format!("Object arg{i}")).collect::<Vec<_>>().join(", "),
                Err(_) => "Object... args".to_string(),
            };
            format!("Object {}({params})", language_name(name, Language::Java))
        }
    }
}

/// A Function's result type as Java writes it (`Object` without a signature).
fn java_result_type(f: &FunctionObj) -> String {
    f.signature().map_or_else(|| "Object".to_string(), |sig| render_type(sig.result(), Language::Java))
}

/// The parameters a caller writes (a receiver left out), each as `Object[]{String name
/// (Java's spelling), String type, Boolean hasDefault, Object default}`; unnamed ones are
/// `arg<i>`. Without a signature: `arity` untyped parameters (none when variadic).
fn parameter_records(env: Env, f: &FunctionObj) -> Result<jobjectArray> {
    let Some(sig) = f.signature() else {
        let n = usize::try_from(f.arity).unwrap_or(0);
        return records(env, n, |i| {
            Ok(vec![env.new_string(&format!("arg{i}")), env.new_string("Object"), java_bool(env, false)?, null()])
        });
    };
    let params = sig.caller_params();
    records(env, params.len(), |i| {
        let p = &params[i];
        let name = if p.name().is_empty() { format!("arg{i}") } else { language_name(p.name(), Language::Java) };
        let default = match p.default() {
            Some(d) => to_java(env, d.clone())?,
            None => null(),
        };
        Ok(vec![
            env.new_string(&name),
            env.new_string(&render_type(p.ty(), Language::Java)),
            java_bool(env, p.default().is_some())?,
            default,
        ])
    })
}

/// `Native.functionSignature(function)`: see [`java_signature`].
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_functionSignature(
    env: *mut JNIEnv,
    _c: jclass,
    func: jlong,
) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: Java passes a reachable TetherFunction's handle.
        let f = unsafe { function_at(func) }?;
        Ok(env.new_string(&java_signature(short_name(f.name_str()), f)))
    })
}

/// `Native.functionResultType(function)`: see [`java_result_type`].
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_functionResultType(
    env: *mut JNIEnv,
    _c: jclass,
    func: jlong,
) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java passes a reachable TetherFunction's handle.
    guard(env, null(), || Ok(env.new_string(&java_result_type(unsafe { function_at(func) }?))))
}

/// `Native.functionParameters(function)`: see [`parameter_records`].
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_functionParameters(
    env: *mut JNIEnv,
    _c: jclass,
    func: jlong,
) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java passes a reachable TetherFunction's handle.
    guard(env, null(), || parameter_records(env, unsafe { function_at(func) }?))
}

/// `Native.typeConstructor(typeIndex)`: the constructor's `Object[]{String signature, String
/// resultType, Object[] parameters}`, or null when the type has none.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeConstructor(
    env: *mut JNIEnv,
    _c: jclass,
    type_index: jint,
) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        let info = info(type_index)?;
        let Some(ctor) = info.constructor() else { return Ok(null()) };
        let one = records(env, 1, |_| {
            Ok(vec![
                env.new_string(&java_signature(short_name(info.key()), &ctor.0)),
                env.new_string(&java_result_type(&ctor.0)),
                parameter_records(env, &ctor.0)?,
            ])
        })?;
        let record = env.object_array_get(one, 0);
        env.delete_local_ref(one);
        Ok(record)
    })
}

// ---- globals and types ---------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_getGlobal<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    name: JString<'l>,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let name = rust_string(&mut jenv, &name, "getGlobalFunc")?;
        match function::get_global(&name) {
            Some(f) => to_java(env, Any::object(f.0.into())),
            None => Err(Error::key(format!("no global function is registered as {name:?}"))),
        }
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_listGlobals(env: *mut JNIEnv, _c: jclass) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        let names = function::list_globals();
        string_array(env, &names.iter().map(String::as_str).collect::<Vec<_>>())
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeKey(env: *mut JNIEnv, _c: jclass, type_index: jint) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || Ok(env.new_string(&types::kind_name(type_index))))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeKeys(env: *mut JNIEnv, _c: jclass) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || string_array(env, &types::list_types().iter().map(|(_, k)| *k).collect::<Vec<_>>()))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeIndexOf<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    key: JString<'l>,
) -> jint {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, -1, || {
        let key = rust_string(&mut jenv, &key, "type key")?;
        Ok(types::type_index_of(&key).unwrap_or(-1))
    })
}

/// Every field of the type, inherited ones first (`types::all_fields`), each as
/// `Object[]{String name, Boolean settable, String typeHint, String doc, String javaName,
/// String type}` (the last two as Java spells them: `language_name`, `render_type`).
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeFields(
    env: *mut JNIEnv,
    _c: jclass,
    type_index: jint,
) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        let fields = types::all_fields(info(type_index)?);
        records(env, fields.len(), |i| {
            let f = fields[i];
            Ok(vec![
                env.new_string(f.name()),
                java_bool(env, f.setter().is_some())?,
                env.new_string(f.type_hint()),
                env.new_string(f.doc()),
                env.new_string(&language_name(f.name(), Language::Java)),
                env.new_string(&render_type(f.ty(), Language::Java)),
            ])
        })
    })
}

/// Every method of the type, inherited ones first (`types::all_methods`), each as
/// `Object[]{String name, Boolean isStatic, String doc, String javaName, String signature,
/// String resultType, Object[] parameters}` (see [`parameter_records`]; the receiver left out).
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeMethods(
    env: *mut JNIEnv,
    _c: jclass,
    type_index: jint,
) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        let methods = types::all_methods(info(type_index)?);
        records(env, methods.len(), |i| {
            let m = methods[i];
            let func = m.func();
            Ok(vec![
                env.new_string(m.name()),
                java_bool(env, m.is_static != 0)?,
                env.new_string(m.doc()),
                env.new_string(&language_name(m.name(), Language::Java)),
                env.new_string(&java_signature(m.name(), &func.0)),
                env.new_string(&java_result_type(&func.0)),
                parameter_records(env, &func.0)?,
            ])
        })
    })
}

/// A `Boolean` (a local reference).
fn java_bool(env: Env, b: bool) -> Result<jobject> {
    let c = classes::get();
    // SAFETY: `Boolean.valueOf(Z)` was resolved on Boolean with this signature at init.
    let v = unsafe { env.call_static_object(c.boolean, c.boolean_value_of, &[jni_sys::jvalue { z: b }]) };
    if v.is_null() {
        env.clear_exception();
        return Err(Error::runtime("Boolean.valueOf failed"));
    }
    Ok(v)
}

/// An `Object[]` of `n` records, record `i` an `Object[]` of the local references `make(i)`
/// returns (each deleted once stored).
fn records(env: Env, n: usize, make: impl Fn(usize) -> Result<Vec<jobject>>) -> Result<jobjectArray> {
    let c = classes::get();
    let out = env.new_object_array(n as i32, c.object);
    if out.is_null() {
        env.clear_exception();
        return Err(Error::runtime("out of memory building a reflection array"));
    }
    for i in 0..n {
        let items = make(i)?;
        let record = env.new_object_array(items.len() as i32, c.object);
        if record.is_null() {
            env.clear_exception();
            return Err(Error::runtime("out of memory building a reflection array"));
        }
        for (k, &item) in items.iter().enumerate() {
            env.object_array_set(record, k as i32, item);
            env.delete_local_ref(item);
        }
        env.object_array_set(out, i as i32, record);
        env.delete_local_ref(record);
    }
    Ok(out)
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeDoc(env: *mut JNIEnv, _c: jclass, type_index: jint) -> jstring {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || Ok(env.new_string(info(type_index)?.doc())))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_typeHasConstructor(
    env: *mut JNIEnv,
    _c: jclass,
    type_index: jint,
) -> jboolean {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, false, || Ok(info(type_index)?.constructor().is_some()))
}

/// Construct an object of the type registered as `key` with the arguments Java encoded in
/// `kinds`, `bits` and `refs` (the general path of `Native.construct` and `constructInto`):
/// the key as text, and what the constructor returned.
///
/// # Safety
/// The three arrays are local references the calling native method was given, encoded by
/// Java's `Marshal`.
unsafe fn construct_by_key(
    env: Env,
    jenv: &mut EnvUnowned<'_>,
    key: &JString<'_>,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
) -> Result<(String, Any)> {
    // SAFETY: Java encodes with `Marshal` (caller); decode first so owned handles are consumed.
    let args = unsafe { decode_arrays(env, kinds, bits, refs) };
    let key = rust_string(jenv, key, "type key")?;
    let index = types::type_index_of(&key).ok_or_else(|| Error::key(format!("no type is registered as {key:?}")))?;
    let info = info(index)?;
    let ctor = info.constructor().ok_or_else(|| no_constructor(info))?;
    let args = args.map_err(|e| e.named(&ctor.0, false))?;
    let views: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
    let mut defaults = Vec::new();
    let made = ctor.call(&with_defaults(&ctor.0, &views, &mut defaults)?)?;
    Ok((key, made))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_construct<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    key: JString<'l>,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        // SAFETY: the arrays come straight from the native method's caller.
        let (_, made) = unsafe { construct_by_key(env, &mut jenv, &key, kinds, bits, refs) }?;
        to_java(env, made)
    })
}

/// `Native.constructorHandle(typeIndex)`: the type's constructor Function as a handle (0 when
/// it has none). The registry never releases constructors (a leaked reference), so the handle
/// stays valid for the process's life, as a getter's does.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_constructorHandle(
    env: *mut JNIEnv,
    _c: jclass,
    type_index: jint,
) -> jlong {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, 0, || Ok(info(type_index)?.constructor().map_or(0, |ctor| ctor.as_object_ptr() as jlong)))
}

/// A `TetherType.construct` with 0-3 arguments Java encoded with `Marshal.fastKind`: the
/// constructor at `ctor` (a [`Java_dev_tether_ffi_Native_constructorHandle`]) called as
/// [`call_encoded`] calls a Function, and a new object of the type `type_index` tied to
/// `wrapper` (a `TetherInstance` Java made before the call, not tied yet) with
/// no upcall (`tie::to_wrapper_preset`). A constructor that returns an argument, an object
/// with a wrapper, an object of another type or a plain value returns as any call does.
///
/// # Safety
/// As [`call_encoded`]; `ctor` is a constructor handle; `wrapper` is a live local reference
/// of the calling native method.
#[inline(always)]
unsafe fn construct_encoded<const N: usize>(
    env: Env,
    ctor: jlong,
    type_index: jint,
    wrapper: jobject,
    args: &[(jlong, jlong, jobject); N],
) -> Result<jobject> {
    let mut result = Any::none();
    // SAFETY: this function's contract (Java passes no callable here: `Marshal.fastKind`).
    if let Some(argument) = unsafe { call_encoded(env, ctor, args, false, &mut result, None) }? {
        return Ok(argument);
    }
    if result.type_index() == type_index && type_index >= TypeIndex::OBJECT {
        let obj = result.into_object().expect("an object kind");
        return tie::to_wrapper_preset(env, obj, wrapper);
    }
    to_java(env, result)
}

macro_rules! construct_natives {
    ($($name:ident($($k:ident $b:ident $r:ident),*);)*) => {$(
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub extern "system" fn $name(
            env: *mut JNIEnv,
            _c: jclass,
            ctor: jlong,
            type_index: jint,
            wrapper: jobject
            $(, $k: jlong, $b: jlong, $r: jobject)*
        ) -> jobject {
            // SAFETY: JNI passes the calling thread's live env, valid for this native call.
            let env = unsafe { Env::from_raw(env) };
            // SAFETY: Java passes its cached constructor handle, encodes with `Marshal` and
            // keeps each `ref` reachable; `wrapper` is this call's argument.
            guard_call(env, null(), || unsafe {
                construct_encoded(env, ctor, type_index, wrapper, &[$(($k, $b, $r)),*])
            })
        }
    )*};
}

construct_natives! {
    Java_dev_tether_ffi_Native_construct0();
    Java_dev_tether_ffi_Native_construct1(k0 b0 r0);
    Java_dev_tether_ffi_Native_construct2(k0 b0 r0, k1 b1 r1);
    Java_dev_tether_ffi_Native_construct3(k0 b0 r0, k1 b1 r1, k2 b2 r2);
}

/// `Native.constructInto(wrapper, typeKey, kinds, bits, refs)`: construct like `construct`, and
/// make `wrapper` (an instance of the class registered for the type, whose constructor is
/// running) the new object's canonical wrapper. Returns the object's wrapper: `wrapper`, or
/// another one if the constructor returned an object Java holds already.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_constructInto<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    wrapper: jobject,
    key: JString<'l>,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        // SAFETY: the arrays come straight from the native method's caller.
        let (key, made) = unsafe { construct_by_key(env, &mut jenv, &key, kinds, bits, refs) }?;
        match made.into_object() {
            Some(obj) => tie::to_wrapper_adopting(env, obj, wrapper),
            None => Err(Error::type_error(format!("the constructor of {key} returned no object"))),
        }
    })
}

/// `Native.checkBindings(moduleHandle, manifest)`: compare the manifest generated bindings
/// recorded (`item\thash` lines) with the module's (`tether_core::manifest::check_manifest`);
/// a ValueError naming every added, removed or changed item when they differ.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_checkBindings<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
    manifest: JString<'l>,
) {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, (), || {
        let text = rust_string(&mut jenv, &manifest, "manifest")?;
        // SAFETY: Java passes a reachable TetherModule's handle.
        let module = unsafe { body::<ModuleObj>(handle, TypeIndex::MODULE, "Module") }?;
        let recorded = tether_core::manifest::parse_recorded(&text);
        tether_core::manifest::check_manifest(module, &recorded).map_err(Error::value)
    })
}

// ---- fields and methods ----------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_getField<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
    _keep: jobject,
    name: JString<'l>,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let name = rust_string(&mut jenv, &name, "field name")?;
        // SAFETY: `_keep` (the wrapper) keeps `handle` alive for the call.
        let obj = unsafe { borrowed(handle) }?;
        to_java(env, types::get_field(&obj, registry_field_name(&obj, &name))?)
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_setField<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
    _keep: jobject,
    name: JString<'l>,
    kind: jint,
    bits: jlong,
    r: jobject,
) {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, (), || {
        let mut hold = Any::none();
        // SAFETY: Java encodes with `Marshal` and keeps `r` reachable.
        let value = unsafe { decode(env, kind, bits, r, &mut hold) }?;
        let name = rust_string(&mut jenv, &name, "field name")?;
        // SAFETY: `_keep` keeps `handle` alive.
        let obj = unsafe { borrowed(handle) }?;
        types::set_field(&obj, registry_field_name(&obj, &name), value)
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_callMethod<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
    _keep: jobject,
    name: JString<'l>,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        // SAFETY: as in `call`.
        let args = unsafe { decode_arrays(env, kinds, bits, refs) };
        let name = rust_string(&mut jenv, &name, "method name")?;
        // SAFETY: `_keep` keeps `handle` alive.
        let obj = unsafe { borrowed(handle) }?;
        let method = method_named(info(obj.type_index())?, &name)?;
        let func = method.func();
        let args = args.map_err(|e| e.named(&func.0, method.is_static == 0))?;
        let mut views: Vec<AnyView<'_>> = Vec::with_capacity(args.len() + 1);
        if method.is_static == 0 {
            views.push(AnyView::object(&obj));
        }
        views.extend(args.iter().map(Any::view));
        let mut defaults = Vec::new();
        to_java(env, func.call(&with_defaults(&func.0, &views, &mut defaults)?)?)
    })
}

/// `Native.methodFunction(typeIndex, name)`: the Function of method `name` (its registry or
/// Java name, found as `callMethod` finds it) of a type or an ancestor, as its TetherFunction,
/// for callers that resolve a method once and call its Function directly (generated bindings).
/// A missing method is the AttributeError `callMethod` raises.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_methodFunction<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    type_index: jint,
    name: JString<'l>,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let name = rust_string(&mut jenv, &name, "method name")?;
        let method = method_named(info(type_index)?, &name)?;
        to_java(env, Any::object(method.func().0.into()))
    })
}

// ---- containers ------------------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_arrayLen(env: *mut JNIEnv, _c: jclass, handle: jlong) -> jint {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java passes a reachable TetherList's handle.
    guard(env, 0, || Ok(unsafe { body::<ArrayObj>(handle, TypeIndex::ARRAY, "Array") }?.len() as jint))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_arrayGet(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
    i: jint,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: as in arrayLen.
        let array = unsafe { body::<ArrayObj>(handle, TypeIndex::ARRAY, "Array") }?;
        to_java(env, array.get(i as i64)?.clone())
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_mapLen(env: *mut JNIEnv, _c: jclass, handle: jlong) -> jint {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java passes a reachable TetherMap's handle.
    guard(env, 0, || Ok(unsafe { body::<MapObj>(handle, TypeIndex::MAP, "Map") }?.len() as jint))
}

fn map_entry(handle: jlong, i: jint) -> Result<(&'static Any, &'static Any)> {
    // SAFETY: as in mapLen; the 'static borrow ends before the native method returns.
    let map = unsafe { body::<MapObj>(handle, TypeIndex::MAP, "Map") }?;
    map.entries()
        .nth(i.max(0) as usize)
        .ok_or_else(|| Error::index(format!("map entry {i} out of range for length {}", map.len())))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_mapKeyAt(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
    i: jint,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || to_java(env, map_entry(handle, i)?.0.clone()))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_mapValueAt(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
    i: jint,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || to_java(env, map_entry(handle, i)?.1.clone()))
}

/// The value under key `(kind, bits, r)`, or `missing` when there is none.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_mapGet(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
    kind: jint,
    bits: jlong,
    r: jobject,
    missing: jobject,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: as in mapLen.
        let map = unsafe { body::<MapObj>(handle, TypeIndex::MAP, "Map") }?;
        let mut hold = Any::none();
        // SAFETY: Java encodes with `Marshal` and keeps `r` reachable.
        let key = unsafe { decode(env, kind, bits, r, &mut hold) }?;
        match map.get(&key) {
            Some(v) => to_java(env, v.clone()),
            None => Ok(env.new_local_ref(missing)),
        }
    })
}

// ---- modules ---------------------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_loadModule<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    path: JString<'l>,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let path = rust_string(&mut jenv, &path, "module path")?;
        to_java(env, plugin::module_any(&plugin::load_module(&path)?))
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_moduleFunction<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    handle: jlong,
    name: JString<'l>,
) -> jobject {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, null(), || {
        let name = rust_string(&mut jenv, &name, "function name")?;
        // SAFETY: Java passes a reachable TetherModule's handle.
        let module = unsafe { body::<ModuleObj>(handle, TypeIndex::MODULE, "Module") }?;
        let f = module
            .function(&name)
            .ok_or_else(|| Error::key(format!("module {} has no function {name:?}", module.path())))?;
        to_java(env, Any::object(f.0.clone().into()))
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_moduleFunctionNames(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: as in moduleFunction.
        let module = unsafe { body::<ModuleObj>(handle, TypeIndex::MODULE, "Module") }?;
        string_array(env, &module.functions().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>())
    })
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_moduleTypeKeys(
    env: *mut JNIEnv,
    _c: jclass,
    handle: jlong,
) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    guard(env, null(), || {
        // SAFETY: as in moduleFunction.
        let module = unsafe { body::<ModuleObj>(handle, TypeIndex::MODULE, "Module") }?;
        let keys: Vec<&str> = module.types().iter().filter_map(|&i| types::type_key(i)).collect();
        string_array(env, &keys)
    })
}

// ---- diagnostics -----------------------------------------------------------------------------

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_liveObjects(_env: *mut JNIEnv, _c: jclass) -> jlong {
    tether_core::alloc::live_objects()
}

/// `Native.constant(name)`: a constant shared with Java, from its one source (the core's
/// shared table, this crate's argument kinds and pending-result marker).
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_constant<'l>(
    mut jenv: EnvUnowned<'l>,
    _c: JClass<'l>,
    name: JString<'l>,
) -> jlong {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(jenv.as_raw()) };
    guard(env, 0, || {
        let name = rust_string(&mut jenv, &name, "constant name")?;
        let java = [
            ("PENDING_RESULT", PENDING_RESULT),
            ("ARGUMENT_RESULT", crate::critical::ARGUMENT_RESULT),
            ("FALLBACK_RESULT", crate::critical::FALLBACK_RESULT),
            // A wrapper's word (`NativeRef`'s layout).
            ("WORD_TYPE_SHIFT", i64::from(tie::WORD_TYPE_SHIFT)),
            ("WORD_TYPE_MASK", tie::WORD_TYPE_MASK),
            ("WORD_SPARES", tie::WORD_SPARES),
            ("WORD_UNTRACKED", tie::WORD_UNTRACKED),
            ("WORD_GENERATION_SHIFT", i64::from(tie::WORD_GENERATION_SHIFT)),
        ];
        tether_core::constants::SHARED
            .iter()
            .chain(convert::KINDS)
            .chain(java.iter())
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
            .ok_or_else(|| Error::key(format!("no constant is shared with Java as {name:?}")))
    })
}

/// `Native.errorKinds()`: every error kind the core raises (each maps to an exception class).
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_errorKinds(env: *mut JNIEnv, _c: jclass) -> jobjectArray {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    let names: Vec<&str> = tether_core::constants::ERROR_KINDS.iter().map(|&(name, _)| name).collect();
    guard(env, null(), || string_array(env, &names))
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_sideTableSize(_env: *mut JNIEnv, _c: jclass) -> jint {
    tie::side_entries() as jint
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_sparesHeld(_env: *mut JNIEnv, _c: jclass) -> jint {
    tie::spares_held() as jint
}

/// `Native.criticalCall1Entry()`: the address of `critical::tether_java_critical_call1`.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_criticalCall1Entry(_env: *mut JNIEnv, _c: jclass) -> jlong {
    crate::critical::tether_java_critical_call1 as *const () as usize as jlong
}

/// `Native.criticalIntsEntry(n)`: the address of `critical::tether_java_critical_ints<n>`
/// (1-3), or 0.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_criticalIntsEntry(_env: *mut JNIEnv, _c: jclass, n: jint) -> jlong {
    (match n {
        1 => crate::critical::tether_java_critical_ints1 as *const (),
        2 => crate::critical::tether_java_critical_ints2 as *const (),
        3 => crate::critical::tether_java_critical_ints3 as *const (),
        _ => std::ptr::null(),
    }) as usize as jlong
}

/// `Native.functionFlags(fn)`: the `FUNC_*` flags of the Function at `fn`.
#[no_mangle]
pub extern "system" fn Java_dev_tether_ffi_Native_functionFlags(env: *mut JNIEnv, _c: jclass, func: jlong) -> jint {
    // SAFETY: JNI passes the calling thread's live env, valid for this native call.
    let env = unsafe { Env::from_raw(env) };
    // SAFETY: Java passes the handle of a reachable TetherFunction.
    guard(env, 0, || Ok(unsafe { function_at(func) }?.flags as jint))
}
