//! The allocator registry (docs/abi.md §2): builtin, a custom allocator and a frontend allocator,
//! every alignment from 1 to 4096, and objects freed by the allocator that made them.
//! Switching allocators is process-wide, so the switching story is one ordered test.

mod common;

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tether_core::alloc::{
    self, allocator, current_allocator_tag, install_frontend_allocator, live_objects, prefix_offset,
    register_allocator, set_current_allocator, BUILTIN_TAG,
};
use tether_core::tying::{slot_in, Reserve, SlotLayout, SlotPrefix};
use tether_core::{Any, AnyView, ObjectHeader, ObjectRef};

const ALIGNMENTS: [i64; 6] = [1, 8, 16, 32, 64, 4096];

/// Live blocks of the counting allocator: body address -> (size, align).
static COUNTING_LIVE: Mutex<Option<HashMap<usize, (usize, usize)>>> = Mutex::new(None);
static COUNTING_FREES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn counting_allocate(_ctx: *mut c_void, size: usize, align: usize) -> *mut u8 {
    let layout = std::alloc::Layout::from_size_align(size, align).expect("valid layout");
    // SAFETY: the registry never asks for size 0 (objects hold at least a header).
    let p = unsafe { std::alloc::alloc(layout) };
    COUNTING_LIVE.lock().unwrap().get_or_insert_with(HashMap::new).insert(p as usize, (size, align));
    p
}

unsafe extern "C" fn counting_free(_ctx: *mut c_void, body: *mut u8, size: usize, align: usize) {
    let recorded = COUNTING_LIVE.lock().unwrap().get_or_insert_with(HashMap::new).remove(&(body as usize));
    assert_eq!(recorded, Some((size, align)), "free must name the exact size and alignment allocated");
    COUNTING_FREES.fetch_add(1, Ordering::SeqCst);
    // SAFETY: allocated above with this layout (checked).
    unsafe { std::alloc::dealloc(body, std::alloc::Layout::from_size_align_unchecked(size, align)) };
}

static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);
static HOOK_LAST_SLOT: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn on_free(ctx: *mut c_void, slot: *const AtomicUsize) {
    assert_eq!(ctx as usize, 0x7e7e, "the hook gets its own context back");
    HOOK_LAST_SLOT.store(slot as usize, Ordering::SeqCst);
    HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
}

fn make_aligned(align: i64) -> ObjectRef {
    common::call("testing.make_aligned", &[AnyView::int(align)]).unwrap().into_object().unwrap()
}

fn is_aligned(obj: &ObjectRef) -> bool {
    common::call("testing.is_aligned", &[AnyView::object(obj)]).unwrap().view().as_bool().unwrap()
}

/// Every alignment allocates aligned bodies and frees them (live count back to baseline).
fn round_trip_alignments(expected_tag: u32) {
    let base = live_objects();
    let objs: Vec<ObjectRef> = ALIGNMENTS.iter().map(|&a| make_aligned(a)).collect();
    for (obj, &align) in objs.iter().zip(&ALIGNMENTS) {
        assert!(is_aligned(obj), "alignment {align}");
        assert_eq!(obj.as_ptr() as usize % align.max(8) as usize, 0, "alignment {align}");
        assert_eq!(obj.header().alloc_tag, expected_tag);
    }
    assert_eq!(live_objects(), base + ALIGNMENTS.len() as i64);
    drop(objs);
    assert_eq!(live_objects(), base);
}

#[test]
fn current_allocator_is_never_missing_and_bad_tags_are_refused() {
    let _g = common::serial();
    assert!(allocator(current_allocator_tag()).is_some());
    assert!(allocator(BUILTIN_TAG).is_some());
    let e = set_current_allocator(63).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("63"), "{}", e.message());
    assert!(allocator(current_allocator_tag()).is_some(), "a refused switch changes nothing");
}

#[test]
fn prefix_offset_keeps_the_body_aligned_and_leaves_room_for_the_slot() {
    for layout in [SlotLayout::Full, SlotLayout::WordOnly] {
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            let off = prefix_offset(align, layout, 0);
            assert!(off >= layout.size());
            assert_eq!(off % align, 0, "align {align}");
        }
    }
    assert_eq!(prefix_offset(8, SlotLayout::WordOnly, 0), 8, "the word alone costs 8 bytes");
    assert_eq!(prefix_offset(8, SlotLayout::Full, 0), std::mem::size_of::<SlotPrefix>());
}

