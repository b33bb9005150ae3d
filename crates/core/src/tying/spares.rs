//! Spare references in an Active slot (serialized hosts): kept on returns, lent to leaf calls,
//! claimed without being taken ([`SpareClaim`]); and the generation that keys per-thread spares.

use std::sync::atomic::Ordering;

use super::machine::{peek, slot_of, slot_of_prefixed, TieHost};
use crate::arc::ObjectRef;
use crate::object::{inc_ref_n, ObjectHeader};
use crate::slot::{aux_of, ActiveWord, Slot, SlotState, GENERATION_MASK, HINT_SHIFT};

/// Keep `obj`'s extra +1 in its Active slot, or drop it when the slot is full.
/// Only for serialized hosts, under their lock (nothing else writes the word meanwhile), and
/// only when the slot's wrapper owns its +1 and will be untied ([`TieHost::keeps_spares`]).
#[inline(always)]
pub(super) fn keep_spare(slot: Slot<'_>, active: ActiveWord, obj: ObjectRef) {
    match active.with_spare_added() {
        Some(more) => {
            slot.store(more.word(), Ordering::Relaxed);
            std::mem::forget(obj);
        }
        None => drop(obj),
    }
}

/// Take one spare reference out of `obj`'s prefix slot, if it has one: the caller then owns
/// that +1 (to lend it as a call argument, see `AnyView::lent_object`). Objects of other
/// allocators (side-table slots) have no spares here.
///
/// # Safety
/// `obj` is live, and the caller is serialized host `H` ([`TieHost::SERIALIZED`]) of the
/// allocator tagged `tag`, running under its lock.
#[inline(always)]
pub unsafe fn take_spare<H: TieHost>(obj: *mut ObjectHeader, tag: u32) -> bool {
    // SAFETY: `obj` is live and this is host `H`'s allocator tag (the caller's guarantee).
    let Some(slot) = (unsafe { slot_of::<H>(obj, tag) }) else { return false };
    let SlotState::Active(active) = SlotState::decode(slot.load(Ordering::Relaxed)) else { return false };
    match active.with_spare_taken() {
        Some(fewer) => {
            slot.store(fewer.word(), Ordering::Relaxed);
            true
        }
        None => false,
    }
}

/// Does `obj`'s prefix slot name the wrapper whose word is `word` and hold a spare reference?
/// A caller that claims the spare without taking it (lends it to a leaf call, then either gets
/// it back as the result, or consumes the claim with [`take_spare`]) must be the only one to
/// use that spare meanwhile.
///
/// # Safety
/// As [`take_spare`].
#[inline(always)]
pub unsafe fn has_spare_for<H: TieHost>(obj: *mut ObjectHeader, tag: u32, word: usize) -> bool {
    // SAFETY: `obj` is live and this is host `H`'s allocator tag (the caller's guarantee).
    unsafe { slot_of::<H>(obj, tag) }.is_some_and(|slot| slot_has_spare_for::<H>(slot, word))
}

