//! JS functions as native Functions, callable from any thread.
//!
//! A JS function `f` passed to native code becomes a Function holding a strong reference to
//! `f`. `f` is wrapped with a [`Link`] holding a *weak* native reference to that Function, so
//! passing `f` again yields the same Function while it lives, with no reference cycle; and
//! returning that Function to JS gives back `f` itself.
//!
//! Called on the env's JS thread, the Function calls `f` directly. Called on any other
//! thread, it queues the call on the env's threadsafe function and blocks until `f` returns,
//! unless the JS thread is itself blocked inside a synchronous native call: that would
//! deadlock, so the call fails with a clear error (use `fn.callAsync`).

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;
use std::sync::{Arc, Condvar, Mutex};

use napi::sys;
use tether_core::arc::{ObjectBox, WeakObjectArc};
use tether_core::error::catch_panic;
use tether_core::function::FunctionObj;
use tether_core::object::ObjectHeader;
use tether_core::{Any, AnyView, Error, Function, ObjectArc, ObjectRef};

use crate::convert::{any_to_js, js_to_any};
use crate::env::{EnvState, HeldRef};
use crate::errors::fail_to_error;
use crate::raw::{self, napi_call, JsResult, Ref, Value};

/// First word of the wrap payload on a JS function that has a native Function.
pub const LINK_MAGIC: u64 = 0x7465_7468_6572_4c4b; // "tetherLK"

/// Wrapped onto a JS function: a weak reference to the Function made for it.
#[repr(C)]
struct Link {
    magic: u64,
    func: RefCell<Option<WeakObjectArc<FunctionObj>>>,
}

/// The data of a Function made from a JS function: the JS function, held strongly (deleted
/// on the JS thread when the Function dies).
type JsCallback = HeldRef;

unsafe extern "C" fn drop_js_callback(data: *mut c_void) {
    // SAFETY: the box leaked in `function_from_js`, dropped once by the Function.
    drop(unsafe { Box::from_raw(data as *mut JsCallback) });
}

unsafe extern "C" fn finalize_link(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the Link box wrapped onto a JS function, finalized once.
    drop(unsafe { Box::from_raw(data as *mut Link) });
}

/// The JS callback data of `obj` if it is a Function made from a JS function.
fn js_callback_of(obj: *mut ObjectHeader) -> Option<&'static JsCallback> {
    // SAFETY: `obj` is a live Function (callers checked the type index).
    let func = unsafe { &(*(obj as *const ObjectBox<FunctionObj>)).value };
    (func.safe_call as *const () == js_callback_call as *const ())
        // SAFETY: our safe_call implies our data; it lives as long as the Function.
        .then(|| unsafe { &*(func.data as *const JsCallback) })
}

/// The JS function behind a Function made in this env from a JS function.
pub fn js_function_of(state: &EnvState, obj: &ObjectRef) -> JsResult<Option<Value>> {
    match js_callback_of(obj.as_ptr()) {
        Some(cb) => cb.value_in(state).transpose(),
        None => Ok(None),
    }
}

/// Native name of every Function made from a JS function (at most 7 bytes: stored inline).
const CALLBACK_NAME: &str = "js.call";

