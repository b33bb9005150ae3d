use tether_core::function::get_global;
use tether_core::*;

#[test]
fn testing_namespace_basics() {
    init();
    let add = get_global("testing.add").unwrap();
    let r = add.call(&[AnyView::int(2), AnyView::int(40)]).unwrap();
    assert_eq!(r.view().as_int(), Some(42));
    let e = add.call(&[AnyView::int(2), AnyView::raw_str("x")]).unwrap_err();
    assert_eq!(e.kind(), "TypeError");
    assert_eq!(e.message(), "testing.add() argument 'b' must be int, not str");
    let e = add.call(&[AnyView::int(2)]).unwrap_err();
    assert_eq!(e.message(), "testing.add() takes 2 arguments but 1 was given");
    let make = get_global("testing.make_pair").unwrap();
    let p = make.call(&[AnyView::int(1), AnyView::raw_str("hello world")]).unwrap();
    let obj = p.into_object().unwrap();
    assert_eq!(types::get_field(&obj, "first").unwrap().view().as_int(), Some(1));
    assert_eq!(types::get_field(&obj, "second").unwrap().view().as_str(), Some("hello world"));
    let echo = get_global("testing.echo").unwrap();
    let back = echo.call(&[AnyView::object(&obj)]).unwrap().into_object().unwrap();
    assert!(back.ptr_eq(&obj));
    let panic = get_global("testing.panic").unwrap();
    let e = panic.call(&[AnyView::raw_str("boom")]).unwrap_err();
    assert_eq!((e.kind(), e.message()), ("RustPanic", "boom"));
}
