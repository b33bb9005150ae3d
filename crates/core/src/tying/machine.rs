//! The state machine: tying an object's slot to a wrapper and untying it, under the slot lock
//! or, for serialized hosts, under the host's own lock.

use std::sync::atomic::Ordering;

use super::side_table::SideTable;
use super::spares::keep_spare;
use crate::arc::ObjectRef;
use crate::object::ObjectHeader;
use crate::slot::{aux_of, ActiveWord, Reserve, Slot, SlotLayout, SlotState, GENERATION_MASK, TAG_LOCKED};
use crate::spin::backoff;

/// The slot word of `obj` if the allocator tagged `tag` (host `H`'s) made it.
///
/// # Safety
/// `obj` is a live object.
#[inline(always)]
pub unsafe fn slot_of<'a, H: TieHost>(obj: *mut ObjectHeader, tag: u32) -> Option<Slot<'a>> {
    // SAFETY: `obj` is live (this function's contract); `H`'s allocator lays its slots out as
    // `H::LAYOUT`, with `H::RESERVE` beside them.
    unsafe { slot_in(obj, tag, H::LAYOUT, H::RESERVE) }
}

/// The slot word of `obj`, which host `H`'s allocator made: for a host that knows it without
/// reading the header's tag (a wrapper that lives in the object's memory, or that recorded the
/// tag when it was tied), so that a call reads the slot's line alone.
///
/// # Safety
/// `obj` is a live object made by `H`'s frontend allocator.
#[inline(always)]
pub unsafe fn slot_of_prefixed<'a, H: TieHost>(obj: *mut ObjectHeader) -> Slot<'a> {
    // SAFETY: that allocator placed its slot, laid out as `H::LAYOUT`, in front of the header
    // with `H::RESERVE` beside it, and it lives as long as the object's memory (this
    // function's contract).
    unsafe { Slot::from_raw(H::LAYOUT.word_of(obj, H::RESERVE)) }
}

