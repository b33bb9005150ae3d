//! Native functions as JS functions: the hot call path (raw Node-API) and `callAsync`.
//!
//! A native function's JS face is a shim (index.js `makeShim`) around a raw function made with
//! `napi_create_function`. The shim fills in the env's [`CallFrame`] (the function, the argument
//! count, which arguments are wrappers and their handles), so a call finds its function and
//! wrapper arguments without Node-API reads, converts the rest into a stack buffer of
//! `AnyView`s, calls `safe_call` directly and converts the result.

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr;

use napi::sys;
use tether_core::arc::ObjectBox;
use tether_core::boundary::{argument_message, ArgumentSource, Called, LeafCall};
use tether_core::error::take_last_error;
use tether_core::function::{FunctionObj, FUNC_CELL_GETTER, FUNC_INT_ENTRY, FUNC_LEAF};
use tether_core::object::ObjectHeader;
use tether_core::signature::{language_name, render_signature, Language, SignatureInfo};
use tether_core::{Any, AnyView, Error, ObjectRef};

use crate::callback::{self, link_of_handle, LentCallable, Link};
use crate::convert::{any_to_js, arg_view, js_to_any, leaf_wrapper_view, wrapper_view};
use crate::env::{CallbackResult, EnvState};
use crate::errors::throw;
use crate::raw::{self, napi_call, Env, Fail, JsResult, Value};
use crate::tie::{wrapper_of, wrapper_of_handle, Wrapper};

/// Arguments read on the stack; more spill to the heap.
const STACK_ARGS: usize = 8;

/// Arguments that can travel as handles (bits of [`CallFrame::mask`]).
pub const FRAME_HANDLES: usize = 30;
/// The 32-bit words index.js reads and writes at the start of the frame (`mask`, `count`,
/// `returned`, `links`, `numbers`, and a pad before the doubles).
pub const FRAME_WORDS: usize = 6;
/// [`CallFrame::returned`] as index.js's `invokeCallable` leaves it when the callback returned
/// a wrapper: the wrapper's handle is in [`CallFrame::function`].
pub const RESULT_IN_FRAME: i32 = -1;
/// Where the frame's doubles start (`function`, then `handles`).
pub const FRAME_FLOATS_OFFSET: usize = std::mem::offset_of!(CallFrame, function);

/// Set in [`CallFrame::count`] by the shim's general path, whose argument count may differ
/// from the function's arity (the monomorphic shims take only calls of their arity): only
/// those calls are checked against the signature, so a call of the declared arity pays
/// nothing for defaults.
pub const FRAME_ANY_COUNT: u32 = 1 << 30;

/// What a shim (index.js `makeShim`) tells the addon about a call, in a buffer shared with
/// index.js: one per env, used on its JS thread only. The called function and the wrapper
/// arguments travel here as handles (see `tie::handle`), because a typed-array store in JS
/// costs less than reading an argument or the callback data through Node-API; a call whose
/// arguments are all wrappers makes no Node-API call at all to read them.
#[repr(C)]
pub struct CallFrame {
    /// Bit i: argument i is a wrapper whose handle is `handles[i]`; the JS argument is a
    /// placeholder (or absent when every argument is a handle).
    pub mask: u32,
    /// The call's argument count, with [`FRAME_ANY_COUNT`] when the shim's general path made it.
    pub count: u32,
    /// Set when the addon returns `undefined` (which no conversion produces): the result is
    /// argument `returned` itself, so the shim hands back the caller's own wrapper. Also
    /// [`RESULT_IN_FRAME`] from `invokeCallable`, read right after it returns.
    pub returned: i32,
    /// Bit i: argument i is a JS function (passed as itself) whose Link's handle is
    /// `handles[i]` (`callback::link_of_handle`).
    pub links: u32,
    /// Bit i (the monomorphic shims of arities 1-3 only): argument i is a number, whose value
    /// is `handles[i]`; the JS argument is a placeholder (or absent when every argument is in
    /// the frame), so a number costs a typed-array store instead of a Node-API read.
    pub numbers: u32,
    _pad: u32,
    /// The handle of the called function's own wrapper.
    pub function: f64,
    pub handles: [f64; FRAME_HANDLES],
}

const _: () = {
    assert!(std::mem::offset_of!(CallFrame, mask) == 0);
    assert!(std::mem::offset_of!(CallFrame, count) == 4);
    assert!(std::mem::offset_of!(CallFrame, returned) == 8);
    assert!(std::mem::offset_of!(CallFrame, links) == 12);
    assert!(std::mem::offset_of!(CallFrame, numbers) == 16);
    assert!(std::mem::offset_of!(CallFrame, function) == 24);
    assert!(std::mem::offset_of!(CallFrame, function) == FRAME_WORDS * 4);
    assert!(std::mem::offset_of!(CallFrame, handles) == 32);
};

