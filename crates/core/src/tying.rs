//! The identity-tying state machine, written once for every frontend.
//!
//! Each native object made by a frontend allocator carries that frontend's slot in front of
//! its header; objects with another `alloc_tag` get one from a [`SideTable`] keyed by
//! address. The slot word names the object's one canonical wrapper in that frontend's
//! language:
//!
//! | state | slot word | meaning |
//! |---|---|---|
//! | Detached | 0 | no wrapper |
//! | Active | wrapper word (bit 0 and bit 1 clear) | wrapper alive, owns +1 on the native object |
//! | Inactive | cached block \| [`TAG_INACTIVE`] | wrapper died; its memory is kept for revival |
//! | Locked | [`TAG_LOCKED`] | a transition is in flight; others spin |
//!
//! Every transition locks the slot by compare-and-swap, so it is correct with or without an
//! interpreter lock. A release must name the wrapper it was made for, so that a late
//! finalizer (Node, the JVM's Cleaner) never clears a slot that a newer wrapper took over,
//! even when the language reuses handle addresses: hosts with such finalizers name a
//! generation, kept in `aux` (a [`SlotPrefix`], 16 bytes) and bumped each time a new wrapper
//! is tied; hosts whose wrappers are released synchronously, while their memory still
//! exists, name their own word instead and need only the word (8 bytes in front of each
//! object, [`TieHost::WORD_ONLY`]). Rule: whoever takes a word out of the slot disposes of it.
//!
//! Spare references (top 16 bits of an Active word, serialized hosts only): returning an
//! object whose wrapper is alive hands the frontend a +1 it does not need. Dropping it costs
//! an atomic decrement on every return, so the slot keeps it instead, and [`take_spare`]
//! lends one out as a call argument, saving the increment too (`echo(x)` then touches no
//! atomic at all). Spares belong to the slot while it is Active and are released by the
//! [`untie`] that ends it, so they never outlive the wrapper: the object dies exactly when it
//! did without them.
//!
//! A frontend implements [`TieHost`] (how to revive a wrapper from a word, how to make a new
//! one) and calls [`tie`] for every native object it returns to its language, and
//! [`untie`] when a wrapper dies or is closed.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::address_map::AddressMap;
use crate::arc::ObjectRef;
use crate::object::ObjectHeader;
use crate::spin::backoff;

/// Slot word bit: a transition is in flight.
pub const TAG_LOCKED: usize = 1;
/// Slot word bit: the word is a cached wrapper block kept for revival.
pub const TAG_INACTIVE: usize = 2;
const TAG_MASK: usize = TAG_LOCKED | TAG_INACTIVE;

/// `aux` bits holding the generation.
const GENERATION_MASK: u64 = 0xffff_ffff;
/// Where an Active word of a serialized host keeps its spare references: the top 16 bits
/// (such hosts' words are user-space addresses, below 2^48).
const SPARE_SHIFT: u32 = 48;
const SPARE_ONE: usize = 1 << SPARE_SHIFT;
const SPARE_MASK: usize = !0 << SPARE_SHIFT;
/// At most this many spares per slot; a slot at the cap drops further extras as before.
const SPARE_MAX: usize = 0xffff;

/// The 16 bytes a frontend allocator reserves in front of each object for a host that names
/// generations (the default). A [`TieHost::WORD_ONLY`] host's allocator reserves the 8-byte
/// `slot` word alone, right in front of the header.
#[repr(C)]
pub struct SlotPrefix {
    pub slot: AtomicUsize,
    /// Low 32 bits: the generation of the wrapper the slot names (or last named).
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
}

impl Default for SlotPrefix {
    fn default() -> Self {
        Self::new()
    }
}

/// What a frontend allocator puts in front of each object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotLayout {
    /// A [`SlotPrefix`]: the word and the generation (16 bytes).
    Full,
    /// The slot word alone (8 bytes), for [`TieHost::WORD_ONLY`] hosts.
    WordOnly,
}

