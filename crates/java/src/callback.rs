//! Java callables as native Functions.
//!
//! A `TetherCallback` or `java.util.function.Function` passed to native code becomes a
//! Function whose data holds a JNI global reference to it. A registry maps each callable
//! (bucketed by `System.identityHashCode`, compared with `IsSameObject`) to its live Function,
//! so the same callable passed twice is the same native Function; and when that Function
//! comes back to Java, Java gets the original callable (`echo(cb) == cb`).
//!
//! The registry holds no reference: a Function's `drop_data` removes its entry before its
//! memory can be freed, and lookups only take a reference with a CAS that fails on zero.

use std::ffi::c_void;

use jni_sys::{jobject, jvalue};
use tether_core::arc::ObjectBox;
use tether_core::boundary::CallableRegistry;
use tether_core::containers::OpaqueObj;
use tether_core::error::catch_panic;
use tether_core::function::FunctionObj;
use tether_core::object::ObjectHeader;
use tether_core::{Any, AnyView, Error, Function, ObjectArc, ObjectRef, Result};

use crate::convert;
use crate::jenv::Env;
use crate::{attach, classes};

/// `OpaqueObj::owner` of objects that hold a JNI global reference.
pub const JVM_OWNER: u64 = 0x4a56_4d00; // "JVM\0"

struct CallbackData {
    global: jobject,
    id_hash: i32,
}

/// Every callable passed to native code, with its Function (keyed by its identity hash; the
/// handles are the Functions' global references, told apart with `IsSameObject`).
static CALLABLES: CallableRegistry = CallableRegistry::new();

/// Native name of every Function made from a Java callable (at most 7 bytes: stored inline).
const CALLBACK_NAME: &str = "java.cb";

/// An owned reference to the Function for Java callable `cb`, made on first use.
pub fn function_for(env: Env, cb: jobject, id_hash: i32) -> Result<*mut ObjectHeader> {
    let f = CALLABLES.function_for(
        id_hash as u32 as usize,
        |global| env.is_same_object(global as jobject, cb),
        || {
            let global = env.new_global_ref(cb);
            if global.is_null() {
                env.clear_exception();
                return Err(Error::runtime("out of JNI global references"));
            }
            let data = Box::into_raw(Box::new(CallbackData { global, id_hash })) as *mut c_void;
            // SAFETY: `call_java` reads exactly this data; `drop_callback` frees it, on any
            // thread. The native name is never shown (the Function comes back to Java as `cb`
            // itself), so it is a short inline string: no allocation per callable passed.
            let made =
                unsafe { Function::try_from_raw_parts(call_java, data, Some(drop_callback), CALLBACK_NAME, -1, 0) };
            match made {
                Ok(func) => Ok((func, global as usize)),
                Err(e) => {
                    // SAFETY: no Function took the box; still ours, with its global reference
                    // (released directly: `drop_callback` would also forget a registry entry,
                    // whose lock is held here).
                    drop(unsafe { Box::from_raw(data as *mut CallbackData) });
                    env.delete_global_ref(global);
                    Err(e)
                }
            }
        },
    )?;
    Ok(ObjectRef::from(f.0).into_raw())
}

/// The Java callable behind `obj` if it is one of ours (a global reference, borrowed).
pub fn original_callable(obj: &ObjectRef) -> Option<jobject> {
    let func = obj.downcast_ref::<FunctionObj>()?;
    if !std::ptr::eq(func.safe_call as *const (), call_java as *const ()) {
        return None;
    }
    // SAFETY: functions with our trampoline carry a `CallbackData`.
    Some(unsafe { (*(func.data as *const CallbackData)).global })
}

unsafe extern "C" fn drop_callback(data: *mut c_void) {
    // SAFETY: the box leaked in `function_for`, dropped once.
    let data = unsafe { Box::from_raw(data as *mut CallbackData) };
    CALLABLES.forget(data.id_hash as u32 as usize, data.global as usize);
    let global = data.global;
    // A failure here means no JVM any more: nothing left to release.
    let _ = attach::with_env(|env| env.delete_global_ref(global));
}

unsafe extern "C" fn release_global(ptr: *mut c_void) {
    let _ = attach::with_env(|env| env.delete_global_ref(ptr as jobject));
}

/// A native Error carrying Java throwable `t` (as a global reference in its payload), so the
/// same throwable comes back out where the error reaches Java.
pub fn error_from_throwable(env: Env, t: jobject, kind: &str, message: &str) -> Error {
    let global = env.new_global_ref(t);
    let payload = if global.is_null() {
        Any::none()
    } else {
        let opaque = OpaqueObj { ptr: global as *mut c_void, finalize: Some(release_global), owner: JVM_OWNER };
        // A payload that cannot be allocated releases the global reference (its finalizer
        // runs) and the error is the MemoryError.
        match tether_core::error::catch_out_of_memory(|| ObjectArc::new(opaque)) {
            Ok(payload) => Any::object(payload.into()),
            Err(e) => return e,
        }
    };
    Error::with_payload(kind, message, payload)
}

