//! Identity tying for the JVM: the core's protocol (`tether_core::boundary`) with a host
//! whose slot word is a JNI weak global reference to the canonical wrapper (shifted left by
//! two, since HotSpot tags weak references in bit 0 and the core reserves bits 0 and 1).
//!
//! The wrapper owns +1 on the native object. Its Cleaner action (or `close()`) calls
//! [`release`] with the handle and the generation it was made for; the core clears the slot
//! only if that generation still owns it, and takes back the spare references calling threads
//! kept for that wrapper (`Frontend::result_argument`, [`lend_spare`]; `tether_core::thread_spares`).

use jni_sys::{jobject, jvalue};
use tether_core::boundary::{Frontend, Previous, TieHost};
use tether_core::object::ObjectHeader;
use tether_core::thread_spares::{SpareCell, ThreadSpares};
use tether_core::{AnyView, Error, ObjectRef, Result};

use crate::jenv::Env;
use crate::{classes, convert};

/// Spare references kept per calling thread (see `tether_core::thread_spares`).
static SPARES: ThreadSpares = ThreadSpares::new();
/// Every object's one Java wrapper is tied here (a process has one JVM).
pub static FRONTEND: Frontend<JavaHost> = Frontend::with_thread_spares(&SPARES);

/// A wrapper's *word* (Java's `NativeRef` describes it; Java keeps it in the wrapper and passes
/// it as the kind of a call argument, `Marshal.fastWord`): bits 0-7 `KIND_OBJECT`, 8-23 the
/// object's type index (never 0: object types start at `TypeIndex::OBJECT`; a plain kind has
/// none, so an untyped `KIND_OBJECT` means "read the header"), bit 24 [`WORD_SPARES`], bit 25
/// [`WORD_UNTRACKED`], bits 32-63 the generation the wrapper was tied with. So a call builds an
/// object argument and finds the thread's spare for it without reading the object's header or
/// slot.
pub const WORD_TYPE_SHIFT: u32 = 8;
pub const WORD_TYPE_MASK: i64 = 0xffff;
/// Set when the object has this frontend's prefix slot (`Frontend::generation_of` finds a
/// generation): calls may keep and lend spares for its wrapper, as `result_argument` would.
pub const WORD_SPARES: i64 = 1 << 24;
/// Set on a wrapper `TetherType.construct` made for an object nothing else references: its
/// slot holds [`UNTRACKED_SLOT`] instead of a weak global reference (a fifth of a
/// construction's time, and work for every collection), and Java calls `Native.track`
/// before the wrapper first hands its handle to native code (`TetherInstance.handle()`),
/// which is the only way native code can come to hold the object and return it.
pub const WORD_UNTRACKED: i64 = 1 << 25;
/// The slot word of an untracked wrapper: nonzero with bits 0 and 1 clear, as a wrapper word
/// must be, and never an encoded weak reference (which would decode to the address 1).
const UNTRACKED_SLOT: usize = 4;
pub const WORD_GENERATION_SHIFT: u32 = 32;

/// The word of the wrapper being tied to `obj` with `generation` (see [`WORD_SPARES`]).
fn wrapper_word(obj: &ObjectRef, generation: u64) -> i64 {
    // SAFETY: `obj` is live (we hold a reference).
    let spares = unsafe { FRONTEND.generation_of(obj.as_ptr()) }.is_some();
    i64::from(convert::KIND_OBJECT)
        | (i64::from(obj.type_index()) & WORD_TYPE_MASK) << WORD_TYPE_SHIFT
        | if spares { WORD_SPARES } else { 0 }
        | ((generation & 0xffff_ffff) as i64) << WORD_GENERATION_SHIFT
}

/// The kind a call native's kind word names (`KIND_OBJECT` for a wrapper's word).
#[inline(always)]
pub fn word_kind(word: i64) -> i32 {
    (word & 0xff) as i32
}

/// The generation a wrapper's word carries (the low 32 bits of the one it was tied with).
#[inline(always)]
fn word_generation(word: i64) -> u64 {
    (word as u64) >> WORD_GENERATION_SHIFT
}

/// The type index a wrapper's word carries; 0 for a plain kind (then read the header).
#[inline(always)]
fn word_type(word: i64) -> i32 {
    ((word >> WORD_TYPE_SHIFT) & WORD_TYPE_MASK) as i32
}

/// What a wrapper's word says about spares for its object.
#[derive(Clone, Copy)]
enum WordSpares {
    /// Spares are kept for the wrapper of this generation.
    Generation(u64),
    /// None are (the object has no prefix slot of this frontend).
    Never,
    /// A plain `KIND_OBJECT`: look at the object.
    Unknown,
}

