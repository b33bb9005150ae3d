//! The argument and result conversion rules, written once for every frontend and plugin.
//!
//! [`FromArg`] turns a borrowed cell into a Rust argument (or says what it expected);
//! [`IntoRet`] turns a Rust result into an owned cell. Typed closures
//! ([`crate::Function::from_typed`]) and reflection getters/setters use both.
//!
//! | Rust | accepts | returns as |
//! |---|---|---|
//! | `i64`, `i32`, `u32`, `usize` | int (range-checked) | int |
//! | `f64` | float or int | float |
//! | `bool` | bool | bool |
//! | `String` | str (inline, view or Str) | str |
//! | `Vec<u8>` | bytes | bytes |
//! | `Any` | anything (views are copied) | as is |
//! | `ObjectRef` | any object | the object |
//! | `ObjectArc<T>` | an object of type `T` or a subtype | the object |
//! | `Function` | a Function | the Function |
//! | `Option<T>` | None or what `T` accepts | None or `T` |
//! | `()` | — | None |

use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::{ObjectArc, ObjectRef};
use crate::containers::{ArrayObj, MapObj};
use crate::error::{Error, Result};
use crate::function::{Function, FunctionObj};
use crate::object::Object;
use crate::signature::Ty;

/// A Rust argument type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tether argument: it does not implement FromArg",
    label = "no conversion from a tether value",
    note = "arguments are numbers, bool, String (or &str), Vec<u8>, Vec<T>, HashMap<K, V>, Option<T>, Any, \
            ObjectRef, ObjectArc<T>, Function, Callback<(A..), R>, or a type with its own `impl FromArg`"
)]
pub trait FromArg: Sized {
    /// Convert, or `None` when the cell holds the wrong kind.
    fn from_arg(v: &AnyView<'_>) -> Option<Self>;
    /// The expected kind, for error messages ("int", "testing.Pair", "int or None").
    fn expected() -> String;
    /// True when `from_arg` takes over a lent object argument in every outcome (kept in the
    /// value, or dropped on a mismatch; see `AnyView::lent_object`). Conversions that only
    /// read the cell (numbers, strings) keep the default, and the typed call releases a lent
    /// argument right after converting it.
    const ADOPTS_LENT: bool = false;
    /// False when a successful conversion implies the cell held no object (numbers, bools),
    /// so the typed call need not look for a lent object to release after one.
    const FROM_OBJECTS: bool = true;
    /// The parameter's type descriptor in signatures (Any unless the type says more).
    const TYPE: Ty = Ty::Any;
    /// True for int parameters (`i64`, `i32`, ...): converted from an int alone, so a typed
    /// closure of int parameters and result gets an int entry (`FUNC_INT_ENTRY`).
    const INT: bool = false;
}

/// A Rust result type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tether result: it does not implement IntoRet",
    label = "no conversion into a tether value",
    note = "results are (), numbers, bool, String, Vec<u8>, Vec<T>, HashMap<K, V>, Option<T>, Any, ObjectRef, \
            ObjectArc<T>, Function, tether's Result<T>, or a type with its own `impl IntoRet`"
)]
pub trait IntoRet {
    fn into_ret(self) -> Result<Any>;
    /// The result's type descriptor in signatures (Any unless the type says more).
    const TYPE: Ty = Ty::Any;
    /// True when the result is always an int (or an error): see [`FromArg::INT`].
    const INT: bool = false;
}

/// Convert argument `position` (1-based) of `func`, or a TypeError naming it.
#[inline]
pub fn arg<T: FromArg>(func: &str, position: usize, v: &AnyView<'_>) -> Result<T> {
    T::from_arg(v).ok_or_else(|| {
        Error::type_error(format!("{func}() argument {position} must be {}, not {}", T::expected(), v.kind_name()))
    })
}

/// The TypeError for argument `index` (0-based, a receiver counted) of `func` that is not a
/// `T`: "scene.Scene.find() argument 'name' must be str, not int".
#[cold]
#[inline(never)]
pub(crate) fn arg_error<T: FromArg>(func: &FunctionObj, index: usize, v: &AnyView<'_>) -> Error {
    Error::type_error(format!(
        "{}() argument {} must be {}, not {}",
        func.name_str(),
        argument_label(func, index),
        T::expected(),
        v.kind_name()
    ))
}

