//! The cold-path exports index.js builds the public API from: setup, global functions,
//! reflection, construction, dispose and module loading.

use std::ptr;

use napi::sys;
use tether_core::function::get_global;
use tether_core::signature::{language_name, Language};
use tether_core::types::{self, type_info};
use tether_core::{Any, AnyView, Error, ObjectRef};

use crate::convert::{any_to_js, js_to_any};
use crate::env::EnvState;
use crate::errors::throw;
use crate::raw::{self, Args, Env, Fail, JsResult, Value};
use crate::tie::{dispose, tie_object, tie_object_made, wrapper_of};

type ColdFn = fn(&EnvState, Args) -> JsResult<Value>;

/// Run a cold export: arguments on the heap, errors thrown as JS exceptions.
fn run_cold(env: Env, info: sys::napi_callback_info, body: ColdFn) -> Value {
    // SAFETY: Node calls exports on their env's JS thread, after init.
    let state = unsafe { crate::env::state_of(env) };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let args = raw::args(env, info)?;
        body(state, args)
    }));
    match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(fail)) => {
            throw(state, fail);
            ptr::null_mut()
        }
        Err(panic) => {
            throw(state, Fail::Native(tether_core::error::panic_error(panic)));
            ptr::null_mut()
        }
    }
}

macro_rules! cold_exports {
    ($($js:literal => $body:ident),* $(,)?) => {
        const COLD: &[(&str, sys::napi_callback)] = &[$(
            ($js, {
                unsafe extern "C" fn entry(raw_env: sys::napi_env, info: sys::napi_callback_info) -> Value {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
                    run_cold(env, info, $body)
                }
                Some(entry)
            }),
        )*];
    };
}

cold_exports! {
    "_setup" => setup,
    "getGlobalFunc" => get_global_func,
    "typeInfo" => type_info_of,
    "dispose" => dispose_wrapper,
    "isDisposed" => is_disposed,
    "registerSubclass" => register_subclass,
    "setSubclass" => set_subclass,
    "loadModule" => load_module,
    "checkBindings" => check_bindings,
    "toNative" => to_native,
    "jsName" => js_name,
    "_exiting" => exiting,
}

/// `process.on('exit')` of this env (index.js): callbacks from other threads are refused from
/// now on and the ones waiting are answered (see `EnvState::refuse_cross_thread_calls`).
fn exiting(state: &EnvState, _args: Args) -> JsResult<Value> {
    state.refuse_cross_thread_calls();
    raw::undefined(state.env)
}

/// Add the raw exports to `exports`.
pub fn export_all(state: &EnvState, env: Env, exports: Value) -> JsResult<()> {
    for (name, cb) in COLD {
        let f = raw::function(env, name, *cb, ptr::null_mut())?;
        raw::set_named(env, exports, name, f)?;
    }
    let call_async = raw::function(env, "callAsync", Some(crate::call::call_async_callback), ptr::null_mut())?;
    state.refs.borrow_mut().call_async = Some(raw::strong_ref(env, call_async)?);
    raw::set_named(env, exports, "isMainEnv", raw::boolean(env, state.is_main)?)?;
    raw::set_named(env, exports, "constants", constants(env)?)?;
    let kinds = tether_core::constants::ERROR_KINDS;
    let error_kinds = raw::array(env, kinds.len())?;
    for (i, &(name, code)) in kinds.iter().enumerate() {
        let entry = raw::array(env, 2)?;
        raw::set_element(env, entry, 0, raw::string(env, name)?)?;
        raw::set_element(env, entry, 1, raw::number(env, code as f64)?)?;
        raw::set_element(env, error_kinds, i as u32, entry)?;
    }
    raw::set_named(env, exports, "errorKinds", error_kinds)?;
    Ok(())
}

/// The constants index.js needs, from their one source: the core's shared table and this
/// addon's call-frame layout (call.rs `CallFrame`).
fn constants(env: Env) -> JsResult<Value> {
    let out = raw::object(env)?;
    let frame = [
        ("FRAME_HANDLES", crate::call::FRAME_HANDLES as i64),
        ("FRAME_ANY_COUNT", crate::call::FRAME_ANY_COUNT as i64),
        ("FRAME_WORDS", crate::call::FRAME_WORDS as i64),
        ("FRAME_RESULT_IN_FRAME", crate::call::RESULT_IN_FRAME as i64),
        ("FRAME_FLOATS_OFFSET", crate::call::FRAME_FLOATS_OFFSET as i64),
    ];
    for &(name, value) in tether_core::constants::SHARED.iter().chain(frame.iter()) {
        raw::set_named(env, out, name, raw::number(env, value as f64)?)?;
    }
    Ok(out)
}

