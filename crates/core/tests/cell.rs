//! `AnyCell`: one word per settable field; every value comes back exactly as stored, whether
//! it lives in the word or in the cell's box, and nothing the cell owned outlives it.

mod common;

use tether_core::alloc::live_objects;
use tether_core::cell::AnyCell;
use tether_core::testing::Pair;
use tether_core::{Any, ObjectRef, TypeIndex};

/// Values of every kind an owned `Any` holds, with those at the edges of the word's forms:
/// ints at and past 61 bits, floats with and without their low three bits, inline strings.
fn samples() -> Vec<Any> {
    let mut values = vec![
        Any::none(),
        Any::bool(false),
        Any::bool(true),
        Any::int(0),
        Any::int(-1),
        Any::int(7),
        Any::int((1 << 60) - 1),
        Any::int(-(1 << 60)),
        Any::int(1 << 60),
        Any::int(-(1 << 60) - 1),
        Any::int(i64::MAX),
        Any::int(i64::MIN),
        Any::float(0.0),
        Any::float(-0.0),
        Any::float(1.5),
        Any::float(0.1),
        Any::float(f64::MIN_POSITIVE),
        Any::float(f64::from_bits(1)),
        Any::float(f64::INFINITY),
        Any::float(f64::NAN),
        Any::float(f64::from_bits(0x7ff8_0000_0000_0007)),
        Any::str(""),
        Any::str("seven!!"),
        Any::str("a string longer than seven bytes"),
        Any::bytes(b"\x00\x01"),
        // SAFETY: an opaque pointer is a plain address the cell never dereferences.
        unsafe { Any::from_raw_parts(TypeIndex::OPAQUE_PTR, 0, 0x1234_5678) },
    ];
    values.push(Any::object(Pair::new(Any::int(1), Any::none()).into()));
    values
}

#[test]
fn a_cell_is_one_word() {
    assert_eq!(std::mem::size_of::<AnyCell>(), 8);
    assert_eq!(std::mem::size_of::<Pair>(), 16, "a two-field object's body is two words");
}

#[test]
fn every_value_comes_back_as_stored_by_get_view_replace_and_into_inner() {
    let _g = common::serial();
    let base = live_objects();
    for value in samples() {
        let cell = AnyCell::new(value.clone());
        let got = cell.get();
        assert_eq!(got, value, "get() of {value:?}");
        cell.with_view(|v| {
            assert_eq!(v.type_index(), value.type_index(), "the view's kind of {value:?}");
            assert_eq!(v.to_owned_any(), value, "the view of {value:?}");
        });
        // Stored again over itself and over a boxed value, then taken out.
        assert_eq!(cell.replace(Any::float(0.1)), value, "replace() returns {value:?}");
        assert_eq!(cell.replace(value.clone()), Any::float(0.1));
        assert_eq!(cell.into_inner(), value, "into_inner() of {value:?}");
        if let Some(f) = value.view().as_float() {
            assert_eq!(got.view().as_float().unwrap().to_bits(), f.to_bits(), "a float's every bit");
        }
    }
    assert_eq!(live_objects(), base, "every object the cells owned is freed (Miri checks the boxes)");
}

#[test]
fn a_stored_object_is_held_once_and_released_with_the_cell() {
    let _g = common::serial();
    let base = live_objects();
    let pair: ObjectRef = Pair::new(Any::none(), Any::none()).into();
    let cell = AnyCell::new(Any::object(pair.clone()));
    assert_eq!(pair.header().strong_count(), 2, "ours and the cell's");
    cell.with_view(|v| assert_eq!(v.as_object_ptr(), Some(pair.as_ptr()), "the same object"));
    assert_eq!(pair.header().strong_count(), 2, "a view takes no reference");
    let free_view = cell.with_view_if_free(|v| v.as_object_ptr());
    assert_eq!(free_view, Some(Some(pair.as_ptr())), "a free cell's view, at once");
    let while_held = cell.with_view(|_| cell.with_view_if_free(|_| panic!("ran while the cell was held")));
    assert_eq!(while_held, None, "a held cell: nothing run, no wait");
    assert_eq!(cell.with_view_if_free(|_| 7), Some(7), "released after");
    let copy = cell.get();
    assert_eq!(pair.header().strong_count(), 3, "a copy takes one");
    drop(copy);
    cell.set(Any::int(3));
    assert_eq!(pair.header().strong_count(), 1, "replaced: the cell's reference is gone");
    cell.set(Any::object(pair.clone()));
    drop(cell);
    assert_eq!(pair.header().strong_count(), 1, "dropped with the cell");
    drop(pair);
    assert_eq!(live_objects(), base);
}
