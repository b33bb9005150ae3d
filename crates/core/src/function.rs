//! Function objects, the `safe_call` ABI, typed Rust closures and the global registry.
//!
//! `safe_call(handle, args, n, result) -> i32`: `handle` is the function object itself,
//! `args` borrows `n` cells, `result` points to a cell the caller initialised to None and
//! owns afterwards. 0 = ok; nonzero = an `Error` waits in the thread's raised slot.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::RwLock;

use crate::any::{Any, AnyView, TypeIndex};
use crate::arc::ObjectArc;
use crate::convert::{arg_error, FromArg, IntoRet};
use crate::error::{catch_panic_registered, register_catching_frame, set_last_error, take_last_error, Error, Result};
use crate::object::{Object, ObjectHeader};
use crate::plugin;
use crate::signature::{Signature, SignatureInfo, Ty};

/// The call ABI every function object exposes.
pub type SafeCallFn =
    unsafe extern "C" fn(handle: *mut ObjectHeader, args: *const AnyView<'_>, n: i32, result: *mut Any) -> i32;

/// Frees a function's `data` when the function dies.
pub type DataDropFn = unsafe extern "C" fn(data: *mut c_void);

/// Flag: the function neither blocks nor calls back into any language, so a frontend may keep
/// its interpreter lock (the GIL) held across the call. Getters and tiny leaf functions. The JVM
/// (JDK 22+) calls a leaf through a critical foreign downcall, where a broken promise is refused
/// with an error (crates/java/src/critical.rs), so a leaf must be short as well.
pub const FUNC_LEAF: u32 = 1;

/// Flag: the function accepts lent object arguments (`AnyView::lent_object`): it converts
/// each argument exactly once, adopting a lent reference (or releasing it right after a
/// conversion that only reads, see [`FromArg::ADOPTS_LENT`]), and releases the lent
/// arguments it does not convert. Every typed closure sets it; a frontend may then hand over
/// a spare reference instead of the callee adding one.
pub const FUNC_ADOPTS_LENT: u32 = 2;
/// Flag (ABI 1.2): a getter of a reflected field stored in an `AnyCell`, made by the core
/// (`TypeBuilder::cell_field_rw`). Its `data` starts with a pointer-sized mark of the copy of
/// the core that made it, which recognises its own by it (`cell::direct_cell`); the rest is
/// private to that copy. Plugins and C functions never set it.
pub const FUNC_CELL_GETTER: u32 = 4;

/// Flag (ABI 1.4): the body goes on past `drop_data` with a `signature` (see
/// [`FunctionObj::signature`]). Objects built by hand against an older tether.h are 64 bytes
/// and never set it, so the field is read only when the flag says it is there.
pub const FUNC_SIGNED: u32 = 8;

/// Flag (ABI 1.5): the function does not block: it waits for no other thread (no join, no lock
/// another thread may hold while it calls into a language, no blocking I/O), and the language
/// callables it calls, it calls on the calling thread before it returns. So a frontend may keep
/// its interpreter lock held across the call (Python keeps the GIL: a callback re-enters on
/// the thread that holds it, instead of two lock hand-overs per callback); unlike a leaf,
/// language code may run during the call, so arguments still hold their own references. A
/// function that calls a Function it is given is nonblocking only if that Function is: Python
/// releases the GIL anyway when an argument is a native Function that is neither a leaf nor
/// nonblocking. Set by the plugin author (`Function::nonblocking`, `#[tether(nonblocking)]`).
pub const FUNC_NONBLOCKING: u32 = 16;

/// Flag (ABI 1.6): besides `safe_call`, the function has an [`IntEntryFn`] that takes its
/// `arity` (at most [`INT_ENTRY_ARGS`]) arguments and gives its result as plain 64-bit ints, in
/// registers, with no cells: its `data` starts with that entry (a function pointer). Set by
/// the core for typed closures whose parameters and result are ints ([`Function::from_typed`]);
/// a frontend whose call is all ints may use it instead of `safe_call` (the JVM's critical
/// downcalls of `callLong`). Its value and error are the ones `safe_call` would give.
pub const FUNC_INT_ENTRY: u32 = 32;

/// What an [`IntEntryFn`] returns: `status` 0 with the result in `value`, or -1 with the error
/// in the thread's raised slot (as `safe_call`). Two words: returned in registers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntOutcome {
    pub value: i64,
    pub status: i64,
}

/// The int entry of a [`FUNC_INT_ENTRY`] function: `handle` is the function object, then the
/// arguments in order, the first `arity` of the [`INT_ENTRY_ARGS`] read (pass 0 for the
/// rest). Arguments in registers: an array in memory cost a store-to-load round trip per call.
/// Never unwinds.
pub type IntEntryFn = unsafe extern "C" fn(handle: *mut ObjectHeader, a0: i64, a1: i64, a2: i64, a3: i64) -> IntOutcome;

/// The most arguments an [`IntEntryFn`] takes.
pub const INT_ENTRY_ARGS: usize = 4;