fn arg(args: &Args, i: usize) -> Result<Value, Error> {
    args.argv.get(i).copied().ok_or_else(|| Error::type_error(format!("missing argument {}", i + 1)))
}

fn string_arg(state: &EnvState, args: &Args, i: usize, what: &str) -> JsResult<String> {
    let v = arg(args, i)?;
    if raw::type_of(state.env, v)? != sys::ValueType::napi_string {
        return Err(Error::type_error(format!("{what}: expected a string")).into());
    }
    let mut s = String::new();
    raw::read_string(state.env, v, &mut s)?;
    Ok(s)
}

fn int_arg(state: &EnvState, args: &Args, i: usize, what: &str) -> JsResult<i64> {
    js_to_any(state, arg(args, i)?)?
        .view()
        .as_int()
        .ok_or_else(|| Error::type_error(format!("{what}: expected an integer")).into())
}

/// `_setup(classFactory, errorFactory, token, classifyObject, makeShim, rememberCallable,
/// invokeCallable, handleOf)`: the JS helpers
/// the native side calls. Returns the ArrayBuffer of the shims' call frame (`call::CallFrame`)
/// and `construct`, which reads it.
fn setup(state: &EnvState, args: Args) -> JsResult<Value> {
    let env = state.env;
    if state.refs.borrow().shim_factory.is_some() {
        // The frame stays index.js's own: anything else writing it could name freed wrappers.
        return Err(Error::runtime("_setup was already called for this environment").into());
    }
    let class_factory = raw::strong_ref(env, arg(&args, 0)?)?;
    let error_factory = raw::strong_ref(env, arg(&args, 1)?)?;
    let token = raw::strong_ref(env, arg(&args, 2)?)?;
    let classify_object = raw::strong_ref(env, arg(&args, 3)?)?;
    let shim_factory = raw::strong_ref(env, arg(&args, 4)?)?;
    let remember_callable = raw::strong_ref(env, arg(&args, 5)?)?;
    let invoke_callable = raw::strong_ref(env, arg(&args, 6)?)?;
    let handle_of = raw::strong_ref(env, arg(&args, 7)?)?;
    let mut refs = state.refs.borrow_mut();
    refs.handle_of = Some(handle_of);
    refs.remember_callable = Some(remember_callable);
    refs.invoke_callable = Some(invoke_callable);
    refs.shim_factory = Some(shim_factory);
    refs.classify_object = Some(classify_object);
    refs.class_factory = Some(class_factory);
    refs.error_factory = Some(error_factory);
    refs.token = Some(token);
    let frame = refs.frame_buffer.expect("made with the env");
    // The frame and the constructor that reads it: index.js's own, never exported.
    let out = raw::array(env, 2)?;
    raw::set_element(env, out, 0, raw::reference_value(env, frame)?)?;
    raw::set_element(env, out, 1, raw::function(env, "construct", Some(construct_entry), ptr::null_mut())?)?;
    Ok(out)
}

/// `getGlobalFunc(name)`: the registered function, or undefined.
fn get_global_func(state: &EnvState, args: Args) -> JsResult<Value> {
    let name = string_arg(state, &args, 0, "getGlobalFunc(name)")?;
    match get_global(&name) {
        Some(f) => any_to_js(state, Any::object(f.0.into())),
        None => raw::undefined(state.env),
    }
}

fn function_value(state: &EnvState, f: tether_core::Function) -> JsResult<Value> {
    any_to_js(state, Any::object(f.0.into()))
}