#[test]
fn prefix_offset_makes_room_for_the_slot_and_a_reserve() {
    for layout in [SlotLayout::Full, SlotLayout::WordOnly] {
        for reserve in [0usize, 8, 32, 40] {
            for align in [1usize, 8, 16, 32, 64, 4096] {
                let off = prefix_offset(align, layout, reserve);
                assert!(off >= layout.size() + reserve, "align {align}, reserve {reserve}");
                assert_eq!(off % align, 0, "align {align}, reserve {reserve}");
                assert!(off < layout.size() + reserve + align.max(8), "no more than one alignment step of padding");
            }
        }
    }
    assert_eq!(prefix_offset(8, SlotLayout::WordOnly, 32), 40, "a Node box and the word: 40 bytes");
    assert_eq!(prefix_offset(16, SlotLayout::WordOnly, 32), 48);
}

#[test]
fn a_frontend_allocator_reserve_is_writable_and_freed_with_the_object() {
    let _g = common::serial();
    let previous = current_allocator_tag();
    assert!(
        install_frontend_allocator(SlotLayout::WordOnly, Reserve::AfterSlot(12), None, std::ptr::null_mut()).is_err(),
        "multiple of 8"
    );
    assert!(
        install_frontend_allocator(SlotLayout::WordOnly, Reserve::BeforeSlot(4), None, std::ptr::null_mut()).is_err(),
        "multiple of 8 on either side"
    );
    // Node's box after the slot; CPython's wrapper head in front of it (the head's next word
    // is the slot).
    for (reserve, bytes) in [(Reserve::AfterSlot(32), 32usize), (Reserve::BeforeSlot(16), 16)] {
        let tag = install_frontend_allocator(SlotLayout::WordOnly, reserve, None, std::ptr::null_mut()).unwrap();
        let base = live_objects();
        for align in [8, 8, 16, 16, 64, 4096, 8] {
            let obj = make_aligned(align);
            // SAFETY: made by this frontend allocator (its tag says so).
            let word = unsafe { slot_in(obj.as_ptr(), tag, SlotLayout::WordOnly, reserve) }.expect("a slot word");
            assert_eq!(tether_core::tying::peek(word), 0, "a new slot is Detached");
            let (word_at, header_at) = (word.as_ptr() as usize, obj.as_ptr() as usize);
            let start = match reserve {
                Reserve::AfterSlot(_) => {
                    assert_eq!(word_at + 8 + bytes, header_at, "the slot, the reserve, the header");
                    word_at + 8
                }
                Reserve::BeforeSlot(_) => {
                    assert_eq!(word_at + 8, header_at, "the reserve, the slot, the header");
                    word_at - bytes
                }
            };
            assert_eq!(SlotLayout::WordOnly.reserve_at(word.as_ptr(), reserve) as usize, start);
            // SAFETY: `obj` is live; its header is readable.
            let (type_index, alloc_tag) = unsafe { ((*obj.as_ptr()).type_index, (*obj.as_ptr()).alloc_tag) };
            let reserved = start as *mut u8;
            // SAFETY: the reserved bytes beside the slot are the object's memory (Miri and the
            // sanitizers check the bounds); the memory of the last round's object, reused or
            // not, was scribbled on.
            unsafe {
                assert!(std::slice::from_raw_parts(reserved, bytes).iter().all(|&b| b == 0), "a new reserve is zeroed");
                std::ptr::write_bytes(reserved, 0xa5, bytes);
            }
            assert_eq!(tether_core::tying::peek(word), 0, "the reserve does not cover the slot");
            // SAFETY: `obj` is live; its header is readable.
            let after = unsafe { ((*obj.as_ptr()).type_index, (*obj.as_ptr()).alloc_tag) };
            assert_eq!(after, (type_index, alloc_tag), "nor the header");
            assert!(is_aligned(&obj), "align {align}");
        }
        assert_eq!(live_objects(), base);
        // The entry as a C plugin calls it: an alignment that is not a power of two gets null
        // (its round-up is a mask), 0 and 4 the slot's own 8, with the reserve zeroed and room
        // for all.
        let entry = allocator(tag).expect("registered");
        // SAFETY: the frontend allocator's ABI entries, with a non-zero size.
        unsafe {
            assert!((entry.allocate)(entry.ctx, 64, 24).is_null(), "align 24 is refused");
            for align in [0usize, 4] {
                let body = (entry.allocate)(entry.ctx, 64, align);
                assert!(!body.is_null() && body as usize % 8 == 0, "align {align}");
                let word = SlotLayout::WordOnly.word_of(body as *mut ObjectHeader, reserve);
                let reserved = SlotLayout::WordOnly.reserve_at(word, reserve);
                assert!(std::slice::from_raw_parts(reserved, bytes).iter().all(|&b| b == 0), "the reserve, zeroed");
                (entry.free)(entry.ctx, body, 64, align);
            }
        }
    }
    set_current_allocator(previous).unwrap();
}

