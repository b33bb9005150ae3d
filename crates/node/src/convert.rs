//! JS values <-> tether values.
//!
//! | JS | tether | back to JS |
//! |---|---|---|
//! | `undefined`, `null` | None | `null` |
//! | boolean | bool | boolean |
//! | number with an integer value in i64 range | int | number (BigInt beyond +-2^53) |
//! | other number | float | number |
//! | BigInt (i64 range) | int | as above |
//! | string | str | string |
//! | Buffer / TypedArray / ArrayBuffer / DataView | bytes | Buffer |
//! | tether wrapper | that object | its canonical wrapper |
//! | JS function | a native Function calling it (the same one each time) | the JS function |
//! | plain array | Array | tether Array |
//! | Map / Set | Map / Array | tether Map / Array |
//! | plain object (prototype `Object.prototype` or null) | Map of its own enumerable string keys | tether Map |
//! | any other object (class instance, Date, Promise, ...) | a HostValue holding it | the object itself |

use std::ffi::c_void;
use std::ptr;

use napi::sys;
use napi::sys::ValueType;
use tether_core::boundary::LeafCall;
use tether_core::containers::{ArrayObj, MapObj};
use tether_core::nesting::{self, Nesting};
use tether_core::{Any, AnyView, Error, ObjectRef, TypeIndex};

use crate::env::EnvState;
use crate::raw::{self, napi_call, Fail, JsResult, Value};
use crate::tie::{tie_object, wrapper_of, Wrapper};

/// Largest integer a JS number holds exactly.
const MAX_SAFE: i64 = (1 << 53) - 1;

const NEG_ZERO: u64 = 0x8000_0000_0000_0000;

/// A JS number's integer value, when it is integral and fits in i64 (else it goes as float).
#[inline]
pub fn integral(x: f64) -> Option<i64> {
    // `as` saturates and maps NaN to 0, so the round trip holds exactly for integral values in
    // i64's range (not `fract()`, which is a libm call, ~9% of an `add3` call).
    // -0 stays a float (0 as f64 == -0.0, but the sign must survive the round trip).
    let i = x as i64;
    (i as f64 == x && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) && x.to_bits() != NEG_ZERO)
        .then_some(i)
}

/// A JS number as int when it is integral and fits in i64, else float.
#[inline]
fn number_to_any(x: f64) -> Any {
    integral(x).map_or(Any::float(x), Any::int)
}

/// [`number_to_any`] as an argument view (a number a shim passed in the call frame).
#[inline]
pub fn number_view(x: f64) -> AnyView<'static> {
    integral(x).map_or(AnyView::float(x), AnyView::int)
}

/// An argument cell for a call, and the wrapper it came from (if any). Plain values are
/// returned by value; anything needing an owner is pushed to `owned`. `leaf` is the leaf call
/// argument `index` belongs to: a wrapper's object is then borrowed (its wrapper keeps it
/// alive for the call) or lent a spare, instead of taking a reference.
#[inline]
pub fn arg_view<'w>(
    state: &EnvState,
    v: Value,
    leaf: Option<(&mut LeafCall<'_, EnvState>, usize)>,
    owned: &mut Vec<Any>,
) -> JsResult<(AnyView<'static>, Option<&'w Wrapper>)> {
    let env = state.env;
    // Numbers first, in one Node-API call: it fails (with no exception) for anything else.
    let mut x = 0.0;
    // SAFETY: `v` is a value of the current call.
    if unsafe { sys::napi_get_value_double(env.raw(), v, &mut x) } == sys::Status::napi_ok {
        let a = number_to_any(x);
        // SAFETY: ints and floats are plain values.
        return Ok((unsafe { plain_view(&a) }, None));
    }
    let t = raw::type_of(env, v)?;
    if t == ValueType::napi_object {
        if let Some(w) = wrapper_of(state, v)? {
            return Ok((wrapper_view(w, leaf, owned)?, Some(w)));
        }
    }
    let a = convert(state, v, t, &mut Nesting::new())?;
    Ok((keep(owned, a), None))
}

/// The argument cell for wrapper `w` (see [`arg_view`] for `leaf`: converting a later
/// argument may run JS, so the spare claim waits until every argument is converted).
#[inline]
pub fn wrapper_view(
    w: &Wrapper,
    leaf: Option<(&mut LeafCall<'_, EnvState>, usize)>,
    owned: &mut Vec<Any>,
) -> JsResult<AnyView<'static>> {
    if let Some((leaf, index)) = leaf {
        return leaf_wrapper_view(w, leaf, index);
    }
    let obj = w.live_object()?;
    // SAFETY: the wrapper's +1 keeps `obj` alive while we take our own.
    let r = unsafe { ObjectRef::from_borrowed(obj) };
    Ok(keep(owned, Any::object(r)))
}

