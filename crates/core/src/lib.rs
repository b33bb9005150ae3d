//! tether-core: one native object, one wrapper per language, for the object's whole life.
//!
//! The crate is the ABI every frontend and plugin stands on. Module map:
//! - [`object`]: the 24-byte object header and its reference count protocol
//! - [`alloc`]: the process-wide allocator registry (every object is allocated through it)
//! - [`arc`]: `ObjectArc<T>` / `WeakObjectArc<T>` / untyped `ObjectRef`
//! - [`any`]: the 16-byte `Any` / `AnyView` value cells
//! - [`constants`]: the numbers and names that cross languages, listed once
//! - [`convert`]: Rust <-> `Any` conversion rules (shared by every frontend)
//! - [`error`]: `Error` objects and the thread-local raised slot
//! - [`nesting`]: the cycle and depth limit on converting nested language containers
//! - [`function`]: `Function` objects, the `safe_call` ABI, typed closures, the global registry
//! - [`signature`]: parameter names, type descriptors, defaults, keyword binding, naming rules
//! - [`callback`]: stored callbacks called as typed closures (`Callback<(A, B), R>`)
//! - [`types`]: the type registry with reflection
//! - [`containers`]: Str, Bytes, Array, Map
//! - [`host_value`]: a language's own object held by native code (`tether.HostValue`)
//! - [`slot`]: the slot word's bits and the prefix memory a frontend allocator lays out
//! - [`tying`]: the identity-tying state machine (the slot word's transitions)
//! - [`boundary`]: the tying protocol composed once: return, release, leaf-call arguments
//! - [`plugin`]: the versioned API table and module loading
//! - [`ffi`]: the C ABI declared in `include/tether.h`
//! - [`testing`]: the `testing.*` namespace used by every conformance suite

pub mod address_map;
pub mod alloc;
pub mod any;
pub mod arc;
pub mod boundary;
pub mod callback;
mod catch_frame;
pub mod cell;
pub mod constants;
pub mod containers;
pub mod convert;
pub mod error;
pub mod ffi;
pub mod function;
pub mod host_value;
pub mod manifest;
pub mod nesting;
pub mod object;
pub mod plugin;
pub mod signature;
pub mod slot;
mod spin;
pub mod testing;
mod thread_alloc;
mod thread_owners;
pub mod thread_spares;
pub mod tying;
pub mod types;

pub use any::{Any, AnyView, TypeIndex};
pub use arc::{ObjectArc, ObjectRef, WeakObjectArc};
pub use callback::Callback;
pub use containers::{ArrayObj, BytesObj, MapObj, StrObj};
pub use error::{Error, ErrorKind, Result};
pub use function::{Function, FunctionRef};
pub use object::{Object, ObjectHeader};
pub use types::{TypeBuilder, TypeInfo, TYPE_WEAK_REFERENCEABLE};

static INIT_DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Has [`init`] completed in this copy of tether-core (as a host)?
pub fn initialised() -> bool {
    INIT_DONE.load(std::sync::atomic::Ordering::Acquire)
}

/// Initialise the runtime: builtin types, container functions and the `testing` namespace.
/// Idempotent and cheap after the first call; every public entry point that needs the
/// registries calls it. Re-entrant calls from inside initialisation return at once. In a
/// plugin it does nothing: the host's registries are already initialised.
pub fn init() {
    use std::sync::atomic::Ordering;
    static DONE: &std::sync::atomic::AtomicBool = &INIT_DONE;
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    thread_local!(static INITIALISING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if DONE.load(Ordering::Acquire) || INITIALISING.with(|c| c.get()) || plugin::is_plugin() {
        return;
    }
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if DONE.load(Ordering::Acquire) {
        return;
    }
    INITIALISING.with(|c| c.set(true));
    error::prepare_out_of_memory();
    types::register_builtin_types();
    containers::register_functions();
    testing::register();
    INITIALISING.with(|c| c.set(false));
    DONE.store(true, Ordering::Release);
}
