//! Tying native objects to their one canonical JS wrapper per environment.
//!
//! The slot word is the weak `napi_ref` (refcount 0) that `napi_add_finalizer` hands back; the
//! wrapper's finalizer releases its +1, clears the slot through `untie` with the wrapper's
//! generation, and deletes that reference. The wrapper's JS object carries nothing of the
//! addon's: index.js keeps the box's handle in a private field, which calls pass in the frame
//! and [`wrapper_of`] asks index.js for (`napi_wrap` would also set a private property holding
//! an External on every wrapper, a V8 runtime call that was ~40% of a construction). The protocol itself is tether-core's
//! (`boundary::Frontend`, one per env in `EnvState::frontend`); this module only says how to
//! revive and create (`EnvState`'s `TieHost`).

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use napi::sys;
use tether_core::boundary::{ClaimMode, Previous, Reserve, Returned, TieHost};
use tether_core::object::{dec_ref, ObjectHeader};
use tether_core::{Error, ObjectRef, TypeIndex};

use crate::env::EnvState;
use crate::raw::{self, napi_call, Env, Fail, JsResult, Ref, Value};

/// First word of every wrapper box (the finalizer's data) this addon makes.
pub const WRAPPER_MAGIC: u64 = 0x7465_7468_6572_5752; // "tetherWR"

/// The native side of one wrapper: owns +1 on `obj` until finalized or disposed.
///
/// The main env's boxes live in their object's memory when they can (the allocator's reserve,
/// `TieHost::RESERVE`, zeroed at allocation; `magic` is non-zero while a box uses it), so a
/// call reads the box and the object's header together; a box whose object is still served by
/// an earlier box (a disposed wrapper, or one whose finalizer has not run yet), a worker's box
/// and a box of another allocator's object are heap boxes of their own.
#[repr(C)]
pub struct Wrapper {
    pub magic: u64,
    /// Null once disposed.
    pub obj: Cell<*mut ObjectHeader>,
    pub generation: u64,
    /// The wrap's own weak reference (the slot word); deleted by the finalizer.
    pub reference: Cell<Ref>,
    /// An `Arc<EnvState>` owned by this wrapper.
    pub state: *const EnvState,
    /// The object whose memory this box lives in (null: a heap box). Once the box is
    /// disposed, a weak reference keeps that memory until the finalizer.
    pub memory_of: *mut ObjectHeader,
}

const _: () = assert!(std::mem::size_of::<Wrapper>() == 48 && std::mem::align_of::<Wrapper>() == 8);

impl Wrapper {
    /// The env this wrapper lives in.
    pub fn state(&self) -> &EnvState {
        // SAFETY: the wrapper owns one `Arc` count on its state until it is freed.
        unsafe { &*self.state }
    }

    /// The object, or a clear error when the wrapper was disposed.
    pub fn live_object(&self) -> Result<*mut ObjectHeader, Error> {
        let obj = self.obj.get();
        if obj.is_null() {
            Err(Error::runtime("this tether object was disposed ([Symbol.dispose]() released its native reference)"))
        } else {
            Ok(obj)
        }
    }
}

/// A new `Arc` count on `state` (every `EnvState` lives in an `Arc`).
pub fn arc_of(state: &EnvState) -> Arc<EnvState> {
    let p = state as *const EnvState;
    // SAFETY: `state` came out of an `Arc<EnvState>` that is still alive (the caller borrows it).
    unsafe {
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    }
}

/// The wrapper behind `v` (an object or a function of the current call), if `v` is one of
/// ours: index.js's `handleOf` reads the handle a wrapper keeps in its private field (a
/// native function's shim: its function handle), which only index.js writes. For the paths
/// that get a wrapper without its handle (nested in a container, a general call's argument,
/// `dispose`); calls pass handles in the frame.
pub fn wrapper_of<'a>(state: &EnvState, v: Value) -> JsResult<Option<&'a Wrapper>> {
    let env = state.env;
    let Some(handle_of) = state.refs.borrow().handle_of else {
        return Ok(None); // before `_setup`: no wrapper exists yet
    };
    let handle_of = raw::reference_value(env, handle_of)?;
    let handle = raw::call(env, raw::undefined(env)?, handle_of, &[v])?;
    let mut x = 0.0;
    // SAFETY: a value of the current call; anything but a number fails with no exception.
    if unsafe { sys::napi_get_value_double(env.raw(), handle, &mut x) } != sys::Status::napi_ok {
        return Ok(None);
    }
    // SAFETY: a wrapper handle comes from the private field of the wrapper `v`, which the
    // running call keeps alive; Link handles (negative) and other numbers are refused.
    Ok(unsafe { wrapper_of_handle(x) })
}