#[inline(always)]
fn word_spares(word: i64) -> WordSpares {
    if word_type(word) == 0 {
        WordSpares::Unknown
    } else if word & WORD_SPARES != 0 {
        WordSpares::Generation(word_generation(word))
    } else {
        WordSpares::Never
    }
}

/// The argument view of the object at `obj` that Java passed with `word` (its wrapper's, or a
/// plain `KIND_OBJECT`): a wrapper's word gives the type index, so the header is not read.
///
/// # Safety
/// `obj` is live for `'a` (its wrapper is reachable for the call), and a typed `word` is the
/// word native code made when it tied `obj` to that wrapper.
#[inline(always)]
pub unsafe fn object_argument<'a>(obj: *mut ObjectHeader, word: i64) -> AnyView<'a> {
    let type_index = word_type(word);
    if type_index == 0 {
        // SAFETY: `obj` is live for `'a` (this function's contract).
        return unsafe { AnyView::from_object_ptr(obj) };
    }
    // SAFETY: `obj` is live (this function's contract).
    debug_assert_eq!(unsafe { (*obj).type_index }, type_index, "a wrapper's word names its object's type");
    // SAFETY: `obj` is live for `'a` and of `type_index`: the word was made from its header.
    unsafe { AnyView::from_object_ptr_of_type(obj, type_index) }
}

fn encode(weak: jobject) -> usize {
    (weak as usize) << 2
}

/// Delete the weak global reference a slot word holds (none for [`UNTRACKED_SLOT`]).
fn delete_slot_reference(env: Env, word: usize) {
    if word != UNTRACKED_SLOT {
        env.delete_weak_global_ref(decode(word));
    }
}

fn decode(word: usize) -> jobject {
    (word >> 2) as jobject
}

/// Side-table entries currently held (objects without this frontend's prefix).
pub fn side_entries() -> usize {
    FRONTEND.side_entries()
}

/// How Java wrappers are made and revived, for the call that made the host (see `to_wrapper`).
pub struct JavaHost {
    /// The calling thread's env (raw: a host lives in a static domain's type, `Env`'s brand
    /// is the one call's).
    raw_env: *mut jni_sys::JNIEnv,
    /// A wrapper Java made (`new Scene("world")`, a generated class) to become the canonical
    /// wrapper of the object being returned, instead of one `Wrappers.create` would make;
    /// null for every other return.
    adopt: jobject,
    /// With `adopt`: that wrapper is a `TetherInstance` Java made not tied yet (a
    /// `TetherType.construct` of a type without a generated class). `create` writes its
    /// handle and word instead of calling `Wrappers.adopt`; Java registers its Cleaner once
    /// the call returns that wrapper.
    preset: bool,
    /// With `preset`: the object was held only by the reference being returned when the
    /// return began (before the tie's own references), so its wrapper may start untracked
    /// ([`WORD_UNTRACKED`]).
    sole: bool,
}

impl JavaHost {
    fn env(&self) -> Env<'_> {
        // SAFETY: a JavaHost is made only by `to_wrapper` from the live env of its call and is
        // dropped before that call returns.
        unsafe { Env::from_raw(self.raw_env) }
    }
}

// SAFETY: `revive` returns a strong (local) reference only when the weak reference still
// resolves, i.e. the wrapper is alive; `create` returns the encoded weak reference of the
// wrapper it made or was given (bits 0 and 1 clear after the shift), and that wrapper owns `obj`.
unsafe impl TieHost for JavaHost {
    type Handle = jobject;
    type Error = Error;
    /// Nothing: `Wrappers.create` picks the class from the type index.
    type Prepared = ();

    unsafe fn revive(&self, word: usize) -> Option<jobject> {
        if word == UNTRACKED_SLOT {
            // Java tracks a wrapper before it hands its object to native code, so no native
            // code can hold the object to return it: reaching this is a bug in that rule.
            debug_assert!(false, "an untracked wrapper's object came back from native code");
            return None;
        }
        let local = self.env().new_local_ref(decode(word));
        (!local.is_null()).then_some(local)
    }

    /// A Java callable coming home: the very object Java passed (a local reference).
    fn callable_of(&self, func: &ObjectRef) -> Result<Option<jobject>> {
        Ok(crate::callback::original_callable(func).map(|global| self.env().new_local_ref(global)))
    }

    /// A Java host value goes back as the object itself.
    fn host_value_of(&self, value: &tether_core::host_value::HostValueObj) -> Result<Option<jobject>> {
        crate::host_value::value_of(self.env(), value).map(Some)
    }

