//! Scene, Node and Transform, and their reflection.

use std::sync::Mutex;

use tether_core::containers::ArrayObj;
use tether_core::{Any, AnyView, Error, Function, ObjectArc, ObjectRef, Result, TypeBuilder, WeakObjectArc};

/// A position; `Node.transform` returns the same Transform object until it is replaced.
pub struct Transform {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}
tether_core::declare_object!(Transform, "scene.Transform");

/// A named node. Children are an immutable Array replaced on change (copy on write), so a
/// fetched `children` stays valid while the tree changes.
pub struct Node {
    name: String,
    transform: Mutex<ObjectArc<Transform>>,
    children: Mutex<ObjectArc<ArrayObj>>,
    parent: Mutex<Option<WeakObjectArc<Node>>>,
}
tether_core::declare_object!(Node, "scene.Node");

/// A scene: a root node and event listeners.
pub struct Scene {
    root: ObjectArc<Node>,
    listeners: Mutex<Vec<(String, Function)>>,
}
tether_core::declare_object!(Scene, "scene.Scene");

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Node {
    pub fn new(name: String) -> ObjectArc<Node> {
        ObjectArc::new(Node {
            name,
            transform: Mutex::new(ObjectArc::new(Transform { x: 0.0, y: 0.0, z: 0.0 })),
            children: Mutex::new(ArrayObj::new(Vec::new())),
            parent: Mutex::new(None),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The children as typed nodes.
    pub fn child_nodes(&self) -> Vec<ObjectArc<Node>> {
        let children = lock(&self.children).clone();
        children.items().iter().filter_map(|c| c.clone().into_object()?.try_cast::<Node>().ok()).collect()
    }

    pub fn parent(&self) -> Option<ObjectArc<Node>> {
        lock(&self.parent).as_ref().and_then(WeakObjectArc::upgrade)
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

impl Scene {
    pub fn new(root_name: String) -> ObjectArc<Scene> {
        ObjectArc::new(Scene { root: Node::new(root_name), listeners: Mutex::new(Vec::new()) })
    }

    /// Attach `child` under `parent`, detaching it from its old parent.
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

    /// The node named `name` (depth-first), or a KeyError.
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

    pub fn on(&self, event: String, cb: Function) {
        lock(&self.listeners).push((event, cb));
    }

    /// Remove the listener `cb` (found by the identity of the function object); true if found.
    pub fn off(&self, event: &str, cb: &Function) -> bool {
        let mut listeners = lock(&self.listeners);
        let before = listeners.len();
        listeners.retain(|(e, f)| !(e == event && f.as_object_ptr() == cb.as_object_ptr()));
        listeners.len() != before
    }

    /// Call every listener of `event` with `payload`; the first error stops the emission.
    pub fn emit(&self, event: &str, payload: Any) -> Result<()> {
        let targets: Vec<Function> =
            lock(&self.listeners).iter().filter(|(e, _)| e == event).map(|(_, f)| f.clone()).collect();
        for f in targets {
            f.call(&[AnyView::raw_str(event), payload.view()])?;
        }
        Ok(())
    }

    /// Depth-first traversal calling `cb(node, depth)`; returns the number of nodes visited.
    pub fn visit(&self, cb: &Function) -> Result<i64> {
        let mut stack = vec![(self.root.clone(), 0i64)];
        let mut count = 0;
        while let Some((n, depth)) = stack.pop() {
            let node = ObjectRef::from(n.clone());
            cb.call(&[AnyView::object(&node), AnyView::int(depth)])?;
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

/// Register the three types' reflection (idempotent).
pub fn register_types() {
    TypeBuilder::<Transform>::new()
        .doc("A position in the scene.")
        .field("x", |t: &Transform| t.x)
        .field_doc("x coordinate")
        .field("y", |t: &Transform| t.y)
        .field_doc("y coordinate")
        .field("z", |t: &Transform| t.z)
        .field_doc("z coordinate")
        .constructor(|x: f64, y: f64, z: f64| ObjectArc::new(Transform { x, y, z }))
        .register();
    TypeBuilder::<Node>::new()
        .doc("A named node of a scene graph.")
        .field("name", |n: &Node| n.name.clone())
        .field_doc("The node's name.")
        .field_rw(
            "transform",
            |n: &Node| lock(&n.transform).clone(),
            |n: &Node, t: ObjectArc<Transform>| {
                *lock(&n.transform) = t;
                Ok(())
            },
        )
        .field_doc("The node's position (the same object until replaced).")
        .field("children", |n: &Node| lock(&n.children).clone())
        .field_doc("The child nodes (an Array, replaced when the tree changes).")
        .field("parent", |n: &Node| n.parent())
        .field_doc("The parent node, or None for a root.")
        .constructor(Node::new)
        .register();
    TypeBuilder::<Scene>::new()
        .doc("A scene graph with event listeners.")
        .field("root", |s: &Scene| s.root.clone())
        .field_doc("The root node.")
        .method("find", |s: ObjectArc<Scene>, name: String| s.find(&name))
        .method_doc("The node with this name (KeyError if none).")
        .method("add", |s: ObjectArc<Scene>, parent: ObjectArc<Node>, child: ObjectArc<Node>| s.add(&parent, &child))
        .method_doc("Attach child under parent (ValueError if child is parent or one of its ancestors).")
        .method("on", |s: ObjectArc<Scene>, event: String, cb: Function| s.on(event, cb))
        .method_doc("Call cb(event, payload) on each emit of event.")
        .method("off", |s: ObjectArc<Scene>, event: String, cb: Function| s.off(&event, &cb))
        .method_doc("Remove the listener cb (the same function object passed to on); True if it was there.")
        .method("emit", |s: ObjectArc<Scene>, event: String, payload: Any| s.emit(&event, payload))
        .method_doc("Call the listeners of event with payload.")
        .method("visit", |s: ObjectArc<Scene>, cb: Function| s.visit(&cb))
        .method_doc("Depth-first cb(node, depth) over the tree; returns the node count.")
        .method("dump", |s: ObjectArc<Scene>| s.dump())
        .method_doc("The tree as indented text.")
        .constructor(Scene::new)
        .register();
}
