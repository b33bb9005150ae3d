//! The example plugin: a scene graph whose nodes every language sees with identity intact.
//!
//! - `scene.Scene(root_name)`: `root`, `find(name)`, `add(parent, child)`, `on(event, cb)`,
//!   `off(event, cb)`, `emit(event, payload)`, `visit(cb)`, `dump()`
//! - `scene.Node(name)`: `name`, `transform` (a `scene.Transform`, settable), `children` (an
//!   Array), `parent` (a Node or None)
//! - `scene.Transform(x, y, z)`: `x`, `y`, `z`
//!
//! Errors: adding a node into its own subtree is a ValueError; an unknown name is a KeyError.

mod graph;

pub use graph::{Node, Scene, Transform};

tether_core::export_module!(|m| {
    graph::register_types();
    m.object_type::<graph::Scene>()?;
    m.object_type::<graph::Node>()?;
    m.object_type::<graph::Transform>()?;
    Ok(())
});
