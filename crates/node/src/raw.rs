//! Thin helpers over raw Node-API (`napi::sys`): status checks and value constructors.
//!
//! Everything here runs on an environment's JS thread with a handle scope open. The
//! environment is an [`Env`], branded with the lifetime it is live for (as jni-rs 0.22's
//! `Env<'local>`): only `unsafe` [`Env::from_raw`] makes one, at a Node-API entry point or for
//! a live [`crate::env::EnvState`], so the safe helpers cannot be reached with a dangling env.

use std::ffi::c_char;
use std::marker::PhantomData;
use std::ptr;

use napi::sys;
pub use sys::{napi_ref as Ref, napi_value as Value};

/// A Node-API environment live for `'env`, used on its JS thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Env<'env> {
    raw: sys::napi_env,
    _live: PhantomData<&'env ()>,
}

impl Env<'_> {
    /// # Safety
    /// `raw` is a live environment for the whole of the chosen lifetime, on whose JS thread
    /// the caller runs: the env Node passed to the running callback (for that callback), or an
    /// [`crate::env::EnvState`]'s (for as long as the state is reachable: the env's cleanup
    /// hook retires it).
    #[inline(always)]
    pub unsafe fn from_raw(raw: sys::napi_env) -> Self {
        Env { raw, _live: PhantomData }
    }

    /// The raw handle, for a Node-API call.
    #[inline(always)]
    pub fn raw(self) -> sys::napi_env {
        self.raw
    }
}

/// Why a native step failed.
pub enum Fail {
    /// A tether error to raise as a JS exception.
    Native(tether_core::Error),
    /// A JS exception is already pending (thrown by JS code we called): let it propagate.
    Pending,
}

impl From<tether_core::Error> for Fail {
    fn from(e: tether_core::Error) -> Self {
        Fail::Native(e)
    }
}

pub type JsResult<T> = Result<T, Fail>;

/// Turn a Node-API status into a result: a pending exception propagates, anything else
/// becomes a RuntimeError naming the failed step.
#[inline]
pub fn check(env: Env, status: sys::napi_status, what: &str) -> JsResult<()> {
    if status == sys::Status::napi_ok {
        return Ok(());
    }
    Err(status_fail(env, status, what))
}

#[cold]
fn status_fail(env: Env, status: sys::napi_status, what: &str) -> Fail {
    let mut pending = false;
    // SAFETY: `env` is the live environment of the current call.
    unsafe { sys::napi_is_exception_pending(env.raw(), &mut pending) };
    if pending || status == sys::Status::napi_pending_exception {
        Fail::Pending
    } else {
        Fail::Native(tether_core::Error::runtime(format!("Node-API call {what} failed with status {status}")))
    }
}

macro_rules! napi_call {
    ($env:expr, $f:ident($($arg:expr),* $(,)?)) => {{
        // SAFETY: a Node-API call on the environment's own thread with valid handles; the
        // status is checked right after.
        let status = unsafe { ::napi::sys::$f($($arg),*) };
        $crate::raw::check($env, status, stringify!($f))
    }};
}
pub(crate) use napi_call;

pub fn undefined(env: Env) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_get_undefined(env.raw(), &mut v))?;
    Ok(v)
}

pub fn null(env: Env) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_get_null(env.raw(), &mut v))?;
    Ok(v)
}

pub fn string(env: Env, s: &str) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_create_string_utf8(env.raw(), s.as_ptr() as *const c_char, s.len() as isize, &mut v))?;
    Ok(v)
}

pub fn number(env: Env, x: f64) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_create_double(env.raw(), x, &mut v))?;
    Ok(v)
}

pub fn boolean(env: Env, b: bool) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_get_boolean(env.raw(), b, &mut v))?;
    Ok(v)
}

pub fn object(env: Env) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_create_object(env.raw(), &mut v))?;
    Ok(v)
}

pub fn array(env: Env, len: usize) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_create_array_with_length(env.raw(), len, &mut v))?;
    Ok(v)
}

pub fn set_element(env: Env, array: Value, i: u32, v: Value) -> JsResult<()> {
    napi_call!(env, napi_set_element(env.raw(), array, i, v))
}

pub fn set_named(env: Env, obj: Value, name: &str, v: Value) -> JsResult<()> {
    let key = string(env, name)?;
    napi_call!(env, napi_set_property(env.raw(), obj, key, v))
}

