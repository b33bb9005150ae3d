package dev.tether.ffi;

/**
 * A native error of kind AttributeError: a type has no field or method by that name, or the
 * field is read-only ({@code obj.get("third")}, {@code obj.call("nope")}, setting a field with
 * no setter).
 */
public class TetherAttributeError extends TetherException {
    private static final long serialVersionUID = 1L;

    public TetherAttributeError(String kind, String message, String nativeBacktrace) {
        super(kind, message, nativeBacktrace);
    }
}