/// The native Function for JS function `f` (the same one while it lives).
pub fn function_from_js(state: &EnvState, f: Value) -> JsResult<Any> {
    let env = state.env;
    let mut data: *mut c_void = ptr::null_mut();
    // SAFETY: `f` is a function handle of this call; unwrapped payloads start with a magic.
    let link = unsafe {
        let ok = sys::napi_unwrap(env.raw(), f, &mut data) == sys::Status::napi_ok && !data.is_null();
        (ok && *(data as *const u64) == LINK_MAGIC).then(|| &*(data as *const Link))
    };
    if let Some(func) = link.and_then(|l| l.func.borrow().as_ref().and_then(WeakObjectArc::upgrade)) {
        return Ok(Any::object(func.into()));
    }
    let data = Box::into_raw(Box::new(HeldRef::new(state, f)?)) as *mut c_void;
    // SAFETY: `js_callback_call` reads exactly this data; `drop_js_callback` frees it, and
    // both may run on any thread. The native name is never shown (the Function comes back to
    // JS as `f` itself), so it is a short inline string: no property read or allocation.
    let made =
        unsafe { Function::try_from_raw_parts(js_callback_call, data, Some(drop_js_callback), CALLBACK_NAME, -1, 0) };
    let func = match made {
        Ok(func) => func,
        Err(e) => {
            // SAFETY: no Function took the box: it is still ours to drop (and its reference).
            unsafe { drop_js_callback(data) };
            return Err(e.into());
        }
    };
    let weak = ObjectArc::downgrade(&func.0);
    match link {
        Some(l) => *l.func.borrow_mut() = Some(weak),
        None => {
            let boxed = Box::into_raw(Box::new(Link { magic: LINK_MAGIC, func: RefCell::new(Some(weak)) }));
            // SAFETY: the finalizer frees the box; if `f` is already wrapped by someone
            // else the wrap fails and we free it here (identity then is per call only).
            let status = unsafe {
                sys::napi_wrap(
                    env.raw(),
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
            }
        }
    }
    Ok(Any::object(ObjectRef::from(func.0)))
}

/// The `safe_call` of Functions made from JS functions.
unsafe extern "C" fn js_callback_call(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    let outcome = catch_panic(|| {
        let cb = js_callback_of(handle).expect("our safe_call");
        let args = if n <= 0 {
            &[][..]
        } else {
            // SAFETY: the caller passes `n` live cells.
            unsafe { std::slice::from_raw_parts(args, n as usize) }
        };
        if cb.state.on_js_thread() {
            invoke_on_js_thread(&cb.state, cb.reference, args)
        } else {
            // SAFETY: the caller keeps the Function alive during the call; we take our own +1.
            let func = unsafe { ObjectRef::from_borrowed(handle) };
            call_from_other_thread(&cb.state, func, args)
        }
    });
    // SAFETY: the caller's result cell holds None and is ours to fill.
    unsafe { tether_core::function::finish_call(outcome, result) }
}

/// Call the JS function on its own thread.
fn invoke_on_js_thread(state: &EnvState, func: Ref, args: &[AnyView<'_>]) -> Result<Any, Error> {
    if !*state.alive.read().unwrap_or_else(|e| e.into_inner()) {
        return Err(shut_down());
    }
    let env = state.env;
    let mut scope = ptr::null_mut();
    // SAFETY: on the env's JS thread; closed below.
    unsafe { sys::napi_open_handle_scope(env.raw(), &mut scope) };
    let outcome = (|| -> JsResult<Any> {
        let f = raw::reference_value(env, func)?;
        let argv = args
            .iter()
            .map(|a| any_to_js(state, crate::convert::allocating(|| a.to_owned_any())?))
            .collect::<JsResult<Vec<Value>>>()?;
        let this = raw::undefined(env)?;
        let out = raw::call(env, this, f, &argv)?;
        js_to_any(state, out)
    })();
    let outcome = outcome.map_err(|fail| fail_to_error(state, fail));
    // SAFETY: the scope opened above.
    unsafe { sys::napi_close_handle_scope(env.raw(), scope) };
    outcome
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
        let alive = state.alive.read().unwrap_or_else(|e| e.into_inner());
        if !*alive {
            return Err(shut_down());
        }
        if state.sync_depth.load(std::sync::atomic::Ordering::SeqCst) > 0 {
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
        // SAFETY: the tsfn lives while `alive` is true (we hold the read lock); the job box
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
    // SAFETY: callers hold the `alive` read lock, so the tsfn is live.
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
        let cb = js_callback_of(p.func.as_ptr()).expect("queued calls are JS callbacks");
        let views: Vec<AnyView<'_>> = p.args.iter().map(Any::view).collect();
        let outcome = catch_panic(|| invoke_on_js_thread(state, cb.reference, &views));
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
