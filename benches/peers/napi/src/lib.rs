//! The napi-rs peer: what the `#[napi]` macro layer costs for each workload.

use napi::bindgen_prelude::*;
use napi::{Env, UnknownRef};
use napi_derive::napi;

/// W1: return the argument itself.
#[napi]
pub fn echo<'a>(x: Unknown<'a>) -> Unknown<'a> {
    x
}

/// W3: three ints in, one int out.
#[napi]
pub fn add3(a: i64, b: i64, c: i64) -> i64 {
    a.wrapping_add(b).wrapping_add(c)
}

/// W7: call back into JS with no arguments.
#[napi]
pub fn call<'a>(f: Function<'a, (), Unknown<'a>>) -> Result<Unknown<'a>> {
    f.call(())
}

/// Two object-typed fields held as strong references (null/undefined: none), released when
/// the wrapper is collected.
#[napi(custom_finalize)]
pub struct Pair {
    first: Option<UnknownRef<false>>,
    second: Option<UnknownRef<false>>,
}

#[napi]
impl Pair {
    /// W4: construct with two fields.
    #[napi(constructor)]
    pub fn new(first: Option<UnknownRef<false>>, second: Option<UnknownRef<false>>) -> Self {
        Pair { first, second }
    }

    /// W2: read an object-typed field (the stored object itself).
    #[napi(getter)]
    pub fn first<'env>(&self, env: &'env Env) -> Result<Option<Unknown<'env>>> {
        self.first.as_ref().map(|r| r.get_value(env)).transpose()
    }

    #[napi(getter)]
    pub fn second<'env>(&self, env: &'env Env) -> Result<Option<Unknown<'env>>> {
        self.second.as_ref().map(|r| r.get_value(env)).transpose()
    }
}

impl ObjectFinalize for Pair {
    fn finalize(self, env: Env) -> Result<()> {
        for r in [self.first, self.second].into_iter().flatten() {
            r.unref(&env)?;
        }
        Ok(())
    }
}
