//! The boundary engine: the tying protocol composed once, for every frontend.
//!
//! [`crate::tying`] holds the slot word's transitions; this module is the code that composes
//! them into what a frontend does at its language boundary, in the order that matters:
//! - returning an object ([`Frontend::return_object`]): revive the live wrapper without
//!   preparing anything, else let the host prepare (find its class), then tie;
//! - a result that is one of the call's own wrapper arguments ([`Frontend::result_argument`]);
//! - releasing a wrapper ([`Frontend::release`], [`Frontend::move_out`]): untie, take back
//!   the spare references kept for it (in its slot and in threads' cells), drop its +1, and
//!   hand the host exactly the word it must dispose of;
//! - the argument views of a leaf call and their spare claim ([`LeafCall`]);
//! - a cell field's live wrapper ([`Frontend::live_in_cell`]) and the allocator's free hook
//!   ([`cached_block`]);
//! - a language callable's one native Function ([`CallableRegistry`]).
//!
//! A frontend implements [`TieHost`] (how its language revives and makes wrappers; the
//! contract is stated once on the trait) and owns one [`Frontend`] per tie domain: the slots
//! its allocator puts in front of objects plus a side table for every other object. Frontends
//! call nothing in `tying` but the types it defines; `tests/boundary.rs` checks that by
//! reading their sources.

mod call;
mod callables;

pub use call::{argument_message, ArgumentSource, Called, LeafCall};
pub use callables::{CallableRegistry, Lent, LentFunctions};

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::slot::AtomicUsize;

use crate::alloc::SlotFreeHook;
use crate::arc::ObjectRef;
use crate::cell::AnyCell;
use crate::host_value::HostValueObj;
use crate::object::{dec_ref, ObjectHeader};
use crate::thread_spares::{SpareCell, ThreadSpares};
use crate::tying::{self, Slot};
pub use crate::tying::{ClaimMode, Previous, Reserve, Returned, SideTable, SlotLayout, TieHost, TAG_INACTIVE};