/// Make the JS function for a native Function wrapper (called while tying).
pub fn make_function(state: &EnvState, wrapper: *mut Wrapper) -> JsResult<Value> {
    // SAFETY: the wrapper box is live and holds a Function object.
    let func = unsafe { function_obj((*wrapper).obj.get()) };
    let name = func.name.view().as_str().unwrap_or("").to_string();
    let short = name.rsplit('.').next().unwrap_or(&name);
    let js_name = language_name(short, Language::JavaScript);
    // The callback finds its function through the call frame, not through callback data.
    let raw_fn = raw::function(state.env, &js_name, Some(native_function_callback), ptr::null_mut())?;
    // Its shim's call of one wrapper argument (see `one_wrapper_callback`).
    let one_wrapper_fn = if func.arity == 1 {
        raw::function(state.env, &js_name, Some(one_wrapper_callback), ptr::null_mut())?
    } else {
        raw::undefined(state.env)?
    };
    let factory = state.refs.borrow().shim_factory.expect("makeShim set at init");
    let factory = raw::reference_value(state.env, factory)?;
    let undefined = raw::undefined(state.env)?;
    // SAFETY: the box is live; the shim made here becomes its wrapper.
    let handle = crate::tie::handle(state.env, unsafe { &*wrapper })?;
    // Whoever calls this function object writes every argument, a method's receiver included.
    let length = func.signature().map_or(func.arity.max(0) as usize, SignatureInfo::required);
    let shim_args = [
        raw_fn,
        raw::number(state.env, func.arity as f64)?,
        raw::string(state.env, &js_name)?,
        handle,
        raw::number(state.env, length as f64)?,
        raw::string(state.env, &signature_text(short, func))?,
        raw::boolean(state.env, func.signature().is_some())?,
        one_wrapper_fn,
    ];
    let f = raw::call(state.env, undefined, factory, &shim_args)?;
    let call_async = state.refs.borrow().call_async.expect("callAsync set at init");
    let call_async = raw::reference_value(state.env, call_async)?;
    raw::set_named(state.env, f, "callAsync", call_async)?;
    let full = raw::string(state.env, &name)?;
    raw::set_named(state.env, f, "qualifiedName", full)?;
    Ok(f)
}

/// `fn.signature`: the declaration core renders for JavaScript (`find(name: string): Node |
/// null`, receiver left out), or the best we know without a signature.
pub fn signature_text(name: &str, func: &FunctionObj) -> String {
    match func.signature() {
        Some(sig) => render_signature(name, sig, Language::JavaScript),
        None => {
            let js_name = language_name(name, Language::JavaScript);
            let params = match usize::try_from(func.arity) {
                Ok(n) => (0..n).map(|i| format!("arg{i}: any")).collect::<Vec<_>>().join(", "),
                Err(_) => "...args: any[]".to_string(),
            };
            format!("{js_name}({params}): any")
        }
    }
}

/// How many parameters a caller who has the receiver bound writes without defaults (a
/// method's `fn.length`; a plain function's, where there is no receiver).
pub fn caller_length(func: &FunctionObj) -> usize {
    match func.signature() {
        Some(sig) => sig.required().saturating_sub(sig.has_receiver() as usize),
        None => func.arity.max(0) as usize,
    }
}

/// A cold call's arguments (a constructor, `callAsync`): each converted, a failure worded by
/// [`argument_message`] (naming the parameter), and the defaults the caller left out added.
/// `known[i]`, when given, is argument i's wrapper (read from the call frame).
pub fn convert_arguments(
    state: &EnvState,
    func: &FunctionObj,
    argv: &[Value],
    known: &[Option<&Wrapper>],
) -> JsResult<Vec<Any>> {
    let defaults = func.defaults_left_out(argv.len())?;
    let mut out = Vec::with_capacity(argv.len() + defaults.len());
    for (i, &v) in argv.iter().enumerate() {
        out.push(convert_argument(state, func, i, v, known)?);
    }
    out.extend(defaults);
    Ok(out)
}

/// Argument `i` of a call to `func`, JS value `v`, as an owned value (`known[i]`: its wrapper,
/// when the caller passed it as a handle); a failure's message names the argument.
#[inline]
pub fn convert_argument(
    state: &EnvState,
    func: &FunctionObj,
    i: usize,
    v: Value,
    known: &[Option<&Wrapper>],
) -> JsResult<Any> {
    let converted = match known.get(i).copied().flatten() {
        Some(w) => w
            .live_object()
            .map(|obj| {
                // SAFETY: the wrapper's +1 keeps the object alive while we take our own.
                Any::object(unsafe { ObjectRef::from_borrowed(obj) })
            })
            .map_err(Fail::Native),
        None => js_to_any(state, v),
    };
    converted.map_err(|fail| <JsArguments<'_, '_> as ArgumentSource<EnvState>>::argument_failed(func, i, fail))
}

/// # Safety
/// `obj` is a live Function object.
unsafe fn function_obj<'a>(obj: *mut ObjectHeader) -> &'a FunctionObj {
    // SAFETY: the caller's guarantee; Function objects are `ObjectBox<FunctionObj>`.
    unsafe { &(*(obj as *const ObjectBox<FunctionObj>)).value }
}

/// How a call's result goes back to JS.
enum Outcome {
    Value(Value),
    /// The result is this argument's own wrapper.
    Argument(usize),
}

/// The Node-API callback of every native function, called by its shim only, with the
/// function's [`CallFrame`] filled in.
unsafe extern "C" fn native_function_callback(raw_env: sys::napi_env, info: sys::napi_callback_info) -> Value {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
    // SAFETY: called by Node on this env's JS thread after init.
    let state = unsafe { crate::env::state_of(env) };
    let frame = state.frame;
    // This call's own V8 handle scope takes its first callbacks' handles (see
    // `EnvState::unscoped_callbacks`); the caller's budget is back when it returns.
    let caller_budget = state.unscoped_callbacks.replace(crate::env::UNSCOPED_CALLBACKS);
    // The closure captures four values and returns the call's JS value (an error thrown,
    // an argument result written to the frame, inside): what crosses `catch_unwind` is small.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        // SAFETY: the frame is this env's and the shim just filled it in; the function handle
        // is that of the shim's own wrapper, alive while the shim runs; `info` is this call's.
        let called = unsafe {
            let f = &*frame;
            match wrapper_of_handle(f.function) {
                Some(w) => call_counted(
                    state,
                    w,
                    frame,
                    env,
                    info,
                    f.mask,
                    (f.count & !FRAME_ANY_COUNT) as usize,
                    f.count & FRAME_ANY_COUNT != 0,
                ),
                None => Err(Fail::Native(Error::runtime("a native function was called without its call frame"))),
            }
        };
        js_answer(state, frame, called)
    }));
    state.unscoped_callbacks.set(caller_budget);
    outcome.unwrap_or_else(|panic| {
        throw(state, Fail::Native(tether_core::error::panic_error(panic)));
        ptr::null_mut()
    })
}

