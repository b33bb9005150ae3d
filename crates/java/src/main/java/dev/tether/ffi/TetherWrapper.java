package dev.tether.ffi;

import java.lang.ref.Cleaner;

/**
 * The base of the classes generated bindings make per type ({@code tether-bindgen}; see
 * docs/bindings.md): a generated class such as {@code Scene} IS the canonical wrapper of its
 * native objects, so {@code scene.find("door") == door} holds with static types and no cast.
 *
 * <p>A generated class registers itself for its type key ({@link Tether#registerClass}) and
 * has two constructors: one taking a {@link Token} (how the frontend makes the wrapper of an
 * object native code returns) and the public ones calling the type's native constructor
 * ({@link #TetherWrapper(String, Object...)}), which make the instance being constructed the
 * new object's wrapper. Release works as for every wrapper: {@link #close()} or the Cleaner.
 */
public abstract class TetherWrapper implements TetherObject, Tied {
    /**
     * The handle, negative once closed, and how this wrapper passes itself to a call native
     * (see {@link NativeRef}); package-private, so generated classes' members never clash.
     */
    long handle;
    long word;
    /**
     * Its Cleaner's registration, set once with the fields above (volatile: a wrapper may reach
     * another thread by a race).
     */
    volatile Cleaner.Cleanable cleanable;

    /**
     * What the frontend hands a generated class's factory: the native object it wraps. Only
     * the frontend makes one.
     */
    public static final class Token {
        final long handle;
        final long word;

        Token(long handle, long word) {
            this.handle = handle;
            this.word = word;
        }
    }

    /** The wrapper of a native object the frontend is returning to Java. */
    protected TetherWrapper(Token token) {
        this.handle = token.handle;
        this.word = token.word;
        this.cleanable = NativeRef.register(this, token.handle, token.word);
    }

    /**
     * Call the constructor of type {@code typeKey} with {@code args} and make this instance
     * the new object's canonical wrapper.
     *
     * @throws TetherException if the constructor returned an object that has a Java wrapper
     *     already (this instance cannot become it)
     */
    protected TetherWrapper(String typeKey, Object... args) {
        Marshal.Encoded e = Marshal.encodeAll(args, new Marshal.Member(-1, typeKey, null));
        Object made = Native.constructInto(this, typeKey, e.kinds, e.bits, e.refs);
        if (made != this) {
            throw new TetherException("RuntimeError", "the constructor of " + typeKey
                    + " returned an object that has a Java wrapper already", "");
        }
    }

    /** Become the wrapper of {@code handle} (called by native code while it ties the object). */
    final void adopt(long handle, long word) {
        if (cleanable != null) {
            throw new IllegalStateException("this wrapper is tied already");
        }
        this.handle = handle;
        this.word = word;
        cleanable = NativeRef.register(this, handle, word);
    }

    /** The live handle; throws if this wrapper was closed. */
    final long handle() {
        return NativeRef.handle(handle, word);
    }

    /**
     * {@code receiver} followed by {@code args}: the arguments of a method's Function (see
     * {@link TetherType#methodFunction}) for a call given as an array; a null array is one
     * null argument, as for {@link TetherFunction#call(Object...)}.
     */
    protected static Object[] withReceiver(Object receiver, Object[] args) {
        Object[] given = args == null ? new Object[] {null} : args;
        Object[] all = new Object[given.length + 1];
        all[0] = receiver;
        System.arraycopy(given, 0, all, 1, given.length);
        return all;
    }

    /** Read a field (by its registry name). */
    protected final Object read(String field) {
        return ObjectOps.get(this, field);
    }

    /** Write a field (by its registry name). */
    protected final void write(String field, Object value) {
        ObjectOps.set(this, field, value);
    }

    // The conversions generated code applies to results and callback arguments.

    /** {@code value} as an int result ({@code long}); a TetherTypeError if it is none. */
    public static long asLong(Object value) {
        if (value instanceof Long) {
            return (Long) value;
        }
        throw new TetherTypeError("TypeError", "expected an int result, got " + describe(value), "");
    }

    /** {@code value} as a float result. */
    public static double asDouble(Object value) {
        if (value instanceof Double) {
            return (Double) value;
        }
        throw new TetherTypeError("TypeError", "expected a float result, got " + describe(value), "");
    }

    /** {@code value} as a bool result. */
    public static boolean asBoolean(Object value) {
        if (value instanceof Boolean) {
            return (Boolean) value;
        }
        throw new TetherTypeError("TypeError", "expected a bool result, got " + describe(value), "");
    }

    /**
     * {@code value} as a generic type (a {@code List<Node>} for an {@code Array[scene.Node]}
     * result): what the signature promises, not checked item by item.
     */
    @SuppressWarnings("unchecked")
    public static <T> T cast(Object value) {
        return (T) value;
    }

    private static String describe(Object value) {
        return value == null ? "null" : value.getClass().getName();
    }

    @Override
    public String toString() {
        return ObjectOps.describe(this);
    }
}
