//! Values across the JNI boundary.
//!
//! Java encodes each argument as `(kind, bits, ref)` (see `Marshal.java`): primitives travel
//! in `bits`, strings and byte arrays as a `byte[]` in `ref` (strings UTF-8 encoded by Java),
//! tied objects as their handle in `bits` with the wrapper in `ref` (so it stays reachable for
//! the whole call), and Java callables as an owned handle (`KIND_OWNED`) this side takes over.
//! Results go back as canonical wrappers (objects), boxed primitives, `String` or `byte[]`.

use jni_sys::{jobject, jvalue};
use tether_core::containers::{ArrayObj, MapObj};
use tether_core::convert::argument_message;
use tether_core::error::catch_out_of_memory;
use tether_core::function::FunctionObj;
use tether_core::nesting::{self, Nesting};
use tether_core::{Any, AnyView, Error, ObjectRef, Result, TypeIndex};

use crate::jenv::Env;
use crate::{classes, tie};

pub const KIND_NONE: i32 = 0;
pub const KIND_INT: i32 = 1;
pub const KIND_BOOL: i32 = 2;
pub const KIND_FLOAT: i32 = 3;
pub const KIND_STR: i32 = 5;
pub const KIND_BYTES: i32 = 6;
/// `ref` is a `List` or object array, read item by item through `Marshal.listItems`.
pub const KIND_LIST: i32 = 7;
/// `ref` is a `Map`, read entry by entry through `Marshal.mapItems`.
pub const KIND_MAP: i32 = 8;
pub const KIND_OBJECT: i32 = 64;
pub const KIND_OWNED: i32 = 65;
/// A Java callable passed straight to a call (the `call*` natives only): `ref` is the
/// callable, `bits` its identity hash; the call lends it a Function (`callback::lend`).
pub const KIND_CALLABLE: i32 = 66;

/// The kinds by name, as Java reads them (`Marshal`'s constants come from here).
pub const KINDS: &[(&str, i64)] = &[
    ("KIND_NONE", KIND_NONE as i64),
    ("KIND_INT", KIND_INT as i64),
    ("KIND_BOOL", KIND_BOOL as i64),
    ("KIND_FLOAT", KIND_FLOAT as i64),
    ("KIND_STR", KIND_STR as i64),
    ("KIND_BYTES", KIND_BYTES as i64),
    ("KIND_LIST", KIND_LIST as i64),
    ("KIND_MAP", KIND_MAP as i64),
    ("KIND_OBJECT", KIND_OBJECT as i64),
    ("KIND_OWNED", KIND_OWNED as i64),
    ("KIND_CALLABLE", KIND_CALLABLE as i64),
];

/// Decode one argument. Strings, bytes and owned handles land in `hold`, which the returned
/// view borrows; objects are borrowed from the wrapper in `r`, kept alive by the caller.
///
/// # Safety
/// For `KIND_OBJECT`, `bits` is the live handle of the wrapper passed as `r`; for
/// `KIND_OWNED`, `bits` is an owned reference this call takes over.
pub unsafe fn decode<'h>(env: Env, kind: i32, bits: i64, r: jobject, hold: &'h mut Any) -> Result<AnyView<'h>> {
    Ok(match kind {
        KIND_NONE => AnyView::none(),
        KIND_INT => AnyView::int(bits),
        KIND_BOOL => AnyView::bool(bits != 0),
        KIND_FLOAT => AnyView::float(f64::from_bits(bits as u64)),
        // SAFETY: the caller guarantees the handle is alive for the call.
        KIND_OBJECT => unsafe { AnyView::from_object_ptr(bits as *mut _) },
        KIND_OWNED => {
            // SAFETY: an owned reference handed over by Java.
            *hold = Any::object(unsafe { ObjectRef::from_raw(bits as *mut _) });
            hold.view()
        }
        KIND_STR => {
            let bytes = env.byte_array_to_vec(r);
            let s = String::from_utf8(bytes).map_err(|_| Error::value("string argument is not valid UTF-8"))?;
            *hold = catch_out_of_memory(|| Any::str(&s))?;
            hold.view()
        }
        KIND_BYTES => {
            let bytes = env.byte_array_to_vec(r);
            *hold = catch_out_of_memory(|| Any::bytes(&bytes))?;
            hold.view()
        }
        KIND_LIST | KIND_MAP => {
            *hold = container_to_any(env, kind, r, &mut Nesting::new())?;
            hold.view()
        }
        k => return Err(Error::type_error(format!("cannot pass a value of encoding kind {k} to native code"))),
    })
}

