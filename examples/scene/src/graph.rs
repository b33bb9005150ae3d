//! Scene, Node and Transform, exported with the `#[tether::...]` macros.

use std::sync::Mutex;

use tether::containers::ArrayObj;
use tether::{Any, AnyView, Callback, Error, Function, ObjectArc, Result, WeakObjectArc};

/// A position in the scene. `Node.transform` returns the same Transform object until it is
/// replaced.
#[tether::object("scene.Transform")]
pub struct Transform {
    /// x coordinate
    #[tether(field)]
    pub x: f64,
    /// y coordinate
    #[tether(field)]
    pub y: f64,
    /// z coordinate
    #[tether(field)]
    pub z: f64,
}

#[tether::methods]
impl Transform {
    #[tether(constructor)]
    pub fn new(x: f64, y: f64, z: f64) -> Self {
        Transform { x, y, z }
    }
}

/// A named node of a scene graph. Children are an immutable Array replaced on change (copy
/// on write), so a fetched `children` stays valid while the tree changes.
#[tether::object("scene.Node")]
pub struct Node {
    /// The node's name.
    #[tether(field)]
    name: String,
    transform: Mutex<ObjectArc<Transform>>,
    children: Mutex<ObjectArc<ArrayObj>>,
    parent: Mutex<Option<WeakObjectArc<Node>>>,
}

/// A scene graph with event listeners: a root node, and listeners called on each emit.
#[tether::object("scene.Scene")]
pub struct Scene {
    /// The root node.
    #[tether(field)]
    root: ObjectArc<Node>,
    listeners: Mutex<Vec<(String, Function)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[tether::methods]
impl Node {
    #[tether(constructor)]
    pub fn new(name: String) -> ObjectArc<Node> {
        ObjectArc::new(Node {
            name,
            transform: Mutex::new(ObjectArc::new(Transform { x: 0.0, y: 0.0, z: 0.0 })),
            children: Mutex::new(ArrayObj::new(Vec::new())),
            parent: Mutex::new(None),
        })
    }

    /// The node's position (the same object until replaced).
    #[tether(getter)]
    pub fn transform(&self) -> ObjectArc<Transform> {
        lock(&self.transform).clone()
    }

    #[tether(setter)]
    pub fn set_transform(&self, transform: ObjectArc<Transform>) {
        *lock(&self.transform) = transform;
    }

    /// The child nodes (an Array, replaced when the tree changes).
    #[tether(getter)]
    pub fn children(&self) -> ObjectArc<ArrayObj> {
        lock(&self.children).clone()
    }

    /// The parent node, or None for a root.
    #[tether(getter)]
    pub fn parent(&self) -> Option<ObjectArc<Node>> {
        lock(&self.parent).as_ref().and_then(WeakObjectArc::upgrade)
    }
}

/// What Rust code uses and no language sees.
impl Node {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The children as typed nodes.
    pub fn child_nodes(&self) -> Vec<ObjectArc<Node>> {
        let children = lock(&self.children).clone();
        children.items().iter().filter_map(|c| c.clone().into_object()?.try_cast::<Node>().ok()).collect()
    }

    /// Is `other` this node or one of its ancestors?
    fn has_ancestor_or_self(this: &ObjectArc<Node>, other: &ObjectArc<Node>) -> bool {
        let mut cur = Some(this.clone());
        while let Some(n) = cur {
            if ObjectArc::ptr_eq(&n, other) {
                return true;
            }
            cur = n.parent();
        }
        false
    }
}

#[tether::methods]
impl Scene {
    #[tether(constructor)]
    pub fn new(root_name: String) -> ObjectArc<Scene> {
        ObjectArc::new(Scene { root: Node::new(root_name), listeners: Mutex::new(Vec::new()) })
    }

    /// The node with this name, depth-first (KeyError if none).
    pub fn find(&self, name: &str) -> Result<ObjectArc<Node>> {
        let mut stack = vec![self.root.clone()];
        while let Some(n) = stack.pop() {
            if n.name == name {
                return Ok(n);
            }
            let mut kids = n.child_nodes();
            kids.reverse();
            stack.extend(kids);
        }
        Err(Error::key(format!("no node named {name:?}")))
    }

    /// Attach child under parent (ValueError if child is parent or one of its ancestors),
    /// detaching it from its old parent.
    pub fn add(&self, parent: &ObjectArc<Node>, child: &ObjectArc<Node>) -> Result<()> {
        if Node::has_ancestor_or_self(parent, child) {
            return Err(Error::value(format!(
                "cannot add node {:?} under {:?}: it would become its own ancestor",
                child.name, parent.name
            )));
        }
        if let Some(old) = child.parent() {
            let mut kids = lock(&old.children);
            let kept = kids
                .items()
                .iter()
                .filter(|c| c.view().as_object_ptr() != Some(ObjectArc::as_ptr(child)))
                .cloned()
                .collect();
            *kids = ArrayObj::new(kept);
        }
        {
            let mut kids = lock(&parent.children);
            let mut items: Vec<Any> = kids.items().to_vec();
            items.push(Any::object(child.clone().into()));
            *kids = ArrayObj::new(items);
        }
        *lock(&child.parent) = Some(ObjectArc::downgrade(parent));
        self.emit("added", Any::object(child.clone().into()))
    }

    /// Call callback(event, payload) on each emit of event.
    pub fn on(&self, event: String, callback: Function) {
        lock(&self.listeners).push((event, callback));
    }

    /// Remove the listener callback (the same function object passed to on); True if it was
    /// there.
    pub fn off(&self, event: &str, callback: &Function) -> bool {
        let mut listeners = lock(&self.listeners);
        let before = listeners.len();
        listeners.retain(|(e, f)| !(e == event && f.as_object_ptr() == callback.as_object_ptr()));
        listeners.len() != before
    }

    /// Call the listeners of event with payload; the first error stops the emission.
    pub fn emit(&self, event: &str, payload: Any) -> Result<()> {
        let targets: Vec<Function> =
            lock(&self.listeners).iter().filter(|(e, _)| e == event).map(|(_, f)| f.clone()).collect();
        for f in targets {
            f.call(&[AnyView::raw_str(event), payload.view()])?;
        }
        Ok(())
    }

    /// Depth-first callback(node, depth) over the tree; returns the node count.
    pub fn visit(&self, callback: Callback<(ObjectArc<Node>, i64), Any>) -> Result<i64> {
        let mut stack = vec![(self.root.clone(), 0i64)];
        let mut count = 0;
        while let Some((n, depth)) = stack.pop() {
            callback.call((n.clone(), depth))?;
            count += 1;
            let mut kids = n.child_nodes();
            kids.reverse();
            stack.extend(kids.into_iter().map(|k| (k, depth + 1)));
        }
        Ok(count)
    }

    /// The tree as indented text, one node per line with its position.
    pub fn dump(&self) -> String {
        let mut out = String::new();
        let mut stack = vec![(self.root.clone(), 0usize)];
        while let Some((n, depth)) = stack.pop() {
            let t = lock(&n.transform).clone();
            out.push_str(&format!("{}{} ({}, {}, {})\n", "  ".repeat(depth), n.name, t.x, t.y, t.z));
            let mut kids = n.child_nodes();
            kids.reverse();
            stack.extend(kids.into_iter().map(|k| (k, depth + 1)));
        }
        out
    }
}
