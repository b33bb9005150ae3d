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
    /** The handle, negative once closed (see {@link NativeRef}); read by calls with {@link #word}. */
    long handle;
    /** How this wrapper passes itself to a call native (see {@link NativeRef}). */
    long word;
    final NativeRef ref;

    TetherList(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.ref = new NativeRef(this, handle, word);
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
    public Object get(int index) {
        try {
            return Native.arrayGet(handle(), index);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public int size() {
        try {
            return Native.arrayLen(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return ref.isClosed() ? "<closed tether.Array>" : super.toString();
    }
}