/// Does an argument of this kind pass its value in `ref`?
pub fn kind_uses_ref(kind: i32) -> bool {
    matches!(kind, KIND_STR | KIND_BYTES | KIND_LIST | KIND_MAP)
}

/// A Java `List`, object array (`KIND_LIST`) or `Map` (`KIND_MAP`) as a native Array or Map,
/// nested containers converted through `open`, which refuses a cycle or too deep a nesting
/// before the container is read.
fn container_to_any(env: Env, kind: i32, container: jobject, open: &mut Nesting<jobject>) -> Result<Any> {
    if env.exception_check() {
        // An earlier argument's conversion threw; that exception is what the caller sees.
        return Err(Error::runtime("a Java exception is pending"));
    }
    open.enter(container, |a, b| env.is_same_object(*a, *b))?;
    // Every local reference made for this level goes with its frame.
    let converted = if env.push_local_frame(8) {
        let converted = container_items(env, kind, container, open);
        env.pop_local_frame(std::ptr::null_mut());
        converted
    } else {
        Err(Error::runtime("out of JVM local references while converting a container"))
    };
    open.leave();
    converted
}

/// [`container_to_any`]'s body, once `container` is entered.
fn container_items(env: Env, kind: i32, container: jobject, open: &mut Nesting<jobject>) -> Result<Any> {
    let c = classes::get();
    let method = if kind == KIND_MAP { c.marshal_map_items } else { c.marshal_list_items };
    // SAFETY: `listItems` / `mapItems(Object) -> Object[]`, resolved at init.
    let encoded = unsafe { env.call_static_object(c.marshal, method, &[jvalue { l: container }]) };
    if encoded.is_null() || env.exception_check() {
        return Err(Error::runtime("converting a Java container failed"));
    }
    let (kinds, bits, refs) =
        (env.object_array_get(encoded, 0), env.object_array_get(encoded, 1), env.object_array_get(encoded, 2));
    // SAFETY: `Marshal` encoded the items: wrappers' handles with the wrappers reachable from
    // `container` (kept by the caller), or owned handles this decoding takes over.
    let items = unsafe { decode_items(env, kinds, bits, refs, open) }.map_err(|(_, e)| e)?;
    if kind == KIND_MAP {
        let mut entries = Vec::with_capacity(items.len() / 2);
        let mut it = items.into_iter();
        while let (Some(key), Some(value)) = (it.next(), it.next()) {
            entries.push((key, value));
        }
        return Ok(Any::object(catch_out_of_memory(|| MapObj::new(entries))?.into()));
    }
    Ok(Any::object(catch_out_of_memory(|| ArrayObj::new(items))?.into()))
}

/// Decode `(kinds[i], bits[i], refs[i])` arrays into owned cells: a call's arguments. The
/// error names the argument that failed (see [`ArgumentError::named`]).
///
/// # Safety
/// As [`decode`], for every element.
pub unsafe fn decode_arrays(
    env: Env,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
) -> std::result::Result<Vec<Any>, ArgumentError> {
    if kinds.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the caller's guarantee; each argument's containers nest from an empty stack.
    unsafe { decode_items(env, kinds, bits, refs, &mut Nesting::new()) }
        .map_err(|(index, error)| ArgumentError { index, error })
}

/// Argument `index` (0-based) of a call failed to decode with `error`.
pub struct ArgumentError {
    pub index: usize,
    pub error: Error,
}

impl ArgumentError {
    /// The error, its message naming the argument of a call of `function` by the core's words
    /// (`argument_message`: the parameter's name when the signature has one). `receiver`: the
    /// caller's arguments come after a receiver it did not write (a method's `self`).
    pub fn named(self, function: &FunctionObj, receiver: bool) -> Error {
        let message = argument_message(function, self.index + receiver as usize, self.error.message());
        self.error.reworded(message)
    }
}

