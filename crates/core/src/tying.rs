//! The identity-tying state machine, written once for every frontend.
//!
//! Each native object made by a frontend allocator carries a [`SlotPrefix`] in the 16 bytes
//! in front of its header; objects with another `alloc_tag` get one from a [`SideTable`]
//! keyed by address. The slot word names the object's one canonical wrapper in that
//! frontend's language:
//!
//! | state | slot word | meaning |
//! |---|---|---|
//! | Detached | 0 | no wrapper |
//! | Active | wrapper word (bit 0 and bit 1 clear) | wrapper alive, owns +1 on the native object |
//! | Inactive | cached block \| [`TAG_INACTIVE`] | wrapper died; its memory is kept for revival |
//! | Locked | [`TAG_LOCKED`] | a transition is in flight; others spin |
//!
//! Every transition locks the slot by compare-and-swap, so it is correct with or without an
//! interpreter lock. `aux` holds a generation in its low 32 bits, bumped each time a new
//! wrapper is tied: a release names the generation it was made for, so a late finalizer
//! (Node, the JVM's Cleaner) never clears a slot that a newer wrapper took over, even when the
//! language reuses handle addresses. Rule: whoever takes a word out of the slot disposes of it.
//!
//! Spare references (high 32 bits of `aux`, serialized hosts only): returning an object whose
//! wrapper is alive hands the frontend a +1 it does not need. Dropping it costs an atomic
//! decrement on every return, so the slot keeps it instead, and [`take_spare`] lends one out
//! as a call argument, saving the increment too (`echo(x)` then touches no atomic at all).
//! Spares belong to the slot while it is Active and are released by the [`untie`] that ends
//! it, so they never outlive the wrapper: the object dies exactly when it did without them.
//!
//! A frontend implements [`TieHost`] (how to revive a wrapper from a word, how to make a new
//! one) and calls [`tie`] for every native object it returns to its language, and
//! [`untie`] when a wrapper dies or is closed.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::address_map::AddressMap;
use crate::arc::ObjectRef;
use crate::error::Result;
use crate::object::ObjectHeader;
use crate::spin::backoff;

/// Slot word bit: a transition is in flight.
pub const TAG_LOCKED: usize = 1;
/// Slot word bit: the word is a cached wrapper block kept for revival.
pub const TAG_INACTIVE: usize = 2;
const TAG_MASK: usize = TAG_LOCKED | TAG_INACTIVE;

/// `aux` bits holding the generation.
const GENERATION_MASK: u64 = 0xffff_ffff;
/// One spare reference in `aux`.
const SPARE_ONE: u64 = 1 << 32;
/// At most this many spares per slot: far below the 32-bit strong count, and a slot at the
/// cap simply drops further extras as before.
const SPARE_MAX: u64 = 1 << 30;

/// The 16 bytes a frontend allocator reserves in front of each object.
#[repr(C)]
pub struct SlotPrefix {
    pub slot: AtomicUsize,
    /// Low 32 bits: the generation of the wrapper the slot names (or last named). High 32
    /// bits: spare strong references the Active wrapper's slot holds (see the module docs).
    pub aux: AtomicU64,
}

const _: () = {
    assert!(std::mem::size_of::<SlotPrefix>() == 16);
    assert!(std::mem::offset_of!(SlotPrefix, slot) == 0);
    assert!(std::mem::offset_of!(SlotPrefix, aux) == 8);
};

impl SlotPrefix {
    pub const fn new() -> Self {
        SlotPrefix { slot: AtomicUsize::new(0), aux: AtomicU64::new(0) }
    }

    /// The prefix in front of `obj`. Only meaningful when `obj` was made by a frontend
    /// allocator: check `alloc_tag` first ([`slot_of`]), never read memory blindly.
    pub fn before(obj: *mut ObjectHeader) -> *mut SlotPrefix {
        (obj as *mut u8).wrapping_sub(std::mem::size_of::<SlotPrefix>()) as *mut SlotPrefix
    }
}

impl Default for SlotPrefix {
    fn default() -> Self {
        Self::new()
    }
}

