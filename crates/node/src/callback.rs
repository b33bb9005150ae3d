//! JS functions as native Functions, callable from any thread.
//!
//! A JS function `f` passed to native code becomes a Function whose data ([`JsCallable`])
//! names `f`. `f` is wrapped with a [`Link`] holding a *weak* native reference to its
//! registered Function, so passing `f` again yields the same Function while it lives, with no
//! reference cycle; and returning that Function to JS gives back `f` itself. index.js keeps
//! each Link's handle beside `f` (`fnHandles`), so a shim passes it in the call frame and the
//! call finds the Link without a `napi_unwrap` (a V8 private-symbol lookup).
//!
//! A JS function passed to a synchronous call through its Link is *lent* a Function for the
//! call instead (core's `LentFunctions`, one per env: the env's JS thread is the lock): a
//! reused shell that names `f` by the call's own handle, so `call(cb)` makes no reference,
//! registers nothing and allocates nothing. A lent Function still held when the call returns
//! has escaped: it takes a strong reference to `f` then and becomes `f`'s registered Function.
//!
//! Called on the env's JS thread, the Function calls `f` directly (through index.js's
//! `invokeCallable`, which also hands a wrapper result's handle back). Called on any other
//! thread, it queues the call on the env's threadsafe function and blocks until `f` returns,
//! unless the JS thread is itself blocked inside a synchronous native call: that would
//! deadlock, so the call fails with a clear error (use `fn.callAsync`).

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Condvar, Mutex};

use napi::sys;
use tether_core::arc::{ObjectBox, WeakObjectArc};
use tether_core::boundary::Lent;
use tether_core::error::catch_panic;
use tether_core::function::FunctionObj;
use tether_core::object::ObjectHeader;
use tether_core::{Any, AnyView, Error, Function, ObjectArc, ObjectRef};

use crate::call::RESULT_IN_FRAME;
use crate::convert::{any_to_js, js_to_any};
use crate::env::{CallbackResult, EnvState};
use crate::errors::fail_to_error;
use crate::raw::{self, napi_call, JsResult, Ref, Value};
use crate::tie::{wrapper_of_handle, HANDLE_ADDRESS, HANDLE_EXPONENT};

/// First word of the wrap payload on a JS function that has a native Function.
pub const LINK_MAGIC: u64 = 0x7465_7468_6572_4c4b; // "tetherLK"

/// Wrapped onto a JS function: a weak reference to its registered Function. Its address is
/// the function's key among the env's lent Functions.
#[repr(C)]
pub struct Link {
    magic: u64,
    func: RefCell<Option<WeakObjectArc<FunctionObj>>>,
}

/// The sign bit: a Link's handle is a wrapper handle's form (`tie::handle`) made negative.
const LINK_SIGN: u64 = 1 << 63;

/// The handle index.js keeps for `link` (see [`link_of_handle`]).
fn link_handle(link: &Link) -> f64 {
    f64::from_bits(LINK_SIGN | HANDLE_EXPONENT | link as *const Link as u64)
}

/// The Link a handle names, or `None` for a number that is no Link handle.
///
/// # Safety
/// A `handle` of the right form was made by [`link_handle`] and read from index.js's
/// `fnHandles` beside a function the running call's caller keeps alive, so its Link (freed
/// by that function's finalizer) is alive.
#[inline]
pub unsafe fn link_of_handle<'a>(handle: f64) -> Option<&'a Link> {
    let bits = handle.to_bits();
    let address = (bits & HANDLE_ADDRESS) as usize;
    // SAFETY: the caller's guarantee.
    (bits & !HANDLE_ADDRESS == LINK_SIGN | HANDLE_EXPONENT && address != 0)
        .then(|| unsafe { &*(address as *const Link) })
}

/// The data of every Function made from a JS function (made with it, freed by its drop hook).
pub struct JsCallable {
    /// The env of the JS function (read on any thread, to queue a call; never changes).
    state: Arc<EnvState>,
    /// A strong reference to the JS function, for a Function that owns one: a registered
    /// Function, and a lent one once it escaped its call. JS thread only (and the drop hook).
    held: Cell<Option<Ref>>,
    /// The JS function of the call this shell is lent to: a handle of that call, which stays
    /// open while the Function is lent. Null when not lent. JS thread only.
    lent: Cell<Value>,
}