    fn prepare(&self, _obj: &ObjectRef) -> Result<()> {
        Ok(())
    }

    unsafe fn create(&self, _: &(), obj: ObjectRef, previous: Previous, generation: u64) -> Result<(jobject, usize)> {
        if let Previous::Dying(word) | Previous::Inactive(word) = previous {
            // The slot word was ours to dispose of: the dying wrapper's weak reference.
            delete_slot_reference(self.env(), word);
        }
        let c = classes::get();
        let word = wrapper_word(&obj, generation);
        if self.preset {
            // An object only this +1 holds can reach native code again only through the
            // wrapper (a prefix slot, so a generation to rebind with): its weak reference waits
            // for `track`.
            let untracked = self.sole && word & WORD_SPARES != 0;
            let (word, slot_word) = if untracked {
                (word | WORD_UNTRACKED, UNTRACKED_SLOT)
            } else {
                // The weak reference first: until the fields are written, a failure leaves the
                // wrapper unbound (Java drops it) and the +1 is still ours to drop.
                let weak = self.env().new_weak_global_ref(self.adopt);
                if weak.is_null() {
                    self.env().clear_exception();
                    drop(obj);
                    return Err(Error::runtime("out of JNI weak references"));
                }
                (word, encode(weak))
            };
            let raw = obj.into_raw();
            // SAFETY: `adopt` is a live `TetherInstance` (a local reference of the calling
            // native method) and both fields are its `long`s, resolved at init.
            unsafe {
                self.env().set_long_field(self.adopt, c.instance_handle, raw as i64);
                self.env().set_long_field(self.adopt, c.instance_word, word);
            }
            // The wrapper owns the +1 from here; Java registers its Cleaner when this returns.
            return Ok((self.adopt, slot_word));
        }
        let raw = obj.into_raw();
        let wrapper = if self.adopt.is_null() {
            let args = [jvalue { j: raw as i64 }, jvalue { j: word }];
            // SAFETY: `Wrappers.create(long, long) -> Object`, resolved at init.
            unsafe { self.env().call_static_object(c.wrappers, c.wrappers_create, &args) }
        } else {
            let args = [jvalue { l: self.adopt }, jvalue { j: raw as i64 }, jvalue { j: word }];
            // SAFETY: `Wrappers.adopt(Object, long, long) -> Object`, resolved at init;
            // `adopt` is a live local reference of the calling native method.
            unsafe { self.env().call_static_object(c.wrappers, c.wrappers_adopt, &args) }
        };
        if wrapper.is_null() || self.env().exception_check() {
            self.env().clear_exception();
            // SAFETY: no wrapper took the reference; it is still ours.
            drop(unsafe { ObjectRef::from_raw(raw) });
            return Err(Error::runtime("cannot create a Java wrapper for a native object"));
        }
        let weak = self.env().new_weak_global_ref(wrapper);
        if weak.is_null() {
            self.env().clear_exception();
            // The wrapper owns the reference; its Cleaner releases it (its generation never
            // reaches the slot, so the release leaves the slot alone).
            return Err(Error::runtime("out of JNI weak references"));
        }
        Ok((wrapper, encode(weak)))
    }
}

/// Return `obj` (an owned +1) to Java as its canonical wrapper (a local reference).
pub fn to_wrapper(env: Env, obj: ObjectRef) -> Result<jobject> {
    FRONTEND
        .return_object(
            &JavaHost { raw_env: env.as_raw(), adopt: std::ptr::null_mut(), preset: false, sole: false },
            obj,
        )
        .map(|returned| returned.into_handle())
}

/// Return `obj` (an owned +1) to Java with `wrapper` (a generated class's instance under
/// construction, a live local reference) as its canonical wrapper when it has none yet; an
/// object that has a wrapper already comes back as that one (the caller sees the difference).
pub fn to_wrapper_adopting(env: Env, obj: ObjectRef, wrapper: jobject) -> Result<jobject> {
    FRONTEND
        .return_object(&JavaHost { raw_env: env.as_raw(), adopt: wrapper, preset: false, sole: false }, obj)
        .map(|returned| returned.into_handle())
}

