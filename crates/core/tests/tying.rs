//! The identity-tying state machine (tying.rs) driven by a mock frontend: Detached -> Active,
//! revive, Dying (late finalizer with a stale generation), Inactive revival, untie, the free
//! hook, and the side table for objects without this frontend's prefix.

mod common;
#[path = "support/mock_host.rs"]
mod mock_host;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use mock_host::{host, MockHost, BLOCKS_LIVE};
use tether_core::alloc::live_objects;
use tether_core::testing::Pair;
use tether_core::tying::{self, SideTable, SlotPrefix, TAG_INACTIVE};
use tether_core::{Any, ObjectRef};

fn new_pair() -> ObjectRef {
    Pair::new(Any::int(1), Any::none()).into()
}

#[test]
fn tie_returns_one_wrapper_per_object_while_it_lives() {
    let _g = common::serial();
    let h = host();
    let base = live_objects();
    let obj = new_pair();
    assert_eq!(obj.header().alloc_tag, h.tag, "made by the frontend allocator: has a prefix slot");
    let ptr = obj.as_ptr();
    assert_eq!(h.slot_word(ptr), 0, "Detached");
    // Counts are per address and addresses are reused across tests: compare deltas.
    let created = h.created_for(ptr);

    let w1 = h.tie(obj.clone());
    let w2 = h.tie(obj.clone());
    assert!(Arc::ptr_eq(&w1, &w2), "the canonical wrapper is revived");
    assert_eq!(h.created_for(ptr) - created, 1);
    assert_eq!(obj.header().strong_count(), 2, "one +1 owned by the wrapper; the second tie's ref was dropped");
    assert_ne!(h.slot_word(ptr), 0, "Active");
    assert_eq!(h.slot_word(ptr) & (tying::TAG_LOCKED | TAG_INACTIVE), 0);

    drop((w1, w2));
    assert_eq!(h.run_finalizers(false), 1);
    assert_eq!(h.slot_word(ptr), 0, "Detached again");
    assert_eq!(obj.header().strong_count(), 1, "the wrapper's +1 was released");
    let w3 = h.tie(obj.clone());
    assert_eq!(h.created_for(ptr) - created, 2, "a new wrapper after the old one was released");
    assert!(w3.generation > 0);
    drop((w3, obj));
    h.run_finalizers(false);
    assert_eq!(live_objects(), base);
}

#[test]
fn a_dying_wrapper_is_replaced_and_its_late_finalizer_leaves_the_slot_alone() {
    let _g = common::serial();
    let h = host();
    let obj = new_pair();
    let ptr = obj.as_ptr();
    let created = h.created_for(ptr);
    let old = h.tie(obj.clone());
    let old_generation = old.generation;
    let dying = h.dying_seen.load(Ordering::SeqCst);
    drop(old); // the language dropped it, but its finalizer has not run yet

    let new = h.tie(obj.clone());
    assert_eq!(h.dying_seen.load(Ordering::SeqCst), dying + 1, "create saw Previous::Dying");
    assert!(new.generation > old_generation);
    let word_now = h.slot_word(ptr);

    // The old finalizer runs late: its generation is stale, so the slot keeps the new wrapper.
    assert_eq!(h.run_finalizers(false), 1);
    assert_eq!(h.slot_word(ptr), word_now, "a stale untie does not touch the slot");
    let again = h.tie(obj.clone());
    assert!(Arc::ptr_eq(&again, &new), "the new wrapper is still canonical");
    assert_eq!(h.created_for(ptr) - created, 2);
    drop((new, again));
    h.run_finalizers(false);
    assert_eq!(h.slot_word(ptr), 0);
}

#[test]
fn untie_with_a_stale_generation_returns_none() {
    let _g = common::serial();
    let prefix = SlotPrefix::new();
    let slot = tying::Slot::of(&prefix);
    assert_eq!(tying::untie::<MockHost>(slot, 1, 0), None, "Detached: nothing to untie");
    slot.store(0x1000, Ordering::SeqCst);
    prefix.aux.store(7, Ordering::SeqCst);
    assert_eq!(tying::untie::<MockHost>(slot, 6, 0), None);
    assert_eq!(tying::peek(slot), 0x1000, "left alone");
    assert_eq!(
        tying::untie::<MockHost>(slot, 7, 0),
        Some(tying::Untied { word: 0x1000, spare: 0 }),
        "the current generation takes its word out"
    );
    assert_eq!(tying::peek(slot), 0);
    slot.store(0x2000 | TAG_INACTIVE, Ordering::SeqCst);
    assert_eq!(tying::untie::<MockHost>(slot, 7, 0), None, "an Inactive slot is not an Active wrapper");
    let take_inactive = || {
        // SAFETY: nothing else uses this test's slot.
        unsafe { tying::take_inactive(slot) }
    };
    assert_eq!(take_inactive(), Some(0x2000));
    assert_eq!(tying::peek(slot), 0);
    assert_eq!(take_inactive(), None);
}

