//! Errors: `Error` objects, their kinds, the thread-local raised slot and panic capture.
//!
//! A failing `safe_call` returns nonzero and leaves its `Error` in the calling thread's raised
//! slot ([`set_last_error`] / [`take_last_error`]). A Rust panic never crosses `extern "C"`:
//! [`catch_panic`] turns it into an `Error` of kind `RustPanic` carrying the panic message, or
//! into the MemoryError when an object could not be allocated ([`out_of_memory`]).

use std::cell::RefCell;
use std::sync::OnceLock;

use crate::alloc::OutOfMemory;
use crate::any::{Any, TypeIndex};
use crate::arc::{ObjectArc, ObjectRef};
use crate::catch_frame;
use crate::object::Object;
use crate::plugin;

/// The error kinds every frontend maps onto its natural exceptions (see docs/abi.md). An
/// error carries its kind as this code (`ErrorObj::code`, an int) beside the kind's name, so
/// frontends map codes, not strings; a kind named outside this list ("SomethingElse", a
/// language exception's own name) has the code of RuntimeError and keeps its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum ErrorKind {
    TypeError = 1,
    ValueError = 2,
    IndexError = 3,
    KeyError = 4,
    AttributeError = 5,
    RuntimeError = 6,
    RustPanic = 7,
    /// An object could not be allocated (the allocator returned null).
    MemoryError = 8,
}

impl ErrorKind {
    /// Every kind, in code order.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::TypeError,
        ErrorKind::ValueError,
        ErrorKind::IndexError,
        ErrorKind::KeyError,
        ErrorKind::AttributeError,
        ErrorKind::RuntimeError,
        ErrorKind::RustPanic,
        ErrorKind::MemoryError,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::TypeError => "TypeError",
            ErrorKind::ValueError => "ValueError",
            ErrorKind::IndexError => "IndexError",
            ErrorKind::KeyError => "KeyError",
            ErrorKind::AttributeError => "AttributeError",
            ErrorKind::RuntimeError => "RuntimeError",
            ErrorKind::RustPanic => "RustPanic",
            ErrorKind::MemoryError => "MemoryError",
        }
    }

    /// The code that crosses the ABI (`TETHER_ERROR_<KIND>` in tether.h).
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The kind of `code`; an unknown code is a RuntimeError.
    pub fn from_code(code: i64) -> ErrorKind {
        ErrorKind::ALL.into_iter().find(|k| k.code() as i64 == code).unwrap_or(ErrorKind::RuntimeError)
    }

    /// The kind named `name`; any other name is a RuntimeError.
    pub fn of_name(name: &str) -> ErrorKind {
        ErrorKind::ALL.into_iter().find(|k| k.as_str() == name).unwrap_or(ErrorKind::RuntimeError)
    }
}

/// The body of an `Error` object. `#[repr(C)]`: five cells, so C and plugins read it as is.
/// `kind`, `message` and `backtrace` hold strings; `payload` is free for the frontend that
/// raised it (e.g. the original Python exception), `None` otherwise; `code` is the kind's
/// [`ErrorKind`] code (an int), what frontends map to their exception classes.
#[repr(C)]
pub struct ErrorObj {
    pub kind: Any,
    pub message: Any,
    pub backtrace: Any,
    pub payload: Any,
    pub code: Any,
}

const _: () = {
    assert!(std::mem::size_of::<ErrorObj>() == 80);
    assert!(std::mem::offset_of!(ErrorObj, kind) == 0);
    assert!(std::mem::offset_of!(ErrorObj, message) == 16);
    assert!(std::mem::offset_of!(ErrorObj, backtrace) == 32);
    assert!(std::mem::offset_of!(ErrorObj, payload) == 48);
    assert!(std::mem::offset_of!(ErrorObj, code) == 64);
    // The body starts right after the 24-byte header.
    assert!(std::mem::offset_of!(crate::arc::ObjectBox<ErrorObj>, value) == 24);
};