/// As [`has_spare_for`], in a slot the caller found.
#[inline(always)]
fn slot_has_spare_for<H: TieHost>(slot: Slot<'_>, word: usize) -> bool {
    SlotState::active_naming(slot.load(Ordering::Relaxed), word, H::SERIALIZED)
        .is_some_and(|a| a.spares(H::SERIALIZED) != 0)
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
#[inline(always)]
pub unsafe fn keep_if_tied_to<H: TieHost>(obj: ObjectRef, tag: u32, word: usize) -> std::result::Result<(), ObjectRef> {
    // SAFETY: `obj` keeps the object alive.
    let Some(slot) = (unsafe { slot_of::<H>(obj.as_ptr(), tag) }) else { return Err(obj) };
    match SlotState::active_naming(peek(slot), word, H::SERIALIZED) {
        Some(active) => {
            keep_spare(slot, active, obj);
            Ok(())
        }
        None => Err(obj),
    }
}

/// The argument cell for `obj`, whose wrapper is an argument of a running leaf call (the
/// wrapper's +1 keeps it alive): with `lend`, a lent view carrying one of its slot's spares
/// when there is one (the callee then adds no reference), else a borrowed view.
///
/// # Safety
/// As [`take_spare`]; `obj` outlives the call.
#[inline(always)]
pub unsafe fn argument_view<'a, H: TieHost>(obj: *mut ObjectHeader, tag: u32, lend: bool) -> crate::AnyView<'a> {
    // SAFETY: the caller's guarantee; a live object's header is readable.
    unsafe { argument_view_of::<H>(crate::AnyView::from_object_ptr(obj), tag, lend) }
}

/// [`argument_view`] of the object `view` borrows, its type index known (no header read).
///
/// # Safety
/// As [`argument_view`], for `view`'s object; `view` is a borrowed object view.
#[inline(always)]
pub unsafe fn argument_view_of<'a, H: TieHost>(view: crate::AnyView<'a>, tag: u32, lend: bool) -> crate::AnyView<'a> {
    debug_assert!(view.is_object() && !view.is_lent());
    // SAFETY: as `take_spare` requires (this function's contract: the host's lock is held,
    // the object outlives the call); a spare taken is handed to the view, which carries it to
    // the callee.
    unsafe {
        if lend && take_spare::<H>(view.as_object_ptr().unwrap_unchecked(), tag) {
            view.lent()
        } else {
            view
        }
    }
}

/// Spare references a slot is charged with when a leaf call would lend one and it holds none:
/// one atomic add serves that many lends to callees that adopt them (a constructor's fields,
/// `Pair(x, x)`), where each would otherwise add its own reference with a locked increment
/// (on the Intel Xeon of issue 18, `Pair(x, x)`'s two cost ~8 ns of its 75). The spares are
/// the slot's until its wrapper is untied.
pub const CHARGE: u32 = 16;

/// The Active word of `slot`, which names wrapper `word`, once it holds more than `kept`
/// spares: when it holds no more, the slot is charged with [`CHARGE`] references to `obj`
/// first. `None` when the slot names another wrapper or none.
///
/// # Safety
/// As [`take_spare`]; `slot` is `obj`'s, and the wrapper `word` names owns its +1 and will be
/// untied (so the charged spares are released) before `obj` could otherwise die.
#[inline(always)]
unsafe fn spare_beyond<H: TieHost>(
    obj: *mut ObjectHeader,
    slot: Slot<'_>,
    word: usize,
    kept: u32,
) -> Option<ActiveWord> {
    let active = SlotState::active_naming(slot.load(Ordering::Relaxed), word, H::SERIALIZED)?;
    if active.spares(H::SERIALIZED) > kept {
        return Some(active);
    }
    // SAFETY: the caller's guarantee, passed on.
    Some(unsafe { charge(obj, slot, active) })
}

/// The view of a later argument of a leaf call, wrapper `word` of `view`'s object, whose slot
/// is `slot`: lent one of the slot's spares beyond the `kept` ones (claimed by an earlier
/// argument), the slot charged first when it has no more; borrowed when the slot names another
/// wrapper or none.
///
/// # Safety
/// As [`spare_beyond`], for `view`'s object; the callee adopts lent views.
#[inline(always)]
unsafe fn lend_charging<'a, H: TieHost>(
    view: crate::AnyView<'a>,
    slot: Option<Slot<'_>>,
    word: usize,
    kept: u32,
) -> crate::AnyView<'a> {
    // SAFETY: the caller's guarantee; the spare taken goes to the view.
    unsafe {
        let obj = view.as_object_ptr().unwrap_unchecked();
        match slot.and_then(|slot| Some((slot, spare_beyond::<H>(obj, slot, word, kept)?))) {
            Some((slot, active)) => {
                slot.store(active.with_spare_taken().unwrap_unchecked().word(), Ordering::Relaxed);
                view.lent()
            }
            None => view,
        }
    }
}