#[test]
fn rebind_swaps_a_placeholder_word_only_for_the_current_generation_and_only_once() {
    let _g = common::serial();
    let prefix = SlotPrefix::new();
    let slot = tying::Slot::of(&prefix);
    assert!(!tying::rebind::<MockHost>(slot, 7, 0x1000, 0x2000), "Detached: no wrapper to rebind");
    assert_eq!(tying::peek(slot), 0);
    slot.store(0x1000, Ordering::SeqCst);
    prefix.aux.store(7, Ordering::SeqCst);
    assert!(!tying::rebind::<MockHost>(slot, 6, 0x1000, 0x2000), "a stale generation");
    assert!(!tying::rebind::<MockHost>(slot, 7, 0x3000, 0x2000), "another placeholder");
    assert_eq!(tying::peek(slot), 0x1000, "left alone");
    assert!(tying::rebind::<MockHost>(slot, 7, 0x1000, 0x2000), "the wrapper's own placeholder");
    assert_eq!(tying::peek(slot), 0x2000);
    assert!(!tying::rebind::<MockHost>(slot, 7, 0x1000, 0x4000), "a second rebind finds the real word");
    assert_eq!(tying::peek(slot), 0x2000);
    assert_eq!(
        tying::untie::<MockHost>(slot, 7, 0),
        Some(tying::Untied { word: 0x2000, spare: 0 }),
        "the wrapper unties with its real word"
    );
    slot.store(0x1000 | TAG_INACTIVE, Ordering::SeqCst);
    assert!(!tying::rebind::<MockHost>(slot, 7, 0x1000, 0x2000), "an Inactive slot names no wrapper");
    slot.store(0, Ordering::SeqCst);
}

#[test]
fn inactive_slots_are_handed_to_create_and_freed_by_the_free_hook() {
    let _g = common::serial();
    let h = host();
    let blocks = BLOCKS_LIVE.load(Ordering::SeqCst);
    let obj = new_pair();
    let ptr = obj.as_ptr();
    drop(h.tie(obj.clone()));
    h.run_finalizers(true);
    assert_ne!(h.slot_word(ptr) & TAG_INACTIVE, 0, "Inactive: the wrapper's memory is cached");
    assert_eq!(BLOCKS_LIVE.load(Ordering::SeqCst), blocks + 1);

    let inactive = h.inactive_seen.load(Ordering::SeqCst);
    let w = h.tie(obj.clone());
    assert_eq!(h.inactive_seen.load(Ordering::SeqCst), inactive + 1, "create got Previous::Inactive");
    assert_eq!(BLOCKS_LIVE.load(Ordering::SeqCst), blocks, "the cached block was taken and disposed once");
    drop(w);
    h.run_finalizers(true);
    assert_eq!(BLOCKS_LIVE.load(Ordering::SeqCst), blocks + 1);
    drop(obj); // last native reference: the free hook takes the cached block out
    assert_eq!(BLOCKS_LIVE.load(Ordering::SeqCst), blocks, "freed by the allocator's hook");
}

#[test]
fn objects_without_this_frontends_prefix_use_the_side_table() {
    let _g = common::serial();
    let h = host();
    // Made at init, before the mock frontend installed its allocator.
    let foreign = tether_core::function::get_global("testing.echo").unwrap();
    let obj: ObjectRef = foreign.0.clone().into();
    assert_ne!(obj.header().alloc_tag, h.tag);
    // SAFETY: `obj` is live; its tag says it has no slot of ours.
    assert!(unsafe { tying::slot_of::<MockHost>(obj.as_ptr(), h.tag) }.is_none());
    let entries = h.side.len();
    let w1 = h.tie(obj.clone());
    let w2 = h.tie(obj.clone());
    assert!(Arc::ptr_eq(&w1, &w2));
    assert_eq!(h.side.len(), entries + 1);
    drop((w1, w2));
    h.run_finalizers(false);
    assert_eq!(h.side.len(), entries, "a Detached entry is pruned on untie");
}