/// `typeInfo(index)`: key, doc, parent, fields, methods and constructor of a type.
fn type_info_of(state: &EnvState, args: Args) -> JsResult<Value> {
    let env = state.env;
    let index = int_arg(state, &args, 0, "typeInfo(index)")?;
    let Some(info) = i32::try_from(index).ok().and_then(type_info) else {
        return raw::undefined(env);
    };
    let out = raw::object(env)?;
    raw::set_named(env, out, "index", raw::number(env, info.index as f64)?)?;
    raw::set_named(env, out, "key", raw::string(env, info.key())?)?;
    raw::set_named(env, out, "doc", raw::string(env, info.doc())?)?;
    raw::set_named(env, out, "parent", raw::number(env, info.parent as f64)?)?;
    // The type's own members, with the functions the class defines on its prototype.
    let fields = array_of(env, info.fields().iter(), |field| {
        let f = field_object(env, field)?;
        raw::set_named(env, f, "getter", function_value(state, field.getter())?)?;
        let setter = match field.setter() {
            Some(s) => function_value(state, s)?,
            None => raw::null(env)?,
        };
        raw::set_named(env, f, "setter", setter)?;
        Ok(f)
    })?;
    raw::set_named(env, out, "fields", fields)?;
    let methods = array_of(env, info.methods().iter(), |method| {
        let m = method_object(env, method)?;
        raw::set_named(env, m, "func", function_value(state, method.func())?)?;
        Ok(m)
    })?;
    raw::set_named(env, out, "methods", methods)?;
    // What reflection shows: every member, inherited ones first (types::all_fields / all_methods).
    let all_fields = array_of(env, types::all_fields(info).into_iter(), |f| field_object(env, f))?;
    raw::set_named(env, out, "allFields", all_fields)?;
    let all_methods = array_of(env, types::all_methods(info).into_iter(), |m| method_object(env, m))?;
    raw::set_named(env, out, "allMethods", all_methods)?;
    let short = info.key().rsplit('.').next().unwrap_or(info.key());
    let (ctor, length, signature) = match info.constructor() {
        Some(c) => {
            let (length, signature) = (crate::call::caller_length(&c.0), crate::call::signature_text(short, &c.0));
            (function_value(state, c)?, length, signature)
        }
        None => (raw::null(env)?, 0, format!("{short}(): never")),
    };
    raw::set_named(env, out, "constructor", ctor)?;
    raw::set_named(env, out, "constructorLength", raw::number(env, length as f64)?)?;
    raw::set_named(env, out, "constructorSignature", raw::string(env, &signature)?)?;
    Ok(out)
}

/// A field's reflection: `name`, `doc`, `typeHint`, `settable`.
fn field_object(env: Env, field: &types::FieldInfo) -> JsResult<Value> {
    let f = raw::object(env)?;
    raw::set_named(env, f, "name", raw::string(env, field.name())?)?;
    raw::set_named(env, f, "jsName", raw::string(env, &language_name(field.name(), Language::JavaScript))?)?;
    raw::set_named(env, f, "doc", raw::string(env, field.doc())?)?;
    raw::set_named(env, f, "typeHint", raw::string(env, field.type_hint())?)?;
    raw::set_named(env, f, "settable", raw::boolean(env, field.setter().is_some())?)?;
    Ok(f)
}

/// A method's reflection: `name` (the registry's), `jsName` (as JavaScript spells it),
/// `doc`, `isStatic`, `length` (the parameters a caller writes that have no default, the
/// receiver left out) and `signature` (core's rendering for JavaScript).
fn method_object(env: Env, method: &types::MethodInfo) -> JsResult<Value> {
    let m = raw::object(env)?;
    let func = method.func();
    raw::set_named(env, m, "name", raw::string(env, method.name())?)?;
    raw::set_named(env, m, "jsName", raw::string(env, &language_name(method.name(), Language::JavaScript))?)?;
    raw::set_named(env, m, "length", raw::number(env, crate::call::caller_length(&func.0) as f64)?)?;
    raw::set_named(env, m, "signature", raw::string(env, &crate::call::signature_text(method.name(), &func.0))?)?;
    raw::set_named(env, m, "doc", raw::string(env, method.doc())?)?;
    raw::set_named(env, m, "isStatic", raw::boolean(env, method.is_static != 0)?)?;
    Ok(m)
}