/// A handle for `w`: a JS number naming the wrapper box. It lives in the wrapper object's
/// private field (index.js `TetherObject#handle`), where no other code can read or forge it,
/// and the box lives as long as that object. Function shims pass handles in place of wrapper
/// arguments. A number, not an External: Node makes each External with a weak handle for
/// type tagging, ~130 ns apiece and work for the GC.
///
/// The number is 2^52 + the box's address: a double with exponent 52 whose 52 mantissa
/// bits are the address, so [`wrapper_of_handle`] takes the address from the bits instead of
/// converting a float to an integer (a chain of dependent float compares on every call).
pub fn handle(env: Env, w: &Wrapper) -> JsResult<Value> {
    let address = w as *const Wrapper as u64;
    // Heap addresses on the 64-bit targets Node runs on fit in 48 bits.
    debug_assert!(address & !HANDLE_ADDRESS == 0);
    raw::number(env, f64::from_bits(HANDLE_EXPONENT | address))
}

/// The bits of 2^52 (a biased exponent of 52, an empty mantissa).
pub const HANDLE_EXPONENT: u64 = 0x4330_0000_0000_0000;
/// The mantissa bits, which hold the address.
pub const HANDLE_ADDRESS: u64 = (1 << 52) - 1;

/// The wrapper a handle names, or `None` for a number that is no handle.
///
/// # Safety
/// A `handle` of the right form was made by [`handle`], so it names a wrapper box that lives
/// as long as the wrapper object holding the handle, which the running call's caller keeps
/// alive.
#[inline]
pub unsafe fn wrapper_of_handle<'a>(handle: f64) -> Option<&'a Wrapper> {
    let bits = handle.to_bits();
    let address = (bits & HANDLE_ADDRESS) as usize;
    prefetch_object_of(address);
    // SAFETY: the caller's guarantee.
    (bits & !HANDLE_ADDRESS == HANDLE_EXPONENT && address != 0).then(|| unsafe { &*(address as *const Wrapper) })
}

/// Start loading the lines where the object of a box in its object's memory has its header
/// (after the box) and its slot (before it), while the box's own line is on its way: they
/// load together instead of one after the other (at 2^20 live objects all miss). A hint: for
/// a heap box it loads a neighbour's lines, and a prefetch never faults.
#[inline(always)]
fn prefetch_object_of(box_address: usize) {
    let header = box_address + <EnvState as TieHost>::RESERVE.gap();
    tether_core::boundary::prefetch(header as *const u8);
    tether_core::boundary::prefetch(box_address.wrapping_sub(<EnvState as TieHost>::LAYOUT.size()) as *const u8);
}

/// What JS value a new wrapper is.
#[derive(Clone, Copy)]
pub enum Shell {
    /// An instance of the class for the object's type.
    Instance(Ref),
    /// A callable native function.
    Function,
    /// A `this` the JS constructor already made.
    Preset(Value),
    /// An instance of JS subclass `subclass` of the class `base` for the object's type, made
    /// running the base constructor only (`Reflect.construct(base, args, subclass)`).
    Subclass { base: Ref, subclass: Ref },
}