/// The prefix slot of `obj` if the allocator tagged `tag` made it.
///
/// # Safety
/// `obj` is a live object.
#[inline]
pub unsafe fn slot_of<'a>(obj: *mut ObjectHeader, tag: u32) -> Option<&'a SlotPrefix> {
    // SAFETY: `obj` is live; its alloc_tag says whether the prefix exists.
    if unsafe { (*obj).alloc_tag } == tag && tag != crate::alloc::BUILTIN_TAG {
        // SAFETY: the frontend allocator placed a SlotPrefix right before the header, and it
        // lives as long as the object's memory.
        Some(unsafe { &*SlotPrefix::before(obj) })
    } else {
        None
    }
}

/// What was in the slot when a new wrapper is being made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Previous {
    /// No wrapper was tied.
    Detached,
    /// An Active word whose wrapper could not be revived (it is dying). The host disposes of
    /// the word (e.g. deletes the weak reference); its late finalizer will find a newer
    /// generation and leave the slot alone.
    Dying(usize),
    /// A cached block (tag bits removed) the host may revive in place, or must free.
    Inactive(usize),
}

/// How one frontend makes and revives wrappers. All methods run with the slot locked.
///
/// # Safety
/// `revive` must return a strong handle to the wrapper named by `word` only if that wrapper
/// really is alive; `create` must return a word that `revive` understands, with bits 0 and 1
/// clear, and the wrapper it makes owns the `ObjectRef` it is given.
pub unsafe trait TieHost {
    /// A strong language handle to a wrapper.
    type Handle;
    /// True when every transition of this host's slots happens under one lock that every
    /// caller of [`tie`] and [`untie`] already holds (CPython's GIL; a Node env's JS thread).
    /// Then the slot word is read and written without locking it: an Active word revives with
    /// one load (the fast path of every return), new and dying wrappers store plainly. Only
    /// the allocator's free hook runs elsewhere, once the object is dead (so never during a
    /// tie or untie, whose caller holds a reference), and it touches Inactive words only.
    const SERIALIZED: bool = false;
    /// Try to get a strong handle from an Active word; `None` if the wrapper is dying.
    ///
    /// # Safety
    /// `word` is an Active word this host stored, read under the slot lock.
    unsafe fn revive(&self, word: usize) -> Option<Self::Handle>;
    /// Make a new wrapper owning `obj`; return it and its slot word. `generation` is the
    /// value a later [`untie`] for this wrapper must name.
    ///
    /// # Safety
    /// Called under the slot lock with the previous content as described by `previous`.
    unsafe fn create(&self, obj: ObjectRef, previous: Previous, generation: u64) -> Result<(Self::Handle, usize)>;
    /// May `obj`'s Active slot keep a return's extra reference as a spare? Only when the
    /// wrapper it names will be untied (so the spares are released) before `obj` could
    /// otherwise die: true for wrappers that own their +1, false for a word that merely
    /// points at something the object itself keeps alive (a callback's own callable).
    fn keeps_spares(&self, _obj: *mut ObjectHeader) -> bool {
        true
    }
}

/// Lock the slot; returns the word that was in it.
fn lock(slot: &SlotPrefix) -> usize {
    let mut spins = 0;
    loop {
        let word = slot.slot.load(Ordering::Relaxed);
        if word & TAG_LOCKED == 0
            && slot.slot.compare_exchange_weak(word, TAG_LOCKED, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            return word;
        }
        backoff(&mut spins);
    }
}

/// Unlocks with `word` when dropped, also if the host panics mid-transition.
struct Locked<'a> {
    slot: &'a SlotPrefix,
    restore: usize,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.slot.slot.store(self.restore, Ordering::Release);
    }
}

/// Return `obj` (an owned +1) to the language: the canonical wrapper if one is alive,
/// otherwise a new one tied into the slot. Consumes `obj` either way.
#[inline]
pub fn tie<H: TieHost>(host: &H, slot: &SlotPrefix, obj: ObjectRef) -> Result<H::Handle> {
    let obj = if H::SERIALIZED {
        match revive_active(host, slot, obj) {
            Ok(handle) => return Ok(handle),
            Err(obj) => obj,
        }
    } else {
        obj
    };
    tie_locked(host, slot, obj)
}

/// A serialized host's return without locking: the wrapper an Active word names, revived,
/// with `obj`'s +1 kept as a spare. `obj` comes back when the slot holds no live wrapper.
#[inline]
fn revive_active<H: TieHost>(host: &H, slot: &SlotPrefix, obj: ObjectRef) -> std::result::Result<H::Handle, ObjectRef> {
    match live_handle(host, slot) {
        Some(handle) => {
            // The canonical wrapper already owns its +1: keep this one as a spare.
            if host.keeps_spares(obj.as_ptr()) {
                keep_spare(slot, obj);
            }
            Ok(handle)
        }
        None => Err(obj),
    }
}