/// The Node-API callback a function of arity one has beside [`native_function_callback`],
/// which its shim calls with one wrapper argument (`echo(x)`, `p.first`): a leaf's call, or a
/// cell getter's read, on a path of its own, whose frame holds that call alone (the general
/// callback's is 0x218 bytes and saves every register) and which takes no callback budget (a
/// leaf calls no JS). Any other function's call goes on to the general callback.
unsafe extern "C" fn one_wrapper_callback(raw_env: sys::napi_env, info: sys::napi_callback_info) -> Value {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
    // SAFETY: called by Node on this env's JS thread after init.
    let state = unsafe { crate::env::state_of(env) };
    let frame = state.frame;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        // SAFETY: the frame is this env's, filled by the shim with one argument, a wrapper
        // (`mask` 1, `count` 1); the function handle is that of the shim's own wrapper, alive
        // while the shim runs.
        unsafe { wrapper_of_handle((*frame).function).and_then(|w| call_leaf_of_wrapper(state, w, frame)) }
    }));
    match outcome {
        Ok(Some(called)) => js_answer(state, frame, called),
        // SAFETY: Node's arguments, passed on.
        Ok(None) => unsafe { native_function_callback(raw_env, info) },
        Err(panic) => {
            throw(state, Fail::Native(tether_core::error::panic_error(panic)));
            ptr::null_mut()
        }
    }
}

/// A call's answer to its shim: the JS value; for a result that is an argument's own wrapper,
/// none, and the argument's index in the frame; for a failure, none, the error thrown.
#[inline(always)]
fn js_answer(state: &EnvState, frame: *mut CallFrame, called: JsResult<Outcome>) -> Value {
    match called {
        Ok(Outcome::Value(v)) => v,
        Ok(Outcome::Argument(i)) => {
            // SAFETY: the env's frame, on its JS thread; the shim reads it right after.
            unsafe { (*frame).returned = i as i32 };
            ptr::null_mut()
        }
        Err(fail) => {
            throw(state, fail);
            ptr::null_mut()
        }
    }
}

/// Read the JS arguments (none when the frame carries them all) and call; exact small counts
/// get code with their loops unrolled, since most calls are these.
///
/// # Safety
/// As [`call_native`]; `info` is this call's and `mask`/`count`/`any_count` come from `frame`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn call_counted(
    state: &EnvState,
    wrapper: &Wrapper,
    frame: *const CallFrame,
    env: Env,
    info: sys::napi_callback_info,
    mask: u32,
    count: usize,
    any_count: bool,
) -> JsResult<Outcome> {
    if any_count {
        // SAFETY: the wrapper holds +1 on a Function while it is live.
        let func = unsafe { function_obj(wrapper.live_object()?) };
        // Only a call that leaves out (or adds) arguments pays for binding them to the signature.
        if usize::try_from(func.arity) != Ok(count) && func.signature().is_some() {
            // SAFETY: this function's contract, passed on.
            return unsafe { call_binding(state, wrapper, frame, env, info, mask, count, func) };
        }
    }
    if count == 1 && mask == 1 {
        // SAFETY: this function's contract: the frame is this env's, filled by this call's shim.
        if let Some(outcome) = unsafe { call_leaf_of_wrapper(state, wrapper, frame) } {
            return outcome;
        }
    }
    // SAFETY: the frame is this env's, filled by this call's shim (this function's contract).
    if count == 1 && mask == 0 && unsafe { (*frame).links } == 1 {
        // SAFETY: this function's contract, passed on; the frame says argument 0 has a Link.
        if let Some(outcome) = unsafe { call_of_one_callable(state, wrapper, frame, env, info) } {
            return outcome;
        }
    }
    if count > STACK_ARGS {
        let mut heap = vec![ptr::null_mut(); count];
        let mut argc = count;
        raw::napi_call!(
            env,
            napi_get_cb_info(env.raw(), info, &mut argc, heap.as_mut_ptr(), ptr::null_mut(), ptr::null_mut())
        )?;
        // SAFETY: `frame` is this env's, filled by the shim that made this call, and `mask`
        // came from it (this function's contract); every slot of `heap` was filled (with
        // `undefined` past the JS count).
        return unsafe { call_native::<STACK_ARGS>(state, wrapper, frame, mask, &heap) };
    }
    let mut argv: [Value; STACK_ARGS] = [ptr::null_mut(); STACK_ARGS];
    // SAFETY: the frame is this env's, filled by this call's shim (this function's contract).
    let in_frame = mask | unsafe { (*frame).numbers };
    if u64::from(in_frame) != (1u64 << count) - 1 {
        let mut argc = count;
        // SAFETY: the buffer holds `count` (<= STACK_ARGS) values; all are filled in.
        unsafe {
            sys::napi_get_cb_info(env.raw(), info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut())
        };
    }
    // SAFETY: for every arm: `frame` is this env's, filled by the shim that made this call, and
    // `mask` came from it (this function's contract); `argv` holds `count` filled values.
    unsafe {
        match count {
            1 => call_native::<1>(state, wrapper, frame, mask, &argv[..1]),
            2 => call_native_out_of_line::<2>(state, wrapper, frame, mask, &argv[..2]),
            3 => call_native_out_of_line::<3>(state, wrapper, frame, mask, &argv[..3]),
            _ => call_native_out_of_line::<STACK_ARGS>(state, wrapper, frame, mask, &argv[..count]),
        }
    }
}

