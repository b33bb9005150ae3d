//! Entry points for `java.lang.foreign` critical downcalls (JDK 22+; `dev.tether.ffi.Critical`).
//!
//! A critical downcall (`Linker.Option.critical`) skips the JNI transition: the thread stays in
//! the Java state, so the callee must be short and must not call into the JVM. That is what
//! `FUNC_LEAF` promises ("neither blocks nor calls back into any language"), so Java calls a
//! leaf Function through this entry when its argument is plain (a wrapper, an int, null; see
//! `natives::call_plain`), and through the JNI natives otherwise.
//!
//! The entry takes and returns `long`s only: no JNI, no local references. A result that is the
//! wrapper argument ([`ARGUMENT_RESULT`]) comes back as such; anything else, and every error,
//! is parked for `Native.takePending` (JNI, after the call).
//!
//! Two kinds of call go this way: `call(x)` of one plain argument (measured on the AMD EPYC
//! under Temurin 25, `echo(x)` took 11.1 ns against 14.5-15.4 through JNI), and `callLong` of
//! 1-3 ints to a Function with an int entry (`FUNC_INT_ENTRY`: a typed closure of ints, called
//! with no cells at all). Int calls through cells and `safe_call` read 9.6-10.0 ns here against
//! JNI's 9.0-9.2 (the thread's mark cost more than the transition saved), so other calls of
//! ints stay on JNI.
//!
//! A leaf that breaks its promise cannot enter the JVM from here: the thread is marked for the
//! call ([`in_marked_call`]), and `attach::with_env`, through which native code reaches the
//! JVM, refuses with a typed error instead. (Nested marks cannot happen: no Java code, so no
//! other downcall, runs inside one.)
//!
//! JDKs without critical downcalls take the same entry through JNI (`Native.leaf1`, whose
//! parameters and result are all `long`s, so its stub handles no object references), and JNI's
//! `call1` the same marked path ([`leaf_call1`]), so a leaf that breaks its promise is refused
//! on every JDK alike. The common `echo(x)` runs inline ([`lent_call1`]): the spare lent to the
//! Function's value entry (`FUNC_VALUE_ENTRY`), the argument and result in registers.

use jni_sys::jlong;
use tether_core::function::{call_value_entry, FUNC_ADOPTS_LENT, FUNC_LEAF, FUNC_VALUE_ENTRY};
use tether_core::object::ObjectHeader;
use tether_core::thread_spares::SpareCell;
use tether_core::{Any, ObjectRef, Result};

use crate::natives::{self, PENDING_RESULT};
use crate::tie;

/// What `tether_java_critical_call1` returns when the result is its wrapper argument; Java
/// reads it as `Critical.ARGUMENT` (`Native.constant("ARGUMENT_RESULT")`).
pub const ARGUMENT_RESULT: jlong = PENDING_RESULT + 1;

/// What the entry returns, having done nothing, for a call it does not take (not a leaf, an
/// argument that is not plain, another count than the arity, a thread with no spare cell to
/// mark): Java makes it through JNI, which
/// words its errors and fills in defaults (`Native.constant("FALLBACK_RESULT")`).
pub const FALLBACK_RESULT: jlong = PENDING_RESULT + 2;

/// Is this thread inside a marked leaf call (a critical downcall, or JNI's `call1` of a leaf),
/// where it must not call into the JVM? The mark is kept in the thread's spare cell
/// (`SpareCell::mark`), found without a thread-local access: a thread-local's
/// `__tls_get_addr` cost the `add3` downcall ~2 ns.
pub fn in_marked_call() -> bool {
    tie::claimed_spare_cell().is_some_and(|cell| cell.marked())
}

/// Run `call` with the thread marked (its cell `cell`), a panic as its error.
#[inline(always)]
fn marked<T>(cell: &SpareCell<'static>, call: impl FnOnce() -> Result<T>) -> Result<T> {
    cell.mark(true);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(call));
    cell.mark(false);
    outcome.unwrap_or_else(|panic| Err(tether_core::error::panic_error(panic)))
}

/// What [`lent_call1`] did.
pub(crate) enum Lent1 {
    /// Nothing: a call it does not take.
    NotTaken,
    /// The call returned its wrapper argument (its +1 is the thread's spare again).
    Argument,
    /// The call's other value, or its error.
    Outcome(Result<Any>),
}

