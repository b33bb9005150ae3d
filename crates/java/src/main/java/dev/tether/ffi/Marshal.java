package dev.tether.ffi;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Java values to the {@code (kind, bits, ref)} encoding the native side decodes (the kinds
 * come from crates/java/src/convert.rs {@code KINDS}, their one source).
 */
final class Marshal {
    private Marshal() {}

    static final int NONE = (int) Native.constant("KIND_NONE");
    static final int INT = (int) Native.constant("KIND_INT");
    static final int BOOL = (int) Native.constant("KIND_BOOL");
    static final int FLOAT = (int) Native.constant("KIND_FLOAT");
    static final int STR = (int) Native.constant("KIND_STR");
    static final int BYTES = (int) Native.constant("KIND_BYTES");
    /** {@code ref} is a {@code List} or an object array, converted to a native Array item by
     * item by the native side (through {@link #listItems}), which refuses cycles and too deep
     * a nesting. */
    static final int LIST = (int) Native.constant("KIND_LIST");
    /** {@code ref} is a {@code Map}, converted through {@link #mapItems}. */
    static final int MAP = (int) Native.constant("KIND_MAP");
    static final int OBJECT = (int) Native.constant("KIND_OBJECT");
    /** {@code bits} is an owned native reference the callee takes over. */
    static final int OWNED = (int) Native.constant("KIND_OWNED");
    /**
     * A callable ({@link TetherCallback} or {@code java.util.function.Function}) passed straight
     * to a call ({@link #callKind}): {@code ref} is the callable, {@code bits} its identity
     * hash; the call lends it a native Function for its duration (crates/java/src/callback.rs).
     */
    static final int CALLABLE = (int) Native.constant("KIND_CALLABLE");
    /** Not a {@link #fastKind} value: encode through {@link #encode} instead. */
    static final int SLOW = -2;

    /**
     * The kind of the values the call paths pass without arrays: null, {@code Long},
     * {@code Integer} (what {@code f.call(1, 2)} boxes to), the two commonest wrapper classes
     * (exact-class checks, no interface {@code instanceof}) and generated binding classes (a
     * {@link TetherWrapper} subclass: a class check, no interface scan); {@link #SLOW} for
     * everything else.
     */
    static int fastKind(Object v) {
        if (v == null) {
            return NONE;
        }
        Class<?> c = v.getClass();
        if (c == Long.class || c == Integer.class) {
            return INT;
        }
        if (c == TetherInstance.class || c == TetherFunction.class || v instanceof TetherWrapper) {
            return OBJECT;
        }
        return SLOW;
    }

    /** {@link #fastKind}, or {@link #CALLABLE} for a callable: what the call natives take. */
    static int callKind(Object v) {
        int kind = fastKind(v);
        return kind == SLOW && (v instanceof TetherCallback || v instanceof Function) ? CALLABLE : kind;
    }

    /** {@link #fastBits}, and a callable's identity hash. */
    static long callBits(Object v, int kind) {
        return kind == CALLABLE ? System.identityHashCode(v) : fastBits(v, kind);
    }

    /**
     * {@link #fastWord}, for {@link #callKind}'s kinds; a callable's is {@link #CALLABLE} with
     * its lend token in bits 8-63 ({@link Callbacks#lendToken}).
     */
    static long callWord(Object v, int kind) {
        return kind == CALLABLE ? CALLABLE | Callbacks.lendToken(v) << 8 : fastWord(v, kind);
    }

    /** {@link #fastRef}, and the callable itself. */
    static Object callRef(Object v, int kind) {
        return kind == CALLABLE ? v : fastRef(v, kind);
    }

    /** The bits of a value of {@link #fastKind} {@code kind} (throws if a wrapper is closed). */
    static long fastBits(Object v, int kind) {
        if (kind == INT) {
            return v.getClass() == Long.class ? (Long) v : (Integer) v;
        }
        if (kind == OBJECT) {
            Class<?> c = v.getClass();
            if (c == TetherInstance.class) {
                return ((TetherInstance) v).handle();
            }
            return c == TetherFunction.class ? ((TetherFunction) v).handle() : ((TetherWrapper) v).handle();
        }
        return 0;
    }

