//! Java classes and methods the native side calls, resolved once by `Native.init()` and kept
//! as global references for the life of the process.

use std::ffi::CStr;
use std::sync::OnceLock;

use jni_sys::{jclass, jfieldID, jmethodID, jobject};

use crate::jenv::Env;

pub struct Classes {
    pub object: jclass,
    pub string: jclass,
    pub long: jclass,
    pub long_value_of: jmethodID,
    pub double: jclass,
    pub double_value_of: jmethodID,
    pub boolean: jclass,
    pub boolean_value_of: jmethodID,
    pub wrappers: jclass,
    pub wrappers_create: jmethodID,
    pub wrappers_adopt: jmethodID,
    pub callbacks: jclass,
    /// `Callbacks.invoke0(Object) -> Object` (its slot the thread's current one) and
    /// `Callbacks.invoke(Object, Object[], long) -> Object` (a `TetherInstance` result itself,
    /// else null with the outcome in the slot).
    pub callbacks_invoke0: jmethodID,
    pub callbacks_invoke: jmethodID,
    pub errors: jclass,
    pub errors_create: jmethodID,
    pub marshal: jclass,
    pub marshal_list_items: jmethodID,
    pub marshal_map_items: jmethodID,
    /// `TetherInstance.handle` and `TetherInstance.word` (`long`s): a constructor's wrapper
    /// made by Java before the call gets them written here (`tie::to_wrapper_preset`), no upcall;
    /// a callback's `TetherInstance` result is read through them (`callback::instance_result`).
    pub instance_handle: jfieldID,
    pub instance_word: jfieldID,
    /// Global refs to `Long.valueOf(i)` for i in [`SMALL_LONG_MIN`, `SMALL_LONG_MAX`]: the very
    /// objects Java's own boxing cache returns, handed out without an upcall per result.
    pub small_longs: Vec<jobject>,
}

pub const SMALL_LONG_MIN: i64 = -128;
pub const SMALL_LONG_MAX: i64 = 127;

// SAFETY: the class handles are JNI global references and the method IDs are VM-wide
// constants; both are valid on every thread.
unsafe impl Send for Classes {}
// SAFETY: global references and method IDs may be used from any thread at once, and nothing
// here is mutated after `init`.
unsafe impl Sync for Classes {}

static CLASSES: OnceLock<Classes> = OnceLock::new();

/// The resolved classes. `Native.init()` runs before any other native method can be called
/// (it is in `Native`'s static initialiser), so this never fails after loading.
#[inline]
pub fn get() -> &'static Classes {
    CLASSES.get().expect("dev.tether.ffi.Native.init() has run")
}

fn global_class(env: Env, name: &CStr) -> Result<jclass, String> {
    let local = found(env, env.find_class(name), || format!("class {name:?} not found"))?;
    let global = env.new_global_ref(local);
    env.delete_local_ref(local);
    Ok(global)
}

fn instance_field(env: Env, class: jclass, name: &CStr, sig: &CStr) -> Result<jfieldID, String> {
    found(env, env.field_id(class, name, sig), || format!("field {name:?} {sig:?} not found"))
}

fn static_method(env: Env, class: jclass, name: &CStr, sig: &CStr) -> Result<jmethodID, String> {
    found(env, env.static_method_id(class, name, sig), || format!("static method {name:?}{sig:?} not found"))
}

/// A JNI lookup's result, or `missing()` (with the pending exception the failed lookup left
/// cleared) when it is null.
fn found<T>(env: Env, id: *mut T, missing: impl FnOnce() -> String) -> Result<*mut T, String> {
    if id.is_null() {
        env.clear_exception();
        return Err(missing());
    }
    Ok(id)
}

/// Resolve everything (idempotent).
pub fn init(env: Env) -> Result<(), String> {
    if CLASSES.get().is_some() {
        return Ok(());
    }
    let long = global_class(env, c"java/lang/Long")?;
    let double = global_class(env, c"java/lang/Double")?;
    let boolean = global_class(env, c"java/lang/Boolean")?;
    let wrappers = global_class(env, c"dev/tether/ffi/Wrappers")?;
    let callbacks = global_class(env, c"dev/tether/ffi/Callbacks")?;
    let errors = global_class(env, c"dev/tether/ffi/Errors")?;
    let marshal = global_class(env, c"dev/tether/ffi/Marshal")?;
    let instance = global_class(env, c"dev/tether/ffi/TetherInstance")?;
    let instance_handle = instance_field(env, instance, c"handle", c"J")?;
    let instance_word = instance_field(env, instance, c"word", c"J")?;
    // Field IDs stay valid while the class is loaded; `wrappers` and the others keep the
    // frontend's class loader, and so TetherInstance, alive.
    env.delete_global_ref(instance);
    let long_value_of = static_method(env, long, c"valueOf", c"(J)Ljava/lang/Long;")?;
    let mut small_longs = Vec::with_capacity((SMALL_LONG_MAX - SMALL_LONG_MIN + 1) as usize);
    for i in SMALL_LONG_MIN..=SMALL_LONG_MAX {
        // SAFETY: `valueOf(J)` resolved on Long with this signature just above.
        let boxed = unsafe { env.call_static_object(long, long_value_of, &[jni_sys::jvalue { j: i }]) };
        let boxed = found(env, boxed, || format!("Long.valueOf({i}) failed"))?;
        small_longs.push(env.new_global_ref(boxed));
        env.delete_local_ref(boxed);
    }
    let classes = Classes {
        object: global_class(env, c"java/lang/Object")?,
        string: global_class(env, c"java/lang/String")?,
        long,
        long_value_of,
        double,
        double_value_of: static_method(env, double, c"valueOf", c"(D)Ljava/lang/Double;")?,
        boolean,
        boolean_value_of: static_method(env, boolean, c"valueOf", c"(Z)Ljava/lang/Boolean;")?,
        wrappers,
        wrappers_create: static_method(env, wrappers, c"create", c"(JJ)Ljava/lang/Object;")?,
        wrappers_adopt: static_method(env, wrappers, c"adopt", c"(Ljava/lang/Object;JJ)Ljava/lang/Object;")?,
        callbacks,
        callbacks_invoke0: static_method(env, callbacks, c"invoke0", c"(Ljava/lang/Object;)Ljava/lang/Object;")?,
        callbacks_invoke: static_method(
            env,
            callbacks,
            c"invoke",
            c"(Ljava/lang/Object;[Ljava/lang/Object;J)Ljava/lang/Object;",
        )?,
        errors,
        errors_create: static_method(
            env,
            errors,
            c"create",
            c"(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;)Ljava/lang/Throwable;",
        )?,
        marshal,
        marshal_list_items: static_method(env, marshal, c"listItems", c"(Ljava/lang/Object;)[Ljava/lang/Object;")?,
        marshal_map_items: static_method(env, marshal, c"mapItems", c"(Ljava/lang/Object;)[Ljava/lang/Object;")?,
        instance_handle,
        instance_word,
        small_longs,
    };
    let _ = CLASSES.set(classes);
    Ok(())
}
