package dev.tether.ffi;

import java.lang.ref.WeakReference;
import java.util.concurrent.atomic.AtomicLong;
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

    private static final Object[] NO_ARGUMENTS = new Object[0];

    /** The callable this thread last passed straight to a call, and the token it got. */
    private static final class LastLent {
        WeakReference<Object> callable = new WeakReference<>(null);
        long token;
    }

    private static final ThreadLocal<LastLent> LAST_LENT = ThreadLocal.withInitial(LastLent::new);
    private static final AtomicLong TOKENS = new AtomicLong();

    /**
     * The lend token of {@code callable}, passed with it to a call ({@link Marshal#callWord}):
     * one token names one callable for the process's life (a new one from a global counter
     * whenever this thread passes a callable other than the one it passed last). Native code
     * keeps the token of the callable its spare Function's weak reference was checked against
     * (crates/java/src/callback.rs, {@code lend}), so passing the same callable again needs no
     * JNI identity check ({@code IsSameObject}). Global, not per thread: a virtual thread's
     * calls run on whichever carrier thread, whose spare another virtual thread aimed.
     */
    static long lendToken(Object callable) {
        LastLent last = LAST_LENT.get();
        if (!last.callable.refersTo(callable)) {
            last.callable = new WeakReference<>(callable);
            last.token = TOKENS.incrementAndGet() & TOKEN_MASK;
        }
        return last.token;
    }

    /** Tokens take the word's bits 8-63 (0 after 2^56 tokens: no token, checked natively). */
    private static final long TOKEN_MASK = (1L << 56) - 1;

    /**
     * Call {@code callable} with no arguments for native code (see {@link #run}). Its outcome,
     * when it is not returned, goes to the result slot native code keeps for this thread's
     * running callback ({@link #CURRENT_SLOT}): one argument less for JNI to pass per callback.
     */
    static Object invoke0(Object callable) {
        return run(callable, NO_ARGUMENTS, CURRENT_SLOT);
    }

    /** As {@link #invoke0}, with the arguments {@code args} and the result slot's address {@code slot}. */
    static Object invoke(Object callable, Object[] args, long slot) {
        return run(callable, args, slot);
    }

    /** The slot address that names the result slot of the callback running on this thread. */
    private static final long CURRENT_SLOT = 0L;

    /**
     * Call {@code callable} with {@code args} for native code. A result that is a {@link
     * TetherInstance} not closed is returned as is: native code reads its handle and word
     * (JNI's field reads of a returned reference, no transition) and, when the native call that
     * runs this callback returns that same object, hands this very reference back to Java (no
     * slot revival). Any other outcome goes to native code through {@link Native#putResult}
     * (the result, encoded as an argument is) or {@link Native#putThrown} (what it threw, with
     * its kind and message), which write it into the calling native frame's result slot
     * {@code slot}, and this returns null. A non-null return also tells native code that
     * nothing was thrown (no exception check).
     */
    private static Object run(Object callable, Object[] args, long slot) {
        Object result;
        try {
            result = callable instanceof TetherCallback
                    ? ((TetherCallback) callable).call(args)
                    : apply(callable, args);
        } catch (Throwable t) {
            thrown(slot, t);
            return null;
        }
        if (result != null && result.getClass() == TetherInstance.class && ((TetherInstance) result).handle > 0) {
            ((TetherInstance) result).handle(); // native code reads its fields: tracked first
            return result;
        }
        int kind = Marshal.fastKind(result);
        if (kind != Marshal.SLOW) {
            long bits;
            try {
                bits = Marshal.fastBits(result, kind);
            } catch (Throwable t) { // a closed wrapper
                thrown(slot, t);
                return null;
            }
            Native.putResult(slot, kind, bits, Marshal.fastRef(result, kind));
            return null;
        }
        int[] kinds = new int[1];
        long[] bits = new long[1];
        Object[] refs = new Object[1];
        try {
            Marshal.encode(result, kinds, bits, refs, 0);
        } catch (Throwable t) {
            thrown(slot, t);
            return null;
        }
        Native.putResult(slot, kinds[0], bits[0], refs[0]);
        return null;
    }

    private static void thrown(long slot, Throwable t) {
        String kind = t instanceof TetherError ? ((TetherError) t).kind() : "RuntimeError";
        Native.putThrown(slot, t, kind, t.toString());
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
