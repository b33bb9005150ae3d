//! The `testing.*` namespace: every name, called exactly as the issue and conformance list
//! write it. Frontends and outside checks depend on these names and behaviours.

mod common;

use common::call;
use tether_core::alloc::live_objects;
use tether_core::function::{get_global, list_globals};
use tether_core::{Any, AnyView, ArrayObj, Function, MapObj, ObjectRef, TypeIndex};

const NAMES: [&str; 25] = [
    "testing.echo",
    "testing.make_pair",
    "testing.add",
    "testing.add3",
    "testing.sum",
    "testing.call",
    "testing.call_in_thread",
    "testing.call_times",
    "testing.call_in_background",
    "testing.sleep_ms",
    "testing.fail_allocations",
    "testing.raise_error",
    "testing.panic",
    "testing.stash",
    "testing.take",
    "testing.stash_clear",
    "testing.drop_in_thread",
    "testing.foreign_value",
    "testing.live_objects",
    "testing.make_aligned",
    "testing.is_aligned",
    "testing.make_array",
    "testing.make_map",
    "testing.greet",
    "testing.Pair", // the type, checked below through the type registry
];

fn obj(v: Any) -> ObjectRef {
    v.into_object().expect("an object")
}

#[test]
fn every_name_is_registered() {
    let _g = common::serial();
    let globals = list_globals();
    for name in &NAMES[..NAMES.len() - 1] {
        assert!(globals.iter().any(|g| g == name), "{name} is not a global function");
        assert_eq!(get_global(name).unwrap().name(), *name);
    }
    assert!(tether_core::types::type_index_of("testing.Pair").is_some());
}

#[test]
fn echo_returns_the_same_object_and_equal_values() {
    let _g = common::serial();
    let p = obj(call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).unwrap());
    let back = obj(call("testing.echo", &[AnyView::object(&p)]).unwrap());
    assert!(back.ptr_eq(&p));
    for v in [Any::int(-3), Any::float(2.5), Any::bool(true), Any::none(), Any::str("s"), Any::bytes(b"b")] {
        assert_eq!(call("testing.echo", &[v.view()]).unwrap(), v);
    }
    let long = call("testing.echo", &[AnyView::raw_str("a long string view")]).unwrap();
    assert_eq!(long.as_str(), Some("a long string view"));
}

#[test]
fn pair_fields_swap_and_constructor() {
    let _g = common::serial();
    let info = tether_core::types::type_info(tether_core::types::type_index_of("testing.Pair").unwrap()).unwrap();
    let p = obj(info.constructor().unwrap().call(&[AnyView::int(1), AnyView::raw_str("two")]).unwrap());
    let q = obj(call("testing.make_pair", &[AnyView::none(), AnyView::none()]).unwrap());
    tether_core::types::set_field(&p, "first", AnyView::object(&q)).unwrap();
    let first = obj(tether_core::types::get_field(&p, "first").unwrap());
    assert!(first.ptr_eq(&q), "an object field returns the same object each time");
    let swapped = obj(info.method("swap").unwrap().func().call(&[AnyView::object(&p)]).unwrap());
    assert_eq!(tether_core::types::get_field(&swapped, "first").unwrap().as_str(), Some("two"));
    assert!(obj(tether_core::types::get_field(&swapped, "second").unwrap()).ptr_eq(&q));
}

#[test]
fn arithmetic() {
    let _g = common::serial();
    assert_eq!(call("testing.add", &[AnyView::int(2), AnyView::int(40)]).unwrap().view().as_int(), Some(42));
    assert_eq!(
        call("testing.add3", &[AnyView::int(1), AnyView::int(2), AnyView::int(3)]).unwrap().view().as_int(),
        Some(6)
    );
    let xs = Any::object(ArrayObj::new(vec![Any::int(1), Any::float(0.5), Any::int(2)]).into());
    assert_eq!(call("testing.sum", &[xs.view()]).unwrap().view().as_float(), Some(3.5));
    let bad = Any::object(ArrayObj::new(vec![Any::int(1), Any::str("x")]).into());
    let e = call("testing.sum", &[bad.view()]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("TypeError", "testing.sum(): item 1 is str, not a number"));
    assert_eq!(call("testing.sum", &[AnyView::int(1)]).unwrap_err().kind(), "TypeError");
}

