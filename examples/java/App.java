// tether scene example, Java side.
//
// Uses the typed bindings generated for the scene plugin (dev.tether:scene, package
// dev.tether.examples.scene: Scene, Node, Transform; the plugin is packed in that jar, or taken
// from $TETHER_SCENE_PLUGIN when set), builds a small scene graph and shows that every native
// node has exactly one Java wrapper: find() returns the very object you created, an
// IdentityHashMap keyed by node finds its entries again, and off() finds a listener by the
// identity of the callback. No casts, no method names in strings. Exits with status 1 if any
// identity fact fails.

import dev.tether.examples.scene.*;
import dev.tether.ffi.Tether;
import dev.tether.ffi.TetherCallback;
import dev.tether.ffi.TetherError;
import dev.tether.ffi.TetherType;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

public final class App {
    private final List<String> failures = new ArrayList<>();

    /** Print one checked fact; remember it if it does not hold. */
    private void fact(String label, boolean holds) {
        System.out.println("  " + (holds ? "ok  " : "FAIL") + " " + label);
        if (!holds) {
            failures.add(label);
        }
    }

    /** A coordinate the way the plugin's dump() prints it (Rust's `{}` for f64). */
    private static String fmt(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    public static void main(String[] args) {
        String plugin = System.getenv("TETHER_SCENE_PLUGIN");
        if (plugin != null && !plugin.isEmpty()) {
            // Instead of the copy packed in the bindings' jar (the workspace build, say).
            System.setProperty(SceneModule.PLUGIN_PROPERTY, plugin);
        }
        App app = new App();
        app.run(plugin);
        if (!app.failures.isEmpty()) {
            System.out.println("FAILED: " + app.failures.size() + " fact(s) did not hold");
            System.exit(1);
        }
        System.out.println("all facts hold");
    }

    private void run(String plugin) {
        System.out.println("tether scene example (java)");
        SceneModule.module(); // loads the plugin and checks it matches the bindings
        System.out.println("plugin: " + (plugin == null || plugin.isEmpty() ? "libscene.so" : Path.of(plugin).getFileName()));

        // Build the scene: world -> house -> door, world -> tree, with positions.
        Scene scene = new Scene("world");
        Node world = scene.getRoot();
        Node house = new Node("house");
        Node door = new Node("door");
        Node tree = new Node("tree");
        scene.add(world, house);
        scene.add(house, door);
        scene.add(world, tree);
        house.setTransform(new Transform(4.0, 0.0, -2.0));
        door.setTransform(new Transform(4.5, 0.0, -1.5));
        tree.setTransform(new Transform(-3.0, 0.0, 6.0));

        // Signatures come from the plugin's Rust source: names, types, docs.
        System.out.println("signatures:");
        TetherType.Method find = Tether.type(Scene.KEY).method("find");
        System.out.println("  " + find.signature());
        fact("find has one parameter, name", find.parameters().size() == 1 && find.parameters().get(0).name().equals("name"));

        System.out.println("identity:");
        fact("scene.find(\"door\") == scene.find(\"door\")", scene.find("door") == scene.find("door"));
        fact("scene.find(\"door\") == door (the wrapper we created)", scene.find("door") == door);
        fact("scene.getRoot() == scene.find(\"world\")", scene.getRoot() == scene.find("world"));
        fact("door.getParent() == house", door.getParent() == house);
        fact("house.getChildren().get(0) == door", house.getChildren().get(0) == door);
        fact("door.getTransform() == door.getTransform()", door.getTransform() == door.getTransform());

        // Per-language data keyed by node: an IdentityHashMap compares keys with ==.
        Map<Node, String> labels = new IdentityHashMap<>();
        labels.put(world, "the root");
        labels.put(house, "a house");
        labels.put(door, "the front door");
        labels.put(tree, "an oak");
        String found = labels.get(scene.find("door"));
        System.out.println("per-node data (IdentityHashMap): labels.get(scene.find(\"door\")) = '" + found + "'");
        fact("IdentityHashMap lookup through find() finds the entry", "the front door".equals(found));

        // Listeners: off() finds the listener by the identity of the callback.
        List<Object[]> heard = new ArrayList<>();
        TetherCallback onAdded = cbArgs -> {
            heard.add(cbArgs);
            return null;
        };
        scene.on("added", onAdded);
        Node window = new Node("window");
        window.setTransform(new Transform(5.0, 1.5, -2.0));
        scene.add(house, window);
        List<String> events = new ArrayList<>();
        for (Object[] e : heard) {
            // The payload is an Any in the plugin's signature: a type test, not a cast.
            events.add(e[0] + " " + (e[1] instanceof Node n ? n.getName() : String.valueOf(e[1])));
        }
        System.out.println("listener: heard " + heard.size() + " event(s): " + String.join(", ", events));
        fact("the listener's payload is the window wrapper", heard.size() == 1 && heard.get(0)[1] == window);
        TetherCallback lookalike = cbArgs -> null;
        fact("scene.off(\"added\", cbArgs -> null) is false (a different callback)", !scene.off("added", lookalike));
        fact("scene.off(\"added\", onAdded) is true (found by identity)", scene.off("added", onAdded));
        Node lamp = new Node("lamp");
        lamp.setTransform(new Transform(-1.0, 2.5, 0.0));
        scene.add(world, lamp);
        fact("a removed listener is not called again", heard.size() == 1);

        // visit(cb) calls back into Java with the canonical wrappers, typed: (Node, long).
        List<String> lines = new ArrayList<>();
        List<Node> labelled = new ArrayList<>();
        long count = scene.visit((node, depth) -> {
            Transform t = node.getTransform();
            lines.add("  ".repeat((int) depth) + node.getName()
                    + " (" + fmt(t.getX()) + ", " + fmt(t.getY()) + ", " + fmt(t.getZ()) + ")");
            if (labels.containsKey(node)) {
                labelled.add(node);
            }
            return null;
        });
        System.out.println("visit: " + count + " nodes, " + labelled.size() + " found in the IdentityHashMap");
        List<Node> expected = List.of(world, house, door, tree);
        boolean sameWrappers = labelled.size() == expected.size();
        for (int i = 0; sameWrappers && i < expected.size(); i++) {
            sameWrappers = labelled.get(i) == expected.get(i);
        }
        fact("visit passed the wrappers keyed in the IdentityHashMap", sameWrappers);

        System.out.println("errors:");
        expectError("scene.add(door, world)", "ValueError", IllegalArgumentException.class,
                () -> scene.add(door, world));
        expectError("scene.find(\"attic\")", "KeyError", java.util.NoSuchElementException.class,
                () -> scene.find("attic"));

        String dump = scene.dump();
        System.out.println("--- tree ---");
        System.out.print(dump);
        System.out.println("--- end tree ---");
        fact("the tree computed in Java from visit() equals scene.dump()",
                lines.equals(Arrays.asList(dump.split("\n"))));
    }

    /** Runs `action`, which must throw a tether error of `kind` that is also a `jdkClass`. */
    private void expectError(String label, String kind, Class<? extends RuntimeException> jdkClass, Runnable action) {
        try {
            action.run();
            fact(label + " throws a " + kind, false);
        } catch (RuntimeException e) {
            if (!(e instanceof TetherError te) || !te.kind().equals(kind) || !jdkClass.isInstance(e)) {
                throw e;
            }
            System.out.println("  " + label + " -> " + te.kind() + ": " + e.getMessage());
        }
    }
}
