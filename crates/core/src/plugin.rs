//! Plugins: the versioned API table, `tether_module_init`, and `load_module`.
//!
//! A plugin is a shared library exporting `tether_module_abi` (a `u32`: major << 16 | minor)
//! and `tether_module_init(api, module) -> i32`. The host checks the ABI word, then calls
//! init with its [`ApiTable`]. A Rust plugin's copy of tether-core stores that table
//! ([`host_api`]) and from then on routes every allocation, registry and error-slot call
//! through it, so plugin objects come from the frontend allocator and plugin types land in the
//! host registry. Plugins are never unloaded.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

use crate::alloc::{AllocateFn, FreeFn};
use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::{ObjectArc, ObjectRef};
use crate::error::{Error, Result};
use crate::function::{DataDropFn, Function, SafeCallFn};
use crate::object::{Object, ObjectHeader};
use crate::signature::SignatureInfo;
use crate::types::TypeInfo;

pub const ABI_MAJOR: u32 = 1;
/// 1.7: `TypeInfo.flags` (`TYPE_WEAK_REFERENCEABLE`), which was padding before. 1.8: the
/// function flag `FUNC_VALUE_ENTRY`.
pub const ABI_MINOR: u32 = 8;
/// The first minor whose `TypeInfo` has `flags`: an older plugin's are read as 0.
pub(crate) const TYPE_FLAGS_MINOR: u32 = 7;
/// The value a plugin exports as `tether_module_abi`.
pub const ABI_WORD: u32 = (ABI_MAJOR << 16) | ABI_MINOR;

/// A borrowed UTF-8 string crossing the ABI: `{ ptr, len }`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ByteSlice {
    pub ptr: *const u8,
    pub len: usize,
}

impl ByteSlice {
    pub fn of(s: &str) -> ByteSlice {
        ByteSlice { ptr: s.as_ptr(), len: s.len() }
    }
    pub fn from_static(s: &'static str) -> ByteSlice {
        Self::of(s)
    }
    pub const fn empty() -> ByteSlice {
        ByteSlice { ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(), len: 0 }
    }
    /// The string. Registry slices are leaked, hence `'static`; ABI arguments must only be
    /// used for the call's duration (see [`ByteSlice::to_str_lossy`]).
    pub fn as_str(&self) -> &'static str {
        if self.len == 0 || self.ptr.is_null() {
            return "";
        }
        // SAFETY: registry slices are leaked UTF-8 made by `leak_str`.
        unsafe { std::str::from_utf8_unchecked(std::slice::from_raw_parts(self.ptr, self.len)) }
    }
    /// Copy a slice that came from C (validating UTF-8).
    ///
    /// # Safety
    /// `ptr` points to `len` readable bytes (or `len == 0`).
    pub unsafe fn to_str_lossy(&self) -> String {
        if self.len == 0 || self.ptr.is_null() {
            return String::new();
        }
        // SAFETY: `ptr` points to `len` readable bytes (this function's contract), not null here.
        String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(self.ptr, self.len) }).into_owned()
    }
}

// SAFETY: a slice descriptor; what it points to is immutable.
unsafe impl Send for ByteSlice {}
// SAFETY: the reason Sync holds is the one above: a slice descriptor; what it points to is
// immutable.
unsafe impl Sync for ByteSlice {}