#[test]
fn call_and_call_in_thread() {
    let _g = common::serial();
    let f = Any::object(Function::from_typed("tests.mul", |a: i64, b: i64| a * b).0.into());
    assert_eq!(call("testing.call", &[f.view(), AnyView::int(6), AnyView::int(7)]).unwrap().view().as_int(), Some(42));
    let here = std::thread::current().id();
    let g = Function::from_typed("tests.other_thread", move || std::thread::current().id() != here);
    let g = Any::object(g.0.into());
    assert_eq!(call("testing.call_in_thread", &[g.view()]).unwrap().view().as_bool(), Some(true));
    let fails = Any::object(
        Function::from_typed("tests.fails", || -> tether_core::Result<()> {
            Err(tether_core::Error::key("from the thread"))
        })
        .0
        .into(),
    );
    let e = call("testing.call_in_thread", &[fails.view()]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("KeyError", "from the thread"), "the thread's error comes back");
    assert_eq!(call("testing.call", &[AnyView::int(1)]).unwrap_err().kind(), "TypeError");
    // `call` calls back on the calling thread and waits for nothing: a frontend may keep its
    // lock across it. `call_in_thread` waits for another thread: never.
    let flags = |name| tether_core::function::get_global(name).unwrap().flags();
    assert_ne!(flags("testing.call") & tether_core::function::FUNC_NONBLOCKING, 0);
    assert_eq!(flags("testing.call_in_thread") & tether_core::function::FUNC_NONBLOCKING, 0);
    // Typed closures of ints have an int entry (the JVM's critical `callLong`); others do not.
    let int_entry = |name| flags(name) & tether_core::function::FUNC_INT_ENTRY != 0;
    for name in ["testing.add", "testing.add3", "testing.fail_allocations", "testing.call_stashed_as_int_leaf"] {
        assert!(int_entry(name), "{name}");
    }
    for name in ["testing.echo", "testing.call", "testing.greet", "testing.call_stashed_as_leaf"] {
        assert!(!int_entry(name), "{name}");
    }
}

#[test]
fn call_times_calls_in_a_native_loop() {
    let _g = common::serial();
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let counted = calls.clone();
    let f = Function::from_typed("tests.count", move || counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1);
    let f = Any::object(f.0.into());
    let last = call("testing.call_times", &[f.view(), AnyView::int(5)]).unwrap();
    assert_eq!((last.view().as_int(), calls.load(std::sync::atomic::Ordering::SeqCst)), (Some(5), 5));
    assert!(call("testing.call_times", &[f.view(), AnyView::int(0)]).unwrap().view().is_none());
    let e = call("testing.call_times", &[f.view(), AnyView::int(-1)]).unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        ("ValueError", "testing.call_times() argument 'n' must not be negative, got -1")
    );
    let fails =
        Function::from_typed("tests.fails", || -> tether_core::Result<()> { Err(tether_core::Error::key("stop")) });
    let fails = Any::object(fails.0.into());
    assert_eq!(call("testing.call_times", &[fails.view(), AnyView::int(3)]).unwrap_err().kind(), "KeyError");
}

#[test]
fn sleep_ms_checks_its_argument() {
    let _g = common::serial();
    assert!(call("testing.sleep_ms", &[AnyView::int(1)]).unwrap().view().is_none());
    for bad in [-1, 60_001] {
        let e = call("testing.sleep_ms", &[AnyView::int(bad)]).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            ("ValueError", format!("testing.sleep_ms() argument 'ms' must be between 0 and 60000, got {bad}").as_str())
        );
    }
}

/// Sends on `done` when dropped: the background thread dropped its callback, so it ended.
struct Ended(std::sync::mpsc::Sender<()>);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

#[test]
fn call_in_background_calls_on_a_detached_thread_and_stops_at_an_error() {
    let _g = common::serial();
    for (times, fail_at, expected) in [(3, i64::MAX, 3), (5, 2, 2)] {
        let (done, ended) = std::sync::mpsc::channel();
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
        let counted = calls.clone();
        let guard = Ended(done);
        let here = std::thread::current().id();
        let f = Function::from_typed("tests.background", move || -> tether_core::Result<()> {
            let _keep = &guard;
            assert_ne!(std::thread::current().id(), here, "called on another thread");
            let n = counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if n == fail_at {
                return Err(tether_core::Error::runtime("the runtime is shutting down"));
            }
            Ok(())
        });
        let f = Any::object(f.0.into());
        assert!(call("testing.call_in_background", &[f.view(), AnyView::int(times), AnyView::int(1)])
            .unwrap()
            .view()
            .is_none());
        drop(f);
        ended.recv().expect("the thread drops its callback when it ends");
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), expected, "times {times}, failing at {fail_at}");
    }
    let none = Any::object(Function::from_typed("tests.nothing", || ()).0.into());
    let e = call("testing.call_in_background", &[none.view(), AnyView::int(1), AnyView::int(-5)]).unwrap_err();
    assert_eq!(e.message(), "testing.call_in_background() argument 'interval_ms' must be between 0 and 60000, got -5");
    let e = call("testing.call_in_background", &[none.view(), AnyView::int(-1), AnyView::int(0)]).unwrap_err();
    assert_eq!(e.message(), "testing.call_in_background() argument 'times' must not be negative, got -1");
}

