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
use crate::error::{Error, Result};
use crate::function::{Function, FunctionObj};
use crate::object::Object;

/// A Rust argument type.
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
}

/// A Rust result type.
pub trait IntoRet {
    fn into_ret(self) -> Result<Any>;
}

/// Convert argument `position` (1-based) of `func`, or a TypeError naming it.
#[inline]
pub fn arg<T: FromArg>(func: &str, position: usize, v: &AnyView<'_>) -> Result<T> {
    T::from_arg(v).ok_or_else(|| arg_error::<T>(func, position, v))
}

/// The TypeError for argument `position` (1-based) of `func` that is not a `T`.
#[cold]
#[inline(never)]
pub(crate) fn arg_error<T: FromArg>(func: &str, position: usize, v: &AnyView<'_>) -> Error {
    Error::type_error(argument_message(func, position, &format!("expected {}, got {}", T::expected(), v.kind_name())))
}

/// The words of every argument error: `message` prefixed with the function and the
/// argument's position, counted from 1 (`testing.echo() argument 1: ...`).
pub fn argument_message(func: &str, position: usize, message: &str) -> String {
    format!("{func}() argument {position}: {message}")
}

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            const FROM_OBJECTS: bool = false;
            fn from_arg(v: &AnyView<'_>) -> Option<Self> {
                v.as_int().and_then(|i| <$t>::try_from(i).ok())
            }
            fn expected() -> String {
                if std::mem::size_of::<$t>() == 8 && <$t>::MIN != 0 { "int".into() } else { format!("int (in {} range)", stringify!($t)) }
            }
        }
        impl IntoRet for $t {
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
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_float().or_else(|| v.as_int().map(|i| i as f64))
    }
    fn expected() -> String {
        "float".into()
    }
}
impl IntoRet for f64 {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::float(self))
    }
}

impl FromArg for bool {
    const FROM_OBJECTS: bool = false;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_bool()
    }
    fn expected() -> String {
        "bool".into()
    }
}
impl IntoRet for bool {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::bool(self))
    }
}

impl FromArg for String {
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_str().map(str::to_owned)
    }
    fn expected() -> String {
        "str".into()
    }
}
impl IntoRet for String {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::str(&self))
    }
}
impl IntoRet for &str {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::str(self))
    }
}

impl FromArg for Vec<u8> {
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.as_bytes().map(<[u8]>::to_vec)
    }
    fn expected() -> String {
        "bytes".into()
    }
}
impl IntoRet for Vec<u8> {
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
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.to_object()
    }
    fn expected() -> String {
        "object".into()
    }
}
impl IntoRet for ObjectRef {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self))
    }
}

impl<T: Object + Send + Sync> FromArg for ObjectArc<T> {
    // `to_object` adopts, a failed cast drops: consumed either way.
    const ADOPTS_LENT: bool = true;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        v.to_object()?.try_cast::<T>().ok()
    }
    fn expected() -> String {
        T::TYPE_KEY.into()
    }
}
impl<T: Object + Send + Sync> IntoRet for ObjectArc<T> {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self.into()))
    }
}

impl FromArg for Function {
    const ADOPTS_LENT: bool = true;
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        ObjectArc::<FunctionObj>::from_arg(v).map(Function)
    }
    fn expected() -> String {
        "function".into()
    }
}
impl IntoRet for Function {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self.0.into()))
    }
}

impl<T: FromArg> FromArg for Option<T> {
    const ADOPTS_LENT: bool = T::ADOPTS_LENT;
    const FROM_OBJECTS: bool = T::FROM_OBJECTS;
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
    fn into_ret(self) -> Result<Any> {
        self.map_or(Ok(Any::none()), T::into_ret)
    }
}

impl IntoRet for () {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::none())
    }
}

impl<T: IntoRet> IntoRet for Result<T> {
    fn into_ret(self) -> Result<Any> {
        self.and_then(T::into_ret)
    }
}

impl IntoRet for Error {
    fn into_ret(self) -> Result<Any> {
        Ok(Any::object(self.into_object()))
    }
}
