package dev.tether.ffi;

import java.lang.ref.Reference;
import java.util.StringJoiner;

/** The reflective operations shared by every wrapper class. */
final class ObjectOps {
    /** The native reference of a wrapper (every {@link TetherObject} is {@link Tied}). */
    static NativeRef refOf(TetherObject o) {
        return ((Tied) o).nativeRef();
    }

    private ObjectOps() {}

    static String typeKey(NativeRef ref) {
        return Native.typeKey(ref.typeIndex);
    }

    static Object get(Object wrapper, NativeRef ref, String field) {
        try {
            long getter = TetherType.of(ref.typeIndex).getter(field);
            if (getter != 0) {
                // The getter is a Function taking the object: the same fast path as a call.
                return Native.call1(getter, Marshal.OBJECT, ref.handle(), wrapper);
            }
            return Native.getField(ref.handle(), wrapper, field); // raises AttributeError
        } finally {
            Reference.reachabilityFence(wrapper);
        }
    }

    static void set(Object wrapper, NativeRef ref, String field, Object value) {
        int[] kinds = new int[1];
        long[] bits = new long[1];
        Object[] refs = new Object[1];
        Marshal.encode(value, kinds, bits, refs, 0);
        try {
            Native.setField(ref.handle(), wrapper, field, kinds[0], bits[0], refs[0]);
        } finally {
            Reference.reachabilityFence(wrapper);
        }
    }

    static Object call(Object wrapper, NativeRef ref, String method, Object[] args) {
        long handle = ref.handle();
        Marshal.Encoded e = Marshal.encodeAll(args, new Marshal.Member(ref.typeIndex, null, method));
        try {
            return Native.callMethod(handle, wrapper, method, e.kinds, e.bits, e.refs);
        } finally {
            Reference.reachabilityFence(wrapper);
        }
    }

    /** {@code testing.Pair(first=1, second=null)} (fields by their Java names); {@code <closed testing.Pair>} once closed. */
    static String describe(Object wrapper, NativeRef ref) {
        String key = typeKey(ref);
        if (ref.isClosed()) {
            return "<closed " + key + ">";
        }
        StringJoiner fields = new StringJoiner(", ", key + "(", ")");
        for (TetherType.Field f : TetherType.of(ref.typeIndex).fields()) {
            Object v = get(wrapper, ref, f.name());
            fields.add(f.javaName() + "=" + (v == wrapper ? "<self>" : v instanceof String ? "\"" + v + "\"" : String.valueOf(v)));
        }
        return fields.toString();
    }
}
