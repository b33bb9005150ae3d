package dev.tether.ffi;

/** Makes the wrapper for a native object being tied (called from crates/java/src/tie.rs). */
final class Wrappers {
    private Wrappers() {}

    // Builtin type indices, from their one source (tether-core's constants.rs).
    static final int FUNCTION = (int) Native.constant("TYPE_FUNCTION");
    static final int ARRAY = (int) Native.constant("TYPE_ARRAY");
    static final int MAP = (int) Native.constant("TYPE_MAP");
    static final int MODULE = (int) Native.constant("TYPE_MODULE");

    static Object create(long handle, long generation, int typeIndex) {
        if (typeIndex == FUNCTION) {
            return new TetherFunction(handle, generation, typeIndex);
        } else if (typeIndex == ARRAY) {
            return new TetherList(handle, generation, typeIndex);
        } else if (typeIndex == MAP) {
            return new TetherMap(handle, generation, typeIndex);
        } else if (typeIndex == MODULE) {
            return new TetherModule(handle, generation, typeIndex);
        }
        return new TetherInstance(handle, generation, typeIndex);
    }
}
