package dev.tether.ffi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Entry points: global functions, types, modules and container construction. */
public final class Tether {
    private Tether() {}

    static {
        Native.ensureLoaded();
    }

    /**
     * The deepest nesting of {@code List}s, {@code Map}s and object arrays converted to native
     * Arrays and Maps; a deeper value, or one that contains itself, throws
     * {@link TetherValueError} before reaching native code.
     */
    public static final int MAX_NESTING_DEPTH = (int) Native.constant("MAX_NESTING_DEPTH");

    /** The global function registered under {@code name}; {@link TetherKeyError} if none is. */
    public static TetherFunction getGlobalFunc(String name) {
        return (TetherFunction) Native.getGlobal(name);
    }

    /** Every registered global function name, sorted. */
    public static List<String> listGlobalFuncs() {
        return List.of(Native.listGlobals());
    }

    /**
     * Load a tether plugin (a shared library exporting {@code tether_module_init}). Loading the
     * same file again returns the same module. A missing file, a file that is not a plugin, or
     * a plugin built for another ABI throws {@link TetherValueError} / {@link TetherException}.
     *
     * <p>Generated bindings of the plugin's types on the class path or module path
     * ({@link TetherBindings}) are bound to it, so its objects are instances of their
     * generated classes however the plugin was loaded (unless the bindings were generated
     * from another version of it).
     */
    public static TetherModule loadModule(String path) {
        TetherModule module = (TetherModule) Native.loadModule(path);
        Bindings.offer(module);
        return module;
    }

    /**
     * Construct an object of a registered type with its constructor. {@code typeKey} is the
     * full key ({@code "scene.Node"}) or, as in Python and Node, the short name
     * ({@code "Node"}) when exactly one registered type has it.
     */
    public static Object construct(String typeKey, Object... args) {
        return constructAmong(Tether::typeKeys, typeKey, args);
    }

    static Object constructAmong(java.util.function.Supplier<List<String>> keys, String typeKey, Object... args) {
        String key = resolveKey(keys, typeKey);
        Marshal.Encoded e = Marshal.encodeAll(args, new Marshal.Member(-1, key, null));
        return Native.construct(key, e.kinds, e.bits, e.refs);
    }

    /** {@code name} itself if registered, else the one key among {@code keys} whose last part it is. */
    static String resolveKey(java.util.function.Supplier<List<String>> keys, String name) {
        if (name == null || name.indexOf('.') >= 0 || Native.typeIndexOf(name) >= 0) {
            return name;
        }
        String found = null;
        for (String k : keys.get()) {
            if (k.endsWith("." + name)) {
                if (found != null) {
                    throw new TetherKeyError("KeyError", "\"" + name + "\" is ambiguous: " + found + " and " + k
                            + " (give the full type key)", "");
                }
                found = k;
            }
        }
        return found == null ? name : found;
    }

    /**
     * Make {@code cls} the wrapper class of the objects of type {@code typeKey}: every object
     * of that type returned to Java from now on is made by {@code factory} (generated bindings
     * call this for each class they define; see docs/bindings.md). Registering the same class
     * again does nothing; another class for a bound key throws {@link TetherValueError}.
     */
    public static <T extends TetherWrapper> void registerClass(String typeKey, Class<T> cls,
            java.util.function.Function<TetherWrapper.Token, T> factory) {
        int index = Native.typeIndexOf(typeKey);
        if (index < 0) {
            throw new TetherKeyError("KeyError", "no type is registered as \"" + typeKey + "\"", "");
        }
        Wrappers.register(index, cls, factory);
    }

    /**
     * Check that generated bindings match the loaded {@code module}: {@code manifest} is what
     * they recorded, one {@code {item, hash}} pair per exported item (the core's module
     * manifest). A {@link TetherValueError} naming every item added, removed or changed since
     * the bindings were generated if they differ (stale bindings).
     */
    public static void checkBindings(TetherModule module, String[][] manifest) {
        StringBuilder text = new StringBuilder();
        for (String[] entry : manifest) {
            if (entry.length != 2) {
                throw new TetherValueError("ValueError", "a manifest entry is {item, hash}", "");
            }
            text.append(entry[0]).append('\t').append(entry[1]).append('\n');
        }
        module.checkBindings(text.toString());
    }

    /** Reflection for a registered type; {@link TetherKeyError} if no type has that key. */
    public static TetherType type(String typeKey) {
        int index = Native.typeIndexOf(typeKey);
        if (index < 0) {
            throw new TetherKeyError("KeyError", "no type is registered as \"" + typeKey + "\"", "");
        }
        return TetherType.of(index);
    }

    /** Every registered type key. */
    public static List<String> typeKeys() {
        return List.of(Native.typeKeys());
    }

    /** A native Array of {@code items} (each converted like a call argument). */
    public static TetherList array(Object... items) {
        return (TetherList) getGlobalFunc("tether.Array").call(items == null ? new Object[] {null} : items);
    }

    /** A native Map with the entries of {@code entries}, in its iteration order. */
    public static TetherMap map(Map<?, ?> entries) {
        List<Object> flat = new ArrayList<>(entries.size() * 2);
        for (Map.Entry<?, ?> e : entries.entrySet()) {
            flat.add(e.getKey());
            flat.add(e.getValue());
        }
        return (TetherMap) getGlobalFunc("tether.Map").call(flat.toArray());
    }

    /** Native objects allocated and not yet freed, process-wide (a diagnostic). */
    public static long liveObjects() {
        return Native.liveObjects();
    }
}
