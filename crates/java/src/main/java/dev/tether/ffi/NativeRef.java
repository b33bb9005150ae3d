package dev.tether.ffi;

import java.lang.ref.Cleaner;
import java.lang.ref.PhantomReference;
import java.lang.ref.ReferenceQueue;

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
 *       {@link #SPARES}, bit 25 {@link #UNTRACKED}, 32-63 the generation it was tied with
 *       (crates/java/src/tie.rs {@code wrapper_word} makes it), so native code builds the
 *       argument and finds this thread's spare without reading the object's header or slot. Set
 *       with the handle; only {@link TetherInstance#handle()} changes it after, once, to clear
 *       {@link #UNTRACKED}.</li>
 *   <li>{@code Cleaner.Cleanable cleanable}: its {@link Release}, a phantom reference to the
 *       wrapper that holds only the handle and the generation, never the wrapper (so it cannot
 *       keep the wrapper alive), and releases them once the wrapper is unreachable.
 *       {@code close()} marks the handle closed, then runs it; it runs once, so the reference
 *       is released exactly once.</li>
 * </ul>
 */
final class NativeRef {
    private NativeRef() {}

    // The word's layout: tie.rs's WORD_* constants (`wrapper_word` makes the word, natives.rs
    // reads it), written here as literals so javac folds them into every test of a word;
    // WordLayoutTest compares them with native code's (`Native.constant`).
    static final int TYPE_SHIFT = 8;
    static final int TYPE_MASK = 0xFFFF;
    /** Set when the object has this frontend's slot: calls may keep and lend spares for it. */
    static final long SPARES = 1L << 24;
    /**
     * Set on a wrapper {@link TetherType#construct} made for an object nothing else holds: its
     * slot has no weak reference yet, so {@link TetherInstance#handle()} has native code make
     * one ({@code Native.track}) before the handle first goes to native code (tie.rs
     * {@code WORD_UNTRACKED}).
     */
    static final long UNTRACKED = 1L << 25;
    static final int GENERATION_SHIFT = 32;

    /** Register {@code wrapper}'s release: of {@code handle} of {@code word}'s generation. */
    static Cleaner.Cleanable register(Object wrapper, long handle, long word) {
        return new Release(wrapper, handle, generation(word));
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

    /**
     * A wrapper's release: what {@code Cleaner.register(wrapper, action)} gives, in one object
     * instead of the Cleaner's record and its action (one allocation per wrapper, and 24 bytes,
     * fewer; the records live until the wrapper dies, so the collector copies them). Each is
     * kept reachable in one of {@link #LISTS}' doubly linked lists (a phantom reference that
     * nothing reaches is never enqueued), chosen by thread so that threads making wrappers
     * rarely wait for one another; the {@code tether-cleaner} thread runs those the collector
     * enqueues. Whoever unlinks one (that thread, or {@code close()}) runs it, so it runs once.
     */
    private static final class Release extends PhantomReference<Object> implements Cleaner.Cleanable {
        private final long handle;
        private final long generation;
        /** Its list (the lock of its links), and its neighbours there; null once unlinked. */
        private final Release list;
        private Release prev;
        private Release next;

        /** A list's head: links only. */
        private Release() {
            super(null, null);
            this.handle = 0;
            this.generation = 0;
            this.list = this;
            this.prev = this;
            this.next = this;
        }

        Release(Object wrapper, long handle, long generation) {
            super(wrapper, QUEUE);
            this.handle = handle;
            this.generation = generation;
            this.list = LISTS[(int) Thread.currentThread().getId() & (LISTS.length - 1)];
            synchronized (list) {
                prev = list;
                next = list.next;
                list.next.prev = this;
                list.next = this;
            }
        }

        /** Release the reference unless it was already (the first caller unlinks it). */
        @Override
        public void clean() {
            boolean unlinked;
            synchronized (list) {
                unlinked = next != null;
                if (unlinked) {
                    prev.next = next;
                    next.prev = prev;
                    prev = null;
                    next = null;
                }
            }
            if (unlinked) {
                clear();
                Native.release(handle, generation);
            }
        }
    }

    private static final ReferenceQueue<Object> QUEUE = new ReferenceQueue<>();

    /** The lists that keep releases reachable (a power of two of them). */
    private static final Release[] LISTS = new Release[8];

    static {
        for (int i = 0; i < LISTS.length; i++) {
            LISTS[i] = new Release();
        }
        Thread cleaner = new Thread(NativeRef::runReleases, "tether-cleaner");
        cleaner.setDaemon(true);
        cleaner.start();
    }

    /** The {@code tether-cleaner} thread: run each release whose wrapper became unreachable. */
    private static void runReleases() {
        while (true) {
            try {
                ((Release) QUEUE.remove()).clean();
            } catch (Throwable t) {
                // An interrupt, or a release that failed: the thread goes on with the next one,
                // as a Cleaner's does.
            }
        }
    }
}