// SAFETY: `revive` returns a value only when the weak reference still yields the wrapper and
// runs no JS; `create` returns the wrap's reference (a heap pointer, so bits 0 and 1 are clear,
// and below 2^48 on the 64-bit targets Node runs on) and the wrapper it makes owns the given
// object reference (freed with it when the wrap fails). Every tie, untie and finalizer of an
// env's slots runs on that env's JS thread (`SERIALIZED`).
unsafe impl TieHost for EnvState {
    type Handle = Value;
    type Error = Fail;
    /// What JS value a new wrapper is.
    type Prepared = Shell;
    /// An env's slots (the main env's prefixes, a worker's side table) are only ever tied,
    /// untied and finalized on that env's JS thread.
    const SERIALIZED: bool = true;
    /// Converting an argument may run JS (a getter), which may call native code and lend the
    /// same spare: claim only once every argument is converted.
    const CLAIM_MODE: ClaimMode = ClaimMode::AfterConversion;
    /// A wrapper box, between the slot and the header (see [`Wrapper`]).
    const RESERVE: Reserve = Reserve::AfterSlot(std::mem::size_of::<Wrapper>());

    unsafe fn revive(&self, word: usize) -> Option<Value> {
        let mut v = ptr::null_mut();
        // SAFETY: an Active word is a live wrap reference of this env (the finalizer deletes it
        // only after clearing the slot or seeing a newer generation there).
        unsafe { sys::napi_get_reference_value(self.env.raw(), word as Ref, &mut v) };
        (!v.is_null()).then_some(v)
    }

    /// A Function made in this env from a JS function goes back as that function.
    fn callable_of(&self, func: &ObjectRef) -> Result<Option<Value>, Fail> {
        crate::callback::js_function_of(self, func)
    }

    /// A JS host value of this env goes back as the object itself.
    fn host_value_of(&self, value: &tether_core::host_value::HostValueObj) -> Result<Option<Value>, Fail> {
        crate::host_value::value_of(self, value).map(Some)
    }

    /// The class of the object's type (made by index.js's factory on first use), or a
    /// callable for a Function.
    fn prepare(&self, obj: &ObjectRef) -> Result<Shell, Fail> {
        let type_index = obj.type_index();
        if type_index == TypeIndex::FUNCTION {
            return Ok(Shell::Function);
        }
        let base = ensure_class(self, type_index)?;
        // SAFETY: `obj` is live (the caller's reference).
        let hint = unsafe { self.frontend.class_hint(obj.as_ptr()) } as usize;
        match self.refs.borrow().subclasses.get(hint.wrapping_sub(1)) {
            Some(&subclass) => Ok(Shell::Subclass { base, subclass }),
            None => Ok(Shell::Instance(base)),
        }
    }

    unsafe fn create(
        &self,
        shell: &Shell,
        obj: ObjectRef,
        _previous: Previous,
        generation: u64,
    ) -> Result<(Value, usize), Fail> {
        // Previous::Dying: the dying wrapper's finalizer still owns its reference and deletes
        // it; its generation no longer matches, so it leaves the slot alone.
        make_wrapper(self, *shell, obj, generation)
    }
}

/// A new wrapper box owning `obj`, wrapped onto a new JS value made as `shell` says; the value
/// and the wrap's weak reference (the slot word).
fn make_wrapper(state: &EnvState, shell: Shell, obj: ObjectRef, generation: u64) -> JsResult<(Value, usize)> {
    let env = state.env;
    // SAFETY: `obj` is live (ours).
    let reserve = unsafe { state.frontend.reserve_of(obj.as_ptr()) } as Option<*mut u8>;
    // SAFETY: a reserve is zeroed at allocation and its `magic` word is set only while a box
    // lives there (this env's thread is the only one that places or ends boxes in it).
    let free = reserve.filter(|&r| unsafe { *(r as *const u64) } == 0);
    let memory_of = if free.is_some() { obj.as_ptr() } else { ptr::null_mut() };
    let fields = Wrapper {
        magic: WRAPPER_MAGIC,
        obj: Cell::new(obj.into_raw()),
        generation,
        reference: Cell::new(ptr::null_mut()),
        state: Arc::into_raw(arc_of(state)),
        memory_of,
    };
    let wrapper = match free {
        // SAFETY: the reserve is `RESERVE` bytes of the object's memory, 8-aligned, unused.
        Some(r) => unsafe {
            (r as *mut Wrapper).write(fields);
            r as *mut Wrapper
        },
        None => Box::into_raw(Box::new(fields)),
    };
    let js = match shell_value(state, shell, wrapper) {
        Ok(js) => js,
        Err(fail) => {
            // SAFETY: not wrapped yet, so we still own the box.
            unsafe { free_wrapper(wrapper) };
            return Err(fail);
        }
    };
    let mut reference = ptr::null_mut();
    // SAFETY: `js` is a fresh object of this call; the finalizer takes the box.
    let status = unsafe {
        sys::napi_add_finalizer(
            env.raw(),
            js,
            wrapper as *mut c_void,
            Some(finalize_wrapper),
            ptr::null_mut(),
            &mut reference,
        )
    };
    if let Err(fail) = raw::check(env, status, "napi_add_finalizer") {
        // SAFETY: no finalizer was added, so the box is still ours.
        unsafe { free_wrapper(wrapper) };
        return Err(fail);
    }
    // SAFETY: the box is live (wrapped) and only this thread touches it.
    unsafe { (*wrapper).reference.set(reference) };
    state.last_made.set(wrapper);
    Ok((js, reference as usize))
}

