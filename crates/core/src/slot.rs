//! The slot word and its memory: the bits of a slot word ([`SlotState`], decoded and encoded
//! by pure functions tested exhaustively below), the prefix a frontend allocator reserves in
//! front of each object ([`SlotPrefix`], [`SlotLayout`]) and the pointer to one ([`Slot`]).
//!
//! ```text
//!  63          48 47                                  2   1   0
//! +--------------+-------------------------------------+---+---+
//! | spares (16)  | wrapper word (serialized hosts: < 2^48)    | 0 | 0 |  Active
//! +--------------+-------------------------------------+---+---+
//! |            cached wrapper block (address)              | 1 | 0 |  Inactive
//! |                         0                              | 0 | 1 |  Locked (TAG_LOCKED alone)
//! |                         0                              | 0 | 0 |  Detached
//! ```
//! Only serialized hosts count spares in the top bits; for the others the whole word above
//! bit 1 is the wrapper word. The generation of a Full-layout slot lives in `aux`, beside it.
//!
//! `tying` changes slots; `alloc` only lays them out, so neither depends on the other through
//! this module.

// Model tests build the core with `--cfg loom` (crates/core/tests/loom.rs): the slot's atomics
// are then loom's, so every interleaving of the transitions on them is explored.
#[cfg(loom)]
pub use loom::sync::atomic::{AtomicU64, AtomicUsize};
#[cfg(not(loom))]
pub use std::sync::atomic::{AtomicU64, AtomicUsize};

use crate::object::ObjectHeader;

/// Slot word bit: a transition is in flight.
pub const TAG_LOCKED: usize = 1;
/// Slot word bit: the word is a cached wrapper block kept for revival.
pub const TAG_INACTIVE: usize = 2;
pub(crate) const TAG_MASK: usize = TAG_LOCKED | TAG_INACTIVE;

/// `aux` bits holding the generation.
pub(crate) const GENERATION_MASK: u64 = 0xffff_ffff;
/// Where `aux` keeps the host's class hint for the object (`Frontend::class_hint`): the high
/// 32 bits, kept across wrappers (a create rewrites the generation only).
pub(crate) const HINT_SHIFT: u32 = 32;
/// Where an Active word of a serialized host keeps its spare references: the top 16 bits
/// (such hosts' words are user-space addresses, below 2^48).
pub(crate) const SPARE_SHIFT: u32 = 48;
pub(crate) const SPARE_ONE: usize = 1 << SPARE_SHIFT;
pub(crate) const SPARE_MASK: usize = !0 << SPARE_SHIFT;
/// At most this many spares per slot; a slot at the cap drops further extras as before.
pub(crate) const SPARE_MAX: usize = 0xffff;

/// The 16 bytes a frontend allocator reserves in front of each object for a host that names
/// generations (the default). A [`crate::tying::TieHost::WORD_ONLY`] host's allocator reserves the 8-byte
/// `slot` word alone, right in front of the header.
#[repr(C)]
pub struct SlotPrefix {
    pub slot: AtomicUsize,
    /// Low 32 bits: the generation of the wrapper the slot names (or last named); high 32
    /// bits: the host's class hint (0: none).
    pub aux: AtomicU64,
}

#[cfg(not(loom))]
const _: () = {
    assert!(std::mem::size_of::<SlotPrefix>() == 16);
    assert!(std::mem::offset_of!(SlotPrefix, slot) == 0);
    assert!(std::mem::offset_of!(SlotPrefix, aux) == 8);
};

impl SlotPrefix {
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SlotPrefix { slot: AtomicUsize::new(0), aux: AtomicU64::new(0) }
    }

    #[cfg(loom)]
    pub fn new() -> Self {
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
    /// The slot word alone (8 bytes), for [`crate::tying::TieHost::WORD_ONLY`] hosts.
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

    /// Where the slot word of `obj` is, for an allocator with this layout that keeps
    /// `reserve` for the host (meaningful only for objects that allocator made: check
    /// `alloc_tag` first, see [`crate::tying::slot_of`]).
    pub fn word_of(self, obj: *mut ObjectHeader, reserve: Reserve) -> *mut AtomicUsize {
        (obj as *mut u8).wrapping_sub(self.size() + reserve.gap()) as *mut AtomicUsize
    }

    /// Where the host's `reserve` starts, for the slot whose word is at `word`.
    pub fn reserve_at(self, word: *const AtomicUsize, reserve: Reserve) -> *mut u8 {
        match reserve {
            Reserve::AfterSlot(_) => (word as *mut u8).wrapping_add(self.size()),
            Reserve::BeforeSlot(bytes) => (word as *mut u8).wrapping_sub(bytes),
        }
    }
}

