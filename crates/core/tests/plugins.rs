//! Loading Rust plugins: a plugin's objects and types live in the host's registries, and an
//! ABI-mismatched plugin is refused. The plugins are found through TETHER_TEST_PLUGIN /
//! TETHER_TEST_PLUGIN_BAD_ABI (set by `cargo xtask test`), else built here with cargo.

mod common;

use tether_core::*;

fn plugin_path(env_var: &str, package: &str) -> String {
    if let Ok(path) = std::env::var(env_var) {
        return path;
    }
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-p", package])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .status()
        .expect("cargo build");
    assert!(status.success(), "building {package} failed");
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
    format!("{target}/debug/lib{}.so", package.replace('-', "_"))
}

#[test]
#[cfg_attr(miri, ignore = "builds and dlopens a shared library")]
fn loads_sample_plugin() {
    let _g = common::serial();
    let m = plugin::load_module(&plugin_path("TETHER_TEST_PLUGIN", "tether-test-plugin")).unwrap();
    let before = alloc::live_objects();
    let greet = m.function("greet").unwrap();
    assert_eq!(greet.call(&[AnyView::raw_str("bob")]).unwrap().view().as_str(), Some("hello, bob"));
    let make = m.function("make_counter").unwrap();
    let c = make.call(&[AnyView::int(5)]).unwrap().into_object().unwrap();
    assert_eq!(alloc::live_objects(), before + 1, "plugin objects are counted by the host registry");
    let info = types::type_info(c.type_index()).unwrap();
    assert_eq!(info.key(), "sample.Counter");
    assert_eq!(m.types(), &[c.type_index()]);
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
