//! Per-environment state (main thread and each worker_threads env), stored as Node-API
//! instance data, and the process-wide frontend allocator tag.
//!
//! The first environment that loads the addon is the *main* one: it ties objects made by
//! our allocator through their prefix slot. Every other environment (and the main one for
//! objects made by another allocator) ties through its own [`SideTable`].

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use napi::sys;
use tether_core::boundary::{Frontend, LentFunctions, TieHost};
use tether_core::thread_spares::thread_token;

use crate::call::CallFrame;
use crate::raw::{self, napi_call, Env, JsResult, Ref, Value};

static FRONTEND_TAG: OnceLock<u32> = OnceLock::new();
static MAIN_CLAIMED: AtomicBool = AtomicBool::new(false);

/// JS values the native side needs, kept alive by strong references (JS thread only).
#[derive(Default)]
pub struct JsRefs {
    /// `classFor(typeIndex) -> constructor`, from index.js.
    pub class_factory: Option<Ref>,
    /// `makeError(kind, message, backtrace) -> Error`, from index.js.
    pub error_factory: Option<Ref>,
    /// `classifyObject(value)` (from index.js): `[isMap, items]` for a JS Map (its `[key,
    /// value]` pairs) or Set (its values), undefined for a plain object, else the name of the
    /// object's constructor (a host value).
    pub classify_object: Option<Ref>,
    /// The sentinel the class constructors recognise as "made by the addon".
    pub token: Option<Ref>,
    /// The shared `callAsync` installed on every native function.
    pub call_async: Option<Ref>,
    /// `makeShim(raw, arity, name) -> function`, from index.js: the JS function users call.
    pub shim_factory: Option<Ref>,
    /// Constructors by type index.
    pub classes: Vec<Option<Ref>>,
    /// JS subclasses of generated classes whose instances wrapped an object, by id - 1 (the
    /// object's class hint, `Frontend::class_hint`): a refetch after collection makes an
    /// instance of the subclass again. Kept for the env's life (one per subclass).
    pub subclasses: Vec<Ref>,
    /// `Reflect.construct`, to make a subclass instance running only the base constructor.
    pub reflect_construct: Option<Ref>,
    /// The ArrayBuffer holding [`EnvState::frame`], handed to index.js by `_setup`.
    pub frame_buffer: Option<Ref>,
    /// `rememberCallable(f, handle)` (index.js): keeps a JS function's Link handle beside it.
    pub remember_callable: Option<Ref>,
    /// `invokeCallable(f, ...args)` (index.js): calls a JS callback, and hands a wrapper
    /// result's handle back in the frame.
    pub invoke_callable: Option<Ref>,
    /// `handleOf(value)` (index.js): a wrapper's handle, else a JS function's Link handle or
    /// undefined (`tie::wrapper_of`).
    pub handle_of: Option<Ref>,
}

