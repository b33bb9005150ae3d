// tether scene example, Java side.
//
// Loads the scene plugin (path in $TETHER_SCENE_PLUGIN), builds a small scene graph and shows
// that every native node has exactly one Java wrapper: find() returns the very object you
// created, an IdentityHashMap keyed by node finds its entries again, and off() finds a listener
// by the identity of the callback. Exits with status 1 if any identity fact fails.

import dev.tether.ffi.Tether;
import dev.tether.ffi.TetherCallback;
import dev.tether.ffi.TetherError;
import dev.tether.ffi.TetherList;
import dev.tether.ffi.TetherModule;
import dev.tether.ffi.TetherObject;
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
    private static String fmt(Object value) {
        double v = (Double) value;
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    private static TetherObject obj(Object value) {
        return (TetherObject) value;
    }

    public static void main(String[] args) {
        String plugin = System.getenv("TETHER_SCENE_PLUGIN");
        if (plugin == null || plugin.isEmpty()) {
            System.err.println("set TETHER_SCENE_PLUGIN to the path of libscene.so (cargo build -p scene)");
            System.exit(2);
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
        TetherModule module = Tether.loadModule(plugin);
        System.out.println("tether scene example (java)");
        System.out.println("plugin: " + Path.of(plugin).getFileName());

        // Build the scene: world -> house -> door, world -> tree, with positions.
        TetherObject scene = obj(module.construct("scene.Scene", "world"));
        TetherObject world = obj(scene.get("root"));
        TetherObject house = obj(module.construct("scene.Node", "house"));
        TetherObject door = obj(module.construct("scene.Node", "door"));
        TetherObject tree = obj(module.construct("scene.Node", "tree"));
        scene.call("add", world, house);
        scene.call("add", house, door);
        scene.call("add", world, tree);
        house.set("transform", module.construct("scene.Transform", 4.0, 0.0, -2.0));
        door.set("transform", module.construct("scene.Transform", 4.5, 0.0, -1.5));
        tree.set("transform", module.construct("scene.Transform", -3.0, 0.0, 6.0));

        // Signatures come from the plugin's Rust source: names, types, docs.
        System.out.println("signatures:");
        TetherType.Method find = Tether.type("scene.Scene").method("find");
        System.out.println("  " + find.signature());
        fact("find has one parameter, name", find.parameters().size() == 1 && find.parameters().get(0).name().equals("name"));

        System.out.println("identity:");
        fact("scene.call(\"find\", \"door\") == scene.call(\"find\", \"door\")",
                scene.call("find", "door") == scene.call("find", "door"));
        fact("scene.call(\"find\", \"door\") == door (the wrapper we created)", scene.call("find", "door") == door);
        fact("scene.get(\"root\") == scene.call(\"find\", \"world\")", scene.get("root") == scene.call("find", "world"));
        fact("door.get(\"parent\") == house", door.get("parent") == house);
        fact("((TetherList) house.get(\"children\")).get(0) == door", ((TetherList) house.get("children")).get(0) == door);
        fact("door.get(\"transform\") == door.get(\"transform\")", door.get("transform") == door.get("transform"));

        // Per-language data keyed by node: an IdentityHashMap compares keys with ==.
        Map<Object, String> labels = new IdentityHashMap<>();
        labels.put(world, "the root");
        labels.put(house, "a house");
        labels.put(door, "the front door");
        labels.put(tree, "an oak");
        String found = labels.get(scene.call("find", "door"));
        System.out.println("per-node data (IdentityHashMap): labels.get(scene.call(\"find\", \"door\")) = '" + found + "'");
        fact("IdentityHashMap lookup through find() finds the entry", "the front door".equals(found));

        // Listeners: off() finds the listener by the identity of the callback.
        List<Object[]> heard = new ArrayList<>();
        TetherCallback onAdded = cbArgs -> {
            heard.add(cbArgs);
            return null;
        };
        scene.call("on", "added", onAdded);
        TetherObject window = obj(module.construct("scene.Node", "window"));
        window.set("transform", module.construct("scene.Transform", 5.0, 1.5, -2.0));
        scene.call("add", house, window);
        List<String> events = new ArrayList<>();
        for (Object[] e : heard) {
            events.add(e[0] + " " + obj(e[1]).get("name"));
        }
        System.out.println("listener: heard " + heard.size() + " event(s): " + String.join(", ", events));
        fact("the listener's payload is the window wrapper", heard.size() == 1 && heard.get(0)[1] == window);
        TetherCallback lookalike = cbArgs -> null;
        fact("scene.call(\"off\", \"added\", cbArgs -> null) is false (a different callback)",
                Boolean.FALSE.equals(scene.call("off", "added", lookalike)));
        fact("scene.call(\"off\", \"added\", onAdded) is true (found by identity)",
                Boolean.TRUE.equals(scene.call("off", "added", onAdded)));
        TetherObject lamp = obj(module.construct("scene.Node", "lamp"));
        lamp.set("transform", module.construct("scene.Transform", -1.0, 2.5, 0.0));
        scene.call("add", world, lamp);
        fact("a removed listener is not called again", heard.size() == 1);

        // visit(cb) calls back into Java with the canonical wrappers.
        List<String> lines = new ArrayList<>();
        List<Object> labelled = new ArrayList<>();
        TetherCallback visitor = cbArgs -> {
            TetherObject node = obj(cbArgs[0]);
            int depth = ((Long) cbArgs[1]).intValue();
            TetherObject t = obj(node.get("transform"));
            lines.add("  ".repeat(depth) + node.get("name")
                    + " (" + fmt(t.get("x")) + ", " + fmt(t.get("y")) + ", " + fmt(t.get("z")) + ")");
            if (labels.containsKey(node)) {
                labelled.add(node);
            }
            return null;
        };
        Object count = scene.call("visit", visitor);
        System.out.println("visit: " + count + " nodes, " + labelled.size() + " found in the IdentityHashMap");
        List<Object> expected = List.of(world, house, door, tree);
        boolean sameWrappers = labelled.size() == expected.size();
        for (int i = 0; sameWrappers && i < expected.size(); i++) {
            sameWrappers = labelled.get(i) == expected.get(i);
        }
        fact("visit passed the wrappers keyed in the IdentityHashMap", sameWrappers);

        System.out.println("errors:");
        expectError("scene.add(door, world)", "ValueError", IllegalArgumentException.class,
                () -> scene.call("add", door, world));
        expectError("scene.find(\"attic\")", "KeyError", java.util.NoSuchElementException.class,
                () -> scene.call("find", "attic"));

        String dump = (String) scene.call("dump");
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