pub fn get_named(env: Env, obj: Value, name: &str) -> JsResult<Value> {
    let key = string(env, name)?;
    let mut v = ptr::null_mut();
    napi_call!(env, napi_get_property(env.raw(), obj, key, &mut v))?;
    Ok(v)
}

pub fn reference_value(env: Env, r: Ref) -> JsResult<Value> {
    let mut v = ptr::null_mut();
    napi_call!(env, napi_get_reference_value(env.raw(), r, &mut v))?;
    Ok(v)
}

pub fn strong_ref(env: Env, v: Value) -> JsResult<Ref> {
    let mut r = ptr::null_mut();
    napi_call!(env, napi_create_reference(env.raw(), v, 1, &mut r))?;
    Ok(r)
}

pub fn type_of(env: Env, v: Value) -> JsResult<sys::napi_valuetype> {
    let mut t = 0;
    napi_call!(env, napi_typeof(env.raw(), v, &mut t))?;
    Ok(t)
}

/// `a === b` (false when the engine cannot answer, e.g. with an exception pending).
pub fn strict_equals(env: Env, a: Value, b: Value) -> bool {
    let mut same = false;
    // SAFETY: two handles of the current call's scope; `same` is written before returning.
    let status = unsafe { sys::napi_strict_equals(env.raw(), a, b, &mut same) };
    status == sys::Status::napi_ok && same
}

/// Read a JS string (UTF-8) into `out`.
pub fn read_string(env: Env, v: Value, out: &mut String) -> JsResult<()> {
    let mut len = 0usize;
    napi_call!(env, napi_get_value_string_utf8(env.raw(), v, ptr::null_mut(), 0, &mut len))?;
    let mut buf = vec![0u8; len + 1];
    let mut written = 0usize;
    napi_call!(env, napi_get_value_string_utf8(env.raw(), v, buf.as_mut_ptr() as *mut c_char, len + 1, &mut written))?;
    buf.truncate(written);
    // Node-API writes valid UTF-8 (lone surrogates become U+FFFD).
    *out = String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(())
}

/// Call `f` with `this` and `args`.
pub fn call(env: Env, this: Value, f: Value, args: &[Value]) -> JsResult<Value> {
    let mut out = ptr::null_mut();
    napi_call!(env, napi_call_function(env.raw(), this, f, args.len(), args.as_ptr(), &mut out))?;
    Ok(out)
}

/// A JS function backed by a raw Node-API callback.
pub fn function(env: Env, name: &str, cb: sys::napi_callback, data: *mut std::ffi::c_void) -> JsResult<Value> {
    let mut f = ptr::null_mut();
    napi_call!(
        env,
        napi_create_function(env.raw(), name.as_ptr() as *const c_char, name.len() as isize, cb, data, &mut f)
    )?;
    Ok(f)
}

/// Arguments of a cold-path callback (constructors among them): up to [`INLINE_ARGS`] in the
/// struct itself, more on the heap.
pub struct Args {
    pub this: Value,
    pub argv: ArgList,
}

/// Arguments read without a heap allocation (a constructor call reads them every time).
pub const INLINE_ARGS: usize = 8;

/// A callback's argument values: `&[Value]` through `Deref`.
pub struct ArgList {
    inline: [Value; INLINE_ARGS],
    heap: Vec<Value>,
    len: usize,
}

impl std::ops::Deref for ArgList {
    type Target = [Value];
    fn deref(&self) -> &[Value] {
        if self.len <= INLINE_ARGS {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }
}

pub fn args(env: Env, info: sys::napi_callback_info) -> JsResult<Args> {
    let mut argc = INLINE_ARGS;
    let mut argv = ArgList { inline: [ptr::null_mut(); INLINE_ARGS], heap: Vec::new(), len: 0 };
    let mut this = ptr::null_mut();
    napi_call!(
        env,
        napi_get_cb_info(env.raw(), info, &mut argc, argv.inline.as_mut_ptr(), &mut this, ptr::null_mut())
    )?;
    if argc > INLINE_ARGS {
        argv.heap = vec![ptr::null_mut(); argc];
        let mut again = argc;
        napi_call!(
            env,
            napi_get_cb_info(env.raw(), info, &mut again, argv.heap.as_mut_ptr(), &mut this, ptr::null_mut())
        )?;
    }
    argv.len = argc;
    Ok(Args { this, argv })
}
