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

mod cells;
mod machine;
mod side_table;
mod spares;

pub use crate::slot::{Reserve, Slot, SlotLayout, SlotPrefix, TAG_INACTIVE, TAG_LOCKED};
pub use cells::revive_in_cell;
pub use machine::{
    peek, rebind, revive_any, slot_in, slot_of, take_inactive, tie, tie_any, untie, untie_any, Previous, Returned,
    TieHost, Untied,
};
pub use side_table::SideTable;
pub use spares::{
    argument_view, class_hint, generation_of, has_spare_for, keep_if_tied_to, set_class_hint, spares, take_spare,
    ClaimMode, SpareClaim, CHARGE,
};