/// Start loading the cache line at `address` (a hint: it reads nothing architecturally and
/// never faults, whatever the address). Frontends whose wrappers live in their objects'
/// memory ([`TieHost::RESERVE`]) ask for the object's line before reading the wrapper, so the
/// two lines load together instead of the second waiting for a pointer in the first.
#[inline(always)]
pub fn prefetch(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` reads nothing architecturally and never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

/// The tag of a domain whose objects carry no slot of it (every object goes through the side
/// table): a Node worker's env, a frontend before its allocator is installed.
pub const NO_SLOTS: u32 = u32::MAX;

/// One tie domain of host `H`: the slots `H`'s allocator puts in front of the objects it makes
/// (`tag`), and a side table for objects made by anyone else.
///
/// Locking: `tag` is written once, when the allocator is installed, before any object with
/// that tag exists; the side table has its own mutex; every slot is changed by the
/// transitions of `tying`, under the slot lock or, for a [`TieHost::SERIALIZED`] host, under
/// the lock all its callers hold.
pub struct Frontend<H: TieHost> {
    tag: AtomicU32,
    side: SideTable,
    /// Where a non-serialized host's calls keep spare references (the JVM), if it does.
    thread_spares: Option<&'static ThreadSpares>,
    _host: PhantomData<fn(&H)>,
}

impl<H: TieHost> Default for Frontend<H> {
    fn default() -> Self {
        Self::new()
    }
}

impl<H: TieHost> Frontend<H> {
    /// A domain with no slots yet: objects tie through the side table until
    /// [`Frontend::install_allocator`] or [`Frontend::adopt_allocator`].
    pub const fn new() -> Self {
        Frontend { tag: AtomicU32::new(NO_SLOTS), side: SideTable::new(), thread_spares: None, _host: PhantomData }
    }

    /// As [`Frontend::new`], for a host whose calls keep spares in `spares`' per-thread cells;
    /// every release then takes back the ones kept for its wrapper.
    pub const fn with_thread_spares(spares: &'static ThreadSpares) -> Self {
        Frontend {
            tag: AtomicU32::new(NO_SLOTS),
            side: SideTable::new(),
            thread_spares: Some(spares),
            _host: PhantomData,
        }
    }

    /// Install `H`'s allocator ([`TieHost::LAYOUT`] slots, `on_free` called with the slot of
    /// each object it frees) and make it current: every object made from now on carries a
    /// slot of this domain. Returns its tag.
    pub fn install_allocator(&self, on_free: Option<SlotFreeHook>) -> crate::Result<u32> {
        let tag = crate::alloc::install_frontend_allocator(H::LAYOUT, H::RESERVE, on_free, std::ptr::null_mut())?;
        self.adopt_allocator(tag);
        Ok(tag)
    }

    /// Where `obj`'s [`TieHost::RESERVE`] starts, when `obj` was made by this domain's
    /// allocator and the host reserves any (None otherwise). It lives as long as `obj`'s memory.
    ///
    /// # Safety
    /// `obj` is a live object (strong or weak reference held).
    #[inline]
    pub unsafe fn reserve_of(&self, obj: *mut ObjectHeader) -> Option<*mut u8> {
        // SAFETY: `obj`'s header is readable (the caller's guarantee); only its tag is read.
        if H::RESERVE.bytes() == 0 || unsafe { (*obj).alloc_tag } != self.tag() {
            return None;
        }
        Some(H::LAYOUT.reserve_at(H::LAYOUT.word_of(obj, H::RESERVE), H::RESERVE))
    }

    /// Where the [`TieHost::RESERVE`] of the slot whose word is `slot` starts, for an object
    /// this domain's allocator made (the free hook's argument).
    #[inline]
    pub fn reserve_of_slot(slot: *const AtomicUsize) -> *mut u8 {
        H::LAYOUT.reserve_at(slot, H::RESERVE)
    }

    /// Tie through the slots of the allocator tagged `tag`, installed for `H` (another domain
    /// of the same host installed it: Node's main env uses the process's one allocator).
    pub fn adopt_allocator(&self, tag: u32) {
        self.tag.store(tag, Ordering::Release);
    }

    /// The tag of the allocator whose objects carry this domain's slots ([`NO_SLOTS`]: none).
    #[inline]
    pub fn tag(&self) -> u32 {
        self.tag.load(Ordering::Relaxed)
    }

    /// Side-table entries held right now (objects without this domain's slot that have or had
    /// a wrapper being tied).
    pub fn side_entries(&self) -> usize {
        self.side.len()
    }

    /// Return `obj` (an owned +1) to the language as its one canonical wrapper. A serialized
    /// host's live wrapper is revived before anything is prepared (the path of nearly every
    /// return); a Function made from the language's own callable goes back as that callable
    /// ([`TieHost::callable_of`]), a host value of the language as that value
    /// ([`TieHost::host_value_of`]); otherwise the host prepares ([`TieHost::prepare`]) and the
    /// object is tied.
    #[inline]
    pub fn return_object(&self, host: &H, obj: ObjectRef) -> Result<Returned<H::Handle>, H::Error> {
        let obj = match tying::revive_any(host, self.tag(), obj) {
            Ok(handle) => return Ok(Returned::Revived(handle)),
            Err(obj) => obj,
        };
        match obj.type_index() {
            crate::TypeIndex::FUNCTION => {
                if let Some(callable) = host.callable_of(&obj)? {
                    return Ok(Returned::Callable(callable));
                }
            }
            crate::TypeIndex::HOST_VALUE => {
                // SAFETY: the index says the object is a HostValueObj; `obj` keeps it alive.
                let value = unsafe { &(*(obj.as_ptr() as *const crate::arc::ObjectBox<HostValueObj>)).value };
                if let Some(own) = host.host_value_of(value)? {
                    return Ok(Returned::HostValue(own));
                }
            }
            _ => {}
        }
        let prepared = host.prepare(&obj)?;
        self.return_prepared(host, obj, &prepared)
    }

    /// As [`Frontend::return_object`], with what a new wrapper needs already prepared by the
    /// caller (a subclass the user called, a JS constructor's `this`).
    #[inline]
    pub fn return_prepared(
        &self,
        host: &H,
        obj: ObjectRef,
        prepared: &H::Prepared,
    ) -> Result<Returned<H::Handle>, H::Error> {
        tying::tie_any(host, prepared, self.tag(), &self.side, obj)
    }

    /// A new reference to `obj`, whose live wrapper the caller holds (a callback returning a
    /// wrapper, converted to an owned value): one of its slot's spare references when there
    /// is one, else a count increment. A serialized host's callback result usually comes back
    /// through [`Frontend::return_object`], which keeps the +1 as a spare again, so the round
    /// trip changes no count.
    ///
    /// # Safety
    /// `obj` is live (a wrapper the caller holds keeps it alive); a [`TieHost::SERIALIZED`]
    /// host's lock is held.
    #[inline(always)]
    pub unsafe fn new_reference(&self, obj: *mut ObjectHeader) -> ObjectRef {
        // SAFETY: `obj` is live and, for a serialized host, its lock is held (this method's
        // contract); a spare taken is a +1 the slot owned, now the returned reference's.
        unsafe {
            if !(H::SERIALIZED && tying::take_spare::<H>(obj, self.tag())) {
                crate::object::inc_ref(obj);
            }
            ObjectRef::from_raw(obj)
        }
    }

    /// A call returned object `obj`; `arguments` are its wrapper arguments as `(index, object,
    /// slot word)`. When `obj` is one of them (`echo(p)`) and that wrapper is canonical, the
    /// result's +1 is kept as a spare and the host returns that argument itself:
    /// `Ok(index)`. Otherwise `obj` comes back for [`Frontend::return_object`].
    ///
    /// Canonical means: for a serialized host, the slot still names that wrapper's word; for a
    /// host with thread spares (the JVM), a wrapper the language can still pass is the one in
    /// the slot (a slot moves on only once its wrapper is unreachable), and the +1 goes to the
    /// calling thread's cell `cell` (dropped when there is none or it is full).
    ///
    /// # Safety
    /// Every argument's wrapper is alive and reachable for the call and owns its +1; a
    /// serialized host's lock is held; `cell` is the calling thread's.
    #[inline(always)]
    pub unsafe fn result_argument(
        &self,
        obj: ObjectRef,
        arguments: impl IntoIterator<Item = (usize, *mut ObjectHeader, usize)>,
        cell: Option<&SpareCell<'_>>,
    ) -> Result<usize, ObjectRef> {
        let ptr = obj.as_ptr();
        // An argument's wrapper holds a reference of its own for the whole call, so an object
        // whose only strong reference is the result's is none of them (a constructor's new
        // object): no argument is decoded (~30 instructions of `Pair(x, x)` in CPython).
        // SAFETY: `obj` is live (we hold its +1).
        if unsafe { (*ptr).strong_count() } == 1 {
            return Err(obj);
        }
        let Some((index, _, word)) = arguments.into_iter().find(|&(_, arg, _)| arg == ptr) else {
            return Err(obj);
        };
        if H::SERIALIZED {
            // SAFETY: the caller's guarantee: the argument's wrapper owns its +1 and unties
            // when it goes, so it may keep spares; the host's lock is held.
            return unsafe { tying::keep_if_tied_to::<H>(obj, self.tag(), word) }.map(|()| index);
        }
        // SAFETY: `obj` is live (we hold its +1).
        let generation = unsafe { self.generation_of(ptr) };
        if let (Some(cell), Some(generation)) = (cell, generation) {
            // SAFETY: the calling thread holds the wrapper of that generation for the call.
            drop(unsafe { cell.keep(obj, generation) });
        }
        Ok(index)
    }

    /// The wrapper named by `ticket` (its generation, or a [`TieHost::WORD_ONLY`] host's own
    /// word) lets go of its +1 on `obj`: untie it if it still owns the slot (its word replaced
    /// by `replacement`: 0, or a cached block | [`TAG_INACTIVE`]), take back every spare kept
    /// for it, and drop the +1. Returns the word taken out of the slot, which the host
    /// disposes of; `None` when a newer wrapper owns the slot (then `replacement` is still
    /// the host's).
    ///
    /// # Safety
    /// The caller owns the wrapper's +1 on the live `obj` and gives it up; every call that
    /// used this wrapper has finished (its release is ordered after them).
    pub unsafe fn release(&self, obj: *mut ObjectHeader, ticket: u64, replacement: usize) -> Option<usize> {
        // SAFETY: the caller owns the wrapper's +1 on the live `obj` (this method's contract),
        // which keeps it alive until the `dec_ref` below.
        let removed = unsafe { self.untie(obj, ticket, replacement) };
        // SAFETY: giving up the wrapper's strong reference, once.
        unsafe { dec_ref(obj) };
        removed
    }

    /// The wrapper named by `ticket`, tied with the placeholder word `from`, gets its real
    /// word `to` (see `tying::rebind`); false when the slot names anything else, or `obj` has
    /// no prefix slot of this domain: then `to` is still the caller's.
    ///
    /// # Safety
    /// `obj` is live (the caller holds a reference to it, e.g. through the wrapper's +1).
    pub unsafe fn rebind(&self, obj: *mut ObjectHeader, ticket: u64, from: usize, to: usize) -> bool {
        // SAFETY: `obj` is live (the caller's guarantee).
        match unsafe { tying::slot_of::<H>(obj, self.tag()) } {
            Some(slot) => tying::rebind::<H>(slot, ticket, from, to),
            None => false,
        }
    }

    /// As [`Frontend::release`], but the wrapper's +1 goes to the caller instead of being
    /// dropped: Python's `_move()` hands it to a callee (`replacement` 0), and a dying wrapper
    /// keeps the object alive while its weak references' callbacks run, after the untie.
    ///
    /// # Safety
    /// As [`Frontend::release`], taking over the +1 instead of giving it up.
    pub unsafe fn move_out(
        &self,
        obj: *mut ObjectHeader,
        ticket: u64,
        replacement: usize,
    ) -> (Option<usize>, ObjectRef) {
        // SAFETY: the caller owns the wrapper's live +1 and every call using the wrapper has finished.
        let removed = unsafe { self.untie(obj, ticket, replacement) };
        // SAFETY: the wrapper's +1, now the caller's.
        (removed, unsafe { ObjectRef::from_raw(obj) })
    }

    /// The release of a dying wrapper that holds the only reference of any kind to `obj`, an
    /// object of this host's allocator: the object dies with it, so its slot is left as it
    /// is (no reference remains to revive the wrapper through, no spare is kept, and the
    /// allocator's free hook passes over an Active word). The untie was a tenth of a
    /// construction and release in CPython (issue 18's W4). `Some` is the wrapper's +1 for
    /// the caller to drop, last; the slot's word stays, so whatever a host's word owns is the
    /// caller's to dispose of, as after an untie. `None` when anything else holds `obj`:
    /// [`Frontend::move_out`].
    ///
    /// # Safety
    /// As [`Frontend::move_out`]; `H` is serialized and the caller holds its lock; nothing
    /// runs between this and the drop that could reach the wrapper through the slot.
    #[inline]
    pub unsafe fn take_sole(&self, obj: *mut ObjectHeader) -> Option<ObjectRef> {
        // SAFETY: `obj` is live (the caller's +1). Only a strong or weak reference could add
        // another, and there is none to copy; the serialized host's lock keeps the slot's
        // readers out.
        unsafe {
            let sole = H::SERIALIZED
                && (*obj).alloc_tag == self.tag()
                && (*obj).combined_ref_count.load(Ordering::Acquire) == ObjectHeader::INITIAL_COUNT;
            sole.then(|| ObjectRef::from_raw(obj))
        }
    }

    /// Untie the wrapper of `ticket` and take back its spares (the release without the
    /// wrapper's own +1).
    ///
    /// # Safety
    /// As [`Frontend::release`].
    unsafe fn untie(&self, obj: *mut ObjectHeader, ticket: u64, replacement: usize) -> Option<usize> {
        // SAFETY: `obj` is live (the caller's +1); the slot's spares are dropped inside.
        let removed = unsafe { tying::untie_any::<H>(obj, self.tag(), &self.side, ticket, replacement) };
        if let Some(spares) = self.thread_spares {
            // SAFETY: the wrapper of this generation is gone and every call that held it has
            // finished (the caller's guarantee), so no owner is using the entries stolen.
            unsafe { spares.steal(obj, ticket) };
        }
        removed
    }

    /// The live wrapper of the object cell field `cell` holds, when its kind comes back as a
    /// wrapper (`ties`) and it has one in this domain: revived while the cell is held, which
    /// keeps the object alive (the wrapper owns its own +1, so no count changes). `None`:
    /// copy the value and return it as usual.
    ///
    /// # Safety
    /// The caller runs under the serialized host's lock; `revive` runs no language code.
    #[inline(always)]
    pub unsafe fn live_in_cell(&self, host: &H, cell: &AnyCell, ties: impl FnOnce(i32) -> bool) -> Option<H::Handle> {
        // SAFETY: the caller holds the serialized host's lock; the held cell keeps its object alive.
        unsafe { tying::revive_in_cell::<H, true>(host, self.tag(), cell, ties) }
    }

    /// As [`Frontend::live_in_cell`], but `None` at once when another thread holds the cell
    /// at this instant: a fast path with no spin loop on it (its caller then takes
    /// `live_in_cell`).
    ///
    /// # Safety
    /// As [`Frontend::live_in_cell`].
    #[inline(always)]
    pub unsafe fn live_in_free_cell(
        &self,
        host: &H,
        cell: &AnyCell,
        ties: impl FnOnce(i32) -> bool,
    ) -> Option<H::Handle> {
        // SAFETY: this function's contract.
        unsafe { tying::revive_in_cell::<H, false>(host, self.tag(), cell, ties) }
    }

    /// The generation of the wrapper this domain tied last to `obj` (for a caller holding
    /// `obj`'s live wrapper: that wrapper's), when `obj` carries this domain's slot and `H`
    /// names generations.
    ///
    /// # Safety
    /// `obj` is live.
    #[inline(always)]
    pub unsafe fn generation_of(&self, obj: *mut ObjectHeader) -> Option<u64> {
        // SAFETY: `obj` is live (the caller's guarantee); this domain's allocator made it if the tag matches.
        unsafe { tying::generation_of::<H>(obj, self.tag()) }
    }

    /// The host's class hint for `obj`, kept in its prefix slot across wrappers (Node's id of
    /// the JS subclass whose instance last wrapped it); 0 when none was set or `obj` has no
    /// prefix slot of this domain.
    ///
    /// # Safety
    /// `obj` is a live object.
    pub unsafe fn class_hint(&self, obj: *mut ObjectHeader) -> u32 {
        // SAFETY: the caller's guarantee.
        unsafe { tying::class_hint::<H>(obj, self.tag()) }
    }

    /// Set `obj`'s class hint (see [`Frontend::class_hint`]); false when it has no prefix slot
    /// of this domain (the side table keeps none).
    ///
    /// # Safety
    /// `obj` is a live object.
    pub unsafe fn set_class_hint(&self, obj: *mut ObjectHeader, hint: u32) -> bool {
        // SAFETY: the caller's guarantee.
        unsafe { tying::set_class_hint::<H>(obj, self.tag(), hint) }
    }
}

/// The free hook's step: the object whose slot word is at `slot` is being freed; the cached
/// wrapper block its Inactive slot holds, if any, is the caller's to free.
///
/// # Safety
/// `slot` is the slot word the allocator passes to its free hook, of an object nobody can
/// reach any more.
pub unsafe fn cached_block(slot: *const AtomicUsize) -> Option<usize> {
    // SAFETY: the caller's guarantee.
    unsafe { tying::take_inactive(Slot::from_raw(slot)) }
}
