//! Loading plugins: a Rust plugin's objects and types live in the host's registries.
//! (Its own test binary: `live_objects` is process-wide.)

use tether_core::*;

fn plugin_path(name: &str) -> String {
    let status = std::process::Command::new(env!("CARGO"))
        .args(["build", "-p", name])
        .status()
        .expect("cargo build");
    assert!(status.success());
    let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../target").into());
    format!("{target}/debug/lib{}.so", name.replace('-', "_"))
}

#[test]
fn loads_sample_plugin() {
    init();
    let m = plugin::load_module(&plugin_path("tether-test-plugin")).unwrap();
    let before = alloc::live_objects();
    let greet = m.function("greet").unwrap();
    assert_eq!(greet.call(&[AnyView::raw_str("bob")]).unwrap().view().as_str(), Some("hello, bob"));
    let make = m.function("make_counter").unwrap();
    let c = make.call(&[AnyView::int(5)]).unwrap().into_object().unwrap();
    assert_eq!(alloc::live_objects(), before + 1, "plugin objects are counted by the host registry");
    let info = types::type_info(c.type_index()).unwrap();
    assert_eq!(info.key(), "sample.Counter");
    let inc = info.method("increment").unwrap().func();
    assert_eq!(inc.call(&[AnyView::object(&c)]).unwrap().view().as_int(), Some(6));
    assert_eq!(types::get_field(&c, "count").unwrap().view().as_int(), Some(6));
    drop(c);
    assert_eq!(alloc::live_objects(), before, "the plugin's object was freed through the host");
    let e = plugin::load_module(&plugin_path("tether-test-plugin-bad-abi")).unwrap_err();
    assert!(e.message().contains("ABI 99.0"), "{}", e.message());
    let e = plugin::load_module("/nonexistent/libx.so").unwrap_err();
    assert!(e.message().contains("no such file"), "{}", e.message());
}