/// A serialized host's live wrapper named by `slot`, revived, if there is one.
#[inline]
fn live_handle<H: TieHost>(host: &H, slot: &SlotPrefix) -> Option<H::Handle> {
    debug_assert!(H::SERIALIZED);
    let word = slot.slot.load(Ordering::Acquire);
    if word != 0 && word & TAG_MASK == 0 {
        // SAFETY: an Active word; the host's lock (held by the caller, see `SERIALIZED`)
        // keeps it from changing while we revive.
        unsafe { host.revive(word) }
    } else {
        None
    }
}

/// The live wrapper of `obj`, revived, for a serialized host that holds no reference to
/// `obj` but keeps it alive otherwise (a held `AnyCell` whose value it is): the wrapper owns
/// its own +1, so no count changes. `None` when there is none (or `obj` has no prefix of
/// this host); the caller then takes a reference and ties as usual.
///
/// # Safety
/// `obj` stays alive during the call; the caller runs under the host's lock.
#[inline]
pub unsafe fn revive_borrowed<H: TieHost>(host: &H, tag: u32, obj: *mut ObjectHeader) -> Option<H::Handle> {
    if !H::SERIALIZED {
        return None;
    }
    // SAFETY: the caller keeps `obj` alive.
    live_handle(host, unsafe { slot_of(obj, tag) }?)
}

/// The first step of [`tie_any`] for serialized hosts, for callers that must prepare before a
/// wrapper can be made (e.g. build its class): the live wrapper of an object with this
/// host's prefix, revived, or `obj` back (then call [`tie_any`]).
#[inline]
pub fn revive_any<H: TieHost>(host: &H, tag: u32, obj: ObjectRef) -> std::result::Result<H::Handle, ObjectRef> {
    if !H::SERIALIZED {
        return Err(obj);
    }
    // SAFETY: `obj` keeps the object alive.
    match unsafe { slot_of(obj.as_ptr(), tag) } {
        Some(slot) => revive_active(host, slot, obj),
        None => Err(obj),
    }
}

/// Keep `obj`'s extra +1 in its Active slot, or drop it when the slot is full.
/// Only for serialized hosts, under their lock (nothing else writes `aux` meanwhile), and
/// only when the slot's wrapper owns its +1 and will be untied ([`TieHost::keeps_spares`]).
#[inline]
fn keep_spare(slot: &SlotPrefix, obj: ObjectRef) {
    let aux = slot.aux.load(Ordering::Relaxed);
    if aux >> 32 < SPARE_MAX {
        slot.aux.store(aux + SPARE_ONE, Ordering::Relaxed);
        std::mem::forget(obj);
    } else {
        drop(obj);
    }
}

/// Take one spare reference out of `obj`'s prefix slot, if it has one: the caller then owns
/// that +1 (to lend it as a call argument, see `AnyView::lent_object`). Objects of other
/// allocators (side-table slots) have no spares here.
///
/// # Safety
/// `obj` is live, and the caller is a serialized host ([`TieHost::SERIALIZED`]) of the
/// allocator tagged `tag`, running under its lock.
#[inline]
pub unsafe fn take_spare(obj: *mut ObjectHeader, tag: u32) -> bool {
    // SAFETY: forwarded.
    let Some(slot) = (unsafe { slot_of(obj, tag) }) else { return false };
    let aux = slot.aux.load(Ordering::Relaxed);
    if aux >> 32 == 0 {
        return false;
    }
    slot.aux.store(aux - SPARE_ONE, Ordering::Relaxed);
    true
}

