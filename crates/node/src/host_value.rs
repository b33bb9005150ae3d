//! JS objects held by native code: a class instance, a Date, a Promise (any object that is not
//! a plain object, an array, a Map, a Set or bytes, which convert) crosses as a
//! `tether.HostValue` holding a strong reference, and comes back to its own env as the very same
//! object (`echo(o) === o`).

use std::ffi::c_void;

use tether_core::host_value::{HostLanguage, HostValueObj};
use tether_core::{Any, Error};

use crate::env::{EnvState, HeldRef};
use crate::raw::{JsResult, Value};

/// JavaScript, as the core's host values name it (every env; a value knows its own env).
pub static JAVASCRIPT: HostLanguage = HostLanguage { name: "JavaScript", release: release_value };

/// Drops the `HeldRef` a JavaScript host value points at (its env deletes the reference).
unsafe extern "C" fn release_value(value: *mut c_void) {
    // SAFETY: the box `hold` leaked, released once by its HostValue.
    drop(unsafe { Box::from_raw(value as *mut HeldRef) });
}

/// A new host value holding JS object `v`, whose constructor is called `type_name`.
pub fn hold(state: &EnvState, v: Value, type_name: &str) -> JsResult<Any> {
    let held = Box::into_raw(Box::new(HeldRef::new(state, v)?)) as *mut c_void;
    // SAFETY: the HostValue owns the box; `release_value` frees it (deleting the reference).
    Ok(Any::object(unsafe { HostValueObj::new(held, &JAVASCRIPT, type_name) }.into()))
}

/// The JS object a host value holds, when it is of this env; a TypeError otherwise.
pub fn value_of(state: &EnvState, value: &HostValueObj) -> JsResult<Value> {
    let held = value.value_for(&JAVASCRIPT)?;
    // SAFETY: JavaScript host values point at a `HeldRef` box alive as long as the HostValue.
    let held = unsafe { &*(held as *const HeldRef) };
    held.value_in(state).unwrap_or_else(|| {
        Err(Error::type_error(format!(
            "a JS {} held by native code belongs to another JS environment (a worker or the main thread) and cannot be used in this one",
            value.type_name()
        ))
        .into())
    })
}