/// A JS array of `make(item)` for each item.
fn array_of<'a, T: 'a>(
    env: Env,
    items: impl ExactSizeIterator<Item = &'a T>,
    make: impl Fn(&'a T) -> JsResult<Value>,
) -> JsResult<Value> {
    let out = raw::array(env, items.len())?;
    for (i, item) in items.enumerate() {
        raw::set_element(env, out, i as u32, make(item)?)?;
    }
    Ok(out)
}

/// `construct(this, typeIndex, ...args)`: call the type's constructor and tie the new object
/// to `this`, returning the handle of `this` (see `TetherObject#handle`); or return the
/// existing wrapper if the constructor returned an object that has one.
unsafe extern "C" fn construct_entry(raw_env: sys::napi_env, info: sys::napi_callback_info) -> Value {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
    run_cold(env, info, construct)
}

/// `construct(this, typeIndex, ...args)` (handed to index.js by `_setup` only, as the frame
/// is): the wrapper arguments travel in the call frame as in a shim's call (`mask` and their
/// handles, a placeholder in the argument list).
/// Constructor arguments (defaults included) converted without a heap allocation.
const INLINE_VALUES: usize = 4;

fn construct(state: &EnvState, args: Args) -> JsResult<Value> {
    // The handles first: converting another argument may run JS that rewrites the frame.
    let count = args.argv.len().saturating_sub(2);
    let mut known: [Option<&crate::tie::Wrapper>; crate::call::FRAME_HANDLES] = [None; crate::call::FRAME_HANDLES];
    // SAFETY: the env's frame, on its JS thread, filled by index.js's constructor right before
    // this call (nothing else can call this function); each flagged handle was read from a
    // wrapper argument of this call, which keeps its box alive.
    unsafe {
        let frame = &*state.frame;
        let mask = frame.mask & ((1u64 << count.min(crate::call::FRAME_HANDLES)) - 1) as u32;
        if mask != 0 {
            for (i, slot) in known.iter_mut().enumerate().filter(|(i, _)| mask & (1 << i) != 0) {
                *slot = Some(
                    crate::tie::wrapper_of_handle(frame.handles[i])
                        .ok_or_else(|| Error::type_error("a flagged argument is not a tether handle"))?,
                );
            }
        }
    }
    let this = arg(&args, 0)?;
    let index = int_arg(state, &args, 1, "construct(this, typeIndex)")?;
    let info = i32::try_from(index)
        .ok()
        .and_then(type_info)
        .ok_or_else(|| Error::type_error(format!("no registered type has index {index}")))?;
    let ctor = info.constructor().ok_or_else(|| {
        Error::type_error(format!("{} has no constructor; get instances from native functions", info.key()))
    })?;
    let argv = &args.argv[2..];
    let call = |views: &[AnyView<'_>]| {
        let _sync = crate::call::SyncCall::enter(state);
        ctor.call(views)
    };
    // Up to INLINE_VALUES values (defaults included) on the stack: no allocation per object.
    let defaults = ctor.0.defaults_left_out(argv.len())?;
    let made = if argv.len() + defaults.len() <= INLINE_VALUES {
        let mut values: [Any; INLINE_VALUES] = std::array::from_fn(|_| Any::none());
        for (i, &v) in argv.iter().enumerate() {
            values[i] = crate::call::convert_argument(state, &ctor.0, i, v, &known)?;
        }
        let n = argv.len() + defaults.len();
        for (slot, default) in values[argv.len()..n].iter_mut().zip(defaults) {
            *slot = default;
        }
        let views: [AnyView<'_>; INLINE_VALUES] = std::array::from_fn(|i| values[i].view());
        call(&views[..n])?
    } else {
        drop(defaults);
        let values = crate::call::convert_arguments(state, &ctor.0, argv, &known)?;
        let views: Vec<AnyView<'_>> = values.iter().map(Any::view).collect();
        call(&views)?
    };
    let obj = made
        .into_object()
        .ok_or_else(|| Error::type_error(format!("the constructor of {} did not return an object", info.key())))?;
    match tie_object_made(state, obj, Some(this))? {
        (_, Some(made)) => crate::tie::handle(state.env, made),
        (existing, None) => Ok(existing),
    }
}

fn dispose_wrapper(state: &EnvState, args: Args) -> JsResult<Value> {
    if let Some(w) = wrapper_of(state, arg(&args, 0)?)? {
        dispose(w);
    }
    raw::undefined(state.env)
}

fn is_disposed(state: &EnvState, args: Args) -> JsResult<Value> {
    let disposed = wrapper_of(state, arg(&args, 0)?)?.is_some_and(|w| w.obj.get().is_null());
    raw::boolean(state.env, disposed)
}

/// `registerSubclass(ctor)`: the id of JS subclass `ctor` (index.js asks once per subclass).
fn register_subclass(state: &EnvState, args: Args) -> JsResult<Value> {
    let env = state.env;
    let ctor = raw::strong_ref(env, arg(&args, 0)?)?;
    if state.refs.borrow().reflect_construct.is_none() {
        let mut global = std::ptr::null_mut();
        crate::raw::napi_call!(env, napi_get_global(env.raw(), &mut global))?;
        let reflect = raw::get_named(env, global, "Reflect")?;
        let r = raw::strong_ref(env, raw::get_named(env, reflect, "construct")?)?;
        state.refs.borrow_mut().reflect_construct = Some(r);
    }
    let mut refs = state.refs.borrow_mut();
    refs.subclasses.push(ctor);
    raw::number(env, refs.subclasses.len() as f64)
}

/// `setSubclass(wrapper, id)`: the wrapper is an instance of subclass `id`; its object keeps
/// that (the class hint) for the wrappers made for it later. Main env only: a worker's objects
/// are tied through the side table, which keeps no hints.
fn set_subclass(state: &EnvState, args: Args) -> JsResult<Value> {
    let id = int_arg(state, &args, 1, "setSubclass(wrapper, id)")?;
    if let Some(w) = wrapper_of(state, arg(&args, 0)?)? {
        let obj = w.live_object()?;
        // SAFETY: the wrapper's +1 keeps `obj` alive.
        unsafe { state.frontend.set_class_hint(obj, id as u32) };
    }
    raw::undefined(state.env)
}

/// `loadModule(path)`: `{ module, path, functions: [[name, fn, jsName]], types: [index] }`.
fn load_module(state: &EnvState, args: Args) -> JsResult<Value> {
    let env = state.env;
    let path = string_arg(state, &args, 0, "loadModule(path)")?;
    let module = tether_core::plugin::load_module(&path)?;
    let out = raw::object(env)?;
    raw::set_named(env, out, "path", raw::string(env, module.path())?)?;
    let functions = raw::array(env, module.functions().len())?;
    for (i, (name, f)) in module.functions().iter().enumerate() {
        let pair = raw::array(env, 3)?;
        raw::set_element(env, pair, 0, raw::string(env, name)?)?;
        raw::set_element(env, pair, 1, function_value(state, f.clone())?)?;
        raw::set_element(env, pair, 2, raw::string(env, &language_name(name, Language::JavaScript))?)?;
        raw::set_element(env, functions, i as u32, pair)?;
    }
    raw::set_named(env, out, "functions", functions)?;
    let types = raw::array(env, module.types().len())?;
    for (i, t) in module.types().iter().enumerate() {
        raw::set_element(env, types, i as u32, raw::number(env, *t as f64)?)?;
    }
    raw::set_named(env, out, "types", types)?;
    raw::set_named(env, out, "module", tie_object(state, ObjectRef::from(module), None)?)?;
    Ok(out)
}

/// `checkBindings(path, manifest)`: bindings generated for the plugin at `path` recorded
/// `manifest`, one `item\thash` line per item (index.js joins them); throws a TetherValueError
/// naming each added, removed or changed item when the plugin's registry differs.
fn check_bindings(state: &EnvState, args: Args) -> JsResult<Value> {
    let path = string_arg(state, &args, 0, "checkBindings(path, manifest)")?;
    let text = string_arg(state, &args, 1, "checkBindings(path, manifest)")?;
    let recorded = tether_core::manifest::parse_recorded(&text);
    let module = tether_core::plugin::load_module(&path)?;
    tether_core::manifest::check_manifest(&module, &recorded).map_err(Error::value)?;
    raw::undefined(state.env)
}

/// `jsName(name)`: a registry name as JavaScript spells it (core's `language_name`:
/// `make_pair` → `makePair`).
fn js_name(state: &EnvState, args: Args) -> JsResult<Value> {
    let name = string_arg(state, &args, 0, "jsName(name)")?;
    raw::string(state.env, &language_name(&name, Language::JavaScript))
}

/// `toNative(value)`: the value converted to tether and back (plain arrays/objects become
/// Array/Map wrappers).
fn to_native(state: &EnvState, args: Args) -> JsResult<Value> {
    let value = js_to_any(state, arg(&args, 0)?)?;
    any_to_js(state, value)
}