/// The view of wrapper `w`, argument `index` of a running leaf call (borrowed, or lent a spare;
/// see [`LeafCall::wrapper_argument`]).
#[inline(always)]
pub fn leaf_wrapper_view(w: &Wrapper, leaf: &mut LeafCall<'_, EnvState>, index: usize) -> JsResult<AnyView<'static>> {
    let obj = w.live_object()?;
    // SAFETY: this env's slots change only on this, its JS thread; the wrapper is an argument
    // of the running call, so it and its +1 outlive the call (a leaf function cannot run JS
    // that disposes of it); the claim is made at `LeafCall::commit`.
    Ok(unsafe { leaf.wrapper_argument(index, AnyView::from_object_ptr(obj), w.reference.get() as usize, false) })
}

/// A view of a plain (non-object, non-borrowing) cell.
///
/// # Safety
/// `a` holds no object and no borrowed bytes.
#[inline]
unsafe fn plain_view(a: &Any) -> AnyView<'static> {
    let (t, len, payload) = a.view().raw_parts();
    // SAFETY: the caller's guarantee: the cell is self-contained.
    unsafe { AnyView::from_raw_parts(t, len, payload) }
}

/// Store `a` in `owned` and return a view of it that lives as long as `owned` keeps it.
pub fn keep(owned: &mut Vec<Any>, a: Any) -> AnyView<'static> {
    let (t, len, payload) = a.view().raw_parts();
    owned.push(a);
    // SAFETY: the view names an object or inline data owned by the pushed `Any`; `owned`
    // outlives every use of the views (the call), and moving an `Any` does not move the
    // object it points to (inline small values are copied into the view itself).
    unsafe { AnyView::from_raw_parts(t, len, payload) }
}

/// `make()`, or the MemoryError when it cannot allocate: conversions return it as their
/// error instead of unwinding through the call path.
pub fn allocating<T>(make: impl FnOnce() -> T) -> JsResult<T> {
    tether_core::error::catch_out_of_memory(make).map_err(Fail::Native)
}

/// An owned tether value for a JS value.
pub fn js_to_any(state: &EnvState, v: Value) -> JsResult<Any> {
    let t = raw::type_of(state.env, v)?;
    convert(state, v, t, &mut Nesting::new())
}

/// Containers being converted, compared as JS does with `===`.
type Open = Nesting<Value>;

fn convert(state: &EnvState, v: Value, t: sys::napi_valuetype, open: &mut Open) -> JsResult<Any> {
    let env = state.env;
    match t {
        ValueType::napi_undefined | ValueType::napi_null => Ok(Any::none()),
        ValueType::napi_boolean => {
            let mut b = false;
            napi_call!(env, napi_get_value_bool(env.raw(), v, &mut b))?;
            Ok(Any::bool(b))
        }
        ValueType::napi_number => {
            let mut x = 0.0;
            napi_call!(env, napi_get_value_double(env.raw(), v, &mut x))?;
            Ok(number_to_any(x))
        }
        ValueType::napi_string => {
            let mut s = String::new();
            raw::read_string(env, v, &mut s)?;
            allocating(|| Any::str(&s))
        }
        ValueType::napi_bigint => {
            let mut i = 0i64;
            let mut lossless = false;
            napi_call!(env, napi_get_value_bigint_int64(env.raw(), v, &mut i, &mut lossless))?;
            if !lossless {
                return Err(Error::value("BigInt out of the 64-bit signed integer range").into());
            }
            Ok(Any::int(i))
        }
        ValueType::napi_function => {
            if let Some(w) = wrapper_of(state, v)? {
                // SAFETY: the wrapper's +1 keeps the object alive while we take our own.
                return Ok(Any::object(unsafe { ObjectRef::from_borrowed(w.live_object()?) }));
            }
            crate::callback::function_from_js(state, v)
        }
        ValueType::napi_object => {
            if let Some(w) = wrapper_of(state, v)? {
                // SAFETY: the wrapper's +1 keeps the object alive while we take our own reference.
                return Ok(Any::object(unsafe { ObjectRef::from_borrowed(w.live_object()?) }));
            }
            // A cycle or too deep a nesting fails here, before the container is converted.
            open.enter(v, |a, b| raw::strict_equals(env, *a, *b))?;
            let converted = convert_plain_object(state, v, open);
            open.leave();
            converted
        }
        _ => Err(Error::type_error(format!("cannot pass a JS {} to native code", type_name(t))).into()),
    }
}

