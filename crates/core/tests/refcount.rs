//! The object header and its reference-count protocol (docs/abi.md §1), strong and weak.

mod common;

use std::mem::{offset_of, size_of};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use tether_core::alloc::{current_allocator_tag, free_object, live_objects};
use tether_core::arc::alloc_raw_object;
use tether_core::object::{self, DELETE_BOTH, DELETE_MEMORY, DELETE_VALUE};
use tether_core::testing::Pair;
use tether_core::{declare_object, Any, Object, ObjectArc, ObjectHeader};

static DROPS: AtomicUsize = AtomicUsize::new(0);

struct Tracked(#[allow(dead_code)] u64);
declare_object!(Tracked, "tests.refcount.Tracked");
impl Drop for Tracked {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

const STRONG_ONE: u64 = 1;
const WEAK_ONE: u64 = 1 << 32;

fn count_word(h: &ObjectHeader) -> u64 {
    h.combined_ref_count.load(Ordering::SeqCst)
}

#[test]
fn header_is_24_bytes_with_fixed_offsets() {
    assert_eq!(size_of::<ObjectHeader>(), 24);
    assert_eq!(std::mem::align_of::<ObjectHeader>(), 8);
    assert_eq!(offset_of!(ObjectHeader, combined_ref_count), 0);
    assert_eq!(offset_of!(ObjectHeader, type_index), 8);
    assert_eq!(offset_of!(ObjectHeader, alloc_tag), 12);
    assert_eq!(offset_of!(ObjectHeader, deleter), 16);
    assert_eq!((DELETE_VALUE, DELETE_MEMORY, DELETE_BOTH), (1, 2, 3));
}

#[test]
fn new_object_starts_strong_one_weak_one_with_its_type_and_tag() {
    let _g = common::serial();
    let a = ObjectArc::new(Tracked(1));
    let h = ObjectArc::header(&a);
    assert_eq!(count_word(h), STRONG_ONE | WEAK_ONE);
    assert_eq!(ObjectHeader::INITIAL_COUNT, STRONG_ONE | WEAK_ONE);
    assert_eq!((h.strong_count(), h.weak_count()), (1, 1));
    assert_eq!(h.type_index, Tracked::type_index());
    assert_eq!(h.alloc_tag, current_allocator_tag());
}

#[test]
fn clone_and_drop_move_the_strong_count_and_the_last_drop_frees() {
    let _g = common::serial();
    let base = live_objects();
    let drops = DROPS.load(Ordering::SeqCst);
    let a = ObjectArc::new(Tracked(2));
    assert_eq!(live_objects(), base + 1);
    let b = a.clone();
    let c = b.clone();
    assert_eq!(ObjectArc::strong_count(&a), 3);
    assert_eq!(ObjectArc::header(&a).weak_count(), 1, "strong refs share one weak");
    drop(b);
    drop(a);
    assert_eq!(ObjectArc::strong_count(&c), 1);
    assert_eq!(DROPS.load(Ordering::SeqCst), drops);
    drop(c);
    assert_eq!(DROPS.load(Ordering::SeqCst), drops + 1, "value dropped exactly once");
    assert_eq!(live_objects(), base, "memory returned");
}

#[test]
fn weak_upgrade_fails_after_last_strong_and_memory_waits_for_the_weak() {
    let _g = common::serial();
    let base = live_objects();
    let drops = DROPS.load(Ordering::SeqCst);
    let a = ObjectArc::new(Tracked(3));
    let w = ObjectArc::downgrade(&a);
    let w2 = w.clone();
    assert_eq!(ObjectArc::header(&a).weak_count(), 3);
    let up = w.upgrade().expect("alive: upgrade works");
    assert!(ObjectArc::ptr_eq(&up, &a));
    assert_eq!(ObjectArc::strong_count(&a), 2);
    drop(up);
    drop(a);
    assert_eq!(DROPS.load(Ordering::SeqCst), drops + 1, "value dropped when strong reached zero");
    assert_eq!(live_objects(), base + 1, "memory kept while weak refs exist");
    assert!(w.upgrade().is_none(), "no resurrection after the last strong ref");
    drop(w);
    assert_eq!(live_objects(), base + 1);
    assert!(w2.upgrade().is_none());
    drop(w2);
    assert_eq!(live_objects(), base, "last weak freed the memory");
    assert_eq!(DROPS.load(Ordering::SeqCst), drops + 1, "value never dropped twice");
}

#[test]
fn weak_dropped_first_leaves_a_plain_strong_object() {
    let _g = common::serial();
    let base = live_objects();
    let a = ObjectArc::new(Tracked(4));
    drop(ObjectArc::downgrade(&a));
    assert_eq!(count_word(ObjectArc::header(&a)), ObjectHeader::INITIAL_COUNT);
    drop(a);
    assert_eq!(live_objects(), base);
}

// ---- the raw protocol, observed through a hand-made object's deleter ----------------------

static FLAGS_SEEN: Mutex<Vec<i32>> = Mutex::new(Vec::new());

#[repr(C)]
struct RawBody {
    header: ObjectHeader,
    payload: u64,
}

struct RawMarker;
declare_object!(RawMarker, "tests.refcount.Raw");

unsafe extern "C" fn record_deleter(obj: *mut ObjectHeader, flags: i32) {
    FLAGS_SEEN.lock().unwrap().push(flags);
    if flags & DELETE_MEMORY != 0 {
        // SAFETY: allocated below with exactly this layout; last reference is gone.
        unsafe { free_object(obj, size_of::<RawBody>(), 8) };
    }
}

fn make_raw() -> tether_core::ObjectRef {
    // SAFETY: `record_deleter` frees exactly this size and alignment; the body is plain data.
    unsafe { alloc_raw_object(size_of::<RawBody>(), 8, RawMarker::type_index(), record_deleter) }
}

#[test]
fn deleter_gets_both_flags_at_once_without_weak_refs() {
    let _g = common::serial();
    FLAGS_SEEN.lock().unwrap().clear();
    let base = live_objects();
    let obj = make_raw();
    let p = obj.into_raw();
    // SAFETY: we own one strong reference to a live object.
    unsafe {
        object::inc_ref(p);
        object::dec_ref(p);
        assert!(FLAGS_SEEN.lock().unwrap().is_empty(), "strong 2 -> 1 deletes nothing");
        object::dec_ref(p);
    }
    assert_eq!(*FLAGS_SEEN.lock().unwrap(), vec![DELETE_BOTH]);
    assert_eq!(live_objects(), base);
}

#[test]
fn deleter_drops_value_then_memory_when_a_weak_ref_outlives_strong() {
    let _g = common::serial();
    FLAGS_SEEN.lock().unwrap().clear();
    let base = live_objects();
    let p = make_raw().into_raw();
    // SAFETY: we own one strong reference; the weak one we add keeps the header readable.
    unsafe {
        object::inc_weak(p);
        object::dec_ref(p);
        assert_eq!(*FLAGS_SEEN.lock().unwrap(), vec![DELETE_VALUE]);
        assert_eq!((*p).strong_count(), 0);
        assert_eq!((*p).weak_count(), 1, "only our weak ref remains");
        assert!(!object::try_upgrade(p));
        object::dec_weak(p);
    }
    assert_eq!(*FLAGS_SEEN.lock().unwrap(), vec![DELETE_VALUE, DELETE_MEMORY]);
    assert_eq!(live_objects(), base);
}

#[test]
fn a_release_expecting_the_last_reference_destroys_only_a_sole_object() {
    let _g = common::serial();
    let live = live_objects();
    // The only reference of any kind: destroyed, memory freed.
    let before = DROPS.load(Ordering::SeqCst);
    let sole = ObjectArc::new(Tracked(1));
    // SAFETY: the reference `into_raw` gives up is the one released, once.
    unsafe { object::dec_ref_expecting_last(ObjectArc::into_raw(sole)) };
    assert_eq!(DROPS.load(Ordering::SeqCst), before + 1);
    assert_eq!(live_objects(), live);

    // Another strong reference: only a decrement.
    let a = ObjectArc::new(Tracked(2));
    let b = a.clone();
    // SAFETY: as above, for `b`'s reference.
    unsafe { object::dec_ref_expecting_last(ObjectArc::into_raw(b)) };
    assert_eq!(DROPS.load(Ordering::SeqCst), before + 1);
    assert_eq!(count_word(ObjectArc::header(&a)), STRONG_ONE | WEAK_ONE);

    // A weak reference besides the last strong one: the value goes, the memory stays for it.
    let weak = ObjectArc::downgrade(&a);
    // SAFETY: as above, for `a`'s reference.
    unsafe { object::dec_ref_expecting_last(ObjectArc::into_raw(a)) };
    assert_eq!(DROPS.load(Ordering::SeqCst), before + 2);
    assert!(weak.upgrade().is_none());
    drop(weak);
    assert_eq!(live_objects(), live);
}

#[test]
fn a_long_chain_of_objects_each_holding_the_next_is_freed_without_deep_recursion() {
    // Each Pair's drop releases the next: without a bound on nested destructions this takes a
    // frame per object. On a 256 KiB stack, 200_000 nested drops would overflow (~40 MB).
    let _g = common::serial();
    let base = live_objects();
    let length = common::iters(200_000, 300);
    let freed = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut head = Any::none();
            for i in 0..length {
                head = Any::object(Pair::new(head, Any::int(i as i64)).into());
            }
            let built = live_objects();
            drop(head);
            built
        })
        .unwrap()
        .join()
        .expect("the chain is freed on a small stack");
    assert_eq!(freed - base, length as i64, "every link was alive");
    assert_eq!(live_objects(), base, "every link is freed, once");
}

#[test]
fn objects_freed_by_a_thread_local_at_thread_exit_are_destroyed_after_the_put_off_list_is_gone() {
    // Thread-locals are dropped in the reverse order of their first use: the chain held here is
    // freed after the core's list of put-off destructions is torn down (a JVM thread's lending
    // state did this and aborted the process).
    let _g = common::serial();
    let base = live_objects();
    thread_local!(static HELD: std::cell::RefCell<Option<Any>> = const { std::cell::RefCell::new(None) });
    std::thread::spawn(|| {
        HELD.with(|h| {
            let mut head = Any::none();
            for i in 0..common::iters(1000, 100) {
                head = Any::object(Pair::new(head, Any::int(i as i64)).into());
            }
            *h.borrow_mut() = Some(head);
        });
        // A deep chain freed now puts destructions off: the list is used, so it is torn down
        // at exit before `HELD`.
        let mut other = Any::none();
        for i in 0..200 {
            other = Any::object(Pair::new(other, Any::int(i)).into());
        }
        drop(other);
    })
    .join()
    .expect("the thread exits cleanly");
    assert_eq!(live_objects(), base, "the chain held by the thread-local is freed too");
}
