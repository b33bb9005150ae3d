package dev.tether.ffi;

import java.lang.ref.Cleaner;

/**
 * A wrapper's native reference (+1 strong): what every wrapper class keeps in fields of its
 * own, so a call reads the wrapper and nothing else on the Java side, and the Cleaner that
 * releases it. Static helpers only; the fields, in each wrapper class:
 *
 * <ul>
 *   <li>{@code long handle}: the object's address while the wrapper is open; {@code ~address}
 *       (negative: user-space addresses are positive) once {@code close()} began; 0 while a
 *       wrapper made before its object ({@link TetherInstance#TetherInstance(int)}) waits for
 *       native code to tie it. {@link #handle} checks it: one field, one compare.</li>
 *   <li>{@code long word}: how the wrapper passes itself to a call native, in place of a kind
 *       ({@link Marshal#fastWord}): bits 0-7 {@code KIND_OBJECT}, 8-23 the type index, bit 24
 *       {@link #SPARES}, 32-63 the generation it was tied with (crates/java/src/tie.rs
 *       {@code wrapper_word} makes it), so native code builds the argument and finds this
 *       thread's spare without reading the object's header or slot. Set with the handle, never
 *       changed after.</li>
 *   <li>{@code Cleaner.Cleanable cleanable}: its registration with the Cleaner, whose action
 *       captures only the handle and the generation, never the wrapper (so it cannot keep the
 *       wrapper alive). {@code close()} marks the handle closed, then runs it; a Cleanable runs
 *       its action once, so the reference is released exactly once.</li>
 * </ul>
 */
final class NativeRef {
    private NativeRef() {}

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

    /** Register {@code wrapper}'s Cleaner: it releases {@code handle} of {@code word}'s generation. */
    static Cleaner.Cleanable register(Object wrapper, long handle, long word) {
        return CLEANER.register(wrapper, new Release(handle, generation(word)));
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