fn type_name(t: sys::napi_valuetype) -> &'static str {
    match t {
        ValueType::napi_symbol => "symbol",
        ValueType::napi_external => "external",
        _ => "value of this kind",
    }
}

fn is(
    state: &EnvState,
    v: Value,
    f: unsafe extern "C" fn(sys::napi_env, Value, *mut bool) -> sys::napi_status,
) -> bool {
    let mut out = false;
    // SAFETY: a type predicate on a handle of the current call.
    unsafe { f(state.env.raw(), v, &mut out) };
    out
}

fn convert_plain_object(state: &EnvState, v: Value, open: &mut Open) -> JsResult<Any> {
    let env = state.env;
    if is(state, v, sys::napi_is_array) {
        let mut len = 0u32;
        napi_call!(env, napi_get_array_length(env.raw(), v, &mut len))?;
        nesting::check_items(len as usize)?;
        let mut items = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut item = ptr::null_mut();
            napi_call!(env, napi_get_element(env.raw(), v, i, &mut item))?;
            let t = raw::type_of(env, item)?;
            items.push(convert(state, item, t, open)?);
        }
        return Ok(Any::object(allocating(|| ArrayObj::new(items))?.into()));
    }
    if let Some(bytes) = byte_view(state, v)? {
        return allocating(|| Any::bytes(bytes));
    }
    if let Some(converted) = convert_collection(state, v, open)? {
        return Ok(converted);
    }
    let mut keys = ptr::null_mut();
    napi_call!(
        env,
        napi_get_all_property_names(
            env.raw(),
            v,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut keys
        )
    )?;
    let mut n = 0u32;
    napi_call!(env, napi_get_array_length(env.raw(), keys, &mut n))?;
    nesting::check_items(n as usize)?;
    let mut entries = Vec::with_capacity(n as usize);
    for i in 0..n {
        let mut key = ptr::null_mut();
        napi_call!(env, napi_get_element(env.raw(), keys, i, &mut key))?;
        let mut value = ptr::null_mut();
        napi_call!(env, napi_get_property(env.raw(), v, key, &mut value))?;
        let mut k = String::new();
        raw::read_string(env, key, &mut k)?;
        let t = raw::type_of(env, value)?;
        entries.push((allocating(|| Any::str(&k))?, convert(state, value, t, open)?));
    }
    Ok(Any::object(allocating(|| MapObj::new(entries))?.into()))
}

/// What index.js's `classifyObject` made of a non-array object that is no bytes: a JS Map (to
/// a Map) or Set (to an Array), a host value (anything but a plain object), or `None` for a
/// plain object (converted to a Map of its own properties by the caller).
fn convert_collection(state: &EnvState, v: Value, open: &mut Open) -> JsResult<Option<Any>> {
    let env = state.env;
    let Some(helper) = state.refs.borrow().classify_object else {
        return Ok(None);
    };
    let helper = raw::reference_value(env, helper)?;
    let this = raw::undefined(env)?;
    let out = raw::call(env, this, helper, &[v])?;
    match raw::type_of(env, out)? {
        ValueType::napi_object => {}
        ValueType::napi_string => {
            let mut type_name = String::new();
            raw::read_string(env, out, &mut type_name)?;
            return crate::host_value::hold(state, v, &type_name).map(Some);
        }
        _ => return Ok(None),
    }
    let element = |array: Value, i: u32| -> JsResult<Value> {
        let mut item = ptr::null_mut();
        napi_call!(env, napi_get_element(env.raw(), array, i, &mut item))?;
        Ok(item)
    };
    let length = |array: Value| -> JsResult<u32> {
        let mut n = 0u32;
        napi_call!(env, napi_get_array_length(env.raw(), array, &mut n))?;
        Ok(n)
    };
    let mut is_map = false;
    napi_call!(env, napi_get_value_bool(env.raw(), element(out, 0)?, &mut is_map))?;
    let items = element(out, 1)?;
    let n = length(items)?;
    nesting::check_items(n as usize)?;
    let mut convert_item = |item: Value| -> JsResult<Any> { convert(state, item, raw::type_of(env, item)?, open) };
    if is_map {
        let mut entries = Vec::with_capacity(n as usize);
        for i in 0..n {
            let pair = element(items, i)?;
            entries.push((convert_item(element(pair, 0)?)?, convert_item(element(pair, 1)?)?));
        }
        Ok(Some(Any::object(allocating(|| MapObj::new(entries))?.into())))
    } else {
        let values = (0..n).map(|i| convert_item(element(items, i)?)).collect::<JsResult<Vec<Any>>>()?;
        Ok(Some(Any::object(allocating(|| ArrayObj::new(values))?.into())))
    }
}