/// Return `obj` (an owned +1, a new object of a type without a generated class) to Java with
/// `wrapper`, a `TetherInstance` Java made before the call and not tied yet, as its canonical
/// wrapper when it has none yet: its handle and word are written into it (no upcall); Java
/// registers its Cleaner (`TetherInstance.bind`) when it gets `wrapper` back. An object that has a
/// wrapper already comes back as that one (`wrapper` stays unbound).
pub fn to_wrapper_preset(env: Env, obj: ObjectRef, wrapper: jobject) -> Result<jobject> {
    // Before the tie takes references of its own: no other holder means none can appear
    // until the wrapper hands the object out.
    let sole = obj.header().held_only_once();
    FRONTEND
        .return_object(&JavaHost { raw_env: env.as_raw(), adopt: wrapper, preset: true, sole }, obj)
        .map(|returned| returned.into_handle())
}

/// A wrapper of `generation` lets go of `handle`: untie it if it still owns the slot, delete
/// the weak reference taken out of the slot, then drop the wrapper's +1.
///
/// # Safety
/// `handle` is a live object the wrapper holds +1 on, released exactly once.
pub unsafe fn release(env: Env, handle: *mut ObjectHeader, generation: u64) {
    // SAFETY: the wrapper is closed or unreachable, so every call that held it happened before
    // (`close()` must not race a use, documented in docs/java.md); its +1 is released once
    // (the Cleaner runs its action once).
    if let Some(word) = unsafe { FRONTEND.release(handle, generation, 0) } {
        delete_slot_reference(env, word);
    }
}

/// `Native.track`: give the untracked `wrapper` (a live local reference) of `handle` and
/// `word` its weak global reference in the slot, unless another thread did first; returns the
/// word without [`WORD_UNTRACKED`] for Java to keep.
///
/// # Safety
/// `wrapper` is the reachable, not closed wrapper whose handle and word these are.
pub unsafe fn track(env: Env, wrapper: jobject, handle: *mut ObjectHeader, word: i64) -> Result<i64> {
    let weak = env.new_weak_global_ref(wrapper);
    if weak.is_null() {
        env.clear_exception();
        return Err(Error::runtime("out of JNI weak references"));
    }
    // SAFETY: the wrapper holds +1 on `handle` (this function's contract).
    if !unsafe { FRONTEND.rebind(handle, word_generation(word), UNTRACKED_SLOT, encode(weak)) } {
        // Another thread tracked it first (or the wrapper was closed meanwhile).
        env.delete_weak_global_ref(weak);
    }
    Ok(word & !WORD_UNTRACKED)
}

/// The calling thread's cell of spare references.
#[inline(always)]
pub fn spare_cell() -> Option<SpareCell<'static>> {
    SPARES.cell()
}

/// [`spare_cell`] without claiming one for a thread that has none (a native thread).
#[inline(always)]
pub fn claimed_spare_cell() -> Option<SpareCell<'static>> {
    SPARES.claimed_cell()
}

/// The generation to keep or lend spares of `obj`'s wrapper under, which Java passed with
/// `word`; `None` when no spares are kept for it.
///
/// # Safety
/// As [`object_argument`].
#[inline(always)]
unsafe fn spare_generation(obj: *mut ObjectHeader, word: i64) -> Option<u64> {
    match word_spares(word) {
        WordSpares::Generation(generation) => {
            debug_assert_eq!(
                // SAFETY: `obj` is live (this function's contract).
                unsafe { FRONTEND.generation_of(obj) },
                Some(generation),
                "a wrapper's word names its generation"
            );
            Some(generation)
        }
        WordSpares::Never => None,
        // SAFETY: `obj` is live (its wrapper is reachable).
        WordSpares::Unknown => unsafe { FRONTEND.generation_of(obj) },
    }
}

/// The type index and generation of a wrapper's word that keeps spares (bits 0-7
/// `KIND_OBJECT` and [`WORD_SPARES`] set: a wrapper whose object has this frontend's prefix
/// slot, the common object argument), decoded with one compare; `None` for any other word.
#[inline(always)]
pub fn spare_word(word: i64) -> Option<(i32, u64)> {
    if word & (0xff | WORD_SPARES) != i64::from(convert::KIND_OBJECT) | WORD_SPARES {
        return None;
    }
    Some((word_type(word), word_generation(word)))
}

