package dev.tether.ffi;

/** The wrapper of a native object of a registered type (anything but the builtin containers). */
public final class TetherInstance implements TetherObject, Tied {
    final NativeRef ref;

    TetherInstance(long handle, long generation, int typeIndex) {
        this.ref = new NativeRef(this, handle, generation, typeIndex);
    }

    /** A wrapper around an unbound ref, for a constructor call to tie (see {@link NativeRef#NativeRef(int)}). */
    TetherInstance(NativeRef unbound) {
        this.ref = unbound;
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