#[test]
fn raise_error_and_panic() {
    let _g = common::serial();
    for kind in ["TypeError", "ValueError", "IndexError", "KeyError", "AttributeError", "RuntimeError"] {
        let e = call("testing.raise_error", &[AnyView::raw_str(kind), AnyView::raw_str("msg")]).unwrap_err();
        assert_eq!((e.kind(), e.message()), (kind, "msg"));
    }
    let e = call("testing.panic", &[AnyView::raw_str("boom")]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("RustPanic", "boom"));
}

#[test]
fn stash_take_clear_and_drop_in_thread() {
    let _g = common::serial();
    let base = live_objects();
    let p = obj(call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).unwrap());
    let ptr = p.as_ptr();
    call("testing.stash", &[AnyView::raw_str("k"), AnyView::object(&p)]).unwrap();
    drop(p);
    assert_eq!(live_objects(), base + 1, "the stash keeps it alive");
    let back = obj(call("testing.take", &[AnyView::raw_str("k")]).unwrap());
    assert_eq!(back.as_ptr(), ptr);
    let e = call("testing.take", &[AnyView::raw_str("k")]).unwrap_err();
    assert_eq!(e.kind(), "KeyError", "take removes");
    drop(e);
    call("testing.stash", &[AnyView::raw_str("a"), AnyView::object(&back)]).unwrap();
    call("testing.stash", &[AnyView::raw_str("b"), AnyView::object(&back)]).unwrap();
    call("testing.stash_clear", &[]).unwrap();
    assert_eq!(call("testing.take", &[AnyView::raw_str("a")]).unwrap_err().kind(), "KeyError");
    let extra = back.clone().into_raw();
    // SAFETY: `extra` is a strong reference we own; drop_in_thread gets its own copy.
    let extra = unsafe { ObjectRef::from_raw(extra) };
    call("testing.drop_in_thread", &[Any::object(extra).view()]).unwrap();
    drop(back);
    assert_eq!(live_objects(), base);
}

#[test]
fn live_objects_counts_allocations() {
    let _g = common::serial();
    let n = call("testing.live_objects", &[]).unwrap().view().as_int().unwrap();
    assert_eq!(n, live_objects());
    let p = call("testing.make_pair", &[AnyView::none(), AnyView::none()]).unwrap();
    assert_eq!(call("testing.live_objects", &[]).unwrap().view().as_int(), Some(n + 1));
    drop(p);
    assert_eq!(call("testing.live_objects", &[]).unwrap().view().as_int(), Some(n));
}

#[test]
fn make_aligned_and_is_aligned() {
    let _g = common::serial();
    for align in [1, 8, 16, 32, 64, 4096] {
        let o = call("testing.make_aligned", &[AnyView::int(align)]).unwrap();
        assert_eq!(call("testing.is_aligned", &[o.view()]).unwrap().view().as_bool(), Some(true), "{align}");
    }
    let p = call("testing.make_pair", &[AnyView::none(), AnyView::none()]).unwrap();
    assert_eq!(
        call("testing.is_aligned", &[p.view()]).unwrap().view().as_bool(),
        Some(true),
        "any object is 8-aligned"
    );
    assert_eq!(call("testing.is_aligned", &[AnyView::int(1)]).unwrap_err().kind(), "TypeError");
}

#[test]
fn make_array_and_make_map() {
    let _g = common::serial();
    let base = live_objects();
    let arr = call("testing.make_array", &[AnyView::int(2)]).unwrap();
    let items = arr.view().downcast_ref::<ArrayObj>().unwrap().items().to_vec();
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|i| i.type_index() >= TypeIndex::FIRST_USER));
    assert_ne!(items[0], items[1], "distinct Pair objects");
    assert_eq!(call("testing.make_array", &[AnyView::int(-1)]).unwrap_err().kind(), "ValueError");

    let keys = Any::object(ArrayObj::new(vec![Any::str("x"), Any::int(2)]).into());
    let map = call("testing.make_map", &[keys.view(), arr.view()]).unwrap();
    let m = map.view().downcast_ref::<MapObj>().unwrap();
    assert_eq!(m.get(&AnyView::raw_str("x")).unwrap(), &items[0], "values are the stored objects");
    assert_eq!(m.get(&AnyView::int(2)).unwrap(), &items[1]);
    let kind = call("testing.make_map", &[keys.view(), keys.view(), AnyView::none()]).unwrap_err().kind().to_string();
    assert_eq!(kind, "TypeError", "arity");
    let short = Any::object(ArrayObj::new(vec![Any::int(1)]).into());
    let kind = call("testing.make_map", &[keys.view(), short.view()]).unwrap_err().kind().to_string();
    assert_eq!(kind, "ValueError", "length mismatch");
    drop((arr, items, keys, map, short));
    assert_eq!(live_objects(), base);
}
