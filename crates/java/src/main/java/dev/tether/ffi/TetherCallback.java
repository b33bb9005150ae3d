package dev.tether.ffi;

/**
 * A Java function native code can call. Passed as an argument, it becomes a native Function;
 * the same callback passed twice is the same native Function, and it comes back to Java as
 * itself ({@code echo.call(cb) == cb}). A {@code java.util.function.Function<Object[], Object>}
 * works the same way, and so does a {@code java.util.function.Function<Object, Object>} as a one-argument callback (it gets the argument itself).
 */
@FunctionalInterface
public interface TetherCallback {
    Object call(Object... args);
}