#[test]
fn side_table_entries_are_shared_and_pruned_only_when_detached_and_unused() {
    let side = SideTable::new();
    let fake: *mut tether_core::ObjectHeader = std::ptr::without_provenance_mut(0x10); // a key only: never dereferenced
    assert!(side.is_empty() && side.existing(fake).is_none());
    let a = side.entry(fake);
    let b = side.entry(fake);
    assert!(Arc::ptr_eq(&a, &b), "one entry per address");
    side.prune(fake);
    assert_eq!(side.len(), 1, "in use elsewhere: kept");
    drop(b);
    a.slot.store(0x40, Ordering::SeqCst);
    side.prune(fake);
    assert_eq!(side.len(), 1, "not Detached: kept");
    a.slot.store(0, Ordering::SeqCst);
    drop(a);
    side.prune(fake);
    assert!(side.is_empty());
}

/// A host whose slot transitions are all serialized by a lock its callers hold (as the GIL
/// does for Python): `tie` revives an Active wrapper with a plain load, no slot lock.
struct Serialized<'a>(&'a mock_host::MockHost);

// SAFETY: delegates to the mock host, whose contract holds; the tests below call it from one
// thread only, which is the lock `SERIALIZED` promises.
unsafe impl tying::TieHost for Serialized<'_> {
    type Handle = Arc<mock_host::Wrapper>;
    type Error = tether_core::Error;
    type Prepared = ();
    const SERIALIZED: bool = true;
    unsafe fn revive(&self, word: usize) -> Option<Self::Handle> {
        // SAFETY: forwarded.
        unsafe { self.0.revive(word) }
    }
    fn prepare(&self, _obj: &ObjectRef) -> tether_core::Result<()> {
        Ok(())
    }
    unsafe fn create(
        &self,
        _: &(),
        obj: ObjectRef,
        previous: tying::Previous,
        generation: u64,
    ) -> tether_core::Result<(Self::Handle, usize)> {
        // SAFETY: forwarded.
        unsafe { self.0.create(&(), obj, previous, generation) }
    }
}

#[test]
fn a_serialized_host_revives_without_the_lock_and_still_replaces_dying_wrappers() {
    let _g = common::serial();
    let h = host();
    let s = Serialized(h);
    let obj = new_pair();
    let ptr = obj.as_ptr();
    let created = h.created_for(ptr);
    let w1 = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    let w2 = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    assert!(Arc::ptr_eq(&w1, &w2), "the fast path revives the canonical wrapper");
    assert_eq!(h.created_for(ptr) - created, 1);
    // SAFETY: `obj` is live and was made by the mock host's allocator.
    let slot = unsafe { tying::slot_of::<MockHost>(ptr, h.tag) }.expect("a prefixed object");
    assert_eq!(tying::spares(slot), 1, "the revived return's extra reference is kept as a spare");
    let word = h.slot_word(ptr) & !(0xffff << 48);
    let spare_for = |word| {
        // SAFETY: `obj` is live; this test is the serialized host.
        unsafe { tying::has_spare_for::<Serialized>(ptr, h.tag, word) }
    };
    assert!(spare_for(word));
    assert!(!spare_for(word + 8), "another wrapper's word");
    assert_eq!(obj.header().strong_count(), 3, "ours, the wrapper's, one spare");
    // A dying wrapper (revive fails) falls back to the locked path and is replaced; the spare
    // stays with the slot.
    drop((w1, w2));
    let w3 = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    assert_eq!(h.created_for(ptr) - created, 2, "a new wrapper replaced the dying one");
    assert_eq!(h.slot_word(ptr) & tying::TAG_LOCKED, 0, "the slot is unlocked again");
    assert_eq!(tying::spares(slot), 1);
    let w4 = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    assert!(Arc::ptr_eq(&w3, &w4), "revived past the spare count kept in the word");
    assert_eq!(tying::spares(slot), 2);
    drop((w3, w4));
    h.run_finalizers_as::<Serialized>(false);
    assert_eq!(tying::spares(slot), 0, "the untie that ended the slot released its spares");
    assert_eq!(obj.header().strong_count(), 1, "only ours is left");
    drop(obj);
}

