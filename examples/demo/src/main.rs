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

/// Make node `child` at position `xyz` and attach it under `parent` (found by name).
fn add_node(scene: &ObjectRef, parent: &str, child: &str, xyz: [f64; 3]) -> Result<ObjectRef> {
    let p = object(call_method(scene, "find", &[AnyView::raw_str(parent)])?);
    let c = construct("scene.Node", &[AnyView::raw_str(child)])?;
    let t = construct("scene.Transform", &xyz.map(AnyView::float))?;
    tether_core::types::set_field(&c, "transform", AnyView::object(&t))?;
    call_method(scene, "add", &[AnyView::object(&p), AnyView::object(&c)])?;
    Ok(c)
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
    println!(
        "loaded {} (types: {})",
        module.path(),
        module.types().iter().filter_map(|&i| type_info(i)).map(|t| t.key()).collect::<Vec<_>>().join(", ")
    );

    let baseline = tether_core::alloc::live_objects();
    // The same scene as the Python, Node and Java apps: world -> house -> (door, window),
    // world -> tree, world -> lamp, with the same positions (so the tree dumps match).
    let scene = construct("scene.Scene", &[AnyView::raw_str("world")])?;
    let root = object(get_field(&scene, "root")?);
    for (parent, child, [x, y, z]) in
        [("world", "house", [4.0, 0.0, -2.0]), ("house", "door", [4.5, 0.0, -1.5]), ("world", "tree", [-3.0, 0.0, 6.0])]
    {
        add_node(&scene, parent, child, [x, y, z])?;
    }
    let a = object(call_method(&scene, "find", &[AnyView::raw_str("door")])?);
    let b = object(call_method(&scene, "find", &[AnyView::raw_str("door")])?);
    fact(&mut ok, "find('door') twice -> same native object", a.ptr_eq(&b));
    let t1 = object(get_field(&a, "transform")?);
    let t2 = object(get_field(&a, "transform")?);
    fact(&mut ok, "door.transform twice -> same native object", t1.ptr_eq(&t2));
    let echo = get_global("testing.echo").expect("testing.echo");
    fact(
        &mut ok,
        "testing.echo(root) -> same native object",
        object(echo.call(&[AnyView::object(&root)])?).ptr_eq(&root),
    );

    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = heard.clone();
    let listener = Function::from_packed("demo.listener", move |args| {
        log.lock().unwrap().push(format!("{:?}", args.get(1).map(|v| v.kind_name())));
        Ok(Any::none())
    });
    let listener_obj = ObjectRef::from(listener.0.clone());
    call_method(&scene, "on", &[AnyView::raw_str("added"), AnyView::object(&listener_obj)])?;
    let window = add_node(&scene, "house", "window", [5.0, 1.5, -2.0])?;
    let removed = call_method(&scene, "off", &[AnyView::raw_str("added"), AnyView::object(&listener_obj)])?;
    add_node(&scene, "world", "lamp", [-1.0, 2.5, 0.0])?;
    println!("listener heard {} event(s)", heard.lock().unwrap().len());
    fact(&mut ok, "off(listener) found it by identity", removed.view().as_bool() == Some(true));

    for (what, outcome) in [
        ("adding the root under 'door'", call_method(&scene, "add", &[AnyView::object(&a), AnyView::object(&root)])),
        ("find('attic')", call_method(&scene, "find", &[AnyView::raw_str("attic")])),
    ] {
        let err = outcome.expect_err("an error path");
        println!("{what} -> {}: {}", err.kind(), err.message());
    }

    println!("--- tree ---");
    print!("{}", call_method(&scene, "dump", &[])?.view().as_str().unwrap_or(""));
    println!("--- end tree ---");
    drop((scene, root, a, b, t1, t2, window, listener_obj, listener));
    fact(
        &mut ok,
        "live objects back to baseline after dropping everything",
        tether_core::alloc::live_objects() == baseline,
    );
    if !ok {
        eprintln!("demo: an identity fact did not hold");
        std::process::exit(1);
    }
    Ok(())
}