/// Call `entry`, a [`FUNC_INT_ENTRY`] function's, with `args` (the rest 0): its value, or the
/// error it raised (taken from this thread's raised slot).
///
/// # Safety
/// `entry` is the int entry of the live function `handle`, whose arity is `N`.
#[inline(always)]
pub unsafe fn call_int_entry<const N: usize>(
    entry: IntEntryFn,
    handle: *mut ObjectHeader,
    args: [i64; N],
) -> Result<i64> {
    debug_assert!(N <= INT_ENTRY_ARGS, "no int entry takes {N} arguments");
    let at = |i: usize| if i < N { args[i] } else { 0 };
    // SAFETY: this function's contract.
    let out = unsafe { entry(handle, at(0), at(1), at(2), at(3)) };
    if out.status != 0 {
        return Err(take_last_error());
    }
    Ok(out.value)
}

/// Flag (ABI 1.8): besides `safe_call`, the function has a [`ValueEntryFn`] that takes its
/// `arity` (at most [`VALUE_ENTRY_ARGS`]) arguments as cells in registers and gives its result
/// the same way: no argument array, no result cell in memory. Its `data` starts with two
/// function pointers: the int entry ([`FUNC_INT_ENTRY`]; null when that flag is clear) and this
/// entry. Set by the core for typed closures of at most two parameters
/// ([`Function::from_typed`]); a frontend calling with that many arguments may use it instead
/// of `safe_call`, with the same arguments (lent ones included): its value and error are the
/// ones `safe_call` would give.
pub const FUNC_VALUE_ENTRY: u32 = 64;

/// The most arguments a [`ValueEntryFn`] takes.
pub const VALUE_ENTRY_ARGS: usize = 2;

/// What a [`ValueEntryFn`] returns: an owned cell's two words (its layout: the type index in
/// the low half of `head`, the inline length in the high half, then the payload), or the type
/// index [`ValueOutcome::RAISED`] with the error in the thread's raised slot. Two words:
/// returned in registers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueOutcome {
    pub head: u64,
    pub payload: *mut u8,
}

impl ValueOutcome {
    /// The type index that says "the error is raised": no type has it.
    pub const RAISED: i32 = i32::MIN;

    /// The outcome of a call that raised its error.
    pub const fn raised() -> ValueOutcome {
        ValueOutcome { head: ValueOutcome::RAISED as u32 as u64, payload: std::ptr::null_mut() }
    }

    /// An owned value, moved in.
    pub fn value(value: Any) -> ValueOutcome {
        let (head, payload) = value.into_words();
        ValueOutcome { head, payload }
    }

    /// The value, or the raised error (taken from this thread's raised slot).
    ///
    /// # Safety
    /// `self` is a value entry's outcome, not read before.
    #[inline(always)]
    pub unsafe fn into_result(self) -> Result<Any> {
        if self.head as u32 as i32 == ValueOutcome::RAISED {
            return Err(take_last_error());
        }
        // SAFETY: an entry's owned value, in the words `value` made.
        Ok(unsafe { Any::from_words(self.head, self.payload) })
    }
}

/// The value entry of a [`FUNC_VALUE_ENTRY`] function: `handle` is the function object, then
/// the arguments in order, the first `arity` of the [`VALUE_ENTRY_ARGS`] read (pass None for
/// the rest). Never unwinds.
pub type ValueEntryFn =
    unsafe extern "C" fn(handle: *mut ObjectHeader, a0: AnyView<'_>, a1: AnyView<'_>) -> ValueOutcome;