/// The host's function table. `#[repr(C)]`; new entries are only ever appended (minor
/// version bumps), and `size` tells a plugin how many entries the host has.
#[repr(C)]
pub struct ApiTable {
    pub abi_major: u32,
    pub abi_minor: u32,
    pub size: u64,
    // allocation
    pub alloc_object: unsafe extern "C" fn(size: usize, align: usize) -> *mut ObjectHeader,
    pub free_object: unsafe extern "C" fn(obj: *mut ObjectHeader, size: usize, align: usize),
    pub register_allocator: unsafe extern "C" fn(AllocateFn, FreeFn, *mut c_void, out_tag: *mut u32) -> i32,
    pub set_current_allocator: unsafe extern "C" fn(tag: u32) -> i32,
    pub current_allocator_tag: unsafe extern "C" fn() -> u32,
    pub live_objects: unsafe extern "C" fn() -> i64,
    // errors
    pub set_last_error: unsafe extern "C" fn(err: *mut ObjectHeader),
    pub take_last_error: unsafe extern "C" fn() -> *mut ObjectHeader,
    // types
    pub register_type_key: unsafe extern "C" fn(key: ByteSlice, parent: i32) -> i32,
    pub type_index_of: unsafe extern "C" fn(key: ByteSlice) -> i32,
    pub type_info: unsafe extern "C" fn(index: i32) -> *const TypeInfo,
    pub publish_type_info: unsafe extern "C" fn(info: *const TypeInfo) -> i32,
    // global functions
    pub register_global: unsafe extern "C" fn(name: ByteSlice, func: *mut ObjectHeader, allow_override: i32) -> i32,
    pub get_global: unsafe extern "C" fn(name: ByteSlice) -> *mut ObjectHeader,
    // modules
    pub module_add_function: unsafe extern "C" fn(module: *mut c_void, name: ByteSlice, func: *mut ObjectHeader) -> i32,
    pub module_add_type: unsafe extern "C" fn(module: *mut c_void, type_index: i32) -> i32,
    // conveniences for C plugins (Rust plugins build these themselves)
    pub make_str: unsafe extern "C" fn(s: ByteSlice) -> *mut ObjectHeader,
    pub make_error: unsafe extern "C" fn(kind: ByteSlice, message: ByteSlice) -> *mut ObjectHeader,
    pub make_function: unsafe extern "C" fn(
        SafeCallFn,
        data: *mut c_void,
        drop_data: Option<DataDropFn>,
        name: ByteSlice,
        arity: i32,
    ) -> *mut ObjectHeader,
    pub make_array: unsafe extern "C" fn(items: *const AnyView<'static>, n: usize) -> *mut ObjectHeader,
    pub inc_ref: unsafe extern "C" fn(obj: *mut ObjectHeader),
    pub dec_ref: unsafe extern "C" fn(obj: *mut ObjectHeader),
    pub call_function:
        unsafe extern "C" fn(func: *mut ObjectHeader, args: *const AnyView<'static>, n: i32, result: *mut Any) -> i32,
    // ABI 1.4
    /// Attach a copy of `signature` (checked: a malformed one is a ValueError) to a Function
    /// the caller holds the only reference to.
    pub set_signature: unsafe extern "C" fn(func: *mut ObjectHeader, signature: *const SignatureInfo) -> i32,
    // ABI 1.5
    /// Load a plugin file as the host does (`load_module`): an owned reference to its module
    /// object, or null with the error raised. What a frontend running on another's host uses.
    pub load_module: unsafe extern "C" fn(path: ByteSlice) -> *mut ObjectHeader,
    /// Every registered global function's name: an owned Array of Str.
    pub list_globals: unsafe extern "C" fn() -> *mut ObjectHeader,
}

const _: () = {
    assert!(std::mem::offset_of!(ApiTable, abi_major) == 0);
    assert!(std::mem::offset_of!(ApiTable, abi_minor) == 4);
    assert!(std::mem::offset_of!(ApiTable, size) == 8);
    assert!(std::mem::offset_of!(ApiTable, alloc_object) == 16);
    assert!(std::mem::size_of::<ApiTable>() == 16 + 26 * 8);
    assert!(std::mem::size_of::<ByteSlice>() == 16);
};

static HOST_API: AtomicPtr<ApiTable> = AtomicPtr::new(std::ptr::null_mut());

/// In a plugin after init: the host's table. In the host (and before init): `None`.
#[inline]
pub fn host_api() -> Option<&'static ApiTable> {
    // SAFETY: set once by `plugin_init` to the host's `'static` table.
    unsafe { HOST_API.load(Ordering::Acquire).as_ref() }
}

/// What a plugin's init returns when another host's table was adopted already.
const INIT_OTHER_HOST: i32 = -3;

/// Is this copy of tether-core running inside a plugin (routing to a host)?
pub fn is_plugin() -> bool {
    host_api().is_some()
}

/// Plugin side of init: check the host's table, adopt it, then run `body`.
///
/// # Safety
/// `api` is null or the host's `'static` table; `module` is the host's module handle.
pub unsafe fn plugin_init(
    api: *const ApiTable,
    module: *mut c_void,
    body: impl FnOnce(&mut ModuleBuilder) -> Result<()>,
) -> i32 {
    // SAFETY: `api` is null or the host's `'static` table (this function's contract); its
    // first three fields are fixed for every ABI version.
    let Some(table) = (unsafe { api.as_ref() }) else { return -2 };
    if table.abi_major != ABI_MAJOR || (table.size as usize) < std::mem::size_of::<ApiTable>() {
        return -2;
    }
    // A plugin serves one host: a second host in the process (another frontend's tether-core)
    // would otherwise re-route every call of the first host's objects to its own registries.
    if let Err(current) =
        HOST_API.compare_exchange(std::ptr::null_mut(), api as *mut ApiTable, Ordering::AcqRel, Ordering::Acquire)
    {
        if !std::ptr::eq(current, api) {
            return INIT_OTHER_HOST;
        }
    }
    crate::error::ffi_status(|| body(&mut ModuleBuilder { module, api: table }))
}

/// What a plugin's init gets to export functions and types into its module object.
pub struct ModuleBuilder {
    module: *mut c_void,
    api: &'static ApiTable,
}

impl ModuleBuilder {
    /// Export `func` as module attribute `name`.
    pub fn function(&mut self, name: &str, func: Function) -> Result<&mut Self> {
        // SAFETY: host table entry; it takes its own reference to `func`.
        let rc = unsafe { (self.api.module_add_function)(self.module, ByteSlice::of(name), func.as_object_ptr()) };
        if rc != 0 {
            return Err(crate::error::take_last_error());
        }
        Ok(self)
    }

