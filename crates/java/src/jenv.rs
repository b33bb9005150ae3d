//! A thin, copyable handle on the raw JNI function table (jni-sys), for the hot paths.
//!
//! Each method is one JNI call. The jni crate's `Env` adds per-call attach/frame bookkeeping
//! (~60 ns, docs/benchmarks.md); the call, return and tie paths cannot afford it, so they use this.

use std::marker::PhantomData;

use jni_sys::{
    jclass, jfieldID, jint, jlong, jmethodID, jobject, jobjectArray, jsize, jstring, jthrowable, jvalue, JNIEnv,
};

/// The calling thread's JNI environment, branded with the scope it is valid for (a native
/// method's call, an attached closure), as jni-rs 0.22's `Env<'local>` is: it is made only by
/// the unsafe [`Env::from_raw`], so safe code cannot reach a JNI function through a dangling or
/// foreign env, and it is neither `Send` nor `Sync` (a JNIEnv belongs to one thread).
#[derive(Clone, Copy)]
pub struct Env<'local> {
    raw: *mut JNIEnv,
    _scope: PhantomData<(&'local (), *mut ())>,
}

macro_rules! jcall {
    ($env:expr, $name:ident $(, $arg:expr)*) => {{
        let env: *mut JNIEnv = $env;
        // SAFETY: `env` is the live JNIEnv of the current thread (the contract of `Env`);
        // every JNI >= 1.6 VM fills these table entries.
        unsafe { ((**env).v1_6.$name)(env $(, $arg)*) }
    }};
}