/// A call returned `obj`, which the argument wrapper whose slot word is `word` names (`echo(p)`):
/// when `obj`'s prefix slot holds that word, that wrapper is canonical, so the host returns the
/// argument itself and `obj`'s +1 stays in the slot as a spare (`Ok`). Otherwise `obj` comes
/// back for the ordinary [`tie`].
///
/// # Safety
/// `obj` is live; the caller is a serialized host ([`TieHost::SERIALIZED`]) of the allocator
/// tagged `tag`, running under its lock, whose wrappers own their +1 and are untied when they
/// go (so [`TieHost::keeps_spares`] holds for `obj`).
#[inline]
pub unsafe fn keep_if_tied_to(obj: ObjectRef, tag: u32, word: usize) -> std::result::Result<(), ObjectRef> {
    // SAFETY: `obj` keeps the object alive.
    match unsafe { slot_of(obj.as_ptr(), tag) } {
        Some(slot) if peek(slot) == word => {
            keep_spare(slot, obj);
            Ok(())
        }
        _ => Err(obj),
    }
}

/// The argument cell for `obj`, whose wrapper is an argument of a running leaf call (the
/// wrapper's +1 keeps it alive): with `lend`, a lent view carrying one of its slot's spares
/// when there is one (the callee then adds no reference), else a borrowed view.
///
/// # Safety
/// As [`take_spare`]; `obj` outlives the call.
#[inline]
pub unsafe fn argument_view<'a>(obj: *mut ObjectHeader, tag: u32, lend: bool) -> crate::AnyView<'a> {
    // SAFETY: forwarded; a spare taken is handed to the view, which carries it to the callee.
    unsafe {
        if lend && take_spare(obj, tag) {
            crate::AnyView::lent_object(obj)
        } else {
            crate::AnyView::from_object_ptr(obj)
        }
    }
}

/// Spare references a slot holds right now (for tests and diagnostics).
pub fn spares(slot: &SlotPrefix) -> u32 {
    (slot.aux.load(Ordering::Relaxed) >> 32) as u32
}

fn tie_locked<H: TieHost>(host: &H, slot: &SlotPrefix, obj: ObjectRef) -> Result<H::Handle> {
    let word = enter::<H>(slot);
    let mut guard = Locked { slot, restore: word };
    let previous = if word == 0 {
        Previous::Detached
    } else if word & TAG_INACTIVE != 0 {
        Previous::Inactive(word & !TAG_MASK)
    } else {
        // SAFETY: an Active word this host stored, read under the lock.
        if let Some(handle) = unsafe { host.revive(word) } {
            drop(guard);
            drop(obj); // the canonical wrapper already owns its +1
            return Ok(handle);
        }
        Previous::Dying(word)
    };
    let aux = slot.aux.load(Ordering::Relaxed);
    let generation = (aux + 1) & GENERATION_MASK;
    // Whatever happens now, the old word is the host's to dispose of: never restore it.
    guard.restore = 0;
    // SAFETY: under the lock, `previous` describes the slot's former content.
    let (handle, new_word) = unsafe { host.create(obj, previous, generation) }?;
    debug_assert!(new_word != 0 && new_word & TAG_MASK == 0, "host returned a tagged word");
    // Spares of a Dying predecessor stay: they are the slot's, released by its next untie.
    slot.aux.store((aux & !GENERATION_MASK) | generation, Ordering::Relaxed);
    guard.restore = new_word;
    drop(guard);
    Ok(handle)
}

/// What [`untie`] took out of a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Untied {
    /// The wrapper's word, for the caller to dispose of.
    pub word: usize,
    /// Spare strong references the slot held, now the caller's to drop.
    pub spare: u32,
}

/// Enter a transition of `slot` for a caller of host `H` that holds a reference to its object;
/// returns the word in the slot, which the caller stores back (or replaces) to leave.
///
/// A serialized host needs no slot lock: every tie and untie of its slots runs under the
/// host's own lock, and the only other writer, the allocator's free hook, runs once the object
/// is dead, which the caller's reference rules out. Everyone else locks the word (bit 0).
#[inline]
fn enter<H: TieHost>(slot: &SlotPrefix) -> usize {
    if H::SERIALIZED {
        slot.slot.load(Ordering::Acquire)
    } else {
        lock(slot)
    }
}

/// A wrapper of `generation` is going away: if the slot still names it, replace its word by
/// `replacement` (0, or a cached block | [`TAG_INACTIVE`]) and return the removed word and
/// spares for the caller to dispose of. `None` when a newer wrapper owns the slot (leave it).
/// `H` is the frontend's host (it says whether the slot must be locked); the caller holds a
/// reference to the slot's object.
pub fn untie<H: TieHost>(slot: &SlotPrefix, generation: u64, replacement: usize) -> Option<Untied> {
    let word = enter::<H>(slot);
    let aux = slot.aux.load(Ordering::Relaxed);
    let current = aux & GENERATION_MASK == generation && word != 0 && word & TAG_INACTIVE == 0;
    if current {
        slot.aux.store(aux & GENERATION_MASK, Ordering::Relaxed);
    }
    slot.slot.store(if current { replacement } else { word }, Ordering::Release);
    current.then_some(Untied { word, spare: (aux >> 32) as u32 })
}