    /// Export the registered type `T` (as a class in each frontend).
    pub fn object_type<T: Object>(&mut self) -> Result<&mut Self> {
        // SAFETY: host table entry.
        let rc = unsafe { (self.api.module_add_type)(self.module, T::type_index()) };
        if rc != 0 {
            return Err(crate::error::take_last_error());
        }
        Ok(self)
    }
}

/// Define a plugin's entry points:
///
/// ```ignore
/// tether_core::export_module!(|m| {
///     m.function("add", Function::from_typed("scene.add", |a: i64, b: i64| a + b))?;
///     m.object_type::<Node>()?;
///     Ok(())
/// });
/// ```
#[macro_export]
macro_rules! export_module {
    ($body:expr) => {
        #[no_mangle]
        pub static tether_module_abi: u32 = $crate::plugin::ABI_WORD;

        /// # Safety
        /// Called once by a tether host with its API table.
        #[no_mangle]
        pub unsafe extern "C" fn tether_module_init(
            api: *const $crate::plugin::ApiTable,
            module: *mut ::std::ffi::c_void,
        ) -> i32 {
            // SAFETY: the host passes its table and module handle, per the plugin ABI.
            unsafe { $crate::plugin::plugin_init(api, module, $body) }
        }
    };
}

// ---- host side: Module objects and loading ------------------------------------------------

/// A loaded plugin: its path, exported functions (in export order) and types.
pub struct ModuleObj {
    path: String,
    functions: Vec<(String, Function)>,
    types: Vec<i32>,
}

impl Object for ModuleObj {
    const TYPE_KEY: &'static str = "tether.Module";
    fn type_index() -> i32 {
        TypeIndex::MODULE
    }
}

impl ModuleObj {
    pub fn path(&self) -> &str {
        &self.path
    }
    pub fn functions(&self) -> &[(String, Function)] {
        &self.functions
    }
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
    /// Exported type indices.
    pub fn types(&self) -> &[i32] {
        &self.types
    }
}

/// The host's view of a module being initialised (what `module` points to during init).
#[derive(Default)]
pub(crate) struct PendingModule {
    pub functions: Vec<(String, Function)>,
    pub types: Vec<i32>,
}

/// What `load_module` did with one file. A file whose init ran stays loaded whatever init
/// answered (its code may already be referenced: registered types, globals, objects), so a
/// failed init is remembered instead of run again.
struct Loaded {
    file: ModuleFile,
    outcome: std::result::Result<ObjectRef, (String, String)>,
}

static LOADED: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());

