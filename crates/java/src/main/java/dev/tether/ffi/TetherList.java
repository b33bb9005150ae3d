package dev.tether.ffi;

import java.lang.ref.Cleaner;
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
    final long word;
    /** Its Cleaner's registration ({@link NativeRef#register}); {@code close()} runs it. */
    final Cleaner.Cleanable cleanable;

    TetherList(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.cleanable = NativeRef.register(this, handle, word);
    }

    /** The live handle; throws if this wrapper was closed. */
    long handle() {
        return NativeRef.handle(handle, word);
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
        return isClosed() ? "<closed tether.Array>" : super.toString();
    }
}