/// The bytes of a Buffer, TypedArray, DataView or ArrayBuffer, borrowed for this call.
fn byte_view<'a>(state: &EnvState, v: Value) -> JsResult<Option<&'a [u8]>> {
    let env = state.env;
    let mut data: *mut c_void = ptr::null_mut();
    let mut len = 0usize;
    if is(state, v, sys::napi_is_typedarray) {
        let mut kind = 0;
        let mut count = 0usize;
        let mut buffer = ptr::null_mut();
        let mut offset = 0usize;
        napi_call!(
            env,
            napi_get_typedarray_info(env.raw(), v, &mut kind, &mut count, &mut data, &mut buffer, &mut offset)
        )?;
        len = count * element_size(kind);
        let mut ab_len = 0usize;
        let mut ab_data = ptr::null_mut();
        // A view of a SharedArrayBuffer has no ArrayBuffer info (the call reports an invalid
        // argument and throws nothing): its `count` elements at `data` are the bytes.
        // SAFETY: `buffer` is a handle of this call; the outputs are written on success only.
        if unsafe { sys::napi_get_arraybuffer_info(env.raw(), buffer, &mut ab_data, &mut ab_len) }
            == sys::Status::napi_ok
        {
            len = ab_len.saturating_sub(offset).min(len);
        }
    } else if is(state, v, sys::napi_is_dataview) {
        let mut buffer = ptr::null_mut();
        let mut offset = 0usize;
        napi_call!(env, napi_get_dataview_info(env.raw(), v, &mut len, &mut data, &mut buffer, &mut offset))?;
    } else if is(state, v, sys::napi_is_arraybuffer) {
        napi_call!(env, napi_get_arraybuffer_info(env.raw(), v, &mut data, &mut len))?;
    } else {
        return Ok(None);
    }
    if data.is_null() || len == 0 {
        return Ok(Some(&[]));
    }
    // SAFETY: Node-API reported `len` readable bytes at `data`, alive while the JS value is
    // (the caller copies them before returning to JS).
    Ok(Some(unsafe { std::slice::from_raw_parts(data as *const u8, len) }))
}

fn element_size(kind: sys::napi_typedarray_type) -> usize {
    use sys::TypedarrayType as T;
    match kind {
        T::int8_array | T::uint8_array | T::uint8_clamped_array => 1,
        T::int16_array | T::uint16_array => 2,
        T::int32_array | T::uint32_array | T::float32_array => 4,
        _ => 8,
    }
}

/// The JS value for an owned tether value (objects come back as their canonical wrapper).
pub fn any_to_js(state: &EnvState, a: Any) -> JsResult<Value> {
    let env = state.env;
    let view = a.view();
    match view.type_index() {
        TypeIndex::NONE => raw::null(env),
        TypeIndex::INT => {
            let i = view.as_int().unwrap_or(0);
            if (-MAX_SAFE..=MAX_SAFE).contains(&i) {
                raw::number(env, i as f64)
            } else {
                let mut out = ptr::null_mut();
                napi_call!(env, napi_create_bigint_int64(env.raw(), i, &mut out))?;
                Ok(out)
            }
        }
        TypeIndex::BOOL => raw::boolean(env, view.as_bool().unwrap_or(false)),
        TypeIndex::FLOAT => raw::number(env, view.as_float().unwrap_or(f64::NAN)),
        TypeIndex::SMALL_STR | TypeIndex::STR | TypeIndex::RAW_STR => raw::string(env, view.as_str().unwrap_or("")),
        TypeIndex::SMALL_BYTES | TypeIndex::BYTES | TypeIndex::RAW_BYTES => {
            let bytes = view.as_bytes().unwrap_or(&[]);
            let mut out = ptr::null_mut();
            let mut data = ptr::null_mut();
            napi_call!(
                env,
                napi_create_buffer_copy(env.raw(), bytes.len(), bytes.as_ptr() as *const c_void, &mut data, &mut out)
            )?;
            Ok(out)
        }
        TypeIndex::OPAQUE_PTR => {
            let mut out = ptr::null_mut();
            let p = view.as_opaque_ptr().unwrap_or(ptr::null_mut()) as u64;
            napi_call!(env, napi_create_bigint_uint64(env.raw(), p, &mut out))?;
            Ok(out)
        }
        t if t >= TypeIndex::OBJECT => tie_object(state, a.into_object().expect("object kind"), None),
        t => Err(Fail::Native(Error::type_error(format!("cannot convert a value of kind {t} to JS")))),
    }
}
