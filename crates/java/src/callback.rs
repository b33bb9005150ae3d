//! Java callables as native Functions.
//!
//! A `TetherCallback` or `java.util.function.Function` passed to native code becomes a
//! Function whose data holds a JNI global reference to it. A registry maps each callable
//! (bucketed by `System.identityHashCode`, compared with `IsSameObject`) to its live Function,
//! so the same callable passed twice is the same native Function; and when that Function
//! comes back to Java, Java gets the original callable (`echo(cb) == cb`).
//!
//! The registry holds no reference: a Function's `drop_data` removes its entry before its
//! memory can be freed, and lookups only take a reference with a CAS that fails on zero.
//!
//! A callable passed straight to a call (`f.call(cb)`, `Marshal`'s `KIND_CALLABLE`) is *lent*
//! a Function instead ([`LentArgs::lend`], [`reclaim`]): its registered Function if it has
//! one, or the one lent to a call of this thread still running with it, else this thread's
//! spare shell aimed at it through a weak global reference the shell keeps (the same callable
//! lent again needs no new reference, and no `IsSameObject` when it comes with the lend token
//! the shell was aimed under, `Callbacks.lendToken`; the caller's frame keeps the callable
//! alive for the call). After the call a shell nothing else holds is the thread's spare again; one
//! something kept (it escaped) takes a global reference to the callable and is registered
//! then, as a Function made by [`function_for`] would have been. So a call that does not
//! keep its callable makes no Function, takes no lock and registers nothing; it runs with the
//! weak reference (HotSpot resolves weak global references passed to JNI functions, and the
//! caller's frame keeps the callable alive). Each thread keeps at most one spare shell, made
//! on its first lend and freed only when the thread exits, so `live_objects()` does not move
//! with calls once a thread has lent (a lent shell that escaped is replaced at once, the
//! escaped one counting as the Function it now is; if that allocation fails, the thread's
//! next lend makes it). Not made at load: a process that never passes a callable from a
//! thread has no shell for it (a host's baseline taken before the JVM started, as in
//! tests/two_frontends, stays exact).
//!
//! A callback whose result is a `TetherInstance` hands that wrapper back as the upcall's
//! return value; inside a lending call ([`MemoWindow`]) the call returns that very reference
//! when its result is the same object (no slot revival).
//!
//! Limit: a callable passed on another thread while this thread's call keeps its lent shell
//! gets a Function of its own there (the registry learns of the shell only when the call
//! ends); both come back to Java as the callable.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

use jni_sys::{jobject, jvalue};
use tether_core::arc::ObjectBox;
use tether_core::boundary::CallableRegistry;
use tether_core::containers::OpaqueObj;
use tether_core::function::FunctionObj;
use tether_core::object::ObjectHeader;
use tether_core::thread_spares::{thread_token, SpareCell};
use tether_core::{Any, AnyView, Error, Function, ObjectArc, ObjectRef, Result};

use crate::convert;
use crate::jenv::Env;
use crate::{attach, classes};

/// `OpaqueObj::owner` of objects that hold a JNI global reference.
pub const JVM_OWNER: u64 = 0x4a56_4d00; // "JVM\0"

struct CallbackData {
    /// What `call_java` and `original_callable` use: a global reference to the callable (a
    /// Function made by `function_for`, or a lent shell that escaped), or while a shell is
    /// lent its `weak` reference; null in a spare shell. Non-null exactly when the Function is
    /// registered or lent. Atomic: an escaped shell's goes from `weak` to a global reference
    /// while other threads may read it (both resolve to the callable then, which the caller's
    /// frame keeps alive until the global one does).
    global: AtomicPtr<jni_sys::_jobject>,
    /// A shell's weak reference to the last callable lent through it, kept across lends and
    /// deleted with the shell (or, at thread exit, handed to [`ORPHANS`]); null otherwise.
    weak: jobject,
    id_hash: i32,
    /// A shell's: the lend token (`Callbacks.lendToken`, one per callable) of the callable
    /// `weak` was last checked against or made from; 0 for none. A lend with this token is
    /// of that callable: no `IsSameObject`.
    token: u64,
    /// A lent shell's: the [`thread_token`] of the thread it is lent on, 0 otherwise, and that
    /// thread's [`ThreadLending`] in `lending`. `call_java` on that thread (the callback of
    /// the call it is lent to) finds its state here instead of through the thread-local (a
    /// `__tls_get_addr` call); any other thread's token differs, so it never reads `lending`,
    /// which stays valid while the shell is lent (the lending call runs on its thread).
    /// Atomic: a shell the call shared may be called on another thread meanwhile.
    lender: AtomicUsize,
    lending: AtomicPtr<ThreadLending>,
}

impl CallbackData {
    fn global(&self) -> jobject {
        self.global.load(Ordering::Acquire)
    }
}