/// `echo(x)`: a leaf of arity one called with one wrapper, whose handle the shim put in the
/// frame. Through the same driver as every call, with a source that holds the wrapper alone:
/// no argument array, no Link, number or arena to set up and look at (W1 451 -> 356
/// instructions per iteration). A cell field's getter (`p.first`) reads the cell here, as the
/// general path does. `None`, having done nothing, for any other function (a non-leaf,
/// another arity, a getter of a cell it cannot read directly): the general path then.
///
/// # Safety
/// The frame is this env's, filled by this call's shim with one argument, a wrapper (`mask`
/// 1); `wrapper` is the called function's own wrapper.
#[inline(always)]
unsafe fn call_leaf_of_wrapper(
    state: &EnvState,
    wrapper: &Wrapper,
    frame: *const CallFrame,
) -> Option<JsResult<Outcome>> {
    let obj = match wrapper.live_object() {
        Ok(obj) => obj,
        Err(e) => return Some(Err(Fail::Native(e))),
    };
    // SAFETY: the wrapper holds +1 on a Function.
    let func = unsafe { function_obj(obj) };
    if func.flags & FUNC_LEAF == 0 || func.arity != 1 {
        return None;
    }
    // SAFETY: the shim stores handles read from wrappers' private fields only; this one names
    // a box that lives as long as that wrapper, the call's argument.
    let Some(argument) = (unsafe { wrapper_of_handle((*frame).handles[0]) }) else {
        return Some(Err(Fail::Native(Error::type_error("a flagged argument is not a tether handle"))));
    };
    if func.flags & FUNC_CELL_GETTER != 0 {
        let this = match argument.live_object() {
            Ok(this) => this,
            Err(e) => return Some(Err(Fail::Native(e))),
        };
        // SAFETY: a live Function and the argument wrapper's live object.
        return unsafe { tether_core::cell::direct_cell(obj, this) }.map(|cell| read_cell(state, cell));
    }
    let mut source = OneWrapper { wrapper: argument };
    let mut result = Any::none();
    // SAFETY: the JS thread (this env's slots change only on it); a live leaf Function whose
    // one argument the caller's wrapper keeps alive.
    let called = unsafe { state.frontend.call::<1, _>(obj, func, 1, true, &mut source, &mut result) };
    Some(called.and_then(|called| result_outcome(state, called, result, &[Some(argument)])))
}

/// The one argument of [`call_leaf_of_wrapper`]: a wrapper.
struct OneWrapper<'w> {
    wrapper: &'w Wrapper,
}

// SAFETY: the view borrows the wrapper's object, whose +1 the wrapper (the call's argument)
// holds for the call, and comes from `LeafCall::wrapper_argument`.
unsafe impl ArgumentSource<EnvState> for OneWrapper<'_> {
    type Error = Fail;

    #[inline(always)]
    unsafe fn convert<'v>(
        &mut self,
        index: usize,
        leaf: Option<&mut LeafCall<'_, EnvState>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> JsResult<()> {
        view.write(leaf_wrapper_view(self.wrapper, leaf.expect("called as a leaf"), index)?);
        Ok(())
    }

    fn unlocked(&mut self, _call: impl FnOnce() -> i32) -> i32 {
        unreachable!("called as a leaf")
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: Fail) -> Fail {
        <JsArguments<'_, '_> as ArgumentSource<EnvState>>::argument_failed(function, index, error)
    }

    fn failed(error: Error) -> Fail {
        Fail::Native(error)
    }
}

/// `call(cb)`: a function of arity one or variadic (not a leaf: it may call back) called with one JS
/// function that has a Link, whose handle the shim put in the frame. Through the same driver
/// as every call, with a source that holds that function alone: no argument arrays, wrapper,
/// number or arena to set up and look at; the Function lent to it goes back inline. `None`,
/// having done nothing, for any other function: the general path then.
///
/// # Safety
/// The frame is this env's, filled by this call's shim with one argument, a JS function with
/// its Link's handle (`links` 1, `mask` 0); `info` is this call's; `wrapper` is the called
/// function's own wrapper.
#[inline(always)]
unsafe fn call_of_one_callable(
    state: &EnvState,
    wrapper: &Wrapper,
    frame: *const CallFrame,
    env: Env,
    info: sys::napi_callback_info,
) -> Option<JsResult<Outcome>> {
    let obj = match wrapper.live_object() {
        Ok(obj) => obj,
        Err(e) => return Some(Err(Fail::Native(e))),
    };
    // SAFETY: the wrapper holds +1 on a Function.
    let func = unsafe { function_obj(obj) };
    if func.flags & (FUNC_LEAF | FUNC_CELL_GETTER) != 0 || !(func.arity == 1 || func.arity < 0) {
        return None;
    }
    // SAFETY: the shim stores Link handles read from index.js's `fnHandles` beside the
    // function it passes as argument 0, which keeps the Link alive.
    let link = unsafe { link_of_handle((*frame).handles[0]) }?;
    let mut argc = 1;
    let mut value = ptr::null_mut();
    let mut receiver = ptr::null_mut();
    // SAFETY: this call's info; one slot for one argument.
    unsafe { sys::napi_get_cb_info(env.raw(), info, &mut argc, &mut value, &mut receiver, ptr::null_mut()) };
    let mut source = OneCallable { state, value, link, lent: None, live: None };
    let mut result = Any::none();
    // The shim passes `invokeCallable` as the receiver of a call it makes with one Link
    // argument (index.js `shimFactory`): a handle of this call, for its callbacks.
    let outer_invoke = state.invoke_in_call.replace(receiver);
    state.callback_result.set(CallbackResult::NONE);
    // SAFETY: the JS thread (this env's slots change only on it); a live Function whose one
    // argument's Function `source` holds until after the call.
    let called = unsafe { state.frontend.call::<1, _>(obj, func, 1, false, &mut source, &mut result) };
    state.invoke_in_call.set(outer_invoke);
    // The body has returned: the record is that of the last callback it ran, in this call's
    // scope (`CallbackResult`); none is left behind for a later call.
    let last = state.callback_result.replace(CallbackResult::NONE);
    drop(source.live.take());
    let outcome = called.and_then(|called| callback_result_outcome(state, called, result, last));
    // After the result is converted: a result that is this Function goes back as the JS function.
    if let Some(lent) = source.lent.take() {
        lent.give_back(state);
    }
    // Emptied: nothing is left for `drop`, an out-of-line call.
    std::mem::forget(source);
    Some(outcome)
}

