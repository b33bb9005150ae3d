//! Signatures: types from the Rust parameter types, names, defaults, keyword binding, the
//! wording of every mismatch, each language's spelling, and the checks on C-made signatures.

mod common;

use std::collections::HashMap;

use tether_core::containers::{ArrayObj, MapObj};
use tether_core::function::get_global;
use tether_core::plugin::ByteSlice;
use tether_core::signature::{
    bind_call, intern_foreign, language_name, render_signature, render_type, Bound, DefaultValue, Language, Param,
    ParamInfo, Signature, SignatureInfo, Ty, TypeDesc, TypeKind, TypeNode, PARAM_HAS_DEFAULT, PARAM_KEYWORD,
};
use tether_core::testing::Pair;
use tether_core::{Any, AnyView, Function, ObjectArc, TypeBuilder};

fn render_all(name: &str, sig: &SignatureInfo) -> [String; 3] {
    Language::ALL.map(|l| render_signature(name, sig, l))
}

#[test]
fn typed_closures_describe_their_parameter_and_result_types() {
    let _g = common::serial();
    let f = Function::from_typed(
        "tests.f",
        |_n: i64, _s: String, _p: Option<ObjectArc<Pair>>, _v: Vec<f64>| -> Vec<ObjectArc<Pair>> { Vec::new() },
    )
    .with_params(&["n", "s", "pair", "weights"]);
    let sig = f.signature().expect("typed closures are signed");
    let kinds: Vec<TypeKind> = sig.params().iter().map(|p| p.ty().kind()).collect();
    assert_eq!(kinds, [TypeKind::Int, TypeKind::Str, TypeKind::Optional, TypeKind::Array]);
    assert_eq!(sig.params()[2].ty().children()[0].key(), "testing.Pair");
    assert_eq!(
        render_all("f", sig),
        [
            "f(n: int, s: str, pair: testing.Pair | None, weights: Array[float]) -> Array[testing.Pair]",
            "f(n: number, s: string, pair: Pair | null, weights: TetherArray<number>): TetherArray<Pair>",
            "TetherList<Pair> f(Long n, String s, Pair pair, TetherList<Double> weights)",
        ]
    );
    let g = Function::from_typed("tests.g", |_m: HashMap<String, i64>, _cb: Function| {});
    assert_eq!(
        render_signature("g", g.signature().unwrap(), Language::Python),
        "g(arg0: Map[str, int], arg1: Callable[..., Any]) -> None"
    );
}

#[test]
fn arguments_are_named_in_messages_and_a_receiver_is_not_counted() {
    let _g = common::serial();
    let add = get_global("testing.add").unwrap();
    let e = add.call(&[AnyView::int(1), AnyView::raw_str("x")]).unwrap_err();
    assert_eq!(e.message(), "testing.add() argument 'b' must be int, not str");
    let e = add.call(&[AnyView::int(1)]).unwrap_err();
    assert_eq!(e.message(), "testing.add() takes 2 arguments but 1 was given");

    let method = Function::from_typed("tests.Pair.scale", |_p: ObjectArc<Pair>, by: i64| by)
        .as_method()
        .with_params(&["self", "by"]);
    let p = Any::object(Pair::new(Any::none(), Any::none()).into());
    let e = method.call(&[p.view()]).unwrap_err();
    assert_eq!(e.message(), "tests.Pair.scale() takes 1 argument but 0 were given", "self is not counted");
    let e = method.call(&[p.view(), AnyView::float(0.5)]).unwrap_err();
    assert_eq!(e.message(), "tests.Pair.scale() argument 'by' must be int, not float");
    let unnamed = Function::from_typed("tests.Pair.grow", |_p: ObjectArc<Pair>, by: i64| by).as_method();
    let e = unnamed.call(&[p.view(), AnyView::float(0.5)]).unwrap_err();
    assert_eq!(
        e.message(),
        "tests.Pair.grow() argument 1 must be int, not float",
        "positions count what the caller wrote"
    );
}

fn find_signature() -> &'static SignatureInfo {
    Signature {
        params: vec![
            Param::new("self", Ty::Object("testing.Pair")),
            Param::new("name", Ty::Str),
            Param::new("depth", Ty::Int).with_default(DefaultValue::Int(0)),
            Param::new("exact", Ty::Bool).with_default(DefaultValue::Bool(true)),
        ],
        result: Ty::Optional(&Ty::Object("testing.Pair")),
        receiver: false,
    }
    .method()
    .intern()
    .unwrap()
}