/// Take a cached (Inactive) block out of a slot whose object is being freed; the caller frees
/// the block. Used from a frontend allocator's free hook.
pub fn take_inactive(slot: &SlotPrefix) -> Option<usize> {
    let word = lock(slot);
    let inactive = word & TAG_INACTIVE != 0;
    slot.slot.store(if inactive { 0 } else { word }, Ordering::Release);
    inactive.then_some(word & !TAG_MASK)
}

/// The word currently in the slot (a racy snapshot, for tests and diagnostics).
#[inline]
pub fn peek(slot: &SlotPrefix) -> usize {
    slot.slot.load(Ordering::Acquire)
}

/// Slots for objects that carry no prefix of this frontend (made before it loaded, or by
/// another allocator), keyed by object address.
///
/// An entry is shared (`Arc`) while a thread works on it; it is removed only when its slot
/// is Detached and the table holds the sole reference, so a thread that found an entry
/// always ties into the entry that stays in the table.
#[derive(Default)]
pub struct SideTable {
    entries: Mutex<AddressMap<Arc<SlotPrefix>>>,
}

impl SideTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The entry for `obj`, made Detached if missing.
    pub fn entry(&self, obj: *mut ObjectHeader) -> Arc<SlotPrefix> {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(obj as usize).or_insert_with(|| Arc::new(SlotPrefix::new())).clone()
    }

    /// The entry for `obj`, if there is one.
    pub fn existing(&self, obj: *mut ObjectHeader) -> Option<Arc<SlotPrefix>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).get(&(obj as usize)).cloned()
    }

    /// Drop the entry for `obj` if it is Detached and nobody else holds it.
    pub fn prune(&self, obj: *mut ObjectHeader) {
        let mut map = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = map.get(&(obj as usize)) {
            if Arc::strong_count(e) == 1 && e.slot.load(Ordering::Acquire) == 0 {
                map.remove(&(obj as usize));
            }
        }
    }

    /// Remove and return every entry (environment teardown).
    pub fn drain(&self) -> Vec<(usize, Arc<SlotPrefix>)> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).drain().collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Tie `obj` through its prefix or the side table, pruning a side entry a failed create
/// left Detached.
pub fn tie_any<H: TieHost>(host: &H, tag: u32, side: &SideTable, obj: ObjectRef) -> Result<H::Handle> {
    let ptr = obj.as_ptr();
    // SAFETY: `obj` keeps the object alive.
    if let Some(slot) = unsafe { slot_of(ptr, tag) } {
        return tie(host, slot, obj);
    }
    let slot = side.entry(ptr);
    let out = tie(host, &slot, obj);
    if out.is_err() {
        drop(slot);
        side.prune(ptr);
    }
    out
}

/// Release for a wrapper of `generation` tied to `obj` (prefix or side table) by host `H`.
/// Returns the removed word for the caller to dispose of; the slot's spare references are
/// dropped here. Call before dropping the wrapper's +1.
///
/// # Safety
/// `obj` is live (the wrapper still holds its +1).
pub unsafe fn untie_any<H: TieHost>(
    obj: *mut ObjectHeader,
    tag: u32,
    side: &SideTable,
    generation: u64,
    replacement: usize,
) -> Option<usize> {
    // SAFETY: forwarded.
    let untied = if let Some(p) = unsafe { slot_of(obj, tag) } {
        untie::<H>(p, generation, replacement)
    } else {
        let entry = side.existing(obj)?;
        let untied = untie::<H>(&entry, generation, replacement);
        drop(entry);
        side.prune(obj);
        untied
    }?;
    if untied.spare > 0 {
        // SAFETY: the slot owned these references; the caller's +1 keeps `obj` alive, so this
        // never reaches zero.
        unsafe { crate::object::dec_ref_n(obj, untied.spare) };
    }
    Some(untied.word)
}
