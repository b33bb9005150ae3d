package dev.tether.ffi;

import java.util.function.Function;

/** Runs Java callables for native code (called from crates/java/src/callback.rs). */
final class Callbacks {
    private Callbacks() {}

    /**
     * Which {@code java.util.function.Function} classes take their arguments one by one (a
     * {@code Function<Object, Object>} called with one argument) rather than as an
     * {@code Object[]}: learned from the first one-argument call (erasure hides the type
     * argument, so the call tries the argument itself and falls back to the array when the
     * function's own cast to {@code Object[]} refuses it).
     */
    private static final ClassValue<int[]> SHAPE = new ClassValue<>() {
        @Override
        protected int[] computeValue(Class<?> type) {
            return new int[] {UNKNOWN};
        }
    };

    private static final int UNKNOWN = 0;
    private static final int ARRAY = 1;
    private static final int SINGLE = 2;

    /**
     * Call {@code callable} with {@code args}; encode the result into {@code out[0]} (kind) and
     * {@code out[1]} (bits) and return its ref. If the callable throws, {@code out[0]} is
     * {@link Marshal#THROWN} and the return value is {@code {throwable, kind, message}}.
     */
    static Object invoke(Object callable, Object[] args, long[] out) {
        try {
            Object result = callable instanceof TetherCallback
                    ? ((TetherCallback) callable).call(args)
                    : apply(callable, args);
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

    /**
     * A {@code Function<Object[], Object>} gets the arguments as an array; a
     * {@code Function<Object, Object>} called with one argument gets that argument.
     */
    @SuppressWarnings("unchecked")
    private static Object apply(Object callable, Object[] args) {
        Function<Object, Object> f = (Function<Object, Object>) callable;
        if (args.length != 1 || args[0] instanceof Object[]) {
            return f.apply(args);
        }
        int[] shape = SHAPE.get(callable.getClass());
        if (shape[0] == ARRAY) {
            return f.apply(args);
        }
        if (shape[0] == SINGLE) {
            return f.apply(args[0]);
        }
        Object result;
        try {
            result = f.apply(args[0]);
        } catch (ClassCastException e) {
            if (!refusedAtEntry(e, callable.getClass())) {
                throw e;
            }
            shape[0] = ARRAY;
            return f.apply(args);
        }
        shape[0] = SINGLE;
        return result;
    }

    /**
     * Was {@code e} thrown by the function's own entry cast (its parameter type is
     * {@code Object[]}), not by its body? The cast happens in the lambda's hidden class (a frame
     * stack traces leave out) or in the bridge method {@code apply(Object)} of a named class,
     * called straight from {@link #apply}.
     */
    private static boolean refusedAtEntry(ClassCastException e, Class<?> type) {
        StackTraceElement[] trace = e.getStackTrace();
        if (trace.length == 0) {
            return false;
        }
        String self = Callbacks.class.getName();
        if (trace[0].getClassName().equals(self)) {
            return true;
        }
        return trace.length > 1 && trace[0].getClassName().equals(type.getName())
                && trace[0].getMethodName().equals("apply") && trace[1].getClassName().equals(self);
    }
}