/// How a one-callable call's result goes back: when it is the wrapper the call's last
/// callback returned (`call(cb)` returning `cb()`), that callback's own JS value, with the
/// result's +1 kept as its slot's spare as for an argument; else as any call's.
#[inline(always)]
fn callback_result_outcome(state: &EnvState, called: Called, result: Any, last: CallbackResult) -> JsResult<Outcome> {
    if let (Called::Result, Some(ptr)) = (&called, result.view().as_object_ptr()) {
        // SAFETY: a recorded wrapper is kept alive by the recorded value, a handle of this
        // call's still open scope (`CallbackResult`).
        if let Some(w) = unsafe { last.wrapper.as_ref() }.filter(|w| w.obj.get() == ptr) {
            let obj = result.into_object().expect("an object kind");
            // SAFETY: the JS thread (this env's slots change only on it); the wrapper is alive
            // and reachable for the call (above), owns its +1 and unties in its finalizer.
            return match unsafe { state.frontend.result_argument(obj, [(0, ptr, w.reference.get() as usize)], None) } {
                Ok(_) => Ok(Outcome::Value(last.value)),
                Err(obj) => any_to_js(state, Any::object(obj)).map(Outcome::Value),
            };
        }
    }
    result_outcome(state, called, result, &[])
}

/// The one argument of [`call_of_one_callable`]: a JS function with a Link, and the Function
/// it gets for the call once converted (lent, or its live one).
struct OneCallable<'s> {
    state: &'s EnvState,
    value: Value,
    link: &'static Link,
    lent: Option<LentCallable>,
    live: Option<tether_core::Function>,
}

// SAFETY: the view borrows the Function held in `lent` or `live`, released only after the call.
unsafe impl ArgumentSource<EnvState> for OneCallable<'_> {
    type Error = Fail;

    #[inline(always)]
    unsafe fn convert<'v>(
        &mut self,
        _index: usize,
        _leaf: Option<&mut LeafCall<'_, EnvState>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> JsResult<()> {
        let object = match callback::for_call(self.state, self.value, self.link, &mut self.lent)? {
            Some(function) => self.live.insert(function).as_object_ptr(),
            None => self.lent.as_ref().expect("for_call lent a Function").function().as_object_ptr(),
        };
        // SAFETY: a live Function, held by `self` until after the call.
        view.write(unsafe { AnyView::from_object_ptr(object) });
        Ok(())
    }

    #[inline(always)]
    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        let _sync = SyncCall::enter(self.state);
        call()
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: Fail) -> Fail {
        <JsArguments<'_, '_> as ArgumentSource<EnvState>>::argument_failed(function, index, error)
    }

    fn failed(error: Error) -> Fail {
        Fail::Native(error)
    }
}

/// [`call_native`] in a function of its own: calls of one argument run inline in the
/// callback, the others here (inline too, they made the callback spill its registers).
///
/// # Safety
/// As [`call_native`].
#[inline(never)]
unsafe fn call_native_out_of_line<const N: usize>(
    state: &EnvState,
    wrapper: &Wrapper,
    frame: *const CallFrame,
    mask: u32,
    argv: &[Value],
) -> JsResult<Outcome> {
    // SAFETY: the caller's guarantees, passed on.
    unsafe { call_native::<N>(state, wrapper, frame, mask, argv) }
}

/// A call whose argument count is not the function's arity: the defaults the caller left out
/// (core's binding, which also words a missing required argument) appended as JS values,
/// then the general path.
///
/// # Safety
/// As [`call_counted`].
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
unsafe fn call_binding(
    state: &EnvState,
    wrapper: &Wrapper,
    frame: *const CallFrame,
    env: Env,
    info: sys::napi_callback_info,
    mask: u32,
    count: usize,
    func: &FunctionObj,
) -> JsResult<Outcome> {
    let defaults = func.defaults_left_out(count)?;
    let mut argv = vec![ptr::null_mut(); count + defaults.len()];
    if count > 0 {
        let mut argc = count;
        raw::napi_call!(
            env,
            napi_get_cb_info(env.raw(), info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut())
        )?;
    }
    // Plain values (the only defaults a signature holds) run no JS on the way, so the frame's
    // handles are still this call's.
    for (slot, default) in argv[count..].iter_mut().zip(defaults) {
        *slot = any_to_js(state, default)?;
    }
    // SAFETY: `frame` is this env's, filled by the shim that made this call, and `mask` came
    // from it (this function's contract); its bits name arguments below `count` only; `argv`
    // holds filled values.
    unsafe { call_native::<STACK_ARGS>(state, wrapper, frame, mask, &argv) }
}

/// Marks the JS thread as inside a synchronous native call that may block or call back.
pub struct SyncCall<'a>(&'a EnvState);

