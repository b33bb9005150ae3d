//! Helpers shared by the core's integration tests (each tests/*.rs is its own process).
#![allow(dead_code)]

use std::sync::{Mutex, MutexGuard};

use tether_core::function::get_global;
use tether_core::{Any, AnyView, Result};

/// `live_objects` is process-wide, so tests that compare it with a baseline run one at a
/// time within their test binary: every test of such a file holds this guard.
pub fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    tether_core::init();
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Call the global function `name`.
pub fn call(name: &str, args: &[AnyView<'_>]) -> Result<Any> {
    let f = get_global(name).unwrap_or_else(|| panic!("global function {name} is not registered"));
    f.call(args)
}

/// Iterations: full natively, a few under Miri (which is ~1000x slower).
pub const fn iters(native: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        native
    }
}
