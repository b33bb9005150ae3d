//! A thin, copyable handle on the raw JNI function table (jni-sys), for the hot paths.
//!
//! Each method is one JNI call. The jni crate's `Env` adds per-call attach/frame bookkeeping
//! (~60 ns, docs/benchmarks.md); the call, return and tie paths cannot afford it, so they use this.

use jni_sys::{jclass, jint, jlong, jmethodID, jobject, jobjectArray, jsize, jstring, jthrowable, jvalue, JNIEnv};

/// The calling thread's JNI environment. Only valid on the thread it was handed to.
#[derive(Clone, Copy)]
pub struct Env(pub *mut JNIEnv);

macro_rules! jcall {
    ($env:expr, $name:ident $(, $arg:expr)*) => {{
        let env: *mut JNIEnv = $env;
        // SAFETY: `env` is the live JNIEnv of the current thread (the contract of `Env`);
        // every JNI >= 1.6 VM fills these table entries.
        unsafe { ((**env).v1_6.$name)(env $(, $arg)*) }
    }};
}

impl Env {
    pub fn new_local_ref(self, obj: jobject) -> jobject {
        jcall!(self.0, NewLocalRef, obj)
    }
    pub fn delete_local_ref(self, obj: jobject) {
        if !obj.is_null() {
            jcall!(self.0, DeleteLocalRef, obj)
        }
    }
    pub fn new_global_ref(self, obj: jobject) -> jobject {
        jcall!(self.0, NewGlobalRef, obj)
    }
    pub fn delete_global_ref(self, obj: jobject) {
        jcall!(self.0, DeleteGlobalRef, obj)
    }
    pub fn new_weak_global_ref(self, obj: jobject) -> jobject {
        jcall!(self.0, NewWeakGlobalRef, obj)
    }
    pub fn delete_weak_global_ref(self, obj: jobject) {
        jcall!(self.0, DeleteWeakGlobalRef, obj)
    }
    pub fn is_same_object(self, a: jobject, b: jobject) -> bool {
        jcall!(self.0, IsSameObject, a, b)
    }
    pub fn exception_check(self) -> bool {
        jcall!(self.0, ExceptionCheck)
    }
    /// Take the pending exception (cleared), if any.
    pub fn take_exception(self) -> Option<jthrowable> {
        if !self.exception_check() {
            return None;
        }
        let t = jcall!(self.0, ExceptionOccurred);
        jcall!(self.0, ExceptionClear);
        Some(t)
    }
    pub fn clear_exception(self) {
        jcall!(self.0, ExceptionClear)
    }
    pub fn throw(self, t: jthrowable) {
        jcall!(self.0, Throw, t);
    }
    pub fn push_local_frame(self, capacity: jint) -> bool {
        jcall!(self.0, PushLocalFrame, capacity) == 0
    }
    pub fn pop_local_frame(self, result: jobject) -> jobject {
        jcall!(self.0, PopLocalFrame, result)
    }
    /// # Safety
    /// `method` is a static method of `class` whose parameters match `args` and which returns
    /// an object.
    pub unsafe fn call_static_object(self, class: jclass, method: jmethodID, args: &[jvalue]) -> jobject {
        jcall!(self.0, CallStaticObjectMethodA, class, method, args.as_ptr())
    }
    pub fn array_length(self, array: jobject) -> jsize {
        jcall!(self.0, GetArrayLength, array)
    }
    pub fn byte_array_to_vec(self, array: jobject) -> Vec<u8> {
        let n = self.array_length(array).max(0) as usize;
        let mut out = vec![0u8; n];
        jcall!(self.0, GetByteArrayRegion, array, 0, n as jsize, out.as_mut_ptr() as *mut i8);
        out
    }
    pub fn new_byte_array(self, bytes: &[u8]) -> jobject {
        let a = jcall!(self.0, NewByteArray, bytes.len() as jsize);
        if !a.is_null() {
            jcall!(self.0, SetByteArrayRegion, a, 0, bytes.len() as jsize, bytes.as_ptr() as *const i8);
        }
        a
    }
    pub fn long_array_region(self, array: jobject, out: &mut [jlong]) {
        jcall!(self.0, GetLongArrayRegion, array, 0, out.len() as jsize, out.as_mut_ptr());
    }
    pub fn int_array_region(self, array: jobject, out: &mut [jint]) {
        jcall!(self.0, GetIntArrayRegion, array, 0, out.len() as jsize, out.as_mut_ptr());
    }
    pub fn new_long_array(self, n: jsize) -> jobject {
        jcall!(self.0, NewLongArray, n)
    }
    /// A Java string from UTF-8 (re-encoded to UTF-16, so every code point round-trips).
    pub fn new_string(self, s: &str) -> jstring {
        let utf16: Vec<u16> = s.encode_utf16().collect();
        jcall!(self.0, NewString, utf16.as_ptr(), utf16.len() as jsize)
    }
    pub fn new_object_array(self, n: jsize, class: jclass) -> jobjectArray {
        jcall!(self.0, NewObjectArray, n, class, std::ptr::null_mut())
    }
    pub fn object_array_get(self, array: jobject, i: jsize) -> jobject {
        jcall!(self.0, GetObjectArrayElement, array, i)
    }
    pub fn object_array_set(self, array: jobject, i: jsize, v: jobject) {
        jcall!(self.0, SetObjectArrayElement, array, i, v)
    }
    pub fn find_class(self, name: &std::ffi::CStr) -> jclass {
        jcall!(self.0, FindClass, name.as_ptr())
    }
    pub fn static_method_id(self, class: jclass, name: &std::ffi::CStr, sig: &std::ffi::CStr) -> jmethodID {
        jcall!(self.0, GetStaticMethodID, class, name.as_ptr(), sig.as_ptr())
    }
}

impl Env {
    /// A Rust string from a Java string (UTF-16 decoded; "" for null).
    pub fn get_string(self, s: jobject) -> String {
        if s.is_null() {
            return String::new();
        }
        let n = jcall!(self.0, GetStringLength, s);
        let mut buf = vec![0u16; n.max(0) as usize];
        jcall!(self.0, GetStringRegion, s, 0, n, buf.as_mut_ptr());
        String::from_utf16_lossy(&buf)
    }
    /// Throw a new exception of class `class` (a JNI class name such as `java/lang/Error`).
    pub fn throw_new(self, class: &std::ffi::CStr, message: &str) {
        let cls = self.find_class(class);
        if cls.is_null() {
            return; // FindClass left its own exception pending
        }
        let msg = std::ffi::CString::new(message.replace('\0', "?")).unwrap_or_default();
        jcall!(self.0, ThrowNew, cls, msg.as_ptr());
        self.delete_local_ref(cls);
    }
}