impl SlotLayout {
    /// Bytes the layout takes in front of the header.
    pub const fn size(self) -> usize {
        match self {
            SlotLayout::Full => std::mem::size_of::<SlotPrefix>(),
            SlotLayout::WordOnly => std::mem::size_of::<AtomicUsize>(),
        }
    }

    /// Where the slot word of `obj` is (meaningful only for objects made by an allocator
    /// with this layout: check `alloc_tag` first, see [`slot_of`]).
    pub fn word_before(self, obj: *mut ObjectHeader) -> *mut AtomicUsize {
        (obj as *mut u8).wrapping_sub(self.size()) as *mut AtomicUsize
    }
}

/// A slot, by the address of its word. Kept as a pointer (not `&AtomicUsize`) because for a
/// [`SlotPrefix`] the generation word after it belongs to the slot too, and a reference to the
/// word alone could not reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot<'a> {
    word: *const AtomicUsize,
    _slot: std::marker::PhantomData<&'a SlotPrefix>,
}

impl<'a> Slot<'a> {
    /// The slot of a whole [`SlotPrefix`] (a side-table entry, a test's prefix).
    pub fn of(prefix: &'a SlotPrefix) -> Slot<'a> {
        Slot { word: prefix as *const SlotPrefix as *const AtomicUsize, _slot: std::marker::PhantomData }
    }

    /// The slot whose word is at `word`.
    ///
    /// # Safety
    /// `word` points to a slot word that lives for `'a`: a [`SlotPrefix`]'s (with a pointer
    /// that may reach the whole prefix) or a [`SlotLayout::WordOnly`] one.
    pub unsafe fn from_raw(word: *const AtomicUsize) -> Slot<'a> {
        Slot { word, _slot: std::marker::PhantomData }
    }

    /// The address of the slot word.
    pub fn as_ptr(self) -> *const AtomicUsize {
        self.word
    }
}

impl std::ops::Deref for Slot<'_> {
    type Target = AtomicUsize;

    fn deref(&self) -> &AtomicUsize {
        // SAFETY: `Slot` is only made for a word that lives as long as it does.
        unsafe { &*self.word }
    }
}

/// The slot word of `obj` if the allocator tagged `tag` (host `H`'s) made it.
///
/// # Safety
/// `obj` is a live object.
#[inline]
pub unsafe fn slot_of<'a, H: TieHost>(obj: *mut ObjectHeader, tag: u32) -> Option<Slot<'a>> {
    // SAFETY: forwarded; `H`'s allocator lays its slots out as `H::LAYOUT`.
    unsafe { slot_in(obj, tag, H::LAYOUT) }
}

/// The slot word of `obj` if the frontend allocator tagged `tag`, whose slots are laid out as
/// `layout`, made it.
///
/// # Safety
/// `obj` is a live object; `layout` is the layout that allocator was installed with.
#[inline]
pub unsafe fn slot_in<'a>(obj: *mut ObjectHeader, tag: u32, layout: SlotLayout) -> Option<Slot<'a>> {
    // SAFETY: `obj` is live; its alloc_tag says whether the prefix exists.
    if unsafe { (*obj).alloc_tag } == tag && tag != crate::alloc::BUILTIN_TAG {
        // SAFETY: that allocator placed its slot right before the header, laid out as
        // `layout`, and it lives as long as the object's memory; the pointer is derived from
        // `obj`, so it may reach the whole prefix.
        Some(unsafe { Slot::from_raw(layout.word_before(obj)) })
    } else {
        None
    }
}

/// The generation word of `slot`.
///
/// # Safety
/// `slot` is a [`SlotPrefix`]'s (a Full-layout prefix or a side-table entry), which is what
/// every non-[`TieHost::WORD_ONLY`] host's slots are.
#[inline]
unsafe fn aux_of(slot: Slot<'_>) -> &AtomicU64 {
    // SAFETY: the caller's guarantee: `aux` follows the word inside the same SlotPrefix, and
    // `Slot` pointers may reach the whole prefix.
    unsafe { &(*(slot.word as *const SlotPrefix)).aux }
}