impl JsCallable {
    /// The JS function, as a handle of the current scope (on the env's JS thread).
    fn value(&self) -> JsResult<Value> {
        let lent = self.lent.get();
        if !lent.is_null() {
            return Ok(lent);
        }
        match self.held.get() {
            Some(r) => raw::reference_value(self.state.env, r),
            None => Err(Error::runtime("this JS callback was lent to a call that is over").into()),
        }
    }
}

unsafe extern "C" fn drop_js_callable(data: *mut c_void) {
    // SAFETY: the box leaked in `new_function`, dropped once by its Function.
    let callable = unsafe { Box::from_raw(data as *mut JsCallable) };
    if let Some(r) = callable.held.get() {
        callable.state.delete_reference_anywhere(r);
    }
}

unsafe extern "C" fn finalize_link(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the Link box wrapped onto a JS function, finalized once.
    drop(unsafe { Box::from_raw(data as *mut Link) });
}

/// The callable data of `obj` if it is a Function made from a JS function.
fn js_callable_of(obj: *mut ObjectHeader) -> Option<&'static JsCallable> {
    // SAFETY: `obj` is a live Function (callers checked the type index).
    let func = unsafe { &(*(obj as *const ObjectBox<FunctionObj>)).value };
    (func.safe_call as *const () == js_callback_call as *const ())
        // SAFETY: our safe_call implies our data; it lives as long as the Function.
        .then(|| unsafe { &*(func.data as *const JsCallable) })
}

/// The data of a Function made by [`new_function`] that nothing else can reach.
fn callable_in(body: &mut FunctionObj) -> &JsCallable {
    debug_assert!(body.safe_call as *const () == js_callback_call as *const ());
    // SAFETY: every shell of an env's lent Functions is made by `new_function`.
    unsafe { &*(body.data as *const JsCallable) }
}

/// The JS function behind a Function made in this env from a JS function.
pub fn js_function_of(state: &EnvState, obj: &ObjectRef) -> JsResult<Option<Value>> {
    match js_callable_of(obj.as_ptr()) {
        Some(cb) if ptr::eq(Arc::as_ptr(&cb.state), state) => cb.value().map(Some),
        _ => Ok(None),
    }
}

/// Native name of every Function made from a JS function (at most 7 bytes: stored inline).
const CALLBACK_NAME: &str = "js.call";

/// A Function of this env for a JS function: holding `held`, or none yet (a lent shell).
/// When it cannot be made, `held` is deleted.
fn new_function(state: &EnvState, held: Option<Ref>) -> Result<Function, Error> {
    let callable =
        JsCallable { state: crate::tie::arc_of(state), held: Cell::new(held), lent: Cell::new(ptr::null_mut()) };
    let data = Box::into_raw(Box::new(callable)) as *mut c_void;
    // SAFETY: `js_callback_call` reads exactly this data; `drop_js_callable` frees it, and
    // both may run on any thread. The native name is never shown (the Function comes back to
    // JS as the function itself), so it is a short inline string: no allocation.
    let made =
        unsafe { Function::try_from_raw_parts(js_callback_call, data, Some(drop_js_callable), CALLBACK_NAME, -1, 0) };
    made.inspect_err(|_| {
        // SAFETY: no Function took the box: it is still ours (and `held` with it).
        unsafe { drop_js_callable(data) };
    })
}

/// A shell for the env's lent Functions. With no memory for it, the allocation failure
/// unwinds as core's allocator raises it, so the lend's `catch_out_of_memory` makes it the
/// call's MemoryError (a panic of its own would have been a RustPanic).
pub fn new_shell(state: &EnvState) -> Function {
    match new_function(state, None) {
        Ok(f) => f,
        // `new_function` fails only when the Function cannot be allocated.
        Err(_) => tether_core::alloc::raise_out_of_memory(std::mem::size_of::<ObjectBox<FunctionObj>>(), 8),
    }
}