#[test]
fn calls_bind_keywords_and_defaults_and_every_mismatch_is_worded_once() {
    let _g = common::serial();
    let sig = find_signature();
    use Bound::*;
    assert_eq!(bind_call("find", sig, 2, &[]).unwrap(), [Positional(0), Positional(1), Default, Default]);
    assert_eq!(
        bind_call("find", sig, 1, &["exact", "name"]).unwrap(),
        [Positional(0), Keyword(1), Default, Keyword(0)]
    );
    assert_eq!(
        bind_call("find", sig, 3, &["exact"]).unwrap(),
        [Positional(0), Positional(1), Positional(2), Keyword(0)]
    );
    let message =
        |positional, keywords: &[&str]| bind_call("find", sig, positional, keywords).unwrap_err().message().to_string();
    assert_eq!(message(1, &["nmae"]), "find() got an unexpected keyword argument 'nmae'");
    assert_eq!(message(2, &["name"]), "find() got multiple values for argument 'name'");
    assert_eq!(message(1, &["depth"]), "find() missing 1 required argument: 'name'");
    assert_eq!(message(5, &[]), "find() takes from 1 to 3 positional arguments but 4 were given");
    assert_eq!(message(1, &["self"]), "find() got a positional-only argument passed as a keyword argument: 'self'");
    let two = Function::from_typed("t.two", |a: i64, b: i64| a + b).with_params(&["a", "b"]);
    let e = bind_call("two", two.signature().unwrap(), 0, &[]).unwrap_err();
    assert_eq!(e.message(), "two() missing 2 required arguments: 'a' and 'b'");
    assert_eq!(
        render_all("find", sig),
        [
            "find(name: str, depth: int = 0, exact: bool = True) -> testing.Pair | None",
            "find(name: string, depth?: number, exact?: boolean): Pair | null",
            "Pair find(String name, Long depth, Boolean exact)",
        ]
    );
}

#[test]
fn signatures_are_interned_and_declarations_are_checked() {
    let _g = common::serial();
    let a = Function::from_typed("t.a", |x: i64| x).with_params(&["x"]);
    let b = Function::from_typed("t.b", |y: i64| y).with_params(&["x"]);
    assert!(std::ptr::eq(a.signature().unwrap(), b.signature().unwrap()), "one copy per distinct signature");
    for _ in 0..common::iters(1000, 5) {
        let again = Function::from_typed("t.c", |x: i64| x).with_params(&["x"]);
        assert!(std::ptr::eq(again.signature().unwrap(), a.signature().unwrap()));
    }
    let twice = Signature::of_types(&[Ty::Int, Ty::Int], Ty::Int).named(&["x", "x"]).intern().unwrap_err();
    assert_eq!(twice.message(), "signature: parameter name \"x\" is used twice");
    let order = Signature {
        params: vec![Param::new("a", Ty::Int).with_default(DefaultValue::Int(1)), Param::new("b", Ty::Int)],
        result: Ty::None,
        receiver: false,
    }
    .intern()
    .unwrap_err();
    assert!(order.message().contains("\"b\" has no default but follows one that has"), "{}", order.message());
}

#[test]
fn names_follow_each_language_convention() {
    for (name, js) in [
        ("on_change", "onChange"),
        ("x", "x"),
        ("make_scene_2d", "makeScene2d"),
        ("_private_thing", "_privateThing"),
        ("alreadyCamel", "alreadyCamel"),
    ] {
        assert_eq!(language_name(name, Language::JavaScript), js);
        assert_eq!(language_name(name, Language::Java), js);
        assert_eq!(language_name(name, Language::Python), name);
    }
}

#[test]
fn reserved_words_get_a_trailing_underscore_in_each_language() {
    use tether_core::signature::escape_keyword;
    assert_eq!(escape_keyword("from", Language::Python), "from_");
    assert_eq!(escape_keyword("from", Language::JavaScript), "from");
    assert_eq!(escape_keyword("new", Language::JavaScript), "new_");
    assert_eq!(escape_keyword("new", Language::Python), "new");
    assert_eq!(escape_keyword("long", Language::Java), "long_");
    assert_eq!(escape_keyword("find", Language::Java), "find");
}

