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

    /**
     * Set once: by the constructor, or (for an unbound ref, see {@link #NativeRef(int)}) by
     * native code while it ties the object, before the wrapper is published in the slot.
     * Written by JNI {@code SetLongField} (crates/java/src/tie.rs), hence not final.
     */
    long handle;
    long generation;
    final int typeIndex;
    /** Null only while an unbound ref waits for {@link #bind}. */
    private Cleaner.Cleanable cleanable;
    private volatile boolean closed;

    NativeRef(Object wrapper, long handle, long generation, int typeIndex) {
        this.handle = handle;
        this.generation = generation;
        this.typeIndex = typeIndex;
        this.cleanable = CLEANER.register(wrapper, new Release(handle, generation));
    }

    /**
     * An unbound ref for a wrapper made before its object exists ({@link TetherType#construct}):
     * native code writes {@link #handle} and {@link #generation} when it ties the new object to
     * that wrapper, and the caller then calls {@link #bind}. A wrapper whose ref stays unbound
     * (the call failed, or returned another wrapper) owns nothing.
     */
    NativeRef(int typeIndex) {
        this.typeIndex = typeIndex;
    }

    /**
     * Register the Cleaner of a ref native code has just bound to {@code wrapper}. If that
     * fails (no memory for the Cleaner's record), the reference is released at once and the
     * failure rethrown.
     */
    void bind(Object wrapper) {
        try {
            cleanable = CLEANER.register(wrapper, new Release(handle, generation));
        } catch (Throwable t) {
            closed = true;
            Native.release(handle, generation);
            throw t;
        }
        if (closed) {
            // closed by another thread that reached the wrapper through the slot meanwhile
            cleanable.clean();
        }
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
        Cleaner.Cleanable c = cleanable;
        if (c != null) {
            c.clean();
        } // else not bound yet: bind() releases it
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