/// A plugin file as `load_module` identifies it: its canonical path and, on Unix, its device
/// and inode, so a symbolic or hard link to a loaded file is the same module (the dynamic
/// loader would hand back the same library anyway) while a copy is another module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFile {
    pub canonical: std::path::PathBuf,
    /// `(st_dev, st_ino)` where the platform has them.
    pub identity: Option<(u64, u64)>,
}

impl ModuleFile {
    fn same_file(&self, other: &ModuleFile) -> bool {
        self.canonical == other.canonical || (self.identity.is_some() && self.identity == other.identity)
    }
}

/// The one rule every frontend's `load_module` follows to find a plugin: the argument is a
/// file path, never a library name. A relative path, including a bare file name without a
/// slash (`"libmy_plugin.so"`), is taken relative to the process's working directory, as
/// `open()` would; the dynamic loader's search path (`LD_LIBRARY_PATH`, the ld.so cache,
/// system directories) is not consulted, so a bare name never silently picks a system library
/// of the same name. The file must exist and be a regular file (a directory or a device is a
/// ValueError saying so, before the loader sees it).
pub fn resolve_module_path(path: &str) -> Result<ModuleFile> {
    let fail = |why: String| Error::value(format!("cannot load tether module {path:?}: {why}"));
    if path.is_empty() {
        return Err(fail("the path is empty".into()));
    }
    let p = std::path::Path::new(path);
    let meta = match std::fs::metadata(p) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let bare = !path.contains(std::path::MAIN_SEPARATOR) && !path.contains('/');
            return Err(fail(if bare {
                let cwd = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_else(|_| "?".into());
                format!(
                    "no such file in the working directory {cwd} (a name without a slash is a path relative to \
                     the working directory; the library search path is not searched)"
                )
            } else {
                "no such file".into()
            }));
        }
        Err(e) => return Err(fail(e.to_string())),
    };
    if meta.is_dir() {
        return Err(fail("it is a directory, not a shared library file".into()));
    }
    if !meta.is_file() {
        return Err(fail("not a regular file (a shared library is a regular file)".into()));
    }
    let canonical = p.canonicalize().map_err(|e| fail(e.to_string()))?;
    #[cfg(unix)]
    let identity = {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    };
    #[cfg(not(unix))]
    let identity = None;
    Ok(ModuleFile { canonical, identity })
}