impl<'a> SyncCall<'a> {
    pub fn enter(state: &'a EnvState) -> Self {
        let depth = &state.sync_depth;
        // Only the JS thread writes the depth; other threads read it. A release store (a plain
        // `mov`; SeqCst was an `xchg`, a locked instruction, twice per call): a thread the call
        // starts or signals sees it through that synchronisation, and a thread racing with the
        // entry can miss it under any ordering (the check is a best-effort deadlock guard).
        depth.store(depth.load(std::sync::atomic::Ordering::Relaxed) + 1, std::sync::atomic::Ordering::Release);
        SyncCall(state)
    }
}

impl Drop for SyncCall<'_> {
    fn drop(&mut self) {
        let depth = &self.0.sync_depth;
        depth.store(depth.load(std::sync::atomic::Ordering::Relaxed) - 1, std::sync::atomic::Ordering::Release);
    }
}

/// Call a native function with JS arguments, synchronously; bit i of `mask` says argument i
/// is a wrapper whose handle is in `frame`. `N` is the argument count when below
/// [`STACK_ARGS`], else the stack capacity (more arguments go to the heap).
///
/// # Safety
/// `frame` is this env's call frame, filled in by the shim that made this call, and `mask`
/// was read from it; no JS has run since.
#[inline(always)]
unsafe fn call_native<const N: usize>(
    state: &EnvState,
    wrapper: &Wrapper,
    frame: *const CallFrame,
    mask: u32,
    argv: &[Value],
) -> JsResult<Outcome> {
    let obj = wrapper.live_object()?;
    // SAFETY: the wrapper holds +1 on a Function.
    let func = unsafe { function_obj(obj) };
    let leaf = func.flags & FUNC_LEAF != 0;
    debug_assert!(N >= STACK_ARGS || argv.len() == N);
    let n = if N < STACK_ARGS { N } else { argv.len() };
    // The handles first: converting another argument may run JS (a getter, a callback made
    // for a function argument) that makes another call and refills the frame.
    let mut stack_wrappers: [Option<&Wrapper>; N] = [None; N];
    let mut heap_wrappers;
    let wrappers: &mut [Option<&Wrapper>] = if n <= N {
        &mut stack_wrappers[..n]
    } else {
        heap_wrappers = vec![None; n];
        &mut heap_wrappers
    };
    // JS functions a shim passed with their Link (arguments below N; the rest convert as usual).
    let mut links: [Option<&'static Link>; N] = [None; N];
    // SAFETY: `frame` is this env's, filled by this call's shim (this function's contract).
    let mut link_bits = unsafe { (*frame).links } & ((1u64 << n.min(N).min(FRAME_HANDLES)) - 1) as u32 & !mask;
    while link_bits != 0 {
        let i = link_bits.trailing_zeros() as usize;
        link_bits &= link_bits - 1;
        // SAFETY: the shim stores Link handles read from index.js's `fnHandles` beside the
        // function it passes as argument i, which keeps the Link alive.
        links[i] = unsafe { link_of_handle((*frame).handles[i]) };
    }
    // Numbers in the frame (the monomorphic shims pass them for arguments below N).
    let mut numbers: [Option<f64>; N] = [None; N];
    // SAFETY: as for the links above.
    let mut number_bits = unsafe { (*frame).numbers } & ((1u64 << n.min(N).min(FRAME_HANDLES)) - 1) as u32 & !mask;
    while number_bits != 0 {
        let i = number_bits.trailing_zeros() as usize;
        number_bits &= number_bits - 1;
        // SAFETY: as for the links above; `i` is below N.
        numbers[i] = Some(unsafe { (*frame).handles[i] });
    }
    // A leaf of ints given integral numbers in the frame (`add3(1, 2, 3)`): its int entry, no
    // cells; anything else (a float, a value not in the frame) the general path below.
    if N <= 3 && leaf && func.flags & FUNC_INT_ENTRY != 0 && usize::try_from(func.arity) == Ok(N) {
        if let Some(outcome) = call_ints(state, obj, func, &numbers) {
            return outcome;
        }
    }
    let mut mask = mask & ((1u64 << n.min(FRAME_HANDLES)) - 1) as u32;
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        // SAFETY: the shim stores handles read from wrappers' private fields only; each names
        // a box that lives as long as that wrapper, an argument of this call.
        let w = unsafe { wrapper_of_handle((*frame).handles[i]) };
        wrappers[i] = Some(w.ok_or_else(|| Error::type_error("a flagged argument is not a tether handle"))?);
    }
    if N == 1 && func.flags & FUNC_CELL_GETTER != 0 {
        if let Some(this) = wrappers[0] {
            // A cell field's getter: read the cell here, as tether_core::cell::direct_cell allows.
            // SAFETY: a live Function and the argument wrapper's live object.
            if let Some(cell) = unsafe { tether_core::cell::direct_cell(obj, this.live_object()?) } {
                return read_cell(state, cell);
            }
        }
    }
    // Declared before `owned`, so given back after it (and after the result is converted).
    let mut lent: Option<LentCallable> = None;
    let mut owned: Vec<Any> = Vec::new();
    // The source holds only references: nothing of it escapes the inlined driver, so it
    // stays in registers.
    let mut source = JsArguments {
        state,
        argv,
        wrappers: &mut *wrappers,
        links: &links,
        numbers: &numbers,
        lent: &mut lent,
        owned: &mut owned,
    };
    let mut result = Any::none();
    // SAFETY: the JS thread (this env's slots change only on it); a live Function whose
    // arguments are kept alive by `argv`, the argument wrappers and `owned`.
    let called = unsafe { state.frontend.call::<N, _>(obj, func, n, leaf, &mut source, &mut result) };
    // Most calls own nothing; an empty Vec's drop is an out-of-line call worth skipping.
    if owned.capacity() == 0 {
        std::mem::forget(owned);
    } else {
        drop(owned);
    }
    let outcome = result_outcome(state, called?, result, wrappers);
    if let Some(lent) = lent {
        lent.give_back(state);
    }
    outcome
}