/// The common leaf call, `echo(x)`: leaf `func` with one wrapper argument (`word`:
/// `Marshal.fastWord`, `bits`: `Marshal.fastBits`) of which the thread, which has its spare
/// cell already, kept a spare: the spare is lent to the Function's value entry
/// (`FUNC_VALUE_ENTRY`), the argument and result in registers, with no argument array, no
/// result cell and no panic frame (the entry catches its own panics), and the thread marked
/// around that call alone. Anything else is [`Lent1::NotTaken`], having done nothing, for
/// [`leaf_call1`] out of line: so the entries that take this inline save only the registers
/// it needs.
///
/// # Safety
/// Java keeps the Function and the argument's wrapper, whose word it passed, reachable for the
/// call.
#[inline(always)]
pub(crate) unsafe fn lent_call1(func: jlong, word: jlong, bits: jlong) -> Lent1 {
    // SAFETY: the caller keeps the Function reachable.
    let Some(f) = (unsafe { natives::function_if_any(func) }) else { return Lent1::NotTaken };
    // One test of the three flags (a leaf, adopting lent views, with a value entry).
    const LENT_LEAF: u32 = FUNC_LEAF | FUNC_ADOPTS_LENT | FUNC_VALUE_ENTRY;
    if f.flags & LENT_LEAF != LENT_LEAF || f.arity != 1 {
        return Lent1::NotTaken;
    }
    let Some((type_index, generation)) = tie::spare_word(word) else { return Lent1::NotTaken };
    let Some(entry) = f.value_entry() else { return Lent1::NotTaken };
    let Some(cell) = tie::claimed_spare_cell() else { return Lent1::NotTaken };
    let obj = bits as *mut ObjectHeader;
    // SAFETY: Java keeps the wrapper reachable for the call and passed its word, which gave
    // `type_index` and `generation`; `f` adopts lent views.
    let Some(lent) = (unsafe { tie::lend_word_spare(&cell, obj, type_index, generation) }) else {
        return Lent1::NotTaken;
    };
    cell.mark(true);
    // SAFETY: `f`'s value entry, of arity 1, given its one (lent) argument.
    let outcome = unsafe { call_value_entry(entry, func as *mut ObjectHeader, [lent]) };
    cell.mark(false);
    let result = match outcome {
        Ok(result) if result.view().as_object_ptr() == Some(obj) => result,
        other => return Lent1::Outcome(other),
    };
    // SAFETY: the result's strong reference, moved out of `result`, which is forgotten.
    let obj = unsafe { ObjectRef::from_raw(obj) };
    std::mem::forget(result);
    // SAFETY: Java keeps the wrapper reachable for the call; `cell` is this thread's, the
    // spare was taken from it above, and the thread, marked, ran no other entry since.
    unsafe { cell.restore_untouched(obj) };
    Lent1::Argument
}

/// A call of leaf `func` with one plain argument (`word`: `Marshal.fastWord`, `bits`:
/// `Marshal.fastBits`), with the thread marked: the lent spare goes back with one store, and
/// a leaf that breaks its promise cannot reach the JVM. `None`, having done nothing, for a
/// call this does not take (not a leaf, another arity, an argument that is not plain, a
/// thread with no spare cell to mark). What [`lent_call1`] does not take; the call itself out
/// of line, so a call that is no leaf's (JNI's `call1` of `call(cb)`) pays two compares.
///
/// # Safety
/// As [`lent_call1`].
#[inline(always)]
pub(crate) unsafe fn leaf_call1(func: jlong, word: jlong, bits: jlong) -> Option<Result<natives::Plain>> {
    // SAFETY: the caller keeps the Function reachable.
    let f = unsafe { leaf_at(func) }?;
    if f.arity != 1 || !natives::is_plain(word) {
        return None;
    }
    // SAFETY: the caller's guarantee; `f` is the leaf at `func`, of arity 1, the word plain.
    unsafe { marked_leaf_call1(func, f, word, bits) }
}

/// [`leaf_call1`]'s call: the thread's cell found or claimed, marked for `call_plain`.
///
/// # Safety
/// As [`lent_call1`]; `f` is the leaf at `func`, of arity 1, and `word` is plain.
#[inline(never)]
unsafe fn marked_leaf_call1(
    func: jlong,
    f: &tether_core::function::FunctionObj,
    word: jlong,
    bits: jlong,
) -> Option<Result<natives::Plain>> {
    let cell = tie::spare_cell()?;
    // SAFETY: this function's contract; the count is the arity; `cell` is this thread's,
    // marked for the call.
    Some(marked(&cell, || unsafe { natives::call_plain(func, f, &[(word, bits)], &cell) }))
}

/// The Function at `func` if it is a leaf (Java checks the flag before it takes this path;
/// this keeps a wrong handle from running here).
///
/// # Safety
/// As `natives::function_at`.
#[inline(always)]
unsafe fn leaf_at<'a>(func: jlong) -> Option<&'a tether_core::function::FunctionObj> {
    // SAFETY: this function's contract.
    unsafe { natives::function_if_any(func) }.filter(|f| f.flags & FUNC_LEAF != 0)
}

/// `Critical.call1`: a leaf Function with one plain argument (`word`: `Marshal.fastWord`,
/// `bits`: `Marshal.fastBits`). [`ARGUMENT_RESULT`] when the result is that wrapper argument,
/// [`FALLBACK_RESULT`] for a call this does not take, else [`PENDING_RESULT`] with the result
/// or error parked.
#[no_mangle]
pub extern "C" fn tether_java_critical_call1(func: jlong, word: jlong, bits: jlong) -> jlong {
    // SAFETY: Java keeps the Function and the wrapper whose word it passed reachable for the call.
    unsafe { leaf_call1_answer(func, word, bits) }
}