/// Add [`CHARGE`] strong references to `obj` and count them as spares of its `slot` (whose
/// word is `active`, holding at most one spare: a charge never reaches the cap).
///
/// # Safety
/// As [`spare_beyond`].
#[cold]
#[inline(never)]
unsafe fn charge(obj: *mut ObjectHeader, slot: Slot<'_>, active: ActiveWord) -> ActiveWord {
    // SAFETY: `obj` is live and the references go to its slot, which owns them from now on.
    unsafe { inc_ref_n(obj, CHARGE) };
    let charged = ActiveWord::new(active.wrapper(true), active.spares(true) + CHARGE);
    slot.store(charged.word(), Ordering::Relaxed);
    charged
}

/// When a serialized host's leaf call claims the spare it lends to its first wrapper argument
/// (see `tying::SpareClaim`). A host picks the mode its argument conversions allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimMode {
    /// While converting: a successful conversion of the later arguments runs no language
    /// code, so nothing can lend the same spare meanwhile (CPython).
    AtOnce,
    /// Once every argument is converted ([`LeafCall::commit`]): converting may run language
    /// code (a JS getter) that calls back into native code (Node).
    AfterConversion,
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

    /// The view of argument `index`, wrapper `word` of the object `view` borrows, claiming the
    /// first spare at once; the first argument otherwise goes as [`argument_view`], later ones
    /// are lent a spare beyond the claimed one, their slot charged when it has none (a call
    /// that returns its first argument, `echo(x)`, is served by the claim and never charges).
    ///
    /// # Safety
    /// As [`argument_view_of`], for a leaf call of serialized host `H` whose later argument
    /// conversions run no language code when they succeed; `prefixed` only when `H`'s
    /// allocator made the object (its slot is then read without checking the header's tag).
    #[inline(always)]
    pub unsafe fn claim_now<'a, H: TieHost>(
        &mut self,
        index: usize,
        view: crate::AnyView<'a>,
        tag: u32,
        word: usize,
        lend: bool,
        prefixed: bool,
    ) -> crate::AnyView<'a> {
        // SAFETY: the host is serialized and locked for the call (this method's contract); the
        // wrapper's +1 keeps the object alive for it, and owns its +1 (so a charge is
        // released at its untie); `prefixed` says `H`'s allocator made it.
        unsafe {
            let obj = view.as_object_ptr().unwrap_unchecked();
            let has_spare = || match prefixed {
                true => slot_has_spare_for::<H>(slot_of_prefixed::<H>(obj), word),
                false => has_spare_for::<H>(obj, tag, word),
            };
            if lend && self.obj.is_null() && has_spare() {
                *self = SpareClaim { obj, index, word, claimed: true };
                return view.lent();
            }
            if !lend || index == 0 {
                return argument_view_of::<H>(view, tag, lend);
            }
            let slot = match prefixed {
                true => Some(slot_of_prefixed::<H>(obj)),
                false => slot_of::<H>(obj, tag),
            };
            // The claimed spare stays counted in its slot until the call settles: another
            // argument of the same object takes one beyond it.
            lend_charging::<H>(view, slot, word, (obj == self.obj) as u32)
        }
    }

    /// The view of argument `index`, wrapper `word` of `view`'s object: the first one is borrowed for now
    /// and offered for a claim at [`SpareClaim::commit`]; later ones are lent a spare, their
    /// slot charged when it has none.
    ///
    /// # Safety
    /// As [`argument_view_of`], for a leaf call of serialized host `H`.
    #[inline(always)]
    pub unsafe fn offer<'a, H: TieHost>(
        &mut self,
        index: usize,
        view: crate::AnyView<'a>,
        tag: u32,
        word: usize,
        lend: bool,
    ) -> crate::AnyView<'a> {
        if lend && self.obj.is_null() {
            // SAFETY: `view` borrows an object (the caller's guarantee).
            let obj = unsafe { view.as_object_ptr().unwrap_unchecked() };
            *self = SpareClaim { obj, index, word, claimed: false };
            return view;
        }
        if !lend {
            return view;
        }
        // SAFETY: the caller's guarantee (serialized host, locked, the object kept alive by its
        // wrapper, which owns its +1); the claim is made only at `commit`, so none is counted yet.
        unsafe {
            let slot = slot_of::<H>(view.as_object_ptr().unwrap_unchecked(), tag);
            lend_charging::<H>(view, slot, word, 0)
        }
    }

    /// Once every argument is converted, right before the call: claim the offered argument's
    /// spare if its slot still names its wrapper and holds one. Returns the argument's index and
    /// its lent view, which replaces the borrowed one.
    ///
    /// # Safety
    /// As [`SpareClaim::offer`]; nothing but the leaf callee runs before [`SpareClaim::settle`].
    #[inline(always)]
    pub unsafe fn commit<'a, H: TieHost>(&mut self, tag: u32) -> Option<(usize, crate::AnyView<'a>)> {
        // SAFETY: the offered object's wrapper keeps it alive until the call settles.
        if self.obj.is_null() || self.claimed || !unsafe { has_spare_for::<H>(self.obj, tag, self.word) } {
            return None;
        }
        self.claimed = true;
        // SAFETY: the spare this claims is the view's until the call settles.
        Some((self.index, unsafe { crate::AnyView::lent_object(self.obj) }))
    }

    /// Is argument `index` the claimed one? (Its lent reference was never taken: a call
    /// abandoned before it ran must not release it. By index, not object: a later argument of
    /// the same object may hold a spare it did take.)
    pub fn is_claimed(&self, index: usize) -> bool {
        self.claimed && index == self.index
    }

    /// After the call: the claimed argument's index when `result` is the claimed object (its
    /// +1 is the spare, still counted in the slot: the caller forgets the result and returns
    /// that argument's wrapper); otherwise `None`, and the callee consumed the lent reference
    /// (adopted or released it), so the claimed spare leaves the slot.
    ///
    /// # Safety
    /// The claim was made for this call, for host `H` of the allocator tagged `tag`, still
    /// under its lock; `result` is the call's object result, if it succeeded with one.
    #[inline(always)]
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
    // SAFETY: `obj` is live (this function's contract); a host with generations has
    // SlotPrefix slots.
    let slot = unsafe { slot_of::<H>(obj, tag) }?;
    // SAFETY: the slot is a SlotPrefix of the live `obj`, so `aux` follows its word. Relaxed: the wrapper reached this thread after its tie stored the
    // generation (the language's publication orders them).
    Some(unsafe { aux_of(slot) }.load(Ordering::Relaxed) & GENERATION_MASK)
}

