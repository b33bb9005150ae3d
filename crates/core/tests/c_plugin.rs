//! A plugin written in C against include/tether.h (tests/c/plugin.c): compiled with the
//! system C compiler, loaded with `plugin::load_module`, and used from Rust. Also the clear
//! errors for files that are not tether modules. (Needs gcc and dlopen: not under Miri.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use tether_core::alloc::live_objects;
use tether_core::plugin::load_module;
use tether_core::types::{find_method, get_field, type_index_of, type_info};
use tether_core::{Any, AnyView, ArrayObj, Function, ObjectRef, TypeIndex};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compile `tests/c/<name>.c` into a shared library in this test's temp dir, once per run (a
/// loaded library is never rewritten).
fn build(name: &str) -> String {
    static BUILT: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = built.iter().find(|(n, _)| n == name) {
        return path.clone();
    }
    let path = compile(name);
    built.push((name.to_string(), path.clone()));
    path
}

fn compile(name: &str) -> String {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tether_c_{name}.so"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-O1", "-I"])
        .arg(repo().join("crates/core/include"))
        .arg("-o")
        .arg(&out)
        .arg(repo().join(format!("tests/c/{name}.c")))
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?}: {e}"));
    assert!(status.success(), "compiling tests/c/{name}.c failed");
    out.display().to_string()
}

fn cplugin() -> &'static tether_core::ObjectArc<tether_core::plugin::ModuleObj> {
    static MODULE: OnceLock<tether_core::ObjectArc<tether_core::plugin::ModuleObj>> = OnceLock::new();
    MODULE.get_or_init(|| {
        tether_core::init();
        load_module(&build("plugin")).expect("the C plugin loads")
    })
}

/// Serialise (live_objects is process-wide) and make sure the plugin is loaded before a
/// test takes its baseline.
fn loaded() -> std::sync::MutexGuard<'static, ()> {
    let guard = common::serial();
    cplugin();
    guard
}

fn func(name: &str) -> &'static Function {
    cplugin().function(name).unwrap_or_else(|| panic!("cplugin exports {name}"))
}

