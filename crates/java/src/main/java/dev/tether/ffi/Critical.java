package dev.tether.ffi;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.lang.reflect.Method;

/**
 * Calls of leaf Functions through {@code java.lang.foreign} critical downcalls (JDK 22+), which
 * skip the JNI transition (crates/java/src/critical.rs). A leaf ({@code FUNC_LEAF}) neither
 * blocks nor calls back into any language: the condition {@code Linker.Option.critical}
 * states. Two calls take this path, where it measured faster (docs/java.md): {@code call(x)}
 * with a plain argument (a wrapper, an int, null), and {@code callLong} of 1-3 ints to a leaf
 * with an int entry ({@code FUNC_INT_ENTRY}); the rest, and every JDK before 22, use the JNI
 * natives.
 *
 * <p>The handles are built reflectively, so this class compiles for Java 17 and the jar is one
 * for every JDK: on 17-21, or when the frontend's module has no native access (JEP 472: the
 * foreign linker is restricted too, and would print its own warning), they stay null.
 * {@code static final}, so {@code invokeExact} compiles to the downcall itself.
 */
final class Critical {
    private Critical() {}

    /** {@code -Dtether.critical=false} keeps every call on JNI. */
    static final String PROPERTY = "tether.critical";

    /** An entry's answer for "the result is the wrapper argument": return it. */
    static final long ARGUMENT = Native.constant("ARGUMENT_RESULT");
    /** An entry's answer for "not a call I take" (nothing was done): call through JNI. */
    static final long FALLBACK = Native.constant("FALLBACK_RESULT");

    /** {@code long call1(long fn, long word, long bits)}, or null. */
    static final MethodHandle CALL1;

    /** {@code long ints1(long fn, long a)} .. {@code ints3(fn, a, b, c)}, or null (all or none). */
    static final MethodHandle INTS1;
    static final MethodHandle INTS2;
    static final MethodHandle INTS3;

    /** Why the handles are null, for {@link #status()} (null when they are not). */
    private static final String UNAVAILABLE;

    static {
        MethodHandle call1 = null;
        MethodHandle[] ints = new MethodHandle[3];
        String why;
        try {
            why = unavailable();
            if (why == null) {
                call1 = bind(Native.criticalCall1Entry(), 3); // fn, word, bits
                for (int n = 1; n <= 3; n++) {
                    ints[n - 1] = bind(Native.criticalIntsEntry(n), 1 + n); // fn, the ints
                }
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            why = "the foreign linker refused: " + e;
            call1 = null;
            ints = new MethodHandle[3];
        }
        CALL1 = call1;
        INTS1 = ints[0];
        INTS2 = ints[1];
        INTS3 = ints[2];
        UNAVAILABLE = why;
    }

    // The downcall (CALL1 non-null: the caller checked). A critical downcall throws nothing;
    // invokeExact's signature says Throwable.

    static long call1(long fn, long word, long bits) {
        try {
            return (long) CALL1.invokeExact(fn, word, bits);
        } catch (Throwable t) {
            throw rethrown(t);
        }
    }

    static long ints1(long fn, long a) {
        try {
            return (long) INTS1.invokeExact(fn, a);
        } catch (Throwable t) {
            throw rethrown(t);
        }
    }

    static long ints2(long fn, long a, long b) {
        try {
            return (long) INTS2.invokeExact(fn, a, b);
        } catch (Throwable t) {
            throw rethrown(t);
        }
    }

    static long ints3(long fn, long a, long b, long c) {
        try {
            return (long) INTS3.invokeExact(fn, a, b, c);
        } catch (Throwable t) {
            throw rethrown(t);
        }
    }

    private static RuntimeException rethrown(Throwable t) {
        if (t instanceof RuntimeException) {
            return (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
        return new IllegalStateException("a critical downcall failed", t);
    }

    /** "critical downcalls" or why not (tests and diagnostics). */
    static String status() {
        return UNAVAILABLE == null ? "critical downcalls" : "JNI only: " + UNAVAILABLE;
    }

    /** Why this JVM takes no critical downcalls, or null if it does. */
    private static String unavailable() throws ReflectiveOperationException {
        if ("false".equals(System.getProperty(PROPERTY))) {
            return "-D" + PROPERTY + "=false";
        }
        if (Runtime.version().feature() < 22) {
            return "JDK " + Runtime.version().feature() + " has no critical downcalls";
        }
        Module module = Critical.class.getModule();
        if (!(boolean) Module.class.getMethod("isNativeAccessEnabled").invoke(module)) {
            return "native access is not enabled for " + (module.isNamed() ? module.getName() : "the class path");
        }
        return null;
    }

    /**
     * {@code Linker.nativeLinker().downcallHandle(MemorySegment.ofAddress(entry),
     * FunctionDescriptor.of(JAVA_LONG, JAVA_LONG x parameters), Linker.Option.critical(false))},
     * through reflection.
     */
    private static MethodHandle bind(long entry, int parameters) throws ReflectiveOperationException {
        Class<?> linkerClass = Class.forName("java.lang.foreign.Linker");
        Class<?> optionClass = Class.forName("java.lang.foreign.Linker$Option");
        Class<?> layoutClass = Class.forName("java.lang.foreign.MemoryLayout");
        Class<?> descriptorClass = Class.forName("java.lang.foreign.FunctionDescriptor");
        Class<?> segmentClass = Class.forName("java.lang.foreign.MemorySegment");
        Object linker = linkerClass.getMethod("nativeLinker").invoke(null);
        Object options = Array.newInstance(optionClass, 1);
        Array.set(options, 0, optionClass.getMethod("critical", boolean.class).invoke(null, false));
        Object jlong = Class.forName("java.lang.foreign.ValueLayout").getField("JAVA_LONG").get(null);
        Object layouts = Array.newInstance(layoutClass, parameters);
        for (int p = 0; p < parameters; p++) {
            Array.set(layouts, p, jlong);
        }
        Object descriptor =
                descriptorClass.getMethod("of", layoutClass, layoutClass.arrayType()).invoke(null, jlong, layouts);
        if (entry == 0) {
            throw new IllegalStateException("no critical entry for " + parameters + " parameters");
        }
        Object address = segmentClass.getMethod("ofAddress", long.class).invoke(null, entry);
        Method downcall = linkerClass.getMethod("downcallHandle", segmentClass, descriptorClass, options.getClass());
        return (MethodHandle) downcall.invoke(linker, address, descriptor, options);
    }
}