/// The Java throwable an Error carries, if a Java callback raised it (a global reference).
pub fn carried_throwable(err: &Error) -> Option<jobject> {
    let opaque = err.payload().view().downcast_ref::<OpaqueObj>()?;
    (opaque.owner == JVM_OWNER && !opaque.ptr.is_null()).then_some(opaque.ptr as jobject)
}

unsafe extern "C" fn call_java(handle: *mut ObjectHeader, args: *const AnyView<'_>, n: i32, result: *mut Any) -> i32 {
    let outcome = catch_panic(|| {
        // SAFETY: `handle` is a live Function made by `function_for`; `args` holds `n` cells.
        let (cb, args) = unsafe {
            let func = &(*(handle as *const ObjectBox<FunctionObj>)).value;
            let data = &*(func.data as *const CallbackData);
            let args = if n <= 0 { &[][..] } else { std::slice::from_raw_parts(args, n as usize) };
            (data.global, args)
        };
        attach::with_env(|env| invoke(env, cb, args))?
    });
    // SAFETY: the caller's result cell holds None and is ours to fill.
    unsafe { tether_core::function::finish_call(outcome, result) }
}

/// Where `Callbacks` writes a callback's outcome (`Native.putResult` / `putThrown`): a cell
/// on the stack of the native frame that calls it, passed to Java as its address. None until
/// written.
pub type ResultSlot = Option<Result<Any>>;

fn invoke(env: Env, cb: jobject, args: &[AnyView<'_>]) -> Result<Any> {
    let c = classes::get();
    let mut slot: ResultSlot = None;
    let address = jvalue { j: &mut slot as *mut ResultSlot as i64 };
    if args.is_empty() {
        // No local reference is made here: no frame needed.
        // SAFETY: `Callbacks.invoke0(Object, long) -> void`, resolved at init; `slot` outlives
        // the call, and only `putResult`/`putThrown` on this thread write it, during it.
        unsafe { env.call_static_void(c.callbacks, c.callbacks_invoke0, &[jvalue { l: cb }, address]) };
    } else {
        if !env.push_local_frame(args.len() as i32 + 16) {
            env.clear_exception();
            return Err(Error::runtime("out of JNI local references"));
        }
        let called = arguments_array(env, args).map(|array| {
            // SAFETY: `Callbacks.invoke(Object, Object[], long) -> void`, resolved at init;
            // `slot` as above.
            unsafe {
                env.call_static_void(c.callbacks, c.callbacks_invoke, &[jvalue { l: cb }, jvalue { l: array }, address])
            }
        });
        env.pop_local_frame(std::ptr::null_mut());
        called?;
    }
    if let Some(t) = env.take_exception() {
        // Callbacks catches everything it can; this is an error it could not handle.
        let error = error_from_throwable(env, t, "RuntimeError", "a Java callback failed");
        env.delete_local_ref(t);
        return Err(error);
    }
    slot.unwrap_or_else(|| Err(Error::runtime("a Java callback returned no outcome")))
}

/// The callback's arguments as a Java `Object[]` (a local reference of the caller's frame).
fn arguments_array(env: Env, args: &[AnyView<'_>]) -> Result<jobject> {
    let array = env.new_object_array(args.len() as i32, classes::get().object);
    if array.is_null() {
        env.clear_exception();
        return Err(Error::runtime("cannot allocate callback arguments"));
    }
    for (i, a) in args.iter().enumerate() {
        let j = convert::to_java(env, tether_core::error::catch_out_of_memory(|| a.to_owned_any())?)?;
        env.object_array_set(array, i as i32, j);
        env.delete_local_ref(j);
    }
    Ok(array)
}

/// `Native.putResult`: write a callback's result, encoded by `Marshal` (`kind`, `bits`, `r`),
/// into `slot` as an owned value (or the error decoding it raised).
///
/// # Safety
/// `slot` is the [`ResultSlot`] of a callback running on this thread ([`invoke`]); Java keeps
/// `r` reachable for this call and encoded the value as an argument.
pub unsafe fn put_result(env: Env, slot: *mut ResultSlot, kind: i32, bits: i64, r: jobject) {
    let mut hold = Any::none();
    // SAFETY: Java encoded the result as an argument and keeps `r` reachable (the caller's).
    let outcome = unsafe { convert::decode(env, kind, bits, r, &mut hold) }.map(|view| view.to_owned_any());
    // SAFETY: the slot of the running callback (this function's contract).
    unsafe { *slot = Some(outcome) };
}

/// `Native.putThrown`: the callback threw `t`; write the Error carrying it into `slot`.
///
/// # Safety
/// As [`put_result`].
pub unsafe fn put_thrown(env: Env, slot: *mut ResultSlot, t: jobject, kind: jobject, message: jobject) {
    let error = error_from_throwable(env, t, &env.get_string(kind), &env.get_string(message));
    // SAFETY: the slot of the running callback (this function's contract).
    unsafe { *slot = Some(Err(error)) };
}