/// Weak references of spare shells whose threads exited (a thread-local destructor has no
/// JNI env to delete them with): deleted by the next lend that makes a weak reference.
static ORPHANS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static ORPHANED: AtomicUsize = AtomicUsize::new(0);

fn orphan(weak: jobject) {
    ORPHANS.lock().unwrap_or_else(|e| e.into_inner()).push(weak as usize);
    ORPHANED.fetch_add(1, Ordering::Release);
}

fn delete_orphans(env: Env) {
    if ORPHANED.load(Ordering::Acquire) == 0 {
        return;
    }
    let orphans = std::mem::take(&mut *ORPHANS.lock().unwrap_or_else(|e| e.into_inner()));
    ORPHANED.fetch_sub(orphans.len(), Ordering::Release);
    for weak in orphans {
        env.delete_weak_global_ref(weak as jobject);
    }
}

/// Every callable passed to native code, with its Function (keyed by its identity hash; the
/// handles are the Functions' global references, told apart with `IsSameObject`).
static CALLABLES: CallableRegistry = CallableRegistry::new();

/// Native name of every Function made from a Java callable (at most 7 bytes: stored inline).
const CALLBACK_NAME: &str = "java.cb";

/// An owned reference to the Function for Java callable `cb`, made on first use.
pub fn function_for(env: Env, cb: jobject, id_hash: i32) -> Result<*mut ObjectHeader> {
    let f = CALLABLES.function_for(
        id_hash as u32 as usize,
        |global| env.is_same_object(global as jobject, cb),
        || {
            let global = env.new_global_ref(cb);
            if global.is_null() {
                env.clear_exception();
                return Err(Error::runtime("out of JNI global references"));
            }
            let data = Box::into_raw(Box::new(CallbackData {
                global: AtomicPtr::new(global),
                weak: std::ptr::null_mut(),
                id_hash,
                token: 0,
                lender: AtomicUsize::new(0),
                lending: AtomicPtr::new(std::ptr::null_mut()),
            })) as *mut c_void;
            // SAFETY: `call_java` reads exactly this data; `drop_callback` frees it, on any
            // thread. The native name is never shown (the Function comes back to Java as `cb`
            // itself), so it is a short inline string: no allocation per callable passed.
            let made =
                unsafe { Function::try_from_raw_parts(call_java, data, Some(drop_callback), CALLBACK_NAME, -1, 0) };
            match made {
                Ok(func) => Ok((func, global as usize)),
                Err(e) => {
                    // SAFETY: no Function took the box; still ours, with its global reference
                    // (released directly: `drop_callback` would also forget a registry entry,
                    // whose lock is held here).
                    drop(unsafe { Box::from_raw(data as *mut CallbackData) });
                    env.delete_global_ref(global);
                    Err(e)
                }
            }
        },
    )?;
    Ok(ObjectRef::from(f.0).into_raw())
}

/// A new shell for lending: a Function of ours whose data names no callable yet.
fn new_shell() -> Result<Function> {
    let data = Box::into_raw(Box::new(CallbackData {
        global: AtomicPtr::new(std::ptr::null_mut()),
        weak: std::ptr::null_mut(),
        id_hash: 0,
        token: 0,
        lender: AtomicUsize::new(0),
        lending: AtomicPtr::new(std::ptr::null_mut()),
    })) as *mut c_void;
    // SAFETY: `call_java` reads exactly this data (a shell is called only while lent, aimed at
    // a callable); `drop_callback` frees it and skips the registry for a null reference.
    let made = unsafe { Function::try_from_raw_parts(call_java, data, Some(drop_callback), CALLBACK_NAME, -1, 0) };
    if made.is_err() {
        // SAFETY: no Function took the box; it is still ours.
        drop(unsafe { Box::from_raw(data as *mut CallbackData) });
    }
    made
}

/// This thread's lending state (see the module comment).
struct Lending {
    /// The spare shell: unique, its data's reference null.
    spare: Option<Function>,
    /// Shells lent to calls of this thread that still run (no reference held: each call's
    /// [`Lent`] holds one).
    in_flight: Vec<*mut ObjectHeader>,
}

impl Drop for Lending {
    fn drop(&mut self) {
        // The thread exits: no env to delete the spare's weak reference with here.
        if let Some(mut spare) = self.spare.take() {
            if let Some(body) = ObjectArc::get_mut(&mut spare.0) {
                // SAFETY: a shell's data is its `CallbackData`; the spare is unique.
                let data = unsafe { &mut *(body.data as *mut CallbackData) };
                if !data.weak.is_null() {
                    orphan(std::mem::replace(&mut data.weak, std::ptr::null_mut()));
                }
            }
        }
    }
}

