package dev.tether.ffi;

import java.lang.ref.Cleaner;

/**
 * The release side of a wrapper's native reference (+1 strong): its {@link Cleaner}
 * registration and whether it was closed. What calls read lives in the wrapper itself, so a
 * call reads the wrapper and nothing else on the Java side:
 *
 * <ul>
 *   <li>{@code long handle}: the object's address while the wrapper is open; {@code ~address}
 *       (negative: user-space addresses are positive) once {@link #close} began; 0 while a
 *       wrapper made before its object ({@link TetherType#construct}) waits for native code to
 *       tie it. {@link #handle} checks it: one field, one compare.</li>
 *   <li>{@code long word}: how the wrapper passes itself to a call native, see {@link #word}:
 *       {@code KIND_OBJECT}, the type index and the generation it was tied with, so native
 *       code builds the argument and finds this thread's spare without reading the object's
 *       header or slot. Set with the handle, never changed after.</li>
 * </ul>
 *
 * <p>The reference is released exactly once: by {@link #close} or, when the wrapper becomes
 * unreachable, by a Cleaner action that captures only the handle and the generation, never
 * the wrapper (so it cannot keep the wrapper alive).
 */
final class NativeRef {
    private static final Cleaner CLEANER = Cleaner.create(runnable -> {
        Thread t = new Thread(runnable, "tether-cleaner");
        t.setDaemon(true);
        return t;
    });

    // The word's layout (crates/java/src/tie.rs `wrapper_word` makes it, natives.rs reads it).
    static final int TYPE_SHIFT = 8;
    static final int TYPE_MASK = 0xFFFF;
    /** Set when the object has this frontend's slot: calls may keep and lend spares for it. */
    static final long SPARES = 1L << 24;
    static final int GENERATION_SHIFT = 32;

    /**
     * Null until registered: an unbound ref ({@link #NativeRef()}) waits for {@link #bind}.
     * Volatile, as {@link #closed}: {@link #bind} writes it then reads {@code closed}, {@link
     * #close} the other way round, so one of them sees the other and the release happens.
     */
    private volatile Cleaner.Cleanable cleanable;
    private volatile boolean closed;

    /** A bound ref: {@code wrapper}'s Cleaner releases {@code handle} of {@code word}'s generation. */
    NativeRef(Object wrapper, long handle, long word) {
        this.cleanable = CLEANER.register(wrapper, new Release(handle, generation(word)));
    }

    /**
     * An unbound ref for a wrapper made before its object exists ({@link TetherType#construct}):
     * native code writes the wrapper's handle and word when it ties the new object to it, and
     * the caller then calls {@link #bind}. A wrapper whose ref stays unbound (the call failed,
     * or returned another wrapper) owns nothing.
     */
    NativeRef() {}

    /**
     * Register the Cleaner of a ref native code has just bound to {@code wrapper} ({@code
     * handle} as the wrapper holds it: closed meanwhile, it is negative). If that fails (no
     * memory for the Cleaner's record), the reference is released at once and the failure
     * rethrown.
     */
    void bind(Object wrapper, long handle, long word) {
        long h = handle < 0 ? ~handle : handle;
        try {
            cleanable = CLEANER.register(wrapper, new Release(h, generation(word)));
        } catch (Throwable t) {
            closed = true;
            Native.release(h, generation(word));
            throw t;
        }
        if (closed) {
            // closed by another thread that reached the wrapper through the slot meanwhile
            cleanable.clean();
        }
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * Release the native reference now (idempotent). The wrapper marks its handle closed
     * first ({@link #closedHandle}), so a later use throws instead of reaching the object.
     */
    void close() {
        closed = true;
        Cleaner.Cleanable c = cleanable;
        if (c != null) {
            c.clean();
        } // else not bound yet: bind() releases it
    }

    /** The handle a wrapper holding {@code handle} keeps once closed (idempotent). */
    static long closedHandle(long handle) {
        return handle > 0 ? ~handle : handle;
    }

    /** A wrapper's live handle; throws if it was closed (or is not tied yet). */
    static long handle(long handle, long word) {
        if (handle <= 0) {
            throw closedError(handle, word);
        }
        return handle;
    }

    /** Out of line: the calls that check a handle stay small. */
    static IllegalStateException closedError(long handle, long word) {
        String what = "this " + Native.typeKey(typeIndex(word)) + " wrapper ";
        return new IllegalStateException(handle == 0 ? what + "is not tied to a native object yet"
                : what + "was closed; its native reference is released");
    }

    static int typeIndex(long word) {
        return (int) (word >>> TYPE_SHIFT) & TYPE_MASK;
    }

    static long generation(long word) {
        return word >>> GENERATION_SHIFT;
    }

    /** The word of a wrapper not tied yet: its kind and type; native code writes the rest. */
    static long unboundWord(int typeIndex) {
        return Marshal.OBJECT | ((long) typeIndex << TYPE_SHIFT);
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