    /**
     * What the call natives take as the kind of a value of {@link #fastKind} {@code kind}: the
     * kind itself, or a wrapper's word (its kind, type index and generation, see {@link
     * NativeRef}), so native code reads nothing of the object to pass it. Read from the
     * wrapper {@link #fastBits} read: no other object is touched.
     */
    static long fastWord(Object v, int kind) {
        if (kind == OBJECT) {
            Class<?> c = v.getClass();
            if (c == TetherInstance.class) {
                return ((TetherInstance) v).word;
            }
            return c == TetherFunction.class ? ((TetherFunction) v).word : ((TetherWrapper) v).word;
        }
        return kind;
    }

    /** The ref of a value of {@link #fastKind} {@code kind}: the wrapper, or null (a boxed
     * primitive never reaches native code, so the JIT may drop the box). */
    static Object fastRef(Object v, int kind) {
        return kind == OBJECT ? v : null;
    }

    static final class Encoded {
        final int[] kinds;
        final long[] bits;
        final Object[] refs;

        Encoded(int n) {
            kinds = new int[n];
            bits = new long[n];
            refs = new Object[n];
        }
    }

    static Encoded encodeAll(Object[] args, Object callee) {
        if (args == null) {
            args = new Object[] {null};
        }
        Encoded e = new Encoded(args.length);
        encodeInto(args, e.kinds, e.bits, e.refs, callee);
        return e;
    }

    /**
     * Encode every argument into the arrays (at least {@code args.length} long); on failure
     * give back the owned references already made, since the call never happens. An argument
     * that cannot be passed is a {@link TetherTypeError} or {@link TetherValueError} naming it as an argument of
     * {@code callee} (a {@link TetherFunction}, or a {@link Member} for a constructor or method;
     * null for a container's items, whose failure the native side names).
     */
    static void encodeInto(Object[] args, int[] kinds, long[] bits, Object[] refs, Object callee) {
        int i = 0;
        try {
            for (; i < args.length; i++) {
                encode(args[i], kinds, bits, refs, i);
            }
        } catch (RuntimeException failure) {
            throw abandoned(args, kinds, bits, callee, i, failure);
        } catch (Error failure) {
            abandoned(args, kinds, bits, null, i, null);
            throw failure;
        }
    }

    /**
     * The cold half of {@link #encodeInto} (out of line, so the hot loop stays small enough for
     * the JIT to inline into every call): give back the owned references made so far, and the
     * failure to throw, a {@link TetherTypeError} naming argument {@code i} of {@code callee}.
     */
    private static RuntimeException abandoned(
            Object[] args, int[] kinds, long[] bits, Object callee, int i, RuntimeException failure) {
        for (int j = 0; j < args.length; j++) {
            if (kinds[j] == OWNED) {
                Native.release(bits[j], 0);
            }
        }
        if ((failure instanceof TetherTypeError || failure instanceof TetherValueError) && callee != null) {
            String message;
            if (callee instanceof TetherFunction) {
                TetherFunction f = (TetherFunction) callee;
                try {
                    message = Native.argumentMessage(f.handle(), i, failure.getMessage());
                } finally {
                    java.lang.ref.Reference.reachabilityFence(f);
                }
            } else {
                Member m = (Member) callee;
                message = Native.memberArgumentMessage(m.typeIndex, m.typeKey, m.method, i, failure.getMessage());
            }
            return failure instanceof TetherValueError
                    ? new TetherValueError("ValueError", message, "")
                    : new TetherTypeError("TypeError", message, "");
        }
        return failure;
    }

    /**
     * The callee of a constructor call ({@code method} null; the type by {@code typeKey}) or a
     * method call (the type by {@code typeIndex}), for naming an argument that cannot be encoded.
     */
    static final class Member {
        final int typeIndex;
        final String typeKey;
        final String method;

        Member(int typeIndex, String typeKey, String method) {
            this.typeIndex = typeIndex;
            this.typeKey = typeKey;
            this.method = method;
        }
    }