/// This thread's lending state, memo window and callback result slot, in one thread-local
/// (each access is a `__tls_get_addr` call in a shared library): a lending call finds it once
/// ([`LentArgs::new`]) and hands it to [`lend`], [`reclaim`] and its [`MemoWindow`]; a
/// callback reads it once.
pub struct ThreadLending {
    state: std::cell::RefCell<Lending>,
    /// The memo of the lending call whose function runs on this thread right now, null outside
    /// such a window and while a callback's Java code runs (its own calls are other frames,
    /// whose local references must not reach this one).
    memo: std::cell::Cell<*mut ResultMemo>,
    /// The result slot of the callback this thread runs through `Callbacks.invoke0` right now
    /// (the innermost one: a callback's Java code may run others), null outside one. Java
    /// names it with slot address 0 ([`current_slot`]), so the upcall passes one argument.
    slot: std::cell::Cell<*mut ResultSlot>,
}

thread_local! {
    /// Dropped when the thread exits: the spare goes then (its drop hook touches no JVM).
    static LENDING: ThreadLending = const {
        ThreadLending {
            state: std::cell::RefCell::new(Lending { spare: None, in_flight: Vec::new() }),
            memo: std::cell::Cell::new(std::ptr::null_mut()),
            slot: std::cell::Cell::new(std::ptr::null_mut()),
        }
    };
}

/// The data of a Function of ours.
///
/// # Safety
/// `f` is live and its `safe_call` is [`call_java`].
unsafe fn data_of<'a>(f: *mut ObjectHeader) -> &'a CallbackData {
    // SAFETY: a live Function of ours (this function's contract) carries a `CallbackData`.
    unsafe { &*((*(f as *const ObjectBox<FunctionObj>)).value.data as *const CallbackData) }
}

/// A Function lent to one call for a callable argument: hand it back with [`reclaim`].
pub enum Lent {
    /// A Function that was already the callable's (registered, or lent to a running call of
    /// this thread): a reference, nothing else.
    Held(Function),
    /// This thread's shell, aimed at the callable for the call.
    Shell(Function),
}

impl Lent {
    pub fn as_object_ptr(&self) -> *mut ObjectHeader {
        match self {
            Lent::Held(f) | Lent::Shell(f) => f.as_object_ptr(),
        }
    }
}

/// The Function Java callable `cb` (a live local reference; `id_hash` its identity hash,
/// `token` its lend token or 0) is passed to a call as: see the module comment.
/// `lending` is this thread's state (None while the thread exits). Inline in
/// [`LentArgs::lend`], its one caller.
#[inline(always)]
fn lend(env: Env, cb: jobject, id_hash: i32, token: u64, lending: Option<&ThreadLending>) -> Result<Lent> {
    let key = id_hash as u32 as usize;
    if let Some(f) = CALLABLES.live(key, |global| env.is_same_object(global as jobject, cb)) {
        return Ok(Lent::Held(f));
    }
    let Some(tl) = lending else {
        // The thread is exiting (its thread-locals are gone): a registered Function.
        return function_for(env, cb, id_hash).map(|f| Lent::Held(Function(owned_function(f))));
    };
    let found = {
        let mut l = tl.state.borrow_mut();
        let running = l.in_flight.iter().rev().copied().find(|&f| {
            // SAFETY: an in-flight shell is alive (its call's `Lent` holds it) and ours.
            let data = unsafe { data_of(f) };
            data.id_hash == id_hash && env.is_same_object(data.global(), cb)
        });
        match running {
            // SAFETY: alive (see above); the reference taken here is the one `from_raw` adopts.
            Some(f) => Ok(Lent::Held(Function(unsafe {
                tether_core::object::inc_ref(f);
                ObjectArc::from_raw(f)
            }))),
            None => Err(l.spare.take()),
        }
    };
    let spare = match found {
        Ok(held) => return Ok(held),
        Err(spare) => spare,
    };
    let mut shell = match spare {
        Some(shell) => shell,
        None => new_shell()?,
    };
    let Some(body) = ObjectArc::get_mut(&mut shell.0) else { unreachable!("a spare shell is unique") };
    // SAFETY: a shell's data is its `CallbackData`, and the shell is unique: nothing reads it.
    let data = unsafe { &mut *(body.data as *mut CallbackData) };
    // The weak reference of the last callable lent through this shell, if that is `cb` (a
    // cleared one never is): known by its token (Java gives one token to one callable, and a
    // callable Java passes is alive, so its weak reference is not cleared), else checked.
    let known = token != 0 && data.token == token && !data.weak.is_null();
    if !known && (data.weak.is_null() || !env.is_same_object(data.weak, cb)) {
        delete_orphans(env);
        let weak = env.new_weak_global_ref(cb);
        if weak.is_null() {
            env.clear_exception();
            give_back(shell, tl);
            return Err(Error::runtime("out of JNI weak global references"));
        }
        if !data.weak.is_null() {
            env.delete_weak_global_ref(data.weak);
        }
        data.weak = weak;
    }
    *data.global.get_mut() = data.weak;
    data.id_hash = id_hash;
    data.token = token;
    *data.lending.get_mut() = tl as *const ThreadLending as *mut ThreadLending;
    *data.lender.get_mut() = thread_token();
    tl.state.borrow_mut().in_flight.push(shell.as_object_ptr());
    Ok(Lent::Shell(shell))
}