/// How messages name argument `index` (0-based, a receiver counted) of `func`: `'name'` when
/// its signature names it, else its position among what the caller wrote, from 1.
pub fn argument_label(func: &FunctionObj, index: usize) -> String {
    match func.signature() {
        Some(sig) => sig.argument_label(index),
        None => (index + 1).to_string(),
    }
}

/// The words of every other argument error: `message` after the function and the argument's
/// label (`testing.echo() argument 1: ...`, `scene.Scene.find() argument 'name': ...`).
pub fn argument_message(func: &FunctionObj, index: usize, message: &str) -> String {
    labelled_argument_message(func.name_str(), &argument_label(func, index), message)
}

/// [`argument_message`] for a caller that has the function's name and the argument's label
/// (`'name'`, or a position from 1) but not the function object.
pub fn labelled_argument_message(func: &str, label: &str, message: &str) -> String {
    format!("{func}() argument {label}: {message}")
}

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            const FROM_OBJECTS: bool = false;
            const TYPE: Ty = Ty::Int;
            const INT: bool = true;
            fn from_arg(v: &AnyView<'_>) -> Option<Self> {
                v.as_int().and_then(|i| <$t>::try_from(i).ok())
            }
            fn expected() -> String {
                if std::mem::size_of::<$t>() == 8 && <$t>::MIN != 0 { "int".into() } else { format!("int (in {} range)", stringify!($t)) }
            }
        }
        impl IntoRet for $t {
            const TYPE: Ty = Ty::Int;
            const INT: bool = true;
            fn into_ret(self) -> Result<Any> {
                i64::try_from(self)
                    .map(Any::int)
                    .map_err(|_| Error::value(format!("{self} does not fit in a 64-bit signed int")))
            }
        }
    )*};
}
int_arg!(i64, i32, u32, u64, usize);

impl FromArg for f64 {
    const FROM_OBJECTS: bool = false;
    const TYPE: Ty = Ty::Float;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_float().or_else(|| v.as_int().map(|i| i as f64))
    }
    fn expected() -> String {
        "float".into()
    }
}
impl IntoRet for f64 {
    const TYPE: Ty = Ty::Float;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::float(self))
    }
}

impl FromArg for bool {
    const FROM_OBJECTS: bool = false;
    const TYPE: Ty = Ty::Bool;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_bool()
    }
    fn expected() -> String {
        "bool".into()
    }
}
impl IntoRet for bool {
    const TYPE: Ty = Ty::Bool;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::bool(self))
    }
}

impl FromArg for String {
    const TYPE: Ty = Ty::Str;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_str().map(str::to_owned)
    }
    fn expected() -> String {
        "str".into()
    }
}
impl IntoRet for String {
    const TYPE: Ty = Ty::Str;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::str(&self))
    }
}
impl IntoRet for &str {
    const TYPE: Ty = Ty::Str;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::str(self))
    }
}

impl FromArg for Vec<u8> {
    const TYPE: Ty = Ty::Bytes;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_bytes().map(<[u8]>::to_vec)
    }
    fn expected() -> String {
        "bytes".into()
    }
}
impl IntoRet for Vec<u8> {
    const TYPE: Ty = Ty::Bytes;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::bytes(&self))
    }
}

impl FromArg for Any {
    const ADOPTS_LENT: bool = true;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        Some(v.to_owned_any())
    }
    fn expected() -> String {
        "any value".into()
    }
}
impl IntoRet for Any {
    fn into_ret(self) -> Result<Any> {
        Ok(self)
    }
}

impl FromArg for ObjectRef {
    const ADOPTS_LENT: bool = true;
    const TYPE: Ty = Ty::Object("tether.Object");
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.to_object()
    }
    fn expected() -> String {
        "object".into()
    }
}
impl IntoRet for ObjectRef {
    const TYPE: Ty = Ty::Object("tether.Object");
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self))
    }
}