fn shell_value(state: &EnvState, shell: Shell, wrapper: *mut Wrapper) -> JsResult<Value> {
    let env = state.env;
    match shell {
        Shell::Preset(v) => Ok(v),
        Shell::Function => crate::call::make_function(state, wrapper),
        Shell::Instance(ctor) => {
            let ctor = raw::reference_value(env, ctor)?;
            // SAFETY: the box is live; its handle is only read while the instance lives.
            let args = [state.token()?, handle(env, unsafe { &*wrapper })?];
            let mut out = ptr::null_mut();
            napi_call!(env, napi_new_instance(env.raw(), ctor, 2, args.as_ptr(), &mut out))?;
            Ok(out)
        }
        Shell::Subclass { base, subclass } => {
            let construct = state.refs.borrow().reflect_construct.expect("set with the first subclass");
            let construct = raw::reference_value(env, construct)?;
            let list = raw::array(env, 2)?;
            raw::set_element(env, list, 0, state.token()?)?;
            // SAFETY: the box is live; its handle is only read while the instance lives.
            raw::set_element(env, list, 1, handle(env, unsafe { &*wrapper })?)?;
            let (base, subclass) = (raw::reference_value(env, base)?, raw::reference_value(env, subclass)?);
            raw::call(env, raw::undefined(env)?, construct, &[base, list, subclass])
        }
    }
}

/// End box `wrapper`'s life and take out what it owned: a heap box is freed, a box in its
/// object's memory marks that memory free for the next box (its object's memory is kept by
/// the box's +1, or by the weak reference a disposed box holds, which the caller now owns).
///
/// # Safety
/// `wrapper` is a box made by `make_wrapper` that nothing else will use.
unsafe fn take_box(wrapper: *mut Wrapper) -> Wrapper {
    // SAFETY: the caller's guarantee; a box in an object's memory is read out before that
    // memory is marked free.
    unsafe {
        if (*wrapper).memory_of.is_null() {
            return *Box::from_raw(wrapper);
        }
        let fields = wrapper.read();
        (*wrapper).magic = 0;
        fields
    }
}

/// Free a wrapper box that never got wrapped (drops its +1 and its env count).
///
/// # Safety
/// `wrapper` came from `make_wrapper` and nothing else owns it.
unsafe fn free_wrapper(wrapper: *mut Wrapper) {
    // SAFETY: the caller's guarantee: the box owns one Arc count and (never disposed) +1.
    unsafe {
        let w = take_box(wrapper);
        drop(Arc::from_raw(w.state));
        dec_ref(w.obj.get());
    }
}

unsafe extern "C" fn finalize_wrapper(raw_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
    // SAFETY: the box this addon wrapped; the finalizer runs once.
    let w = unsafe { take_box(data as *mut Wrapper) };
    // SAFETY: the wrapper owns one count on its state.
    let state = unsafe { Arc::from_raw(w.state) };
    let obj = w.obj.get();
    if !obj.is_null() {
        // SAFETY: the wrapper still holds its +1, so `obj` is live.
        unsafe { release(&state, obj, w.generation) };
    } else if !w.memory_of.is_null() {
        // SAFETY: a disposed box in its object's memory held this weak reference (`dispose`).
        unsafe { tether_core::object::dec_weak(w.memory_of) };
    }
    // SAFETY: the finalizer's own reference, deleted once, here (as Node-API documents for
    // the reference `napi_add_finalizer` returns).
    unsafe { sys::napi_delete_reference(env.raw(), w.reference.get()) };
}