pub struct EnvState {
    /// This env, live as long as the state is reachable: the env's cleanup hook retires the
    /// state before the env goes.
    pub env: Env<'static>,
    pub is_main: bool,
    /// Where this env's wrappers are tied: the process allocator's slots (main env only) and
    /// a side table.
    pub frontend: Frontend<EnvState>,
    pub js_thread: usize,
    /// Depth of synchronous non-leaf native calls the JS thread is inside right now.
    pub sync_depth: AtomicU32,
    /// False once the env started tearing down. Written only on the JS thread, under
    /// `teardown`'s write lock: the JS thread reads it as is (no lock per callback), other
    /// threads read it under `teardown`'s read lock, which they hold while they use the
    /// threadsafe function, so it is not released under them.
    pub alive: AtomicBool,
    /// Held to read by other threads while they check `alive` and use the threadsafe
    /// function; held to write while teardown clears `alive`.
    pub teardown: RwLock<()>,
    /// Marshals callbacks and releases from other threads onto the JS thread.
    pub tsfn: AtomicTsfn,
    /// References to delete on the JS thread (dropped on another thread).
    pub pending_deletes: Mutex<Vec<usize>>,
    /// The references native objects own ([`EnvState::hold_reference`]) and have not given
    /// up yet: the env's cleanup deletes them.
    pub held_refs: Mutex<std::collections::HashSet<usize>>,
    /// Callbacks called from other threads that wait for this env's JS thread.
    pub cross_thread: Mutex<crate::callback::CrossThread>,
    /// JS-thread-only state.
    pub refs: RefCell<JsRefs>,
    /// The shims' call frame: the memory of the ArrayBuffer `refs.frame_buffer` keeps alive
    /// (V8 never moves an ArrayBuffer's contents). JS thread only.
    pub frame: *mut CallFrame,
    /// The Functions lent to this env's running calls and their spare shell
    /// (`callback::for_call`). JS thread only: it is the lock `LentFunctions` asks for.
    pub lent: LentFunctions,
    /// The wrapper box the last `TieHost::create` made (so a constructor finds the box of the
    /// wrapper it just tied without a `napi_unwrap`). JS thread only.
    pub last_made: std::cell::Cell<*const crate::tie::Wrapper>,
    /// How many more JS callbacks may run without a handle scope of their own: their handles
    /// stay in the scope of the native call they run in (V8 opens one per callback into the
    /// addon), which ends with it. Node-API allocates every handle scope it opens, so the
    /// first few callbacks of a call skip it; a native loop calling back more often opens
    /// one per callback from then on, so the handles a call keeps stay bounded. Set for each
    /// native call, 0 outside them (a queued call from another thread). JS thread only.
    pub unscoped_callbacks: std::cell::Cell<u32>,
    /// `invokeCallable` as a handle of the running one-callable call (`call(cb)`), whose shim
    /// passes it as the call's receiver: its callbacks skip reading the reference. Null outside
    /// such a call; a nested one sets its own and puts this back. JS thread only.
    pub invoke_in_call: std::cell::Cell<crate::raw::Value>,
    /// The wrapper the last JS callback run on this thread returned, for the one-callable
    /// call that ran it (`call(cb)` returning what `cb` returned gives back that very value).
    /// JS thread only.
    pub callback_result: std::cell::Cell<CallbackResult>,
}

/// A wrapper a JS callback returned, and its JS value: a handle of the scope the callback ran
/// in. Every callback run on the JS thread writes it when it returns, [`CallbackResult::NONE`]
/// unless it returned a wrapper and ran in the scope of the native call that called it (no
/// scope of its own). So when a native call's body has returned, the record is that of the
/// last callback the body itself ran (a callback run deeper, by a native call inside a
/// callback's JS, returned before that callback did), and its handle is still open.
#[derive(Clone, Copy)]
pub struct CallbackResult {
    pub wrapper: *const crate::tie::Wrapper,
    pub value: crate::raw::Value,
}

impl CallbackResult {
    pub const NONE: Self = Self { wrapper: ptr::null(), value: ptr::null_mut() };
}

/// [`EnvState::unscoped_callbacks`] at the start of each native call.
pub const UNSCOPED_CALLBACKS: u32 = 16;

impl JsRefs {
    /// Every reference held, taken out (the env's cleanup deletes them: Node-API leaves a
    /// reference the addon made to the addon, even when its env goes; valgrind found each lost).
    fn take_all(&mut self) -> Vec<Ref> {
        let singles = [
            self.class_factory.take(),
            self.error_factory.take(),
            self.classify_object.take(),
            self.token.take(),
            self.call_async.take(),
            self.shim_factory.take(),
            self.frame_buffer.take(),
            self.remember_callable.take(),
            self.invoke_callable.take(),
            self.reflect_construct.take(),
        ];
        let subclasses = self.subclasses.drain(..).map(Some);
        singles.into_iter().chain(self.classes.drain(..)).chain(subclasses).flatten().collect()
    }
}

