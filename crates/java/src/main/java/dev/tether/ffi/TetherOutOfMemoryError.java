package dev.tether.ffi;

/**
 * A native error of kind MemoryError: a native object could not be allocated. An {@link
 * OutOfMemoryError}, as the JVM's own allocation failures are; unlike those, the JVM and tether keep
 * working (nothing was allocated, nothing is left half made).
 */
public class TetherOutOfMemoryError extends OutOfMemoryError implements TetherError {
    private static final long serialVersionUID = 1L;
    private final String kind;
    private final String nativeBacktrace;

    public TetherOutOfMemoryError(String kind, String message, String nativeBacktrace) {
        super(message);
        this.kind = kind;
        this.nativeBacktrace = nativeBacktrace == null ? "" : nativeBacktrace;
    }

    @Override
    public String kind() {
        return kind;
    }

    @Override
    public String nativeBacktrace() {
        return nativeBacktrace;
    }

    @Override
    public String toString() {
        return getClass().getName() + " [" + kind + "]: " + getMessage();
    }
}
