package dev.tether.ffi;

import java.util.function.Function;

/** Runs Java callables for native code (called from crates/java/src/callback.rs). */
final class Callbacks {
    private Callbacks() {}

    /**
     * Call {@code callable} with {@code args}; encode the result into {@code out[0]} (kind) and
     * {@code out[1]} (bits) and return its ref. If the callable throws, {@code out[0]} is
     * {@link Marshal#THROWN} and the return value is {@code {throwable, kind, message}}.
     */
    @SuppressWarnings("unchecked")
    static Object invoke(Object callable, Object[] args, long[] out) {
        try {
            Object result = callable instanceof TetherCallback
                    ? ((TetherCallback) callable).call(args)
                    : ((Function<Object[], Object>) callable).apply(args);
            int[] kinds = new int[1];
            long[] bits = new long[1];
            Object[] refs = new Object[1];
            Marshal.encode(result, kinds, bits, refs, 0);
            out[0] = kinds[0];
            out[1] = bits[0];
            return refs[0];
        } catch (Throwable t) {
            out[0] = Marshal.THROWN;
            String kind = t instanceof TetherError ? ((TetherError) t).kind() : "RuntimeError";
            return new Object[] {t, kind, t.toString()};
        }
    }
}
