package dev.tether.ffi;

/** A native error of kind TypeError (wrong argument type or count). */
public class TetherTypeError extends IllegalArgumentException implements TetherError {
    private static final long serialVersionUID = 1L;
    private final String kind;
    private final String nativeBacktrace;

    public TetherTypeError(String kind, String message, String nativeBacktrace) {
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
