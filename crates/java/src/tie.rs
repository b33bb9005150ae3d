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

use crate::classes;
use crate::jenv::Env;

/// Spare references kept per calling thread (see `tether_core::thread_spares`).
static SPARES: ThreadSpares = ThreadSpares::new();
/// Every object's one Java wrapper is tied here (a process has one JVM).
pub static FRONTEND: Frontend<JavaHost> = Frontend::with_thread_spares(&SPARES);

fn encode(weak: jobject) -> usize {
    (weak as usize) << 2
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
    /// With `adopt`: the `NativeRef` of that wrapper, which Java made unbound (a
    /// `TetherType.construct` of a type without a generated class). `create` writes the
    /// handle and generation into it instead of calling `Wrappers.adopt`; Java registers its
    /// Cleaner once the call returns that wrapper. Null for every other return.
    preset: jobject,
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
            self.env().delete_weak_global_ref(decode(word));
        }
        let c = classes::get();
        if !self.preset.is_null() {
            // The weak reference first: until the fields are written, a failure leaves the
            // wrapper unbound (Java drops it) and the +1 is still ours to drop.
            let weak = self.env().new_weak_global_ref(self.adopt);
            if weak.is_null() {
                self.env().clear_exception();
                drop(obj);
                return Err(Error::runtime("out of JNI weak references"));
            }
            let raw = obj.into_raw();
            // SAFETY: `preset` is a live `NativeRef` (a local reference of the calling native
            // method) and both fields are its `long`s, resolved at init.
            unsafe {
                self.env().set_long_field(self.preset, c.native_ref_handle, raw as i64);
                self.env().set_long_field(self.preset, c.native_ref_generation, generation as i64);
            }
            // The wrapper owns the +1 from here; Java registers its Cleaner when this returns.
            return Ok((self.adopt, encode(weak)));
        }
        let type_index = obj.type_index();
        let raw = obj.into_raw();
        let wrapper = if self.adopt.is_null() {
            let args = [jvalue { j: raw as i64 }, jvalue { j: generation as i64 }, jvalue { i: type_index }];
            // SAFETY: `Wrappers.create(long, long, int) -> Object`, resolved at init.
            unsafe { self.env().call_static_object(c.wrappers, c.wrappers_create, &args) }
        } else {
            let args = [
                jvalue { l: self.adopt },
                jvalue { j: raw as i64 },
                jvalue { j: generation as i64 },
                jvalue { i: type_index },
            ];
            // SAFETY: `Wrappers.adopt(Object, long, long, int) -> Object`, resolved at init;
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
            &JavaHost { raw_env: env.as_raw(), adopt: std::ptr::null_mut(), preset: std::ptr::null_mut() },
            obj,
        )
        .map(|returned| returned.into_handle())
}

/// Return `obj` (an owned +1) to Java with `wrapper` (a generated class's instance under
/// construction, a live local reference) as its canonical wrapper when it has none yet; an
/// object that has a wrapper already comes back as that one (the caller sees the difference).
pub fn to_wrapper_adopting(env: Env, obj: ObjectRef, wrapper: jobject) -> Result<jobject> {
    FRONTEND
        .return_object(&JavaHost { raw_env: env.as_raw(), adopt: wrapper, preset: std::ptr::null_mut() }, obj)
        .map(|returned| returned.into_handle())
}

/// Return `obj` (an owned +1, a new object of a type without a generated class) to Java with
/// `wrapper`, a `TetherInstance` Java made before the call around the unbound `NativeRef`
/// `native_ref`, as its canonical wrapper when it has none yet: the handle and generation are
/// written into `native_ref` (no upcall); Java binds it (its Cleaner) when it gets `wrapper`
/// back. An object that has a wrapper already comes back as that one (`wrapper` stays unbound).
pub fn to_wrapper_preset(env: Env, obj: ObjectRef, wrapper: jobject, native_ref: jobject) -> Result<jobject> {
    FRONTEND
        .return_object(&JavaHost { raw_env: env.as_raw(), adopt: wrapper, preset: native_ref }, obj)
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
        env.delete_weak_global_ref(decode(word));
    }
}

/// The calling thread's cell of spare references.
#[inline(always)]
pub fn spare_cell() -> Option<SpareCell<'static>> {
    SPARES.cell()
}

/// A lent view of `obj` carrying this thread's spare of its wrapper, if the thread kept one.
///
/// # Safety
/// `obj` is the handle of a wrapper Java keeps reachable for the call, and the view goes to
/// a function flagged `FUNC_ADOPTS_LENT`.
#[inline(always)]
pub unsafe fn lend_spare<'a>(cell: &SpareCell<'_>, obj: *mut ObjectHeader) -> Option<AnyView<'a>> {
    // SAFETY: `obj` is live (its wrapper is reachable).
    let generation = unsafe { FRONTEND.generation_of(obj) }?;
    // SAFETY: the caller holds the wrapper of that generation for the call.
    if unsafe { cell.take(obj, generation) } {
        // SAFETY: the reference just taken is the one the view carries.
        Some(unsafe { AnyView::lent_object(obj) })
    } else {
        None
    }
}

/// Spare references kept right now by all threads (for the test hooks).
pub fn spares_held() -> usize {
    SPARES.held()
}
