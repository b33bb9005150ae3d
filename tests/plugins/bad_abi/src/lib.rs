//! Claims ABI 99.0: every host must refuse it with a clear error, without calling init.

#[no_mangle]
pub static tether_module_abi: u32 = 99 << 16;

/// Never called by a correct host.
#[no_mangle]
pub extern "C" fn tether_module_init(_api: *const u8, _module: *mut u8) -> i32 {
    std::process::abort()
}
