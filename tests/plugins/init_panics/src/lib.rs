//! Test plugin whose init panics after it has registered a type (with a field getter) and
//! exported a function: the host must report a `RustPanic` error naming the file, keep the
//! library mapped (the registry holds the getter, plugin code) and keep working.

use tether_core::{export_module, Function, ObjectArc, TypeBuilder};

/// `init_panics.Thing`: registered before the panic, so its getter outlives the failed init.
pub struct Thing {
    value: i64,
}
tether_core::declare_object!(Thing, "init_panics.Thing");

export_module!(|m| {
    TypeBuilder::<Thing>::new()
        .field("value", |t: &Thing| t.value)
        .constructor(|value: i64| ObjectArc::new(Thing { value }))
        .register();
    m.object_type::<Thing>()?;
    m.function("never_exported", Function::from_typed("init_panics.never_exported", || 1i64))?;
    panic!("init_panics: refusing to start");
});