/// [`tether_java_critical_call1`]'s body, which JNI's `Native.leaf1` shares: its answer.
///
/// # Safety
/// As [`lent_call1`].
#[inline(always)]
pub(crate) unsafe fn leaf_call1_answer(func: jlong, word: jlong, bits: jlong) -> jlong {
    // SAFETY: this function's contract.
    match unsafe { lent_call1(func, word, bits) } {
        Lent1::Argument => ARGUMENT_RESULT,
        Lent1::Outcome(outcome) => natives::park(outcome),
        // SAFETY: Java keeps the Function and the wrapper reachable for the call.
        Lent1::NotTaken => unsafe { critical_call1_general(func, word, bits) },
    }
}

/// [`tether_java_critical_call1`] of a call [`lent_call1`] does not take.
///
/// # Safety
/// As [`leaf_call1`].
#[inline(never)]
unsafe fn critical_call1_general(func: jlong, word: jlong, bits: jlong) -> jlong {
    // SAFETY: this function's contract.
    match unsafe { leaf_call1(func, word, bits) } {
        None => FALLBACK_RESULT,
        Some(Ok(natives::Plain::Argument(i))) => {
            debug_assert_eq!(i, 0, "one argument");
            ARGUMENT_RESULT
        }
        Some(Ok(natives::Plain::Value(result))) => natives::park(Ok(result)),
        Some(Err(e)) => natives::park(Err(e)),
    }
}

/// `Critical.ints1..3`: `callLong` of a leaf with an int entry (`FUNC_INT_ENTRY`) and arity
/// N. The result as it is, unless it is one of this entry's answers ([`PENDING_RESULT`] to
/// [`FALLBACK_RESULT`]): then it is parked, as every error is, and [`PENDING_RESULT`] returned;
/// [`FALLBACK_RESULT`] for a call this does not take.
#[inline(always)]
fn critical_ints<const N: usize>(func: jlong, args: [i64; N]) -> jlong {
    match tie::claimed_spare_cell() {
        Some(cell) => marked_ints(func, args, &cell),
        None => {
            let at = |i: usize| args.get(i).copied().unwrap_or(0);
            critical_ints_claiming::<N>(func, at(0), at(1), at(2))
        }
    }
}

/// [`critical_ints`] on a thread that has no spare cell yet: it claims one (or the call falls
/// back). Out of line, so the common case keeps its arguments in registers across no call;
/// they come as scalars (the first N of `a0..a2`), which an array of three would not.
#[inline(never)]
fn critical_ints_claiming<const N: usize>(func: jlong, a0: i64, a1: i64, a2: i64) -> jlong {
    let args: [i64; N] = std::array::from_fn(|i| [a0, a1, a2][i]);
    match tie::spare_cell() {
        Some(cell) => marked_ints(func, args, &cell),
        None => FALLBACK_RESULT,
    }
}

/// [`critical_ints`] with the thread's cell (`cell`) to mark.
#[inline(always)]
fn marked_ints<const N: usize>(func: jlong, args: [i64; N], cell: &SpareCell<'static>) -> jlong {
    // SAFETY: Java keeps the Function reachable for the call.
    let Some(f) = (unsafe { leaf_at(func) }) else { return FALLBACK_RESULT };
    if f.arity != N as i32 {
        return FALLBACK_RESULT;
    }
    let Some(entry) = f.int_entry() else { return FALLBACK_RESULT };
    cell.mark(true);
    // SAFETY: a live Function with an int entry, given its arity's ints; the entry catches
    // its own panics.
    let called =
        unsafe { tether_core::function::call_int_entry(entry, func as *mut tether_core::object::ObjectHeader, args) };
    cell.mark(false);
    match called {
        Ok(value) if !(PENDING_RESULT..=FALLBACK_RESULT).contains(&value) => value,
        outcome => natives::park(outcome.map(Any::int)),
    }
}

/// `Critical.ints1`: see [`critical_ints`].
#[no_mangle]
pub extern "C" fn tether_java_critical_ints1(func: jlong, a: jlong) -> jlong {
    critical_ints(func, [a])
}

/// `Critical.ints2`: see [`critical_ints`].
#[no_mangle]
pub extern "C" fn tether_java_critical_ints2(func: jlong, a: jlong, b: jlong) -> jlong {
    critical_ints(func, [a, b])
}

/// `Critical.ints3`: see [`critical_ints`].
#[no_mangle]
pub extern "C" fn tether_java_critical_ints3(func: jlong, a: jlong, b: jlong, c: jlong) -> jlong {
    critical_ints(func, [a, b, c])
}