#[test]
fn lists_and_maps_convert_both_ways() {
    let _g = common::serial();
    let total = Function::from_typed("t.total", |xs: Vec<i64>| xs.iter().sum::<i64>());
    let arr = Any::object(ArrayObj::new(vec![Any::int(1), Any::int(2), Any::int(39)]).into());
    assert_eq!(total.call(&[arr.view()]).unwrap().view().as_int(), Some(42));
    let mixed = Any::object(ArrayObj::new(vec![Any::int(1), Any::str("two")]).into());
    let e = total.call(&[mixed.view()]).unwrap_err();
    assert_eq!(e.message(), "t.total() argument 1 must be Array of int, not tether.Array");
    let pairs = Function::from_typed("t.pairs", |n: i64| {
        (0..n).map(|i| Pair::new(Any::int(i), Any::none())).collect::<Vec<_>>()
    });
    let made = pairs.call(&[AnyView::int(3)]).unwrap();
    let made = made.view().downcast_ref::<ArrayObj>().unwrap();
    assert_eq!(made.len(), 3);
    assert!(made.items()[2].view().downcast_ref::<Pair>().is_some());
    let count = Function::from_typed("t.count", |m: HashMap<String, i64>| m.get("b").copied());
    let map = Any::object(MapObj::new(vec![(Any::str("a"), Any::int(1)), (Any::str("b"), Any::int(2))]).into());
    assert_eq!(count.call(&[map.view()]).unwrap().view().as_int(), Some(2));
    let invert = Function::from_typed("t.invert", |m: HashMap<String, i64>| {
        m.into_iter().map(|(k, v)| (v, k)).collect::<HashMap<i64, String>>()
    });
    let inverted = invert.call(&[map.view()]).unwrap();
    let inverted = inverted.view().downcast_ref::<MapObj>().unwrap();
    assert_eq!(inverted.get(&AnyView::int(1)).and_then(|v| v.view().as_str().map(str::to_owned)).as_deref(), Some("a"));
}

#[test]
fn reflection_carries_descriptors_for_fields_methods_and_constructors() {
    let _g = common::serial();
    struct Gauge {
        level: std::sync::atomic::AtomicI64,
    }
    tether_core::declare_object!(Gauge, "tests.signatures.Gauge");
    TypeBuilder::<Gauge>::new()
        .field("level", |g: &Gauge| g.level.load(std::sync::atomic::Ordering::Relaxed))
        .method("raise_by", |g: ObjectArc<Gauge>, by: i64| {
            g.level.fetch_add(by, std::sync::atomic::Ordering::Relaxed) + by
        })
        .params(&["by"])
        .constructor(|start: i64| ObjectArc::new(Gauge { level: start.into() }))
        .params(&["start"])
        .register();
    let info = tether_core::types::type_info(<Gauge as tether_core::Object>::type_index()).unwrap();
    let level = info.field("level").unwrap();
    assert_eq!(level.ty().kind(), TypeKind::Int);
    assert_eq!(level.type_hint(), "int", "the ABI 1.3 hint is the descriptor, as Python writes it");
    let raise = info.method("raise_by").unwrap().func();
    assert_eq!(
        render_signature("raise_by", raise.signature().unwrap(), Language::JavaScript),
        "raiseBy(by: number): number"
    );
    let ctor = info.constructor().unwrap();
    assert_eq!(
        render_signature("Gauge", ctor.signature().unwrap(), Language::Python),
        "Gauge(start: int) -> tests.signatures.Gauge"
    );
}

const fn node(kind: TypeKind, n_children: u32, key: &'static str) -> TypeNode {
    TypeNode { kind: kind as u32, n_children, key: ByteSlice { ptr: key.as_ptr(), len: key.len() } }
}

fn param(name: &'static str, nodes: &[TypeNode], default: Option<Any>) -> ParamInfo {
    ParamInfo {
        name: ByteSlice::from_static(name),
        ty: TypeDesc { nodes: nodes.as_ptr(), n_nodes: nodes.len() },
        flags: PARAM_KEYWORD | default.as_ref().map_or(0, |_| PARAM_HAS_DEFAULT),
        default: default.unwrap_or_else(Any::none),
        reserved: 0,
    }
}

fn foreign(params: &[ParamInfo]) -> SignatureInfo {
    SignatureInfo {
        params: params.as_ptr(),
        n_params: params.len(),
        result: TypeDesc { nodes: std::ptr::null(), n_nodes: 0 },
        flags: 0,
        reserved: 0,
    }
}

