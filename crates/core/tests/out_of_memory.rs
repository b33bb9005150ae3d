//! Allocation failure (docs/abi.md §2, "Out of memory"): an allocator that returns null is a
//! MemoryError where the allocation happened, nothing leaks and the process keeps working.
//! `testing.fail_allocations` is process-wide, so this file is one ordered test in a binary of
//! its own.

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::call;
use tether_core::alloc::{
    alloc_object, install_frontend_allocator, live_objects, set_current_allocator, try_alloc_object, OutOfMemory,
    BUILTIN_TAG,
};
use tether_core::error::{catch_out_of_memory, catch_panic, OUT_OF_MEMORY_MESSAGE};
use tether_core::testing::Pair;
use tether_core::tying::{Reserve, SlotLayout};
use tether_core::{Any, AnyView, ArrayObj, Error, ErrorKind, Function, MapObj, ObjectHeader};

static DROPS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_drop(_data: *mut c_void) {
    DROPS.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn refuse(_f: *mut ObjectHeader, _args: *const AnyView<'_>, _n: i32, _result: *mut Any) -> i32 {
    -1
}

fn fail_allocations(n: i64) -> i64 {
    call("testing.fail_allocations", &[AnyView::int(n), AnyView::int(0)]).unwrap().view().as_int().unwrap()
}

fn assert_memory_error(e: &Error) {
    assert_eq!((e.kind(), e.code(), e.message()), ("MemoryError", ErrorKind::MemoryError, OUT_OF_MEMORY_MESSAGE));
}

#[test]
fn an_allocation_failure_is_a_memory_error_and_the_process_keeps_working() {
    tether_core::init();
    let frontend = install_frontend_allocator(SlotLayout::Full, Reserve::NONE, None, std::ptr::null_mut()).unwrap();
    let base = live_objects();

    // A native function whose object cannot be allocated raises the MemoryError.
    assert_eq!(fail_allocations(1), 0);
    assert_memory_error(&call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).unwrap_err());
    assert_eq!(fail_allocations(0), 0, "the one failure was used by the Pair");

    // n failures: the next n calls fail, then calls work again.
    fail_allocations(3);
    for _ in 0..3 {
        assert_memory_error(&call("testing.make_array", &[AnyView::int(4)]).unwrap_err());
    }
    let array = call("testing.make_array", &[AnyView::int(4)]).unwrap();
    assert_eq!(array.view().downcast_ref::<tether_core::ArrayObj>().map(|a| a.len()), Some(4));
    drop(array);

    // An error whose own objects cannot be allocated is the MemoryError instead.
    fail_allocations(2);
    assert_memory_error(&Error::value("a message long enough to need a string object of its own"));
    assert_eq!(fail_allocations(0), 1, "one failure used by the error's first string");

    // The allocation entry points: None, or an OutOfMemory unwind that catch_panic maps.
    fail_allocations(1);
    assert!(try_alloc_object(64, 8).is_none());
    fail_allocations(1);
    let unwound = std::panic::catch_unwind(|| alloc_object(64, 8)).unwrap_err();
    assert_eq!(unwound.downcast_ref::<OutOfMemory>(), Some(&OutOfMemory { size: 64, align: 8 }));
    fail_allocations(1);
    assert_memory_error(&catch_panic(|| Ok(Pair::new(Any::int(1), Any::none()))).map(drop).unwrap_err());

    // Containers whose allocation fails release the items they were given.
    let pairs: Vec<Any> = (0..12).map(|i| Any::object(Pair::new(Any::int(i), Any::none()).into())).collect();
    let made = live_objects();
    fail_allocations(1);
    let entries: Vec<(Any, Any)> = pairs.iter().map(|p| (p.clone(), p.clone())).collect();
    assert_memory_error(&catch_out_of_memory(|| MapObj::new(entries)).map(drop).unwrap_err());
    fail_allocations(1);
    assert_memory_error(&catch_out_of_memory(|| ArrayObj::new(pairs.clone())).map(drop).unwrap_err());
    fail_allocations(1);
    assert_memory_error(&catch_out_of_memory(|| Any::str("longer than an inline string")).map(drop).unwrap_err());
    assert_eq!(live_objects(), made);
    drop(pairs);

    // Functions: `try_from_raw_parts` leaves the data to the caller, `from_raw_parts` drops it.
    let data = std::ptr::dangling_mut::<c_void>();
    fail_allocations(1);
    // SAFETY: `refuse` follows the call ABI; `count_drop` ignores its data.
    let tried = unsafe { Function::try_from_raw_parts(refuse, data, Some(count_drop), "tests.f", 0, 0) };
    assert_memory_error(&tried.map(drop).unwrap_err());
    assert_eq!(DROPS.load(Ordering::SeqCst), 0, "the data is still the caller's");
    fail_allocations(1);
    // SAFETY: as above.
    let made =
        std::panic::catch_unwind(|| unsafe { Function::from_raw_parts(refuse, data, Some(count_drop), "x", 0, 0) });
    assert!(made.unwrap_err().is::<OutOfMemory>());
    assert_eq!(DROPS.load(Ordering::SeqCst), 1, "the Function owned the data and released it");

    // Nothing leaked; the process keeps working.
    assert_eq!(live_objects(), base);
    let pair = call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).unwrap();
    assert_eq!(pair.view().downcast_ref::<Pair>().map(|p| p.first().view().as_int()), Some(Some(1)));
    drop(pair);
    assert_eq!(live_objects(), base);

    // Only the frontend allocators take injected failures; the builtin one never fails them.
    set_current_allocator(BUILTIN_TAG).unwrap();
    fail_allocations(1);
    assert!(call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).is_ok());
    assert_eq!(fail_allocations(0), 1);

    // `after`: allocations that succeed first, so a failure lands part way through.
    set_current_allocator(frontend).unwrap();
    call("testing.fail_allocations", &[AnyView::int(1), AnyView::int(3)]).unwrap();
    let made = call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).unwrap(); // 1
    let partial = live_objects();
    assert_memory_error(&call("testing.make_array", &[AnyView::int(4)]).unwrap_err()); // 2 Pairs, then fails
    assert_eq!(live_objects(), partial, "the Pairs made before the failure are freed");
    assert_eq!(fail_allocations(0), 0);
    drop(made);
    assert_eq!(live_objects(), base);
    set_current_allocator(BUILTIN_TAG).unwrap();

    let e = call("testing.fail_allocations", &[AnyView::int(-1), AnyView::int(0)]).unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        ("ValueError", "testing.fail_allocations() argument 'n' must not be negative, got -1")
    );
    let e = call("testing.fail_allocations", &[AnyView::int(1), AnyView::int(-2)]).unwrap_err();
    assert_eq!(e.message(), "testing.fail_allocations() argument 'after' must not be negative, got -2");
}