/// A leaf call through `func`'s int entry ([`FUNC_INT_ENTRY`]) when every argument is an
/// integral number the shim passed in the frame; `None`, having done nothing, otherwise.
#[inline(always)]
fn call_ints<const N: usize>(
    state: &EnvState,
    obj: *mut ObjectHeader,
    func: &FunctionObj,
    numbers: &[Option<f64>; N],
) -> Option<JsResult<Outcome>> {
    let mut ints = [0i64; N];
    for (int, number) in ints.iter_mut().zip(numbers) {
        *int = crate::convert::integral((*number)?)?;
    }
    let entry = func.int_entry()?;
    // SAFETY: a live Function (the shim's wrapper holds it) with an int entry and arity N.
    let called = unsafe { tether_core::function::call_int_entry(entry, obj, ints) };
    Some(match called {
        Ok(value) => any_to_js(state, Any::int(value)).map(Outcome::Value),
        Err(e) => Err(Fail::Native(e)),
    })
}

/// How a call's result goes back: the argument it is, or converted.
#[inline(always)]
fn result_outcome(state: &EnvState, called: Called, result: Any, wrappers: &[Option<&Wrapper>]) -> JsResult<Outcome> {
    if let Called::Argument(i) = called {
        return Ok(Outcome::Argument(i));
    }
    if result.view().as_object_ptr().is_some() {
        let obj = result.into_object().expect("an object kind");
        let arguments =
            wrappers.iter().enumerate().filter_map(|(i, w)| w.map(|w| (i, w.obj.get(), w.reference.get() as usize)));
        // SAFETY: this env's slots change only on this, its JS thread; the argument wrappers
        // are reachable for the call, own their +1 and untie in their finalizer.
        return match unsafe { state.frontend.result_argument(obj, arguments, None) } {
            Ok(i) => Ok(Outcome::Argument(i)),
            Err(obj) => any_to_js(state, Any::object(obj)).map(Outcome::Value),
        };
    }
    any_to_js(state, result).map(Outcome::Value)
}

/// The JS arguments of one call: wrapper arguments known from the frame, the rest read from
/// `argv`; values converted for the call are kept in `owned`.
struct JsArguments<'s, 'w> {
    state: &'s EnvState,
    argv: &'s [Value],
    /// Argument i's wrapper, when it is one (from the frame, or found while converting).
    wrappers: &'s mut [Option<&'w Wrapper>],
    /// Argument i's Link, when it is a JS function a shim passed with one (i below N).
    links: &'s [Option<&'static Link>],
    /// Argument i's value, when it is a number a shim passed in the frame (i below N).
    numbers: &'s [Option<f64>],
    /// The Function lent to this call (to its first such function argument).
    lent: &'s mut Option<LentCallable>,
    owned: &'s mut Vec<Any>,
}

// SAFETY: a view borrows only `owned` (dropped with the source) or an argument wrapper's
// object (its +1 held by the wrapper, an argument of the running call); a leaf call's
// wrapper arguments come from `LeafCall::wrapper_argument`.
unsafe impl ArgumentSource<EnvState> for JsArguments<'_, '_> {
    type Error = Fail;

    #[inline(always)]
    unsafe fn convert<'v>(
        &mut self,
        index: usize,
        leaf: Option<&mut LeafCall<'_, EnvState>>,
        view: &mut MaybeUninit<AnyView<'v>>,
    ) -> JsResult<()> {
        // Leaf functions never call back, so a wrapper's own +1 keeps a borrowed argument
        // alive; otherwise a callback could dispose of it mid-call, so hold our own.
        let in_leaf = leaf.map(|l| (l, index));
        // SAFETY: the driver asks for indices below the count it was given, the length of
        // `argv` and of `wrappers`.
        let (wrapper, value) = unsafe { (self.wrappers.get_unchecked_mut(index), *self.argv.get_unchecked(index)) };
        let converted = match *wrapper {
            Some(w) => wrapper_view(w, in_leaf, self.owned)?,
            None if self.numbers.get(index).is_some_and(Option::is_some) => {
                crate::convert::number_view(self.numbers[index].expect("checked"))
            }
            None if self.links.get(index).is_some_and(Option::is_some) => {
                let link = self.links[index].expect("checked");
                match for_call_out_of_line(self.state, value, link, self.lent)? {
                    Some(f) => crate::convert::keep(self.owned, Any::object(f.0.into())),
                    None => {
                        let lent = self.lent.as_ref().expect("for_call lent a Function");
                        // SAFETY: the Function lives until `lent` is given back, after the call.
                        unsafe { AnyView::from_object_ptr(lent.function().as_object_ptr()) }
                    }
                }
            }
            None => {
                let (converted, w) = arg_view(self.state, value, in_leaf, self.owned)?;
                *wrapper = w;
                converted
            }
        };
        view.write(converted);
        Ok(())
    }

    #[inline(always)]
    fn unlocked(&mut self, call: impl FnOnce() -> i32) -> i32 {
        let _sync = SyncCall::enter(self.state);
        call()
    }

    fn argument_failed(function: &FunctionObj, index: usize, error: Fail) -> Fail {
        match error {
            Fail::Native(e) => Fail::Native(e.reworded(argument_message(function, index, e.message()))),
            // A JS exception (a getter that threw) propagates as it is.
            Fail::Pending => Fail::Pending,
        }
    }

    fn failed(error: Error) -> Fail {
        Fail::Native(error)
    }
}

