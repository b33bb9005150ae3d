package dev.tether.ffi;

import java.lang.ref.Reference;
import java.util.StringJoiner;

/**
 * The reflective operations shared by every wrapper class, and the one place that reaches a
 * wrapper's handle, word and Cleaner registration whatever its class (each wrapper class keeps
 * them in fields of its own: {@link TetherList} and {@link TetherMap} extend the JDK's
 * collections, so the classes share no base; see {@link NativeRef} for the fields).
 */
final class ObjectOps {
    private ObjectOps() {}

    /** The handle field of wrapper {@code o} as it is (negative once closed). */
    private static long rawHandle(Object o) {
        Class<?> c = o.getClass();
        if (c == TetherInstance.class) {
            return ((TetherInstance) o).handle;
        } else if (c == TetherFunction.class) {
            return ((TetherFunction) o).handle;
        } else if (o instanceof TetherWrapper) {
            return ((TetherWrapper) o).handle;
        } else if (c == TetherList.class) {
            return ((TetherList) o).handle;
        } else if (c == TetherMap.class) {
            return ((TetherMap) o).handle;
        }
        return ((TetherModule) o).handle;
    }

    /** The word of wrapper {@code o} (see {@link NativeRef}). */
    static long wordOf(Object o) {
        Class<?> c = o.getClass();
        if (c == TetherInstance.class) {
            return ((TetherInstance) o).word;
        } else if (c == TetherFunction.class) {
            return ((TetherFunction) o).word;
        } else if (o instanceof TetherWrapper) {
            return ((TetherWrapper) o).word;
        } else if (c == TetherList.class) {
            return ((TetherList) o).word;
        } else if (c == TetherMap.class) {
            return ((TetherMap) o).word;
        }
        return ((TetherModule) o).word;
    }

    /** The live handle of wrapper {@code o}; throws if it was closed. */
    static long handleOf(Object o) {
        if (o.getClass() == TetherInstance.class) {
            return ((TetherInstance) o).handle(); // tracks an untracked wrapper
        }
        return NativeRef.handle(rawHandle(o), wordOf(o));
    }

    static int typeIndexOf(Object o) {
        return NativeRef.typeIndex(wordOf(o));
    }

    /** Has wrapper {@code o} been closed? */
    static boolean isClosed(Object o) {
        return rawHandle(o) < 0;
    }

    /**
     * Close wrapper {@code o}: mark its handle closed (later uses throw), then release the
     * native reference (idempotent: a Cleanable runs its action once). Wrappers other than
     * {@link TetherInstance} are registered with their Cleaner when they are made.
     */
    static void close(Object o) {
        Class<?> c = o.getClass();
        if (c == TetherInstance.class) {
            ((TetherInstance) o).closeNow();
        } else if (c == TetherFunction.class) {
            TetherFunction w = (TetherFunction) o;
            w.handle = NativeRef.closedHandle(w.handle);
            w.cleanable.clean();
        } else if (o instanceof TetherWrapper) {
            TetherWrapper w = (TetherWrapper) o;
            w.handle = NativeRef.closedHandle(w.handle);
            w.cleanable.clean();
        } else if (c == TetherList.class) {
            TetherList w = (TetherList) o;
            w.handle = NativeRef.closedHandle(w.handle);
            w.cleanable.clean();
        } else if (c == TetherMap.class) {
            TetherMap w = (TetherMap) o;
            w.handle = NativeRef.closedHandle(w.handle);
            w.cleanable.clean();
        } else {
            TetherModule w = (TetherModule) o;
            w.handle = NativeRef.closedHandle(w.handle);
            w.cleanable.clean();
        }
    }

    static String typeKey(Object wrapper) {
        return Native.typeKey(typeIndexOf(wrapper));
    }

    static Object get(Object wrapper, String field) {
        long word = wordOf(wrapper);
        try {
            long getter = TetherType.of(NativeRef.typeIndex(word)).getter(field);
            if (getter != 0) {
                // The getter is a Function taking the object: the same fast path as a call.
                return Native.call1(getter, word, handleOf(wrapper), wrapper);
            }
            return Native.getField(handleOf(wrapper), wrapper, field); // raises AttributeError
        } finally {
            Reference.reachabilityFence(wrapper);
        }
    }

    static void set(Object wrapper, String field, Object value) {
        int[] kinds = new int[1];
        long[] bits = new long[1];
        Object[] refs = new Object[1];
        Marshal.encode(value, kinds, bits, refs, 0);
        try {
            Native.setField(handleOf(wrapper), wrapper, field, kinds[0], bits[0], refs[0]);
        } finally {
            Reference.reachabilityFence(wrapper);
        }
    }

    static Object call(Object wrapper, String method, Object[] args) {
        long handle = handleOf(wrapper);
        Marshal.Encoded e = Marshal.encodeAll(args, new Marshal.Member(typeIndexOf(wrapper), null, method));
        try {
            return Native.callMethod(handle, wrapper, method, e.kinds, e.bits, e.refs);
        } finally {
            Reference.reachabilityFence(wrapper);
        }
    }

    /** {@code testing.Pair(first=1, second=null)} (fields by their Java names); {@code <closed testing.Pair>} once closed. */
    static String describe(Object wrapper) {
        String key = typeKey(wrapper);
        if (isClosed(wrapper)) {
            return "<closed " + key + ">";
        }
        StringJoiner fields = new StringJoiner(", ", key + "(", ")");
        for (TetherType.Field f : TetherType.of(typeIndexOf(wrapper)).fields()) {
            Object v = get(wrapper, f.name());
            fields.add(f.javaName() + "=" + (v == wrapper ? "<self>" : v instanceof String ? "\"" + v + "\"" : String.valueOf(v)));
        }
        return fields.toString();
    }
}