/// Release the wrapper of `generation`'s +1 on `obj` (see `Frontend::release`).
///
/// # Safety
/// The caller owns the wrapper's +1 on the live `obj` and gives it up.
unsafe fn release(state: &EnvState, obj: *mut ObjectHeader, generation: u64) {
    // The removed word is this wrapper's own wrap reference: the finalizer deletes it.
    // SAFETY: the caller's guarantee.
    let _ = unsafe { state.frontend.release(obj, generation, 0) };
}

/// `[Symbol.dispose]()`: release the wrapper's native reference now. Idempotent.
pub fn dispose(w: &Wrapper) {
    let obj = w.obj.replace(ptr::null_mut());
    if !obj.is_null() {
        if !w.memory_of.is_null() {
            // The box lives in the object's memory: keep that memory until the finalizer.
            // SAFETY: the box's +1 (still held) keeps `obj` live.
            unsafe { tether_core::object::inc_weak(obj) };
        }
        // SAFETY: we just took the wrapper's +1 out of it.
        unsafe { release(w.state(), obj, w.generation) };
    }
}

/// Make sure the class for `type_index` is known (calls the JS class factory once per type).
fn ensure_class(state: &EnvState, type_index: i32) -> JsResult<Ref> {
    if let Some(r) = state.cached_class(type_index) {
        return Ok(r);
    }
    let env = state.env;
    let factory = state.refs.borrow().class_factory.expect("class factory set at init");
    let factory = raw::reference_value(env, factory)?;
    let undefined = raw::undefined(env)?;
    let index = raw::number(env, type_index as f64)?;
    let ctor = raw::call(env, undefined, factory, &[index])?;
    let r = raw::strong_ref(env, ctor)?;
    let mut refs = state.refs.borrow_mut();
    let classes = &mut refs.classes;
    if classes.len() <= type_index as usize {
        classes.resize(type_index as usize + 1, None);
    }
    if let Some(old) = classes[type_index as usize].replace(r) {
        // SAFETY: a strong reference of this env we no longer need.
        unsafe { sys::napi_delete_reference(env.raw(), old) };
    }
    Ok(r)
}

/// The live wrapper in this env of the object cell field `cell` holds, if there is one and the
/// value is a tied kind (see `Frontend::live_in_cell`).
///
/// # Safety
/// On this env's JS thread; `cell` is in a live object.
pub unsafe fn live_wrapper_in(state: &EnvState, cell: &tether_core::cell::AnyCell) -> Option<Value> {
    // SAFETY: on the env's JS thread (this function's contract); `revive` is a reference
    // lookup and runs no JS.
    unsafe { state.frontend.live_in_cell(state, cell, TypeIndex::returns_as_wrapper) }
}

/// Return `obj` (an owned +1) to JS as its canonical wrapper in this env. With `preset`,
/// a new wrapper is that value (a JS constructor's `this`).
pub fn tie_object(state: &EnvState, obj: ObjectRef, preset: Option<Value>) -> JsResult<Value> {
    tie_object_made(state, obj, preset).map(|(v, _)| v)
}

/// As [`tie_object`], also saying which wrapper box was made, when a new one was.
pub fn tie_object_made(state: &EnvState, obj: ObjectRef, preset: Option<Value>) -> JsResult<(Value, Option<&Wrapper>)> {
    let returned = match preset {
        Some(this) => state.frontend.return_prepared(state, obj, &Shell::Preset(this)),
        None => state.frontend.return_object(state, obj),
    }?;
    Ok(match returned {
        // SAFETY: `create` just made this box and wrapped it onto `v`, which this call's
        // scope keeps alive (so its finalizer has not run).
        Returned::Created(v) => (v, Some(unsafe { &*state.last_made.get() })),
        Returned::Revived(v) | Returned::Callable(v) | Returned::HostValue(v) => (v, None),
    })
}
