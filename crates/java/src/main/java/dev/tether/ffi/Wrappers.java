package dev.tether.ffi;

import java.util.Arrays;
import java.util.function.Function;

/** Makes the wrapper for a native object being tied (called from crates/java/src/tie.rs). */
final class Wrappers {
    private Wrappers() {}

    // Builtin type indices, from their one source (tether-core's constants.rs).
    static final int FUNCTION = (int) Native.constant("TYPE_FUNCTION");
    static final int ARRAY = (int) Native.constant("TYPE_ARRAY");
    static final int MAP = (int) Native.constant("TYPE_MAP");
    static final int MODULE = (int) Native.constant("TYPE_MODULE");

    /** A registered class: its factory, by type index (null where none is registered). */
    private static volatile Registered[] byIndex = new Registered[0];

    /** The class generated bindings registered for a type key, with the factory making it. */
    static final class Registered {
        final Class<? extends TetherWrapper> cls;
        final Function<TetherWrapper.Token, ? extends TetherWrapper> factory;

        Registered(Class<? extends TetherWrapper> cls, Function<TetherWrapper.Token, ? extends TetherWrapper> factory) {
            this.cls = cls;
            this.factory = factory;
        }
    }

    /** Make {@code cls} (through {@code factory}) the wrapper class of type {@code typeIndex}. */
    static synchronized void register(int typeIndex, Class<? extends TetherWrapper> cls,
            Function<TetherWrapper.Token, ? extends TetherWrapper> factory) {
        Registered[] current = byIndex;
        Registered existing = typeIndex < current.length ? current[typeIndex] : null;
        if (existing != null) {
            if (existing.cls == cls) {
                return;
            }
            throw new TetherValueError("ValueError", "type " + Native.typeKey(typeIndex) + " is bound to "
                    + existing.cls.getName() + " already; cannot bind it to " + cls.getName(), "");
        }
        Registered[] next = Arrays.copyOf(current, Math.max(current.length, typeIndex + 1));
        next[typeIndex] = new Registered(cls, factory);
        byIndex = next;
    }

    /** The class registered for a type index, or null. */
    static Registered registered(int typeIndex) {
        Registered[] current = byIndex;
        return typeIndex >= 0 && typeIndex < current.length ? current[typeIndex] : null;
    }

    /** The wrapper of {@code handle}, whose word ({@link NativeRef}) native code made. */
    static Object create(long handle, long word) {
        int typeIndex = NativeRef.typeIndex(word);
        if (typeIndex == FUNCTION) {
            return new TetherFunction(handle, word);
        } else if (typeIndex == ARRAY) {
            return new TetherList(handle, word);
        } else if (typeIndex == MAP) {
            return new TetherMap(handle, word);
        } else if (typeIndex == MODULE) {
            return new TetherModule(handle, word);
        }
        Registered r = registered(typeIndex);
        if (r != null) {
            return r.factory.apply(new TetherWrapper.Token(handle, word));
        }
        return new TetherInstance(handle, word);
    }

    /**
     * The new object's wrapper is {@code wrapper}, a generated class's instance whose
     * constructor is running ({@link TetherWrapper#TetherWrapper(String, Object...)}); it owns
     * the reference from now on.
     */
    static Object adopt(Object wrapper, long handle, long word) {
        ((TetherWrapper) wrapper).adopt(handle, word);
        return wrapper;
    }
}
