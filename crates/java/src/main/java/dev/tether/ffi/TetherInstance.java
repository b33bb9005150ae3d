package dev.tether.ffi;

/** The wrapper of a native object of a registered type (anything but the builtin containers). */
public final class TetherInstance implements TetherObject, Tied {
    /** The handle, negative once closed (see {@link NativeRef}); read by calls with {@link #word}. */
    long handle;
    /** How this wrapper passes itself to a call native (see {@link NativeRef}). */
    long word;
    final NativeRef ref;

    TetherInstance(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.ref = new NativeRef(this, handle, word);
    }

    /**
     * A wrapper not tied yet, for a constructor call to tie: native code writes {@link #handle}
     * and {@link #word} (see {@link NativeRef#NativeRef()}).
     */
    TetherInstance(int typeIndex, NativeRef unbound) {
        this.word = NativeRef.unboundWord(typeIndex);
        this.ref = unbound;
    }

    /** The live handle; throws if this wrapper was closed. */
    long handle() {
        return NativeRef.handle(handle, word);
    }

    @Override
    public NativeRef nativeRef() {
        return ref;
    }

    @Override
    public String toString() {
        return ObjectOps.describe(this);
    }
}