/// The slot word of `obj` if the frontend allocator tagged `tag`, whose slots are laid out as
/// `layout` with `reserve` beside each, made it.
///
/// # Safety
/// `obj` is a live object; `layout` and `reserve` are those that allocator was installed with.
#[inline(always)]
pub unsafe fn slot_in<'a>(obj: *mut ObjectHeader, tag: u32, layout: SlotLayout, reserve: Reserve) -> Option<Slot<'a>> {
    // SAFETY: `obj` is live; its alloc_tag says whether the prefix exists.
    if unsafe { (*obj).alloc_tag } == tag && tag != crate::alloc::BUILTIN_TAG {
        // SAFETY: that allocator placed its slot, laid out as `layout`, in front of the header
        // with `reserve` beside it, and it lives as long as the object's memory;
        // the pointer is derived from `obj`, so it may reach the whole prefix.
        Some(unsafe { Slot::from_raw(layout.word_of(obj, reserve)) })
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

/// What returning an object to the language gave: its live canonical wrapper, or a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returned<T> {
    /// The wrapper the slot named was alive; the return's +1 was dropped or kept as a spare.
    Revived(T),
    /// A new wrapper was made (by [`TieHost::create`]) and now owns the return's +1.
    Created(T),
    /// The object is a Function made from the language's own callable, returned as that
    /// callable ([`TieHost::callable_of`]); nothing was tied.
    Callable(T),
    /// The object is a host value of the language, returned as that value itself
    /// ([`TieHost::host_value_of`]); nothing was tied.
    HostValue(T),
}

impl<T> Returned<T> {
    /// The wrapper's handle, however it was found.
    #[inline]
    pub fn into_handle(self) -> T {
        match self {
            Returned::Revived(h) | Returned::Created(h) | Returned::Callable(h) | Returned::HostValue(h) => h,
        }
    }

    pub fn is_created(&self) -> bool {
        matches!(self, Returned::Created(_))
    }
}

/// How one frontend makes and revives wrappers: the one contract between the core's protocol
/// (`crate::boundary`) and a language.
///
/// # Safety
/// An implementation promises, for every slot of its frontend:
/// - `revive` returns a strong handle to the wrapper named by `word` only if that wrapper
///   really is alive, and runs no language code (it may run under the slot lock);
/// - `create` returns a word that `revive` understands, with bits 0 and 1 clear (and below
///   2^48 for a [`TieHost::SERIALIZED`] host), and the wrapper it makes owns the `ObjectRef` it
///   is given; on `Err` it has dropped that reference or handed it to something that drops it;
/// - `SERIALIZED` is true only if every caller of the protocol for this host's slots holds
///   one lock (see the constant), and `WORD_ONLY` only if every release names the wrapper's
///   own word while the wrapper's memory exists.
pub unsafe trait TieHost {
    /// A strong language handle to a wrapper.
    type Handle;
    /// How this host fails: its own error type (a language exception already raised, a
    /// failed engine call), returned as is by the protocol.
    type Error;
    /// What a host works out before a new wrapper can be made, outside any slot transition
    /// (a class to instantiate, a block allocated beforehand): [`TieHost::prepare`]'s result.
    type Prepared;
    /// True when every transition of this host's slots happens under one lock that every
    /// caller of [`tie`] and [`untie`] already holds (CPython's GIL; a Node env's JS thread).
    /// Then the slot word is read and written without locking it: an Active word revives with
    /// one load (the fast path of every return), new and dying wrappers store plainly. Only
    /// the allocator's free hook runs elsewhere, once the object is dead (so never during a
    /// tie or untie, whose caller holds a reference), and it touches Inactive words only.
    /// Serialized hosts' Active words are also below 2^48 (user-space addresses): the top 16
    /// bits hold the slot's spare references.
    const SERIALIZED: bool = false;
    /// True when the host's wrappers are released synchronously, while their memory (whose
    /// address is the word) still exists, so a release can name the wrapper's own word instead
    /// of a generation: the host's allocator then reserves only the slot word
    /// ([`SlotLayout::WordOnly`]), and [`untie`]'s ticket is that word.
    const WORD_ONLY: bool = false;
    /// When a leaf call claims the spare it lends to its first wrapper argument (serialized
    /// hosts; see [`super::ClaimMode`]): at once only if converting the later arguments never
    /// runs language code when it succeeds.
    const CLAIM_MODE: super::ClaimMode = super::ClaimMode::AfterConversion;
    /// Bytes this host's allocator sets aside beside each object's slot for the host's own
    /// use, freed with the object's memory (a multiple of 8; CPython and Node: the memory of
    /// the object's first wrapper, so the object and its wrapper are one allocation), zeroed
    /// when the object is allocated. A host reads and writes them only while it holds a strong
    /// or weak reference to the object.
    const RESERVE: Reserve = Reserve::NONE;
    /// True when the wrapper a host makes in an object's reserve is named by the reserve's
    /// address (its Active word, spares aside, is that address). A serialized revive then
    /// takes the wrapper's address from the slot's position and checks that the word names
    /// it, so its reads of the wrapper need not wait for the slot word's load (one dependent
    /// load less on every return of a live wrapper: CPython's field read).
    const WRAPPER_AT_RESERVE: bool = false;
    /// The slot layout of this host's allocator (follows [`Self::WORD_ONLY`]).
    const LAYOUT: SlotLayout = if Self::WORD_ONLY { SlotLayout::WordOnly } else { SlotLayout::Full };
    /// Try to get a strong handle from an Active word; `None` if the wrapper is dying.
    ///
    /// # Safety
    /// `word` is an Active word this host stored, read under the slot lock.
    unsafe fn revive(&self, word: usize) -> Option<Self::Handle>;
    /// Get ready to make a wrapper for `obj`, whose slot named no live wrapper a moment ago.
    /// Runs outside any slot transition, so it may run language code (build a class).
    fn prepare(&self, obj: &ObjectRef) -> std::result::Result<Self::Prepared, Self::Error>;
    /// Make a new wrapper owning `obj`, as `prepared` says; return it and its slot word.
    /// `generation` is the value a later [`untie`] for this wrapper must name (0 for
    /// [`Self::WORD_ONLY`] hosts, whose untie names the word).
    ///
    /// # Safety
    /// Called under the slot lock with the previous content as described by `previous`.
    unsafe fn create(
        &self,
        prepared: &Self::Prepared,
        obj: ObjectRef,
        previous: Previous,
        generation: u64,
    ) -> std::result::Result<(Self::Handle, usize), Self::Error>;
    /// The language's own callable that Function `func` was made from (a callback coming home:
    /// `echo(f) is f`), if it is one. Such Functions go back as that callable and are never
    /// tied. Asked only for Functions whose slot names no live wrapper.
    fn callable_of(&self, _func: &ObjectRef) -> std::result::Result<Option<Self::Handle>, Self::Error> {
        Ok(None)
    }
    /// The language value host value `value` holds, as a new strong handle, when it is of this
    /// host's language (`value.value_for(&LANGUAGE)`: a host value coming home, `echo(o) is o`),
    /// or the host's error (a TypeError) when it is another language's. Such objects are never
    /// tied. The default, `None`, ties them like any object (a host with no values of its own).
    fn host_value_of(
        &self,
        _value: &crate::host_value::HostValueObj,
    ) -> std::result::Result<Option<Self::Handle>, Self::Error> {
        Ok(None)
    }
    /// May `obj`'s Active slot keep a return's extra reference as a spare? Only when the
    /// wrapper it names will be untied (so the spares are released) before `obj` could
    /// otherwise die: true for wrappers that own their +1, false for a word that merely
    /// points at something the object itself keeps alive (a callback's own callable).
    fn keeps_spares(&self, _obj: *mut ObjectHeader) -> bool {
        true
    }
}

/// Lock the slot; returns the word that was in it.
fn lock(slot: Slot<'_>) -> usize {
    let mut spins = 0;
    loop {
        let word = slot.load(Ordering::Relaxed);
        if word & TAG_LOCKED == 0
            && slot.compare_exchange_weak(word, TAG_LOCKED, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            return word;
        }
        backoff(&mut spins);
    }
}

/// Unlocks with `word` when dropped, also if the host panics mid-transition.
struct Locked<'a> {
    slot: Slot<'a>,
    restore: usize,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.slot.store(self.restore, Ordering::Release);
    }
}