fn vec2(x: f64, y: f64) -> ObjectRef {
    func("Vec2").call(&[AnyView::float(x), AnyView::float(y)]).unwrap().into_object().unwrap()
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn layout_seen_from_c_matches_rust() {
    use std::mem::{offset_of, size_of};
    use tether_core::containers::{ArrayObj as A, MapObj, OpaqueObj, StrObj};
    use tether_core::error::ErrorObj;
    use tether_core::function::FunctionObj;
    use tether_core::plugin::{ApiTable, ByteSlice};
    use tether_core::tying::SlotPrefix;
    use tether_core::types::{FieldInfo, MethodInfo, TypeInfo};
    use tether_core::{alloc::CustomAllocator, arc::ObjectBox, ObjectHeader};
    let _g = loaded();
    let rust: Vec<i64> = [
        size_of::<ObjectHeader>(),
        offset_of!(ObjectHeader, type_index),
        offset_of!(ObjectHeader, alloc_tag),
        offset_of!(ObjectHeader, deleter),
        size_of::<Any>(),
        8 - 4, // small_len follows the i32 type_index
        8,
        size_of::<ByteSlice>(),
        size_of::<SlotPrefix>(),
        size_of::<CustomAllocator>(),
        offset_of!(CustomAllocator, tag),
        size_of::<FunctionObj>(),
        offset_of!(FunctionObj, arity),
        offset_of!(FunctionObj, name),
        offset_of!(FunctionObj, data),
        offset_of!(FunctionObj, drop_data),
        size_of::<ErrorObj>(),
        offset_of!(ErrorObj, payload),
        size_of::<ObjectBox<StrObj>>(),
        size_of::<ObjectBox<A>>(),
        size_of::<ObjectBox<MapObj>>(),
        size_of::<tether_core::containers::MapItem>(),
        size_of::<OpaqueObj>(),
        size_of::<FieldInfo>(),
        offset_of!(FieldInfo, getter),
        size_of::<MethodInfo>(),
        offset_of!(MethodInfo, is_static),
        size_of::<TypeInfo>(),
        offset_of!(TypeInfo, ancestors),
        offset_of!(TypeInfo, constructor),
        size_of::<ApiTable>(),
        offset_of!(ApiTable, call_function),
    ]
    .iter()
    .map(|&n| n as i64)
    .collect();
    let c = func("layout").call(&[]).unwrap();
    let c: Vec<i64> =
        c.view().downcast_ref::<ArrayObj>().unwrap().items().iter().map(|v| v.view().as_int().unwrap()).collect();
    assert_eq!(c, rust, "sizeof/offsetof in C (tether.h) vs size_of/offset_of in Rust");
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn c_type_is_reflected_and_its_objects_work_from_rust() {
    let _g = loaded();
    let m = cplugin();
    let index = type_index_of("cplugin.Vec2").expect("registered in the host registry");
    assert_eq!(m.types(), &[index]);
    let info = type_info(index).unwrap();
    assert_eq!(
        (info.key(), info.doc(), info.depth, info.parent),
        ("cplugin.Vec2", "A 2D vector made by a C plugin.", 1, TypeIndex::OBJECT)
    );
    assert_eq!(
        info.fields().iter().map(|f| (f.name(), f.type_hint())).collect::<Vec<_>>(),
        [("x", "float"), ("y", "float")]
    );
    assert!(info.field("x").unwrap().setter().is_none());

    let base = live_objects();
    let count = || func("vec2_count").call(&[]).unwrap().view().as_int().unwrap();
    let alive = count();
    let v = info.constructor().unwrap().call(&[AnyView::int(3), AnyView::float(4.0)]).unwrap().into_object().unwrap();
    assert_eq!(v.type_index(), index);
    assert_eq!(live_objects(), base + 1, "C objects are allocated through the host registry");
    assert_eq!(v.header().alloc_tag, tether_core::alloc::current_allocator_tag());
    assert_eq!(get_field(&v, "x").unwrap().view().as_float(), Some(3.0));
    assert_eq!(get_field(&v, "y").unwrap().view().as_float(), Some(4.0));
    let scaled = find_method(info, "scaled").unwrap().func().call(&[AnyView::object(&v), AnyView::int(2)]).unwrap();
    let scaled = scaled.into_object().unwrap();
    assert_eq!(get_field(&scaled, "y").unwrap().view().as_float(), Some(8.0));
    let w = vec2(1.0, 2.0);
    assert_eq!(func("dot").call(&[AnyView::object(&v), AnyView::object(&w)]).unwrap().view().as_float(), Some(11.0));
    assert_eq!(count(), alive + 3);

    // Reference counting from Rust drives the C deleter: value then memory.
    let weak_keeper = v.clone();
    drop(v);
    assert_eq!(count(), alive + 3);
    drop((weak_keeper, scaled, w));
    assert_eq!(count(), alive, "the C deleter dropped each value once");
    assert_eq!(live_objects(), base, "and freed each object through the host");
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn c_functions_take_strings_return_objects_and_call_back() {
    let _g = loaded();
    let base = live_objects();
    assert_eq!(func("greet").call(&[AnyView::raw_str("Rust")]).unwrap().as_str(), Some("hello from C, Rust"));
    for s in ["", "short", "a string long enough to be a Str object"] {
        for form in [Any::str(s), AnyView::raw_str(s).to_owned_any()] {
            assert_eq!(func("str_len").call(&[form.view()]).unwrap().view().as_int(), Some(s.len() as i64));
        }
        assert_eq!(func("str_len").call(&[AnyView::raw_str(s)]).unwrap().view().as_int(), Some(s.len() as i64));
    }
    let p = tether_core::testing::Pair::new(Any::none(), Any::none());
    let pa = Any::object(p.into());
    let arr = func("pair").call(&[pa.view(), AnyView::int(5)]).unwrap();
    let items = arr.view().downcast_ref::<ArrayObj>().unwrap().items().to_vec();
    assert_eq!(items[0], pa, "the array holds the same object");
    assert_eq!(items[1].view().as_int(), Some(5));

    let double = Any::object(Function::from_typed("tests.double", |x: i64| x * 2).0.into());
    assert_eq!(func("apply").call(&[double.view(), AnyView::int(21)]).unwrap().view().as_int(), Some(42));
    let failing = Any::object(
        Function::from_typed("tests.failing", |_x: i64| -> tether_core::Result<i64> {
            Err(tether_core::Error::key("from Rust"))
        })
        .0
        .into(),
    );
    let e = func("apply").call(&[failing.view(), AnyView::int(1)]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("KeyError", "from Rust"), "a Rust error crosses C unchanged");
    drop((e, arr, items, pa, double, failing));
    assert_eq!(live_objects(), base);
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn c_errors_arrive_as_typed_errors() {
    let _g = loaded();
    let base = live_objects();
    let e = func("fail").call(&[]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("ValueError", "cplugin.fail: requested failure"));
    assert_eq!(e.code(), tether_core::ErrorKind::ValueError, "make_error gives a C error its code");
    let e2 = func("dot").call(&[AnyView::int(1), AnyView::int(2)]).unwrap_err();
    assert_eq!((e2.kind(), e2.message()), ("TypeError", "cplugin.dot() arguments must be cplugin.Vec2"));
    let e3 = func("dot").call(&[]).unwrap_err();
    assert_eq!(e3.message(), "cplugin.dot() takes 2 arguments but 0 were given");
    drop((e, e2, e3));
    assert_eq!(live_objects(), base);
    assert_eq!(
        func("greet").call(&[AnyView::raw_str("again")]).unwrap().as_str(),
        Some("hello from C, again"),
        "still works"
    );
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn loading_the_same_plugin_twice_returns_the_same_module() {
    let _g = loaded();
    let again = load_module(cplugin().path()).unwrap();
    assert!(tether_core::ObjectArc::ptr_eq(&again, cplugin()));
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn files_that_are_not_tether_modules_give_clear_errors() {
    let _g = loaded();
    tether_core::init();
    let missing = load_module("/nonexistent/dir/libnothing.so").unwrap_err();
    assert_eq!(missing.kind(), "ValueError");
    assert!(missing.message().contains("no such file"), "{}", missing.message());

    let text = Path::new(env!("CARGO_TARGET_TMPDIR")).join("not_a_library.so");
    std::fs::write(&text, "this is a text file, not an ELF shared library\n").unwrap();
    let e = load_module(&text.display().to_string()).unwrap_err();
    assert!(e.message().contains("not a loadable shared library"), "{}", e.message());

    // A library whose own dependency is missing: the loader's reason names the dependency.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("missing_dependency");
    std::fs::create_dir_all(&dir).unwrap();
    let dep = dir.join("libtether_gone_dep.so");
    std::fs::write(dir.join("dep.c"), "int tether_gone_dep(void) { return 1; }\n").unwrap();
    std::fs::write(
        dir.join("uses_dep.c"),
        "int tether_gone_dep(void);\nint uses(void) { return tether_gone_dep(); }\n",
    )
    .unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "gcc".into());
    let gcc = |args: &[&std::ffi::OsStr]| assert!(Command::new(&cc).args(args).status().unwrap().success());
    gcc(&["-shared".as_ref(), "-fPIC".as_ref(), "-o".as_ref(), dep.as_os_str(), dir.join("dep.c").as_os_str()]);
    let user = dir.join("libuses_dep.so");
    gcc(&[
        "-shared".as_ref(),
        "-fPIC".as_ref(),
        "-o".as_ref(),
        user.as_os_str(),
        dir.join("uses_dep.c").as_os_str(),
        "-L".as_ref(),
        dir.as_os_str(),
        "-ltether_gone_dep".as_ref(),
    ]);
    std::fs::remove_file(&dep).unwrap();
    let e = load_module(&user.display().to_string()).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().contains("libtether_gone_dep.so: cannot open shared object file"),
        "the loader's reason: {}",
        e.message()
    );

    let e = load_module(&build("not_a_module")).unwrap_err();
    assert!(e.message().contains("no `tether_module_abi` symbol"), "{}", e.message());

    let e = load_module(&build("no_init")).unwrap_err();
    assert!(e.message().contains("no `tether_module_init` symbol"), "{}", e.message());

    let e = load_module(&build("init_fails")).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert!(
        e.message().contains("initialising module") && e.message().contains("cplugin init refused to start"),
        "{}",
        e.message()
    );
    assert_eq!(
        common::call("testing.add", &[AnyView::int(1), AnyView::int(1)]).unwrap().view().as_int(),
        Some(2),
        "the host keeps working"
    );
}

fn hostile() -> &'static tether_core::ObjectArc<tether_core::plugin::ModuleObj> {
    static MODULE: OnceLock<tether_core::ObjectArc<tether_core::plugin::ModuleObj>> = OnceLock::new();
    MODULE.get_or_init(|| load_module(&build("hostile")).expect("the hostile C plugin loads"))
}

fn hostile_call(name: &str, args: &[AnyView<'_>]) -> tether_core::Result<Any> {
    hostile().function(name).unwrap_or_else(|| panic!("hostile exports {name}")).call(args)
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn cells_with_out_of_range_type_indices_are_refused_unread() {
    let _g = loaded();
    hostile();
    let base = live_objects();
    let echo = Any::object(tether_core::function::get_global("testing.echo").unwrap().0.into());
    // Negative, in the gap between value kinds and objects, an unregistered object index,
    // beyond the registry: none is a value the core can read.
    // The refusal as (kind, message); the error itself is dropped at once.
    let refused = |name: &str, args: &[AnyView<'_>]| {
        let e = hostile_call(name, args).unwrap_err();
        (e.kind().to_string(), e.message().to_string())
    };
    for kind in [-1i64, -70_000, 9, 63, 100, 127, 1_000_000] {
        let (k, m) = refused("bad_result", &[AnyView::int(kind)]);
        assert_eq!(k, "ValueError");
        assert!(
            m.contains("the result of hostile.bad_result")
                && m.contains(&format!("has type index {kind}, which is neither")),
            "{m}"
        );
        let (_, m) = refused("bad_array", &[AnyView::int(kind)]);
        assert!(m.starts_with("make_array: item 0 has type index"), "{m}");
        let (_, m) = refused("bad_call", &[echo.view(), AnyView::int(kind)]);
        assert!(m.starts_with("call_function: argument 1 has type index"), "{m}");
    }
    // A borrowed view cannot be a result; a registered type without an object, or whose header
    // disagrees, is refused.
    let (_, m) = refused("bad_result", &[AnyView::int(TypeIndex::RAW_STR as i64)]);
    assert!(m.contains("is a borrowed view"), "{m}");
    let (_, m) = refused("bad_header", &[AnyView::int(TypeIndex::ARRAY as i64)]);
    assert!(m.contains("its object's header says index 3"), "{m}");
    let (_, m) = refused("bad_result", &[AnyView::int(TypeIndex::ARRAY as i64)]);
    assert!(m.contains("claims an object of type \"tether.Array\" but holds no object pointer"), "{m}");
    assert_eq!(hostile_call("ok", &[]).unwrap().view().as_int(), Some(42), "the plugin keeps working");
    assert_eq!(live_objects(), base);
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_registered_key_keeps_its_layout() {
    let _g = loaded();
    let register = |key: &str, parent: &str, fields: &str| {
        hostile_call("register_type", &[AnyView::raw_str(key), AnyView::raw_str(parent), AnyView::raw_str(fields)])
    };
    // A new key (its getters live in the registry from now on), before the baseline.
    let point = register("hostile.Point", "tether.Object", "x,y").unwrap().view().as_int().unwrap();
    let base = live_objects();
    assert_eq!(register("hostile.Point", "tether.Object", "x,y").unwrap().view().as_int(), Some(point), "same layout");
    let pair = <tether_core::testing::Pair as tether_core::Object>::type_index() as i64;
    assert_eq!(register("testing.Pair", "tether.Object", "first,second").unwrap().view().as_int(), Some(pair));
    for (key, parent, fields, says) in [
        (
            "hostile.Point",
            "tether.Object",
            "x",
            r#"is already registered with fields ["x", "y"], but this registration has fields ["x"]"#,
        ),
        ("hostile.Point", "tether.Object", "y,x", r#"has fields ["y", "x"]"#),
        ("testing.Pair", "tether.Object", "first,second,third", r#""testing.Pair" is already registered with fields"#),
        (
            "testing.Triple",
            "tether.Object",
            "first,second,third",
            r#"type key "testing.Triple" is already registered with parent "testing.Pair", not "tether.Object""#,
        ),
        (
            "hostile.Point",
            "testing.Pair",
            "x,y",
            r#"type key "hostile.Point" is already registered with parent "tether.Object", not "testing.Pair""#,
        ),
    ] {
        let e = register(key, parent, fields).unwrap_err();
        assert_eq!(e.kind(), "ValueError");
        assert!(e.message().contains(says), "{key} {parent} {fields}: {}", e.message());
    }
    assert_eq!(type_info(point as i32).unwrap().fields().len(), 2, "the first layout stays");
    assert_eq!(live_objects(), base, "refused and duplicate registrations keep none of their getters");
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_copy_of_a_c_plugin_shares_its_types_and_a_link_is_the_same_module() {
    let _g = loaded();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_two_paths");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("link.so");
    std::os::unix::fs::symlink(cplugin().path(), &link).unwrap();
    assert!(tether_core::ObjectArc::ptr_eq(&load_module(link.to_str().unwrap()).unwrap(), cplugin()));
    let copy = dir.join("copy.so");
    std::fs::copy(cplugin().path(), &copy).unwrap();
    let copied = load_module(copy.to_str().unwrap()).expect("a copy registers the same layout: accepted");
    assert!(!tether_core::ObjectArc::ptr_eq(&copied, cplugin()));
    assert_eq!(copied.types(), cplugin().types());
    let v = copied.function("Vec2").unwrap().call(&[AnyView::float(1.0), AnyView::float(2.0)]).unwrap();
    let v = v.into_object().unwrap();
    assert_eq!(v.type_index(), cplugin().types()[0]);
    assert_eq!(
        get_field(&v, "y").unwrap().view().as_float(),
        Some(2.0),
        "the original's getter reads the copy's object"
    );
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_failing_init_is_remembered_and_the_host_keeps_working() {
    let _g = loaded();
    let path = build("init_fails");
    let first = load_module(&path).unwrap_err().message().to_string();
    let base = live_objects(); // its global function stays registered
    let second = load_module(&path).unwrap_err();
    assert!(first.contains("cplugin init refused to start"), "{first}");
    assert_eq!(second.kind(), "RuntimeError");
    assert!(second.message().contains("cplugin init refused to start") && second.message().contains("remembered"));
    drop((first, second));
    // What its init registered before failing is its code: the library stays mapped.
    let leftover = tether_core::function::get_global("init_fails.leftover").expect("registered before the failure");
    assert_eq!(leftover.call(&[]).unwrap().view().as_int(), Some(7));
    assert_eq!(func("greet").call(&[AnyView::raw_str("x")]).unwrap().as_str(), Some("hello from C, x"));
    assert_eq!(live_objects(), base);
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn c_signatures_are_copied_and_read_like_rust_ones() {
    use tether_core::signature::{bind_call, render_signature, Bound, Language};
    let _g = loaded();
    let dot = func("dot").signature().expect("set by the C plugin");
    assert_eq!(render_signature("dot", dot, Language::Python), "dot(a: cplugin.Vec2, b: cplugin.Vec2) -> float");
    let info = type_info(type_index_of("cplugin.Vec2").unwrap()).unwrap();
    let scaled = find_method(info, "scaled").unwrap().func();
    let sig = scaled.signature().unwrap();
    assert_eq!(render_signature("scaled", sig, Language::JavaScript), "scaled(k?: number): Vec2");
    assert_eq!(bind_call("scaled", sig, 1, &[]).unwrap(), [Bound::Positional(0), Bound::Default]);
    assert_eq!(sig.params()[1].default().and_then(|d| d.view().as_float()), Some(2.0));
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_malformed_c_signature_fails_the_load_not_the_process() {
    let _g = loaded();
    let e = load_module(&build("bad_signature")).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(
        e.message().contains("set_signature of bad_signature.f") && e.message().contains("do not form one tree"),
        "{}",
        e.message()
    );
    assert_eq!(func("greet").call(&[AnyView::raw_str("x")]).unwrap().as_str(), Some("hello from C, x"));
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_key_registered_with_another_api_fails_the_load_naming_both_modules() {
    let _g = loaded();
    let path = build("api_conflict");
    let e = load_module(&path).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    let m = e.message();
    assert!(m.contains("type key \"cplugin.Vec2\" is registered by module"), "{m}");
    assert!(m.contains("tether_c_plugin.so") && m.contains("tether_c_api_conflict.so"), "both modules: {m}");
    assert!(m.contains("scaled(k: float = 2.0) -> cplugin.Vec2") && m.contains("scaled(...)"), "{m}");
    assert!(m.contains("one key names one API"), "{m}");
    // The first registration stands.
    let info = type_info(type_index_of("cplugin.Vec2").unwrap()).unwrap();
    assert!(find_method(info, "scaled").unwrap().func().signature().is_some());
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_module_of_an_older_minor_publishes_no_type_flags() {
    let _g = loaded();
    load_module(&build("old_minor")).expect("an ABI 1.6 module loads");
    let index = tether_core::types::type_index_of("oldminor.Thing").expect("registered");
    let info = tether_core::types::type_info(index).expect("published");
    assert_eq!(info.flags, 0, "the bytes where flags now are were padding in ABI 1.6");
    assert!(!info.is_weak_referenceable());
}

#[test]
#[cfg_attr(miri, ignore = "compiles C and dlopens it")]
fn a_type_left_out_of_its_module_fails_the_load() {
    let _g = loaded();
    let e = load_module(&build("unexported")).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("it registered type \"unexported.Thing\" but does not export it"), "{}", e.message());
}
