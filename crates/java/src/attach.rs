//! The JavaVM, and a JNIEnv for whatever thread native code happens to run on.
//!
//! Java threads already have an env. A native thread (one `testing.call_in_thread` spawned,
//! or the thread that drops the last reference to a callback) is attached through the jni
//! crate's permanent attachment, whose thread-local guard detaches it when the thread exits.

use std::sync::atomic::{AtomicPtr, Ordering};

use jni_sys::{JavaVM, JNI_OK, JNI_VERSION_1_8};
use tether_core::{Error, Result};

use crate::jenv::Env;

static VM: AtomicPtr<JavaVM> = AtomicPtr::new(std::ptr::null_mut());

pub fn set_vm(vm: *mut JavaVM) {
    VM.store(vm, Ordering::Release);
}

/// The current thread's env if it is attached.
fn current_env(vm: *mut JavaVM) -> Option<*mut jni_sys::JNIEnv> {
    let mut penv: *mut std::ffi::c_void = std::ptr::null_mut();
    // SAFETY: `vm` is the VM handed to JNI_OnLoad, valid for the process; GetEnv only writes
    // `penv`.
    let rc = unsafe { ((**vm).v1_4.GetEnv)(vm, &mut penv, JNI_VERSION_1_8) };
    (rc == JNI_OK && !penv.is_null()).then_some(penv as *mut jni_sys::JNIEnv)
}

/// Run `f` with an env for this thread, attaching it first if needed.
pub fn with_env<R>(f: impl FnOnce(Env) -> R) -> Result<R> {
    let vm = VM.load(Ordering::Acquire);
    if vm.is_null() {
        return Err(Error::runtime("the JVM is not available (tether_java was not loaded by a JVM)"));
    }
    if let Some(raw) = current_env(vm) {
        // SAFETY: this thread's env, valid while it stays attached, which it does for `f`.
        return Ok(f(unsafe { Env::from_raw(raw) }));
    }
    // SAFETY: `vm` is a valid JavaVM pointer for the life of the process.
    let jvm = unsafe { jni::JavaVM::from_raw(vm) };
    jvm.attach_current_thread(|env| {
        // SAFETY: the attachment's env, valid for this closure on this thread.
        let env = unsafe { Env::from_raw(env.get_raw()) };
        Ok::<R, jni::errors::Error>(f(env))
    })
    .map_err(|e| Error::runtime(format!("cannot attach this native thread to the JVM: {e}")))
}