/// The Link wrapped onto JS function `f`, if it has one.
fn link_of(state: &EnvState, f: Value) -> Option<&'static Link> {
    let mut data: *mut c_void = ptr::null_mut();
    // SAFETY: `f` is a function handle of this call; unwrapped payloads start with a magic.
    unsafe {
        let ok = sys::napi_unwrap(state.env.raw(), f, &mut data) == sys::Status::napi_ok && !data.is_null();
        (ok && *(data as *const u64) == LINK_MAGIC).then(|| &*(data as *const Link))
    }
}

/// `f`'s Function while it lives: registered, or lent to a running call. (Inline: a call's
/// one callable asks it every time.)
#[inline(always)]
fn live_function(state: &EnvState, link: &Link) -> Option<Function> {
    // SAFETY: the Link is written on the env's JS thread alone (this one), and not while this
    // borrow lives (an upgrade runs no code of ours).
    if let Some(func) = unsafe { link.func.try_borrow_unguarded() }.ok().and_then(|f| f.as_ref()?.upgrade()) {
        return Some(Function(func));
    }
    // SAFETY: on the env's JS thread, which orders every use of its lent Functions.
    unsafe { state.lent.in_flight(link as *const Link as usize) }
}

/// The native Function for JS function `f` (the same one while it lives).
pub fn function_from_js(state: &EnvState, f: Value) -> JsResult<Any> {
    let link = link_of(state, f);
    registered(state, f, link).map(|func| Any::object(func.0.into()))
}

/// `f`'s Function: its live one, else a new one holding `f`, registered in `f`'s Link (made
/// and wrapped onto `f` when it has none).
fn registered(state: &EnvState, f: Value, link: Option<&Link>) -> JsResult<Function> {
    if let Some(func) = link.and_then(|l| live_function(state, l)) {
        return Ok(func);
    }
    // A Function that cannot be made deletes the reference with its data.
    let func = new_function(state, Some(state.hold_reference(f)?))?;
    register(state, f, link, &func)?;
    Ok(func)
}

/// Record `func` as `f`'s registered Function in `f`'s Link, making the Link the first time.
fn register(state: &EnvState, f: Value, link: Option<&Link>, func: &Function) -> JsResult<()> {
    let weak = ObjectArc::downgrade(&func.0);
    match link {
        Some(l) => *l.func.borrow_mut() = Some(weak),
        None => {
            let boxed = Box::into_raw(Box::new(Link { magic: LINK_MAGIC, func: RefCell::new(Some(weak)) }));
            // SAFETY: the finalizer frees the box; if `f` is already wrapped by someone
            // else the wrap fails and we free it here (identity then is per call only).
            let status = unsafe {
                sys::napi_wrap(
                    state.env.raw(),
                    f,
                    boxed as *mut c_void,
                    Some(finalize_link),
                    ptr::null_mut(),
                    ptr::null_mut(),
                )
            };
            if status != sys::Status::napi_ok {
                // SAFETY: not wrapped, still ours.
                drop(unsafe { Box::from_raw(boxed) });
                return Ok(());
            }
            // index.js keeps the Link's handle beside `f`, for the shims to pass.
            // SAFETY: the box is wrapped onto `f` now and lives as long as `f`.
            let handle = raw::number(state.env, link_handle(unsafe { &*boxed }))?;
            let remember = state.refs.borrow().remember_callable.expect("set by _setup");
            let remember = raw::reference_value(state.env, remember)?;
            raw::call(state.env, raw::undefined(state.env)?, remember, &[f, handle])?;
        }
    }
    Ok(())
}

/// A Function lent to one call, and the JS function it names.
pub struct LentCallable {
    lent: Option<Lent>,
    link: *const Link,
    f: Value,
}

impl LentCallable {
    pub fn function(&self) -> &Function {
        self.lent.as_ref().expect("until given back").function()
    }

    /// The call is over: the shell goes back, or, when native code kept it, takes a strong
    /// reference to the JS function and becomes its registered Function.
    #[inline(always)]
    pub fn give_back(mut self, state: &EnvState) {
        self.finish(state);
        // Given back: nothing is left for `drop`, an out-of-line call.
        std::mem::forget(self);
    }