#[test]
fn spares_are_lent_to_adopting_functions_and_consumed_exactly_once() {
    use tether_core::function::FUNC_ADOPTS_LENT;
    use tether_core::{AnyView, Function};
    let _g = common::serial();
    let h = host();
    let s = Serialized(h);
    let obj = new_pair();
    let ptr = obj.as_ptr();
    let w = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    for _ in 0..3 {
        drop(tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle());
    }
    // SAFETY: `obj` is live and was made by the mock host's allocator.
    let slot = unsafe { tying::slot_of::<MockHost>(ptr, h.tag) }.expect("a prefixed object");
    assert_eq!(tying::spares(slot), 3);
    let base = obj.header().strong_count(); // ours + the wrapper's + 3 spares
    let lend = || {
        // SAFETY: the single-threaded test is the serialized host; `obj` is live.
        assert!(unsafe { tying::take_spare::<MockHost>(ptr, h.tag) });
        // SAFETY: `take_spare` handed us that +1, given to the view.
        unsafe { AnyView::lent_object(ptr) }
    };
    let echo = Function::from_typed("t.echo", |x: ObjectRef| x);
    let want_int = Function::from_typed("t.want_int", |_: ObjectRef, i: i64| i);
    let read_str = Function::from_typed("t.read_str", |s: String| s.len() as i64);
    let add_ints = Function::from_typed("t.add_ints", |a: i64, b: i64| a + b);
    assert_ne!(echo.flags() & FUNC_ADOPTS_LENT, 0, "every typed closure takes lent arguments");
    assert_ne!(want_int.flags() & FUNC_ADOPTS_LENT, 0);

    // Success: the result carries the lent reference back out.
    let out = echo.call(&[lend()]).unwrap();
    assert_eq!(out.view().as_object_ptr(), Some(ptr));
    assert_eq!(obj.header().strong_count(), base, "adopted, not added: the result holds the spare");
    drop(out);
    assert_eq!(obj.header().strong_count(), base - 1);
    // A later argument's mismatch: the lent first argument is still consumed once.
    assert!(want_int.call(&[lend(), AnyView::raw_str("x")]).is_err());
    assert_eq!(obj.header().strong_count(), base - 2);
    // A wrong arity: nothing is converted, the lent argument is released.
    assert!(echo.call(&[lend(), AnyView::int(1)]).is_err());
    assert_eq!(obj.header().strong_count(), base - 3);
    // A conversion that only reads (a Pair is no str): released after converting.
    let w_again = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    assert!(read_str.call(&[lend()]).is_err());
    assert_eq!(obj.header().strong_count(), base - 3);
    drop(w_again);
    // Plain parameters (ints) given a lent object: the fast path declines, the general path
    // converts again, words the error and releases the lent reference exactly once.
    let w_more = tying::tie_any(&s, &(), h.tag, &h.side, obj.clone()).unwrap().into_handle();
    let e = add_ints.call(&[AnyView::int(1), lend()]).unwrap_err();
    assert!(e.message().contains("t.add_ints() argument 2 must be int"), "{e}");
    assert_eq!(obj.header().strong_count(), base - 3, "released once");
    drop(w_more);
    // SAFETY: as above.
    assert!(!unsafe { tying::take_spare::<MockHost>(ptr, h.tag) }, "no spares left");
    drop(w);
    h.run_finalizers_as::<Serialized>(false);
    assert_eq!(obj.header().strong_count(), 1);
    drop(obj);
}

/// A serialized host whose wrappers untie synchronously while their memory exists (as
/// CPython's dealloc does): its allocator keeps only the slot word, and a release names the
/// wrapper's own word instead of a generation.
struct WordOnly;

// SAFETY: `revive` is only called on Active words, which name wrappers the test keeps alive
// until it unties them; `create` returns an `Arc` data pointer (8-aligned, below 2^48).
unsafe impl tying::TieHost for WordOnly {
    type Handle = Arc<mock_host::Wrapper>;
    type Error = tether_core::Error;
    type Prepared = ();
    const SERIALIZED: bool = true;
    const WORD_ONLY: bool = true;
    unsafe fn revive(&self, word: usize) -> Option<Self::Handle> {
        // SAFETY: the word is a live `Arc`'s data pointer (see above).
        unsafe {
            Arc::increment_strong_count(word as *const mock_host::Wrapper);
            Some(Arc::from_raw(word as *const mock_host::Wrapper))
        }
    }
    fn prepare(&self, _obj: &ObjectRef) -> tether_core::Result<()> {
        Ok(())
    }
    unsafe fn create(
        &self,
        _: &(),
        obj: ObjectRef,
        previous: tying::Previous,
        generation: u64,
    ) -> tether_core::Result<(Self::Handle, usize)> {
        assert_eq!(generation, 0, "a word-only host gets no generation");
        assert_eq!(previous, tying::Previous::Detached);
        let w = Arc::new(mock_host::Wrapper { obj: obj.into_raw(), generation });
        let word = Arc::as_ptr(&w) as usize;
        Ok((w, word))
    }
}