/// An owned Function handle from [`function_for`] as an `ObjectArc`.
fn owned_function(f: *mut ObjectHeader) -> ObjectArc<FunctionObj> {
    // SAFETY: `function_for` returns an owned reference to a Function.
    unsafe { ObjectRef::from_raw(f) }.try_cast().unwrap_or_else(|_| unreachable!("function_for made a Function"))
}

/// `shell` (unique, its reference null) back as this thread's spare, or dropped if there is one.
fn give_back(shell: Function, tl: &ThreadLending) {
    let surplus = {
        let mut l = tl.state.borrow_mut();
        match l.spare {
            None => {
                l.spare = Some(shell);
                None
            }
            Some(_) => Some(shell),
        }
    };
    // Dropped outside the borrow (a shell's drop hook does not come back here, but its
    // memory goes through the allocator).
    drop(surplus);
}

/// The call `lent` was lent to is over (see the module comment); `tl` is this thread's state
/// (a shell is lent only when there is one).
fn reclaim(env: Env, lent: Lent, tl: Option<&ThreadLending>) {
    let (mut shell, tl) = match (lent, tl) {
        (Lent::Shell(shell), Some(tl)) => (shell, tl),
        (Lent::Held(f) | Lent::Shell(f), _) => return drop(f),
    };
    let ptr = shell.as_object_ptr();
    {
        let in_flight = &mut tl.state.borrow_mut().in_flight;
        // Calls end in the reverse order of their start: nearly always the last.
        if in_flight.last() == Some(&ptr) {
            in_flight.pop();
        } else if let Some(i) = in_flight.iter().rposition(|&f| f == ptr) {
            in_flight.remove(i);
        }
    }
    match ObjectArc::get_mut(&mut shell.0) {
        Some(body) => {
            // SAFETY: a shell's data is its `CallbackData`; unique, so nothing else reads it.
            let data = unsafe { &mut *(body.data as *mut CallbackData) };
            *data.global.get_mut() = std::ptr::null_mut(); // the weak reference stays, for the next lend
            *data.lender.get_mut() = 0;
            give_back(shell, tl);
        }
        None => {
            // Escaped: it is the callable's Function from now on, as if `function_for` had
            // made it: a global reference (the weak one still resolves: the caller's frame
            // holds the callable) replaces the weak one for readers, and it is registered
            // under it; its drop hook forgets it and deletes both references.
            // SAFETY: a live shell of ours (`shell` holds it).
            let data = unsafe { data_of(ptr) };
            // Lent no more: its callbacks find their thread's state through the thread-local.
            data.lender.store(0, Ordering::Relaxed);
            let global = env.new_global_ref(data.weak);
            if global.is_null() {
                // No global reference to be had (the JVM is out of memory): it keeps working
                // while the callable lives.
                env.clear_exception();
            } else {
                data.global.store(global, Ordering::Release);
            }
            CALLABLES.register(data.id_hash as u32 as usize, data.global() as usize, &shell);
            drop(shell);
            // A new spare now, so the objects alive at rest stay the same (a failed allocation
            // leaves the thread without one until its next lend makes it).
            if tl.state.borrow().spare.is_none() {
                if let Ok(spare) = new_shell() {
                    give_back(spare, tl);
                }
            }
        }
    }
}

/// Callables lent to the arguments of one call ([`lend`]), reclaimed when this is dropped:
/// after the call and the conversion of its result, or while a panic unwinds.
pub struct LentArgs<'e, const N: usize> {
    env: Env<'e>,
    items: [Option<Lent>; N],
    /// The last `TetherInstance` a callback of the call returned (see [`MemoWindow`]).
    pub memo: ResultMemo,
    /// This thread's [`ThreadLending`], null while the thread exits.
    lending: *const ThreadLending,
}

/// The thread's state behind a [`LentArgs`]' pointer.
///
/// # Safety
/// `p` is null or this thread's `LENDING` (alive while the thread runs a native call).
unsafe fn lending_at<'a>(p: *const ThreadLending) -> Option<&'a ThreadLending> {
    // SAFETY: the caller's guarantee.
    unsafe { p.as_ref() }
}

