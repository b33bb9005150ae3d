package dev.tether.ffi;

/**
 * Implemented by every exception tether throws for a native error. The exception classes
 * extend the JDK exception a Java programmer expects for the kind (see docs/java.md), so to
 * catch any tether error catch {@link RuntimeException} and test {@code instanceof TetherError}
 * (and {@link TetherOutOfMemoryError}, an {@link OutOfMemoryError}, for kind MemoryError).
 */
public interface TetherError {
    /** The native error kind: TypeError, ValueError, IndexError, KeyError, AttributeError, RuntimeError, RustPanic, MemoryError, ... */
    String kind();

    /** The native backtrace, when one was captured (set RUST_BACKTRACE=1), else "". */
    String nativeBacktrace();
}