/// Return `obj` (an owned +1) to the language: the canonical wrapper if one is alive,
/// otherwise a new one made as `prepared` says and tied into the slot. Consumes `obj` either
/// way. `slot` is a slot of `H` (from [`slot_of`] or its side table).
#[inline]
pub fn tie<H: TieHost>(
    host: &H,
    prepared: &H::Prepared,
    slot: Slot<'_>,
    obj: ObjectRef,
) -> std::result::Result<Returned<H::Handle>, H::Error> {
    let obj = if H::SERIALIZED {
        match revive_active(host, slot, obj) {
            Ok(handle) => return Ok(Returned::Revived(handle)),
            Err(obj) => obj,
        }
    } else {
        obj
    };
    tie_locked(host, prepared, slot, obj)
}

/// A serialized host's return without locking: the wrapper an Active word names, revived,
/// with `obj`'s +1 kept as a spare. `obj` comes back when the slot holds no live wrapper.
#[inline(always)]
fn revive_active<H: TieHost>(host: &H, slot: Slot<'_>, obj: ObjectRef) -> std::result::Result<H::Handle, ObjectRef> {
    match live_handle(host, slot) {
        Some((handle, active)) => {
            // The canonical wrapper already owns its +1: keep this one as a spare.
            if host.keeps_spares(obj.as_ptr()) {
                keep_spare(slot, active, obj);
            }
            Ok(handle)
        }
        None => Err(obj),
    }
}

/// A serialized host's live wrapper named by `slot`, revived, if there is one.
#[inline(always)]
pub(super) fn live_handle<H: TieHost>(host: &H, slot: Slot<'_>) -> Option<(H::Handle, ActiveWord)> {
    debug_assert!(H::SERIALIZED);
    let word = slot.load(Ordering::Acquire);
    if H::WRAPPER_AT_RESERVE && H::RESERVE.bytes() != 0 {
        let in_reserve = H::LAYOUT.reserve_at(slot.as_ptr(), H::RESERVE) as usize;
        if let Some(active) = SlotState::active_naming(word, in_reserve, H::SERIALIZED) {
            // SAFETY: an Active word naming `in_reserve`, as below.
            return unsafe { host.revive(in_reserve) }.map(|h| (h, active));
        }
    }
    let active = SlotState::active(word)?;
    // SAFETY: an Active word; the host's lock (held by the caller, see `SERIALIZED`) keeps it
    // from changing while we revive.
    unsafe { host.revive(active.wrapper(H::SERIALIZED)) }.map(|h| (h, active))
}

/// The first step of [`tie_any`] for serialized hosts, for callers that must prepare before a
/// wrapper can be made (e.g. build its class): the live wrapper of an object with this
/// host's prefix, revived, or `obj` back (then call [`tie_any`]).
#[inline(always)]
pub fn revive_any<H: TieHost>(host: &H, tag: u32, obj: ObjectRef) -> std::result::Result<H::Handle, ObjectRef> {
    if !H::SERIALIZED {
        return Err(obj);
    }
    // SAFETY: `obj` keeps the object alive.
    match unsafe { slot_of::<H>(obj.as_ptr(), tag) } {
        Some(slot) => revive_active(host, slot, obj),
        None => Err(obj),
    }
}