impl<'e, const N: usize> LentArgs<'e, N> {
    pub fn new(env: Env<'e>) -> Self {
        let lending = LENDING.try_with(|l| l as *const ThreadLending).unwrap_or(std::ptr::null());
        LentArgs { env, items: [const { None }; N], memo: ResultMemo::new(env), lending }
    }

    /// Lend a Function to argument `i`, Java callable `cb` (a live local reference; `id_hash`
    /// its identity hash, `token` its lend token or 0): see the module comment. It is held
    /// until this is dropped.
    pub fn lend(&mut self, i: usize, cb: jobject, id_hash: i32, token: u64) -> Result<*mut ObjectHeader> {
        // SAFETY: `lending` was taken on this thread by `new`, within this native call.
        let lent = lend(self.env, cb, id_hash, token, unsafe { lending_at(self.lending) })?;
        let ptr = lent.as_object_ptr();
        self.items[i] = Some(lent);
        Ok(ptr)
    }

    /// Open the memo window of this call around its function (see [`MemoWindow`]).
    pub fn window(&mut self) -> MemoWindow<'_> {
        // SAFETY: as in `lend`.
        match unsafe { lending_at(self.lending) } {
            Some(tl) => {
                MemoWindow { previous: tl.memo.replace(&mut self.memo), lending: tl, _memo: std::marker::PhantomData }
            }
            None => MemoWindow {
                previous: std::ptr::null_mut(),
                lending: std::ptr::null(),
                _memo: std::marker::PhantomData,
            },
        }
    }
}

impl<const N: usize> LentArgs<'_, N> {
    /// The call is over: every lent Function goes back (see [`reclaim`]), inline; the caller
    /// then forgets this. A drop does the same (an unwinding call), but its glue, which then
    /// finds every item empty, LLVM left out of line in each `call*` native. (By reference:
    /// taken by value, the whole record was copied first.)
    #[inline(always)]
    pub fn finish(&mut self) {
        self.reclaim_all();
    }

    #[inline(always)]
    fn reclaim_all(&mut self) {
        // SAFETY: as in `lend`.
        let tl = unsafe { lending_at(self.lending) };
        for lent in self.items.iter_mut().rev() {
            if let Some(lent) = lent.take() {
                reclaim(self.env, lent, tl);
            }
        }
    }
}

impl<const N: usize> Drop for LentArgs<'_, N> {
    fn drop(&mut self) {
        self.reclaim_all();
    }
}

/// The Java callable behind `obj` if it is one of ours (a global reference, borrowed).
pub fn original_callable(obj: &ObjectRef) -> Option<jobject> {
    let func = obj.downcast_ref::<FunctionObj>()?;
    if !std::ptr::eq(func.safe_call as *const (), call_java as *const ()) {
        return None;
    }
    // SAFETY: functions with our trampoline carry a `CallbackData`.
    let global = unsafe { (*(func.data as *const CallbackData)).global() };
    (!global.is_null()).then_some(global)
}

unsafe extern "C" fn drop_callback(data: *mut c_void) {
    // SAFETY: the box leaked in `function_for` or `new_shell`, dropped once.
    let data = unsafe { Box::from_raw(data as *mut CallbackData) };
    let (global, weak) = (data.global(), data.weak);
    if !global.is_null() {
        // Registered (a Function of `function_for`, or a shell that escaped).
        CALLABLES.forget(data.id_hash as u32 as usize, global as usize);
    }
    if global.is_null() && weak.is_null() {
        return; // a shell that names no callable: nothing to release
    }
    // A failure here means no JVM any more: nothing left to release.
    let _ = attach::with_env(|env| {
        if !global.is_null() && global != weak {
            env.delete_global_ref(global);
        }
        if !weak.is_null() {
            env.delete_weak_global_ref(weak);
        }
    });
}

unsafe extern "C" fn release_global(ptr: *mut c_void) {
    let _ = attach::with_env(|env| env.delete_global_ref(ptr as jobject));
}

/// A native Error carrying Java throwable `t` (as a global reference in its payload), so the
/// same throwable comes back out where the error reaches Java.
pub fn error_from_throwable(env: Env, t: jobject, kind: &str, message: &str) -> Error {
    let global = env.new_global_ref(t);
    let payload = if global.is_null() {
        Any::none()
    } else {
        let opaque = OpaqueObj { ptr: global as *mut c_void, finalize: Some(release_global), owner: JVM_OWNER };
        // A payload that cannot be allocated releases the global reference (its finalizer
        // runs) and the error is the MemoryError.
        match tether_core::error::catch_out_of_memory(|| ObjectArc::new(opaque)) {
            Ok(payload) => Any::object(payload.into()),
            Err(e) => return e,
        }
    };
    Error::with_payload(kind, message, payload)
}

