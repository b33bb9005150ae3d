//! Functions: the safe_call ABI, typed closures with TypeErrors that name the position and
//! kinds, arity errors, packed and raw functions, and the global registry.

mod common;

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use tether_core::function::{
    call_value_entry, get_global, list_globals, register_global, remove_global, FUNC_ADOPTS_LENT, FUNC_INT_ENTRY,
    FUNC_LEAF, FUNC_NONBLOCKING, FUNC_SIGNED, FUNC_VALUE_ENTRY,
};
use tether_core::testing::Pair;
use tether_core::{Any, AnyView, Function, ObjectArc, ObjectHeader, TypeIndex};

#[test]
fn typed_closures_convert_arguments_and_results() {
    let _g = common::serial();
    let f = Function::from_typed("tests.mix", |a: i64, b: f64, s: String, flag: bool| format!("{a}/{b}/{s}/{flag}"));
    assert_eq!(f.arity(), 4);
    assert_eq!(f.name(), "tests.mix");
    let r = f.call(&[AnyView::int(1), AnyView::int(2), AnyView::raw_str("x"), AnyView::bool(true)]).unwrap();
    assert_eq!(r.as_str(), Some("1/2/x/true"));
    let unit = Function::from_typed("tests.unit", || ());
    assert!(unit.call(&[]).unwrap().is_none());
    let opt = Function::from_typed("tests.opt", |x: Option<i64>| x.map(|v| v * 2));
    assert_eq!(opt.call(&[AnyView::int(4)]).unwrap().view().as_int(), Some(8));
    assert!(opt.call(&[AnyView::none()]).unwrap().is_none());
    let obj = Function::from_typed("tests.first", |p: ObjectArc<Pair>| p.first());
    let p = Any::object(Pair::new(Any::int(9), Any::none()).into());
    assert_eq!(obj.call(&[p.view()]).unwrap().view().as_int(), Some(9));
}

