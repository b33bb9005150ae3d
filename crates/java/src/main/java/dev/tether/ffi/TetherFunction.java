package dev.tether.ffi;

import java.lang.ref.Reference;

/**
 * A native Function ({@code tether.Function}).
 *
 * <p>{@link #call(Object...)} calls it. Because a Function has no reflected methods, the
 * {@link TetherObject#call(String, Object...)} overload (which Java picks for a first argument
 * of static type {@code String}) also calls the function, with that string as its first argument.
 */
public final class TetherFunction implements TetherObject, Tied {
    private final NativeRef ref;

    TetherFunction(long handle, long generation, int typeIndex) {
        this.ref = new NativeRef(this, handle, generation, typeIndex);
    }

    @Override
    public NativeRef nativeRef() {
        return ref;
    }

    /** Call the function; arguments and the result convert as described in docs/java.md. */
    public Object call(Object... args) {
        if (args == null) {
            args = new Object[] {null};
        }
        long fn = ref.handle();
        try {
            if (args.length == 1 && args[0] != null) {
                // The commonest call passes one wrapper: no encoding arrays at all.
                Object a = args[0];
                Class<?> c = a.getClass();
                if (c == TetherInstance.class || c == TetherFunction.class) {
                    return Native.call1(fn, Marshal.OBJECT, ((Tied) a).nativeRef().handle(), a);
                }
            }
            switch (args.length) {
                case 0:
                    return Native.call0(fn);
                case 1:
                case 2:
                case 3: {
                    // Small arrays that never escape: the JIT keeps them in registers, and the
                    // common arities reach native code as plain arguments.
                    int[] k = new int[3];
                    long[] b = new long[3];
                    Object[] r = new Object[3];
                    Marshal.encodeInto(args, k, b, r);
                    switch (args.length) {
                        case 1:
                            return Native.call1(fn, k[0], b[0], r[0]);
                        case 2:
                            return Native.call2(fn, k[0], b[0], r[0], k[1], b[1], r[1]);
                        default:
                            return Native.call3(fn, k[0], b[0], r[0], k[1], b[1], r[1], k[2], b[2], r[2]);
                    }
                }
                default: {
                    Marshal.Encoded e = Marshal.encodeAll(args);
                    return Native.call(fn, e.kinds, e.bits, e.refs);
                }
            }
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(args);
        }
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
            return Native.functionName(ref.handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    @Override
    public String toString() {
        return ref.isClosed() ? "<closed tether.Function>" : "<tether.Function " + name() + ">";
    }
}