/// The Java throwable an Error carries, if a Java callback raised it (a global reference).
pub fn carried_throwable(err: &Error) -> Option<jobject> {
    let opaque = err.payload().view().downcast_ref::<OpaqueObj>()?;
    (opaque.owner == JVM_OWNER && !opaque.ptr.is_null()).then_some(opaque.ptr as jobject)
}

/// Make [`call_java`] a catching frame (once, at load), so its body runs under
/// `catch_panic_registered`: no per-call mark (`catch_panic`'s cost two calls per callback).
pub fn register_safe_call() {
    tether_core::error::register_catching_safe_call(call_java);
}

unsafe extern "C" fn call_java(handle: *mut ObjectHeader, args: *const AnyView<'_>, n: i32, result: *mut Any) -> i32 {
    // A registered catching frame (`register_safe_call`): a panic in this glue (a bug) is
    // raised as a RustPanic.
    let outcome = tether_core::error::catch_panic_registered(|| -> Result<()> {
        // SAFETY: `handle` is a live Function made by `function_for`; `args` holds `n` cells.
        let (data, args) = unsafe {
            let func = &(*(handle as *const ObjectBox<FunctionObj>)).value;
            let data = &*(func.data as *const CallbackData);
            let args = if n <= 0 { &[][..] } else { std::slice::from_raw_parts(args, n as usize) };
            (data, args)
        };
        let cb = data.global();
        match with_lending(data, |tl| {
            // Masked for the callback's Java code (see `ThreadLending::memo`), restored for
            // this frame after.
            let window = tl.memo.replace(std::ptr::null_mut());
            if window.is_null() {
                // No window: any thread, attached if need be.
                // SAFETY: no memo; the caller's result cell holds None and is ours to fill.
                return attach::with_env(|env| unsafe {
                    invoke(env, cb, args, std::ptr::null_mut(), Some(tl), result)
                })?;
            }
            // In a lending call's window: this thread's env is the one that call was given.
            // SAFETY: the open window's memo, on this thread, whose `env` is this thread's.
            let env = unsafe { Env::from_raw((*window).env) };
            // SAFETY: `window` is the memo of the window open on this thread, whose native
            // frame is the one the upcall returns its local reference into (no Java frame
            // between: the window is masked while Java code runs); the caller's result cell
            // holds None and is ours to fill.
            let done = unsafe { invoke(env, cb, args, window, Some(tl), result) };
            tl.memo.set(window);
            done
        }) {
            Ok(done) => done,
            // The thread is exiting (its thread-locals are gone): no window, and the result
            // slot's address travels with the upcall.
            // SAFETY: no memo; the caller's result cell holds None and is ours to fill.
            Err(_) => attach::with_env(|env| unsafe { invoke(env, cb, args, std::ptr::null_mut(), None, result) })?,
        }
    });
    tether_core::function::call_status(outcome)
}

/// `f` with this thread's [`ThreadLending`], found through the lent shell whose `data` it
/// is when this thread lent it (the callback of the lending call), else the thread-local;
/// `Err` when the thread is exiting (its thread-locals are gone).
#[inline(always)]
fn with_lending<R>(data: &CallbackData, f: impl FnOnce(&ThreadLending) -> R) -> Result<R, std::thread::AccessError> {
    if data.lender.load(Ordering::Relaxed) == thread_token() {
        let lending = data.lending.load(Ordering::Relaxed);
        debug_assert!(
            LENDING.try_with(|l| std::ptr::eq(l, lending)).unwrap_or(true),
            "a shell lent on this thread names this thread's lending state"
        );
        // SAFETY: this thread lent the shell and its lending call still runs (the lend is
        // undone before it returns), so `lending` is this thread's live state.
        return Ok(f(unsafe { &*lending }));
    }
    LENDING.try_with(f)
}

/// Where `Callbacks` writes a callback's outcome (`Native.putResult` / `putThrown`): a cell
/// on the stack of the native frame that calls it, passed to Java as its address. None until
/// written.
pub type ResultSlot = Option<Result<Any>>;

/// A callback's `TetherInstance` result as the lending call whose function ran the callback
/// saw it (see [`MemoWindow`]): the object, its wrapper (a local reference of that call's
/// native frame, which keeps the wrapper reachable until the call returns) and the wrapper's
/// word. When the call's result is that object, the call returns this wrapper as is: no slot
/// revival (`Frontend::return_object`'s locked revive and `NewLocalRef`).
pub struct ResultMemo {
    pub obj: *mut ObjectHeader,
    pub wrapper: jobject,
    pub word: i64,
    /// This thread's spare cell, when taking the reference looked it up: the lending call
    /// keeps the result's +1 there without a second lookup.
    pub cell: Option<SpareCell<'static>>,
    /// The lending call's env (this thread's): callbacks in its window need no `GetEnv`.
    env: *mut jni_sys::JNIEnv,
}

