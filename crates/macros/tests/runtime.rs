//! What the macros register, read back from the registry in this process: names, docs,
//! parameter names and defaults, receivers, fields with setters, constructors, several methods
//! blocks, a subtype, author error types, and the module check on unregistered types.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use tether::signature::{render_signature, Language};
use tether::types::{get_field, set_field, type_info};
use tether::{Any, AnyView, Error, Function, Object, ObjectArc, ObjectRef, TetherType};

/// A shape.
///
/// With a second paragraph.
#[tether::object("mtest.Shape")]
pub struct Shape {
    /// The shape's label.
    #[tether(field)]
    label: String,
    sides: AtomicI64,
    note: Mutex<String>,
}

/// An author's own error type, mapped to a kind by its `From` impl.
#[derive(Debug)]
pub struct TooMany(i64);

impl From<TooMany> for Error {
    fn from(e: TooMany) -> Error {
        Error::value(format!("{} sides is too many", e.0))
    }
}

#[tether::methods]
impl Shape {
    /// A shape with `sides` sides.
    #[tether(constructor)]
    fn new(label: &str, #[tether(default = 3)] sides: i64) -> Self {
        Shape { label: label.to_string(), sides: AtomicI64::new(sides), note: Mutex::new(String::new()) }
    }

    /// A square.
    #[tether(constructor, name = "square")]
    fn square(label: String) -> ObjectArc<Self> {
        ObjectArc::new(Shape::new(&label, 4))
    }

    /// The number of sides.
    #[tether(getter)]
    fn sides(&self) -> i64 {
        self.sides.load(Ordering::Relaxed)
    }

    #[tether(setter)]
    fn set_sides(&self, sides: i64) -> Result<(), TooMany> {
        if sides > 100 {
            return Err(TooMany(sides));
        }
        self.sides.store(sides, Ordering::Relaxed);
        Ok(())
    }

    /// Grow by `by` sides, at most `limit`.
    fn grow(
        &self,
        #[tether(default = 1)] by: i64,
        #[tether(default = None)] limit: Option<i64>,
    ) -> Result<i64, TooMany> {
        let n = self.sides.load(Ordering::Relaxed) + by;
        if limit.is_some_and(|l| n > l) {
            return Err(TooMany(n));
        }
        self.sides.store(n, Ordering::Relaxed);
        Ok(n)
    }

    /// The same object, given as an ObjectArc receiver.
    #[tether(name = "itself")]
    fn this(this: &ObjectArc<Self>) -> ObjectArc<Shape> {
        this.clone()
    }

    /// A static method: how many sides a `kind` has.
    fn sides_of(kind: &str, #[tether(default = "exact")] mode: String, #[tether(default = false)] strict: bool) -> i64 {
        match (kind, mode.as_str(), strict) {
            ("triangle", _, _) => 3,
            (_, "exact", true) => -1,
            _ => 0,
        }
    }

    #[tether(skip)]
    fn helper(&self) -> usize {
        7
    }
}

#[tether::methods(block = 1)]
impl Shape {
    /// Set a note; the second block of the type.
    fn annotate(&self, note: &str, #[tether(default = 1.5)] weight: f64) -> String {
        *self.note.lock().unwrap() = format!("{note}*{weight}");
        self.note.lock().unwrap().clone()
    }

    /// Every shape of `others` with more sides.
    fn more_sides(&self, others: Vec<ObjectArc<Shape>>) -> Vec<ObjectArc<Shape>> {
        others.into_iter().filter(|o| o.sides() > self.sides()).collect()
    }
}

/// A circle: a shape of one side.
#[tether::object("mtest.Circle", parent = Shape, weakref)]
pub struct Circle {
    #[tether(field)]
    radius: f64,
}

#[tether::methods]
impl Circle {
    #[tether(constructor)]
    fn new(radius: f64) -> Result<Self, Error> {
        if radius < 0.0 {
            return Err(Error::value("a negative radius"));
        }
        Ok(Circle { radius })
    }
}

/// Not listed in any module: the check names it.
#[tether::object("mtest.Unlisted")]
pub struct Unlisted {}

/// Add two numbers.
#[tether::function("mtest.add")]
pub fn add(a: i64, #[tether(default = 10)] b: i64) -> i64 {
    a + b
}

