package dev.tether.ffi;

/**
 * The canonical Java wrapper of one native tether object.
 *
 * <p>For as long as the native object lives, every path that returns it to Java returns the
 * same wrapper while that wrapper is reachable ({@code echo(x) == x}, {@code p.get("first") ==
 * p.get("first")}). A wrapper holds one native reference, released when it is garbage
 * collected (through a {@link java.lang.ref.Cleaner}) or, deterministically, by {@link #close()}.
 * Using a closed wrapper throws {@link IllegalStateException}.
 *
 * <p>Every wrapper class implements the reflective operations through these defaults, which
 * reach each class's native reference through {@code ObjectOps}.
 */
public interface TetherObject extends AutoCloseable {
    /** The registered type key, e.g. {@code "testing.Pair"}. */
    default String typeKey() {
        return ObjectOps.typeKey(this);
    }

    /** Reflection for this object's type. */
    default TetherType type() {
        return TetherType.of(ObjectOps.typeIndexOf(this));
    }

    /** Read a field through reflection. */
    default Object get(String field) {
        return ObjectOps.get(this, field);
    }

    /** Write a field through reflection. */
    default void set(String field, Object value) {
        ObjectOps.set(this, field, value);
    }

    /** Call a method through reflection; the object is passed as {@code self}. */
    default Object call(String method, Object... args) {
        return ObjectOps.call(this, method, args);
    }

    /** Release the native reference now. Idempotent. */
    @Override
    default void close() {
        ObjectOps.close(this);
    }

    default boolean isClosed() {
        return ObjectOps.isClosed(this);
    }
}