impl ResultMemo {
    pub fn new(env: Env) -> Self {
        ResultMemo { obj: std::ptr::null_mut(), wrapper: std::ptr::null_mut(), word: 0, cell: None, env: env.as_raw() }
    }
}

/// While this lives, callbacks this thread runs directly (no Java frame in between) record
/// their `TetherInstance` results in the memo of the [`LentArgs`] that opened it; the previous
/// window (an enclosing call's, masked while its callback's Java code runs) comes back when it
/// drops.
pub struct MemoWindow<'m> {
    previous: *mut ResultMemo,
    /// Null when the thread had no state (exiting).
    lending: *const ThreadLending,
    _memo: std::marker::PhantomData<&'m mut ResultMemo>,
}

impl Drop for MemoWindow<'_> {
    fn drop(&mut self) {
        // SAFETY: this thread's `LENDING` (see `LentArgs::window`), or null.
        if let Some(tl) = unsafe { lending_at(self.lending) } {
            tl.memo.set(self.previous);
        }
    }
}

/// Run callback `cb` with `args`; write its value into `result`. Values are written in place
/// and small results returned, never a large one copied back up (a value stored in pieces and
/// reloaded whole is a store-forwarding stall; two of those were ~8% of a `call(cb)`).
///
/// # Safety
/// `memo` is null or the memo of the window open on this thread (masked while this runs),
/// whose native frame is the current one; `tl` is this thread's `LENDING` when it still has
/// one; `result` is a writable cell holding None.
#[inline(always)]
unsafe fn invoke(
    env: Env,
    cb: jobject,
    args: &[AnyView<'_>],
    memo: *mut ResultMemo,
    tl: Option<&ThreadLending>,
    result: *mut Any,
) -> Result<()> {
    let mut slot: ResultSlot = None;
    let instance = upcall(env, cb, args, tl, &mut slot)?;
    let value = if !instance.is_null() {
        // A non-null return: Java's method completed, so no exception is pending.
        // SAFETY: a `TetherInstance` `Callbacks` returned (a local reference of this frame);
        // `memo` as this function's contract.
        unsafe { instance_result(env, instance, memo) }?
    } else if let Some(t) = env.take_exception() {
        // Callbacks catches everything it can; this is an error it could not handle.
        let error = error_from_throwable(env, t, "RuntimeError", "a Java callback failed");
        env.delete_local_ref(t);
        return Err(error);
    } else {
        slot.take().unwrap_or_else(|| Err(Error::runtime("a Java callback returned no outcome")))?
    };
    // SAFETY: this function's contract.
    unsafe { result.write(value) };
    Ok(())
}

/// Run the callback through `Callbacks.invoke0` / `invoke`: a `TetherInstance` result (a local
/// reference of this frame), or null with the outcome in `slot` (or an exception pending).
/// Inline for a callback without arguments (its own call was ~4% of a `call(cb)`'s samples),
/// out of line with arguments. Without arguments `slot` is this thread's current result slot
/// (`tl.slot`) while Java runs, not an argument: JNI passes each argument by walking the
/// method's signature, and one argument less was ~8% of a `call(cb)` on JDK 17 here.
#[inline(always)]
fn upcall(
    env: Env,
    cb: jobject,
    args: &[AnyView<'_>],
    tl: Option<&ThreadLending>,
    slot: &mut ResultSlot,
) -> Result<jobject> {
    let Some(tl) = tl.filter(|_| args.is_empty()) else {
        return upcall_with_arguments(env, cb, args, slot);
    };
    let c = classes::get();
    let outer = tl.slot.replace(slot);
    // No local reference is made here but the result's: no frame needed.
    // SAFETY: `Callbacks.invoke0(Object) -> Object`, resolved at init; `slot` outlives the
    // call, and only `putResult`/`putThrown` on this thread write it (found through
    // `tl.slot`), during it.
    let instance = unsafe { env.call_static_object(c.callbacks, c.callbacks_invoke0, &[jvalue { l: cb }]) };
    tl.slot.set(outer);
    Ok(instance)
}

/// The result slot `Callbacks` names with address 0: that of the callback this thread runs
/// through `invoke0` right now, or null (none, or the thread is exiting).
pub fn current_slot() -> *mut ResultSlot {
    LENDING.try_with(|tl| tl.slot.get()).unwrap_or(std::ptr::null_mut())
}

/// [`upcall`] with arguments: an `Object[]` of them, in a local frame of its own.
#[inline(never)]
fn upcall_with_arguments(env: Env, cb: jobject, args: &[AnyView<'_>], slot: &mut ResultSlot) -> Result<jobject> {
    let c = classes::get();
    let address = jvalue { j: slot as *mut ResultSlot as i64 };
    if !env.push_local_frame(args.len() as i32 + 16) {
        env.clear_exception();
        return Err(Error::runtime("out of JNI local references"));
    }
    let called = arguments_array(env, args).map(|array| {
        // SAFETY: `Callbacks.invoke(Object, Object[], long) -> Object`, resolved at init;
        // `slot` outlives the call, and only `putResult`/`putThrown` on this thread write it,
        // during it; `array` is a live local reference of this frame.
        unsafe {
            env.call_static_object(c.callbacks, c.callbacks_invoke, &[jvalue { l: cb }, jvalue { l: array }, address])
        }
    });
    // The result (null after a failure) moves to the caller's frame.
    let instance = env.pop_local_frame(*called.as_ref().unwrap_or(&std::ptr::null_mut()));
    called?;
    Ok(instance)
}

/// A callback's result that is a `TetherInstance` (`wrapper`, a local reference the upcall
/// returned; Java found it not closed): its object, owned (the thread's spare for that wrapper
/// if it kept one, else an increment). Recorded in `memo` when there is one (the reference
/// then lives until the lending call's frame ends), else the reference is deleted.
///
/// # Safety
/// `wrapper` is a live local reference to a `TetherInstance` of this frame; `memo` is null or
/// the memo of the window open on this thread, whose native frame is the current one.
#[inline(always)]
unsafe fn instance_result(env: Env, wrapper: jobject, memo: *mut ResultMemo) -> Result<Any> {
    let c = classes::get();
    // SAFETY: both are `long` fields of `TetherInstance`, resolved at init; `wrapper` is live.
    let (handle, word) =
        unsafe { (env.get_long_field(wrapper, c.instance_handle), env.get_long_field(wrapper, c.instance_word)) };
    if handle <= 0 {
        // Closed since Java looked (a close racing the callback's return, which docs/java.md
        // does not support): no native reference to take.
        env.delete_local_ref(wrapper);
        return Err(Error::runtime("a Java callback returned a wrapper that was closed meanwhile"));
    }
    let obj = handle as *mut ObjectHeader;
    // SAFETY: the wrapper is reachable (`wrapper`) and not closed, so it holds +1 on `obj`, and
    // `word` is the word native code tied it with.
    let (owned, cell) = unsafe { crate::tie::claim_reference(obj, word) };
    // SAFETY: the caller's guarantee: null or the open window's memo, not otherwise borrowed
    // while this callback runs.
    match unsafe { memo.as_mut() } {
        Some(memo) => {
            if !memo.wrapper.is_null() {
                // An earlier callback of the same call: only the last result is compared.
                env.delete_local_ref(memo.wrapper);
            }
            (memo.obj, memo.wrapper, memo.word, memo.cell) = (obj, wrapper, word, cell);
        }
        None => env.delete_local_ref(wrapper),
    }
    Ok(Any::object(owned))
}

/// The callback's arguments as a Java `Object[]` (a local reference of the caller's frame).
fn arguments_array(env: Env, args: &[AnyView<'_>]) -> Result<jobject> {
    let array = env.new_object_array(args.len() as i32, classes::get().object);
    if array.is_null() {
        env.clear_exception();
        return Err(Error::runtime("cannot allocate callback arguments"));
    }
    for (i, a) in args.iter().enumerate() {
        let j = convert::to_java(env, tether_core::error::catch_out_of_memory(|| a.to_owned_any())?)?;
        env.object_array_set(array, i as i32, j);
        env.delete_local_ref(j);
    }
    Ok(array)
}

/// `Native.putResult`: write a callback's result, encoded by `Marshal` (`kind`, `bits`, `r`),
/// into `slot` as an owned value (or the error decoding it raised).
///
/// # Safety
/// `slot` is the [`ResultSlot`] of a callback running on this thread ([`invoke`]); Java keeps
/// `r` reachable for this call and encoded the value as an argument.
pub unsafe fn put_result(env: Env, slot: *mut ResultSlot, kind: i32, bits: i64, r: jobject) {
    let mut hold = Any::none();
    // SAFETY: Java encoded the result as an argument and keeps `r` reachable (the caller's).
    let outcome = unsafe { convert::decode(env, kind, bits, r, &mut hold) }.map(|view| view.to_owned_any());
    // SAFETY: the slot of the running callback (this function's contract).
    unsafe { *slot = Some(outcome) };
}

/// `Native.putThrown`: the callback threw `t`; write the Error carrying it into `slot`.
///
/// # Safety
/// As [`put_result`].
pub unsafe fn put_thrown(env: Env, slot: *mut ResultSlot, t: jobject, kind: jobject, message: jobject) {
    let error = error_from_throwable(env, t, &env.get_string(kind), &env.get_string(message));
    // SAFETY: the slot of the running callback (this function's contract).
    unsafe { *slot = Some(Err(error)) };
}
