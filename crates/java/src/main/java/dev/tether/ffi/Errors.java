package dev.tether.ffi;

/** Native error kinds to Java exceptions (the table in docs/java.md), chosen by the kind's code. */
final class Errors {
    private Errors() {}

    // The codes from their one source (tether-core's constants.rs, through Native.constant).
    private static final int TYPE_ERROR = (int) Native.constant("ERROR_TYPE_ERROR");
    private static final int VALUE_ERROR = (int) Native.constant("ERROR_VALUE_ERROR");
    private static final int INDEX_ERROR = (int) Native.constant("ERROR_INDEX_ERROR");
    private static final int KEY_ERROR = (int) Native.constant("ERROR_KEY_ERROR");
    private static final int ATTRIBUTE_ERROR = (int) Native.constant("ERROR_ATTRIBUTE_ERROR");
    private static final int MEMORY_ERROR = (int) Native.constant("ERROR_MEMORY_ERROR");

    /** The exception for a native error of kind {@code code} named {@code kind}. */
    static Throwable create(int code, String kind, String message, String backtrace) {
        if (code == TYPE_ERROR) {
            return new TetherTypeError(kind, message, backtrace);
        } else if (code == VALUE_ERROR) {
            return new TetherValueError(kind, message, backtrace);
        } else if (code == INDEX_ERROR) {
            return new TetherIndexError(kind, message, backtrace);
        } else if (code == KEY_ERROR) {
            return new TetherKeyError(kind, message, backtrace);
        } else if (code == ATTRIBUTE_ERROR) {
            return new TetherAttributeError(kind, message, backtrace);
        } else if (code == MEMORY_ERROR) {
            return new TetherOutOfMemoryError(kind, message, backtrace);
        }
        return new TetherException(kind, message, backtrace);
    }
}