#[test]
fn signatures_from_c_are_checked_and_copied() {
    let _g = common::serial();
    // Static tables, as a C plugin declares them.
    static ARRAY_OF_INT: [TypeNode; 2] = [node(TypeKind::Array, 1, ""), node(TypeKind::Int, 0, "")];
    static FLOAT: [TypeNode; 1] = [node(TypeKind::Float, 0, "")];
    static TWO_ROOTS: [TypeNode; 2] = [node(TypeKind::Int, 0, ""), node(TypeKind::Int, 0, "")];
    static OPEN_ARRAY: [TypeNode; 1] = [node(TypeKind::Array, 1, "")];
    static HALF_MAP: [TypeNode; 2] = [node(TypeKind::Map, 1, ""), node(TypeKind::Int, 0, "")];
    static UNKNOWN: [TypeNode; 1] = [TypeNode { kind: 99, n_children: 0, key: ByteSlice::empty() }];
    static KEYLESS: [TypeNode; 1] = [node(TypeKind::Object, 0, "")];
    let array_of_int = &ARRAY_OF_INT;
    let good = [param("xs", array_of_int, None), param("scale", &FLOAT, Some(Any::float(1.5)))];
    // SAFETY: the arrays are as long as the counts.
    let sig = unsafe { intern_foreign(&foreign(&good)) }.unwrap();
    assert_eq!(render_signature("f", sig, Language::Python), "f(xs: Array[int], scale: float = 1.5) -> Any");

    let cases: Vec<(Vec<ParamInfo>, &str)> = vec![
        (vec![param("a", &TWO_ROOTS, None)], "do not form one tree"),
        (vec![param("a", &OPEN_ARRAY, None)], "do not form one tree"),
        (vec![param("a", &HALF_MAP, None)], "(Map) has 1 children"),
        (vec![param("a", &UNKNOWN, None)], "unknown kind 99"),
        (vec![param("a", &KEYLESS, None)], "has no type key"),
        (
            vec![param("a", array_of_int, Some(Any::int(1))), param("b", array_of_int, None)],
            "\"b\" has no default but follows one",
        ),
        (
            vec![param("a", array_of_int, Some(Any::object(Pair::new(Any::none(), Any::none()).into())))],
            "must be a plain value",
        ),
        (vec![param("", array_of_int, None)], "may be passed by keyword but has no name"),
    ];
    for (params, expected) in cases {
        // SAFETY: the arrays are as long as the counts.
        let e = unsafe { intern_foreign(&foreign(&params)) }.unwrap_err();
        assert!(e.message().contains(expected), "{:?} should contain {expected:?}", e.message());
    }
    let bad_utf8: &'static [u8] = &[0xff, 0xfe];
    let mut p = param("a", array_of_int, None);
    p.name = ByteSlice { ptr: bad_utf8.as_ptr(), len: bad_utf8.len() };
    // SAFETY: as above.
    let e = unsafe { intern_foreign(&foreign(&[p])) }.unwrap_err();
    assert!(e.message().contains("not UTF-8"), "{}", e.message());
    let too_many = SignatureInfo { params: std::ptr::null(), n_params: 3, ..foreign(&[]) };
    // SAFETY: a null array with a count is refused before it is read.
    assert!(unsafe { intern_foreign(&too_many) }.is_err());
    let _ = render_type(sig.result(), Language::Java);
}

#[test]
fn stored_callbacks_are_called_as_typed_closures() {
    let _g = common::serial();
    use tether_core::Callback;
    let repeat = Function::from_typed("t.repeat", |s: String, n: i64| s.repeat(n as usize));
    let apply = Function::from_typed("t.apply", |cb: Callback<(String, i64), String>| cb.call(("ab".into(), 3)))
        .with_params(&["callback"]);
    assert_eq!(
        render_signature("apply", apply.signature().unwrap(), Language::Python),
        "apply(callback: Callable[[str, int], str]) -> str"
    );
    assert_eq!(
        render_signature("apply", apply.signature().unwrap(), Language::JavaScript),
        "apply(callback: (arg0: string, arg1: number) => string): string"
    );
    let f = Any::object(repeat.0.clone().into());
    assert_eq!(apply.call(&[f.view()]).unwrap().view().as_str(), Some("ababab"));
    let wrong = Function::from_typed("t.wrong", |_s: String, n: i64| n);
    let w = Any::object(wrong.0.clone().into());
    let e = apply.call(&[w.view()]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("TypeError", "the callback t.wrong returned int, but str was expected"));
}

#[test]
fn a_deep_descriptor_from_c_is_read_and_rendered_without_exhausting_the_stack() {
    let _g = common::serial();
    // The deepest tree the host takes (4096 nodes): Array[Array[...[int]...]].
    let depth = if cfg!(miri) { 64 } else { 4095 };
    let mut nodes: Vec<TypeNode> = (0..depth).map(|_| node(TypeKind::Array, 1, "")).collect();
    nodes.push(node(TypeKind::Int, 0, ""));
    let params = [param("xs", &nodes, None)];
    // SAFETY: the arrays are as long as the counts, alive for the call (the host copies them).
    let sig = unsafe { intern_foreign(&foreign(&params)) }.unwrap();
    let text = render_type(sig.params()[0].ty(), Language::Python);
    assert_eq!(text.matches("Array[").count(), depth);
    let too_many: Vec<TypeNode> = (0..5000).map(|_| node(TypeKind::Array, 1, "")).collect();
    let params = [param("xs", &too_many, None)];
    // SAFETY: as above; the host refuses the count before reading past it.
    let e = unsafe { intern_foreign(&foreign(&params)) }.unwrap_err();
    assert!(e.message().contains("at most 4096"), "{}", e.message());
}