#[test]
fn bad_alignments_are_value_errors() {
    let _g = common::serial();
    for bad in [0i64, 3, 8192, -8] {
        let e = common::call("testing.make_aligned", &[AnyView::int(bad)]).unwrap_err();
        assert_eq!(e.kind(), "ValueError", "align {bad}");
    }
}

#[test]
fn builtin_custom_then_frontend_allocators_each_free_their_own_objects() {
    let _g = common::serial();

    // 1. The builtin allocator.
    assert_eq!(current_allocator_tag(), BUILTIN_TAG);
    round_trip_alignments(BUILTIN_TAG);
    let made_by_builtin = Any::str("made by the builtin allocator");

    // 2. A custom (counting) allocator: every object goes through it, with exact layouts.
    // SAFETY: the counting allocator forwards to the builtin one and ignores `ctx`.
    let counting = unsafe { register_allocator(counting_allocate, counting_free, std::ptr::null_mut()) }.unwrap();
    assert_ne!(counting, BUILTIN_TAG);
    assert_eq!(current_allocator_tag(), BUILTIN_TAG, "registering does not switch");
    set_current_allocator(counting).unwrap();
    round_trip_alignments(counting);
    let frees_before = COUNTING_FREES.load(Ordering::SeqCst);
    let containers = vec![
        Any::str("a string long enough to be an object"),
        Any::bytes(b"bytes long enough to be an object"),
        Any::object(tether_core::ArrayObj::new(vec![Any::int(1)]).into()),
        Any::object(tether_core::MapObj::new(vec![(Any::int(1), Any::int(2))]).into()),
        Any::object(tether_core::Error::value("an error").into_object()),
    ];
    let func = tether_core::Function::from_typed("tests.f", |a: i64| a);
    for c in &containers {
        assert_eq!(alloc_tag_of(c), counting, "{c:?} goes through the current allocator");
    }
    assert_eq!(tether_core::ObjectArc::header(&func.0).alloc_tag, counting);
    let n = containers.len() + 1;
    drop(containers);
    drop(func);
    assert!(COUNTING_FREES.load(Ordering::SeqCst) >= frees_before + n);
    let made_by_counting = Any::str("made by the counting allocator");

    // 3. Frontend allocators: a slot in front of every new object (a full prefix, or the
    // word alone), and a free hook.
    let word_only =
        install_frontend_allocator(SlotLayout::WordOnly, Reserve::NONE, Some(on_free), 0x7e7e as *mut c_void).unwrap();
    assert_eq!(current_allocator_tag(), word_only);
    let hooks = HOOK_CALLS.load(Ordering::SeqCst);
    round_trip_alignments(word_only);
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), hooks + ALIGNMENTS.len(), "hook runs once per freed object");
    for align in [8, 4096] {
        let obj = make_aligned(align);
        // SAFETY: `obj` was made by this frontend allocator (its alloc_tag says so).
        let word =
            unsafe { slot_in(obj.as_ptr(), word_only, SlotLayout::WordOnly, Reserve::NONE) }.expect("a slot word");
        assert_eq!(word.as_ptr() as usize, obj.as_ptr() as usize - 8, "the word right before the header");
        assert_eq!(tether_core::tying::peek(word), 0, "a new slot is Detached");
        let at = word.as_ptr() as usize;
        drop(obj);
        assert_eq!(HOOK_LAST_SLOT.load(Ordering::SeqCst), at, "the hook names the freed object's slot word");
    }

    let tag =
        install_frontend_allocator(SlotLayout::Full, Reserve::NONE, Some(on_free), 0x7e7e as *mut c_void).unwrap();
    assert_eq!(current_allocator_tag(), tag);
    let hooks = HOOK_CALLS.load(Ordering::SeqCst);
    round_trip_alignments(tag);
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), hooks + ALIGNMENTS.len(), "hook runs once per freed object");

    let obj = make_aligned(4096);
    let prefix = obj.as_ptr() as usize - std::mem::size_of::<SlotPrefix>();
    assert_eq!(prefix % 8, 0);
    // SAFETY: `obj` was made by this frontend allocator (its alloc_tag says so).
    let slot_ref =
        unsafe { slot_in(obj.as_ptr(), tag, SlotLayout::Full, Reserve::NONE) }.expect("frontend objects carry a slot");
    assert_eq!(slot_ref.as_ptr() as usize, prefix, "the word opens the SlotPrefix");
    assert_eq!(tether_core::tying::peek(slot_ref), 0, "a new slot is Detached");
    drop(obj);
    assert_eq!(HOOK_LAST_SLOT.load(Ordering::SeqCst), prefix, "the hook names the freed object's slot");

    // 4. Objects made before the switches are still freed by their own allocators.
    assert_eq!(alloc_tag_of(&made_by_builtin), BUILTIN_TAG);
    assert_eq!(alloc_tag_of(&made_by_counting), counting);
    // SAFETY: not made by the frontend allocator: no slot may be read.
    assert!(unsafe { slot_in(made_by_builtin.view().as_object_ptr().unwrap(), tag, SlotLayout::Full, Reserve::NONE) }
        .is_none());
    let frees = COUNTING_FREES.load(Ordering::SeqCst);
    let hooks = HOOK_CALLS.load(Ordering::SeqCst);
    drop(made_by_counting);
    assert_eq!(COUNTING_FREES.load(Ordering::SeqCst), frees + 1, "freed by the counting allocator");
    drop(made_by_builtin);
    assert_eq!(COUNTING_FREES.load(Ordering::SeqCst), frees + 1, "the builtin object did not go to the counting one");
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), hooks, "nor to the frontend one");
    assert!(COUNTING_LIVE.lock().unwrap().as_ref().is_none_or(HashMap::is_empty), "counting allocator: nothing leaked");

    // 5. Raw allocation through the registry round-trips too.
    let base = live_objects();
    let raw = alloc::alloc_object(64, 64);
    assert_eq!(raw as usize % 64, 0);
    // SAFETY: fresh memory from the registry with this exact layout; no header was initialised
    // beyond alloc_tag, and nothing else refers to it.
    unsafe {
        assert_eq!((*raw).alloc_tag, tag);
        alloc::free_object(raw, 64, 64);
    }
    assert_eq!(live_objects(), base);
}

