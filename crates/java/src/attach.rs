//! The JavaVM, and a JNIEnv for whatever thread native code happens to run on.
//!
//! Java threads already have an env. A native thread (one `testing.call_in_thread` spawned,
//! or the thread that drops the last reference to a callback) is attached as a daemon thread
//! and detached by a thread-local guard when the thread exits.

use std::sync::atomic::{AtomicPtr, Ordering};

use std::cell::Cell;

use jni_sys::{JavaVM, JavaVMAttachArgs, JNI_OK, JNI_VERSION_1_8};
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

/// A native thread this library attached, detached when the thread exits.
struct Attached(Cell<*mut JavaVM>);

impl Drop for Attached {
    fn drop(&mut self) {
        let vm = self.0.get();
        if !vm.is_null() {
            // SAFETY: `vm` attached this thread (`with_env`) and is valid for the process; a VM
            // already destroyed answers JNI_ERR and touches nothing.
            unsafe { ((**vm).v1_4.DetachCurrentThread)(vm) };
        }
    }
}

thread_local!(static ATTACHED: Attached = const { Attached(Cell::new(std::ptr::null_mut())) });

/// Run `f` with an env for this thread, attaching it first if needed. A native thread is
/// attached as a daemon: a thread that keeps calling Java (a native worker looping over
/// callbacks) must not keep the VM from exiting when `main` returns (`DestroyJavaVM` waits
/// for every non-daemon thread, so the VM hung).
///
/// Refused inside a marked leaf call (`critical.rs`): a critical downcall's thread is in the
/// Java state, where no JNI function may run, and the spare lent to a marked call goes back
/// with a bare store, which Java code run meanwhile could race (a leaf Function that calls
/// back breaks its promise).
pub fn with_env<R>(f: impl FnOnce(Env) -> R) -> Result<R> {
    if crate::critical::in_marked_call() {
        return Err(Error::runtime(
            "a leaf Function called into the JVM (a callback, or releasing a Java reference) inside a leaf call; a leaf must not",
        ));
    }
    let vm = VM.load(Ordering::Acquire);
    if vm.is_null() {
        return Err(Error::runtime("the JVM is not available (tether_java was not loaded by a JVM)"));
    }
    if let Some(raw) = current_env(vm) {
        // SAFETY: this thread's env, valid while it stays attached, which it does for `f`.
        return Ok(f(unsafe { Env::from_raw(raw) }));
    }
    let mut penv: *mut std::ffi::c_void = std::ptr::null_mut();
    let mut args =
        JavaVMAttachArgs { version: JNI_VERSION_1_8, name: std::ptr::null_mut(), group: std::ptr::null_mut() };
    // SAFETY: `vm` is valid for the process; the call writes `penv` only.
    let rc = unsafe {
        ((**vm).v1_4.AttachCurrentThreadAsDaemon)(vm, &mut penv, &mut args as *mut JavaVMAttachArgs as *mut _)
    };
    if rc != JNI_OK || penv.is_null() {
        return Err(Error::runtime(format!(
            "cannot attach this native thread to the JVM (AttachCurrentThreadAsDaemon returned {rc}; is the JVM shutting down?)"
        )));
    }
    // Detached when the thread exits; a thread already tearing down its thread-locals detaches
    // right after `f` instead.
    let detach_at_exit = ATTACHED.try_with(|a| a.0.set(vm)).is_ok();
    // SAFETY: the env this thread was just attached with, valid until it is detached.
    let out = f(unsafe { Env::from_raw(penv as *mut jni_sys::JNIEnv) });
    if !detach_at_exit {
        // SAFETY: attached above, on this thread.
        unsafe { ((**vm).v1_4.DetachCurrentThread)(vm) };
    }
    Ok(out)
}
