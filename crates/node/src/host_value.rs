//! JS objects held by native code: a class instance, a Date, a Promise (any object that is not
//! a plain object, an array, a Map, a Set or bytes, which convert) crosses as a
//! `tether.HostValue` holding a strong reference, and comes back to its own env as the very same
//! object (`echo(o) === o`).

use std::ffi::c_void;
use std::sync::Arc;

use tether_core::host_value::{HostLanguage, HostValueObj};
use tether_core::{Any, Error};

use crate::env::EnvState;
use crate::raw::{self, JsResult, Ref, Value};
use crate::tie::arc_of;

/// JavaScript, as the core's host values name it (every env; a value knows its own env).
pub static JAVASCRIPT: HostLanguage = HostLanguage { name: "JavaScript", release: release_value };

/// What a JS host value points at: the env the object lives in and a strong reference to it.
struct Held {
    state: Arc<EnvState>,
    object: Ref,
}

/// Deletes the reference on the env's JS thread (queued and the thread poked when dropped
/// elsewhere; nothing to do once the env is gone).
unsafe extern "C" fn release_value(value: *mut c_void) {
    // SAFETY: the box `hold` leaked, released once by its HostValue.
    let held = unsafe { Box::from_raw(value as *mut Held) };
    held.state.delete_reference_anywhere(held.object);
}

/// A new host value holding JS object `v`, whose constructor is called `type_name`.
pub fn hold(state: &EnvState, v: Value, type_name: &str) -> JsResult<Any> {
    let object = raw::strong_ref(state.env, v)?;
    let held = Box::into_raw(Box::new(Held { state: arc_of(state), object })) as *mut c_void;
    // SAFETY: the HostValue owns the box; `release_value` frees it and deletes the reference.
    Ok(Any::object(unsafe { HostValueObj::new(held, &JAVASCRIPT, type_name) }.into()))
}

/// The JS object a host value holds, when it is of this env; a TypeError otherwise.
pub fn value_of(state: &EnvState, value: &HostValueObj) -> JsResult<Value> {
    let held = value.value_for(&JAVASCRIPT)?;
    // SAFETY: JavaScript host values point at a `Held` box alive as long as the HostValue.
    let held = unsafe { &*(held as *const Held) };
    if !std::ptr::eq(Arc::as_ptr(&held.state), state) {
        return Err(Error::type_error(format!(
            "a JS {} held by native code belongs to another JS environment (a worker or the main thread) and cannot be used in this one",
            value.type_name()
        ))
        .into());
    }
    raw::reference_value(state.env, held.object)
}
