//! The C ABI: the host's implementation of every [`ApiTable`] entry (declared for C in
//! `include/tether.h`). Each entry catches panics; failures return nonzero (or null) with an
//! `Error` in the raised slot.

use std::ffi::c_void;

use crate::alloc::{self, AllocateFn, FreeFn};
use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::{ObjectArc, ObjectRef};
use crate::containers::{ArrayObj, StrObj};
use crate::error::{catch_panic, ffi_status, local_set_last_error, local_take_last_error, set_last_error, Error};
use crate::function::{self, DataDropFn, Function, SafeCallFn};
use crate::object::{self, ObjectHeader};
use crate::plugin::{ApiTable, ByteSlice, PendingModule, ABI_MAJOR, ABI_MINOR};
use crate::signature::SignatureInfo;
use crate::types::{self, TypeInfo};

/// Return an owned object pointer, or null with the error raised.
fn ffi_object(f: impl FnOnce() -> crate::Result<ObjectRef>) -> *mut ObjectHeader {
    match catch_panic(f) {
        Ok(obj) => obj.into_raw(),
        Err(e) => {
            set_last_error(e);
            std::ptr::null_mut()
        }
    }
}

/// Is a cell that came from C one the core can read? Value kinds (None to small bytes; the
/// borrowed views RAW_STR / RAW_BYTES too unless the cell is an owned result, which cannot
/// borrow), or an object of a registered type whose header agrees. Anything else (a negative
/// index, one in the gap below `TypeIndex::OBJECT`, an unregistered type) is a ValueError
/// naming `what`, before any code reads the payload as a pointer or drops it.
fn check_cell(what: &dyn Fn() -> String, view: AnyView<'_>, owned: bool) -> crate::Result<()> {
    let kind = view.type_index();
    let bad = |why: String| Err(Error::value(format!("{} {why}", what())));
    match kind {
        TypeIndex::NONE..=TypeIndex::SMALL_BYTES => Ok(()),
        TypeIndex::RAW_STR | TypeIndex::RAW_BYTES if !owned => Ok(()),
        TypeIndex::RAW_STR | TypeIndex::RAW_BYTES => {
            bad(format!("is a borrowed view (kind {kind}), which a result cannot be: results own their values"))
        }
        k if k >= TypeIndex::OBJECT && types::local_type_info(k).is_some() => {
            let ptr = view.as_object_ptr().unwrap_or(std::ptr::null_mut());
            if ptr.is_null() || !ptr.is_aligned() {
                return bad(format!("claims an object of type {:?} but holds no object pointer", types::kind_name(k)));
            }
            // SAFETY: a cell of an object kind carries a live object (the ABI's contract for every
            // cell); the pointer is non-null and aligned, and only the header's index is read.
            let header_kind = unsafe { (*ptr).type_index };
            if header_kind != k {
                return bad(format!(
                    "claims type {:?} (index {k}) but its object's header says index {header_kind}",
                    types::kind_name(k)
                ));
            }
            Ok(())
        }
        k => bad(format!(
            "has type index {k}, which is neither a value kind (0..={}) nor a registered type: the cell is refused unread",
            TypeIndex::RAW_BYTES
        )),
    }
}

/// The `safe_call` of every Function a C plugin makes (`make_function`): the plugin's own
/// Function is the `data`, called with the same arguments; its result is checked
/// ([`check_cell`]) before any frontend or core code reads it. A refused result is not dropped
/// (its payload is not trusted as a pointer): the caller's cell is None again, and the call
/// fails with a ValueError naming the function.
unsafe extern "C" fn checked_safe_call(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    // SAFETY: `handle` is a Function made by `api_make_function`, whose `data` is a
    // `Box<Function>` (the plugin's own Function), alive as long as `handle` is.
    let inner =
        unsafe { &*((*(handle as *const crate::arc::ObjectBox<function::FunctionObj>)).value.data as *const Function) };
    // SAFETY: the plugin's Function with the caller's own arguments and result cell (the
    // safe_call ABI, forwarded unchanged).
    let rc = unsafe { (inner.0.safe_call)(inner.as_object_ptr(), args, n, result) };
    if rc != 0 {
        return rc;
    }
    // SAFETY: the callee filled the caller's cell; it is read bitwise here without taking
    // ownership (ManuallyDrop), so a refused value is never dropped.
    let cell = std::mem::ManuallyDrop::new(unsafe { result.read() });
    let name = || format!("the result of {}", inner.name());
    match check_cell(&name, cell.view(), true) {
        Ok(()) => 0,
        Err(e) => {
            // SAFETY: the caller's writable cell; the refused value in it is forgotten, not dropped.
            unsafe { result.write(Any::none()) };
            set_last_error(e);
            -1
        }
    }
}