/// [`callback::for_call`] for the general path, out of line: inlined there, it grew the
/// callback's frame and cost every call a few instructions (`p.first` 464 -> 470 per iteration).
#[inline(never)]
fn for_call_out_of_line(
    state: &EnvState,
    f: Value,
    link: &'static Link,
    lent: &mut Option<LentCallable>,
) -> JsResult<Option<tether_core::Function>> {
    callback::for_call(state, f, link, lent)
}

/// A cell field's value: an object's live wrapper straight from the held cell (no count
/// change), anything else converted from a copy.
#[inline]
fn read_cell(state: &EnvState, cell: &tether_core::cell::AnyCell) -> JsResult<Outcome> {
    // SAFETY: the JS thread (this is a call on it); the cell is in the argument's live object.
    match unsafe { crate::tie::live_wrapper_in(state, cell) } {
        Some(v) => Ok(Outcome::Value(v)),
        None => any_to_js(state, cell.get()).map(Outcome::Value),
    }
}

// ---- callAsync ------------------------------------------------------------------------

struct AsyncCall {
    func: ObjectRef,
    args: Vec<Any>,
    outcome: Option<Result<Any, Error>>,
    deferred: sys::napi_deferred,
    work: sys::napi_async_work,
}

/// `fn.callAsync(...args)`: run on the libuv pool, resolve with the result.
pub unsafe extern "C" fn call_async_callback(raw_env: sys::napi_env, info: sys::napi_callback_info) -> Value {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
    // SAFETY: called by Node on this env's JS thread after init.
    let state = unsafe { crate::env::state_of(env) };
    match start_async(state, env, info) {
        Ok(v) => v,
        Err(fail) => {
            throw(state, fail);
            ptr::null_mut()
        }
    }
}

fn start_async(state: &EnvState, env: Env, info: sys::napi_callback_info) -> JsResult<Value> {
    let args = raw::args(env, info)?;
    let wrapper = wrapper_of(state, args.this)?.ok_or_else(|| {
        Error::type_error("callAsync must be called on a tether native function (fn.callAsync(...args))")
    })?;
    let obj = wrapper.live_object()?;
    if !std::ptr::eq(wrapper.state, state) {
        return Err(Error::runtime("callAsync on a function of another environment").into());
    }
    // SAFETY: the wrapper's +1 keeps `obj` alive while we take our own.
    let func = unsafe { ObjectRef::from_borrowed(obj) };
    // SAFETY: a live Function (the reference just taken).
    let values = convert_arguments(state, unsafe { function_obj(obj) }, &args.argv, &[])?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    napi_call!(env, napi_create_promise(env.raw(), &mut deferred, &mut promise))?;
    let job = Box::into_raw(Box::new(AsyncCall { func, args: values, outcome: None, deferred, work: ptr::null_mut() }));
    let name = raw::string(env, "tether.callAsync")?;
    let mut work = ptr::null_mut();
    // SAFETY: `job` is handed to the work callbacks, which free it in `complete_async`.
    let status = unsafe {
        sys::napi_create_async_work(
            env.raw(),
            ptr::null_mut(),
            name,
            Some(execute_async),
            Some(complete_async),
            job as *mut c_void,
            &mut work,
        )
    };
    if let Err(fail) = raw::check(env, status, "napi_create_async_work") {
        // SAFETY: not queued, still ours.
        drop(unsafe { Box::from_raw(job) });
        return Err(fail);
    }
    // SAFETY: the job is not shared with any thread yet.
    unsafe { (*job).work = work };
    napi_call!(env, napi_queue_async_work(env.raw(), work))?;
    Ok(promise)
}

unsafe extern "C" fn execute_async(_env: sys::napi_env, data: *mut c_void) {
    // SAFETY: the job is owned by the work until `complete_async`; only this pool thread
    // touches it meanwhile.
    let job = unsafe { &mut *(data as *mut AsyncCall) };
    let views: Vec<AnyView<'_>> = job.args.iter().map(Any::view).collect();
    let func = job.func.as_ptr();
    let outcome = tether_core::error::catch_panic(|| {
        let mut result = Any::none();
        // SAFETY: a live Function (+1 held by the job), owned argument cells, a None result.
        let rc = unsafe { (function_obj(func).safe_call)(func, views.as_ptr(), views.len() as i32, &mut result) };
        if rc == 0 {
            Ok(result)
        } else {
            Err(take_last_error())
        }
    });
    job.outcome = Some(outcome);
}

unsafe extern "C" fn complete_async(raw_env: sys::napi_env, status: sys::napi_status, data: *mut c_void) {
    // SAFETY: Node passes the env of the running callback, live for it, on its JS thread.
    let env = unsafe { Env::from_raw(raw_env) };
    // SAFETY: the job made in `start_async`, freed here once.
    let job = unsafe { Box::from_raw(data as *mut AsyncCall) };
    // SAFETY: called on the JS thread of a live env.
    let state = unsafe { crate::env::state_of(env) };
    // SAFETY: our work, completed.
    unsafe { sys::napi_delete_async_work(env.raw(), job.work) };
    let AsyncCall { func, args, outcome, deferred, .. } = *job;
    drop(args);
    drop(func);
    let outcome = match outcome {
        Some(o) if status == sys::Status::napi_ok => o,
        _ => Err(Error::runtime("the async call was cancelled")),
    };
    let settled = match outcome {
        Ok(value) => any_to_js(state, value).map(|v| (true, v)),
        Err(e) => Err(Fail::Native(e)),
    };
    let (resolve, value) = match settled {
        Ok(ok) => ok,
        Err(fail) => (false, crate::errors::fail_to_js(state, fail)),
    };
    // SAFETY: the promise's deferred, settled exactly once.
    unsafe {
        if resolve {
            sys::napi_resolve_deferred(env.raw(), deferred, value);
        } else {
            sys::napi_reject_deferred(env.raw(), deferred, value);
        }
    }
}
