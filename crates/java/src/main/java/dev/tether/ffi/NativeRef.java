package dev.tether.ffi;

import java.lang.ref.Cleaner;

/**
 * A wrapper's ownership of one native reference (+1 strong) and the generation of the
 * tying slot it was made for.
 *
 * <p>The reference is released exactly once: by {@link #close()} or, when the wrapper becomes
 * unreachable, by a {@link Cleaner} action that captures only the handle and the generation,
 * never the wrapper (so it cannot keep the wrapper alive).
 */
final class NativeRef {
    private static final Cleaner CLEANER = Cleaner.create(runnable -> {
        Thread t = new Thread(runnable, "tether-cleaner");
        t.setDaemon(true);
        return t;
    });

    final long handle;
    final long generation;
    final int typeIndex;
    private final Cleaner.Cleanable cleanable;
    private volatile boolean closed;

    NativeRef(Object wrapper, long handle, long generation, int typeIndex) {
        this.handle = handle;
        this.generation = generation;
        this.typeIndex = typeIndex;
        this.cleanable = CLEANER.register(wrapper, new Release(handle, generation));
    }

    /** The live handle; throws if the wrapper was closed. */
    long handle() {
        if (closed) {
            throw new IllegalStateException("this " + Native.typeKey(typeIndex) + " wrapper was closed; its native reference is released");
        }
        return handle;
    }

    boolean isClosed() {
        return closed;
    }

    /** Release the native reference now (idempotent). */
    void close() {
        closed = true;
        cleanable.clean();
    }

    private static final class Release implements Runnable {
        private final long handle;
        private final long generation;

        Release(long handle, long generation) {
            this.handle = handle;
            this.generation = generation;
        }

        @Override
        public void run() {
            Native.release(handle, generation);
        }
    }
}
