//! Stored callbacks called as typed closures: `Callback<(String, i64), bool>` is a Function
//! (a language's callable, or a native one) that native code calls with Rust values and whose
//! result comes back as a Rust value, each converted by the one set of rules in [`crate::convert`].
//! As a parameter it reads as `Callable[[str, int], bool]` in every language's signature.

use std::marker::PhantomData;

use crate::any::{Any, AnyView};
use crate::convert::{FromArg, IntoRet};
use crate::error::{Error, Result};
use crate::function::Function;
use crate::signature::Ty;

/// The argument list of a [`Callback`]: a tuple of values that convert by [`IntoRet`].
pub trait CallbackArgs {
    /// The parameter types, in order.
    const TYPES: &'static [Ty];
    fn into_anys(self) -> Result<Vec<Any>>;
}

macro_rules! callback_args {
    ($($a:ident $i:tt),*) => {
        impl<$($a: IntoRet),*> CallbackArgs for ($($a,)*) {
            const TYPES: &'static [Ty] = &[$(<$a as IntoRet>::TYPE),*];
            #[allow(clippy::vec_init_then_push, unused_mut)]
            fn into_anys(self) -> Result<Vec<Any>> {
                let mut out = Vec::new();
                $(out.push(self.$i.into_ret()?);)*
                Ok(out)
            }
        }
    };
}
callback_args!();
callback_args!(A0 0);
callback_args!(A0 0, A1 1);
callback_args!(A0 0, A1 1, A2 2);
callback_args!(A0 0, A1 1, A2 2, A3 3);
callback_args!(A0 0, A1 1, A2 2, A3 3, A4 4);

/// A Function called with the arguments `A` (a tuple) and returning an `R`.
pub struct Callback<A, R> {
    function: Function,
    _types: PhantomData<fn(A) -> R>,
}

impl<A, R> Clone for Callback<A, R> {
    fn clone(&self) -> Self {
        Callback { function: self.function.clone(), _types: PhantomData }
    }
}

impl<A: CallbackArgs, R: FromArg> Callback<A, R> {
    /// A typed view of `function` (its own signature is not checked: a language's callable has
    /// none, and the result is checked on every call instead).
    pub fn new(function: Function) -> Self {
        Callback { function, _types: PhantomData }
    }

    /// Call it: the arguments convert to values, the result back to an `R`, or a TypeError
    /// naming what came back.
    pub fn call(&self, args: A) -> Result<R> {
        let args = args.into_anys()?;
        let views: Vec<AnyView<'_>> = args.iter().map(Any::view).collect();
        let result = self.function.call(&views)?;
        R::from_arg(&result.view()).ok_or_else(|| {
            Error::type_error(format!(
                "the callback {} returned {}, but {} was expected",
                self.function.name(),
                result.view().kind_name(),
                R::expected()
            ))
        })
    }

    /// The Function itself (its identity: the language's callable it came from).
    pub fn function(&self) -> &Function {
        &self.function
    }
}

impl<A: CallbackArgs, R: FromArg> FromArg for Callback<A, R> {
    const ADOPTS_LENT: bool = true;
    const TYPE: Ty = Ty::Callable(A::TYPES, &<R as FromArg>::TYPE);
    fn from_arg(v: &AnyView<'_>) -> Option<Self> {
        Function::from_arg(v).map(Callback::new)
    }
    fn expected() -> String {
        "function".into()
    }
}

impl<A: CallbackArgs, R: FromArg> IntoRet for Callback<A, R> {
    const TYPE: Ty = Ty::Callable(A::TYPES, &<R as FromArg>::TYPE);
    fn into_ret(self) -> Result<Any> {
        self.function.into_ret()
    }
}
