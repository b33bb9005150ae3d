//! Errors: kinds, messages, payloads, the thread-local raised slot, and panics turned into
//! `RustPanic` errors at every extern "C" boundary.

mod common;

use tether_core::error::{catch_panic, ffi_status, set_last_error, take_last_error};
use tether_core::{Any, AnyView, Error, ErrorKind, Function, TypeIndex};

#[test]
fn errors_carry_kind_message_and_payload() {
    let _g = common::serial();
    let e = Error::new("KeyError", "k");
    assert_eq!((e.kind(), e.message()), ("KeyError", "k"));
    assert!(e.payload().is_none());
    let e = Error::with_payload("ValueError", "with payload", Any::int(7));
    assert_eq!(e.payload().view().as_int(), Some(7));
    for (kind, e) in [
        (ErrorKind::TypeError, Error::type_error("m")),
        (ErrorKind::ValueError, Error::value("m")),
        (ErrorKind::IndexError, Error::index("m")),
        (ErrorKind::KeyError, Error::key("m")),
        (ErrorKind::AttributeError, Error::attribute("m")),
        (ErrorKind::RuntimeError, Error::runtime("m")),
    ] {
        assert_eq!(e.kind(), kind.as_str());
        assert_eq!(e.code(), kind, "the kind crosses as its code too");
        assert_eq!(ErrorKind::from_code(kind.code() as i64), kind);
    }
    // A kind of the raiser's own keeps its name and has RuntimeError's code.
    let custom = Error::new("SomethingElse", "m");
    assert_eq!((custom.kind(), custom.code()), ("SomethingElse", ErrorKind::RuntimeError));
    assert_eq!(ErrorKind::from_code(0), ErrorKind::RuntimeError, "an unknown code");
    // Codes are distinct, and `ALL` lists each kind once in code order.
    for (i, k) in ErrorKind::ALL.iter().enumerate() {
        assert_eq!(k.code(), i as i32 + 1);
    }
    // Reworded: the message changes, the kind and code stay.
    let reworded = Error::key("k").reworded("f() argument 1: k");
    assert_eq!(
        (reworded.kind(), reworded.code(), reworded.message()),
        ("KeyError", ErrorKind::KeyError, "f() argument 1: k")
    );
    assert_eq!(format!("{}", Error::value("bad")), "ValueError: bad");
    let obj = Error::value("as an object").into_object();
    assert_eq!(obj.type_index(), TypeIndex::ERROR);
    let back = Error::from_object(obj).unwrap();
    assert_eq!(back.message(), "as an object");
}

#[test]
fn short_kinds_and_messages_stay_valid() {
    // Short strings live inline in the error's cells: they must be read in place.
    let _g = common::serial();
    let e = Error::new("X", "ab");
    let (kind, message) = (e.kind().to_string(), e.message().to_string());
    assert_eq!((kind.as_str(), message.as_str()), ("X", "ab"));
}

#[test]
fn the_raised_slot_is_per_thread_and_taken_once() {
    let _g = common::serial();
    set_last_error(Error::index("first"));
    set_last_error(Error::index("second"));
    std::thread::spawn(|| {
        let e = take_last_error();
        assert_eq!(e.kind(), "RuntimeError", "another thread sees its own empty slot");
        assert!(e.message().contains("without raising"), "{}", e.message());
    })
    .join()
    .unwrap();
    assert_eq!(take_last_error().message(), "second", "a new error replaces the old one");
    assert_eq!(take_last_error().kind(), "RuntimeError", "taken once");
}

#[test]
fn panics_become_rust_panic_errors_with_their_message() {
    let _g = common::serial();
    let r: tether_core::Result<()> = catch_panic(|| panic!("static message"));
    let err = r.as_ref().unwrap_err();
    assert!(err.backtrace().contains("tests/errors.rs"), "the panic's location is kept: {:?}", err.backtrace());
    let e = r.unwrap_err();
    assert_eq!((e.kind(), e.message()), ("RustPanic", "static message"));
    let r: tether_core::Result<()> = catch_panic(|| panic!("formatted {}", 42));
    assert_eq!(r.unwrap_err().message(), "formatted 42");
    let r: tether_core::Result<()> = catch_panic(|| std::panic::panic_any(17u8));
    assert_eq!(r.unwrap_err().message(), "Rust panic with a non-string payload");

    assert_eq!(ffi_status(|| panic!("through ffi")), -1);
    assert_eq!(take_last_error().message(), "through ffi");
    assert_eq!(ffi_status(|| Ok(())), 0);

    let f = Function::from_typed("tests.boom", |s: String| -> i64 { panic!("boom: {s}") });
    let e = f.call(&[AnyView::raw_str("x")]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("RustPanic", "boom: x"));
    assert_eq!(f.call(&[AnyView::raw_str("y")]).unwrap_err().message(), "boom: y", "still callable after a panic");
}

#[test]
fn errors_returned_as_values_are_objects() {
    let _g = common::serial();
    let f = Function::from_typed("tests.make_error", || Error::key("as a value"));
    let v = f.call(&[]).unwrap();
    assert_eq!(v.type_index(), TypeIndex::ERROR);
    let e = Error::from_object(v.into_object().unwrap()).unwrap();
    assert_eq!(e.kind(), "KeyError");
}

/// A frontend's own `safe_call`, registered as a catching frame, whose body panics.
unsafe extern "C" fn panicking_safe_call(
    _handle: *mut tether_core::object::ObjectHeader,
    args: *const AnyView<'_>,
    n: i32,
    result: *mut Any,
) -> i32 {
    let outcome = tether_core::error::catch_panic_registered(|| {
        // SAFETY: the caller passes `n` live cells.
        let args = if n <= 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(args, n as usize) } };
        match args.first().and_then(|a| a.as_int()) {
            Some(v) if v >= 0 => Ok(Any::int(v)),
            _ => panic!("negative argument in a frontend's glue"),
        }
    });
    // SAFETY: the caller's result cell holds None and is ours to fill.
    unsafe { tether_core::function::finish_call(outcome, result) }
}

#[test]
fn a_registered_frontend_safe_call_turns_its_panics_into_rust_panic_errors() {
    let _g = common::serial();
    tether_core::error::register_catching_safe_call(panicking_safe_call);
    tether_core::error::register_catching_safe_call(panicking_safe_call); // idempotent
                                                                          // SAFETY: `panicking_safe_call` follows the call ABI and has no data to free.
    let f = unsafe {
        Function::from_raw_parts(panicking_safe_call, std::ptr::null_mut(), None, "tests.frontend_glue", 1, 0)
    };
    assert_eq!(f.call(&[AnyView::int(3)]).unwrap().view().as_int(), Some(3));
    let e = f.call(&[AnyView::int(-1)]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("RustPanic", "negative argument in a frontend's glue"));
    assert!(e.backtrace().contains("tests/errors.rs"), "the hook recorded where: {:?}", e.backtrace());
    assert_eq!(f.call(&[AnyView::int(4)]).unwrap().view().as_int(), Some(4), "still callable after a panic");
}