    #[inline(always)]
    fn finish(&mut self, state: &EnvState) {
        let Some(lent) = self.lent.take() else { return };
        // SAFETY: on the env's JS thread (every call is), which orders its lent Functions;
        // `lent` came from `lend_with` of the same env.
        let kept = unsafe { state.lent.reclaim_with(lent, |body| callable_in(body).lent.set(ptr::null_mut())) };
        if let Err(kept) = kept {
            self.register_kept(state, kept);
        }
    }

    /// A lent shell that native code kept takes a strong reference to the JS function and
    /// becomes its registered Function; a new spare is made.
    #[cold]
    #[inline(never)]
    fn register_kept(&self, state: &EnvState, kept: Function) {
        let callable = js_callable_of(kept.as_object_ptr()).expect("a shell");
        // The call's handle of the JS function is still open: the reference is taken from it.
        // With no reference (the engine refused one), later calls fail with a clear error.
        if let Ok(r) = state.hold_reference(self.f) {
            callable.held.set(Some(r));
        }
        callable.lent.set(ptr::null_mut());
        // SAFETY: the Link is wrapped onto `f`, an argument of the call, so alive.
        *unsafe { &*self.link }.func.borrow_mut() = Some(ObjectArc::downgrade(&kept.0));
        // A new spare; when there is no memory for it, the next lend makes one.
        // SAFETY: on the env's JS thread; the shell is unique, not lent.
        let _ = tether_core::error::catch_out_of_memory(|| unsafe { state.lent.prepare(|| new_shell(state)) });
    }
}

impl Drop for LentCallable {
    /// A call that unwound gives its Function back too (never left in the in-flight list).
    fn drop(&mut self) {
        if self.lent.is_some() {
            // SAFETY: the Link's shell names its env.
            let state = js_callable_of(self.function().as_object_ptr()).map(|c| c.state.clone());
            if let Some(state) = state {
                self.finish(&state);
            }
        }
    }
}

/// The Function for JS function `f`, which a shim passed to a synchronous call with `link`:
/// its live Function, or a new registered one (`Some`); or, when the call has none lent yet
/// (`lent` is empty) and `f` has no live Function, one lent to the call, written into `lent`
/// (`None`; give it back with [`LentCallable::give_back`] once the call's result is
/// converted). Written in place, not returned: a returned `LentCallable` was copied through
/// the stack in 16-byte moves that straddled the 8-byte stores which made it, each a failed
/// store forwarding (a stall of a dozen cycles; 8% of W7 under perf).
#[inline(always)]
pub fn for_call(
    state: &EnvState,
    f: Value,
    link: &'static Link,
    lent: &mut Option<LentCallable>,
) -> JsResult<Option<Function>> {
    if lent.is_some() {
        return registered(state, f, Some(link)).map(Some);
    }
    if let Some(func) = live_function(state, link) {
        return Ok(Some(func));
    }
    let key = link as *const Link as usize;
    // SAFETY: on the env's JS thread; `f` is an argument of the running call, so its handle
    // stays valid until the call gives the Function back (after converting its result).
    let shell = unsafe { state.lent.try_lend_with(key, |body| callable_in(body).lent.set(f), || new_shell(state)) }
        .map_err(crate::raw::Fail::Native)?;
    // `lent` is None (tested above): replaced without a drop of what it held, an out-of-line
    // call that finds nothing.
    std::mem::forget(lent.replace(LentCallable { lent: Some(shell), link, f }));
    Ok(None)
}

/// Make [`js_callback_call`] a catching frame (once per process; `init_env` calls it), so its
/// body runs under `catch_panic_registered`, with no per-call mark.
pub fn register_safe_call() {
    tether_core::error::register_catching_safe_call(js_callback_call);
}