unsafe extern "C" fn api_alloc_object(size: usize, align: usize) -> *mut ObjectHeader {
    alloc::local_alloc_object(size, align)
}
unsafe extern "C" fn api_free_object(obj: *mut ObjectHeader, size: usize, align: usize) {
    // SAFETY: the plugin passes the exact layout it allocated (ABI contract).
    unsafe { alloc::local_free_object(obj, size, align) }
}
unsafe extern "C" fn api_register_allocator(a: AllocateFn, f: FreeFn, ctx: *mut c_void, out_tag: *mut u32) -> i32 {
    ffi_status(|| {
        // SAFETY: the C caller vouches for its allocator (ABI contract).
        let tag = unsafe { alloc::register_allocator(a, f, ctx) }?;
        // SAFETY: the caller passes a writable u32.
        unsafe { out_tag.write(tag) };
        Ok(())
    })
}
unsafe extern "C" fn api_set_current_allocator(tag: u32) -> i32 {
    ffi_status(|| alloc::set_current_allocator(tag))
}
unsafe extern "C" fn api_current_allocator_tag() -> u32 {
    alloc::current_allocator_tag()
}
unsafe extern "C" fn api_live_objects() -> i64 {
    alloc::live_objects()
}
unsafe extern "C" fn api_set_last_error(err: *mut ObjectHeader) {
    if !err.is_null() {
        // SAFETY: the caller hands over an owned reference (ABI contract).
        local_set_last_error(unsafe { ObjectRef::from_raw(err) });
    }
}
unsafe extern "C" fn api_take_last_error() -> *mut ObjectHeader {
    local_take_last_error().map_or(std::ptr::null_mut(), ObjectRef::into_raw)
}
unsafe extern "C" fn api_register_type_key(key: ByteSlice, parent: i32) -> i32 {
    // SAFETY: `key` is readable for the call (ABI contract).
    let key = unsafe { key.to_str_lossy() };
    match catch_panic(|| types::register_type_key(&key, parent)) {
        Ok(i) => i,
        Err(e) => {
            set_last_error(e);
            -1
        }
    }
}
unsafe extern "C" fn api_type_index_of(key: ByteSlice) -> i32 {
    // SAFETY: readable for the call.
    let key = unsafe { key.to_str_lossy() };
    types::type_index_of(&key).unwrap_or(-1)
}
unsafe extern "C" fn api_type_info(index: i32) -> *const TypeInfo {
    types::local_type_info(index).map_or(std::ptr::null(), |t| t as *const TypeInfo)
}
unsafe extern "C" fn api_publish_type_info(info: *const TypeInfo) -> i32 {
    // SAFETY: the plugin passes a leaked, immutable info (ABI contract).
    let Some(mut info) = (unsafe { info.as_ref() }) else {
        set_last_error(Error::value("publish_type_info: null info"));
        return -1;
    };
    // A module built before `flags` existed left padding there: read it as 0 (in a leaked copy,
    // as every published info is leaked).
    if info.flags != 0 && crate::plugin::initialising_abi_minor().is_some_and(|m| m < crate::plugin::TYPE_FLAGS_MINOR) {
        // SAFETY: a bitwise copy of an immutable info with no destructor; the copy is leaked.
        info = Box::leak(Box::new(TypeInfo { flags: 0, ..unsafe { std::ptr::read(info) } }));
    }
    // SAFETY: the info's arrays are as long as its counts and its object pointers are live
    // (ABI contract); everything else in it is checked.
    if let Err(e) = unsafe { check_published(info) } {
        set_last_error(e);
        return -1;
    }
    match catch_panic(|| types::local_publish_type_info(info)) {
        Ok(i) => i,
        Err(e) => {
            set_last_error(e);
            -1
        }
    }
}
/// The bytes of a slice that came from C, checked to be UTF-8 (the registry hands its strings
/// out as `&str`).
///
/// # Safety
/// `s` points to `len` readable bytes (or `len == 0`).
unsafe fn utf8_slice(what: &str, key: &str, s: &ByteSlice) -> crate::Result<()> {
    if s.len == 0 || s.ptr.is_null() {
        return Ok(());
    }
    // SAFETY: readable for the call (this function's contract).
    let bytes = unsafe { std::slice::from_raw_parts(s.ptr, s.len) };
    std::str::from_utf8(bytes)
        .map(drop)
        .map_err(|e| Error::value(format!("publish_type_info: the {what} of {key:?} is not UTF-8 ({e})")))
}

