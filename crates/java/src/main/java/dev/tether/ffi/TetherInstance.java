package dev.tether.ffi;

/** The wrapper of a native object of a registered type (anything but the builtin containers). */
public final class TetherInstance implements TetherObject, Tied {
    private final NativeRef ref;

    TetherInstance(long handle, long generation, int typeIndex) {
        this.ref = new NativeRef(this, handle, generation, typeIndex);
    }

    @Override
    public NativeRef nativeRef() {
        return ref;
    }

    @Override
    public String typeKey() {
        return ObjectOps.typeKey(ref);
    }

    @Override
    public TetherType type() {
        return TetherType.of(ref.typeIndex);
    }

    @Override
    public Object get(String field) {
        return ObjectOps.get(this, ref, field);
    }

    @Override
    public void set(String field, Object value) {
        ObjectOps.set(this, ref, field, value);
    }

    @Override
    public Object call(String method, Object... args) {
        return ObjectOps.call(this, ref, method, args);
    }

    @Override
    public void close() {
        ref.close();
    }

    @Override
    public boolean isClosed() {
        return ref.isClosed();
    }

    @Override
    public String toString() {
        return ObjectOps.describe(this, ref);
    }
}