/// The `safe_call` of Functions made from JS functions (a registered catching frame).
unsafe extern "C" fn js_callback_call(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    let outcome = tether_core::error::catch_panic_registered(|| {
        // SAFETY: this is the `safe_call` of Functions made by `new_function` alone, whose data
        // is their `JsCallable`; the caller keeps the Function, and so its data, alive.
        let cb = unsafe { &*((*(handle as *const ObjectBox<FunctionObj>)).value.data as *const JsCallable) };
        let args = if n <= 0 {
            &[][..]
        } else {
            // SAFETY: the caller passes `n` live cells.
            unsafe { std::slice::from_raw_parts(args, n as usize) }
        };
        let value = if cb.state.on_js_thread() {
            invoke_on_js_thread(&cb.state, cb, args)
        } else {
            // SAFETY: the caller keeps the Function alive during the call; we take our own +1.
            let func = unsafe { ObjectRef::from_borrowed(handle) };
            call_from_other_thread(&cb.state, func, args)
        }?;
        // SAFETY: the caller's result cell holds None and is ours to fill (in this frame:
        // `call_status`).
        unsafe { result.write(value) };
        Ok(())
    });
    tether_core::function::call_status(outcome)
}

/// Call the JS function on its own thread, through index.js's `invokeCallable`. Inlined into
/// the catch frame's closure so its result is written in place: returned from a call, the
/// 24-byte result was copied in 16-byte moves straddling the 8-byte stores that made it (a
/// failed store forwarding, 3% of W7 under perf).
#[inline(always)]
fn invoke_on_js_thread(state: &EnvState, cb: &JsCallable, args: &[AnyView<'_>]) -> Result<Any, Error> {
    // The JS thread tears the env down itself, so it reads the flag without the lock.
    if !state.alive.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(shut_down());
    }
    let env = state.env;
    let mut scope = ptr::null_mut();
    let budget = state.unscoped_callbacks.get();
    if budget > 0 {
        state.unscoped_callbacks.set(budget - 1);
    } else {
        // SAFETY: on the env's JS thread; closed below.
        unsafe { sys::napi_open_handle_scope(env.raw(), &mut scope) };
    }
    let outcome = call_through_invoke(state, cb, args, scope.is_null());
    let outcome = outcome.map_err(|fail| fail_to_error(state, fail));
    if !scope.is_null() {
        // SAFETY: the scope opened above.
        unsafe { sys::napi_close_handle_scope(env.raw(), scope) };
    }
    outcome
}