/// What a published info must agree with before the registry takes it (found by the
/// `type_info` fuzz target, `cargo xtask harden`): the lineage its index was registered with
/// (frontends and `is_instance` read `depth` ancestors) and UTF-8 strings (handed out as
/// `&str`). The registry itself checks that every accessor is a Function (`types::check_members`).
///
/// # Safety
/// The info's arrays are as long as its counts (for the reserved depth) and its object
/// pointers are null or live (ABI contract).
unsafe fn check_published(info: &TypeInfo) -> crate::Result<()> {
    let reserved = types::local_type_info(info.index)
        .ok_or_else(|| Error::value(format!("publish_type_info: type index {} was never reserved", info.index)))?;
    // SAFETY: the slices and objects of `info` are valid per this function's contract; the
    // ancestors are read only once `depth` is known to be the reserved one.
    unsafe {
        let key = info.key.to_str_lossy();
        utf8_slice("key", &key, &info.key)?;
        let lineage_matches = info.depth == reserved.depth && info.parent == reserved.parent && {
            // Only now is `depth` known to be the reserved one, so the array is that long.
            let depth = usize::try_from(info.depth).unwrap_or(0);
            let ancestors: &[i32] = if info.ancestors.is_null() || depth == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(info.ancestors, depth)
            };
            ancestors == reserved.ancestors()
        };
        if !lineage_matches {
            return Err(Error::value(format!(
                "publish_type_info: {key:?} claims depth {} and parent {}, but was registered at depth {} under parent {}",
                info.depth, info.parent, reserved.depth, reserved.parent
            )));
        }
        utf8_slice("doc", &key, &info.doc)?;
        for f in info.fields() {
            utf8_slice("field name", &key, &f.name)?;
            utf8_slice("field doc", &key, &f.doc)?;
            utf8_slice("field type hint", &key, &f.type_hint)?;
        }
        for m in info.methods() {
            utf8_slice("method name", &key, &m.name)?;
            utf8_slice("method doc", &key, &m.doc)?;
        }
        Ok(())
    }
}

