//! `cargo xtask demo`, Rust side: load the scene plugin like any host would and show that
//! the same native object comes back every time (the fact each frontend turns into `is`).

use tether_core::function::get_global;
use tether_core::types::{find_method, get_field, type_index_of, type_info};
use tether_core::{Any, AnyView, Function, ObjectRef, Result};

fn construct(key: &str, args: &[AnyView<'_>]) -> Result<ObjectRef> {
    let index = type_index_of(key).unwrap_or_else(|| panic!("{key} is not registered"));
    let ctor = type_info(index).and_then(|t| t.constructor()).expect("constructor");
    Ok(ctor.call(args)?.into_object().expect("an object"))
}

fn call_method(obj: &ObjectRef, name: &str, args: &[AnyView<'_>]) -> Result<Any> {
    let info = type_info(obj.type_index()).expect("registered type");
    let method = find_method(info, name).unwrap_or_else(|| panic!("{} has no method {name}", info.key()));
    let mut all = vec![AnyView::object(obj)];
    all.extend_from_slice(args);
    method.func().call(&all)
}

fn object(a: Any) -> ObjectRef {
    a.into_object().expect("an object")
}

/// Print an identity fact; the demo fails if any fact is false.
fn fact(ok: &mut bool, label: &str, holds: bool) {
    println!("{label}: {holds}");
    *ok &= holds;
}

fn main() -> Result<()> {
    let mut ok = true;
    let path = std::env::var("TETHER_SCENE_PLUGIN").expect("set TETHER_SCENE_PLUGIN to the scene plugin's path");
    tether_core::init();
    let module = tether_core::plugin::load_module(&path)?;
    println!("loaded {} (types: {})", module.path(), module.types().iter().filter_map(|&i| type_info(i)).map(|t| t.key()).collect::<Vec<_>>().join(", "));

    let baseline = tether_core::alloc::live_objects();
    let scene = construct("scene.Scene", &[AnyView::raw_str("world")])?;
    let root = object(get_field(&scene, "root")?);
    for (parent, child) in [("world", "house"), ("house", "door"), ("world", "tree")] {
        let p = object(call_method(&scene, "find", &[AnyView::raw_str(parent)])?);
        let c = construct("scene.Node", &[AnyView::raw_str(child)])?;
        call_method(&scene, "add", &[AnyView::object(&p), AnyView::object(&c)])?;
    }

    let a = object(call_method(&scene, "find", &[AnyView::raw_str("door")])?);
    let b = object(call_method(&scene, "find", &[AnyView::raw_str("door")])?);
    fact(&mut ok, "find('door') twice -> same native object", a.ptr_eq(&b));
    let t1 = object(get_field(&a, "transform")?);
    let t2 = object(get_field(&a, "transform")?);
    fact(&mut ok, "door.transform twice -> same native object", t1.ptr_eq(&t2));
    let echo = get_global("testing.echo").expect("testing.echo");
    fact(&mut ok, "testing.echo(root) -> same native object", object(echo.call(&[AnyView::object(&root)])?).ptr_eq(&root));

    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = heard.clone();
    let listener = Function::from_packed("demo.listener", move |args| {
        log.lock().unwrap().push(format!("{:?}", args.get(1).map(|v| v.kind_name())));
        Ok(Any::none())
    });
    let listener_obj = ObjectRef::from(listener.0.clone());
    call_method(&scene, "on", &[AnyView::raw_str("added"), AnyView::object(&listener_obj)])?;
    let window = construct("scene.Node", &[AnyView::raw_str("window")])?;
    call_method(&scene, "add", &[AnyView::object(&a), AnyView::object(&window)])?;
    let removed = call_method(&scene, "off", &[AnyView::raw_str("added"), AnyView::object(&listener_obj)])?;
    println!("listener heard {} event(s)", heard.lock().unwrap().len());
    fact(&mut ok, "off(listener) found it by identity", removed.view().as_bool() == Some(true));

    for (what, outcome) in [
        ("adding the root under 'door'", call_method(&scene, "add", &[AnyView::object(&a), AnyView::object(&root)])),
        ("find('attic')", call_method(&scene, "find", &[AnyView::raw_str("attic")])),
    ] {
        let err = outcome.expect_err("an error path");
        println!("{what} -> {}: {}", err.kind(), err.message());
    }

    print!("{}", call_method(&scene, "dump", &[])?.view().as_str().unwrap_or(""));
    drop((scene, root, a, b, t1, t2, window, listener_obj, listener));
    fact(&mut ok, "live objects back to baseline after dropping everything", tether_core::alloc::live_objects() == baseline);
    if !ok {
        eprintln!("demo: an identity fact did not hold");
        std::process::exit(1);
    }
    Ok(())
}