/// The bytes a frontend allocator sets aside in each object's memory for the host, and on
/// which side of the slot (a multiple of 8; zeroed at allocation). The host puts its wrapper
/// there, so an object and its first wrapper are one allocation; the side decides which bytes
/// a call reads together with the slot word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserve {
    /// Between the slot and the header: block = slot, reserve, header (Node's box, whose
    /// call reads the slot and then the box).
    AfterSlot(usize),
    /// In front of the slot: block = reserve, slot, header (CPython's wrapper head, whose next
    /// word is the slot itself: the wrapper reads its object's slot as its own last field).
    BeforeSlot(usize),
}

impl Reserve {
    /// No reserve.
    pub const NONE: Reserve = Reserve::AfterSlot(0);

    /// Its size in bytes.
    pub const fn bytes(self) -> usize {
        match self {
            Reserve::AfterSlot(bytes) | Reserve::BeforeSlot(bytes) => bytes,
        }
    }

    /// Bytes between the slot and the header.
    pub const fn gap(self) -> usize {
        match self {
            Reserve::AfterSlot(bytes) => bytes,
            Reserve::BeforeSlot(_) => 0,
        }
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

/// The generation word of `slot`.
///
/// # Safety
/// `slot` is a [`SlotPrefix`]'s (a Full-layout prefix or a side-table entry), which is what
/// every non-[`crate::tying::TieHost::WORD_ONLY`] host's slots are.
#[inline]
pub(crate) unsafe fn aux_of(slot: Slot<'_>) -> &AtomicU64 {
    // SAFETY: the caller's guarantee: `aux` follows the word inside the same SlotPrefix, and
    // `Slot` pointers may reach the whole prefix.
    unsafe { &(*(slot.word as *const SlotPrefix)).aux }
}

/// A slot word, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// No wrapper (the word is 0).
    Detached,
    /// A wrapper's word (bits 0 and 1 clear), and a serialized host's spare references.
    Active(ActiveWord),
    /// A dead wrapper's memory, kept for revival: its address ([`TAG_INACTIVE`] removed).
    Inactive(usize),
    /// A transition is in flight ([`TAG_LOCKED`]).
    Locked,
}

impl SlotState {
    /// What `word` says.
    #[inline(always)]
    pub const fn decode(word: usize) -> SlotState {
        if word == 0 {
            SlotState::Detached
        } else if word & TAG_LOCKED != 0 {
            SlotState::Locked
        } else if word & TAG_INACTIVE != 0 {
            SlotState::Inactive(word & !TAG_MASK)
        } else {
            SlotState::Active(ActiveWord(word))
        }
    }

    /// `word` as an Active word, or `None` when it is anything else (as [`SlotState::decode`]
    /// says): nonzero with bits 0 and 1 clear, tested with one compare, `word - 1 < word & !3`
    /// (0 wraps the left side to the maximum; a tagged word's right side is at most `word - 1`).
    /// The revive paths test only this.
    #[inline(always)]
    pub const fn active(word: usize) -> Option<ActiveWord> {
        if word.wrapping_sub(1) < word & !TAG_MASK {
            Some(ActiveWord(word))
        } else {
            None
        }
    }

    /// `word` as an Active word naming `wrapper` (a wrapper word: nonzero, bits 0 and 1 clear),
    /// or `None` when it is anything else. One compare: a word whose wrapper part equals an
    /// untagged nonzero word is Active.
    #[inline(always)]
    pub const fn active_naming(word: usize, wrapper: usize, counts_spares: bool) -> Option<ActiveWord> {
        debug_assert!(wrapper != 0 && wrapper & TAG_MASK == 0, "not a wrapper word");
        if ActiveWord(word).wrapper(counts_spares) == wrapper {
            Some(ActiveWord(word))
        } else {
            None
        }
    }

    /// The word that says this.
    #[inline(always)]
    pub const fn encode(self) -> usize {
        match self {
            SlotState::Detached => 0,
            SlotState::Active(active) => active.0,
            SlotState::Inactive(block) => block | TAG_INACTIVE,
            SlotState::Locked => TAG_LOCKED,
        }
    }
}

/// An Active slot word. A serialized host's wrapper words are user-space addresses (below
/// 2^48), so its slot counts spare references in the top 16 bits; every other host's word is
/// the wrapper word whole (`counts_spares` false below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActiveWord(usize);

impl ActiveWord {
    /// The Active word of `wrapper` (bits 0 and 1 clear) with `spares` spare references (0 for
    /// a host that counts none; at most [`SPARE_MAX`]).
    #[inline(always)]
    pub const fn new(wrapper: usize, spares: u32) -> ActiveWord {
        debug_assert!(wrapper != 0 && wrapper & TAG_MASK == 0, "a wrapper word with tag bits");
        debug_assert!(spares == 0 || wrapper & SPARE_MASK == 0, "spares beside a word above 2^48");
        debug_assert!(spares as usize <= SPARE_MAX);
        ActiveWord(wrapper | (spares as usize) << SPARE_SHIFT)
    }

    /// The word itself.
    #[inline(always)]
    pub const fn word(self) -> usize {
        self.0
    }

    /// The wrapper's word, without spares.
    #[inline(always)]
    pub const fn wrapper(self, counts_spares: bool) -> usize {
        if counts_spares {
            self.0 & !SPARE_MASK
        } else {
            self.0
        }
    }

