//! Test plugin: one type and two functions, exported through the plugin ABI.

use std::sync::atomic::{AtomicI64, Ordering};

use tether_core::signature::{DefaultValue, Param, Signature, Ty};
use tether_core::{export_module, Function, ObjectArc, TypeBuilder};

/// `sample.Counter`: an integer that counts up.
pub struct Counter {
    count: AtomicI64,
}
tether_core::declare_object!(Counter, "sample.Counter");

impl Counter {
    fn new(start: i64) -> ObjectArc<Counter> {
        ObjectArc::new(Counter { count: AtomicI64::new(start) })
    }
}

/// `sample.Counter.increment_by(by=1)`: a method with a snake_case name and a default.
fn increment_by() -> Function {
    let signature = Signature {
        params: vec![
            Param::new("self", Ty::Object("sample.Counter")),
            Param::new("by", Ty::Int).with_default(DefaultValue::Int(1)),
        ],
        result: Ty::Int,
        receiver: true,
    }
    .method()
    .intern()
    .expect("increment_by's signature is valid");
    Function::from_typed("sample.Counter.increment_by", |c: ObjectArc<Counter>, by: i64| {
        c.count.fetch_add(by, Ordering::Relaxed) + by
    })
    .with_signature(signature)
}

export_module!(|m| {
    TypeBuilder::<Counter>::new()
        .doc("A counter made by the sample plugin.")
        .field("count", |c: &Counter| c.count.load(Ordering::Relaxed))
        .field_doc("The current count.")
        .field("is_even", |c: &Counter| c.count.load(Ordering::Relaxed) % 2 == 0)
        .field_doc("Whether the count is even (a snake_case name, for the frontends' naming rules).")
        .method("increment", |c: ObjectArc<Counter>| c.count.fetch_add(1, Ordering::Relaxed) + 1)
        .method_doc("Add one and return the new count.")
        .method_function("increment_by", "Add `by` (1 unless given) and return the new count.", increment_by(), false)
        .constructor(Counter::new)
        .params(&["start"])
        .register();
    m.object_type::<Counter>()?;
    m.function("greet", Function::from_typed("sample.greet", |name: String| format!("hello, {name}")))?;
    m.function("make_counter", Function::from_typed("sample.make_counter", Counter::new))?;
    Ok(())
});
