//! `Any` / `AnyView`: 16-byte cells, inline small strings and bytes with zeroed unused bytes,
//! bytewise equality, and the shared conversion rules (convert.rs).

mod common;

use std::mem::{align_of, size_of};

use tether_core::alloc::live_objects;
use tether_core::convert::{FromArg, IntoRet};
use tether_core::testing::Pair;
use tether_core::{Any, AnyView, ObjectArc, ObjectRef, TypeIndex};

/// The 16 raw bytes of a cell that holds no object.
fn bytes_of(v: &Any) -> [u8; 16] {
    assert!(v.type_index() < TypeIndex::OBJECT);
    let (t, len, payload) = v.clone().into_raw_parts();
    let mut out = [0u8; 16];
    out[..4].copy_from_slice(&t.to_le_bytes());
    out[4..8].copy_from_slice(&len.to_le_bytes());
    out[8..].copy_from_slice(&payload.to_le_bytes());
    out
}

#[test]
fn cells_are_16_bytes() {
    assert_eq!(size_of::<Any>(), 16);
    assert_eq!(align_of::<Any>(), 8);
    assert_eq!(size_of::<AnyView<'static>>(), 16);
    assert_eq!(size_of::<Option<Any>>(), 24, "Any has no niche; Option<Any> is not part of the ABI");
}

#[test]
fn small_strings_and_bytes_are_inline_with_zeroed_tails() {
    let _g = common::serial();
    let base = live_objects();
    for s in ["", "a", "hello", "seven77"] {
        let v = Any::str(s);
        assert_eq!(v.type_index(), TypeIndex::SMALL_STR, "{s:?}");
        assert_eq!(v.as_str(), Some(s));
        assert_eq!(v.view().as_str(), Some(s));
        let raw = bytes_of(&v);
        assert_eq!(&raw[8..8 + s.len()], s.as_bytes());
        assert!(raw[8 + s.len()..].iter().all(|&b| b == 0), "unused payload bytes are zero for {s:?}");
        assert_eq!(u32::from_le_bytes(raw[4..8].try_into().unwrap()), s.len() as u32);
    }
    let b = Any::bytes(&[1, 0, 2]);
    assert_eq!(b.type_index(), TypeIndex::SMALL_BYTES);
    assert_eq!(b.view().as_bytes(), Some(&[1u8, 0, 2][..]));
    assert!(bytes_of(&b)[11..].iter().all(|&x| x == 0));
    assert_eq!(live_objects(), base, "inline values allocate nothing");
}

#[test]
fn long_strings_and_bytes_become_objects() {
    let _g = common::serial();
    let base = live_objects();
    let s = Any::str("eight888");
    assert_eq!(s.type_index(), TypeIndex::STR);
    assert_eq!(s.as_str(), Some("eight888"));
    let b = Any::bytes(b"12345678");
    assert_eq!(b.type_index(), TypeIndex::BYTES);
    assert_eq!(b.view().as_bytes(), Some(&b"12345678"[..]));
    assert_eq!(live_objects(), base + 2);
    drop((s, b));
    assert_eq!(live_objects(), base);
}

#[test]
fn plain_values_have_zeroed_unused_bytes() {
    assert_eq!(bytes_of(&Any::none()), [0; 16]);
    assert_eq!(&bytes_of(&Any::int(7))[4..8], &[0, 0, 0, 0]);
    assert_eq!(&bytes_of(&Any::bool(true))[8..], &[1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&bytes_of(&Any::float(1.5))[4..8], &[0, 0, 0, 0]);
}

#[test]
fn equality_is_bytewise_and_objects_compare_by_identity() {
    let _g = common::serial();
    assert_eq!(Any::int(3), Any::int(3));
    assert_ne!(Any::int(3), Any::int(4));
    assert_ne!(Any::int(1), Any::bool(true), "same payload, different kind");
    assert_eq!(Any::str("abc"), Any::str("abc"));
    assert_ne!(Any::str("abc"), Any::bytes(b"abc"));
    assert_eq!(Any::float(0.5), Any::float(0.5));
    let p = Pair::new(Any::int(1), Any::int(2));
    let a = Any::object(p.clone().into());
    let b = Any::object(p.into());
    assert_eq!(a, b, "two references to one object");
    let q = Any::object(Pair::new(Any::int(1), Any::int(2)).into());
    assert_ne!(a, q, "equal contents, different objects");
    assert_ne!(Any::str("long string object"), Any::str("long string object"), "long strings are objects: identity");
}

#[test]
fn views_borrow_and_to_owned_any_copies() {
    let _g = common::serial();
    let text = String::from("a borrowed string view");
    let v = AnyView::raw_str(&text);
    assert_eq!(v.type_index(), TypeIndex::RAW_STR);
    assert_eq!(v.as_str(), Some(text.as_str()));
    let owned = v.to_owned_any();
    drop(text);
    assert_eq!(owned.type_index(), TypeIndex::STR);
    assert_eq!(owned.as_str(), Some("a borrowed string view"));
    let short = AnyView::raw_str("hi").to_owned_any();
    assert_eq!(short.type_index(), TypeIndex::SMALL_STR, "short views copy inline");
    let rb = AnyView::raw_bytes(b"xy").to_owned_any();
    assert_eq!(rb.view().as_bytes(), Some(&b"xy"[..]));
}

#[test]
fn owned_objects_count_references() {
    let _g = common::serial();
    let base = live_objects();
    let p = Pair::new(Any::none(), Any::none());
    let any = Any::object(p.clone().into());
    assert_eq!(ObjectArc::strong_count(&p), 2);
    let copy = any.clone();
    assert_eq!(ObjectArc::strong_count(&p), 3);
    let view = any.view();
    let from_view = view.to_owned_any();
    assert_eq!(ObjectArc::strong_count(&p), 4, "to_owned_any takes a reference");
    let obj = from_view.into_object().unwrap();
    assert_eq!(ObjectArc::strong_count(&p), 4, "into_object moves it");
    drop((obj, copy, any));
    assert_eq!(ObjectArc::strong_count(&p), 1);
    drop(p);
    assert_eq!(live_objects(), base);
}

fn round_trip<T: IntoRet + FromArg>(v: T) -> T {
    let cell = v.into_ret().unwrap();
    T::from_arg(&cell.view()).expect("converts back")
}

#[test]
fn conversions_round_trip() {
    let _g = common::serial();
    assert_eq!(round_trip(-5i64), -5);
    assert_eq!(round_trip(i64::MAX), i64::MAX);
    assert_eq!(round_trip(2.25f64), 2.25);
    assert!(round_trip(true));
    assert_eq!(round_trip(String::from("short")), "short");
    assert_eq!(round_trip(String::from("a longer string than seven")), "a longer string than seven");
    assert_eq!(round_trip(vec![1u8, 2, 3]), vec![1, 2, 3]);
    assert_eq!(round_trip(vec![9u8; 20]), vec![9; 20]);
    assert_eq!(round_trip(Some(4i64)), Some(4));
    assert_eq!(round_trip(None::<i64>), None);
    assert!(().into_ret().unwrap().is_none());

    let p = Pair::new(Any::int(1), Any::none());
    let back = round_trip(p.clone());
    assert!(ObjectArc::ptr_eq(&back, &p), "objects convert by identity");
    let maybe = round_trip(Some(p.clone()));
    assert!(ObjectArc::ptr_eq(&maybe.unwrap(), &p));
    let as_ref = round_trip(ObjectRef::from(p.clone()));
    assert!(as_ref.ptr_eq(&ObjectRef::from(p)));
}

#[test]
fn conversions_refuse_the_wrong_kind() {
    let _g = common::serial();
    assert_eq!(i64::from_arg(&AnyView::float(1.0)), None, "no silent float -> int");
    assert_eq!(f64::from_arg(&AnyView::int(2)), Some(2.0), "int widens to float");
    assert_eq!(bool::from_arg(&AnyView::int(1)), None);
    assert_eq!(String::from_arg(&AnyView::int(1)), None);
    assert_eq!(i32::from_arg(&AnyView::int(i64::MAX)), None, "range-checked");
    assert_eq!(u32::from_arg(&AnyView::int(-1)), None);
    assert_eq!(Option::<i64>::from_arg(&AnyView::raw_str("x")), None);
    let s = Any::str("not a pair at all");
    assert!(ObjectArc::<Pair>::from_arg(&s.view()).is_none(), "wrong object type");
    assert_eq!(Option::<i64>::expected(), "int or None");
    assert_eq!(ObjectArc::<Pair>::expected(), "testing.Pair");
    assert!(u64::MAX.into_ret().is_err(), "u64 beyond i64 is a ValueError, not a wrap");
}