impl Object for ErrorObj {
    const TYPE_KEY: &'static str = "tether.Error";
    fn type_index() -> i32 {
        TypeIndex::ERROR
    }
}

/// An owned error: a strong reference to an `Error` object.
#[derive(Clone)]
pub struct Error(pub ObjectArc<ErrorObj>);

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of any kind (custom kinds are plain strings and map to RuntimeError).
    pub fn new(kind: &str, message: impl AsRef<str>) -> Error {
        Error::with_payload(kind, message, Any::none())
    }

    /// Never fails: when its own objects cannot be allocated, the error is the MemoryError
    /// ([`out_of_memory`]) instead.
    pub fn with_payload(kind: &str, message: impl AsRef<str>, payload: Any) -> Error {
        let backtrace = std::backtrace::Backtrace::capture();
        let backtrace = match backtrace.status() {
            std::backtrace::BacktraceStatus::Captured => Some(backtrace.to_string()),
            _ => None,
        };
        or_out_of_memory(|| {
            Error(ObjectArc::new(ErrorObj {
                kind: Any::str(kind),
                message: Any::str(message.as_ref()),
                backtrace: backtrace.as_deref().map_or_else(Any::none, Any::str),
                payload,
                code: Any::int(ErrorKind::of_name(kind).code() as i64),
            }))
        })
    }

    pub fn of_kind(kind: ErrorKind, message: impl AsRef<str>) -> Error {
        Error::new(kind.as_str(), message)
    }
    pub fn type_error(message: impl AsRef<str>) -> Error {
        Error::of_kind(ErrorKind::TypeError, message)
    }
    pub fn value(message: impl AsRef<str>) -> Error {
        Error::of_kind(ErrorKind::ValueError, message)
    }
    pub fn index(message: impl AsRef<str>) -> Error {
        Error::of_kind(ErrorKind::IndexError, message)
    }
    pub fn key(message: impl AsRef<str>) -> Error {
        Error::of_kind(ErrorKind::KeyError, message)
    }
    pub fn attribute(message: impl AsRef<str>) -> Error {
        Error::of_kind(ErrorKind::AttributeError, message)
    }
    pub fn runtime(message: impl AsRef<str>) -> Error {
        Error::of_kind(ErrorKind::RuntimeError, message)
    }

    /// The kind's name (one of [`ErrorKind`]'s, or a name of the raiser's own).
    pub fn kind(&self) -> &str {
        self.0.kind.view_str()
    }
    /// The kind, as frontends map it to their exception classes.
    pub fn code(&self) -> ErrorKind {
        ErrorKind::from_code(self.0.code.view().as_int().unwrap_or(0))
    }
    pub fn message(&self) -> &str {
        self.0.message.view_str()
    }
    /// The native backtrace, when one was captured (RUST_BACKTRACE / RUST_LIB_BACKTRACE).
    pub fn backtrace(&self) -> &str {
        self.0.backtrace.view_str()
    }
    pub fn payload(&self) -> &Any {
        &self.0.payload
    }

    /// This error with its message replaced (kind, backtrace and payload kept): context
    /// added on the way out, such as the argument a conversion failed on.
    pub fn reworded(&self, message: impl AsRef<str>) -> Error {
        or_out_of_memory(|| {
            Error(ObjectArc::new(ErrorObj {
                kind: self.0.kind.clone(),
                message: Any::str(message.as_ref()),
                backtrace: self.0.backtrace.clone(),
                payload: self.0.payload.clone(),
                code: self.0.code.clone(),
            }))
        })
    }

    /// Wrap an error object received through the ABI.
    pub fn from_object(obj: ObjectRef) -> Result<Error, ObjectRef> {
        obj.try_cast::<ErrorObj>().map(Error)
    }

    pub fn into_object(self) -> ObjectRef {
        self.0.into()
    }
}

impl Any {
    /// The string inside this cell, or "" (used for error fields, which always hold strings).
    pub(crate) fn view_str(&self) -> &str {
        self.as_str().unwrap_or("")
    }
}

impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind(), self.message())
    }
}

impl std::error::Error for Error {}

thread_local! {
    static LAST_ERROR: RefCell<Option<ObjectRef>> = const { RefCell::new(None) };
}

/// Put `err` in this thread's raised slot (replacing what was there).
pub fn set_last_error(err: Error) {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry; ownership of the reference moves to the host.
        unsafe { (api.set_last_error)(err.into_object().into_raw()) };
        return;
    }
    local_set_last_error(err.into_object());
}

pub(crate) fn local_set_last_error(err: ObjectRef) {
    LAST_ERROR.with(|slot| *slot.borrow_mut() = Some(err));
}

/// Take this thread's raised error. Never fails: an empty slot yields a RuntimeError saying so.
pub fn take_last_error() -> Error {
    let obj = if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry; returns an owned reference or null.
        let raw = unsafe { (api.take_last_error)() };
        // SAFETY: an owned reference from the host.
        (!raw.is_null()).then(|| unsafe { ObjectRef::from_raw(raw) })
    } else {
        local_take_last_error()
    };
    obj.and_then(|o| Error::from_object(o).ok())
        .unwrap_or_else(|| Error::runtime("a native call failed without raising an error"))
}

pub(crate) fn local_take_last_error() -> Option<ObjectRef> {
    LAST_ERROR.with(|slot| slot.borrow_mut().take())
}

thread_local! {
    /// Where the last caught panic happened, with its backtrace, for the `RustPanic` error.
    static PANIC_TRACE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Route panics inside `catch_panic` into the error instead of stderr: a caught panic is an
/// ordinary error for the caller, so printing it as if the process were dying misleads.
/// Panics elsewhere still reach the previous hook.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !catch_frame::inside() {
                return previous(info);
            }
            let location = info.location().map(|l| format!("panicked at {l}\n")).unwrap_or_default();
            let trace = std::backtrace::Backtrace::capture();
            let trace = match trace.status() {
                std::backtrace::BacktraceStatus::Captured => trace.to_string(),
                _ => String::new(),
            };
            let message = format!("{location}{trace}");
            // A second panic before `catch_panic` took the first means the first was not caught
            // (e.g. it hit an `extern "C"` frame and the process is aborting): say both.
            let unclaimed = PANIC_TRACE.try_with(|t| t.borrow_mut().replace(message.clone())).ok().flatten();
            if let Some(first) = unclaimed {
                eprintln!("tether: uncaught panic inside a native call:\n{first}");
                previous(info);
            }
        }));
    });
}

/// Run `f`, turning a panic into a `RustPanic` error with the panic's message (and where it
/// happened as the error's backtrace).
#[inline]
pub fn catch_panic<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    install_panic_hook();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| catch_frame::run_marked(f))) {
        Ok(r) => r,
        Err(panic) => Err(panic_error(panic)),
    }
}

/// [`catch_panic`] for the body of a `safe_call` registered as a catching frame
/// ([`register_catching_safe_call`], or core's own when it makes a Function): no per-call
/// mark at all. Elsewhere a panic is still caught, but the panic hook, seeing no catching
/// frame, also prints it.
#[inline]
pub fn catch_panic_registered<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| catch_frame::run_in_registered(f))) {
        Ok(r) => r,
        Err(panic) => Err(panic_error(panic)),
    }
}

/// Make the function at `start` (a `safe_call`) a frame whose panics [`catch_panic_registered`]
/// catches quietly.
pub(crate) fn register_catching_frame(start: usize) {
    install_panic_hook();
    catch_frame::register(start);
}

/// Make a frontend's own `safe_call` (one whose body runs under [`catch_panic_registered`]) a
/// frame whose panics are caught quietly, as core's Function bodies are: a callback's glue
/// then pays no per-call mark (two calls, [`catch_panic`]'s cost). Idempotent.
pub fn register_catching_safe_call(safe_call: crate::function::SafeCallFn) {
    register_catching_frame(safe_call as usize);
}