/// # Safety
/// `func` is null or a live object the caller keeps its own reference to.
unsafe fn borrowed_function(func: *mut ObjectHeader) -> crate::Result<Function> {
    if func.is_null() {
        return Err(Error::value("null function"));
    }
    // SAFETY: a live object the caller holds (this function's contract); we take our own +1.
    let obj = unsafe { ObjectRef::from_borrowed(func) };
    obj.try_cast().map(Function).map_err(|o| Error::type_error(format!("expected a Function, got {o:?}")))
}
unsafe extern "C" fn api_register_global(name: ByteSlice, func: *mut ObjectHeader, allow_override: i32) -> i32 {
    ffi_status(|| {
        // SAFETY: readable for the call; `func` is borrowed from the caller.
        let (name, f) = unsafe { (name.to_str_lossy(), borrowed_function(func)?) };
        function::register_global(&name, f, allow_override != 0)
    })
}
unsafe extern "C" fn api_get_global(name: ByteSlice) -> *mut ObjectHeader {
    // SAFETY: readable for the call.
    let name = unsafe { name.to_str_lossy() };
    function::get_global(&name).map_or(std::ptr::null_mut(), |f| ObjectRef::from(f.0).into_raw())
}
unsafe extern "C" fn api_module_add_function(module: *mut c_void, name: ByteSlice, func: *mut ObjectHeader) -> i32 {
    ffi_status(|| {
        // SAFETY: `module` is the `PendingModule` the host passed to init, alive during it.
        let pending = unsafe { &mut *(module as *mut PendingModule) };
        // SAFETY: readable for the call; `func` borrowed.
        let (name, f) = unsafe { (name.to_str_lossy(), borrowed_function(func)?) };
        pending.functions.push((name, f));
        Ok(())
    })
}
unsafe extern "C" fn api_module_add_type(module: *mut c_void, type_index: i32) -> i32 {
    ffi_status(|| {
        // SAFETY: `module` is the PendingModule the core passed to this plugin's init, which is
        // still running (the API table's contract), and nothing else touches it meanwhile.
        let pending = unsafe { &mut *(module as *mut PendingModule) };
        if types::local_type_info(type_index).is_none() {
            return Err(Error::value(format!("type index {type_index} is not registered")));
        }
        pending.types.push(type_index);
        Ok(())
    })
}
unsafe extern "C" fn api_make_str(s: ByteSlice) -> *mut ObjectHeader {
    // SAFETY: readable for the call.
    ffi_object(|| Ok(StrObj::new(&unsafe { s.to_str_lossy() }).into()))
}
unsafe extern "C" fn api_make_error(kind: ByteSlice, message: ByteSlice) -> *mut ObjectHeader {
    // SAFETY: readable for the call.
    ffi_object(|| Ok(unsafe { Error::new(&kind.to_str_lossy(), message.to_str_lossy()) }.into_object()))
}
unsafe extern "C" fn api_make_function(
    safe_call: SafeCallFn,
    data: *mut c_void,
    drop_data: Option<DataDropFn>,
    name: ByteSlice,
    arity: i32,
) -> *mut ObjectHeader {
    ffi_object(|| {
        // SAFETY: readable for the call.
        let name = unsafe { name.to_str_lossy() };
        // SAFETY: the C caller vouches for `safe_call`/`drop_data` (ABI contract).
        let own = unsafe { Function::from_raw_parts(safe_call, data, drop_data, &name, arity, 0) };
        // What the host hands out checks every result of the plugin's function (`checked_safe_call`).
        let data = Box::into_raw(Box::new(own)) as *mut c_void;
        // SAFETY: `checked_safe_call` reads exactly this payload (a `Box<Function>`), which
        // `drop_closure::<Function>` frees.
        let f = unsafe {
            Function::from_raw_parts(checked_safe_call, data, Some(function::drop_closure::<Function>), &name, arity, 0)
        };
        Ok(f.0.into())
    })
}
unsafe extern "C" fn api_load_module(path: ByteSlice) -> *mut ObjectHeader {
    // SAFETY: readable for the call.
    let path = unsafe { path.to_str_lossy() };
    match crate::plugin::load_module(&path) {
        Ok(module) => ObjectRef::from(module).into_raw(),
        Err(e) => {
            crate::error::set_last_error(e);
            std::ptr::null_mut()
        }
    }
}
unsafe extern "C" fn api_list_globals() -> *mut ObjectHeader {
    let names = function::list_globals().iter().map(|n| Any::str(n)).collect();
    ObjectRef::from(crate::containers::ArrayObj::new(names)).into_raw()
}
unsafe extern "C" fn api_set_signature(func: *mut ObjectHeader, signature: *const SignatureInfo) -> i32 {
    ffi_status(|| {
        // SAFETY: `func` is borrowed from the caller for the call (ABI contract).
        let f = unsafe { borrowed_function(func) }?;
        // SAFETY: readable for the call (ABI contract); null is refused.
        let Some(signature) = (unsafe { signature.as_ref() }) else {
            return Err(Error::value("set_signature: null signature"));
        };
        // SAFETY: the signature's arrays are as long as its counts (ABI contract); the rest is
        // checked, and the host keeps its own copy.
        let interned = unsafe { crate::signature::intern_foreign(signature) }
            .map_err(|e| Error::value(format!("set_signature of {}: {}", f.name(), e.message())))?;
        // Ours and the caller's: a Function anyone else holds may be read meanwhile.
        if ObjectArc::strong_count(&f.0) != 2 {
            return Err(Error::value(format!(
                "set_signature of {}: the function is shared already (set it right after make_function)",
                f.name()
            )));
        }
        // SAFETY: only the caller and this call hold the function (checked above), and the
        // caller is in this call: nothing reads it meanwhile. A host-made Function (make_function)
        // has the signature field; `FUNC_SIGNED` tells readers it is there.
        unsafe {
            let body = ObjectArc::as_ptr(&f.0) as *mut crate::arc::ObjectBox<function::FunctionObj>;
            (*body).value.signature = interned;
            (*body).value.flags |= function::FUNC_SIGNED;
        }
        Ok(())
    })
}
unsafe extern "C" fn api_make_array(items: *const AnyView<'static>, n: usize) -> *mut ObjectHeader {
    ffi_object(|| {
        if n > 0 && items.is_null() {
            return Err(Error::value(format!("make_array: {n} items at a null pointer")));
        }
        // SAFETY: `n` readable cells (ABI contract).
        let items = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(items, n) } };
        for (i, item) in items.iter().enumerate() {
            check_cell(&|| format!("make_array: item {i}"), *item, false)?;
        }
        Ok(ArrayObj::new(items.iter().map(AnyView::to_owned_any).collect()).into())
    })
}
unsafe extern "C" fn api_inc_ref(obj: *mut ObjectHeader) {
    // SAFETY: the caller holds a reference (ABI contract).
    unsafe { object::inc_ref(obj) }
}
unsafe extern "C" fn api_dec_ref(obj: *mut ObjectHeader) {
    // SAFETY: the caller gives up a reference it owns (ABI contract).
    unsafe { object::dec_ref(obj) }
}
unsafe extern "C" fn api_call_function(
    func: *mut ObjectHeader,
    args: *const AnyView<'static>,
    n: i32,
    result: *mut Any,
) -> i32 {
    let checked = || -> crate::Result<()> {
        if n < 0 || (n > 0 && args.is_null()) {
            return Err(Error::value(format!("call_function: {n} arguments at {args:?}")));
        }
        // SAFETY: `n` readable cells (ABI contract), not null when `n > 0`.
        let cells = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(args, n as usize) } };
        for (i, cell) in cells.iter().enumerate() {
            check_cell(&|| format!("call_function: argument {}", i + 1), *cell, false)?;
        }
        Ok(())
    };
    if let Err(e) = checked() {
        set_last_error(e);
        return -1;
    }
    // SAFETY: the caller passes a borrowed Function, `n` cells and a None result cell.
    match unsafe { borrowed_function(func) } {
        // SAFETY: `f` is that Function, alive for the call; the caller passes `n` cells and a
        // None result cell (the safe_call ABI).
        Ok(f) => unsafe { (f.0.safe_call)(func, args, n, result) },
        Err(e) => {
            set_last_error(e);
            -1
        }
    }
}

