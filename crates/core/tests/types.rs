//! The type registry: reflection (fields, methods, constructor, docs) and idempotent
//! registration by key.

mod common;

use std::sync::Mutex;

use tether_core::testing::Pair;
use tether_core::types::{self, find_field, find_method, get_field, set_field, type_index_of, type_info};
use tether_core::{declare_object, AnyView, Object, ObjectArc, ObjectRef, TypeBuilder, TypeIndex};

struct Point {
    x: Mutex<i64>,
    y: i64,
}
declare_object!(Point, "tests.types.Point");

struct Point3 {
    base: Point,
    z: i64,
}
declare_object!(Point3, "tests.types.Point3", parent = Point);

fn point(x: i64, y: i64) -> ObjectArc<Point> {
    ObjectArc::new(Point { x: Mutex::new(x), y })
}

fn register_point() -> i32 {
    TypeBuilder::<Point>::new()
        .doc("A point.")
        .field_rw(
            "x",
            |p: &Point| *p.x.lock().unwrap(),
            |p: &Point, v: i64| {
                *p.x.lock().unwrap() = v;
                Ok(())
            },
        )
        .field_doc("The x coordinate.")
        .field("y", |p: &Point| p.y)
        .method("norm1", |p: ObjectArc<Point>| *p.x.lock().unwrap() + p.y)
        .method_doc("|x| + |y| for non-negative points.")
        .static_method("origin", || point(0, 0))
        .constructor(point)
        .register()
}

#[test]
fn builtin_types_have_fixed_indices() {
    let _g = common::serial();
    for (index, key) in [
        (TypeIndex::OBJECT, "tether.Object"),
        (TypeIndex::STR, "tether.Str"),
        (TypeIndex::BYTES, "tether.Bytes"),
        (TypeIndex::ERROR, "tether.Error"),
        (TypeIndex::FUNCTION, "tether.Function"),
        (TypeIndex::ARRAY, "tether.Array"),
        (TypeIndex::MAP, "tether.Map"),
        (TypeIndex::MODULE, "tether.Module"),
        (TypeIndex::OPAQUE, "tether.Opaque"),
    ] {
        assert_eq!(type_index_of(key), Some(index), "{key}");
        assert_eq!(type_info(index).unwrap().key(), key);
    }
    let root = type_info(TypeIndex::OBJECT).unwrap();
    assert_eq!((root.depth, root.parent), (0, -1));
    assert_eq!(type_info(TypeIndex::STR).unwrap().ancestors(), &[TypeIndex::OBJECT]);
}