fn alloc_tag_of(v: &Any) -> u32 {
    let p: *mut ObjectHeader = v.view().as_object_ptr().expect("an object");
    // SAFETY: `v` keeps the object alive.
    unsafe { (*p).alloc_tag }
}

#[test]
fn live_objects_count_across_threads_that_make_free_and_exit() {
    let _g = common::serial();
    let base = live_objects();
    // Made on threads that then exit (their counts retire), freed here.
    let made: Vec<ObjectRef> =
        (0..4).map(|i| std::thread::spawn(move || make_aligned(8 << (i % 2)))).map(|t| t.join().unwrap()).collect();
    assert_eq!(live_objects(), base + 4, "objects of exited threads still count");
    // Made here, freed on threads that exit.
    let mine: Vec<ObjectRef> = (0..4).map(|_| make_aligned(8)).collect();
    assert_eq!(live_objects(), base + 8);
    for obj in mine {
        std::thread::spawn(move || drop(obj)).join().unwrap();
    }
    assert_eq!(live_objects(), base + 4, "a free on another thread counts against the total");
    // Threads that keep running while others exit, each making and freeing its own.
    let workers: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                let objs: Vec<ObjectRef> = (0..50).map(|_| make_aligned(16)).collect();
                drop(objs);
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    drop(made);
    assert_eq!(live_objects(), base);
    // More threads at once than the table has counters (64): the ones without a counter count
    // into the shared total, and every count comes out exact while they all hold objects.
    const THREADS: usize = 80;
    let holding = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
    let release = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
    let crowd: Vec<_> = (0..THREADS)
        .map(|_| {
            let (holding, release) = (holding.clone(), release.clone());
            std::thread::spawn(move || {
                let objs: Vec<ObjectRef> = (0..3).map(|_| make_aligned(8)).collect();
                holding.wait();
                release.wait();
                drop(objs);
            })
        })
        .collect();
    holding.wait();
    assert_eq!(live_objects(), base + 3 * THREADS as i64, "every thread's objects, counter or not");
    release.wait();
    for t in crowd {
        t.join().unwrap();
    }
    assert_eq!(live_objects(), base);
}
