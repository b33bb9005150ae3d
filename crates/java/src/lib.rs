//! tether-java: the JVM frontend of tether (`libtether_java.so`, loaded by `dev.tether.ffi`).
//!
//! Module map:
//! - [`jenv`]: raw JNI calls (jni-sys) for the hot paths
//! - [`attach`]: the JavaVM and env lookup/attachment for native threads (jni crate)
//! - [`classes`]: Java classes and methods resolved once at init
//! - [`tie`]: the core tying state machine with JNI weak references as slot words
//! - [`convert`]: argument decoding and result conversion
//! - [`callback`]: Java callables as native Functions; Java exceptions inside native Errors
//! - [`host_value`]: any other Java object held by native code, coming back as itself
//! - [`errors`]: native Errors to Java exceptions
//! - [`natives`]: the `native` methods of `dev.tether.ffi.Native`

mod attach;
mod callback;
mod classes;
mod convert;
mod errors;
mod host_value;
mod jenv;
mod natives;
mod tie;

use jni_sys::{jint, JavaVM, JNI_ERR, JNI_VERSION_1_8};

/// Called by the JVM when `System.load` loads this library: initialise the core (its
/// `testing` registrations are made with the builtin allocator, so they are tied through the
/// side table), then install the frontend allocator so every later object carries a slot.
#[no_mangle]
pub extern "system" fn JNI_OnLoad(vm: *mut JavaVM, _reserved: *mut std::ffi::c_void) -> jint {
    let loaded = std::panic::catch_unwind(|| {
        attach::set_vm(vm);
        tether_core::init();
        tie::FRONTEND.install_allocator(None)
    });
    match loaded {
        Ok(Ok(_tag)) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}
