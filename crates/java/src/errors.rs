//! Native errors to Java exceptions.
//!
//! An Error raised by a Java callback carries the original throwable, which is rethrown as
//! is. Any other Error becomes the exception `Errors.create(code, kind, message, backtrace)` picks
//! (the mapping table is in docs/java.md).

use jni_sys::jvalue;
use tether_core::error::{catch_panic, panic_error};
use tether_core::{Error, Result};

use crate::callback;
use crate::classes;
use crate::jenv::Env;

/// Throw `err` in Java (unless an exception is already pending, which then wins).
pub fn throw(env: Env, err: Error) {
    if env.exception_check() {
        return;
    }
    if let Some(t) = callback::carried_throwable(&err) {
        let local = env.new_local_ref(t);
        env.throw(local);
        env.delete_local_ref(local);
        return;
    }
    let c = classes::get();
    let kind = env.new_string(err.kind());
    let message = env.new_string(err.message());
    let backtrace = env.new_string(err.backtrace());
    let args = [jvalue { i: err.code().code() }, jvalue { l: kind }, jvalue { l: message }, jvalue { l: backtrace }];
    // SAFETY: `Errors.create(int, String, String, String) -> Throwable`, resolved at init.
    let t = unsafe { env.call_static_object(c.errors, c.errors_create, &args) };
    if !t.is_null() && !env.exception_check() {
        env.throw(t);
    }
    for local in [kind, message, backtrace, t] {
        env.delete_local_ref(local);
    }
}

/// Run a native method body: a returned Error or a Rust panic becomes a Java exception and
/// the method returns `default`.
pub fn guard<T>(env: Env, default: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_panic(f) {
        Ok(v) => v,
        Err(e) => {
            throw(env, e);
            default
        }
    }
}

/// [`guard`] for the call paths: the same outcome, with `std::panic::catch_unwind` directly.
///
/// What runs inside is this crate's glue around a `safe_call`, which catches the callee's
/// panics itself; `catch_panic`'s bookkeeping (two thread-local updates through
/// `__tls_get_addr` in a cdylib) is measurable there. A panic in the glue (a bug) still
/// becomes a `RustPanic` exception, reported by the default panic hook as well.
#[inline(always)]
pub fn guard_call<T>(env: Env, default: T, f: impl FnOnce() -> Result<T>) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            throw(env, e);
            default
        }
        Err(panic) => {
            throw(env, panic_error(panic));
            default
        }
    }
}
