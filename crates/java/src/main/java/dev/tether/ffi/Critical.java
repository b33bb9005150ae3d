package dev.tether.ffi;

import java.lang.invoke.MethodHandle;
import java.lang.reflect.Array;
import java.lang.reflect.Method;

/**
 * Calls of leaf Functions through {@code java.lang.foreign} critical downcalls (JDK 22+), which
 * skip the JNI transition (crates/java/src/critical.rs). A leaf ({@code FUNC_LEAF}) neither
 * blocks nor calls back into any language: the condition {@code Linker.Option.critical}
 * states. Only {@code call(x)} with a plain argument (a wrapper, an int, null) takes this path,
 * where it measured faster (docs/java.md); the rest, and every JDK before 22, use the JNI
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

    /** Why the handles are null, for {@link #status()} (null when they are not). */
    private static final String UNAVAILABLE;

    static {
        MethodHandle call1 = null;
        String why;
        try {
            why = unavailable();
            if (why == null) {
                call1 = bindCall1();
            }
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            why = "the foreign linker refused: " + e;
        }
        CALL1 = call1;
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
     * FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
     * Linker.Option.critical(false))} for the call1 entry, through reflection.
     */
    private static MethodHandle bindCall1() throws ReflectiveOperationException {
        Class<?> linkerClass = Class.forName("java.lang.foreign.Linker");
        Class<?> optionClass = Class.forName("java.lang.foreign.Linker$Option");
        Class<?> layoutClass = Class.forName("java.lang.foreign.MemoryLayout");
        Class<?> descriptorClass = Class.forName("java.lang.foreign.FunctionDescriptor");
        Class<?> segmentClass = Class.forName("java.lang.foreign.MemorySegment");
        Object linker = linkerClass.getMethod("nativeLinker").invoke(null);
        Object options = Array.newInstance(optionClass, 1);
        Array.set(options, 0, optionClass.getMethod("critical", boolean.class).invoke(null, false));
        Object jlong = Class.forName("java.lang.foreign.ValueLayout").getField("JAVA_LONG").get(null);
        Object parameters = Array.newInstance(layoutClass, 3); // fn, word, bits
        for (int p = 0; p < 3; p++) {
            Array.set(parameters, p, jlong);
        }
        Object descriptor =
                descriptorClass.getMethod("of", layoutClass, layoutClass.arrayType()).invoke(null, jlong, parameters);
        Object address = segmentClass.getMethod("ofAddress", long.class).invoke(null, Native.criticalCall1Entry());
        Method downcall = linkerClass.getMethod("downcallHandle", segmentClass, descriptorClass, options.getClass());
        return (MethodHandle) downcall.invoke(linker, address, descriptor, options);
    }
}