/// [`decode_arrays`] for items nested in the containers `open` holds. Every item is decoded
/// even after a failure, so owned handles are always consumed (containers after a failure
/// are skipped: their items are not encoded yet).
///
/// # Safety
/// As [`decode`], for every element.
unsafe fn decode_items(
    env: Env,
    kinds: jobject,
    bits: jobject,
    refs: jobject,
    open: &mut Nesting<jobject>,
) -> std::result::Result<Vec<Any>, (usize, Error)> {
    let n = env.array_length(kinds).max(0) as usize;
    nesting::check_items(n).map_err(|e| (0, e))?;
    let mut k = vec![0i32; n];
    let mut b = vec![0i64; n];
    env.int_array_region(kinds, &mut k);
    env.long_array_region(bits, &mut b);
    let mut out = Vec::with_capacity(n);
    let mut first_error = None;
    for i in 0..n {
        let r = if kind_uses_ref(k[i]) { env.object_array_get(refs, i as i32) } else { std::ptr::null_mut() };
        let item = match k[i] {
            KIND_LIST | KIND_MAP if first_error.is_some() => Ok(Any::none()),
            KIND_LIST | KIND_MAP => container_to_any(env, k[i], r, open),
            _ => {
                let mut hold = Any::none();
                // SAFETY: the caller's guarantee for this element.
                unsafe { decode(env, k[i], b[i], r, &mut hold) }.map(|v| v.to_owned_any())
            }
        };
        env.delete_local_ref(r);
        match item {
            Ok(v) => out.push(v),
            Err(e) => {
                first_error.get_or_insert((i, e));
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// An owned value to a Java object (a local reference; null for None).
pub fn to_java(env: Env, value: Any) -> Result<jobject> {
    let c = classes::get();
    let view = value.view();
    // SAFETY (all static calls below): the method IDs were resolved with these signatures.
    let out = match value.type_index() {
        TypeIndex::NONE => std::ptr::null_mut(),
        TypeIndex::INT => match view.as_int().unwrap_or(0) {
            i @ classes::SMALL_LONG_MIN..=classes::SMALL_LONG_MAX => {
                env.new_local_ref(c.small_longs[(i - classes::SMALL_LONG_MIN) as usize])
            }
            // SAFETY: `valueOf(J)` was resolved on Long with this signature.
            i => unsafe { env.call_static_object(c.long, c.long_value_of, &[jvalue { j: i }]) },
        },
        // SAFETY: `valueOf(D)` was resolved on Double with this signature.
        TypeIndex::FLOAT => unsafe {
            env.call_static_object(c.double, c.double_value_of, &[jvalue { d: view.as_float().unwrap_or(0.0) }])
        },
        // SAFETY: `valueOf(Z)` was resolved on Boolean with this signature.
        TypeIndex::BOOL => unsafe {
            env.call_static_object(c.boolean, c.boolean_value_of, &[jvalue { z: view.as_bool().unwrap_or(false) }])
        },
        // SAFETY: `valueOf(J)` was resolved on Long with this signature.
        TypeIndex::OPAQUE_PTR => unsafe {
            env.call_static_object(
                c.long,
                c.long_value_of,
                &[jvalue { j: view.as_opaque_ptr().unwrap_or(std::ptr::null_mut()) as i64 }],
            )
        },
        TypeIndex::SMALL_STR | TypeIndex::STR | TypeIndex::RAW_STR => env.new_string(view.as_str().unwrap_or("")),
        TypeIndex::SMALL_BYTES | TypeIndex::BYTES | TypeIndex::RAW_BYTES => {
            env.new_byte_array(view.as_bytes().unwrap_or(&[]))
        }
        t if t >= TypeIndex::OBJECT => {
            return tie::to_wrapper(env, value.into_object().expect("object kinds hold an object"));
        }
        t => return Err(Error::type_error(format!("cannot convert a value of kind {t} to Java"))),
    };
    if env.exception_check() {
        env.clear_exception();
        return Err(Error::runtime("cannot convert a native value to Java (allocation failed)"));
    }
    Ok(out)
}

/// Read a live object handle as a borrowed `ObjectRef`-free view check: is it a Function?
pub fn is_function(handle: *mut tether_core::ObjectHeader) -> bool {
    // SAFETY: Java only passes handles of live wrappers.
    unsafe { (*handle).type_index == <FunctionObj as tether_core::Object>::type_index() }
}
