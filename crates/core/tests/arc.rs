//! `ObjectArc<T>`, `WeakObjectArc<T>`, `ObjectRef`: size, uniqueness, checked casts through a
//! three-level hierarchy, and inline trailing items.

mod common;

use std::mem::size_of;
use std::sync::atomic::{AtomicUsize, Ordering};

use tether_core::arc::ExtraItems;
use tether_core::{declare_object, types, Object, ObjectArc, ObjectRef, TypeIndex, WeakObjectArc};

struct Shape {
    sides: u32,
}
declare_object!(Shape, "tests.arc.Shape");

struct Polygon {
    #[allow(dead_code)]
    sides: u32,
}
declare_object!(Polygon, "tests.arc.Polygon", parent = Shape);

struct Square {
    #[allow(dead_code)]
    side: f64,
}
declare_object!(Square, "tests.arc.Square", parent = Polygon);

struct Unrelated;
declare_object!(Unrelated, "tests.arc.Unrelated");

#[test]
fn arcs_are_one_pointer_and_option_is_free() {
    assert_eq!(size_of::<ObjectArc<Shape>>(), size_of::<usize>());
    assert_eq!(size_of::<Option<ObjectArc<Shape>>>(), size_of::<usize>());
    assert_eq!(size_of::<WeakObjectArc<Shape>>(), size_of::<usize>());
    assert_eq!(size_of::<ObjectRef>(), size_of::<usize>());
    assert_eq!(size_of::<Option<ObjectRef>>(), size_of::<usize>());
}

#[test]
fn arcs_are_send_and_sync_for_send_sync_values() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ObjectArc<Shape>>();
    send_sync::<WeakObjectArc<Shape>>();
    send_sync::<ObjectRef>();
    // (A `T: !Sync` makes `ObjectArc<T>` neither Send nor Sync: the impls are bounded on
    // `T: Send + Sync`, the same rule as `std::sync::Arc`.)
}

#[test]
fn get_mut_only_when_unique() {
    let _g = common::serial();
    let mut a = ObjectArc::new(Shape { sides: 3 });
    ObjectArc::get_mut(&mut a).expect("unique").sides = 4;
    assert_eq!(a.sides, 4);
    let b = a.clone();
    assert!(ObjectArc::get_mut(&mut a).is_none(), "a second strong ref forbids mutation");
    drop(b);
    let w = ObjectArc::downgrade(&a);
    assert!(ObjectArc::get_mut(&mut a).is_none(), "a weak ref forbids mutation (it could upgrade)");
    drop(w);
    assert!(ObjectArc::get_mut(&mut a).is_some());
}

#[test]
fn hierarchy_records_depth_parent_and_ancestors() {
    let _g = common::serial();
    let (shape, polygon, square) = (Shape::type_index(), Polygon::type_index(), Square::type_index());
    assert!(shape >= TypeIndex::FIRST_USER && polygon >= TypeIndex::FIRST_USER && square >= TypeIndex::FIRST_USER);
    let info = types::type_info(square).unwrap();
    assert_eq!(info.key(), "tests.arc.Square");
    assert_eq!(info.depth, 3);
    assert_eq!(info.parent, polygon);
    assert_eq!(info.ancestors(), &[TypeIndex::OBJECT, shape, polygon]);
    assert_eq!(Square::type_depth(), 3);
    assert_eq!(Shape::type_depth(), 1);
    assert!(types::is_instance(square, shape));
    assert!(types::is_instance(square, TypeIndex::OBJECT));
    assert!(!types::is_instance(shape, square), "a parent is not an instance of its child");
}

#[test]
fn try_cast_accepts_the_type_and_its_subtypes_only() {
    let _g = common::serial();
    let sq: ObjectRef = ObjectArc::new(Square { side: 2.0 }).into();
    assert!(sq.is::<Square>() && sq.is::<Polygon>() && sq.is::<Shape>());
    assert!(!sq.is::<Unrelated>());
    assert!(sq.downcast_ref::<Square>().is_some());
    assert!(sq.downcast_ref::<Unrelated>().is_none());
    let back = sq.clone().try_cast::<Square>().expect("its own type");
    assert_eq!(back.side, 2.0);
    assert!(sq.clone().try_cast::<Polygon>().is_ok(), "upcast to the parent");
    assert!(sq.clone().try_cast::<Shape>().is_ok(), "upcast to the grandparent");
    let refused = sq.clone().try_cast::<Unrelated>().expect_err("unrelated type");
    assert!(refused.ptr_eq(&sq), "a failed cast hands the reference back");

    let shape: ObjectRef = ObjectArc::new(Shape { sides: 5 }).into();
    assert!(shape.clone().try_cast::<Square>().is_err(), "no downcast from a parent instance");
    assert!(shape.clone().try_cast::<Polygon>().is_err());
}

// ---- inline trailing items --------------------------------------------------------------

static ITEM_DROPS: AtomicUsize = AtomicUsize::new(0);

struct Item(u64);
impl Drop for Item {
    fn drop(&mut self) {
        ITEM_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

struct Bag {
    count: usize,
}
declare_object!(Bag, "tests.arc.Bag");

// SAFETY: `item_count` reads the plain `count` field.
unsafe impl ExtraItems for Bag {
    type Item = Item;
    unsafe fn item_count(this: *const Self) -> usize {
        // SAFETY: a plain field, readable after drop (trait contract).
        unsafe { (*this).count }
    }
}

#[test]
fn extra_items_are_stored_inline_and_dropped_once() {
    let _g = common::serial();
    let base = tether_core::alloc::live_objects();
    let drops = ITEM_DROPS.load(Ordering::SeqCst);
    let bag = ObjectArc::new_with_extra_items(Bag { count: 5 }, (10u32..15).map(|i| Item(u64::from(i))));
    assert_eq!(bag.extra_items().iter().map(|i| i.0).collect::<Vec<_>>(), vec![10, 11, 12, 13, 14]);
    assert_eq!(tether_core::alloc::live_objects(), base + 1, "one allocation for value and items");
    let w = ObjectArc::downgrade(&bag);
    drop(bag);
    assert_eq!(ITEM_DROPS.load(Ordering::SeqCst), drops + 5, "items dropped with the value");
    assert!(w.upgrade().is_none());
    drop(w);
    assert_eq!(ITEM_DROPS.load(Ordering::SeqCst), drops + 5);
    assert_eq!(tether_core::alloc::live_objects(), base);
}
