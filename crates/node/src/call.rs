//! Native functions as JS functions: the hot call path (raw Node-API) and `callAsync`.
//!
//! A native function's JS face is a shim (index.js `makeShim`) around a raw function made with
//! `napi_create_function`, whose callback data is the function's [`Wrapper`]. The shim passes
//! a bit mask first and wrapper arguments as their handles (numbers naming the wrapper
//! box), so a call reads its arguments into a stack buffer, converts them to `AnyView`s
//! without a `napi_unwrap` per wrapper, calls `safe_call` directly and converts the result.

use std::ffi::c_void;
use std::ptr;

use napi::sys;
use tether_core::arc::ObjectBox;
use tether_core::error::take_last_error;
use tether_core::function::{FunctionObj, FUNC_ADOPTS_LENT, FUNC_LEAF};
use tether_core::object::ObjectHeader;
use tether_core::{Any, AnyView, Error, ObjectRef};

use crate::convert::{any_to_js, arg_view, js_to_any, return_argument, wrapper_view};
use crate::env::EnvState;
use crate::errors::throw;
use crate::raw::{self, napi_call, Env, Fail, JsResult, Value};
use crate::tie::{wrapper_of, wrapper_of_handle, Wrapper};

/// Arguments read on the stack; more spill to the heap.
const STACK_ARGS: usize = 8;

/// Make the JS function for a native Function wrapper (called while tying).
pub fn make_function(state: &EnvState, wrapper: *mut Wrapper) -> JsResult<Value> {
    // SAFETY: the wrapper box is live and holds a Function object.
    let func = unsafe { function_obj((*wrapper).obj.get()) };
    let name = func.name.view().as_str().unwrap_or("").to_string();
    let short = name.rsplit('.').next().unwrap_or(&name);
    let raw_fn = raw::function(state.env, short, Some(native_function_callback), wrapper as *mut c_void)?;
    let factory = state.refs.borrow().shim_factory.expect("makeShim set at init");
    let factory = raw::reference_value(state.env, factory)?;
    let undefined = raw::undefined(state.env)?;
    let shim_args = [raw_fn, raw::number(state.env, func.arity as f64)?, raw::string(state.env, short)?];
    let f = raw::call(state.env, undefined, factory, &shim_args)?;
    let call_async = state.refs.borrow().call_async.expect("callAsync set at init");
    let call_async = raw::reference_value(state.env, call_async)?;
    raw::set_named(state.env, f, "callAsync", call_async)?;
    let full = raw::string(state.env, &name)?;
    raw::set_named(state.env, f, "qualifiedName", full)?;
    Ok(f)
}

/// # Safety
/// `obj` is a live Function object.
unsafe fn function_obj<'a>(obj: *mut ObjectHeader) -> &'a FunctionObj {
    // SAFETY: the caller's guarantee; Function objects are `ObjectBox<FunctionObj>`.
    unsafe { &(*(obj as *const ObjectBox<FunctionObj>)).value }
}

/// The Node-API callback of every native function, called by its shim only: `(mask, ...args)`,
/// where bit i of `mask` says argument i is a wrapper handle.
unsafe extern "C" fn native_function_callback(env: Env, info: sys::napi_callback_info) -> Value {
    let mut argc = STACK_ARGS + 1;
    let mut argv: [Value; STACK_ARGS + 1] = [ptr::null_mut(); STACK_ARGS + 1];
    let mut data: *mut c_void = ptr::null_mut();
    // SAFETY: `info` is this call's; the buffer holds STACK_ARGS handles.
    unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) };
    // SAFETY: the data of a native function is its live Wrapper (the function is reachable,
    // so its wrapper is not finalized).
    let wrapper = unsafe { &*(data as *const Wrapper) };
    let state = wrapper.state();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut mask = 0u32;
        if argc > 0 {
            // SAFETY: a value of this call; a non-number leaves the mask 0 (no handles).
            unsafe { sys::napi_get_value_uint32(env, argv[0], &mut mask) };
        }
        if argc <= STACK_ARGS + 1 {
            call_native(state, wrapper, mask, &argv[1.min(argc)..argc])
        } else {
            let mut heap = vec![ptr::null_mut(); argc];
            let mut again = argc;
            raw::napi_call!(
                env,
                napi_get_cb_info(env, info, &mut again, heap.as_mut_ptr(), ptr::null_mut(), ptr::null_mut())
            )?;
            call_native(state, wrapper, mask, &heap[1..])
        }
    }));
    match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(fail)) => {
            throw(state, fail);
            ptr::null_mut()
        }
        Err(panic) => {
            let msg = tether_core::error::panic_message(&*panic);
            throw(state, Fail::Native(Error::of_kind(tether_core::ErrorKind::RustPanic, msg)));
            ptr::null_mut()
        }
    }
}

