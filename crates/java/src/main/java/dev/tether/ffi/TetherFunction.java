package dev.tether.ffi;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;

/**
 * A native Function ({@code tether.Function}).
 *
 * <p>{@link #call(Object...)} calls it. Because a Function has no reflected methods, the
 * {@link TetherObject#call(String, Object...)} overload (which Java picks for a first argument
 * of static type {@code String}) also calls the function, with that string as its first argument.
 */
public final class TetherFunction implements TetherObject, Tied {
    /** The handle, negative once closed (see {@link NativeRef}); read by calls with {@link #word}. */
    long handle;
    /** How this wrapper passes itself to a call native (see {@link NativeRef}). */
    final long word;
    /** Its Cleaner's registration ({@link NativeRef#register}); {@code close()} runs it. */
    final Cleaner.Cleanable cleanable;

    /**
     * What this wrapper knows of its Function, one byte so the common call reads one field:
     * {@code KNOWN} once {@link #criticalFlags()} asked native code, with {@code CRITICAL_CALL}
     * and {@code CRITICAL_INTS} where they hold (facts that never change), and {@code
     * INT_RESULTS}, learned per call: the last result was an int, so calls take the {@code
     * call*L} natives, which return ints as a plain {@code long} (boxed here) instead of a
     * {@code Long} made by an upcall from native code. A plain field, racy by design: a lost
     * update loses a hint (a non-int result on the int path costs one more native call and
     * clears it) or the known facts (asked again).
     */
    private byte mode;
    private static final byte KNOWN = 1;
    private static final byte CRITICAL_CALL = 2;
    private static final byte CRITICAL_INTS = 4;
    private static final byte INT_RESULTS = 8;
    private static final long LEAF = Native.constant("FUNC_LEAF");
    private static final long INT_ENTRY = Native.constant("FUNC_INT_ENTRY");

    TetherFunction(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.cleanable = NativeRef.register(this, handle, word);
    }

    /** The live handle; throws if this wrapper was closed. */
    long handle() {
        return NativeRef.handle(handle, word);
    }

    /** Call the function; arguments and the result convert as described in docs/java.md. */
    public Object call(Object... args) {
        if (args == null) {
            return call((Object) null);
        }
        switch (args.length) {
            case 0:
                return call();
            case 1:
                return call(args[0]);
            case 2:
                return call(args[0], args[1]);
            case 3:
                return call(args[0], args[1], args[2]);
            default:
                return callEncoded(args);
        }
    }