/// The threadsafe function handle (a raw pointer, shared across threads).
pub struct AtomicTsfn(pub std::sync::atomic::AtomicPtr<sys::napi_threadsafe_function__>);

// SAFETY: `refs` (a RefCell) and the cells documented "JS thread only" are only touched on the
// env's JS thread (every path that reaches them is a Node-API callback of this env);
// everything else is atomic or locked.
unsafe impl Sync for EnvState {}
// SAFETY: the state moves between threads only inside an `Arc` (tsfn contexts, instance
// data); `refs` and the raw `env` are used on the env's JS thread alone, as for `Sync`.
unsafe impl Send for EnvState {}

impl EnvState {
    pub fn on_js_thread(&self) -> bool {
        // The thread pointer: one load, where a thread-local id was a `__tls_get_addr` call per
        // callback. A thread made after the JS thread exited may reuse it, but by then the env
        // is torn down (`alive` false), which every caller checks next.
        thread_token() == self.js_thread
    }

    /// The constructor cached for `type_index`, if any.
    pub fn cached_class(&self, type_index: i32) -> Option<Ref> {
        self.refs.borrow().classes.get(type_index as usize).copied().flatten()
    }

    pub fn token(&self) -> JsResult<Value> {
        let r = self.refs.borrow().token.expect("token set at init");
        raw::reference_value(self.env, r)
    }

    /// Delete references queued by other threads. JS thread only.
    pub fn flush_pending_deletes(&self) {
        let queued = std::mem::take(&mut *self.pending_deletes.lock().unwrap_or_else(|e| e.into_inner()));
        for r in queued {
            // SAFETY: a strong reference of this env, queued for deletion exactly once.
            unsafe { sys::napi_delete_reference(self.env.raw(), r as Ref) };
        }
    }

    /// A new strong reference to `v` that a native object owns (a JS callback, a host value, a
    /// carried exception): deleted by [`EnvState::delete_reference_anywhere`], or by the env's
    /// cleanup if the object outlives the env (Node-API frees no reference the addon made, and
    /// once the env is gone none can be deleted). JS thread only.
    pub fn hold_reference(&self, v: Value) -> JsResult<Ref> {
        let r = raw::strong_ref(self.env, v)?;
        self.held_refs.lock().unwrap_or_else(|e| e.into_inner()).insert(r as usize);
        Ok(r)
    }

    /// Delete a reference made by [`EnvState::hold_reference`] from any thread: now on the JS
    /// thread, else queued and the JS thread is poked. After teardown the env's cleanup has
    /// deleted it already.
    pub fn delete_reference_anywhere(&self, r: Ref) {
        if self.on_js_thread() {
            if self.alive.load(Ordering::Relaxed) {
                self.held_refs.lock().unwrap_or_else(|e| e.into_inner()).remove(&(r as usize));
                // SAFETY: our own live env, on its thread.
                unsafe { sys::napi_delete_reference(self.env.raw(), r) };
            }
            return;
        }
        let _teardown = self.teardown.read().unwrap_or_else(|e| e.into_inner());
        if !self.alive.load(Ordering::Relaxed) {
            return;
        }
        // Out of the held set and into the queue under the `teardown` read lock, so the cleanup
        // (which takes it to write) deletes it exactly once, from one of the two.
        self.held_refs.lock().unwrap_or_else(|e| e.into_inner()).remove(&(r as usize));
        self.pending_deletes.lock().unwrap_or_else(|e| e.into_inner()).push(r as usize);
        crate::callback::poke(self);
    }
}

/// A strong reference to a JS value of one env, which native code owns and may drop on any
/// thread: a JS function a native Function calls, an object a host value holds.
pub struct HeldRef {
    pub state: Arc<EnvState>,
    pub reference: Ref,
}

