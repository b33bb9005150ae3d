package dev.tether.ffi;

/** Native error kinds to Java exceptions (the table in docs/java.md). */
final class Errors {
    private Errors() {}

    static Throwable create(String kind, String message, String backtrace) {
        switch (kind) {
            case "TypeError":
                return new TetherTypeError(kind, message, backtrace);
            case "ValueError":
                return new TetherValueError(kind, message, backtrace);
            case "IndexError":
                return new TetherIndexError(kind, message, backtrace);
            case "KeyError":
                return new TetherKeyError(kind, message, backtrace);
            default:
                return new TetherException(kind, message, backtrace);
        }
    }
}