static HOST_TABLE: ApiTable = ApiTable {
    abi_major: ABI_MAJOR,
    abi_minor: ABI_MINOR,
    size: std::mem::size_of::<ApiTable>() as u64,
    alloc_object: api_alloc_object,
    free_object: api_free_object,
    register_allocator: api_register_allocator,
    set_current_allocator: api_set_current_allocator,
    current_allocator_tag: api_current_allocator_tag,
    live_objects: api_live_objects,
    set_last_error: api_set_last_error,
    take_last_error: api_take_last_error,
    register_type_key: api_register_type_key,
    type_index_of: api_type_index_of,
    type_info: api_type_info,
    publish_type_info: api_publish_type_info,
    register_global: api_register_global,
    get_global: api_get_global,
    module_add_function: api_module_add_function,
    module_add_type: api_module_add_type,
    make_str: api_make_str,
    make_error: api_make_error,
    make_function: api_make_function,
    make_array: api_make_array,
    inc_ref: api_inc_ref,
    dec_ref: api_dec_ref,
    call_function: api_call_function,
    set_signature: api_set_signature,
    load_module: api_load_module,
    list_globals: api_list_globals,
};

/// This copy's table when it initialised as a host (null in a plugin, or before `init`): how
/// another frontend's tether-core finds out it is not alone in the process
/// (`plugin::other_host`).
#[no_mangle]
pub extern "C" fn tether_process_host_v1() -> *const ApiTable {
    if crate::plugin::is_plugin() || !crate::initialised() {
        return std::ptr::null();
    }
    &HOST_TABLE
}

/// The host's table, handed to every plugin's init.
pub fn host_table() -> *const ApiTable {
    &HOST_TABLE
}
