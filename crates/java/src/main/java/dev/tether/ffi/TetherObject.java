package dev.tether.ffi;

/**
 * The canonical Java wrapper of one native tether object.
 *
 * <p>For as long as the native object lives, every path that returns it to Java returns the
 * same wrapper while that wrapper is reachable ({@code echo(x) == x}, {@code p.get("first") ==
 * p.get("first")}). A wrapper holds one native reference, released when it is garbage
 * collected (through a {@link java.lang.ref.Cleaner}) or, deterministically, by {@link #close()}.
 * Using a closed wrapper throws {@link IllegalStateException}.
 */
public interface TetherObject extends AutoCloseable {
    /** The registered type key, e.g. {@code "testing.Pair"}. */
    String typeKey();

    /** Reflection for this object's type. */
    TetherType type();

    /** Read a field through reflection. */
    Object get(String field);

    /** Write a field through reflection. */
    void set(String field, Object value);

    /** Call a method through reflection; the object is passed as {@code self}. */
    Object call(String method, Object... args);

    /** Release the native reference now. Idempotent. */
    @Override
    void close();

    boolean isClosed();
}