#[test]
fn reflection_lists_fields_methods_constructor_and_docs() {
    let _g = common::serial();
    let index = register_point();
    let info = type_info(index).unwrap();
    assert_eq!((info.key(), info.doc(), info.index), ("tests.types.Point", "A point.", index));
    assert_eq!(info.fields().iter().map(|f| f.name()).collect::<Vec<_>>(), ["x", "y"]);
    let x = info.field("x").unwrap();
    assert_eq!((x.doc(), x.type_hint()), ("The x coordinate.", "int"));
    assert!(x.setter().is_some());
    assert!(info.field("y").unwrap().setter().is_none(), "read-only field");
    let norm = info.method("norm1").unwrap();
    assert_eq!((norm.name(), norm.doc(), norm.is_static), ("norm1", "|x| + |y| for non-negative points.", 0));
    assert_eq!(info.method("origin").unwrap().is_static, 1);

    let ctor = info.constructor().expect("a constructor");
    let p = ctor.call(&[AnyView::int(3), AnyView::int(4)]).unwrap().into_object().unwrap();
    assert_eq!(p.type_index(), index);
    assert_eq!(get_field(&p, "x").unwrap().view().as_int(), Some(3));
    set_field(&p, "x", AnyView::int(10)).unwrap();
    assert_eq!(get_field(&p, "x").unwrap().view().as_int(), Some(10));
    assert_eq!(norm.func().call(&[AnyView::object(&p)]).unwrap().view().as_int(), Some(14));
    let origin = info.method("origin").unwrap().func().call(&[]).unwrap().into_object().unwrap();
    assert_eq!(get_field(&origin, "y").unwrap().view().as_int(), Some(0));

    let e = set_field(&p, "y", AnyView::int(1)).unwrap_err();
    assert_eq!(e.kind(), "AttributeError");
    assert!(e.message().contains("read-only"), "{}", e.message());
    let e = get_field(&p, "nope").unwrap_err();
    assert_eq!((e.kind(), e.message()), ("AttributeError", "tests.types.Point has no field \"nope\""));
    let e = set_field(&p, "x", AnyView::raw_str("ten")).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert!(e.message().contains("must be int, not str"), "{}", e.message());
    let e = x.getter().call(&[AnyView::int(1)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError", "a getter checks its self argument");
}

#[test]
fn registration_is_idempotent_by_key() {
    let _g = common::serial();
    let first = register_point();
    let again = TypeBuilder::<Point>::new().doc("A different doc").register();
    assert_eq!(first, again);
    assert_eq!(type_info(first).unwrap().doc(), "A point.", "the first registration wins");
    assert_eq!(types::register_type_key("tests.types.Point", TypeIndex::OBJECT).unwrap(), first);
    assert_eq!(type_index_of("tests.types.Point"), Some(Point::type_index()));
    let count = types::list_types().iter().filter(|(_, k)| *k == "tests.types.Point").count();
    assert_eq!(count, 1, "one entry per key");
    let e = types::register_type_key("tests.types.Orphan", 60_000).unwrap_err();
    assert_eq!(e.kind(), "ValueError", "an unregistered parent is refused");
}

#[test]
fn fields_and_methods_are_inherited() {
    let _g = common::serial();
    register_point();
    TypeBuilder::<Point3>::new().field("z", |p: &Point3| p.z).register();
    let info = type_info(Point3::type_index()).unwrap();
    assert_eq!(info.parent, Point::type_index());
    assert_eq!(info.ancestors(), &[TypeIndex::OBJECT, Point::type_index()]);
    assert!(find_field(info, "z").is_some());
    assert!(find_field(info, "x").is_some(), "the parent's field");
    assert!(find_method(info, "norm1").is_some(), "the parent's method");
    assert!(find_field(info, "w").is_none());
    let p: ObjectRef = ObjectArc::new(Point3 { base: Point { x: Mutex::new(1), y: 2 }, z: 3 }).into();
    assert_eq!(get_field(&p, "z").unwrap().view().as_int(), Some(3));
    assert!(p.downcast_ref::<Point3>().is_some_and(|p| p.base.y == 2));
}

#[test]
fn testing_pair_reflection_is_registered_at_init() {
    let _g = common::serial();
    let info = type_info(Pair::type_index()).unwrap();
    assert_eq!(info.key(), "testing.Pair");
    assert!(info.field("first").unwrap().setter().is_some());
    assert!(info.field("second").unwrap().setter().is_some());
    assert!(info.method("swap").is_some());
    assert!(info.constructor().is_some());
    assert!(types::list_types().contains(&(Pair::type_index(), "testing.Pair")));
}

/// A type with a cell field, and a subtype that inherits it.
struct Holder {
    value: tether_core::cell::AnyCell,
    tag: i64,
}
declare_object!(Holder, "tests.types.Holder");

struct SubHolder {
    base: Holder,
}
declare_object!(SubHolder, "tests.types.SubHolder", parent = Holder);

fn register_holder() {
    let b = TypeBuilder::<Holder>::new();
    tether_core::cell_field_rw!(b, Holder, value, "value").register();
    TypeBuilder::<SubHolder>::new().register();
}

fn holder(value: tether_core::Any) -> ObjectArc<Holder> {
    ObjectArc::new(Holder { value: tether_core::cell::AnyCell::new(value), tag: 7 })
}

#[test]
fn cell_fields_read_and_write_through_reflection() {
    let _g = common::serial();
    register_holder();
    let h: ObjectRef = holder(tether_core::Any::int(5)).into();
    assert_eq!(get_field(&h, "value").unwrap().view().as_int(), Some(5));
    set_field(&h, "value", AnyView::int(9)).unwrap();
    assert_eq!(get_field(&h, "value").unwrap().view().as_int(), Some(9));
    assert_eq!(h.downcast_ref::<Holder>().unwrap().tag, 7, "the write hit the cell, not a neighbour");
    // A subtype instance has the cell at the same place in its base.
    let sub: ObjectRef = ObjectArc::new(SubHolder {
        base: Holder { value: tether_core::cell::AnyCell::new(tether_core::Any::str("s")), tag: 1 },
    })
    .into();
    assert_eq!(get_field(&sub, "value").unwrap().view().as_str(), Some("s"));
    assert!(sub.downcast_ref::<SubHolder>().is_some_and(|s| s.base.tag == 1));
}

#[test]
fn cell_field_accessors_check_arity_and_self() {
    let _g = common::serial();
    register_holder();
    let field = find_field(type_info(Holder::type_index()).unwrap(), "value").unwrap();
    let getter = field.getter();
    let wrong = Pair::new(tether_core::Any::none(), tether_core::Any::none());
    let wrong: ObjectRef = wrong.into();
    let err = getter.call(&[AnyView::object(&wrong)]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    assert!(
        err.message().contains("tests.types.Holder.value() argument 'self' must be tests.types.Holder"),
        "{}",
        err.message()
    );
    let err = getter.call(&[]).unwrap_err();
    assert!(err.message().contains("tests.types.Holder.value()"), "{}", err.message());
    let setter = field.setter().unwrap();
    let h: ObjectRef = holder(tether_core::Any::none()).into();
    assert_eq!(setter.call(&[AnyView::object(&h)]).unwrap_err().kind(), "TypeError");
}

#[test]
fn direct_cell_names_the_getters_cell_without_touching_counts() {
    let _g = common::serial();
    register_holder();
    let inner = Pair::new(tether_core::Any::none(), tether_core::Any::none());
    let inner_ref: ObjectRef = inner.clone().into();
    let h = holder(tether_core::Any::object(inner_ref.clone()));
    let h_ptr = ObjectArc::as_ptr(&h);
    let getter = find_field(type_info(Holder::type_index()).unwrap(), "value").unwrap().getter;
    // SAFETY: live getter and object.
    let cell = unsafe { tether_core::cell::direct_cell(getter, h_ptr) }.expect("a cell field's getter");
    assert!(std::ptr::eq(cell, &h.value));
    let before = ObjectArc::strong_count(&inner);
    let seen = cell.with_view(|v| v.as_object_ptr());
    assert_eq!(seen, Some(inner_ref.as_ptr()));
    assert_eq!(ObjectArc::strong_count(&inner), before, "a view under the held cell adds no reference");
    // Another type's cell getter, a closure getter, and an object of another type: no cell.
    let no_cell = |getter, obj| {
        // SAFETY: every getter and object passed below is live.
        unsafe { tether_core::cell::direct_cell(getter, obj) }.is_none()
    };
    let pair_getter = find_field(type_info(Pair::type_index()).unwrap(), "first").unwrap().getter;
    assert!(no_cell(pair_getter, h_ptr));
    assert!(no_cell(getter, inner_ref.as_ptr()));
    register_point();
    let p = point(1, 2);
    let closure_getter = find_field(type_info(Point::type_index()).unwrap(), "y").unwrap().getter;
    assert!(no_cell(closure_getter, ObjectArc::as_ptr(&p)));
    // The flag alone is not enough: the data must be this core copy's (a plugin's getter
    // carries its own copy's mark).
    use tether_core::function::{Function, FUNC_CELL_GETTER};
    let field = find_field(type_info(Holder::type_index()).unwrap(), "value").unwrap();
    assert_ne!(field.getter().flags() & FUNC_CELL_GETTER, 0);
    assert_eq!(field.setter().unwrap().flags() & FUNC_CELL_GETTER, 0);
    unsafe extern "C" fn never_called(
        _: *mut tether_core::ObjectHeader,
        _: *const AnyView<'_>,
        _: i32,
        _: *mut tether_core::Any,
    ) -> i32 {
        -1
    }
    unsafe extern "C" fn drop_words(data: *mut std::ffi::c_void) {
        // SAFETY: made from this Box below.
        drop(unsafe { Box::from_raw(data as *mut [usize; 4]) });
    }
    let foreign_data = Box::into_raw(Box::new([0x1234usize, 0, 0, 0])) as *mut std::ffi::c_void;
    // SAFETY: `never_called` follows the call ABI; `drop_words` frees the data.
    let foreign = unsafe {
        Function::from_raw_parts(never_called, foreign_data, Some(drop_words), "foreign.get", 1, FUNC_CELL_GETTER)
    };
    assert!(no_cell(tether_core::ObjectArc::as_ptr(&foreign.0), h_ptr));
}

#[test]
fn a_second_registration_with_another_api_is_refused() {
    let _g = common::serial();
    struct Api;
    tether_core::declare_object!(Api, "tests.types.Api");
    let first = || TypeBuilder::<Api>::new().method("scale", |_a: ObjectArc<Api>, by: i64| by).params(&["by"]);
    let index = first().try_register().unwrap();
    assert_eq!(first().try_register().unwrap(), index, "the same API again is fine");
    let other = TypeBuilder::<Api>::new().method("scale", |_a: ObjectArc<Api>, by: String| by).params(&["by"]);
    let e = other.try_register().unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert_eq!(
        e.message(),
        "type key \"tests.types.Api\" is registered by the host process with scale(by: int) -> int, but the host \
         process registers it with scale(by: str) -> str: one key names one API (rename one of the types, or load \
         only one of the plugins that define it)"
    );
    let renamed = TypeBuilder::<Api>::new().method("grow", |_a: ObjectArc<Api>, by: i64| by).params(&["by"]);
    assert!(renamed.try_register().unwrap_err().message().contains("grow(by: int) -> int"));
}