/// Call `entry`, a [`FUNC_VALUE_ENTRY`] function's, with `args` (the rest None): its value, or
/// the error it raised (taken from this thread's raised slot). Lent arguments are consumed, as
/// by `safe_call`.
///
/// # Safety
/// `entry` is the value entry of the live function `handle`, whose arity is `N`; `args` as for
/// its `safe_call`.
#[inline(always)]
pub unsafe fn call_value_entry<const N: usize>(
    entry: ValueEntryFn,
    handle: *mut ObjectHeader,
    args: [AnyView<'_>; N],
) -> Result<Any> {
    debug_assert!(N <= VALUE_ENTRY_ARGS, "no value entry takes {N} arguments");
    let at = |i: usize| if i < N { args[i] } else { AnyView::none() };
    // SAFETY: this function's contract.
    let out = unsafe { entry(handle, at(0), at(1)) };
    // SAFETY: the entry's outcome, read once.
    unsafe { out.into_result() }
}

const _: () = {
    assert!(std::mem::size_of::<IntOutcome>() == 16);
    assert!(std::mem::offset_of!(IntOutcome, status) == 8);
    assert!(std::mem::size_of::<ValueOutcome>() == 16);
    assert!(std::mem::offset_of!(ValueOutcome, payload) == 8);
};

/// The body of a Function object. `#[repr(C)]`; C and plugins build these too.
#[repr(C)]
pub struct FunctionObj {
    pub safe_call: SafeCallFn,
    pub flags: u32,
    pub arity: i32,
    pub name: Any,
    pub doc: Any,
    /// The creator's payload, handed back through `handle` (e.g. a boxed Rust closure).
    pub data: *mut c_void,
    pub drop_data: Option<DataDropFn>,
    /// An interned signature when `flags` has [`FUNC_SIGNED`] (else not even there).
    pub signature: *const SignatureInfo,
}

const _: () = {
    assert!(std::mem::size_of::<FunctionObj>() == 72);
    assert!(std::mem::offset_of!(FunctionObj, signature) == 64);
    assert!(std::mem::offset_of!(FunctionObj, safe_call) == 0);
    assert!(std::mem::offset_of!(FunctionObj, flags) == 8);
    assert!(std::mem::offset_of!(FunctionObj, arity) == 12);
    assert!(std::mem::offset_of!(FunctionObj, name) == 16);
    assert!(std::mem::offset_of!(FunctionObj, doc) == 32);
    assert!(std::mem::offset_of!(FunctionObj, data) == 48);
    assert!(std::mem::offset_of!(FunctionObj, drop_data) == 56);
    assert!(std::mem::offset_of!(crate::arc::ObjectBox<FunctionObj>, value) == 24);
};

impl Object for FunctionObj {
    const TYPE_KEY: &'static str = "tether.Function";
    fn type_index() -> i32 {
        TypeIndex::FUNCTION
    }
}

// SAFETY: the contract of making a function object (docs/abi.md): `safe_call` may be called
// from any thread, and `drop_data` may run on any thread.
unsafe impl Send for FunctionObj {}
// SAFETY: the reason Sync holds is the one above: the contract of making a function object
// (docs/abi.md): `safe_call` may be called from any thread, and `drop_data` may run on any thread.
unsafe impl Sync for FunctionObj {}

impl FunctionObj {
    /// The int entry, when the flags say there is one ([`FUNC_INT_ENTRY`]).
    #[inline(always)]
    pub fn int_entry(&self) -> Option<IntEntryFn> {
        if self.flags & FUNC_INT_ENTRY == 0 {
            return None;
        }
        // SAFETY: the flag says `data` starts with the entry (a function pointer, non-null).
        Some(unsafe { *(self.data as *const IntEntryFn) })
    }

    /// The value entry, when the flags say there is one ([`FUNC_VALUE_ENTRY`]).
    #[inline(always)]
    pub fn value_entry(&self) -> Option<ValueEntryFn> {
        if self.flags & FUNC_VALUE_ENTRY == 0 {
            return None;
        }
        // SAFETY: the flag says `data`'s second word is the entry (a function pointer,
        // non-null).
        Some(unsafe { *(self.data as *const ValueEntryFn).add(1) })
    }

    /// The signature, when the function has one.
    #[inline]
    pub fn signature(&self) -> Option<&'static SignatureInfo> {
        if self.flags & FUNC_SIGNED == 0 {
            return None;
        }
        // SAFETY: `FUNC_SIGNED` says the field exists; it holds an interned (leaked) signature
        // or null.
        unsafe { self.signature.as_ref() }
    }

    /// The defaults a positional call with `given` arguments leaves out, in order (what a
    /// frontend appends before calling), or the binding's TypeError (`signature::bind_call`:
    /// "missing 1 required argument: 'b'", "takes 2 positional arguments but 3 were given").
    /// Empty when `given` is the declared arity or the function has no signature: the call
    /// goes as it is.
    pub fn defaults_left_out(&self, given: usize) -> Result<Vec<Any>> {
        let Some(sig) = self.signature() else { return Ok(Vec::new()) };
        if usize::try_from(self.arity) == Ok(given) {
            return Ok(Vec::new());
        }
        let bound = crate::signature::bind_call(self.name_str(), sig, given, &[])?;
        Ok(bound
            .iter()
            .zip(sig.params())
            .filter(|(b, _)| **b == crate::signature::Bound::Default)
            .filter_map(|(_, p)| p.default().cloned())
            .collect())
    }

    /// The name for messages.
    pub fn name_str(&self) -> &str {
        self.name.view_str()
    }
}

impl Drop for FunctionObj {
    fn drop(&mut self) {
        if let Some(drop_data) = self.drop_data {
            // SAFETY: the creator's destructor for its own payload, run once.
            unsafe { drop_data(self.data) };
        }
    }
}

/// A strong reference to a Function object.
#[derive(Clone)]
pub struct Function(pub ObjectArc<FunctionObj>);

/// The end of a `safe_call`: the value into the caller's result cell (0), or the error into
/// this thread's raised slot (-1). Hot paths write the value inside their catch frame instead
/// and end with [`call_status`].
///
/// # Safety
/// `result` is the caller's writable cell, holding None (it is overwritten, not dropped).
#[inline]
pub unsafe fn finish_call(outcome: Result<Any>, result: *mut Any) -> i32 {
    // SAFETY: the caller's guarantee.
    call_status(outcome.map(|value| unsafe { result.write(value) }))
}

/// The end of a `safe_call` whose body wrote its value into the result cell itself, inside its
/// catch frame (`run_closure`, the frontends' callbacks): there the value goes from registers
/// to the cell, where a `Result<Any>` returned out of the frame was copied in 16-byte moves
/// over the 8-byte stores that made it (a failed store forwarding per call: ~9% of Python's
/// `call(cb)` under perf, AMD EPYC). 0, or the error into this thread's raised slot (-1).
#[inline]
pub fn call_status(outcome: Result<()>) -> i32 {
    match outcome {
        Ok(()) => 0,
        Err(e) => failed_call(e),
    }
}