#[tether::function("mtest.make_unlisted")]
fn make_unlisted() -> ObjectArc<Unlisted> {
    ObjectArc::new(Unlisted {})
}

/// Calls `f` on this thread: nonblocking.
#[tether::function("mtest.apply")]
#[tether(nonblocking)]
fn apply(f: Function) -> tether::Result<Any> {
    f.call(&[])
}

#[tether::function("mtest.twice")]
#[tether(leaf)]
fn twice(x: i64) -> i64 {
    2 * x
}

#[tether::object("mtest.Button")]
pub struct Button {}

#[tether::methods]
impl Button {
    #[tether(constructor, leaf)]
    fn new() -> Self {
        Button {}
    }

    /// Runs the handler now, on the calling thread.
    #[tether(nonblocking)]
    fn click(&self, handler: Function) -> tether::Result<Any> {
        handler.call(&[])
    }
}

#[test]
fn leaf_and_nonblocking_set_their_flags() {
    use tether::function::{FUNC_LEAF, FUNC_NONBLOCKING};
    let flags = |f: &Function| f.flags() & (FUNC_LEAF | FUNC_NONBLOCKING);
    assert_eq!(flags(&__tether_function_apply()), FUNC_NONBLOCKING);
    assert_eq!(flags(&__tether_function_twice()), FUNC_LEAF);
    assert_eq!(flags(&__tether_function_add()), 0, "neither unless said");
    Button::register_type().unwrap();
    let info = type_info(Button::type_index()).unwrap();
    assert_eq!(flags(&info.constructor().unwrap()), FUNC_LEAF);
    assert_eq!(flags(&info.method("click").unwrap().func()), FUNC_NONBLOCKING);
    let seven = Function::from_typed("mtest.seven", || 7i64);
    let got = __tether_function_apply().call(&[AnyView::object(&seven.0.clone().into())]).unwrap();
    assert_eq!(got.view().as_int(), Some(7));
}

fn call_method(obj: &ObjectRef, name: &str, args: &[AnyView<'_>]) -> tether::Result<Any> {
    let info = type_info(obj.type_index()).unwrap();
    let m = tether::types::find_method(info, name).unwrap_or_else(|| panic!("no method {name}"));
    let mut all = vec![AnyView::object(obj)];
    all.extend_from_slice(args);
    m.func().call(&all)
}

fn py(name: &str, f: &Function) -> String {
    render_signature(name, f.signature().expect("signed"), Language::Python)
}

fn registered() -> &'static tether::TypeInfo {
    Shape::register_type().unwrap();
    Circle::register_type().unwrap();
    type_info(Shape::type_index()).unwrap()
}

#[test]
fn docs_names_and_defaults_come_from_the_source() {
    let info = registered();
    assert_eq!(info.key(), "mtest.Shape");
    let circle = type_info(Circle::type_index()).unwrap();
    assert!(circle.is_weak_referenceable() && !info.is_weak_referenceable(), "`weakref` is the type's own");
    assert_eq!(info.doc(), "A shape.\n\nWith a second paragraph.");
    let ctor = info.constructor().unwrap();
    assert_eq!(py("Shape", &ctor), "Shape(label: str, sides: int = 3) -> mtest.Shape");
    assert_eq!(ctor.doc(), "A shape with `sides` sides.");
    let names: Vec<&str> = info.methods().iter().map(|m| m.name()).collect();
    assert_eq!(names, ["square", "grow", "itself", "sides_of", "annotate", "more_sides"], "helper is skipped");
    let grow = info.method("grow").unwrap();
    assert_eq!(grow.doc(), "Grow by `by` sides, at most `limit`.");
    assert_eq!(py("grow", &grow.func()), "grow(by: int = 1, limit: int | None = None) -> int");
    assert_eq!(
        render_signature(
            "sides_of",
            info.method("sides_of").unwrap().func().signature().unwrap(),
            Language::JavaScript
        ),
        "sidesOf(kind: string, mode?: string, strict?: boolean): number"
    );
    assert!(info.method("sides_of").unwrap().is_static != 0);
    assert!(info.method("square").unwrap().is_static != 0);
    assert_eq!(
        py("annotate", &info.method("annotate").unwrap().func()),
        "annotate(note: str, weight: float = 1.5) -> str"
    );
    assert_eq!(
        py("more_sides", &info.method("more_sides").unwrap().func()),
        "more_sides(others: Array[mtest.Shape]) -> Array[mtest.Shape]"
    );
    let fields: Vec<(&str, &str)> = info.fields().iter().map(|f| (f.name(), f.doc())).collect();
    assert_eq!(fields, [("label", "The shape's label."), ("sides", "The number of sides.")]);
    assert!(info.field("label").unwrap().setter().is_none());
    assert!(info.field("sides").unwrap().setter().is_some());
    let add = __tether_function_add();
    assert_eq!(add.name(), "mtest.add");
    assert_eq!(add.doc(), "Add two numbers.");
    assert_eq!(py("add", &add), "add(a: int, b: int = 10) -> int");
    assert_eq!(add.call(&[AnyView::int(1), AnyView::int(2)]).unwrap().view().as_int(), Some(3));
}