impl HeldRef {
    /// A new strong reference to `v` in `state`'s env.
    pub fn new(state: &EnvState, v: crate::raw::Value) -> crate::raw::JsResult<HeldRef> {
        Ok(HeldRef { state: crate::tie::arc_of(state), reference: state.hold_reference(v)? })
    }

    /// The value, when `state` is the env it belongs to.
    pub fn value_in(&self, state: &EnvState) -> Option<crate::raw::JsResult<crate::raw::Value>> {
        std::ptr::eq(Arc::as_ptr(&self.state), state).then(|| raw::reference_value(state.env, self.reference))
    }
}

impl Drop for HeldRef {
    /// Deleted on the env's JS thread (queued and the thread poked when dropped elsewhere;
    /// nothing to do once the env is gone).
    fn drop(&mut self) {
        self.state.delete_reference_anywhere(self.reference);
    }
}

/// The main env and its state, so that the hot paths find the state without a Node-API call
/// (set by [`init_env`], cleared by the env's cleanup hook before the state can go away).
static MAIN_ENV: AtomicPtr<sys::napi_env__> = AtomicPtr::new(ptr::null_mut());
static MAIN_STATE: AtomicPtr<EnvState> = AtomicPtr::new(ptr::null_mut());

/// The env's state (set at module init).
///
/// # Safety
/// Called on `env`'s JS thread after [`init_env`].
#[inline]
pub unsafe fn state_of<'a>(env: Env) -> &'a EnvState {
    if env.raw() == MAIN_ENV.load(Ordering::Relaxed) {
        // SAFETY: the main env is live (it is calling us), so its cleanup hook has not run and
        // the state its instance data holds is alive.
        return unsafe { &*MAIN_STATE.load(Ordering::Relaxed) };
    }
    let mut data = ptr::null_mut();
    // SAFETY: the caller's guarantee; instance data is an `Arc<EnvState>` raw pointer.
    unsafe {
        sys::napi_get_instance_data(env.raw(), &mut data);
        &*(data as *const EnvState)
    }
}

unsafe extern "C" fn finalize_instance(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: the `Arc` leaked in `init_env`, released once.
    drop(unsafe { Arc::from_raw(data as *const EnvState) });
}

unsafe extern "C" fn cleanup_env(arg: *mut c_void) {
    // SAFETY: `arg` is an `Arc` raw pointer the hook owns (registered in `init_env`).
    let state = unsafe { Arc::from_raw(arg as *const EnvState) };
    if state.is_main {
        MAIN_ENV.store(ptr::null_mut(), Ordering::Relaxed);
        MAIN_STATE.store(ptr::null_mut(), Ordering::Relaxed);
    }
    {
        let _teardown = state.teardown.write().unwrap_or_else(|e| e.into_inner());
        state.alive.store(false, Ordering::Relaxed);
    }
    state.refuse_cross_thread_calls();
    // The spare shell holds the state: it goes with the env. SAFETY: the env's JS thread.
    drop(unsafe { state.lent.take_spare() });
    // The threadsafe function is closed by Node's own cleanup hook, which runs after this one
    // (hooks run in reverse order). References queued by other threads and the ones the env's
    // state holds are deleted now: Node-API leaves them to the addon even as the env goes.
    state.flush_pending_deletes();
    // What native objects still hold (they outlive the env; their drops delete nothing now).
    let owned = std::mem::take(&mut *state.held_refs.lock().unwrap_or_else(|e| e.into_inner()));
    for r in owned {
        // SAFETY: a reference of this env, still valid in its cleanup hook, deleted once (it
        // left the set, and no drop deletes once `alive` is false).
        unsafe { sys::napi_delete_reference(state.env.raw(), r as Ref) };
    }
    let held = state.refs.borrow_mut().take_all();
    for r in held {
        // SAFETY: a reference of this env, still valid in its cleanup hook, deleted once.
        unsafe { sys::napi_delete_reference(state.env.raw(), r) };
    }
}