impl<T: Object + Send + Sync> FromArg for ObjectArc<T> {
    // `to_object` adopts, a failed cast drops: consumed either way.
    const ADOPTS_LENT: bool = true;
    const TYPE: Ty = Ty::Object(T::TYPE_KEY);
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.to_object()?.try_cast::<T>().ok()
    }
    fn expected() -> String {
        T::TYPE_KEY.into()
    }
}
impl<T: Object + Send + Sync> IntoRet for ObjectArc<T> {
    const TYPE: Ty = Ty::Object(T::TYPE_KEY);
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self.into()))
    }
}

impl FromArg for Function {
    const ADOPTS_LENT: bool = true;
    const TYPE: Ty = Ty::Function;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        ObjectArc::<FunctionObj>::from_arg(v).map(Function)
    }
    fn expected() -> String {
        "function".into()
    }
}
impl IntoRet for Function {
    const TYPE: Ty = Ty::Function;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self.0.into()))
    }
}

impl<T: FromArg> FromArg for Option<T> {
    const ADOPTS_LENT: bool = T::ADOPTS_LENT;
    const FROM_OBJECTS: bool = T::FROM_OBJECTS;
    const TYPE: Ty = Ty::Optional(&T::TYPE);
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        if v.type_index() == TypeIndex::NONE {
            Some(None)
        } else {
            T::from_arg(v).map(Some)
        }
    }
    fn expected() -> String {
        format!("{} or None", T::expected())
    }
}
impl<T: IntoRet> IntoRet for Option<T> {
    const TYPE: Ty = Ty::Optional(&T::TYPE);
    fn into_ret(self) -> Result<Any> {
        self.map_or(Ok(Any::none()), T::into_ret)
    }
}

impl IntoRet for () {
    const TYPE: Ty = Ty::None;
    fn into_ret(self) -> Result<Any> {
        Ok(Any::none())
    }
}

/// (An author's own error type converts into [`Error`] by `impl From<MyError> for Error`,
/// which picks its kind; the export macros apply it to `Result<T, MyError>`. A blanket impl
/// over every error type would leave closures' `Ok(..)` without an inferable error type.)
impl<T: IntoRet> IntoRet for Result<T> {
    const TYPE: Ty = T::TYPE;
    const INT: bool = T::INT;
    fn into_ret(self) -> Result<Any> {
        self.and_then(T::into_ret)
    }
}

/// A list: an Array of the items (each converted by `T`'s rule).
impl<T: FromArg> FromArg for Vec<T> {
    const TYPE: Ty = Ty::Array(&T::TYPE);
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.downcast_ref::<ArrayObj>()?.items().iter().map(|item| T::from_arg(&item.view())).collect()
    }
    fn expected() -> String {
        format!("Array of {}", T::expected())
    }
}
impl<T: IntoRet> IntoRet for Vec<T> {
    const TYPE: Ty = Ty::Array(&T::TYPE);
    fn into_ret(self) -> Result<Any> {
        let items = self.into_iter().map(T::into_ret).collect::<Result<Vec<Any>>>()?;
        Ok(Any::object(ArrayObj::new(items).into()))
    }
}

/// A dictionary: a Map (keys and values converted by their types' rules).
impl<K: FromArg + Eq + std::hash::Hash, V: FromArg> FromArg for std::collections::HashMap<K, V> {
    const TYPE: Ty = Ty::Map(&K::TYPE, &V::TYPE);
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.downcast_ref::<MapObj>()?
            .entries()
            .map(|(k, v)| Some((K::from_arg(&k.view())?, V::from_arg(&v.view())?)))
            .collect()
    }
    fn expected() -> String {
        format!("Map of {} to {}", K::expected(), V::expected())
    }
}
impl<K: IntoRet, V: IntoRet> IntoRet for std::collections::HashMap<K, V> {
    const TYPE: Ty = Ty::Map(&K::TYPE, &V::TYPE);
    fn into_ret(self) -> Result<Any> {
        let entries =
            self.into_iter().map(|(k, v)| Ok((k.into_ret()?, v.into_ret()?))).collect::<Result<Vec<(Any, Any)>>>()?;
        Ok(Any::object(MapObj::new(entries).into()))
    }
}

impl IntoRet for Error {
    const TYPE: Ty = Ty::Object("tether.Error");
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self.into_object()))
    }
}