    /// Spare references the word holds.
    #[inline(always)]
    pub const fn spares(self, counts_spares: bool) -> u32 {
        if counts_spares {
            (self.0 >> SPARE_SHIFT) as u32
        } else {
            0
        }
    }

    /// The word with one spare more (a serialized host's), or `None` at the cap: the extra
    /// reference is then dropped instead.
    #[inline(always)]
    pub const fn with_spare_added(self) -> Option<ActiveWord> {
        if self.0 >> SPARE_SHIFT < SPARE_MAX {
            Some(ActiveWord(self.0 + SPARE_ONE))
        } else {
            None
        }
    }

    /// The word with one spare fewer (a serialized host's), or `None` when it holds none.
    #[inline(always)]
    pub const fn with_spare_taken(self) -> Option<ActiveWord> {
        if self.0 >> SPARE_SHIFT != 0 {
            Some(ActiveWord(self.0 - SPARE_ONE))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wrapper words of every shape a host makes: small, 16-byte aligned, near 2^48 (serialized
    /// hosts), and above it (a JNI reference shifted left by two).
    const WRAPPERS: [usize; 5] = [4, 0x7f00_dead_bee0, (1 << 48) - 4, 1 << 49, usize::MAX & !TAG_MASK];
    const SPARES: [u32; 5] = [0, 1, 2, SPARE_MAX as u32 - 1, SPARE_MAX as u32];

    fn every_state() -> Vec<(SlotState, bool)> {
        let mut out = vec![(SlotState::Detached, true), (SlotState::Locked, true)];
        for &w in &WRAPPERS {
            out.push((SlotState::Inactive(w), true));
            out.push((SlotState::Active(ActiveWord::new(w, 0)), false));
            if w & SPARE_MASK == 0 {
                for &s in &SPARES {
                    out.push((SlotState::Active(ActiveWord::new(w, s)), true));
                }
            }
        }
        out
    }

    #[test]
    fn every_state_round_trips_through_its_word() {
        for (state, _) in every_state() {
            assert_eq!(SlotState::decode(state.encode()), state, "{state:?} -> {:#x}", state.encode());
        }
        assert_eq!(SlotState::Detached.encode(), 0);
        assert_eq!(SlotState::Locked.encode(), TAG_LOCKED);
    }

    #[test]
    fn active_agrees_with_decode_on_every_word() {
        let words = every_state().into_iter().map(|(state, _)| state.encode());
        let edges = (0..64usize).chain([usize::MAX, usize::MAX - 1, usize::MAX - 3, usize::MAX - 4, 1 << 63]);
        for word in words.chain(edges) {
            let expect = match SlotState::decode(word) {
                SlotState::Active(a) => Some(a),
                _ => None,
            };
            assert_eq!(SlotState::active(word), expect, "{word:#x}");
        }
    }

    #[test]
    fn active_naming_finds_exactly_the_active_words_of_that_wrapper() {
        for (state, counts) in every_state() {
            for &w in &WRAPPERS {
                let expect = match state {
                    SlotState::Active(a) if a.wrapper(counts) == w => Some(a),
                    _ => None,
                };
                assert_eq!(SlotState::active_naming(state.encode(), w, counts), expect, "{state:?} naming {w:#x}");
            }
        }
    }

    #[test]
    fn tags_tell_the_states_apart() {
        for (state, _) in every_state() {
            let word = state.encode();
            let expect = match state {
                SlotState::Detached => 0,
                SlotState::Active(_) => 0,
                SlotState::Inactive(_) => TAG_INACTIVE,
                SlotState::Locked => TAG_LOCKED,
            };
            assert_eq!(word & TAG_MASK, expect, "{state:?}");
            assert!(!matches!(state, SlotState::Active(_)) || word != 0, "an Active word is never 0");
        }
    }

    #[test]
    fn spares_change_only_the_count_and_stop_at_the_cap() {
        for (state, counts) in every_state() {
            let SlotState::Active(active) = state else { continue };
            if !counts {
                assert_eq!(active.spares(false), 0);
                assert_eq!(active.wrapper(false), active.word(), "the whole word names the wrapper");
                continue;
            }
            let (wrapper, spares) = (active.wrapper(true), active.spares(true));
            match active.with_spare_added() {
                Some(more) => {
                    assert_eq!((more.wrapper(true), more.spares(true)), (wrapper, spares + 1));
                    assert_eq!(more.with_spare_taken(), Some(active));
                }
                None => assert_eq!(spares as usize, SPARE_MAX),
            }
            match active.with_spare_taken() {
                Some(fewer) => {
                    assert_eq!((fewer.wrapper(true), fewer.spares(true)), (wrapper, spares - 1));
                    assert_eq!(fewer.with_spare_added(), Some(active));
                }
                None => assert_eq!(spares, 0),
            }
            assert_eq!(SlotState::decode(active.word()), state, "still Active, same wrapper");
        }
    }
}