/// [`lend_spare`] for the argument `obj` passed with a word that keeps spares, of
/// `type_index` and `generation` ([`spare_word`]): the lent view if this thread kept a spare
/// for that wrapper, with neither the word decoded again nor the header read.
///
/// # Safety
/// `obj` is the handle of a wrapper Java keeps reachable for the call, whose word gave
/// `type_index` and `generation`, and the lent view goes to a function flagged
/// `FUNC_ADOPTS_LENT`.
#[inline(always)]
pub unsafe fn lend_word_spare<'a>(
    cell: &SpareCell<'_>,
    obj: *mut ObjectHeader,
    type_index: i32,
    generation: u64,
) -> Option<AnyView<'a>> {
    debug_assert!(type_index != 0, "a wrapper's word names its object's type");
    // SAFETY: the caller holds the wrapper of that generation for the call.
    if !unsafe { cell.take(obj, generation) } {
        return None;
    }
    // SAFETY: `obj` is live (its wrapper is reachable) and of `type_index` (its wrapper's word
    // says so); the reference just taken is the one the lent view carries.
    Some(unsafe { AnyView::from_object_ptr_of_type(obj, type_index).lent() })
}

/// The lent form of `view`, argument `obj` passed with `word` (see [`object_argument`]),
/// carrying this thread's spare of its wrapper if the thread kept one; with the generation
/// the spare was kept under, for [`restore_result_spare`].
///
/// # Safety
/// `obj` is the handle of a wrapper Java keeps reachable for the call, `word` as in
/// [`object_argument`], `view` is `object_argument(obj, word)`, and the lent view goes to a
/// function flagged `FUNC_ADOPTS_LENT`.
#[inline(always)]
pub unsafe fn lend_spare<'a>(
    cell: &SpareCell<'_>,
    obj: *mut ObjectHeader,
    view: AnyView<'a>,
    word: i64,
) -> Option<(AnyView<'a>, u64)> {
    // SAFETY: this function's contract.
    let generation = unsafe { spare_generation(obj, word) }?;
    // SAFETY: the caller holds the wrapper of that generation for the call.
    if !unsafe { cell.take(obj, generation) } {
        return None;
    }
    // SAFETY: the reference just taken is the one the view carries.
    Some((unsafe { view.lent() }, generation))
}

/// A call's result `obj` is the argument [`lend_spare`] lent this thread's spare to (of
/// `generation`): its +1 becomes the spare again, in the room the lend left (no word decoded,
/// one store), or is dropped when a nested call filled the cell meanwhile.
///
/// # Safety
/// As [`keep_result_spare`], for the lent argument.
#[inline(always)]
pub unsafe fn restore_result_spare(obj: ObjectRef, generation: u64, cell: &SpareCell<'_>) {
    // SAFETY: the calling thread holds the wrapper of that generation for the call.
    drop(unsafe { cell.restore(obj, generation) });
}

/// An owned reference to `obj`, whose wrapper (of `word`) Java handed native code: this
/// thread's spare for that wrapper if it kept one (no atomic instruction), else an increment;
/// with the thread's spare cell when it was looked up (a word that keeps spares), for the
/// caller's next step with the same wrapper.
///
/// # Safety
/// As [`object_argument`]; the wrapper stays reachable until this returns.
#[inline(always)]
pub unsafe fn claim_reference(obj: *mut ObjectHeader, word: i64) -> (ObjectRef, Option<SpareCell<'static>>) {
    // SAFETY: this function's contract.
    let Some(generation) = (unsafe { spare_generation(obj, word) }) else {
        // SAFETY: live (the wrapper holds +1); the new reference is ours.
        return (unsafe { ObjectRef::from_borrowed(obj) }, None);
    };
    let cell = spare_cell();
    // SAFETY: the caller holds the wrapper of that generation.
    let taken = cell.as_ref().is_some_and(|cell| unsafe { cell.take(obj, generation) });
    // SAFETY: the entry's reference, now ours; else live (the wrapper holds +1), and the new
    // reference is ours.
    let owned = unsafe {
        if taken {
            ObjectRef::from_raw(obj)
        } else {
            ObjectRef::from_borrowed(obj)
        }
    };
    (owned, cell)
}

/// A call's result `obj` is its argument passed with `word`, whose wrapper Java returns
/// itself: keep the result's +1 as this thread's spare for that wrapper, or drop it
/// (`Frontend::result_argument`'s step, with the generation the word carries).
///
/// # Safety
/// As [`object_argument`], for the argument `obj` is; `cell` is the calling thread's.
#[inline(always)]
pub unsafe fn keep_result_spare(obj: ObjectRef, word: i64, cell: Option<&SpareCell<'_>>) {
    // SAFETY: this function's contract.
    if let (Some(cell), Some(generation)) = (cell, unsafe { spare_generation(obj.as_ptr(), word) }) {
        // SAFETY: the calling thread holds the wrapper of that generation for the call.
        drop(unsafe { cell.keep(obj, generation) });
    }
}

/// Spare references kept right now by all threads (for the test hooks).
pub fn spares_held() -> usize {
    SPARES.held()
}
