//! Test plugin: one type and two functions, exported through the plugin ABI.

use std::sync::atomic::{AtomicI64, Ordering};

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

export_module!(|m| {
    TypeBuilder::<Counter>::new()
        .doc("A counter made by the sample plugin.")
        .field("count", |c: &Counter| c.count.load(Ordering::Relaxed))
        .field_doc("The current count.")
        .method("increment", |c: ObjectArc<Counter>| c.count.fetch_add(1, Ordering::Relaxed) + 1)
        .method_doc("Add one and return the new count.")
        .constructor(Counter::new)
        .register();
    m.object_type::<Counter>()?;
    m.function("greet", Function::from_typed("sample.greet", |name: String| format!("hello, {name}")))?;
    m.function("make_counter", Function::from_typed("sample.make_counter", Counter::new))?;
    Ok(())
});
