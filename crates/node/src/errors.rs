//! tether errors <-> JS exceptions.
//!
//! A native `Error` becomes an instance of the class index.js registers for its kind
//! (`makeError(kind, message, backtrace)`). A JS exception thrown by a callback becomes a
//! native `Error` whose payload holds the original exception, so when it comes back out to
//! the same env the very same JS object is thrown again.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use napi::sys;
use tether_core::containers::OpaqueObj;
use tether_core::{Any, Error, ObjectArc};

use crate::env::EnvState;
use crate::raw::{self, Fail, JsResult, Ref, Value};
use crate::tie::arc_of;

/// `OpaqueObj::owner` of payloads holding a JS exception.
const PAYLOAD_OWNER: u64 = 0x7465_7468_6572_4a53; // "tetherJS"

/// A strong reference to a JS exception, owned by a native error's payload. Node-API 8
/// references only objects, so a thrown primitive is held in a one-element array.
struct ExceptionRef {
    state: Arc<EnvState>,
    exception: Ref,
    boxed: bool,
}

unsafe extern "C" fn drop_exception_ref(p: *mut c_void) {
    // SAFETY: the box made in `error_from_exception`, finalized once by its OpaqueObj.
    let r = unsafe { Box::from_raw(p as *mut ExceptionRef) };
    r.state.delete_reference_anywhere(r.exception);
}

/// The original JS exception carried by `e`, if it came from this env.
fn original_exception<'a>(state: &EnvState, e: &'a Error) -> Option<&'a ExceptionRef> {
    let opaque = e.payload().view().downcast_ref::<OpaqueObj>()?;
    if opaque.owner != PAYLOAD_OWNER {
        return None;
    }
    // SAFETY: an opaque with our owner tag holds an `ExceptionRef`.
    let r = unsafe { &*(opaque.ptr as *const ExceptionRef) };
    std::ptr::eq(Arc::as_ptr(&r.state), state).then_some(r)
}

/// The JS value to throw for `e`.
pub fn error_to_js(state: &EnvState, e: &Error) -> JsResult<Value> {
    let env = state.env;
    if let Some(r) = original_exception(state, e) {
        let held = raw::reference_value(env, r.exception)?;
        if !r.boxed {
            return Ok(held);
        }
        let mut value = ptr::null_mut();
        raw::napi_call!(env, napi_get_element(env.raw(), held, 0, &mut value))?;
        return Ok(value);
    }
    let factory = state.refs.borrow().error_factory.expect("error factory set at init");
    let factory = raw::reference_value(env, factory)?;
    let args = [
        raw::number(env, e.code().code() as f64)?,
        raw::string(env, e.kind())?,
        raw::string(env, e.message())?,
        raw::string(env, e.backtrace())?,
    ];
    let this = raw::undefined(env)?;
    raw::call(env, this, factory, &args)
}

/// Throw `fail` as a JS exception (a pending one is left as is).
pub fn throw(state: &EnvState, fail: Fail) {
    if let Fail::Native(e) = fail {
        let env = state.env;
        match error_to_js(state, &e) {
            // SAFETY: on the JS thread with no exception pending.
            Ok(v) => unsafe {
                sys::napi_throw(env.raw(), v);
            },
            Err(_) => {
                let msg = std::ffi::CString::new(format!("{}: {}", e.kind(), e.message()).replace('\0', " "))
                    .unwrap_or_default();
                // SAFETY: a NUL-terminated message.
                unsafe { sys::napi_throw_error(env.raw(), ptr::null(), msg.as_ptr()) };
            }
        }
    }
}

/// The pending JS exception, cleared.
fn take_exception(state: &EnvState) -> Option<Value> {
    let mut exc = ptr::null_mut();
    // SAFETY: on the JS thread.
    let status = unsafe { sys::napi_get_and_clear_last_exception(state.env.raw(), &mut exc) };
    (status == sys::Status::napi_ok && !exc.is_null()).then_some(exc)
}

/// A JS value to reject a promise with.
pub fn fail_to_js(state: &EnvState, fail: Fail) -> Value {
    let value = match fail {
        Fail::Native(e) => error_to_js(state, &e).ok(),
        Fail::Pending => take_exception(state),
    };
    value.or_else(|| raw::undefined(state.env).ok()).unwrap_or(ptr::null_mut())
}

/// A native error for `fail` (a pending JS exception is taken and carried as the payload).
pub fn fail_to_error(state: &EnvState, fail: Fail) -> Error {
    match fail {
        Fail::Native(e) => e,
        Fail::Pending => match take_exception(state) {
            Some(exc) => error_from_exception(state, exc),
            None => Error::runtime("a JS call failed without an exception"),
        },
    }
}

/// The error of a JS call that could not run because its env is being torn down.
pub const TERMINATING: &str = "the JS environment is terminating: no more JavaScript runs in it";

/// The native error for a JS exception: kind from `.kind` (tether errors), else TypeError
/// for TypeError, IndexError for RangeError, RuntimeError otherwise; the exception itself
/// rides along as the payload.
pub fn error_from_exception(state: &EnvState, exc: Value) -> Error {
    let env = state.env;
    let read = |name: &str| -> Option<String> {
        let v = raw::get_named(env, exc, name).ok()?;
        if raw::type_of(env, v).ok()? != sys::ValueType::napi_string {
            return None;
        }
        let mut s = String::new();
        raw::read_string(env, v, &mut s).ok()?;
        Some(s)
    };
    let is_object = matches!(raw::type_of(env, exc), Ok(t) if t == sys::ValueType::napi_object || t == sys::ValueType::napi_function);
    let (kind, message) = if is_object {
        let kind = read("kind").unwrap_or_else(|| match read("name").as_deref() {
            Some("TypeError") => "TypeError".into(),
            Some("RangeError") => "IndexError".into(),
            _ => "RuntimeError".into(),
        });
        (kind, read("message").unwrap_or_default())
    } else {
        let mut s = String::new();
        let mut as_string = ptr::null_mut();
        // SAFETY: on the JS thread.
        if unsafe { sys::napi_coerce_to_string(env.raw(), exc, &mut as_string) } == sys::Status::napi_ok {
            let _ = raw::read_string(env, as_string, &mut s);
        } else {
            // Even a primitive does not convert: JS cannot run here any more (a terminated
            // worker, an exiting process), and what "threw" is V8's termination.
            let _ = take_exception(state);
            return Error::runtime(TERMINATING);
        }
        ("RuntimeError".into(), s)
    };
    let boxed = !is_object;
    let held = if boxed {
        raw::array(env, 1).and_then(|holder| raw::set_element(env, holder, 0, exc).map(|()| holder))
    } else {
        Ok(exc)
    };
    let payload = match held.and_then(|h| state.hold_reference(h)) {
        Ok(r) => {
            let boxed =
                Box::into_raw(Box::new(ExceptionRef { state: arc_of(state), exception: r, boxed })) as *mut c_void;
            let opaque = OpaqueObj { ptr: boxed, finalize: Some(drop_exception_ref), owner: PAYLOAD_OWNER };
            // A payload that cannot be allocated releases the exception (its finalizer runs)
            // and the error is the MemoryError.
            match tether_core::error::catch_out_of_memory(|| ObjectArc::new(opaque)) {
                Ok(payload) => Any::object(payload.into()),
                Err(e) => return e,
            }
        }
        Err(_) => Any::none(),
    };
    Error::with_payload(&kind, message, payload)
}
