package dev.tether.ffi;

/** The wrapper of a native object of a registered type (anything but the builtin containers). */
public final class TetherInstance implements TetherObject, Tied {
    final NativeRef ref;

    TetherInstance(long handle, long generation, int typeIndex) {
        this.ref = new NativeRef(this, handle, generation, typeIndex);
    }

    @Override
    public NativeRef nativeRef() {
        return ref;
    }

    @Override
    public String toString() {
        return ObjectOps.describe(this, ref);
    }
}