fn tie_locked<H: TieHost>(
    host: &H,
    prepared: &H::Prepared,
    slot: Slot<'_>,
    obj: ObjectRef,
) -> std::result::Result<Returned<H::Handle>, H::Error> {
    let word = enter::<H>(slot);
    let mut guard = Locked { slot, restore: word };
    let mut spares = 0;
    let previous = match SlotState::decode(word) {
        SlotState::Detached => Previous::Detached,
        SlotState::Inactive(block) => Previous::Inactive(block),
        SlotState::Active(active) => {
            // SAFETY: an Active word this host stored, read under the lock.
            if let Some(handle) = unsafe { host.revive(active.wrapper(H::SERIALIZED)) } {
                drop(guard);
                drop(obj); // the canonical wrapper already owns its +1
                return Ok(Returned::Revived(handle));
            }
            // Spares of a Dying predecessor stay: they are the slot's, released by its next untie.
            spares = active.spares(H::SERIALIZED);
            Previous::Dying(active.wrapper(H::SERIALIZED))
        }
        SlotState::Locked => unreachable!("a transition found its own slot locked"),
    };
    let generation = if H::WORD_ONLY {
        0
    } else {
        // SAFETY: a host with generations has SlotPrefix slots.
        (unsafe { aux_of(slot) }.load(Ordering::Relaxed) + 1) & GENERATION_MASK
    };
    // Whatever happens now, the old word is the host's to dispose of: never restore it.
    guard.restore = 0;
    // A failing `create` may drop the last reference to `obj`, and the slot's memory with it,
    // so nothing may touch the slot after a failure: a serialized host's slot is cleared now
    // (nobody else reads it meanwhile); a locked one stays locked, so a reference of our own
    // keeps the object alive until it is unlocked.
    let (alive, ptr) = (if H::SERIALIZED { None } else { Some(obj.clone()) }, obj.as_ptr());
    if H::SERIALIZED {
        slot.store(0, Ordering::Relaxed);
    }
    // SAFETY: under the lock, `previous` describes the slot's former content.
    let created = unsafe { host.create(prepared, obj, previous, generation) };
    let (handle, new_word) = match created {
        Ok(made) => made,
        Err(e) => {
            if H::SERIALIZED {
                std::mem::forget(guard); // the slot is already clear
            } else {
                drop(guard); // unlocks (Detached) while `alive` still holds the object
            }
            if spares != 0 {
                // SAFETY: the slot owned these references and nothing else will release them;
                // they kept the object alive through the failed create.
                unsafe { crate::object::dec_ref_n(ptr, spares) };
            }
            drop(alive);
            return Err(e);
        }
    };
    assert!(
        matches!(SlotState::decode(new_word), SlotState::Active(a) if a.spares(H::SERIALIZED) == 0),
        "the host's word is tagged or uses the spare bits"
    );
    if !H::WORD_ONLY {
        // SAFETY: a host with generations has SlotPrefix slots, so `aux` follows the word. The
        // class hint above the generation is kept; under the slot lock nothing else writes it.
        let aux = unsafe { aux_of(slot) };
        aux.store((aux.load(Ordering::Relaxed) & !GENERATION_MASK) | generation, Ordering::Relaxed);
    }
    guard.restore = ActiveWord::new(new_word, spares).word();
    drop(guard);
    drop(alive);
    Ok(Returned::Created(handle))
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
fn enter<H: TieHost>(slot: Slot<'_>) -> usize {
    if H::SERIALIZED {
        slot.load(Ordering::Acquire)
    } else {
        lock(slot)
    }
}

/// A wrapper is going away: if the slot still names it, replace its word by `replacement`
/// (0, or a cached block | [`TAG_INACTIVE`]) and return the removed word and spares for the
/// caller to dispose of. `None` when a newer wrapper owns the slot (leave it). `ticket` names
/// the wrapper: its generation, or for a [`TieHost::WORD_ONLY`] host its own word. `H` is the
/// frontend's host; the caller holds a reference to the slot's object.
pub fn untie<H: TieHost>(slot: Slot<'_>, ticket: u64, replacement: usize) -> Option<Untied> {
    let word = enter::<H>(slot);
    let untied = match SlotState::decode(word) {
        SlotState::Active(active) => {
            let wrapper = active.wrapper(H::SERIALIZED);
            let current = if H::WORD_ONLY {
                wrapper as u64 == ticket
            } else {
                // SAFETY: a host with generations has SlotPrefix slots.
                unsafe { aux_of(slot) }.load(Ordering::Relaxed) & GENERATION_MASK == ticket
            };
            current.then_some(Untied { word: wrapper, spare: active.spares(H::SERIALIZED) })
        }
        _ => None,
    };
    slot.store(if untied.is_some() { replacement } else { word }, Ordering::Release);
    untied
}

/// The wrapper named by `ticket` (its generation), tied with the placeholder word `from`, gets
/// its real word `to` while the slot still names it with `from`: a host may tie a new wrapper
/// whose object nothing else can reach with a word that costs nothing, and make the real one
/// (the JVM's weak global reference) only when the wrapper first hands its object to native
/// code. False when the slot names anything else (another thread's rebind came first, or the
/// wrapper is gone): `to` is still the caller's. The caller holds a reference to the object.
pub fn rebind<H: TieHost>(slot: Slot<'_>, ticket: u64, from: usize, to: usize) -> bool {
    const { assert!(!H::WORD_ONLY, "a word-only host's ticket is its word, which a rebind would change") };
    let word = enter::<H>(slot);
    let names_it = |active: ActiveWord| {
        active.wrapper(H::SERIALIZED) == from
            // SAFETY: a host with generations (not word-only) has SlotPrefix slots.
            && unsafe { aux_of(slot) }.load(Ordering::Relaxed) & GENERATION_MASK == ticket
    };
    let rebound = match SlotState::decode(word) {
        SlotState::Active(active) if names_it(active) => Some(ActiveWord::new(to, active.spares(H::SERIALIZED)).word()),
        _ => None,
    };
    slot.store(rebound.unwrap_or(word), Ordering::Release);
    rebound.is_some()
}

/// Take a cached (Inactive) block out of a slot whose object is being freed; the caller frees
/// the block. Used from a frontend allocator's free hook. No lock: every tie and untie holds a
/// reference to the slot's object, so none can run once it is being freed (a locked
/// instruction less for every object that dies).
///
/// # Safety
/// The slot's object is being freed (or, in tests, nothing else uses the slot).
pub unsafe fn take_inactive(slot: Slot<'_>) -> Option<usize> {
    // Acquire: the untie that made the word Inactive happened before the last reference went.
    let word = slot.load(Ordering::Acquire);
    let SlotState::Inactive(block) = SlotState::decode(word) else {
        return None;
    };
    slot.store(0, Ordering::Relaxed);
    Some(block)
}

/// The word currently in the slot (a racy snapshot, for tests and diagnostics).
#[inline]
pub fn peek(slot: Slot<'_>) -> usize {
    slot.load(Ordering::Acquire)
}

/// Tie `obj` through its prefix or the side table, pruning a side entry a failed create
/// left Detached.
pub fn tie_any<H: TieHost>(
    host: &H,
    prepared: &H::Prepared,
    tag: u32,
    side: &SideTable,
    obj: ObjectRef,
) -> std::result::Result<Returned<H::Handle>, H::Error> {
    let ptr = obj.as_ptr();
    // SAFETY: `obj` keeps the object alive.
    if let Some(slot) = unsafe { slot_of::<H>(ptr, tag) } {
        return tie(host, prepared, slot, obj);
    }
    let entry = side.entry(ptr);
    let out = tie(host, prepared, Slot::of(&entry), obj);
    if out.is_err() {
        drop(entry);
        side.prune(ptr);
    }
    out
}

/// Release for a wrapper named by `ticket` (see [`untie`]) tied to `obj` (prefix or side
/// table) by host `H`. Returns the removed word for the caller to dispose of; the slot's
/// spare references are dropped here. Call before dropping the wrapper's +1.
///
/// # Safety
/// `obj` is live (the wrapper still holds its +1).
pub unsafe fn untie_any<H: TieHost>(
    obj: *mut ObjectHeader,
    tag: u32,
    side: &SideTable,
    ticket: u64,
    replacement: usize,
) -> Option<usize> {
    // SAFETY: `obj` is live (the caller's guarantee), so its header's alloc_tag is readable.
    let untied = if let Some(slot) = unsafe { slot_of::<H>(obj, tag) } {
        untie::<H>(slot, ticket, replacement)
    } else {
        let entry = side.existing(obj)?;
        let untied = untie::<H>(Slot::of(&entry), ticket, replacement);
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
