//! tether-node: the Node.js frontend of tether (the `tether-ffi` npm package's addon).
//!
//! Module map:
//! - [`raw`]: thin helpers over raw Node-API
//! - [`env`]: per-environment state (instance data, cleanup hook) and the allocator tag
//! - [`tie`]: wrappers, the `TieHost` adapter, finalizers and dispose
//! - [`convert`]: JS values <-> tether values
//! - [`call`]: the native-function hot path and `callAsync`
//! - [`callback`]: JS functions as native Functions, cross-thread calls
//! - [`host_value`]: other JS objects held by native code, coming back as themselves
//! - [`errors`]: tether errors <-> JS exceptions
//! - [`api`]: the cold-path exports index.js builds the public API from
//!
//! napi-rs registers the module and the plain-data exports; every call, return and field
//! read goes through raw Node-API (the macro layer costs ~110 ns per call: docs/benchmarks.md).

mod api;
mod call;
mod callback;
mod convert;
mod env;
mod errors;
mod host_value;
mod raw;
mod tie;

use napi::JsValue;
use napi_derive::napi;

/// Sets up this env's state and adds the raw exports (called by napi-rs at module load).
#[napi(module_exports)]
pub fn init(exports: napi::bindgen_prelude::Object, env: napi::Env) -> napi::Result<()> {
    // SAFETY: napi-rs passes the env loading this module, live for the call, on its JS thread.
    let raw_env = unsafe { raw::Env::from_raw(env.raw()) };
    // Another frontend's tether-core runs this process: this copy must not become a second host.
    if let Some(other) = tether_core::plugin::other_host() {
        let why = tether_core::plugin::other_host_error("tether-node", &other);
        return Err(napi::Error::from_reason(why.message().to_string()));
    }
    let setup = env::init_env(raw_env).and_then(|state| api::export_all(&state, raw_env, exports.raw()));
    setup.map_err(|fail| match fail {
        raw::Fail::Native(e) => napi::Error::from_reason(format!("tether-node could not initialise: {e}")),
        raw::Fail::Pending => napi::Error::from_reason("tether-node could not initialise (a JS exception is pending)"),
    })
}

/// Every registered global function name, sorted.
#[napi]
pub fn list_global_funcs() -> Vec<String> {
    tether_core::function::list_globals()
}

/// One registered type.
#[napi(object)]
pub struct TypeEntry {
    pub index: i32,
    pub key: String,
}

/// Every registered type, by index.
#[napi]
pub fn list_types() -> Vec<TypeEntry> {
    tether_core::types::list_types().into_iter().map(|(index, key)| TypeEntry { index, key: key.to_string() }).collect()
}

/// Native objects allocated and not yet freed (process-wide).
#[napi]
pub fn live_objects() -> i64 {
    tether_core::alloc::live_objects()
}