/// The error for a caught panic: the MemoryError for a failed allocation ([`OutOfMemory`]),
/// else a `RustPanic` with the panic's message and the trace the hook recorded. What every
/// guard at a language boundary turns a panic into.
#[cold]
#[inline(never)]
pub fn panic_error(panic: Box<dyn std::any::Any + Send>) -> Error {
    if panic.is::<OutOfMemory>() {
        return out_of_memory();
    }
    let trace = PANIC_TRACE.try_with(|t| t.borrow_mut().take()).ok().flatten().unwrap_or_default();
    or_out_of_memory(|| {
        Error(ObjectArc::new(ErrorObj {
            kind: Any::str(ErrorKind::RustPanic.as_str()),
            message: Any::str(&panic_message(&*panic)),
            backtrace: Any::str(&trace),
            payload: Any::none(),
            code: Any::int(ErrorKind::RustPanic.code() as i64),
        }))
    })
}

/// `f()`, or the MemoryError when one of its allocations fails (other panics go on
/// unwinding). For a frontend's own code between language frames, which an unwind must not
/// cross: it releases what it holds and raises the error instead.
pub fn catch_out_of_memory<T>(f: impl FnOnce() -> T) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => Ok(v),
        Err(p) if p.is::<OutOfMemory>() => Err(out_of_memory()),
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// `make()`, or the MemoryError when one of its allocations fails.
fn or_out_of_memory(make: impl FnOnce() -> Error) -> Error {
    catch_out_of_memory(make).unwrap_or_else(|e| e)
}

/// The message of every MemoryError (made once, so raising it allocates nothing).
pub const OUT_OF_MEMORY_MESSAGE: &str = "out of memory: a native object could not be allocated";

/// The host's MemoryError, made ahead by [`prepare_out_of_memory`]: raising it needs no memory.
static OUT_OF_MEMORY: OnceLock<Error> = OnceLock::new();

/// Make the MemoryError ahead of need (the host's [`crate::init`]: three objects that live for
/// the rest of the process).
pub(crate) fn prepare_out_of_memory() {
    out_of_memory();
}

/// The MemoryError raised when an object cannot be allocated: in the host one shared error
/// object (another reference to it); in a plugin the host's `make_error`, which falls back to
/// the host's own.
pub fn out_of_memory() -> Error {
    if let Some(api) = plugin::host_api() {
        let kind = plugin::ByteSlice::of(ErrorKind::MemoryError.as_str());
        // SAFETY: host table entry; it returns an owned reference to an Error, never null (the
        // host's `Error::new` falls back to its MemoryError).
        let raw = unsafe { (api.make_error)(kind, plugin::ByteSlice::of(OUT_OF_MEMORY_MESSAGE)) };
        // SAFETY: an owned reference from the host.
        return (!raw.is_null())
            .then(|| unsafe { ObjectRef::from_raw(raw) })
            .and_then(|o| Error::from_object(o).ok())
            .unwrap_or_else(|| crate::alloc::raise_out_of_memory(0, 8));
    }
    OUT_OF_MEMORY
        .get_or_init(|| {
            Error(ObjectArc::new(ErrorObj {
                kind: Any::str(ErrorKind::MemoryError.as_str()),
                message: Any::str(OUT_OF_MEMORY_MESSAGE),
                backtrace: Any::none(),
                payload: Any::none(),
                code: Any::int(ErrorKind::MemoryError.code() as i64),
            }))
        })
        .clone()
}

/// The message of a panic payload (`&str` or `String`), or a placeholder.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "Rust panic with a non-string payload".to_string()
    }
}

/// The `extern "C"` convention: 0 on success, -1 with the error in the raised slot. Panics
/// inside `f` are caught.
pub fn ffi_status(f: impl FnOnce() -> Result<()>) -> i32 {
    match catch_panic(f) {
        Ok(()) => 0,
        Err(e) => {
            set_last_error(e);
            -1
        }
    }
}