/// [`call_status`]'s error arm, out of line: the successful path then saves no registers.
#[cold]
#[inline(never)]
fn failed_call(error: Error) -> i32 {
    set_last_error(error);
    -1
}

/// The body of every Rust-closure `safe_call`: the closure `F` boxed in the function's `data`
/// runs under `catch_panic` (the caller, a `safe_call`, was registered as a catching frame when
/// the Function was made), its value fills `result` and its error the raised slot.
///
/// # Safety
/// `handle` is a live Function whose `data` is a `Box<F>`; `args` holds `n` cells; `result`
/// is a writable cell holding None.
#[inline(always)]
pub(crate) unsafe fn run_closure<F>(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
    run: impl FnOnce(&F, &FunctionObj, &[AnyView<'_>]) -> Result<Any>,
) -> i32 {
    // SAFETY: the caller's guarantees; the result cell holds None and is ours to fill.
    let outcome = catch_panic_registered(|| unsafe {
        let func = &(*(handle as *const crate::arc::ObjectBox<FunctionObj>)).value;
        let f = &*(func.data as *const F);
        let args = if n <= 0 { &[][..] } else { std::slice::from_raw_parts(args, n as usize) };
        result.write(run(f, func, args)?);
        Ok(())
    });
    call_status(outcome)
}

/// `safe_call` of [`Function::from_packed`]: one indirect call, no `dyn` dispatch.
unsafe extern "C" fn packed_safe_call<F>(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32
where
    F: Fn(&[AnyView<'_>]) -> Result<Any>,
{
    // SAFETY: `handle` is a Function made by `from_packed::<F>`; the rest is the ABI's.
    unsafe { run_closure::<F>(handle, args, n, result, |f, _, args| f(args)) }
}

/// The `data` of a typed closure: the int entry first (what [`FUNC_INT_ENTRY`] promises when
/// it is set), the value entry second (as [`FUNC_VALUE_ENTRY`] promises), then the closure.
#[repr(C)]
struct TypedClosure<F> {
    int_entry: Option<IntEntryFn>,
    value_entry: Option<ValueEntryFn>,
    f: F,
}

/// `safe_call` of [`Function::from_typed`].
unsafe extern "C" fn typed_safe_call<Marker, F: TypedFn<Marker>>(
    handle: *mut ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    // SAFETY: `handle` is a Function made by `from_typed::<Marker, F>`; the rest is the ABI's.
    unsafe { run_closure::<TypedClosure<F>>(handle, args, n, result, |c, func, args| c.f.call_packed(func, args)) }
}

/// The [`IntEntryFn`] of [`Function::from_typed`], for closures of int parameters and result:
/// the typed call without cells, under the same panic guard as `typed_safe_call`.
unsafe extern "C" fn typed_int_entry<Marker, F: TypedFn<Marker>>(
    handle: *mut ObjectHeader,
    a0: i64,
    a1: i64,
    a2: i64,
    a3: i64,
) -> IntOutcome {
    // SAFETY: `handle` is a Function made by `from_typed::<Marker, F>` (its `data` is this
    // `TypedClosure`).
    let outcome = catch_panic_registered(|| unsafe {
        let func = &(*(handle as *const crate::arc::ObjectBox<FunctionObj>)).value;
        let closure = &*(func.data as *const TypedClosure<F>);
        closure.f.call_ints(func, [a0, a1, a2, a3])
    });
    match outcome {
        Ok(value) => IntOutcome { value, status: 0 },
        Err(e) => IntOutcome { value: 0, status: failed_call(e) as i64 },
    }
}

/// The [`ValueEntryFn`] of [`Function::from_typed`] (at most [`VALUE_ENTRY_ARGS`]
/// parameters): the typed call on the arguments in registers, under the same panic guard as
/// `typed_safe_call`.
unsafe extern "C" fn typed_value_entry<Marker, F: TypedFn<Marker>>(
    handle: *mut ObjectHeader,
    a0: AnyView<'_>,
    a1: AnyView<'_>,
) -> ValueOutcome {
    // SAFETY: `handle` is a Function made by `from_typed::<Marker, F>` (its `data` is this
    // `TypedClosure`); its arity is `F::ARITY`, so the first that many arguments are its own.
    let outcome = catch_panic_registered(|| unsafe {
        let func = &(*(handle as *const crate::arc::ObjectBox<FunctionObj>)).value;
        let closure = &*(func.data as *const TypedClosure<F>);
        let args = [a0, a1];
        closure.f.call_packed(func, &args[..F::ARITY.min(VALUE_ENTRY_ARGS)])
    });
    match outcome {
        Ok(value) => ValueOutcome::value(value),
        Err(e) => {
            failed_call(e);
            ValueOutcome::raised()
        }
    }
}

pub(crate) unsafe extern "C" fn drop_closure<F>(data: *mut c_void) {
    // SAFETY: `data` is the `Box<F>` leaked in `from_typed` or `from_packed`.
    drop(unsafe { Box::from_raw(data as *mut F) });
}

impl Function {
    /// A function over raw cells (any number of arguments).
    pub fn from_packed<F>(name: &str, f: F) -> Function
    where
        F: Fn(&[AnyView<'_>]) -> Result<Any> + Send + Sync + 'static,
    {
        register_catching_frame(packed_safe_call::<F> as SafeCallFn as usize);
        let data = Box::into_raw(Box::new(f)) as *mut c_void;
        // SAFETY: `packed_safe_call::<F>` reads exactly this payload; `drop_closure::<F>` frees it.
        unsafe { Function::from_raw_parts(packed_safe_call::<F>, data, Some(drop_closure::<F>), name, -1, 0) }
    }

    /// A typed closure: arguments convert by [`FromArg`], the result by [`IntoRet`]; a
    /// mismatch is a TypeError naming the position, the expected and the actual kind.
    /// The closure is called through a `safe_call` made for its type: one indirect call.
    ///
    /// Its signature has the closure's parameter and result types ([`crate::signature::Describe`])
    /// and no parameter names; [`Function::with_params`] names them.
    pub fn from_typed<Marker, F: TypedFn<Marker>>(name: &str, f: F) -> Function {
        register_catching_frame(typed_safe_call::<Marker, F> as SafeCallFn as usize);
        let int_entry = F::INTS.then_some(typed_int_entry::<Marker, F> as IntEntryFn);
        let mut flags = FUNC_ADOPTS_LENT;
        if let Some(entry) = int_entry {
            register_catching_frame(entry as usize);
            flags |= FUNC_INT_ENTRY;
        }
        let value_entry = (F::ARITY <= VALUE_ENTRY_ARGS).then_some(typed_value_entry::<Marker, F> as ValueEntryFn);
        if let Some(entry) = value_entry {
            register_catching_frame(entry as usize);
            flags |= FUNC_VALUE_ENTRY;
        }
        let data = Box::into_raw(Box::new(TypedClosure { int_entry, value_entry, f })) as *mut c_void;
        // SAFETY: `typed_safe_call::<Marker, F>` and the int entry read exactly this payload
        // (the entry first, as `FUNC_INT_ENTRY` says); `drop_closure` frees it.
        let function = unsafe {
            Function::from_raw_parts(
                typed_safe_call::<Marker, F>,
                data,
                Some(drop_closure::<TypedClosure<F>>),
                name,
                F::ARITY as i32,
                flags,
            )
        };
        let signature = Signature::of_types(F::PARAMS, F::RESULT).intern().expect("unnamed signatures are valid");
        function.with_signature(signature)
    }

    /// Build a function from its ABI parts (C functions, Rust closures). `data` is the
    /// Function's from here on, even when it cannot be allocated: then `drop_data(data)` runs
    /// and the MemoryError unwinds ([`crate::alloc::OutOfMemory`]).
    ///
    /// # Safety
    /// `safe_call` follows the call ABI and may run on any thread; `drop_data` frees `data`.
    pub unsafe fn from_raw_parts(
        safe_call: SafeCallFn,
        data: *mut c_void,
        drop_data: Option<DataDropFn>,
        name: &str,
        arity: i32,
        flags: u32,
    ) -> Function {
        // SAFETY: this function's contract, passed on.
        match unsafe { Function::try_from_raw_parts(safe_call, data, drop_data, name, arity, flags) } {
            Ok(f) => f,
            Err(_) => {
                if let Some(drop_data) = drop_data {
                    // SAFETY: the creator's destructor for its own payload, which no Function owns.
                    unsafe { drop_data(data) };
                }
                crate::alloc::raise_out_of_memory(std::mem::size_of::<crate::arc::ObjectBox<FunctionObj>>(), 8)
            }
        }
    }

    /// [`Function::from_raw_parts`], or the MemoryError when the Function cannot be allocated,
    /// in which case `data` stays the caller's (`drop_data` is not run): a frontend releases it
    /// where that is safe (outside its callable registry's lock).
    ///
    /// # Safety
    /// As [`Function::from_raw_parts`].
    pub unsafe fn try_from_raw_parts(
        safe_call: SafeCallFn,
        data: *mut c_void,
        drop_data: Option<DataDropFn>,
        name: &str,
        arity: i32,
        flags: u32,
    ) -> Result<Function> {
        // Made without its destructor, so a failed allocation cannot run it.
        let mut f = crate::error::catch_out_of_memory(|| {
            ObjectArc::new(FunctionObj {
                safe_call,
                flags,
                arity,
                name: Any::str(name),
                doc: Any::none(),
                data,
                drop_data: None,
                signature: std::ptr::null(),
            })
        })?;
        ObjectArc::get_mut(&mut f).expect("a Function just made has one reference").drop_data = drop_data;
        Ok(Function(f))
    }

    /// Attach a signature (only while this is the sole reference, i.e. while building).
    pub fn with_signature(mut self, signature: &'static SignatureInfo) -> Function {
        let f = ObjectArc::get_mut(&mut self.0).expect("with_signature on a shared function");
        f.signature = signature;
        f.flags |= FUNC_SIGNED;
        self
    }

    /// Name the parameters of a typed function (a method's receiver first), in order, keeping
    /// their types: `Function::from_typed("geo.scale", scale).with_params(&["by"])`.
    ///
    /// # Panics
    /// When there are more names than parameters, or a name repeats: a mistake in the source.
    pub fn with_params(self, names: &[&str]) -> Function {
        let signature = self.declared_signature();
        assert!(
            names.len() <= signature.params.len(),
            "{}: {} parameter names for {} parameters",
            self.name(),
            names.len(),
            signature.params.len()
        );
        let interned = signature.named(names).intern().unwrap_or_else(|e| panic!("{}: {e}", self.name()));
        self.with_signature(interned)
    }

    /// Mark the first parameter as a method's receiver (`self`): messages and signatures
    /// leave it out of what the caller writes.
    pub fn as_method(self) -> Function {
        let interned = self.declared_signature().method().intern().unwrap_or_else(|e| panic!("{}: {e}", self.name()));
        self.with_signature(interned)
    }

    /// The signature as a declaration to change ([`Signature`]): the attached one, or untyped
    /// parameters by the declared arity.
    pub fn declared_signature(&self) -> Signature {
        match self.signature() {
            Some(sig) => Signature::from_info(sig),
            None => Signature::of_types(
                &vec![crate::signature::Ty::Any; self.arity().max(0) as usize],
                crate::signature::Ty::Any,
            ),
        }
    }

    /// The signature, when the function has one.
    pub fn signature(&self) -> Option<&'static SignatureInfo> {
        self.0.signature()
    }

    /// Set the docstring (only while this is the sole reference, i.e. while building).
    pub fn with_doc(mut self, doc: &str) -> Function {
        let f = ObjectArc::get_mut(&mut self.0).expect("with_doc on a shared function");
        f.doc = Any::str(doc);
        self
    }

    /// Declare the argument count of a packed function that checks it itself (frontends may
    /// specialise calls by arity).
    pub fn with_arity(mut self, arity: i32) -> Function {
        ObjectArc::get_mut(&mut self.0).expect("with_arity on a shared function").arity = arity;
        self
    }

    /// Mark as a leaf (see [`FUNC_LEAF`]).
    pub fn leaf(mut self) -> Function {
        ObjectArc::get_mut(&mut self.0).expect("leaf on a shared function").flags |= FUNC_LEAF;
        self
    }

    /// Mark as nonblocking: it may call back, on the calling thread only, and waits for no
    /// other thread (see [`FUNC_NONBLOCKING`]).
    pub fn nonblocking(mut self) -> Function {
        ObjectArc::get_mut(&mut self.0).expect("nonblocking on a shared function").flags |= FUNC_NONBLOCKING;
        self
    }

    pub fn name(&self) -> &str {
        self.0.name.view_str()
    }
    pub fn doc(&self) -> &str {
        self.0.doc.view_str()
    }
    pub fn flags(&self) -> u32 {
        self.0.flags
    }
    /// Declared argument count, or -1 when variadic/unknown.
    pub fn arity(&self) -> i32 {
        self.0.arity
    }

    /// Call with borrowed arguments.
    pub fn call(&self, args: &[AnyView<'_>]) -> Result<Any> {
        // SAFETY: `self` keeps the function object alive for the call.
        unsafe { call_function(ObjectArc::as_ptr(&self.0), args) }
    }

    /// Borrow this Function for as long as `self` lives.
    pub fn as_ref(&self) -> FunctionRef<'_> {
        FunctionRef { obj: ObjectArc::as_ptr(&self.0), _borrow: std::marker::PhantomData }
    }

    pub fn as_object_ptr(&self) -> *mut ObjectHeader {
        ObjectArc::as_ptr(&self.0)
    }
}

/// Call the live function object `f` with borrowed arguments.
///
/// # Safety
/// `f` is a live function object (a reference held for the whole call).
#[inline]
unsafe fn call_function(f: *mut ObjectHeader, args: &[AnyView<'_>]) -> Result<Any> {
    let mut result = Any::none();
    // SAFETY: a live function object (the caller's guarantee), `args.len()` cells, a None result cell.
    let rc = unsafe {
        ((*(f as *const crate::arc::ObjectBox<FunctionObj>)).value.safe_call)(
            f,
            args.as_ptr(),
            args.len() as i32,
            &mut result,
        )
    };
    if rc == 0 {
        Ok(result)
    } else {
        Err(take_last_error())
    }
}

/// A Function borrowed from a call's argument for that call: calling it takes no reference.
/// For a callee that calls a Function it is given and does not keep it (pyo3's
/// `&Bound<PyAny>`, nanobind's `nb::callable` by reference); [`FunctionRef::to_owned`] takes
/// one to keep.
#[derive(Clone, Copy)]
pub struct FunctionRef<'a> {
    obj: *mut ObjectHeader,
    _borrow: std::marker::PhantomData<&'a FunctionObj>,
}

impl<'a> FunctionRef<'a> {
    /// The Function an argument view holds, borrowed for the view's life; `None` when it holds
    /// something else. A lent view's reference stays the view's (the callee's argument
    /// handling releases it as for any argument it does not convert).
    pub fn from_view(view: &AnyView<'a>) -> Option<FunctionRef<'a>> {
        if view.type_index() != TypeIndex::FUNCTION {
            return None;
        }
        Some(FunctionRef { obj: view.as_object_ptr()?, _borrow: std::marker::PhantomData })
    }

    /// Call with borrowed arguments.
    pub fn call(&self, args: &[AnyView<'_>]) -> Result<Any> {
        // SAFETY: the view this was borrowed from keeps the function object alive for `'a`.
        unsafe { call_function(self.obj, args) }
    }

    /// A reference of one's own, to keep past the call.
    pub fn to_owned(&self) -> Function {
        // SAFETY: the function object is alive for `'a` (see `call`); the new reference is the
        // one `from_raw` adopts.
        unsafe {
            crate::object::inc_ref(self.obj);
            Function(ObjectArc::from_raw(self.obj))
        }
    }
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<function {}>", self.name())
    }
}

/// A Rust closure usable as a typed function. Implemented for `Fn(A1, ..., An) -> R` with
/// `Ai: FromArg`, `R: IntoRet`, n up to 8.
#[diagnostic::on_unimplemented(
    message = "this closure cannot be a typed tether Function",
    label = "each parameter must convert from an argument (FromArg) and the result into a value (IntoRet)",
    note = "a typed Function takes at most 8 parameters"
)]
pub trait TypedFn<Marker>: Send + Sync + 'static {
    const ARITY: usize;
    /// The parameter types, in order.
    const PARAMS: &'static [Ty];
    const RESULT: Ty;
    /// Every parameter and the result are ints ([`FromArg::INT`], [`IntoRet::INT`]): the
    /// function gets an int entry ([`FUNC_INT_ENTRY`]).
    const INTS: bool;
    /// `func` is the function object itself, read only for error messages.
    fn call_packed(&self, func: &FunctionObj, args: &[AnyView<'_>]) -> Result<Any>;
    /// The call with the first `ARITY` of `args`, for [`TypedFn::INTS`] closures: the errors
    /// `call_packed` gives for those ints (a value out of a parameter's range, the closure's
    /// own), and a result that is an int.
    fn call_ints(&self, func: &FunctionObj, args: [i64; INT_ENTRY_ARGS]) -> Result<i64>;
}

/// "f() takes 2 arguments but 3 were given" (counting what the caller wrote: a method's
/// receiver is left out when `func` has a signature that says it has one).
pub fn arity_error(name: &str, expected: usize, given: usize) -> Error {
    Error::type_error(crate::signature::arity_message(name, None, expected, given))
}

/// A typed call given `args` where it takes `expected`: what was lent is released.
#[cold]
#[inline(never)]
fn arity_mismatch(func: &FunctionObj, expected: usize, args: &[AnyView<'_>]) -> Error {
    args.iter().for_each(AnyView::release_if_lent);
    Error::type_error(crate::signature::arity_message(func.name_str(), func.signature(), expected, args.len()))
}

macro_rules! typed_fn {
    ($n:literal; $($a:ident $i:tt),*) => {
        impl<Func, Ret, $($a),*> TypedFn<(Ret, $($a,)*)> for Func
        where
            Func: Fn($($a),*) -> Ret + Send + Sync + 'static,
            Ret: IntoRet,
            $($a: FromArg,)*
        {
            const ARITY: usize = $n;
            const PARAMS: &'static [Ty] = &[$(<$a as FromArg>::TYPE),*];
            const RESULT: Ty = <Ret as IntoRet>::TYPE;
            const INTS: bool = $n < INT_ENTRY_ARGS + 1 $(&& <$a as FromArg>::INT)* && <Ret as IntoRet>::INT;
            #[allow(unused_variables, non_snake_case)]
            #[inline(always)]
            fn call_ints(&self, func: &FunctionObj, args: [i64; INT_ENTRY_ARGS]) -> Result<i64> {
                $(
                    let view = AnyView::int(args.get($i).copied().unwrap_or(0));
                    let $a = <$a as FromArg>::from_arg(&view).ok_or_else(|| arg_error::<$a>(func, $i, &view))?;
                )*
                let value = self($($a),*).into_ret()?;
                value.view().as_int().ok_or_else(|| Error::type_error(format!("{}() returned a non-int from its int entry", func.name_str())))
            }
            #[allow(unused_variables, non_snake_case, irrefutable_let_patterns)]
            #[inline(always)]
            fn call_packed(&self, func: &FunctionObj, args: &[AnyView<'_>]) -> Result<Any> {
                /// The typed call with any parameters: every argument is converted before the
                /// first error is reported, so each lent argument is consumed exactly once (see
                /// `FUNC_ADOPTS_LENT`); the branch on `ADOPTS_LENT` is decided at compile time.
                #[allow(unused_variables, non_snake_case)]
                #[inline(always)]
                fn general<Func, Ret, $($a),*>(f: &Func, func: &FunctionObj, args: &[AnyView<'_>]) -> Result<Any>
                where
                    Func: Fn($($a),*) -> Ret,
                    Ret: IntoRet,
                    $($a: FromArg,)*
                {
                    $(
                        let $a = <$a as FromArg>::from_arg(&args[$i])
                            .ok_or_else(|| arg_error::<$a>(func, $i, &args[$i]));
                        if !<$a as FromArg>::ADOPTS_LENT && (<$a as FromArg>::FROM_OBJECTS || $a.is_err()) {
                            args[$i].release_if_lent();
                        }
                    )*
                    f($($a?),*).into_ret()
                }

                /// [`general`] for a mismatch of plain parameters, out of line.
                #[cold]
                #[inline(never)]
                fn general_cold<Func, Ret, $($a),*>(f: &Func, func: &FunctionObj, args: &[AnyView<'_>]) -> Result<Any>
                where
                    Func: Fn($($a),*) -> Ret,
                    Ret: IntoRet,
                    $($a: FromArg,)*
                {
                    general(f, func, args)
                }

                if args.len() != $n {
                    return Err(arity_mismatch(func, $n, args));
                }
                // Parameters that only read their argument (numbers, bools): convert them all,
                // then call. On a mismatch the general path converts again, out of line, and
                // words the error (converting twice changes nothing). The successful path then
                // makes no call of its own, so it saves no registers (`add3`'s typed call took
                // 46 instructions with the general path inline).
                if true $(&& !<$a as FromArg>::FROM_OBJECTS && !<$a as FromArg>::ADOPTS_LENT)* {
                    if let ($(Some($a),)*) = ($(<$a as FromArg>::from_arg(&args[$i]),)*) {
                        return self($($a),*).into_ret();
                    }
                    return general_cold(self, func, args);
                }
                general(self, func, args)
            }
        }
    };
}

typed_fn!(0;);
typed_fn!(1; A0 0);
typed_fn!(2; A0 0, A1 1);
typed_fn!(3; A0 0, A1 1, A2 2);
typed_fn!(4; A0 0, A1 1, A2 2, A3 3);
typed_fn!(5; A0 0, A1 1, A2 2, A3 3, A4 4);
typed_fn!(6; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5);
typed_fn!(7; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6);
typed_fn!(8; A0 0, A1 1, A2 2, A3 3, A4 4, A5 5, A6 6, A7 7);

// ---- the global function registry -----------------------------------------------------

static GLOBALS: RwLock<BTreeMap<String, Function>> = RwLock::new(BTreeMap::new());

/// Register `f` under `name`. Fails if the name is taken, unless `allow_override`.
pub fn register_global(name: &str, f: Function, allow_override: bool) -> Result<()> {
    if let Some(api) = plugin::host_api() {
        let name = crate::plugin::ByteSlice::of(name);
        let raw = crate::arc::ObjectRef::from(f.0).into_raw();
        // SAFETY: host table entry; it takes a new reference of its own, ours is dropped below.
        let rc = unsafe { (api.register_global)(name, raw, allow_override as i32) };
        // SAFETY: we still own the reference `raw` came from.
        drop(unsafe { crate::arc::ObjectRef::from_raw(raw) });
        return if rc == 0 { Ok(()) } else { Err(take_last_error()) };
    }
    crate::init();
    let mut map = GLOBALS.write().unwrap_or_else(|e| e.into_inner());
    if !allow_override && map.contains_key(name) {
        return Err(Error::value(format!("global function {name:?} is already registered")));
    }
    map.insert(name.to_string(), f);
    Ok(())
}

/// The function registered under `name`.
pub fn get_global(name: &str) -> Option<Function> {
    if let Some(api) = plugin::host_api() {
        // SAFETY: host table entry; returns an owned reference or null.
        let raw = unsafe { (api.get_global)(crate::plugin::ByteSlice::of(name)) };
        // SAFETY: an owned reference to a Function.
        return (!raw.is_null()).then(|| Function(unsafe { ObjectArc::from_raw(raw) }));
    }
    crate::init();
    GLOBALS.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
}

/// Every registered name, sorted.
pub fn list_globals() -> Vec<String> {
    if let Some(api) = plugin::host_api() {
        // SAFETY: the host's entry point; it returns an owned Array of Str (or null).
        let names = unsafe { (api.list_globals)() };
        if names.is_null() {
            return Vec::new();
        }
        // SAFETY: an owned reference from the host.
        let names = unsafe { crate::arc::ObjectRef::from_raw(names) };
        let Some(array) = names.downcast_ref::<crate::containers::ArrayObj>() else { return Vec::new() };
        return array.items().iter().filter_map(|a| a.view().as_str().map(str::to_string)).collect();
    }
    crate::init();
    GLOBALS.read().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
}

/// Remove `name`; true when it was there.
pub fn remove_global(name: &str) -> bool {
    crate::init();
    GLOBALS.write().unwrap_or_else(|e| e.into_inner()).remove(name).is_some()
}

/// Convert a typed argument outside a closure (shared helper for hand-written packed fns).
pub fn convert_arg<T: FromArg>(func: &str, position: usize, v: &AnyView<'_>) -> Result<T> {
    crate::convert::arg(func, position, v)
}