/// Marks the JS thread as inside a synchronous native call that may block or call back.
pub struct SyncCall<'a>(&'a EnvState);

impl<'a> SyncCall<'a> {
    pub fn enter(state: &'a EnvState) -> Self {
        let depth = &state.sync_depth;
        // Only the JS thread writes the depth; other threads read it.
        depth.store(depth.load(std::sync::atomic::Ordering::Relaxed) + 1, std::sync::atomic::Ordering::SeqCst);
        SyncCall(state)
    }
}

impl Drop for SyncCall<'_> {
    fn drop(&mut self) {
        let depth = &self.0.sync_depth;
        depth.store(depth.load(std::sync::atomic::Ordering::Relaxed) - 1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Call a native function with JS arguments, synchronously. Bit i of `handles` marks
/// argument i as a wrapper handle (see `tie::handle`).
fn call_native(state: &EnvState, wrapper: &Wrapper, handles: u32, argv: &[Value]) -> JsResult<Value> {
    let obj = wrapper.live_object()?;
    // SAFETY: the wrapper holds +1 on a Function.
    let func = unsafe { function_obj(obj) };
    let leaf = func.flags & FUNC_LEAF != 0;
    let lend = leaf && func.flags & FUNC_ADOPTS_LENT != 0;
    let mut owned: Vec<Any> = Vec::new();
    let mut stack_views = [AnyView::none(); STACK_ARGS];
    let mut heap_views;
    let views: &mut [AnyView<'_>] = if argv.len() <= STACK_ARGS {
        &mut stack_views[..argv.len()]
    } else {
        heap_views = vec![AnyView::none(); argv.len()];
        &mut heap_views
    };
    // The first wrapper argument, for the fast return of an argument (`echo(p)`).
    let mut first_wrapper: Option<(Value, &Wrapper)> = None;
    for (i, &v) in argv.iter().enumerate() {
        // Leaf functions never call back, so a wrapper's own +1 keeps a borrowed argument
        // alive; otherwise a callback could dispose of it mid-call, so hold our own.
        let converted = if i < 32 && handles & (1 << i) != 0 {
            // SAFETY: the shim flags only handles it read from wrappers' private fields.
            match unsafe { wrapper_of_handle(state.env, v) } {
                Some(w) => wrapper_view(state, w, leaf, lend, &mut owned).map(|view| (view, Some(w))),
                None => Err(Error::type_error("a flagged argument is not a tether handle").into()),
            }
        } else {
            arg_view(state, v, leaf, lend, &mut owned)
        };
        let (view, wrapper) = match converted {
            Ok(converted) => converted,
            Err(fail) => {
                // Arguments lent so far were never passed: give their references back.
                views[..i].iter().for_each(AnyView::release_if_lent);
                return Err(fail);
            }
        };
        views[i] = view;
        if first_wrapper.is_none() {
            first_wrapper = wrapper.map(|w| (v, w));
        }
    }
    let mut result = Any::none();
    let rc = {
        let _sync = (!leaf).then(|| SyncCall::enter(state));
        // SAFETY: a live Function, `views.len()` cells kept alive by `owned` and the argument
        // wrappers, and a None result cell.
        unsafe { (func.safe_call)(obj, views.as_ptr(), views.len() as i32, &mut result) }
    };
    drop(owned);
    if rc != 0 {
        return Err(Fail::Native(take_last_error()));
    }
    if let (Some((arg, w)), true) = (first_wrapper, result.view().as_object_ptr().is_some()) {
        let obj = result.into_object().expect("checked object");
        return match return_argument(state, obj, arg, w) {
            Ok(v) => Ok(v),
            Err(obj) => any_to_js(state, Any::object(obj)),
        };
    }
    any_to_js(state, result)
}

// ---- callAsync ------------------------------------------------------------------------

struct AsyncCall {
    func: ObjectRef,
    args: Vec<Any>,
    outcome: Option<Result<Any, Error>>,
    deferred: sys::napi_deferred,
    work: sys::napi_async_work,
}

/// `fn.callAsync(...args)`: run on the libuv pool, resolve with the result.
pub unsafe extern "C" fn call_async_callback(env: Env, info: sys::napi_callback_info) -> Value {
    // SAFETY: called by Node on this env's JS thread after init.
    let state = unsafe { crate::env::state_of(env) };
    match start_async(state, env, info) {
        Ok(v) => v,
        Err(fail) => {
            throw(state, fail);
            ptr::null_mut()
        }
    }
}

fn start_async(state: &EnvState, env: Env, info: sys::napi_callback_info) -> JsResult<Value> {
    let args = raw::args(env, info)?;
    let wrapper = wrapper_of(env, args.this).ok_or_else(|| {
        Error::type_error("callAsync must be called on a tether native function (fn.callAsync(...args))")
    })?;
    let obj = wrapper.live_object()?;
    if !std::ptr::eq(wrapper.state, state) {
        return Err(Error::runtime("callAsync on a function of another environment").into());
    }
    // SAFETY: the wrapper's +1 keeps `obj` alive while we take our own.
    let func = unsafe { ObjectRef::from_borrowed(obj) };
    let values = args.argv.iter().map(|&v| js_to_any(state, v)).collect::<JsResult<Vec<Any>>>()?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    napi_call!(env, napi_create_promise(env, &mut deferred, &mut promise))?;
    let job = Box::into_raw(Box::new(AsyncCall { func, args: values, outcome: None, deferred, work: ptr::null_mut() }));
    let name = raw::string(env, "tether.callAsync")?;
    let mut work = ptr::null_mut();
    // SAFETY: `job` is handed to the work callbacks, which free it in `complete_async`.
    let status = unsafe {
        sys::napi_create_async_work(
            env,
            ptr::null_mut(),
            name,
            Some(execute_async),
            Some(complete_async),
            job as *mut c_void,
            &mut work,
        )
    };
    if let Err(fail) = raw::check(env, status, "napi_create_async_work") {
        // SAFETY: not queued, still ours.
        drop(unsafe { Box::from_raw(job) });
        return Err(fail);
    }
    // SAFETY: the job is not shared with any thread yet.
    unsafe { (*job).work = work };
    napi_call!(env, napi_queue_async_work(env, work))?;
    Ok(promise)
}

unsafe extern "C" fn execute_async(_env: Env, data: *mut c_void) {
    // SAFETY: the job is owned by the work until `complete_async`; only this pool thread
    // touches it meanwhile.
    let job = unsafe { &mut *(data as *mut AsyncCall) };
    let views: Vec<AnyView<'_>> = job.args.iter().map(Any::view).collect();
    let func = job.func.as_ptr();
    let outcome = tether_core::error::catch_panic(|| {
        let mut result = Any::none();
        // SAFETY: a live Function (+1 held by the job), owned argument cells, a None result.
        let rc = unsafe { (function_obj(func).safe_call)(func, views.as_ptr(), views.len() as i32, &mut result) };
        if rc == 0 {
            Ok(result)
        } else {
            Err(take_last_error())
        }
    });
    job.outcome = Some(outcome);
}

unsafe extern "C" fn complete_async(env: Env, status: sys::napi_status, data: *mut c_void) {
    // SAFETY: the job made in `start_async`, freed here once.
    let job = unsafe { Box::from_raw(data as *mut AsyncCall) };
    // SAFETY: called on the JS thread of a live env.
    let state = unsafe { crate::env::state_of(env) };
    // SAFETY: our work, completed.
    unsafe { sys::napi_delete_async_work(env, job.work) };
    let AsyncCall { func, args, outcome, deferred, .. } = *job;
    drop(args);
    drop(func);
    let outcome = match outcome {
        Some(o) if status == sys::Status::napi_ok => o,
        _ => Err(Error::runtime("the async call was cancelled")),
    };
    let settled = match outcome {
        Ok(value) => any_to_js(state, value).map(|v| (true, v)),
        Err(e) => Err(Fail::Native(e)),
    };
    let (resolve, value) = match settled {
        Ok(ok) => ok,
        Err(fail) => (false, crate::errors::fail_to_js(state, fail)),
    };
    // SAFETY: the promise's deferred, settled exactly once.
    unsafe {
        if resolve {
            sys::napi_resolve_deferred(env, deferred, value);
        } else {
            sys::napi_reject_deferred(env, deferred, value);
        }
    }
}
