//! The example plugin: a scene graph whose nodes every language sees with identity intact.
//!
//! - `scene.Scene(root_name)`: `root`, `find(name)`, `add(parent, child)`, `on(event, callback)`,
//!   `off(event, callback)`, `emit(event, payload)`, `visit(callback)`, `dump()`
//! - `scene.Node(name)`: `name`, `transform` (a `scene.Transform`, settable), `children` (an
//!   Array), `parent` (a Node or None)
//! - `scene.Transform(x, y, z)`: `x`, `y`, `z`
//!
//! Errors: adding a node into its own subtree is a ValueError; an unknown name is a KeyError.
//!
//! Everything a language sees is declared in graph.rs with `#[tether::object]` and
//! `#[tether::methods]`: names, parameter names, docs and types come from the Rust source.

mod graph;

pub use graph::{Node, Scene, Transform};

tether::module! {
    types: [Scene, Node, Transform],
}
