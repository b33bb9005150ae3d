//! Test plugin registering the key `testing.Pair` (the core's own type, always registered
//! first) with other fields: the host's registry refuses it, and loading this plugin is a
//! ValueError naming the key, in every frontend. It uses the panicking `register()`, as most
//! plugins do: the registry's refusal, not the panic, is what the host reports.

use tether_core::{export_module, ObjectArc, TypeBuilder};

/// Not the core's Pair: other fields, another size.
pub struct NotAPair {
    left: i64,
    right: i64,
    extra: [u64; 4],
}
tether_core::declare_object!(NotAPair, "testing.Pair");

export_module!(|m| {
    TypeBuilder::<NotAPair>::new()
        .field("left", |p: &NotAPair| p.left)
        .field("right", |p: &NotAPair| p.right + p.extra[0] as i64)
        .constructor(|left: i64, right: i64| ObjectArc::new(NotAPair { left, right, extra: [0; 4] }))
        .register();
    m.object_type::<NotAPair>()?;
    Ok(())
});