/// A Pair made by a word-only frontend allocator (installed once); the mock host's allocator
/// is current again afterwards.
fn word_only_pair() -> (ObjectRef, u32) {
    use std::sync::OnceLock;
    use tether_core::alloc::{install_frontend_allocator, set_current_allocator};
    static TAG: OnceLock<u32> = OnceLock::new();
    let h = host();
    let tag = *TAG.get_or_init(|| {
        install_frontend_allocator(
            <WordOnly as tying::TieHost>::LAYOUT,
            tying::Reserve::NONE,
            None,
            std::ptr::null_mut(),
        )
        .unwrap()
    });
    set_current_allocator(tag).unwrap();
    let obj = new_pair();
    set_current_allocator(h.tag).unwrap();
    (obj, tag)
}

/// A word-only serialized host whose wrapper (a 16-byte count and id) is made in the object's
/// reserve in front of the slot, as CPython's, unless `elsewhere` asks for a separate block
/// (as a Python subclass's instance is): `WRAPPER_AT_RESERVE` lets a revive name the reserve
/// from the slot's position, and must still find a wrapper that lives elsewhere.
struct InReserve {
    tag: u32,
    elsewhere: std::cell::Cell<bool>,
    revived: std::cell::Cell<usize>,
}

/// The wrapper of [`InReserve`]: a reference count (0 = dying) and the object it wraps.
#[repr(C)]
struct ReserveWrapper {
    count: std::cell::Cell<usize>,
    obj: *mut tether_core::ObjectHeader,
}

const _: () = assert!(std::mem::size_of::<ReserveWrapper>() == 16, "fills the 16-byte reserve");

// SAFETY: the tests call it from one thread (the serialized lock); `revive` reads only wrappers
// the test keeps (their memory lives while their word is Active); `create`'s words are 8-aligned
// addresses below 2^48.
unsafe impl tying::TieHost for InReserve {
    type Handle = usize;
    type Error = tether_core::Error;
    type Prepared = ();
    const SERIALIZED: bool = true;
    const WORD_ONLY: bool = true;
    const RESERVE: tying::Reserve = tying::Reserve::BeforeSlot(16);
    const WRAPPER_AT_RESERVE: bool = true;
    unsafe fn revive(&self, word: usize) -> Option<usize> {
        // SAFETY: an Active word names a live `ReserveWrapper` (see above).
        let w = unsafe { &*(word as *const ReserveWrapper) };
        if w.count.get() == 0 {
            return None;
        }
        w.count.set(w.count.get() + 1);
        self.revived.set(word);
        Some(word)
    }
    fn prepare(&self, _obj: &ObjectRef) -> tether_core::Result<()> {
        Ok(())
    }
    unsafe fn create(
        &self,
        _: &(),
        obj: ObjectRef,
        _previous: tying::Previous,
        _generation: u64,
    ) -> tether_core::Result<(usize, usize)> {
        let ptr = obj.into_raw();
        let at = if self.elsewhere.get() {
            Box::into_raw(Box::new(ReserveWrapper { count: 1.into(), obj: ptr }))
        } else {
            // SAFETY: `ptr` is live and made by this host's allocator, whose reserve is 16
            // zeroed bytes in front of the slot word.
            unsafe {
                let slot = tying::slot_of::<InReserve>(ptr, self.tag).expect("made by this host's allocator");
                let at = InReserve::LAYOUT.reserve_at(slot.as_ptr(), InReserve::RESERVE) as *mut ReserveWrapper;
                at.write(ReserveWrapper { count: 1.into(), obj: ptr });
                at
            }
        };
        Ok((at as usize, at as usize))
    }
}