    /** Call with no arguments. */
    public Object call() {
        long fn = handle();
        try {
            return intResults() ? fromLong(Native.call0L(fn)) : learn(Native.call0(fn));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Call with one argument. Wrappers, {@code Long}s, {@code Integer}s and null reach native
     * code as plain arguments (no arrays); a result that is the argument comes back as that
     * very wrapper. A callable ({@link TetherCallback}, {@code java.util.function.Function})
     * is lent this thread's spare native Function for the call (docs/java.md, Conversions).
     */
    public Object call(Object a) {
        long fn = handle();
        try {
            if ((mode & (CRITICAL_CALL | INT_RESULTS)) == CRITICAL_CALL) {
                // A known leaf: one field read, and nothing but the argument live past the call.
                int ka = Marshal.fastKind(a);
                if (ka != Marshal.SLOW) {
                    long r = leaf1(fn, Marshal.fastWord(a, ka), Marshal.fastBits(a, ka));
                    return r == Critical.ARGUMENT ? a : leafOutcome(r, a);
                }
            }
            if (intResults() && isInt(a)) {
                return fromLong(Native.ints1(fn, intOf(a)));
            }
            int ka = Marshal.fastKind(a);
            if (ka != Marshal.SLOW) {
                long ba = Marshal.fastBits(a, ka);
                long wa = Marshal.fastWord(a, ka);
                if (!intResults() && critical()) {
                    long r = leaf1(fn, wa, ba);
                    return r == Critical.ARGUMENT ? a : leafOutcome(r, a);
                }
                Object ra = Marshal.fastRef(a, ka);
                return intResults() ? fromLong(Native.call1L(fn, wa, ba, ra)) : learn(Native.call1(fn, wa, ba, ra));
            }
            return callOther(a);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(a);
        }
    }

    /** The leaf protocol's call: a critical downcall where this JDK has them, else JNI's. */
    private static long leaf1(long fn, long word, long bits) {
        return Critical.CALL1 != null ? Critical.call1(fn, word, bits) : Native.leaf1(fn, word, bits);
    }

    /**
     * A leaf call's answer other than its argument (out of line: the common call keeps nothing
     * but {@code a} live across the native call): the parked result, or, for a call the leaf
     * protocol did not take, the call through JNI. The caller fences {@code a}.
     */
    private Object leafOutcome(long r, Object a) {
        if (r != Critical.FALLBACK) {
            return learn(Native.takePending());
        }
        long fn = handle();
        int ka = Marshal.fastKind(a);
        return learn(Native.call1(fn, Marshal.fastWord(a, ka), Marshal.fastBits(a, ka), Marshal.fastRef(a, ka)));
    }

    /** Call with two arguments (see {@link #call(Object)}). */
    public Object call(Object a, Object b) {
        long fn = handle();
        try {
            if (intResults() && isInt(a) && isInt(b)) {
                return fromLong(Native.ints2(fn, intOf(a), intOf(b)));
            }
            int ka = Marshal.fastKind(a);
            int kb = Marshal.fastKind(b);
            if (ka != Marshal.SLOW && kb != Marshal.SLOW) {
                long ba = Marshal.fastBits(a, ka);
                long wa = Marshal.fastWord(a, ka);
                long bb = Marshal.fastBits(b, kb);
                long wb = Marshal.fastWord(b, kb);
                Object ra = Marshal.fastRef(a, ka);
                Object rb = Marshal.fastRef(b, kb);
                return intResults()
                        ? fromLong(Native.call2L(fn, wa, ba, ra, wb, bb, rb))
                        : learn(Native.call2(fn, wa, ba, ra, wb, bb, rb));
            }
            return callOther(a, b);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(a);
            Reference.reachabilityFence(b);
        }
    }

    /** Call with three arguments (see {@link #call(Object)}). */
    public Object call(Object a, Object b, Object c) {
        long fn = handle();
        try {
            if (intResults() && isInt(a) && isInt(b) && isInt(c)) {
                return fromLong(Native.ints3(fn, intOf(a), intOf(b), intOf(c)));
            }
            int ka = Marshal.fastKind(a);
            int kb = Marshal.fastKind(b);
            int kc = Marshal.fastKind(c);
            if (ka != Marshal.SLOW && kb != Marshal.SLOW && kc != Marshal.SLOW) {
                long ba = Marshal.fastBits(a, ka);
                long wa = Marshal.fastWord(a, ka);
                long bb = Marshal.fastBits(b, kb);
                long wb = Marshal.fastWord(b, kb);
                long bc = Marshal.fastBits(c, kc);
                long wc = Marshal.fastWord(c, kc);
                Object ra = Marshal.fastRef(a, ka);
                Object rb = Marshal.fastRef(b, kb);
                Object rc = Marshal.fastRef(c, kc);
                return intResults()
                        ? fromLong(Native.call3L(fn, wa, ba, ra, wb, bb, rb, wc, bc, rc))
                        : learn(Native.call3(fn, wa, ba, ra, wb, bb, rb, wc, bc, rc));
            }
            return callOther(a, b, c);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(a);
            Reference.reachabilityFence(b);
            Reference.reachabilityFence(c);
        }
    }

    /**
     * Call with no arguments, for an int result: no boxing on the way back (the {@code long}
     * counterpart of {@link #call()}).
     *
     * @throws TetherTypeError if the result is not an int
     */
    public long callLong() {
        long fn = handle();
        try {
            return longResult(Native.call0L(fn));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Call with one int argument, for an int result: nothing is boxed either way, as for a
     * native method declared {@code long f(long)}.
     *
     * @throws TetherTypeError if the result is not an int
     */
    public long callLong(long a) {
        long fn = handle();
        try {
            if (Critical.INTS1 != null && criticalInts()) {
                long r = Critical.ints1(fn, a);
                if (r != Critical.FALLBACK) {
                    return longResult(r);
                }
            }
            return longResult(Native.ints1(fn, a));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** As {@link #callLong(long)}, with two int arguments. */
    public long callLong(long a, long b) {
        long fn = handle();
        try {
            if (Critical.INTS2 != null && criticalInts()) {
                long r = Critical.ints2(fn, a, b);
                if (r != Critical.FALLBACK) {
                    return longResult(r);
                }
            }
            return longResult(Native.ints2(fn, a, b));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** As {@link #callLong(long)}, with three int arguments. */
    public long callLong(long a, long b, long c) {
        long fn = handle();
        try {
            if (Critical.INTS3 != null && criticalInts()) {
                long r = Critical.ints3(fn, a, b, c);
                if (r != Critical.FALLBACK) {
                    return longResult(r);
                }
            }
            return longResult(Native.ints3(fn, a, b, c));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The result of a {@code callLong}: the bits, or the parked result if it is an int. */
    private long longResult(long bits) {
        if (bits != Native.PENDING) {
            return bits;
        }
        Object result = Native.takePending();
        if (result != null && result.getClass() == Long.class) {
            return (Long) result;
        }
        String got = result == null ? "None" : result instanceof TetherObject
                ? ((TetherObject) result).typeKey() : result.getClass().getSimpleName();
        throw new TetherTypeError("TypeError", name() + "() returned " + got + ", not an int (callLong)", "");
    }

    // The calls whose arguments are not all of Marshal.fastKind (out of line, so the common
    // calls stay as small as they were): callables among fast kinds are lent a Function
    // (Marshal.CALLABLE, no arrays); anything else is encoded. The caller fences the arguments.

    private Object callOther(Object a) {
        int ka = Marshal.callKind(a);
        if (ka == Marshal.SLOW) {
            return callEncoded(new Object[] {a});
        }
        long fn = handle();
        long ba = Marshal.callBits(a, ka);
        long wa = Marshal.callWord(a, ka);
        return intResults() ? fromLong(Native.call1L(fn, wa, ba, a)) : learn(Native.call1(fn, wa, ba, a));
    }

    private Object callOther(Object a, Object b) {
        int ka = Marshal.callKind(a);
        int kb = Marshal.callKind(b);
        if (ka == Marshal.SLOW || kb == Marshal.SLOW) {
            return callEncoded(new Object[] {a, b});
        }
        long fn = handle();
        long ba = Marshal.callBits(a, ka);
        long wa = Marshal.callWord(a, ka);
        long bb = Marshal.callBits(b, kb);
        long wb = Marshal.callWord(b, kb);
        Object ra = Marshal.callRef(a, ka);
        Object rb = Marshal.callRef(b, kb);
        return intResults()
                ? fromLong(Native.call2L(fn, wa, ba, ra, wb, bb, rb))
                : learn(Native.call2(fn, wa, ba, ra, wb, bb, rb));
    }

    private Object callOther(Object a, Object b, Object c) {
        int ka = Marshal.callKind(a);
        int kb = Marshal.callKind(b);
        int kc = Marshal.callKind(c);
        if (ka == Marshal.SLOW || kb == Marshal.SLOW || kc == Marshal.SLOW) {
            return callEncoded(new Object[] {a, b, c});
        }
        long fn = handle();
        long ba = Marshal.callBits(a, ka);
        long wa = Marshal.callWord(a, ka);
        long bb = Marshal.callBits(b, kb);
        long wb = Marshal.callWord(b, kb);
        long bc = Marshal.callBits(c, kc);
        long wc = Marshal.callWord(c, kc);
        Object ra = Marshal.callRef(a, ka);
        Object rb = Marshal.callRef(b, kb);
        Object rc = Marshal.callRef(c, kc);
        return intResults()
                ? fromLong(Native.call3L(fn, wa, ba, ra, wb, bb, rb, wc, bc, rc))
                : learn(Native.call3(fn, wa, ba, ra, wb, bb, rb, wc, bc, rc));
    }

    /** Any arity, any argument types: the arguments are encoded into arrays first. */
    private Object callEncoded(Object[] args) {
        long fn = handle();
        try {
            if (args.length <= 3) {
                // Small arrays that never escape: the JIT keeps them in registers, and the
                // common arities reach native code as plain arguments.
                int[] k = new int[3];
                long[] b = new long[3];
                Object[] r = new Object[3];
                Marshal.encodeInto(args, k, b, r, this);
                switch (args.length) {
                    case 0:
                        return Native.call0(fn);
                    case 1:
                        return Native.call1(fn, k[0], b[0], r[0]);
                    case 2:
                        return Native.call2(fn, k[0], b[0], r[0], k[1], b[1], r[1]);
                    default:
                        return Native.call3(fn, k[0], b[0], r[0], k[1], b[1], r[1], k[2], b[2], r[2]);
                }
            }
            Marshal.Encoded e = Marshal.encodeAll(args, this);
            return Native.call(fn, e.kinds, e.bits, e.refs);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(args);
        }
    }

    /**
     * Whether this Function's {@code call(x)} takes the leaf protocol first (a {@code long}
     * answer, {@link Critical#call1}): it is a leaf. Through a critical downcall where this JDK
     * has them, else through JNI's {@link Native#leaf1}, whose stub handles no object references
     * (found once; a race finds the same answer twice).
     */
    private boolean critical() {
        return (criticalFlags() & CRITICAL_CALL) != 0;
    }

    /** Whether {@code callLong} goes through {@link Critical}: a leaf with an int entry. */
    private boolean criticalInts() {
        return (criticalFlags() & CRITICAL_INTS) != 0;
    }

    private byte criticalFlags() {
        byte known = mode;
        if ((known & KNOWN) == 0) {
            known |= KNOWN;
            long flags = Native.functionFlags(handle());
            if ((flags & LEAF) != 0) {
                known |= CRITICAL_CALL;
                if ((flags & INT_ENTRY) != 0 && Critical.INTS3 != null) {
                    known |= CRITICAL_INTS;
                }
            }
            mode = known;
        }
        return known;
    }

    /** The {@code INT_RESULTS} hint (see {@link #mode}). */
    private boolean intResults() {
        return (mode & INT_RESULTS) != 0;
    }

    /** A {@code Long} or an {@code Integer} (final classes: one klass compare each). */
    private static boolean isInt(Object v) {
        return v instanceof Long || v instanceof Integer;
    }

    private static long intOf(Object v) {
        return Marshal.fastBits(v, Marshal.INT);
    }

    /** A result of the object-returning path; an int switches this function to the long path. */
    private Object learn(Object result) {
        if (result != null && result.getClass() == Long.class) {
            mode |= INT_RESULTS;
        }
        return result;
    }

    /** A result of the long-returning path. */
    private Object fromLong(long bits) {
        if (bits != Native.PENDING) {
            return Long.valueOf(bits);
        }
        Object result = Native.takePending();
        if (result == null || result.getClass() != Long.class) {
            mode &= ~INT_RESULTS;
        }
        return result;
    }

    /** Calls the function with {@code first} as its first argument (see the class comment). */
    @Override
    public Object call(String first, Object... rest) {
        Object[] all = new Object[(rest == null ? 1 : rest.length) + 1];
        all[0] = first;
        if (rest == null) {
            all[1] = null;
        } else {
            System.arraycopy(rest, 0, all, 1, rest.length);
        }
        return call(all);
    }

    /** The registered name, e.g. {@code "testing.echo"}. */
    public String name() {
        try {
            return Native.functionName(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The declaration, as the core renders it for Java ({@code Long add(Long a, Long b)}; a
     * method's receiver left out). Without a signature: {@code Object name(Object arg0, ...)}.
     */
    public String signature() {
        try {
            return Native.functionSignature(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * The parameters a caller writes, in order (a method's receiver left out: {@link #call}
     * still takes it first). Trailing parameters with a default may be left out of a call.
     */
    public java.util.List<TetherParameter> parameters() {
        try {
            return TetherParameter.listOf(Native.functionParameters(handle()));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** The result type as Java spells it ({@code "Long"}, {@code "Pair"}; {@code "Object"} when unknown). */
    public String resultType() {
        try {
            return Native.functionResultType(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return isClosed() ? "<closed tether.Function>" : "<tether.Function " + name() + ">";
    }
}
