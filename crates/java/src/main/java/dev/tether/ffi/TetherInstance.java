package dev.tether.ffi;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;

/** The wrapper of a native object of a registered type (anything but the builtin containers). */
public final class TetherInstance implements TetherObject, Tied {
    /**
     * The handle, negative once closed (see {@link NativeRef}); read by calls with {@link #word}.
     * Calls read it plainly; {@link #close} and {@link #bind} through {@link #HANDLE}, volatile.
     */
    long handle;
    /** How this wrapper passes itself to a call native (see {@link NativeRef}). */
    long word;
    /**
     * Its Cleaner's registration; null while a wrapper made before its object waits for
     * {@link #bind}. Volatile, as {@link #close}'s and {@link #bind}'s accesses to the handle:
     * {@code bind} writes it then reads the handle, {@code close} the other way round, so one
     * of them sees the other and the reference is released.
     */
    private volatile Cleaner.Cleanable cleanable;

    private static final VarHandle HANDLE;

    static {
        try {
            HANDLE = MethodHandles.lookup().findVarHandle(TetherInstance.class, "handle", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    TetherInstance(long handle, long word) {
        this.handle = handle;
        this.word = word;
        this.cleanable = NativeRef.register(this, handle, word);
    }

    /**
     * A wrapper not tied yet, for a constructor call ({@link TetherType#construct}) to tie:
     * native code writes {@link #handle} and {@link #word} while it ties the new object (before
     * any other thread can reach this wrapper through the object's slot), and the caller then
     * calls {@link #bind}. A wrapper that is never bound (the call failed, or returned another
     * wrapper) owns nothing.
     */
    TetherInstance(int typeIndex) {
        this.word = NativeRef.unboundWord(typeIndex);
    }

    /**
     * The live handle; throws if this wrapper was closed. Every route by which native code
     * gets this wrapper's object goes through here, so an untracked wrapper is tracked first.
     */
    long handle() {
        if ((word & NativeRef.UNTRACKED) != 0) {
            track();
        }
        return NativeRef.handle(handle, word);
    }

    /**
     * Give this wrapper's slot its weak reference before native code first gets the object,
     * so native code returning it finds this wrapper (see {@link NativeRef#UNTRACKED}). Threads
     * racing here each try; one reference is kept.
     */
    private void track() {
        word = Native.track(this, NativeRef.handle(handle, word), word);
    }

    /**
     * Register the Cleaner of a wrapper native code has just tied (see {@link
     * #TetherInstance(int)}). If that fails (no memory for the Cleaner's record), the reference
     * is released at once and the failure rethrown. A {@link #close} by another thread that
     * reached this wrapper meanwhile left the release to this.
     */
    void bind() {
        long h = (long) HANDLE.getVolatile(this);
        long live = h < 0 ? ~h : h;
        Cleaner.Cleanable c;
        try {
            c = NativeRef.register(this, live, word);
        } catch (Throwable t) {
            HANDLE.setVolatile(this, ~live);
            Native.release(live, NativeRef.generation(word));
            throw t;
        }
        cleanable = c;
        if ((long) HANDLE.getVolatile(this) < 0) {
            c.clean();
        }
    }

    /** Mark the handle closed, then release the reference (idempotent; see {@link #bind}). */
    void closeNow() {
        long h = (long) HANDLE.getVolatile(this);
        if (h > 0) {
            HANDLE.setVolatile(this, ~h);
        }
        Cleaner.Cleanable c = cleanable;
        if (c != null) {
            c.clean();
        } // else not bound yet: bind() releases it
    }

    @Override
    public String toString() {
        return ObjectOps.describe(this);
    }
}