thread_local! {
    /// During a plugin's init on this thread: the registrations the registry refused for their
    /// layout (`types::layout_difference`), `None` outside an init.
    static REJECTED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
    /// During a plugin's init on this thread: the path it was loaded by, for messages that
    /// name who registered what ([`registrant`]).
    static INITIALISING: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
    /// During a plugin's init on this thread: the ABI minor it was built for.
    static INITIALISING_MINOR: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
    /// During a plugin's init on this thread: the types whose reflection it published first.
    static PUBLISHED: std::cell::RefCell<Vec<i32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The registry published `index`'s reflection for the first time (types.rs): a module
/// initialising on this thread must export it.
pub(crate) fn note_published(index: i32) {
    if INITIALISING.with(|m| m.borrow().is_some()) {
        PUBLISHED.with(|p| p.borrow_mut().push(index));
    }
}

/// The ABI minor of the module whose init is running on this thread, if one is.
pub(crate) fn initialising_abi_minor() -> Option<u32> {
    INITIALISING_MINOR.with(|m| m.get())
}

/// Who is registering on this thread: the module whose init is running, else the host.
pub(crate) fn registrant() -> String {
    INITIALISING
        .with(|m| m.borrow().clone())
        .map_or_else(|| "the host process".to_string(), |p| format!("module {p:?}"))
}

/// The registry refused a registration (types.rs): if a module is initialising on this thread,
/// its load fails with this error, whether or not its init passed the failure on.
pub(crate) fn note_rejected_registration(e: &Error) {
    REJECTED.with(|r| {
        if let Some(list) = r.borrow_mut().as_mut() {
            list.push(e.message().to_string());
        }
    });
}

/// The dynamic loader's own words for a failure (libloading keeps `dlerror()`'s text in the
/// error's source, behind a generic "dlopen failed"): "libdep.so: cannot open shared object
/// file: No such file or directory".
fn loader_reason(e: &libloading::Error) -> String {
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        reason = s.to_string();
        source = s.source();
    }
    reason
}

