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

/// Compile `tests/c/<name>.c` into a shared library in this test's temp dir.
fn build(name: &str) -> String {
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
