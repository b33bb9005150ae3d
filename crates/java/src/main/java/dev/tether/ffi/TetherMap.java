package dev.tether.ffi;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * A native Map ({@code tether.Map}) as a read-only {@link java.util.Map}, in insertion order.
 * Lookups go to the native hash index; values that are objects come back as their canonical
 * wrappers ({@code m.get(k) == v}).
 *
 * <p>A Map has no reflected fields, so {@link #get(String)} (which Java picks for a key of
 * static type {@code String}) is the same key lookup as {@link #get(Object)}.
 */
public final class TetherMap extends AbstractMap<Object, Object> implements TetherObject, Tied {
    private static final Object MISSING = new Object();
    /** The handle, negative once closed (see {@link NativeRef}); read by calls with {@link #word}. */
    long handle;
    /** How this wrapper passes itself to a call native (see {@link NativeRef}). */
    final long word;
    /** Its Cleaner's registration ({@link NativeRef#register}); {@code close()} runs it. */
    final Cleaner.Cleanable cleanable;

    TetherMap(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.cleanable = NativeRef.register(this, handle, word);
    }

    /** The live handle; throws if this wrapper was closed. */
    long handle() {
        return NativeRef.handle(handle, word);
    }

    private Object lookup(Object key) {
        int[] kinds = new int[1];
        long[] bits = new long[1];
        Object[] refs = new Object[1];
        try {
            Marshal.encode(key, kinds, bits, refs, 0);
        } catch (IllegalArgumentException unsupported) {
            return MISSING; // a key that cannot cross to native code cannot be in the map
        }
        try {
            return Native.mapGet(handle(), kinds[0], bits[0], refs[0], MISSING);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(refs);
        }
    }

    @Override
    public Object get(Object key) {
        Object v = lookup(key);
        return v == MISSING ? null : v;
    }

    @Override
    public boolean containsKey(Object key) {
        return lookup(key) != MISSING;
    }

    @Override
    public int size() {
        try {
            return Native.mapLen(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public Set<Entry<Object, Object>> entrySet() {
        return new AbstractSet<>() {
            @Override
            public int size() {
                return TetherMap.this.size();
            }

            @Override
            public Iterator<Entry<Object, Object>> iterator() {
                int n = size();
                return new Iterator<>() {
                    private int next;

                    @Override
                    public boolean hasNext() {
                        return next < n;
                    }

                    @Override
                    public Entry<Object, Object> next() {
                        if (next >= n) {
                            throw new NoSuchElementException();
                        }
                        int i = next++;
                        try {
                            long h = handle();
                            return new SimpleImmutableEntry<>(Native.mapKeyAt(h, i), Native.mapValueAt(h, i));
                        } finally {
                            Reference.reachabilityFence(TetherMap.this);
                        }
                    }
                };
            }
        };
    }

    /** The value under {@code key} (see the class comment). */
    @Override
    public Object get(String key) {
        return get((Object) key);
    }

    /** Maps are read-only. */
    @Override
    public void set(String field, Object value) {
        throw new UnsupportedOperationException("a tether.Map is read-only");
    }

    @Override
    public String toString() {
        return isClosed() ? "<closed tether.Map>" : super.toString();
    }
}