#[test]
fn a_wrapper_in_the_reserve_and_one_elsewhere_both_revive() {
    use tether_core::alloc::{install_frontend_allocator, set_current_allocator};
    use tying::TieHost;
    let _g = common::serial();
    let h = host();
    let tag = install_frontend_allocator(InReserve::LAYOUT, InReserve::RESERVE, None, std::ptr::null_mut()).unwrap();
    let side = SideTable::new();
    for elsewhere in [false, true] {
        set_current_allocator(tag).unwrap();
        let obj = new_pair();
        set_current_allocator(h.tag).unwrap();
        let host = InReserve { tag, elsewhere: elsewhere.into(), revived: 0.into() };
        let ptr = obj.as_ptr();
        // SAFETY: `obj` is live and made by `tag`'s allocator.
        let slot = unsafe { tying::slot_of::<InReserve>(ptr, tag) }.expect("a slot word");
        let reserve = InReserve::LAYOUT.reserve_at(slot.as_ptr(), InReserve::RESERVE) as usize;
        let first = tying::tie_any(&host, &(), tag, &side, obj.clone()).unwrap();
        assert!(first.is_created());
        let w = first.into_handle();
        assert_eq!(w == reserve, !elsewhere, "made where the host chose");
        let again = tying::tie_any(&host, &(), tag, &side, obj.clone()).unwrap();
        assert_eq!(again, tying::Returned::Revived(w), "the canonical wrapper, in the reserve or not");
        assert_eq!(host.revived.get(), w);
        // SAFETY: `w` is the live wrapper made above.
        let wrapper = unsafe { &*(w as *const ReserveWrapper) };
        assert_eq!(wrapper.count.get(), 2);
        // Dying (count 0): neither route revives it; a new wrapper (in a block of its own:
        // the reserve is the dying one's) replaces it.
        wrapper.count.set(0);
        host.elsewhere.set(true);
        let replaced = tying::tie_any(&host, &(), tag, &side, obj.clone()).unwrap();
        assert!(replaced.is_created(), "a dying wrapper is not revived");
        let w2 = replaced.into_handle();
        // SAFETY: `obj` is live; the new wrapper's own word releases its spare, then its +1.
        unsafe {
            assert_eq!(tying::untie_any::<InReserve>(ptr, tag, &side, w2 as u64, 0), Some(w2));
            tether_core::object::dec_ref((*(w2 as *const ReserveWrapper)).obj);
            // The replaced wrapper's +1 (its untie found a newer word, as a late dealloc would).
            assert_eq!(tying::untie_any::<InReserve>(ptr, tag, &side, w as u64, 0), None);
            tether_core::object::dec_ref(wrapper.obj);
            if elsewhere {
                drop(Box::from_raw(w as *mut ReserveWrapper));
            }
            drop(Box::from_raw(w2 as *mut ReserveWrapper));
        }
        assert_eq!(obj.header().strong_count(), 1, "no reference left behind");
    }
}

#[test]
fn a_word_only_host_names_its_wrappers_by_word() {
    let _g = common::serial();
    let (obj, tag) = word_only_pair();
    assert_eq!(obj.header().alloc_tag, tag);
    let ptr = obj.as_ptr();
    // SAFETY: `obj` is live and made by the word-only allocator.
    let slot = unsafe { tying::slot_of::<WordOnly>(ptr, tag) }.expect("a slot word");
    assert_eq!(slot.as_ptr() as usize, ptr as usize - 8, "8 bytes in front of the header");
    let side = SideTable::new();
    let w1 = tying::tie_any(&WordOnly, &(), tag, &side, obj.clone()).unwrap().into_handle();
    let w2 = tying::tie_any(&WordOnly, &(), tag, &side, obj.clone()).unwrap().into_handle();
    assert!(Arc::ptr_eq(&w1, &w2));
    assert_eq!(tying::spares(slot), 1);
    let word = Arc::as_ptr(&w1) as usize;
    let untie = |ticket: usize| {
        // SAFETY: `obj` is live.
        unsafe { tying::untie_any::<WordOnly>(ptr, tag, &side, ticket as u64, 0) }
    };
    assert_eq!(untie(word + 64), None);
    assert_eq!(tying::peek(slot) & !(0xffff << 48), word, "another wrapper's release leaves the slot alone");
    let before = obj.header().strong_count(); // ours, the wrapper's, one spare
    assert_eq!(untie(word), Some(word));
    assert_eq!(obj.header().strong_count(), before - 1, "the spare was released");
    assert_eq!(tying::peek(slot), 0, "Detached");
    // SAFETY: the wrapper's own +1, released after its untie as a frontend does.
    unsafe { tether_core::object::dec_ref(w1.obj) };
    drop((w1, w2));
    assert_eq!(obj.header().strong_count(), 1);
}
