#![allow(clippy::not_unsafe_ptr_arg_deref)] // JNI entry points: the JVM passes valid pointers by contract
//! The raw JNI peer: natives of `dev.tether.bench.JniRawPeer` written against jni-sys only,
//! with no per-call bookkeeping (the JVM floor).

use std::sync::atomic::{AtomicPtr, Ordering};

use jni_sys::{jclass, jlong, jmethodID, jobject, JNIEnv};

/// W1: return the argument itself.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniRawPeer_echo(_env: *mut JNIEnv, _class: jclass, x: jobject) -> jobject {
    x
}

/// W3: three ints in, one int out.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniRawPeer_add3(
    _env: *mut JNIEnv,
    _class: jclass,
    a: jlong,
    b: jlong,
    c: jlong,
) -> jlong {
    a.wrapping_add(b).wrapping_add(c)
}

/// `Supplier.get`'s method id, looked up once (method ids stay valid while the class is loaded,
/// and java.util.function.Supplier is a bootstrap class that is never unloaded).
static SUPPLIER_GET: AtomicPtr<std::ffi::c_void> = AtomicPtr::new(std::ptr::null_mut());

/// W7: call `f.get()` (a `java.util.function.Supplier`) from native code.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniRawPeer_call(env: *mut JNIEnv, _class: jclass, f: jobject) -> jobject {
    // SAFETY: `env` is the valid JNIEnv of this native call; the names are NUL-terminated; a
    // failed lookup leaves a pending exception, which the JVM throws when we return null.
    unsafe {
        let functions = &**env;
        let mut get = SUPPLIER_GET.load(Ordering::Acquire) as jmethodID;
        if get.is_null() {
            let class = (functions.v1_1.FindClass)(env, c"java/util/function/Supplier".as_ptr());
            if class.is_null() {
                return std::ptr::null_mut();
            }
            get = (functions.v1_1.GetMethodID)(env, class, c"get".as_ptr(), c"()Ljava/lang/Object;".as_ptr());
            (functions.v1_1.DeleteLocalRef)(env, class);
            if get.is_null() {
                return std::ptr::null_mut();
            }
            SUPPLIER_GET.store(get as *mut _, Ordering::Release);
        }
        (functions.v1_1.CallObjectMethodA)(env, f, get, std::ptr::null())
    }
}