/// Load a plugin file (found by [`resolve_module_path`]) once per process: a later load of the
/// same file, under any path to it, returns the same module object, or the same error if its
/// init failed (init runs at most once per file).
pub fn load_module(path: &str) -> Result<ObjectArc<ModuleObj>> {
    if let Some(api) = host_api() {
        // A frontend running on another frontend's host (`adopt_process_host`): the host loads.
        // SAFETY: the host's entry point; the path is readable for the call.
        let module = unsafe { (api.load_module)(ByteSlice::of(path)) };
        if module.is_null() {
            return Err(crate::error::take_last_error());
        }
        // SAFETY: an owned reference to the host's Module object (same core build: checked
        // when the host was adopted).
        return unsafe { ObjectRef::from_raw(module) }
            .try_cast::<ModuleObj>()
            .map_err(|_| Error::runtime("the host's load_module returned something that is not a module"));
    }
    crate::init();
    let file = resolve_module_path(path)?;
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = loaded.iter().find(|l| l.file.same_file(&file)) {
        return match &known.outcome {
            Ok(m) => Ok(m.clone().try_cast().unwrap_or_else(|_| unreachable!("LOADED holds modules"))),
            Err((kind, message)) => Err(Error::new(
                kind,
                format!("{message} (remembered from the first load: a plugin's init runs at most once per process)"),
            )),
        };
    }
    let canonical = &file.canonical;
    // SAFETY: loading a library runs its initialisers; that is what loading a plugin means.
    // Once its init has been called the library is never unloaded (see below).
    let lib = unsafe { libloading::Library::new(canonical) }.map_err(|e| {
        Error::value(format!(
            "cannot load tether module {path:?}: not a loadable shared library ({})",
            loader_reason(&e)
        ))
    })?;
    // SAFETY: `tether_module_abi` is declared as a `u32` static by every tether plugin.
    let abi = unsafe { lib.get::<*const u32>(b"tether_module_abi\0") }
        .map_err(|_| Error::value(format!("{path:?} is not a tether module: it has no `tether_module_abi` symbol")))?;
    // SAFETY: the symbol is a `u32` static (see above).
    let abi_word = unsafe { **abi };
    let (major, minor) = (abi_word >> 16, abi_word & 0xffff);
    if major != ABI_MAJOR {
        return Err(Error::runtime(format!(
            "{path:?} was built for tether ABI {major}.{minor}, but this host speaks ABI {ABI_MAJOR}.{ABI_MINOR}: rebuild the plugin against this tether version"
        )));
    }
    type InitFn = unsafe extern "C" fn(*const ApiTable, *mut c_void) -> i32;
    // SAFETY: the symbol has the `tether_module_init` signature per the plugin ABI.
    let init = unsafe { lib.get::<InitFn>(b"tether_module_init\0") }
        .map_err(|_| Error::value(format!("{path:?} is not a tether module: it has no `tether_module_init` symbol")))?;
    let init = *init;
    // From here on the plugin's code may be referenced from the registries (a type's accessors,
    // a global function, an object's deleter) even if its init fails: never unload it.
    std::mem::forget(lib);
    let mut pending = PendingModule::default();
    REJECTED.with(|r| *r.borrow_mut() = Some(Vec::new()));
    INITIALISING.with(|m| *m.borrow_mut() = Some(path.to_string()));
    INITIALISING_MINOR.with(|m| m.set(Some(minor)));
    PUBLISHED.with(|p| p.borrow_mut().clear());
    // SAFETY: the host table is `'static`; `pending` outlives the call.
    let rc = unsafe { init(crate::ffi::host_table(), &mut pending as *mut PendingModule as *mut c_void) };
    INITIALISING.with(|m| *m.borrow_mut() = None);
    INITIALISING_MINOR.with(|m| m.set(None));
    let mut rejected = REJECTED.with(|r| r.borrow_mut().take()).unwrap_or_default();
    // A type the module declared but left out of its exports is a mistake in its source.
    let published = PUBLISHED.with(|p| std::mem::take(&mut *p.borrow_mut()));
    if rc == 0 {
        rejected.extend(published.iter().filter(|i| !pending.types.contains(i)).map(|&i| {
            format!(
                "it registered type {:?} but does not export it: add it to the module \
                 (`m.object_type::<T>()`, `tether::module!`, or `api->module_add_type`)",
                crate::types::type_key(i).unwrap_or("?")
            )
        }));
    }
    let failure = if rc == 0 && rejected.is_empty() {
        None
    } else if rc == -2 {
        Some(Error::runtime(format!("{path:?} rejected this host's API table (ABI mismatch)")))
    } else if rc == INIT_OTHER_HOST {
        Some(Error::runtime(format!(
            "{path:?} already serves another tether host in this process (another frontend's \
             tether-core loaded it first); a plugin serves one host"
        )))
    } else {
        let raised = (rc != 0).then(crate::error::take_last_error);
        Some(match (rejected.first(), raised) {
            // The registry's refusal is the cause, whatever the plugin made of it (a Rust
            // plugin's `register()` panics, a C plugin may ignore the -1).
            (Some(why), _) => Error::value(format!("initialising module {path:?} failed: {why}")),
            (None, Some(e)) if e.kind() == crate::error::ErrorKind::RustPanic.as_str() => Error::new(
                e.kind(),
                format!("initialising module {path:?} failed: the plugin panicked: {}", e.message()),
            ),
            (None, Some(e)) => Error::new(e.kind(), format!("initialising module {path:?} failed: {}", e.message())),
            (None, None) => unreachable!("rc != 0 or a rejection"),
        })
    };
    if let Some(e) = failure {
        loaded.push(Loaded { file: file.clone(), outcome: Err((e.kind().to_string(), e.message().to_string())) });
        // The functions it exported so far are released; the library stays mapped, so their
        // `drop_data` (plugin code) can still run.
        drop(pending);
        return Err(e);
    }
    let module = ObjectArc::new(ModuleObj {
        path: canonical.display().to_string(),
        functions: pending.functions,
        types: pending.types,
    });
    loaded.push(Loaded { file, outcome: Ok(module.clone().into()) });
    Ok(module)
}

/// `Any` view of a module object for frontends.
pub fn module_any(m: &ObjectArc<ModuleObj>) -> Any {
    Any::object(m.clone().into())
}

/// The file of another tether host in this process (a frontend whose tether-core initialised as
/// host before this one), if there is one. Two frontends in one process (Python starting a JVM
/// through JPype, say) would each have a registry, an allocator list and plugins of their own,
/// and objects of one reaching the other would be freed by the wrong core: a frontend checks
/// this at load and refuses to start with [`other_host_error`]'s message.
pub fn other_host() -> Option<String> {
    other_host_in_process().map(|(file, _)| file)
}