/// The class hint in `obj`'s prefix slot of host `H`'s allocator tagged `tag` (0: none, or
/// not such a slot).
///
/// # Safety
/// `obj` is a live object.
pub unsafe fn class_hint<H: TieHost>(obj: *mut ObjectHeader, tag: u32) -> u32 {
    if H::WORD_ONLY {
        return 0;
    }
    // SAFETY: `obj` is live (this function's contract).
    match unsafe { slot_of::<H>(obj, tag) } {
        // SAFETY: a host with generations has SlotPrefix slots, so `aux` follows the word.
        Some(slot) => (unsafe { aux_of(slot) }.load(Ordering::Relaxed) >> HINT_SHIFT) as u32,
        None => 0,
    }
}

/// Set the class hint of `obj`'s prefix slot (see [`class_hint`]); false when `obj` has no
/// such slot (another allocator made it: the side table keeps no hints).
///
/// # Safety
/// `obj` is a live object.
pub unsafe fn set_class_hint<H: TieHost>(obj: *mut ObjectHeader, tag: u32, hint: u32) -> bool {
    if H::WORD_ONLY {
        return false;
    }
    // SAFETY: as in `class_hint`.
    let Some(slot) = (unsafe { slot_of::<H>(obj, tag) }) else { return false };
    // SAFETY: as in `class_hint`. A compare-and-swap loop: a create may rewrite the generation
    // bits meanwhile on a host that is not serialized.
    let aux = unsafe { aux_of(slot) };
    let _ = aux.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| {
        Some((a & GENERATION_MASK) | (hint as u64) << HINT_SHIFT)
    });
    true
}

/// Spare references a slot holds right now (for tests and diagnostics).
pub fn spares(slot: Slot<'_>) -> u32 {
    match SlotState::decode(slot.load(Ordering::Relaxed)) {
        SlotState::Active(active) => active.spares(true),
        _ => 0,
    }
}