/// The body of [`invoke_on_js_thread`]: `invokeCallable(f, ...args)`, and its result as a
/// native value. `unscoped`: the callback runs in the scope of the native call that called it.
#[inline(always)]
fn call_through_invoke(state: &EnvState, cb: &JsCallable, args: &[AnyView<'_>], unscoped: bool) -> JsResult<Any> {
    let env = state.env;
    let f = cb.value()?;
    let invoke = match state.invoke_in_call.get() {
        invoke if !invoke.is_null() => invoke,
        _ => raw::reference_value(env, state.refs.borrow().invoke_callable.expect("set by _setup"))?,
    };
    // The receiver is the callback itself, a handle already at hand: `invokeCallable` (strict
    // code) never reads `this`, and it calls `f` with `undefined` as its own.
    let out =
        if args.is_empty() { raw::call(env, f, invoke, &[f]) } else { call_with_arguments(state, f, invoke, args) };
    // Whatever a callback run by that JS recorded is overwritten (see `CallbackResult`).
    state.callback_result.set(CallbackResult::NONE);
    let out = out?;
    let frame = state.frame;
    // SAFETY: the env's frame on its JS thread; `invokeCallable` writes `returned` right
    // before it returns (`RESULT_IN_FRAME` for a wrapper, else 0), no JS has run since.
    if unsafe { (*frame).returned } == RESULT_IN_FRAME {
        // SAFETY: index.js wrote the handle of the wrapper it returned (`out`, which keeps
        // that wrapper and so its box alive in this scope).
        let w = unsafe { wrapper_of_handle((*frame).function) }
            .ok_or_else(|| Error::runtime("invokeCallable passed no tether handle"))?;
        if unscoped {
            state.callback_result.set(CallbackResult { wrapper: w, value: out });
        }
        // SAFETY: the wrapper's +1 keeps the object alive while we take our own (a spare of
        // its slot when there is one: the result usually goes back to JS, whose return keeps
        // it as a spare again); on the env's JS thread, in no leaf call (leaf functions never
        // call back), so no spare is claimed.
        return Ok(Any::object(unsafe { state.frontend.new_reference(w.live_object()?) }));
    }
    js_to_any(state, out)
}

/// `invokeCallable(f, ...args)` with `args` converted to JS values (out of line: most
/// callbacks take none).
#[inline(never)]
fn call_with_arguments(state: &EnvState, f: Value, invoke: Value, args: &[AnyView<'_>]) -> JsResult<Value> {
    // Up to three arguments on the stack; more on the heap.
    const STACK: usize = 4;
    let mut stack = [ptr::null_mut(); STACK];
    let mut heap;
    let argv: &mut [Value] = if args.len() < STACK {
        &mut stack[..args.len() + 1]
    } else {
        heap = vec![ptr::null_mut(); args.len() + 1];
        &mut heap
    };
    argv[0] = f;
    for (slot, a) in argv[1..].iter_mut().zip(args) {
        *slot = any_to_js(state, crate::convert::allocating(|| a.to_owned_any())?)?;
    }
    raw::call(state.env, f, invoke, argv)
}

fn shut_down() -> Error {
    Error::runtime("the JS environment that owns this callback has shut down")
}

fn exiting() -> Error {
    Error::runtime("the JS environment that owns this callback is exiting")
}

/// A callback queued for the JS thread, and where its outcome goes.
pub struct Pending {
    func: ObjectRef,
    args: Vec<Any>,
    outcome: Mutex<Option<Result<Any, Error>>>,
    done: Condvar,
    /// Finished by [`EnvState::refuse_cross_thread_calls`]: the JS thread must not run it.
    abandoned: std::sync::atomic::AtomicBool,
}

impl Pending {
    fn finish(&self, outcome: Result<Any, Error>) {
        *self.outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
        self.done.notify_all();
    }
}

enum Job {
    Call(Arc<Pending>),
    /// Run the JS-thread housekeeping (queued reference deletions).
    Poke,
}

fn call_from_other_thread(state: &EnvState, func: ObjectRef, args: &[AnyView<'_>]) -> Result<Any, Error> {
    let pending = Arc::new(Pending {
        func,
        args: args.iter().map(AnyView::to_owned_any).collect(),
        outcome: Mutex::new(None),
        done: Condvar::new(),
        abandoned: std::sync::atomic::AtomicBool::new(false),
    });
    {
        let _teardown = state.teardown.read().unwrap_or_else(|e| e.into_inner());
        if !state.alive.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(shut_down());
        }
        if state.sync_depth.load(std::sync::atomic::Ordering::Acquire) > 0 {
            return Err(Error::runtime(
                "a JS callback was called from another thread while its JS thread is blocked in a \
                 synchronous native call, which would deadlock; call the native function with \
                 fn.callAsync(...) instead",
            ));
        }
        // Registered and queued under the lock `refuse_cross_thread_calls` takes: a call is
        // either refused or in the list it finishes, never waiting on a JS thread that left.
        let mut cross = state.cross_thread.lock().unwrap_or_else(|e| e.into_inner());
        if cross.exiting {
            return Err(exiting());
        }
        let tsfn = state.tsfn.0.load(std::sync::atomic::Ordering::Acquire);
        let job = Box::into_raw(Box::new(Job::Call(pending.clone())));
        // SAFETY: the tsfn lives while `alive` is true (we hold `teardown`'s read lock); the job box
        // goes to `call_js`, which frees it.
        let status = unsafe {
            sys::napi_call_threadsafe_function(tsfn, job as *mut c_void, sys::ThreadsafeFunctionCallMode::nonblocking)
        };
        if status != sys::Status::napi_ok {
            // SAFETY: not queued, still ours.
            drop(unsafe { Box::from_raw(job) });
            return Err(shut_down());
        }
        cross.in_flight.push(Arc::downgrade(&pending));
    }
    let outcome = {
        let mut outcome = pending.outcome.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(o) = outcome.take() {
                break o;
            }
            outcome = pending.done.wait(outcome).unwrap_or_else(|e| e.into_inner());
        }
    };
    let mut cross = state.cross_thread.lock().unwrap_or_else(|e| e.into_inner());
    cross.in_flight.retain(|p| !std::ptr::eq(p.as_ptr(), Arc::as_ptr(&pending)));
    outcome
}

/// Calls from other threads that wait for an env's JS thread, and whether it still takes them.
#[derive(Default)]
pub struct CrossThread {
    /// The env is exiting (its `process` emitted 'exit', or its cleanup hook ran): new calls
    /// are refused at once.
    exiting: bool,
    in_flight: Vec<std::sync::Weak<Pending>>,
}

impl EnvState {
    /// From now on a callback called from another thread fails at once with a clear error, and
    /// the calls waiting for this env's JS thread fail now: an exiting JS thread runs no more
    /// queued calls, and Node joins its threadpool, where such a caller may be waiting, before
    /// the process ends (a `process.exit()` with a `callAsync` calling back hung).
    pub fn refuse_cross_thread_calls(&self) {
        let waiting = {
            let mut cross = self.cross_thread.lock().unwrap_or_else(|e| e.into_inner());
            cross.exiting = true;
            std::mem::take(&mut cross.in_flight)
        };
        for pending in waiting.iter().filter_map(std::sync::Weak::upgrade) {
            pending.abandoned.store(true, std::sync::atomic::Ordering::Release);
            pending.finish(Err(exiting()));
        }
    }
}

/// Ask the JS thread to run its housekeeping soon (from any thread).
pub fn poke(state: &EnvState) {
    let tsfn = state.tsfn.0.load(std::sync::atomic::Ordering::Acquire);
    if tsfn.is_null() {
        return;
    }
    let job = Box::into_raw(Box::new(Job::Poke));
    // SAFETY: callers hold `teardown`'s read lock and saw `alive`, so the tsfn is live.
    if unsafe {
        sys::napi_call_threadsafe_function(tsfn, job as *mut c_void, sys::ThreadsafeFunctionCallMode::nonblocking)
    } != sys::Status::napi_ok
    {
        // SAFETY: not queued, still ours.
        drop(unsafe { Box::from_raw(job) });
    }
}

unsafe extern "C" fn call_js(raw_env: sys::napi_env, _js_callback: Value, context: *mut c_void, data: *mut c_void) {
    // SAFETY: every queued item is a boxed Job, consumed once.
    let job = unsafe { Box::from_raw(data as *mut Job) };
    // SAFETY: the context is the state's Arc pointer, released only in `finalize_tsfn`.
    let state = unsafe { &*(context as *const EnvState) };
    if raw_env.is_null() {
        // The tsfn is being torn down with the env.
        if let Job::Call(p) = *job {
            p.finish(Err(shut_down()));
        }
        return;
    }
    state.flush_pending_deletes();
    if let Job::Call(p) = *job {
        if p.abandoned.load(std::sync::atomic::Ordering::Acquire) {
            return; // its caller was answered already
        }
        let cb = js_callable_of(p.func.as_ptr()).expect("queued calls are JS callbacks");
        let views: Vec<AnyView<'_>> = p.args.iter().map(Any::view).collect();
        let outcome = catch_panic(|| invoke_on_js_thread(state, cb, &views));
        p.finish(outcome);
    }
}

unsafe extern "C" fn finalize_tsfn(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the Arc count given to the tsfn in `create_tsfn`.
    drop(unsafe { Arc::from_raw(data as *const EnvState) });
}

/// Create the env's threadsafe function (unreferenced: it never keeps the loop alive).
pub fn create_tsfn(state: &Arc<EnvState>) -> JsResult<()> {
    let env = state.env;
    let name = raw::string(env, "tether.callback")?;
    let context = Arc::into_raw(state.clone()) as *mut c_void;
    let mut tsfn = ptr::null_mut();
    napi_call!(
        env,
        napi_create_threadsafe_function(
            env.raw(),
            ptr::null_mut(),
            ptr::null_mut(),
            name,
            0,
            1,
            context,
            Some(finalize_tsfn),
            context,
            Some(call_js),
            &mut tsfn
        )
    )?;
    napi_call!(env, napi_unref_threadsafe_function(env.raw(), tsfn))?;
    state.tsfn.0.store(tsfn, std::sync::atomic::Ordering::Release);
    Ok(())
}