/// Set up the per-env state for `env` (called once per env at module load). Installs the
/// frontend allocator the first time.
pub fn init_env(env: Env) -> JsResult<Arc<EnvState>> {
    tether_core::init();
    let tag = *FRONTEND_TAG.get_or_init(|| {
        crate::callback::register_safe_call();
        tether_core::alloc::install_frontend_allocator(
            <EnvState as TieHost>::LAYOUT,
            <EnvState as TieHost>::RESERVE,
            None,
            ptr::null_mut(),
        )
        .expect("the Node frontend allocator can be installed")
    });
    let is_main = !MAIN_CLAIMED.swap(true, Ordering::AcqRel);
    let (frame, frame_buffer) = call_frame(env)?;
    let state = Arc::new(EnvState {
        // SAFETY: the state is reachable only while the env lives: the env's cleanup hook
        // (`cleanup_env`) retires it, and every other way in is a callback of this env.
        env: unsafe { Env::from_raw(env.raw()) },
        is_main,
        frontend: Frontend::new(),
        js_thread: thread_token(),
        sync_depth: AtomicU32::new(0),
        alive: AtomicBool::new(true),
        teardown: RwLock::new(()),
        tsfn: AtomicTsfn(std::sync::atomic::AtomicPtr::new(ptr::null_mut())),
        pending_deletes: Mutex::new(Vec::new()),
        held_refs: Mutex::new(std::collections::HashSet::new()),
        cross_thread: Mutex::new(crate::callback::CrossThread::default()),
        refs: RefCell::new(JsRefs { frame_buffer: Some(frame_buffer), ..JsRefs::default() }),
        frame,
        lent: LentFunctions::new(),
        last_made: std::cell::Cell::new(ptr::null()),
        unscoped_callbacks: std::cell::Cell::new(0),
        invoke_in_call: std::cell::Cell::new(ptr::null_mut()),
        callback_result: std::cell::Cell::new(CallbackResult::NONE),
    });
    // The spare shell now, so the native objects alive between calls do not depend on which
    // calls ran. SAFETY: on the env's JS thread (module init); a new shell is not lent.
    unsafe { state.lent.prepare(|| crate::callback::new_shell(&state)) };
    if is_main {
        state.frontend.adopt_allocator(tag);
    }
    let raw_state = Arc::into_raw(state.clone()) as *mut c_void;
    napi_call!(env, napi_set_instance_data(env.raw(), raw_state, Some(finalize_instance), ptr::null_mut()))?;
    // The tsfn first: its own cleanup hook must run after ours (hooks run in reverse order),
    // so that no thread uses it once ours marked the env dead.
    crate::callback::create_tsfn(&state)?;
    let hook_state = Arc::into_raw(state.clone()) as *mut c_void;
    napi_call!(env, napi_add_env_cleanup_hook(env.raw(), Some(cleanup_env), hook_state))?;
    if is_main {
        // The cleanup hook's Arc keeps the state alive until the hook clears these.
        MAIN_STATE.store(Arc::as_ptr(&state) as *mut EnvState, Ordering::Relaxed);
        MAIN_ENV.store(env.raw(), Ordering::Relaxed);
    }
    Ok(state)
}

/// A zeroed ArrayBuffer the size of a [`CallFrame`], its memory, and a strong reference that
/// keeps it alive for the env's life.
fn call_frame(env: Env) -> JsResult<(*mut CallFrame, Ref)> {
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    napi_call!(env, napi_create_arraybuffer(env.raw(), std::mem::size_of::<CallFrame>(), &mut data, &mut buffer))?;
    if data.is_null() || (data as usize) % std::mem::align_of::<CallFrame>() != 0 {
        return Err(tether_core::Error::runtime("the call frame buffer is not aligned for its fields").into());
    }
    Ok((data as *mut CallFrame, raw::strong_ref(env, buffer)?))
}