#[test]
fn type_errors_name_the_position_the_expected_and_the_actual_kind() {
    let _g = common::serial();
    let f = Function::from_typed("tests.f", |_a: i64, _b: String, _p: ObjectArc<Pair>| ());
    let p = Any::object(Pair::new(Any::none(), Any::none()).into());
    let cases: [(Vec<AnyView<'_>>, &str); 3] = [
        (vec![AnyView::float(1.5), AnyView::raw_str("s"), p.view()], "tests.f() argument 1 must be int, not float"),
        (vec![AnyView::int(1), AnyView::bool(false), p.view()], "tests.f() argument 2 must be str, not bool"),
        (
            vec![AnyView::int(1), AnyView::raw_str("s"), AnyView::none()],
            "tests.f() argument 3 must be testing.Pair, not None",
        ),
    ];
    for (args, message) in cases {
        let e = f.call(&args).unwrap_err();
        assert_eq!((e.kind(), e.message()), ("TypeError", message));
    }
    let s = Any::str("a string object, not a pair");
    let e = f.call(&[AnyView::int(1), AnyView::raw_str("s"), s.view()]).unwrap_err();
    assert_eq!(e.message(), "tests.f() argument 3 must be testing.Pair, not str");
}

#[test]
fn wrong_arity_is_a_type_error() {
    let _g = common::serial();
    let f = Function::from_typed("tests.two", |a: i64, b: i64| a + b);
    let e = f.call(&[AnyView::int(1)]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("TypeError", "tests.two() takes 2 arguments but 1 was given"));
    let e = f.call(&[AnyView::int(1), AnyView::int(2), AnyView::int(3)]).unwrap_err();
    assert_eq!(e.message(), "tests.two() takes 2 arguments but 3 were given");
    let one = Function::from_typed("tests.one", |a: i64| a);
    assert_eq!(one.call(&[]).unwrap_err().message(), "tests.one() takes 1 argument but 0 were given");
}

#[test]
fn packed_functions_see_raw_cells_and_flags_and_docs_stick() {
    let _g = common::serial();
    let f = Function::from_packed("tests.count", |args| Ok(Any::int(args.len() as i64))).leaf().with_doc("Counts.");
    assert_eq!(f.arity(), -1, "variadic");
    assert_eq!(f.flags() & FUNC_LEAF, FUNC_LEAF);
    assert_eq!(f.doc(), "Counts.");
    assert_eq!(f.call(&[AnyView::none(); 5]).unwrap().view().as_int(), Some(5));
    let g = Function::from_typed("tests.g", |a: i64| a);
    assert_eq!(
        (g.flags(), g.doc()),
        (FUNC_ADOPTS_LENT | FUNC_SIGNED | FUNC_INT_ENTRY | FUNC_VALUE_ENTRY, ""),
        "typed closures take lent arguments, have a signature, and are not leaves; int ones have an int entry, \
         and those of at most two parameters a value entry"
    );
    assert_eq!(f.flags() & FUNC_ADOPTS_LENT, 0, "packed closures see raw cells: no lending");
    let n = Function::from_packed("tests.calls_back", |args| Ok(Any::int(args.len() as i64))).nonblocking();
    assert_eq!(n.flags() & (FUNC_NONBLOCKING | FUNC_LEAF), FUNC_NONBLOCKING, "nonblocking, not a leaf");
    assert_eq!(g.flags() & FUNC_NONBLOCKING, 0, "only a function that says so is nonblocking");
}

/// Call `f`'s int entry with `args` (its arity's worth).
fn call_int_entry(f: &Function, args: &[i64]) -> Result<i64, tether_core::Error> {
    let entry = f.0.int_entry().expect("an int entry");
    assert_eq!(args.len(), f.arity() as usize);
    let at = |i: usize| args.get(i).copied().unwrap_or(0);
    // SAFETY: a live Function with an int entry, given its arity's ints (the rest 0).
    let out = unsafe { entry(f.as_object_ptr(), at(0), at(1), at(2), at(3)) };
    match out.status {
        0 => Ok(out.value),
        -1 => Err(tether_core::error::take_last_error()),
        other => panic!("status {other}"),
    }
}

#[test]
fn typed_closures_of_ints_have_an_int_entry_with_safe_calls_values_and_errors() {
    let _g = common::serial();
    let add3 = Function::from_typed("tests.add3", |a: i64, b: i64, c: i64| a.wrapping_add(b).wrapping_add(c));
    assert_eq!(call_int_entry(&add3, &[1, 2, 3]).unwrap(), 6);
    assert_eq!(call_int_entry(&add3, &[i64::MAX, 1, 0]).unwrap(), i64::MIN);
    let zero = Function::from_typed("tests.zero", || 7i64);
    assert_eq!(call_int_entry(&zero, &[]).unwrap(), 7);
    // A narrower parameter: the TypeError safe_call gives for the same int.
    let narrow = Function::from_typed("tests.narrow", |a: i32| i64::from(a) * 2);
    assert_eq!(call_int_entry(&narrow, &[21]).unwrap(), 42);
    let by_entry = call_int_entry(&narrow, &[1 << 40]).unwrap_err();
    let by_call = narrow.call(&[AnyView::int(1 << 40)]).unwrap_err();
    assert_eq!((by_entry.kind(), by_entry.message()), (by_call.kind(), by_call.message()));
    // The closure's own error, and a result out of range, as safe_call words them.
    let checked = Function::from_typed("tests.checked", |a: i64| -> tether_core::Result<u64> {
        if a < 0 {
            Err(tether_core::Error::value("negative"))
        } else {
            Ok(a as u64 * 2)
        }
    });
    assert_eq!(call_int_entry(&checked, &[5]).unwrap(), 10);
    let e = call_int_entry(&checked, &[-1]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("ValueError", "negative"));
    let e = call_int_entry(&checked, &[i64::MAX]).unwrap_err();
    assert_eq!(e.message(), checked.call(&[AnyView::int(i64::MAX)]).unwrap_err().message());
    // A panic is caught in the entry and comes back as the error.
    let panics = Function::from_typed("tests.panics", |a: i64| -> i64 { panic!("int entry panic {a}") });
    let e = call_int_entry(&panics, &[3]).unwrap_err();
    assert_eq!(e.kind(), "RustPanic");
    assert!(e.message().contains("int entry panic 3"), "{}", e.message());
    // Any other parameter or result: no entry, no flag.
    for f in [
        Function::from_typed("tests.any", |a: Any| a),
        Function::from_typed("tests.float", |a: i64| a as f64),
        Function::from_typed("tests.text", |a: i64, _s: String| a),
        Function::from_typed("tests.unit", |_a: i64| ()),
    ] {
        assert_eq!((f.flags() & FUNC_INT_ENTRY, f.0.int_entry().is_none()), (0, true), "{}", f.name());
    }
    assert_eq!(add3.flags() & FUNC_INT_ENTRY, FUNC_INT_ENTRY);
}

#[test]
fn typed_closures_of_up_to_two_parameters_have_a_value_entry_with_safe_calls_values_and_errors() {
    let _g = common::serial();
    let call = |f: &Function, args: &[AnyView<'_>]| {
        let entry = f.0.value_entry().expect("a value entry");
        let ptr = f.as_object_ptr();
        // SAFETY: a live Function with a value entry, given its arity's arguments.
        unsafe {
            match *args {
                [] => call_value_entry(entry, ptr, []),
                [a] => call_value_entry(entry, ptr, [a]),
                [a, b] => call_value_entry(entry, ptr, [a, b]),
                _ => panic!("at most two"),
            }
        }
    };
    let concat = Function::from_typed("tests.concat", |a: String, b: i64| format!("{a}{b}"));
    let by_entry = call(&concat, &[AnyView::raw_str("x"), AnyView::int(7)]).unwrap();
    assert_eq!(by_entry.as_str(), Some("x7"));
    let zero = Function::from_typed("tests.zero", || 7i64);
    assert_eq!(call(&zero, &[]).unwrap().view().as_int(), Some(7));
    // A mismatch, and the closure's own error, as safe_call words them.
    let by_entry = call(&concat, &[AnyView::int(1), AnyView::int(7)]).unwrap_err();
    let by_call = concat.call(&[AnyView::int(1), AnyView::int(7)]).unwrap_err();
    assert_eq!((by_entry.kind(), by_entry.message()), (by_call.kind(), by_call.message()));
    let fails = Function::from_typed("tests.fails", |_a: Any| -> tether_core::Result<i64> {
        Err(tether_core::Error::value("no"))
    });
    let e = call(&fails, &[AnyView::none()]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("ValueError", "no"));
    let panics = Function::from_typed("tests.panics", |a: i64| -> i64 { panic!("value entry panic {a}") });
    let e = call(&panics, &[AnyView::int(3)]).unwrap_err();
    assert_eq!(e.kind(), "RustPanic");
    assert!(e.message().contains("value entry panic 3"), "{}", e.message());
    // A lent argument is consumed: `echo` returns the lent reference itself, and a parameter
    // that takes the object drops it when the closure is done.
    let echo = Function::from_typed("tests.echo", |a: Any| a);
    let pair = Pair::new(Any::int(1), Any::none());
    let obj = ObjectArc::as_ptr(&pair);
    let lend = || {
        std::mem::forget(pair.clone());
        // SAFETY: the reference just forgotten is the one the view lends.
        unsafe { AnyView::lent_object(obj) }
    };
    let back = call(&echo, &[lend()]).unwrap();
    assert_eq!(back.view().as_object_ptr(), Some(obj));
    assert_eq!(ObjectArc::strong_count(&pair), 2, "the lent reference came back as the result's");
    drop(back);
    let first = Function::from_typed("tests.first", |p: ObjectArc<Pair>| p.first());
    assert_eq!(call(&first, &[lend()]).unwrap().view().as_int(), Some(1));
    assert_eq!(ObjectArc::strong_count(&pair), 1, "the parameter took the lent reference and dropped it");
    // Three parameters: no entry, no flag.
    let three = Function::from_typed("tests.three", |a: i64, _b: i64, _c: String| a);
    assert_eq!((three.flags() & FUNC_VALUE_ENTRY, three.0.value_entry().is_none()), (0, true));
    assert_eq!(echo.flags() & FUNC_VALUE_ENTRY, FUNC_VALUE_ENTRY);
}

#[test]
fn safe_call_is_callable_directly_through_the_abi() {
    let _g = common::serial();
    let f = Function::from_typed("tests.neg", |a: i64| -a);
    let args = [AnyView::int(5)];
    let mut result = Any::none();
    // SAFETY: a live Function, one argument cell, a None result cell we own afterwards.
    let rc = unsafe { (f.0.safe_call)(f.as_object_ptr(), args.as_ptr(), 1, &mut result) };
    assert_eq!(rc, 0);
    assert_eq!(result.view().as_int(), Some(-5));
    // SAFETY: as above; the call fails and leaves its error in this thread's slot.
    let rc = unsafe { (f.0.safe_call)(f.as_object_ptr(), args.as_ptr(), 0, &mut result) };
    assert_ne!(rc, 0);
    let e = tether_core::error::take_last_error();
    assert_eq!(e.kind(), "TypeError");
}

static DATA_DROPS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn add_offset(handle: *mut ObjectHeader, args: *const AnyView<'_>, n: i32, result: *mut Any) -> i32 {
    // SAFETY: `handle` is a Function made by `from_raw_parts` below; its data is a leaked i64.
    let offset = unsafe {
        *((*(handle as *const tether_core::arc::ObjectBox<tether_core::function::FunctionObj>)).value.data
            as *const i64)
    };
    // SAFETY: `n` cells.
    let args = unsafe { std::slice::from_raw_parts(args, n as usize) };
    match args.first().and_then(|a| a.as_int()) {
        Some(v) => {
            // SAFETY: the caller's None result cell.
            unsafe { result.write(Any::int(v + offset)) };
            0
        }
        None => {
            tether_core::error::set_last_error(tether_core::Error::type_error("need an int"));
            -1
        }
    }
}

unsafe extern "C" fn drop_offset(data: *mut c_void) {
    DATA_DROPS.fetch_add(1, Ordering::SeqCst);
    // SAFETY: leaked by the test below.
    drop(unsafe { Box::from_raw(data as *mut i64) });
}

#[test]
fn raw_functions_carry_data_and_drop_it_once() {
    let _g = common::serial();
    let data = Box::into_raw(Box::new(100i64)) as *mut c_void;
    // SAFETY: `add_offset` follows the call ABI and reads `data`; `drop_offset` frees it.
    let f = unsafe { Function::from_raw_parts(add_offset, data, Some(drop_offset), "tests.add_offset", 1, FUNC_LEAF) };
    assert_eq!(f.call(&[AnyView::int(1)]).unwrap().view().as_int(), Some(101));
    assert_eq!(f.call(&[AnyView::none()]).unwrap_err().message(), "need an int");
    let drops = DATA_DROPS.load(Ordering::SeqCst);
    let g = f.clone();
    drop(f);
    assert_eq!(DATA_DROPS.load(Ordering::SeqCst), drops);
    drop(g);
    assert_eq!(DATA_DROPS.load(Ordering::SeqCst), drops + 1);
}

#[test]
fn global_registry_registers_gets_lists_and_removes() {
    let _g = common::serial();
    let name = "tests.functions.square";
    register_global(name, Function::from_typed(name, |a: i64| a * a), false).unwrap();
    assert!(list_globals().iter().any(|n| n == name));
    let sorted = list_globals();
    assert!(sorted.windows(2).all(|w| w[0] < w[1]), "listed sorted, no duplicates");
    let f = get_global(name).unwrap();
    assert_eq!(f.call(&[AnyView::int(7)]).unwrap().view().as_int(), Some(49));
    assert_eq!(ObjectArc::header(&f.0).type_index, TypeIndex::FUNCTION);

    let e = register_global(name, Function::from_typed(name, |a: i64| a), false).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("already registered"), "{}", e.message());
    assert_eq!(get_global(name).unwrap().call(&[AnyView::int(3)]).unwrap().view().as_int(), Some(9), "unchanged");
    register_global(name, Function::from_typed(name, |a: i64| a + 1), true).unwrap();
    assert_eq!(get_global(name).unwrap().call(&[AnyView::int(3)]).unwrap().view().as_int(), Some(4), "overridden");

    assert!(remove_global(name));
    assert!(!remove_global(name));
    assert!(get_global(name).is_none());
    assert!(!list_globals().iter().any(|n| n == name));
    assert_eq!(f.call(&[AnyView::int(2)]).unwrap().view().as_int(), Some(4), "a held function outlives removal");
}

