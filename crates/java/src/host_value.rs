//! Java objects held by native code: any object outside the converted kinds (a `Payload`, a
//! `BigInteger`, an `int[]`, a `Thread`) crosses as a `tether.HostValue` holding a JNI global
//! reference, and comes back to Java as the very same object (`echo(o) == o`).

use std::ffi::c_void;

use jni_sys::jobject;
use tether_core::host_value::{HostLanguage, HostValueObj};
use tether_core::object::ObjectHeader;
use tether_core::{Error, ObjectRef, Result};

use crate::attach;
use crate::jenv::Env;

/// Java, as the core's host values name it.
pub static JAVA: HostLanguage = HostLanguage { name: "Java", release: release_value };

/// Deletes the global reference on whatever thread drops the value (attached if needed; once
/// the JVM is gone there is nothing left to release).
unsafe extern "C" fn release_value(value: *mut c_void) {
    let _ = attach::with_env(|env| env.delete_global_ref(value as jobject));
}

/// An owned reference to a new host value holding `value`, whose class is `type_name`.
pub fn hold(env: Env, value: jobject, type_name: &str) -> Result<*mut ObjectHeader> {
    let global = env.new_global_ref(value);
    if global.is_null() {
        env.clear_exception();
        return Err(Error::runtime("out of JNI global references"));
    }
    // SAFETY: the HostValue owns the global reference; `release_value` deletes it.
    let held: ObjectRef = unsafe { HostValueObj::new(global as *mut c_void, &JAVA, type_name) }.into();
    Ok(held.into_raw())
}

/// The Java object a host value holds (a new local reference), or a TypeError for another
/// language's value.
pub fn value_of(env: Env, value: &HostValueObj) -> Result<jobject> {
    Ok(env.new_local_ref(value.value_for(&JAVA)? as jobject))
}
