//! Loading Rust plugins: a plugin's objects and types live in the host's registries, and an
//! ABI-mismatched plugin is refused. The plugins are found through TETHER_TEST_PLUGIN /
//! TETHER_TEST_PLUGIN_BAD_ABI (set by `cargo xtask test`), else built here with cargo.

mod common;

use tether_core::testing;
use tether_core::*;

fn plugin_path(env_var: &str, package: &str) -> String {
    if let Ok(path) = std::env::var(env_var) {
        return path;
    }
    built(package)
}

/// A test plugin by package: from TETHER_TEST_PLUGIN_DIR (set by `cargo xtask test`), else built here.
fn built(package: &str) -> String {
    let file = format!("lib{}.so", package.replace('-', "_"));
    if let Ok(dir) = std::env::var("TETHER_TEST_PLUGIN_DIR") {
        return format!("{dir}/{file}");
    }
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-p", package])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .status()
        .expect("cargo build");
    assert!(status.success(), "building {package} failed");
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
    format!("{target}/debug/{file}")
}

fn sample() -> String {
    plugin_path("TETHER_TEST_PLUGIN", "tether-test-plugin")
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn loads_sample_plugin() {
    let _g = common::serial();
    let m = plugin::load_module(&sample()).unwrap();
    let before = alloc::live_objects();
    let greet = m.function("greet").unwrap();
    assert_eq!(greet.call(&[AnyView::raw_str("bob")]).unwrap().view().as_str(), Some("hello, bob"));
    let make = m.function("make_counter").unwrap();
    let c = make.call(&[AnyView::int(5)]).unwrap().into_object().unwrap();
    assert_eq!(alloc::live_objects(), before + 1, "plugin objects are counted by the host registry");
    let info = types::type_info(c.type_index()).unwrap();
    assert_eq!(info.key(), "sample.Counter");
    assert_eq!(m.types()[0], c.type_index(), "Counter is the first type it exports");
    let inc = info.method("increment").unwrap().func();
    assert_eq!(inc.call(&[AnyView::object(&c)]).unwrap().view().as_int(), Some(6));
    assert_eq!(types::get_field(&c, "count").unwrap().view().as_int(), Some(6));
    let e = inc.call(&[AnyView::int(1)]).unwrap_err();
    assert_eq!(e.kind(), "TypeError", "a plugin's typed closure reports through the host's error slot");
    drop(e);
    drop(c);
    assert_eq!(alloc::live_objects(), before, "the plugin's object was freed through the host");
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn refuses_an_abi_mismatch_and_missing_files() {
    let _g = common::serial();
    let e = plugin::load_module(&plugin_path("TETHER_TEST_PLUGIN_BAD_ABI", "tether-test-plugin-bad-abi")).unwrap_err();
    assert_eq!(e.kind(), "RuntimeError");
    assert!(e.message().contains("ABI 99.0") && e.message().contains("rebuild the plugin"), "{}", e.message());
    let e = plugin::load_module("/nonexistent/libx.so").unwrap_err();
    assert!(e.message().contains("no such file"), "{}", e.message());
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn a_panicking_init_is_a_rust_panic_error_and_its_library_stays_mapped() {
    let _g = common::serial();
    let path = built("tether-test-plugin-init-panics");
    let e = plugin::load_module(&path).unwrap_err();
    let (kind, message) = (e.kind().to_string(), e.message().to_string());
    drop(e);
    // What the registry keeps of it from now on (its type's accessors) is the new baseline.
    let before = alloc::live_objects();
    assert_eq!(kind, "RustPanic");
    assert!(
        message.contains("initialising module")
            && message.contains("init_panics")
            && message.contains("the plugin panicked: init_panics: refusing to start"),
        "{message}"
    );
    // The type it registered before panicking keeps its getter, plugin code: callable, failing
    // cleanly on a wrong argument. (The library stays loaded; c_plugin.rs's init_fails test is
    // the one an unload would crash: glibc keeps a Rust cdylib mapped regardless.)
    let info = types::type_info(types::type_index_of("init_panics.Thing").unwrap()).unwrap();
    let err = info.field("value").unwrap().getter().call(&[AnyView::int(1)]).unwrap_err();
    assert_eq!(err.kind(), "TypeError");
    drop(err);
    // Init runs once per file: a second load reports the same failure without running it.
    let again = plugin::load_module(&path).unwrap_err();
    assert_eq!(again.kind(), "RustPanic");
    assert!(
        again.message().contains("refusing to start") && again.message().contains("remembered"),
        "{}",
        again.message()
    );
    drop(again);
    assert_eq!(common::call("testing.add", &[AnyView::int(2), AnyView::int(3)]).unwrap().view().as_int(), Some(5));
    assert_eq!(alloc::live_objects(), before);
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn a_plugin_registering_an_existing_key_with_other_fields_is_refused() {
    let _g = common::serial();
    let before = alloc::live_objects();
    let pair = types::type_info(testing::Pair::type_index()).unwrap();
    let e = plugin::load_module(&built("tether-test-plugin-conflict")).unwrap_err();
    assert_eq!(e.kind(), "ValueError", "the registry's refusal, not the plugin's panic: {}", e.message());
    assert!(
        e.message().contains("\"testing.Pair\" is already registered with fields [\"first\", \"second\"]")
            && e.message().contains("[\"left\", \"right\"]"),
        "{}",
        e.message()
    );
    drop(e);
    assert!(
        std::ptr::eq(types::type_info(testing::Pair::type_index()).unwrap(), pair),
        "the registered Pair is untouched"
    );
    let p = common::call("testing.make_pair", &[AnyView::int(1), AnyView::int(2)]).unwrap().into_object().unwrap();
    assert_eq!(types::get_field(&p, "first").unwrap().view().as_int(), Some(1));
    drop(p);
    assert_eq!(alloc::live_objects(), before);
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn the_same_file_under_two_paths_is_one_module_and_a_copy_is_another() {
    let _g = common::serial();
    let original = plugin::load_module(&sample()).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("two_paths");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("libsample_link.so");
    std::os::unix::fs::symlink(sample(), &link).unwrap();
    let hard = dir.join("libsample_hard.so");
    let hard_ok = std::fs::hard_link(sample(), &hard).is_ok(); // another file system: no hard link
    let copy = dir.join("libsample_copy.so");
    std::fs::copy(sample(), &copy).unwrap();

    let via_link = plugin::load_module(link.to_str().unwrap()).unwrap();
    assert!(ObjectArc::ptr_eq(&via_link, &original), "a symbolic link is the same file");
    if hard_ok {
        let via_hard = plugin::load_module(hard.to_str().unwrap()).unwrap();
        assert!(ObjectArc::ptr_eq(&via_hard, &original), "a hard link is the same file (same inode)");
    }
    let copied = plugin::load_module(copy.to_str().unwrap()).unwrap();
    let before = alloc::live_objects(); // the copy's module and its functions stay loaded
    assert!(!ObjectArc::ptr_eq(&copied, &original), "a copy is another file, another module");
    assert_eq!(copied.types(), original.types(), "the same key with the same layout: one type");
    let c = copied.function("make_counter").unwrap().call(&[AnyView::int(7)]).unwrap().into_object().unwrap();
    assert_eq!(c.type_index(), original.types()[0]);
    // The registry's accessors (the original's code) read the copy's objects: same layout.
    assert_eq!(types::get_field(&c, "count").unwrap().view().as_int(), Some(7));
    let d = original.function("make_counter").unwrap().call(&[AnyView::int(1)]).unwrap().into_object().unwrap();
    assert_eq!(types::get_field(&d, "count").unwrap().view().as_int(), Some(1));
    assert!(ObjectArc::ptr_eq(&plugin::load_module(copy.to_str().unwrap()).unwrap(), &copied));
    drop((c, d, copied));
    assert_eq!(alloc::live_objects(), before, "the copy's objects were freed (by the copy's code)");
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn a_directory_and_a_bare_name_resolve_by_the_documented_rule() {
    let _g = common::serial();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let e = plugin::load_module(dir.to_str().unwrap()).unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("it is a directory, not a shared library file"), "{}", e.message());
    let e = plugin::load_module("").unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    // A bare name is a path in the working directory, never a search of the library path:
    // libc.so.6 is on every loader path, and still "no such file" here.
    let e = plugin::load_module("libc.so.6").unwrap_err();
    assert_eq!(e.kind(), "ValueError");
    assert!(e.message().contains("no such file in the working directory"), "{}", e.message());
    let sample = std::path::PathBuf::from(sample());
    let cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(sample.parent().unwrap()).unwrap();
    let bare = plugin::load_module(sample.file_name().unwrap().to_str().unwrap());
    std::env::set_current_dir(cwd).unwrap();
    assert!(ObjectArc::ptr_eq(&bare.unwrap(), &plugin::load_module(sample.to_str().unwrap()).unwrap()));
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn a_module_manifest_names_each_item_and_a_changed_one_is_caught() {
    use tether_core::manifest::{check_manifest, module_manifest};
    let m = plugin::load_module(&built("tether-test-plugin")).unwrap();
    let manifest = module_manifest(&m);
    let items: Vec<&str> = manifest.iter().map(|e| e.item.as_str()).collect();
    assert!(items.contains(&"function greet") && items.contains(&"type sample.Counter"), "{items:?}");
    let by = manifest.iter().find(|e| e.item == "method sample.Counter.increment_by").expect("the method");
    assert_eq!(by.shape, "method (positional self: sample.Counter, by: int = 1) -> int");
    let recorded: Vec<(String, String)> = manifest.iter().map(|e| (e.item.clone(), e.hash.clone())).collect();
    assert_eq!(check_manifest(&m, &recorded), Ok(()));
    let mut stale = recorded.clone();
    stale.iter_mut().find(|(item, _)| item == "method sample.Counter.increment_by").unwrap().1 = "0".repeat(16);
    stale.retain(|(item, _)| item != "function greet");
    stale.push(("function gone".into(), "1".repeat(16)));
    let e = check_manifest(&m, &stale).unwrap_err();
    assert!(e.contains("method sample.Counter.increment_by changed (now method (positional self: sample.Counter, by: int = 1) -> int)"), "{e}");
    assert!(e.contains("function gone is gone") && e.contains("function greet is new"), "{e}");
    let text: String = recorded.iter().map(|(item, hash)| format!("{item}\t{hash}\n")).collect();
    assert_eq!(tether_core::manifest::parse_recorded(&text), recorded, "the text form Node and Java record");
}
