package dev.tether.ffi;

/** Makes the wrapper for a native object being tied (called from crates/java/src/tie.rs). */
final class Wrappers {
    private Wrappers() {}

    static final int FUNCTION = 68;
    static final int ARRAY = 69;
    static final int MAP = 70;
    static final int MODULE = 71;

    static Object create(long handle, long generation, int typeIndex) {
        switch (typeIndex) {
            case FUNCTION:
                return new TetherFunction(handle, generation, typeIndex);
            case ARRAY:
                return new TetherList(handle, generation, typeIndex);
            case MAP:
                return new TetherMap(handle, generation, typeIndex);
            case MODULE:
                return new TetherModule(handle, generation, typeIndex);
            default:
                return new TetherInstance(handle, generation, typeIndex);
        }
    }
}
