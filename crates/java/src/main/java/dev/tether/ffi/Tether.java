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
     */
    public static TetherModule loadModule(String path) {
        return (TetherModule) Native.loadModule(path);
    }

    /** Construct an object of a registered type with its constructor. */
    public static Object construct(String typeKey, Object... args) {
        Marshal.Encoded e = Marshal.encodeAll(args, new Marshal.Member(-1, typeKey, null));
        return Native.construct(typeKey, e.kinds, e.bits, e.refs);
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