#[test]
fn calls_convert_receivers_results_and_errors() {
    let info = registered();
    let shape = info.constructor().unwrap().call(&[AnyView::raw_str("tri"), AnyView::int(3)]).unwrap();
    let shape = shape.into_object().unwrap();
    assert_eq!(get_field(&shape, "label").unwrap().view().as_str(), Some("tri"));
    assert_eq!(call_method(&shape, "grow", &[AnyView::int(2), AnyView::none()]).unwrap().view().as_int(), Some(5));
    let e = call_method(&shape, "grow", &[AnyView::int(2), AnyView::int(6)]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("ValueError", "7 sides is too many"), "the author's From picks the kind");
    set_field(&shape, "sides", AnyView::int(8)).unwrap();
    assert_eq!(get_field(&shape, "sides").unwrap().view().as_int(), Some(8));
    let e = set_field(&shape, "sides", AnyView::int(101)).unwrap_err();
    assert_eq!(e.message(), "101 sides is too many");
    let same = call_method(&shape, "itself", &[]).unwrap().into_object().unwrap();
    assert!(same.ptr_eq(&shape), "an ObjectArc receiver is the object itself");
    let sides_of = info.method("sides_of").unwrap().func();
    let three = sides_of.call(&[AnyView::raw_str("triangle"), AnyView::raw_str("exact"), AnyView::bool(false)]);
    assert_eq!(three.unwrap().view().as_int(), Some(3));
    let e = sides_of.call(&[AnyView::int(1), AnyView::raw_str("exact"), AnyView::bool(false)]).unwrap_err();
    assert_eq!(e.message(), "mtest.Shape.sides_of() argument 'kind' must be str, not int");
    let noted = call_method(&shape, "annotate", &[AnyView::raw_str("hi"), AnyView::float(2.0)]).unwrap();
    assert_eq!(noted.view().as_str(), Some("hi*2"));
    let square = info.method("square").unwrap().func().call(&[AnyView::raw_str("sq")]).unwrap();
    let square = square.into_object().unwrap().try_cast::<Shape>().ok().unwrap();
    assert_eq!(square.sides(), 4);
    assert_eq!(Shape::helper(&square), 7);

    let circle = type_info(Circle::type_index()).unwrap();
    assert_eq!(circle.parent, Shape::type_index(), "parent = Shape");
    let e = circle.constructor().unwrap().call(&[AnyView::float(-1.0)]).unwrap_err();
    assert_eq!(e.message(), "a negative radius");
    let c = circle.constructor().unwrap().call(&[AnyView::float(2.0)]).unwrap().into_object().unwrap();
    assert_eq!(get_field(&c, "radius").unwrap().view().as_float(), Some(2.0));
}

#[test]
fn a_module_check_names_a_type_left_out() {
    registered();
    let listed = [Shape::type_index(), Circle::type_index()];
    tether::__private::check_exports(&listed, &[__tether_function_add()]).unwrap();
    let e = tether::__private::check_exports(&listed, &[__tether_function_make_unlisted()]).unwrap_err();
    assert_eq!(
        e.message(),
        "mtest.make_unlisted uses type \"mtest.Unlisted\", which is not registered: list its Rust type in \
         tether::module! { types: [...] }"
    );
    Unlisted::register_type().unwrap();
    tether::__private::check_exports(&[Unlisted::type_index()], &[__tether_function_make_unlisted()]).unwrap();
}
