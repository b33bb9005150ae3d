package dev.tether.ffi;

import java.lang.ref.Reference;
import java.util.AbstractList;
import java.util.RandomAccess;

/**
 * A native Array ({@code tether.Array}) as a read-only {@link java.util.List}. Items are
 * converted on each {@link #get(int)}; object items come back as their canonical wrappers, so
 * {@code list.get(0) == list.get(0)}. Equality and hash code follow the {@code List} contract.
 */
public final class TetherList extends AbstractList<Object> implements TetherObject, Tied, RandomAccess {
    private final NativeRef ref;

    TetherList(long handle, long generation, int typeIndex) {
        this.ref = new NativeRef(this, handle, generation, typeIndex);
    }

    @Override
    public NativeRef nativeRef() {
        return ref;
    }

    @Override
    public Object get(int index) {
        try {
            return Native.arrayGet(ref.handle(), index);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public int size() {
        try {
            return Native.arrayLen(ref.handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return ref.isClosed() ? "<closed tether.Array>" : super.toString();
    }
}
