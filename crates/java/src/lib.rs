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
//! - [`critical`]: the entries of `java.lang.foreign` critical downcalls (JDK 22+), for leaf Functions

mod attach;
mod callback;
mod classes;
mod convert;
mod critical;
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
        callback::register_safe_call();
        // Another frontend's tether-core runs this process (Python started this JVM through
        // JPype): this copy becomes its guest (objects, types and modules shared; every object
        // tied through the side table, no allocator of ours). One of another ABI version cannot
        // be shared: `Native.init()` refuses to start with the reason.
        match tether_core::plugin::adopt_process_host() {
            Ok(Some(_host)) => return Ok(tether_core::boundary::NO_SLOTS),
            Ok(None) => {}
            Err(other) => {
                let _ = OTHER_HOST.set(other);
                return Ok(0);
            }
        }
        tether_core::init();
        tie::FRONTEND.install_allocator(None)
    });
    match loaded {
        Ok(Ok(_tag)) => JNI_VERSION_1_8,
        _ => JNI_ERR,
    }
}

/// The other tether host found at load that could not be shared, if any (see `JNI_OnLoad`).
static OTHER_HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Why this frontend cannot start, if another tether host was found at load.
pub(crate) fn start_refusal() -> Option<String> {
    OTHER_HOST.get().map(|other| tether_core::plugin::other_host_error("tether_java", other).message().to_string())
}