/// Run on the other tether host in this process, if there is one of this very ABI version: this
/// copy of tether-core becomes its guest, as a plugin is (every registry, allocation, error and
/// module load goes to that host), so the two frontends share one set of objects, types and
/// modules. `Ok(None)`: no other host; `Err`: one of another version, which a frontend reports
/// ([`other_host_error`]) instead of starting. The guest frontend installs no allocator and ties
/// every object through its side table.
pub fn adopt_process_host() -> std::result::Result<Option<String>, String> {
    let Some((file, table)) = other_host_in_process() else { return Ok(None) };
    // SAFETY: a host's `tether_process_host_v1` returns its `'static` table.
    let t = unsafe { &*table };
    if t.abi_major != ABI_MAJOR || t.abi_minor != ABI_MINOR || t.size as usize != std::mem::size_of::<ApiTable>() {
        return Err(format!("{file}, ABI {}.{}; this one is ABI {ABI_MAJOR}.{ABI_MINOR}", t.abi_major, t.abi_minor));
    }
    match HOST_API.compare_exchange(std::ptr::null_mut(), table as *mut ApiTable, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(Some(file)),
        Err(current) if std::ptr::eq(current, table) => Ok(Some(file)),
        Err(_) => Err(format!("{file}: this copy of tether-core already routes to another host")),
    }
}

/// The error a frontend raises at load when [`other_host`] found one.
pub fn other_host_error(frontend: &str, other: &str) -> Error {
    Error::runtime(format!(
        "{frontend} cannot start: another tether frontend already runs tether-core in this process \
         ({other}); two frontends in one process are not supported yet (docs/reliability.md)"
    ))
}

#[cfg(target_os = "linux")]
fn other_host_in_process() -> Option<(String, *const ApiTable)> {
    use std::ffi::{c_char, c_int, CStr};
    /// glibc's `RTLD_NOLOAD`: open only a library that is loaded already.
    const RTLD_NOLOAD: c_int = 4;

    /// The leading fields of glibc's `struct dl_phdr_info`.
    #[repr(C)]
    struct PhdrInfo {
        addr: usize,
        name: *const c_char,
    }
    extern "C" {
        fn dl_iterate_phdr(
            callback: unsafe extern "C" fn(*mut PhdrInfo, usize, *mut c_void) -> c_int,
            data: *mut c_void,
        ) -> c_int;
    }
    unsafe extern "C" fn collect(info: *mut PhdrInfo, _size: usize, data: *mut c_void) -> c_int {
        // SAFETY: glibc passes a live info whose name is a C string (empty for the executable);
        // `data` is the Vec below, borrowed for the iteration.
        unsafe {
            let names = &mut *(data as *mut Vec<String>);
            if !(*info).name.is_null() {
                let name = CStr::from_ptr((*info).name).to_string_lossy().into_owned();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        }
        0
    }
    let mut names: Vec<String> = Vec::new();
    // SAFETY: `collect` matches the callback type and only writes to `names`.
    unsafe { dl_iterate_phdr(collect, &mut names as *mut Vec<String> as *mut c_void) };
    let own = crate::ffi::host_table();
    names.into_iter().find_map(|name| {
        // SAFETY: RTLD_NOLOAD only finds a library that is loaded already (no code runs); the
        // symbol, when a library has it, is tether-core's `tether_process_host_v1`.
        unsafe {
            let lib =
                libloading::os::unix::Library::open(Some(&name), RTLD_NOLOAD | libloading::os::unix::RTLD_LAZY).ok()?;
            let host = lib
                .get::<unsafe extern "C" fn() -> *const ApiTable>(b"tether_process_host_v1\0")
                .map(|f| f())
                .unwrap_or(std::ptr::null());
            (!host.is_null() && host != own).then_some((name, host))
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn other_host_in_process() -> Option<(String, *const ApiTable)> {
    None
}
