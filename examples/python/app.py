"""tether scene example, Python side.

Uses the typed bindings of the scene plugin (the `scene` package tether-bindgen generates,
which loads the plugin beside it), builds a small scene graph and shows that every native node
has exactly one Python wrapper: `find()` returns the very object you
created, a dict keyed by node finds its entries again, and `off()` finds a listener by the
identity of the callable. Exits with status 1 if any identity fact fails. Checked by
`mypy --strict`.
"""

import inspect
import os
import sys

import scene as scene_mod
from scene import Node, Scene, Transform

failures: list[str] = []


def fact(label: str, holds: bool) -> None:
    """Print one checked fact; remember it if it does not hold."""
    print(f"  {'ok  ' if holds else 'FAIL'} {label}")
    if not holds:
        failures.append(label)


def fmt(v: float) -> str:
    """A coordinate the way the plugin's dump() prints it (Rust's `{}` for f64)."""
    return str(int(v)) if v == int(v) else repr(v)


def main() -> None:
    print("tether scene example (python)")
    print(f"plugin: {os.path.basename(str(scene_mod.plugin.__file__))}")

    # Build the scene: world -> house -> door, world -> tree, with positions.
    scene = Scene("world")
    world = scene.root
    house, door, tree = Node("house"), Node("door"), Node("tree")
    scene.add(world, house)
    scene.add(house, door)
    scene.add(world, tree)
    house.transform = Transform(4, 0, -2)
    door.transform = Transform(4.5, 0, -1.5)
    tree.transform = Transform(-3, 0, 6)

    print("identity:")
    fact('scene.find("door") is scene.find("door")', scene.find("door") is scene.find("door"))
    fact('scene.find("door") is door (the wrapper we created)', scene.find("door") is door)
    fact('scene.root is scene.find("world")', scene.root is scene.find("world"))
    fact("door.parent is house", door.parent is house)
    fact("house.children[0] is door", house.children[0] is door)
    fact("door.transform is door.transform", door.transform is door.transform)

    # Signatures come from the plugin's Rust source: names, types, docs; keywords bind by name.
    print("signatures:")
    print(f"  Scene.find{inspect.signature(Scene.find)}")
    fact('scene.find(name="door") is door (a keyword argument)', scene.find(name="door") is door)
    fact("inspect.signature(Scene.add) names parent and child",
         list(inspect.signature(Scene.add).parameters)[1:] == ["parent", "child"])

    # Per-language data keyed by node: a plain dict works because a node has one wrapper.
    labels = {world: "the root", house: "a house", door: "the front door", tree: "an oak"}
    found = labels[scene.find("door")]
    print(f'per-node data (dict): labels[scene.find("door")] = {found!r}')
    fact("dict lookup through find() finds the entry", found == "the front door")

    # Listeners: off() finds the listener by the identity of the callable.
    heard: list[tuple[str, Node]] = []

    def on_added(event: str, node: Node) -> None:
        heard.append((event, node))

    scene.on("added", on_added)
    window = Node("window")
    window.transform = Transform(5, 1.5, -2)
    scene.add(house, window)
    print(f'listener: heard {len(heard)} event(s): {", ".join(f"{e} {n.name}" for e, n in heard)}')
    fact("the listener's payload is the window wrapper", len(heard) == 1 and heard[0][1] is window)
    fact('scene.off("added", lambda e, n: None) is False (a different callable)',
         scene.off("added", lambda e, n: None) is False)
    fact('scene.off("added", on_added) is True (found by identity)', scene.off("added", on_added) is True)
    lamp = Node("lamp")
    lamp.transform = Transform(-1, 2.5, 0)
    scene.add(world, lamp)
    fact("a removed listener is not called again", len(heard) == 1)

    # visit(cb) calls back into Python with the canonical wrappers.
    lines: list[str] = []
    labelled: list[Node] = []

    def visitor(node: Node, depth: int) -> None:
        t = node.transform
        lines.append(f"{'  ' * depth}{node.name} ({fmt(t.x)}, {fmt(t.y)}, {fmt(t.z)})")
        if node in labels:
            labelled.append(node)

    count = scene.visit(visitor)
    print(f"visit: {count} nodes, {len(labelled)} found in the dict")
    expected = [world, house, door, tree]
    fact("visit passed the wrappers keyed in the dict",
         len(labelled) == len(expected) and all(a is b for a, b in zip(labelled, expected)))

    print("errors:")
    try:
        scene.add(door, world)
        fact("adding a node into its own subtree raises ValueError", False)
    except ValueError as e:
        print(f"  scene.add(door, world) -> {type(e).__name__}: {e}")
    try:
        scene.find("attic")
        fact("an unknown name raises KeyError", False)
    except KeyError as e:
        print(f'  scene.find("attic") -> {type(e).__name__}: {e}')

    dump = scene.dump()
    print("--- tree ---")
    print(dump, end="")
    print("--- end tree ---")
    fact("the tree computed in Python from visit() equals scene.dump()", lines == dump.splitlines())

    if failures:
        print(f"FAILED: {len(failures)} fact(s) did not hold")
        sys.exit(1)
    print("all facts hold")


if __name__ == "__main__":
    main()
