//! The jni 0.22 peer: natives of `dev.tether.bench.JniPeer`, each going through
//! `EnvUnowned::with_env(..).resolve::<ThrowRuntimeExAndDefault>()` as the crate documents.

use jni::errors::ThrowRuntimeExAndDefault;
use jni::objects::{JClass, JObject};
use jni::refs::Global;
use jni::sys::jlong;
use jni::{jni_sig, jni_str, EnvUnowned};

/// The native side of `JniPeer.Pair`: two strong references to Java objects.
struct PairData {
    first: Global<JObject<'static>>,
    second: Global<JObject<'static>>,
}

/// W1: return the argument itself.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_echo<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    x: JObject<'l>,
) -> JObject<'l> {
    env.with_env(|_env| -> jni::errors::Result<_> { Ok(x) }).resolve::<ThrowRuntimeExAndDefault>()
}

/// W3: three ints in, one int out.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_add3<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    a: jlong,
    b: jlong,
    c: jlong,
) -> jlong {
    env.with_env(|_env| -> jni::errors::Result<_> { Ok(a.wrapping_add(b).wrapping_add(c)) })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// W7: call `f.get()` (a `java.util.function.Supplier`) from native code.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_call<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    f: JObject<'l>,
) -> JObject<'l> {
    env.with_env(|env| -> jni::errors::Result<_> {
        env.call_method(&f, jni_str!("get"), jni_sig!("()Ljava/lang/Object;"), &[])?.l()
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// W4: a native pair holding two global references; the handle is freed by `freePair`.
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_newPair<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    first: JObject<'l>,
    second: JObject<'l>,
) -> jlong {
    env.with_env(|env| -> jni::errors::Result<_> {
        let data = Box::new(PairData { first: env.new_global_ref(&first)?, second: env.new_global_ref(&second)? });
        Ok(Box::into_raw(data) as jlong)
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// W2: read an object-typed field (a new local reference to the stored object).
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_pairFirst<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObject<'l> {
    env.with_env(|env| -> jni::errors::Result<_> {
        // SAFETY: `handle` came from `newPair` and the Java `Pair` that owns it is alive (it is
        // the receiver of the call that passed the handle), so `freePair` has not run.
        let data = unsafe { &*(handle as *const PairData) };
        env.new_local_ref(&data.first)
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_pairSecond<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) -> JObject<'l> {
    env.with_env(|env| -> jni::errors::Result<_> {
        // SAFETY: as in `pairFirst`.
        let data = unsafe { &*(handle as *const PairData) };
        env.new_local_ref(&data.second)
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}

/// Frees a `newPair` handle (called once, by the pair's Cleaner action).
#[no_mangle]
pub extern "system" fn Java_dev_tether_bench_JniPeer_freePair<'l>(
    mut env: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    env.with_env(|_env| -> jni::errors::Result<_> {
        // SAFETY: `handle` came from `newPair`, and the Cleaner runs this exactly once.
        drop(unsafe { Box::from_raw(handle as *mut PairData) });
        Ok(())
    })
    .resolve::<ThrowRuntimeExAndDefault>()
}