    /**
     * Encode {@code v} at index {@code i}: the converted kinds, or a host value for any other
     * object (which native code holds and hands back as itself).
     */
    static void encode(Object v, int[] kinds, long[] bits, Object[] refs, int i) {
        // Exact-class checks first: an `instanceof` against an interface (Tied) scans the
        // class's secondary supertypes, which profiling showed dominating calls with Longs.
        Class<?> c = v == null ? null : v.getClass();
        if (v == null) {
            kinds[i] = NONE;
        } else if (c == Long.class) {
            kinds[i] = INT;
            bits[i] = (Long) v;
        } else if (c == TetherInstance.class || c == TetherFunction.class) {
            kinds[i] = OBJECT;
            bits[i] = fastBits(v, OBJECT);
            refs[i] = v;
        } else if (v instanceof Tied) {
            kinds[i] = OBJECT;
            bits[i] = ObjectOps.handleOf(v);
            refs[i] = v;
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            kinds[i] = INT;
            bits[i] = ((Number) v).longValue();
        } else if (v instanceof BigInteger) {
            BigInteger big = (BigInteger) v;
            if (big.bitLength() > 63) {
                throw new TetherValueError("ValueError", "int too large to convert to a 64-bit signed integer", "");
            }
            kinds[i] = INT;
            bits[i] = big.longValue();
        } else if (v instanceof Double || v instanceof Float) {
            kinds[i] = FLOAT;
            bits[i] = Double.doubleToRawLongBits(((Number) v).doubleValue());
        } else if (v instanceof Boolean) {
            kinds[i] = BOOL;
            bits[i] = ((Boolean) v) ? 1 : 0;
        } else if (v instanceof String || v instanceof Character) {
            kinds[i] = STR;
            refs[i] = v.toString().getBytes(StandardCharsets.UTF_8);
        } else if (v instanceof byte[]) {
            kinds[i] = BYTES;
            refs[i] = v;
        } else if (v instanceof TetherCallback || v instanceof Function) {
            kinds[i] = OWNED;
            bits[i] = Native.callbackFunction(v, System.identityHashCode(v));
        } else if (v instanceof List || v instanceof Object[]) {
            kinds[i] = LIST;
            refs[i] = v;
        } else if (v instanceof Map) {
            kinds[i] = MAP;
            refs[i] = v;
        } else {
            // Anything else crosses as a host value and comes back as this very object.
            kinds[i] = OWNED;
            bits[i] = Native.hostValue(v, c.getName());
        }
    }

    /** The items of a {@link #LIST} value, encoded: {@code {int[] kinds, long[] bits, Object[] refs}}. */
    static Object[] listItems(Object list) {
        // Encoding only reads the items: an array is encoded in place, a List through a snapshot.
        Object[] items = list instanceof List ? ((List<?>) list).toArray() : (Object[]) list;
        return encoded(items);
    }

    /**
     * The entries of a {@link #MAP} value as key, value, key, value..., encoded as {@link #listItems}.
     * {@code size()} is only a first guess (capped, so a Map claiming billions allocates nothing
     * for them): a user's Map may report fewer or more entries than its entry set holds, and every
     * entry the entry set yields is converted.
     */
    static Object[] mapItems(Object map) {
        Map<?, ?> m = (Map<?, ?>) map;
        Object[] flat = new Object[Math.min(Math.max(0, m.size()), 1 << 16) * 2];
        int i = 0;
        for (Map.Entry<?, ?> e : m.entrySet()) {
            if (i == flat.length) {
                flat = java.util.Arrays.copyOf(flat, Math.max(8, flat.length * 2));
            }
            flat[i++] = e.getKey();
            flat[i++] = e.getValue();
        }
        return encoded(i == flat.length ? flat : java.util.Arrays.copyOf(flat, i));
    }

    private static Object[] encoded(Object[] items) {
        Encoded e = new Encoded(items.length);
        encodeInto(items, e.kinds, e.bits, e.refs, null);
        return new Object[] {e.kinds, e.bits, e.refs};
    }
}