#[test]
fn a_function_borrowed_from_its_view_is_called_without_a_reference() {
    let _g = common::serial();
    let f = Function::from_typed("tests.twice", |x: i64| x * 2);
    let held = Any::object(f.0.clone().into());
    let view = held.view();
    let counted = ObjectArc::strong_count(&f.0);
    let borrowed = tether_core::function::FunctionRef::from_view(&view).expect("a Function view");
    assert_eq!(borrowed.call(&[AnyView::int(21)]).unwrap().view().as_int(), Some(42));
    assert_eq!(ObjectArc::strong_count(&f.0), counted, "calling a borrowed Function takes no reference");
    let kept = borrowed.to_owned();
    assert_eq!(ObjectArc::strong_count(&f.0), counted + 1);
    assert_eq!(kept.call(&[AnyView::int(2)]).unwrap().view().as_int(), Some(4));
    drop(kept);
    assert_eq!(ObjectArc::strong_count(&f.0), counted);
    // Anything but a Function is refused, objects included.
    let p = Any::object(Pair::new(Any::none(), Any::none()).into());
    assert!(tether_core::function::FunctionRef::from_view(&p.view()).is_none());
    assert!(tether_core::function::FunctionRef::from_view(&AnyView::int(1)).is_none());
    // `as_ref` borrows an owned Function the same way.
    assert_eq!(f.as_ref().call(&[AnyView::int(5)]).unwrap().view().as_int(), Some(10));
}