impl<'local> Env<'local> {
    /// # Safety
    /// `raw` is the live JNIEnv of the calling thread, and stays valid for `'local` (the native
    /// method call or attached scope that handed it over).
    #[inline(always)]
    pub unsafe fn from_raw(raw: *mut JNIEnv) -> Env<'local> {
        Env { raw, _scope: PhantomData }
    }

    #[inline(always)]
    pub fn as_raw(self) -> *mut JNIEnv {
        self.raw
    }

    pub fn new_local_ref(self, obj: jobject) -> jobject {
        jcall!(self.raw, NewLocalRef, obj)
    }
    pub fn delete_local_ref(self, obj: jobject) {
        if !obj.is_null() {
            jcall!(self.raw, DeleteLocalRef, obj)
        }
    }
    pub fn new_global_ref(self, obj: jobject) -> jobject {
        jcall!(self.raw, NewGlobalRef, obj)
    }
    pub fn delete_global_ref(self, obj: jobject) {
        jcall!(self.raw, DeleteGlobalRef, obj)
    }
    pub fn new_weak_global_ref(self, obj: jobject) -> jobject {
        jcall!(self.raw, NewWeakGlobalRef, obj)
    }
    pub fn delete_weak_global_ref(self, obj: jobject) {
        jcall!(self.raw, DeleteWeakGlobalRef, obj)
    }
    pub fn is_same_object(self, a: jobject, b: jobject) -> bool {
        jcall!(self.raw, IsSameObject, a, b)
    }
    pub fn exception_check(self) -> bool {
        jcall!(self.raw, ExceptionCheck)
    }
    /// Take the pending exception (cleared), if any.
    pub fn take_exception(self) -> Option<jthrowable> {
        if !self.exception_check() {
            return None;
        }
        let t = jcall!(self.raw, ExceptionOccurred);
        jcall!(self.raw, ExceptionClear);
        Some(t)
    }
    pub fn clear_exception(self) {
        jcall!(self.raw, ExceptionClear)
    }
    pub fn throw(self, t: jthrowable) {
        jcall!(self.raw, Throw, t);
    }
    pub fn push_local_frame(self, capacity: jint) -> bool {
        jcall!(self.raw, PushLocalFrame, capacity) == 0
    }
    pub fn pop_local_frame(self, result: jobject) -> jobject {
        jcall!(self.raw, PopLocalFrame, result)
    }
    /// # Safety
    /// `method` is a static method of `class` whose parameters match `args` and which returns
    /// an object.
    pub unsafe fn call_static_object(self, class: jclass, method: jmethodID, args: &[jvalue]) -> jobject {
        jcall!(self.raw, CallStaticObjectMethodA, class, method, args.as_ptr())
    }
    pub fn array_length(self, array: jobject) -> jsize {
        jcall!(self.raw, GetArrayLength, array)
    }
    pub fn byte_array_to_vec(self, array: jobject) -> Vec<u8> {
        let n = self.array_length(array).max(0) as usize;
        let mut out = vec![0u8; n];
        jcall!(self.raw, GetByteArrayRegion, array, 0, n as jsize, out.as_mut_ptr() as *mut i8);
        out
    }
    pub fn new_byte_array(self, bytes: &[u8]) -> jobject {
        let a = jcall!(self.raw, NewByteArray, bytes.len() as jsize);
        if !a.is_null() {
            jcall!(self.raw, SetByteArrayRegion, a, 0, bytes.len() as jsize, bytes.as_ptr() as *const i8);
        }
        a
    }
    pub fn long_array_region(self, array: jobject, out: &mut [jlong]) {
        jcall!(self.raw, GetLongArrayRegion, array, 0, out.len() as jsize, out.as_mut_ptr());
    }
    pub fn int_array_region(self, array: jobject, out: &mut [jint]) {
        jcall!(self.raw, GetIntArrayRegion, array, 0, out.len() as jsize, out.as_mut_ptr());
    }
    /// A Java string from UTF-8 (re-encoded to UTF-16, so every code point round-trips).
    pub fn new_string(self, s: &str) -> jstring {
        let utf16: Vec<u16> = s.encode_utf16().collect();
        jcall!(self.raw, NewString, utf16.as_ptr(), utf16.len() as jsize)
    }
    pub fn new_object_array(self, n: jsize, class: jclass) -> jobjectArray {
        jcall!(self.raw, NewObjectArray, n, class, std::ptr::null_mut())
    }
    pub fn object_array_get(self, array: jobject, i: jsize) -> jobject {
        jcall!(self.raw, GetObjectArrayElement, array, i)
    }
    pub fn object_array_set(self, array: jobject, i: jsize, v: jobject) {
        jcall!(self.raw, SetObjectArrayElement, array, i, v)
    }
    pub fn find_class(self, name: &std::ffi::CStr) -> jclass {
        jcall!(self.raw, FindClass, name.as_ptr())
    }
    pub fn field_id(self, class: jclass, name: &std::ffi::CStr, sig: &std::ffi::CStr) -> jfieldID {
        jcall!(self.raw, GetFieldID, class, name.as_ptr(), sig.as_ptr())
    }
    /// HotSpot answers this without a thread-state transition (`UseFastJNIAccessors`, on by
    /// default: a speculative read checked against the safepoint counter).
    ///
    /// # Safety
    /// `field` is a `long` field of `obj`'s class (or a superclass); `obj` is a live reference.
    pub unsafe fn get_long_field(self, obj: jobject, field: jfieldID) -> jlong {
        jcall!(self.raw, GetLongField, obj, field)
    }
    /// # Safety
    /// `field` is a `long` field of `obj`'s class (or a superclass).
    pub unsafe fn set_long_field(self, obj: jobject, field: jfieldID, value: jlong) {
        jcall!(self.raw, SetLongField, obj, field, value)
    }
    pub fn static_method_id(self, class: jclass, name: &std::ffi::CStr, sig: &std::ffi::CStr) -> jmethodID {
        jcall!(self.raw, GetStaticMethodID, class, name.as_ptr(), sig.as_ptr())
    }
}

impl Env<'_> {
    /// A Rust string from a Java string (UTF-16 decoded; "" for null).
    pub fn get_string(self, s: jobject) -> String {
        if s.is_null() {
            return String::new();
        }
        let n = jcall!(self.raw, GetStringLength, s);
        let mut buf = vec![0u16; n.max(0) as usize];
        jcall!(self.raw, GetStringRegion, s, 0, n, buf.as_mut_ptr());
        String::from_utf16_lossy(&buf)
    }
    /// Throw a new exception of class `class` (a JNI class name such as `java/lang/Error`).
    pub fn throw_new(self, class: &std::ffi::CStr, message: &str) {
        let cls = self.find_class(class);
        if cls.is_null() {
            return; // FindClass left its own exception pending
        }
        let msg = std::ffi::CString::new(message.replace('\0', "?")).unwrap_or_default();
        jcall!(self.raw, ThrowNew, cls, msg.as_ptr());
        self.delete_local_ref(cls);
    }
}