/// The wrapper word inside an Active slot word (without its spare count).
#[inline]
fn wrapper_word<H: TieHost>(word: usize) -> usize {
    if H::SERIALIZED {
        word & !SPARE_MASK
    } else {
        word
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
}

impl<T> Returned<T> {
    /// The wrapper's handle, however it was found.
    #[inline]
    pub fn into_handle(self) -> T {
        match self {
            Returned::Revived(h) | Returned::Created(h) => h,
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
#[inline]
fn revive_active<H: TieHost>(host: &H, slot: Slot<'_>, obj: ObjectRef) -> std::result::Result<H::Handle, ObjectRef> {
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
fn live_handle<H: TieHost>(host: &H, slot: Slot<'_>) -> Option<H::Handle> {
    debug_assert!(H::SERIALIZED);
    let word = slot.load(Ordering::Acquire);
    if word != 0 && word & TAG_MASK == 0 {
        // SAFETY: an Active word; the host's lock (held by the caller, see `SERIALIZED`)
        // keeps it from changing while we revive.
        unsafe { host.revive(wrapper_word::<H>(word)) }
    } else {
        None
    }
}

/// The live wrapper of the object a cell holds, revived while the cell is held (which keeps the
/// object alive; the wrapper owns its own +1, so no count changes), for a serialized host and
/// a value whose kind `ties` says comes back as a wrapper. `None` when there is none (or the
/// object has no prefix of this host): the caller copies the value (`cell.get()`) and
/// converts it as usual. This is how frontends read cell fields (`cell::direct_cell`).
///
/// # Safety
/// The caller runs under the host's lock; `revive` runs no language code (the cell is held).
#[inline]
pub unsafe fn revive_in_cell<H: TieHost>(
    host: &H,
    tag: u32,
    cell: &crate::cell::AnyCell,
    ties: impl FnOnce(i32) -> bool,
) -> Option<H::Handle> {
    if !H::SERIALIZED {
        return None;
    }
    cell.with_view(|v| match v.as_object_ptr() {
        // SAFETY: the held cell keeps `obj` alive while its slot is read.
        Some(obj) if ties(v.type_index()) => live_handle(host, unsafe { slot_of::<H>(obj, tag) }?),
        _ => None,
    })
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
    match unsafe { slot_of::<H>(obj.as_ptr(), tag) } {
        Some(slot) => revive_active(host, slot, obj),
        None => Err(obj),
    }
}

/// Keep `obj`'s extra +1 in its Active slot, or drop it when the slot is full.
/// Only for serialized hosts, under their lock (nothing else writes the word meanwhile), and
/// only when the slot's wrapper owns its +1 and will be untied ([`TieHost::keeps_spares`]).
#[inline]
fn keep_spare(slot: Slot<'_>, obj: ObjectRef) {
    let word = slot.load(Ordering::Relaxed);
    if word >> SPARE_SHIFT < SPARE_MAX {
        slot.store(word + SPARE_ONE, Ordering::Relaxed);
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
/// `obj` is live, and the caller is serialized host `H` ([`TieHost::SERIALIZED`]) of the
/// allocator tagged `tag`, running under its lock.
#[inline]
pub unsafe fn take_spare<H: TieHost>(obj: *mut ObjectHeader, tag: u32) -> bool {
    // SAFETY: forwarded.
    let Some(slot) = (unsafe { slot_of::<H>(obj, tag) }) else { return false };
    let word = slot.load(Ordering::Relaxed);
    if word >> SPARE_SHIFT == 0 {
        return false;
    }
    slot.store(word - SPARE_ONE, Ordering::Relaxed);
    true
}

/// Does `obj`'s prefix slot name the wrapper whose word is `word` and hold a spare reference?
/// A caller that claims the spare without taking it (lends it to a leaf call, then either gets
/// it back as the result, or consumes the claim with [`take_spare`]) must be the only one to
/// use that spare meanwhile.
///
/// # Safety
/// As [`take_spare`].
#[inline]
pub unsafe fn has_spare_for<H: TieHost>(obj: *mut ObjectHeader, tag: u32, word: usize) -> bool {
    // SAFETY: forwarded.
    unsafe { slot_of::<H>(obj, tag) }.is_some_and(|slot| {
        let current = slot.load(Ordering::Relaxed);
        current >> SPARE_SHIFT != 0 && wrapper_word::<H>(current) == word
    })
}

/// A call returned `obj`, which the argument wrapper whose slot word is `word` names (`echo(p)`):
/// when `obj`'s prefix slot holds that word, that wrapper is canonical, so the host returns the
/// argument itself and `obj`'s +1 stays in the slot as a spare (`Ok`). Otherwise `obj` comes
/// back for the ordinary [`tie`].
///
/// # Safety
/// `obj` is live; the caller is serialized host `H` ([`TieHost::SERIALIZED`]) of the
/// allocator tagged `tag`, running under its lock, whose wrappers own their +1 and are
/// untied when they go (so [`TieHost::keeps_spares`] holds for `obj`).
#[inline]
pub unsafe fn keep_if_tied_to<H: TieHost>(obj: ObjectRef, tag: u32, word: usize) -> std::result::Result<(), ObjectRef> {
    // SAFETY: `obj` keeps the object alive.
    match unsafe { slot_of::<H>(obj.as_ptr(), tag) } {
        Some(slot) if wrapper_word::<H>(peek(slot)) == word => {
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
pub unsafe fn argument_view<'a, H: TieHost>(obj: *mut ObjectHeader, tag: u32, lend: bool) -> crate::AnyView<'a> {
    // SAFETY: forwarded; a spare taken is handed to the view, which carries it to the callee.
    unsafe {
        if lend && take_spare::<H>(obj, tag) {
            crate::AnyView::lent_object(obj)
        } else {
            crate::AnyView::from_object_ptr(obj)
        }
    }
}

/// The spare reference lent to a leaf call's first wrapper argument that has one, claimed but
/// still counted in its slot: if the call returns that object (`echo(x)`), the result's +1 simply
/// is the spare again and the slot is never written; otherwise the claim is consumed after the
/// call ([`SpareClaim::settle`]). Between the claim and the settle nothing else may lend that
/// object's spares: the leaf callee runs no language code, the serialized host's lock keeps
/// other threads out, and the host claims either at once ([`SpareClaim::claim_now`]), when
/// converting the later arguments runs no language code on success, or once every argument is
/// converted ([`SpareClaim::offer`], then [`SpareClaim::commit`]), when it can (a JS getter
/// may call back into native code and lend the same object's spares itself).
pub struct SpareClaim {
    /// The argument offered or claimed (null: none yet), its index and wrapper word.
    obj: *mut ObjectHeader,
    index: usize,
    word: usize,
    /// The spare is lent to argument `index`.
    claimed: bool,
}

impl SpareClaim {
    pub const fn new() -> Self {
        SpareClaim { obj: std::ptr::null_mut(), index: 0, word: 0, claimed: false }
    }

    /// The view of argument `index`, wrapper `word` of `obj`, claiming the first spare at once
    /// (never lending the claimed object twice); other arguments go as [`argument_view`].
    ///
    /// # Safety
    /// As [`argument_view`], for a leaf call of serialized host `H` whose later argument
    /// conversions run no language code when they succeed.
    #[inline]
    pub unsafe fn claim_now<'a, H: TieHost>(
        &mut self,
        index: usize,
        obj: *mut ObjectHeader,
        tag: u32,
        word: usize,
        lend: bool,
    ) -> crate::AnyView<'a> {
        // SAFETY: forwarded; the wrapper's +1 keeps `obj` alive for the call.
        unsafe {
            if lend && self.obj.is_null() && has_spare_for::<H>(obj, tag, word) {
                *self = SpareClaim { obj, index, word, claimed: true };
                crate::AnyView::lent_object(obj)
            } else if obj == self.obj {
                crate::AnyView::from_object_ptr(obj)
            } else {
                argument_view::<H>(obj, tag, lend)
            }
        }
    }

    /// The view of argument `index`, wrapper `word` of `obj`: the first one is borrowed for now
    /// and offered for a claim at [`SpareClaim::commit`]; others go as [`argument_view`].
    ///
    /// # Safety
    /// As [`argument_view`], for a leaf call of serialized host `H`.
    #[inline]
    pub unsafe fn offer<'a, H: TieHost>(
        &mut self,
        index: usize,
        obj: *mut ObjectHeader,
        tag: u32,
        word: usize,
        lend: bool,
    ) -> crate::AnyView<'a> {
        if lend && self.obj.is_null() {
            *self = SpareClaim { obj, index, word, claimed: false };
            // SAFETY: the wrapper's +1 keeps `obj` alive for the call.
            return unsafe { crate::AnyView::from_object_ptr(obj) };
        }
        // SAFETY: forwarded.
        unsafe { argument_view::<H>(obj, tag, lend) }
    }

    /// Once every argument is converted, right before the call: claim the offered argument's
    /// spare if its slot still names its wrapper and holds one. Returns the argument's index and
    /// its lent view, which replaces the borrowed one.
    ///
    /// # Safety
    /// As [`SpareClaim::offer`]; nothing but the leaf callee runs before [`SpareClaim::settle`].
    #[inline]
    pub unsafe fn commit<'a, H: TieHost>(&mut self, tag: u32) -> Option<(usize, crate::AnyView<'a>)> {
        // SAFETY: forwarded.
        if self.obj.is_null() || self.claimed || !unsafe { has_spare_for::<H>(self.obj, tag, self.word) } {
            return None;
        }
        self.claimed = true;
        // SAFETY: the spare this claims is the view's until the call settles.
        Some((self.index, unsafe { crate::AnyView::lent_object(self.obj) }))
    }

    /// Is `view` the claimed argument? (Its lent reference was never taken: a call abandoned
    /// before it ran must not release it.)
    pub fn is_claimed(&self, view: &crate::AnyView<'_>) -> bool {
        self.claimed && view.as_object_ptr() == Some(self.obj)
    }

    /// After the call: the claimed argument's index when `result` is the claimed object (its
    /// +1 is the spare, still counted in the slot: the caller forgets the result and returns
    /// that argument's wrapper); otherwise `None`, and the callee consumed the lent reference
    /// (adopted or released it), so the claimed spare leaves the slot.
    ///
    /// # Safety
    /// The claim was made for this call, for host `H` of the allocator tagged `tag`, still
    /// under its lock; `result` is the call's object result, if it succeeded with one.
    #[inline]
    pub unsafe fn settle<H: TieHost>(&self, tag: u32, result: Option<*mut ObjectHeader>) -> Option<usize> {
        if !self.claimed {
            return None;
        }
        if result == Some(self.obj) {
            return Some(self.index);
        }
        // SAFETY: the argument's wrapper keeps the object alive; the claimed spare is there.
        let taken = unsafe { take_spare::<H>(self.obj, tag) };
        debug_assert!(taken, "a claimed spare is in its slot until settled");
        None
    }
}

impl Default for SpareClaim {
    fn default() -> Self {
        Self::new()
    }
}

/// The generation of the wrapper tied last to `obj` by host `H` (which names generations),
/// when `H`'s allocator (`tag`) made `obj`; `None` otherwise. For a caller holding `obj`'s
/// live wrapper this is that wrapper's generation (its tie stored it; the slot moves on only
/// after the wrapper dies). Used to key per-thread spares (`thread_spares`).
///
/// # Safety
/// `obj` is a live object.
#[inline]
pub unsafe fn generation_of<H: TieHost>(obj: *mut ObjectHeader, tag: u32) -> Option<u64> {
    if H::WORD_ONLY {
        return None;
    }
    // SAFETY: forwarded; a host with generations has SlotPrefix slots.
    let slot = unsafe { slot_of::<H>(obj, tag) }?;
    // SAFETY: as above. Relaxed: the wrapper reached this thread after its tie stored the
    // generation (the language's publication orders them).
    Some(unsafe { aux_of(slot) }.load(Ordering::Relaxed) & GENERATION_MASK)
}

/// Spare references a slot holds right now (for tests and diagnostics).
pub fn spares(slot: Slot<'_>) -> u32 {
    let word = slot.load(Ordering::Relaxed);
    if word & TAG_MASK == 0 {
        (word >> SPARE_SHIFT) as u32
    } else {
        0
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
    let mut spare_bits = 0;
    let previous = if word == 0 {
        Previous::Detached
    } else if word & TAG_INACTIVE != 0 {
        Previous::Inactive(word & !TAG_MASK)
    } else {
        // SAFETY: an Active word this host stored, read under the lock.
        if let Some(handle) = unsafe { host.revive(wrapper_word::<H>(word)) } {
            drop(guard);
            drop(obj); // the canonical wrapper already owns its +1
            return Ok(Returned::Revived(handle));
        }
        // Spares of a Dying predecessor stay: they are the slot's, released by its next untie.
        spare_bits = word ^ wrapper_word::<H>(word);
        Previous::Dying(wrapper_word::<H>(word))
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
            if spare_bits != 0 {
                // SAFETY: the slot owned these references and nothing else will release them;
                // they kept the object alive through the failed create.
                unsafe { crate::object::dec_ref_n(ptr, ((spare_bits >> SPARE_SHIFT) as u32).min(SPARE_MAX as u32)) };
            }
            drop(alive);
            return Err(e);
        }
    };
    debug_assert!(new_word != 0 && new_word & TAG_MASK == 0, "host returned a tagged word");
    assert!(!H::SERIALIZED || new_word & SPARE_MASK == 0, "a serialized host's word uses the spare bits");
    if !H::WORD_ONLY {
        // SAFETY: as above.
        unsafe { aux_of(slot) }.store(generation, Ordering::Relaxed);
    }
    guard.restore = new_word | spare_bits;
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
    let active = word != 0 && word & TAG_INACTIVE == 0;
    let current = active
        && if H::WORD_ONLY {
            wrapper_word::<H>(word) as u64 == ticket
        } else {
            // SAFETY: a host with generations has SlotPrefix slots.
            unsafe { aux_of(slot) }.load(Ordering::Relaxed) & GENERATION_MASK == ticket
        };
    slot.store(if current { replacement } else { word }, Ordering::Release);
    current.then_some(Untied {
        word: wrapper_word::<H>(word),
        spare: ((word ^ wrapper_word::<H>(word)) >> SPARE_SHIFT) as u32,
    })
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
    if word & TAG_INACTIVE == 0 {
        return None;
    }
    slot.store(0, Ordering::Relaxed);
    Some(word & !TAG_MASK)
}

/// The word currently in the slot (a racy snapshot, for tests and diagnostics).
#[inline]
pub fn peek(slot: Slot<'_>) -> usize {
    slot.load(Ordering::Acquire)
}

/// Slots for objects that carry no prefix of this frontend (made before it loaded, or by
/// another allocator), keyed by object address.
///
/// An entry is shared (`Arc`) while a thread works on it; it is removed only when its slot
/// is Detached and the table holds the sole reference, so a thread that found an entry
/// always ties into the entry that stays in the table.
pub struct SideTable {
    entries: Mutex<AddressMap<Arc<SlotPrefix>>>,
}

impl SideTable {
    pub const fn new() -> Self {
        SideTable { entries: Mutex::new(AddressMap::with_hasher(std::hash::BuildHasherDefault::new())) }
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

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for SideTable {
    fn default() -> Self {
        Self::new()
    }
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
    // SAFETY: forwarded.
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
