package dev.tether.ffi;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The JNI entry points of libtether_java, and its loading.
 *
 * <p>The library loads from {@code -Dtether.library.path} when that property is set, otherwise
 * from the jar's {@code /native/<os>-<arch>/libtether_java.so} resource, extracted to a
 * temporary file first. Everything here is internal; the public API is {@link Tether}.
 */
final class Native {
    private Native() {}

    static final String LIBRARY_PROPERTY = "tether.library.path";

    static {
        load();
        init();
    }

    private static void load() {
        String explicit = System.getProperty(LIBRARY_PROPERTY);
        if (explicit != null && !explicit.isEmpty()) {
            System.load(Path.of(explicit).toAbsolutePath().toString());
            return;
        }
        String resource = "/native/" + platform() + "/" + System.mapLibraryName("tether_java");
        try (InputStream in = Native.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("tether-ffi: this jar has no native library for " + platform()
                        + " (resource " + resource + "); set -D" + LIBRARY_PROPERTY + "=<path to libtether_java>");
            }
            Path dir = Files.createTempDirectory("tether-ffi");
            Path lib = dir.resolve(System.mapLibraryName("tether_java"));
            Files.copy(in, lib, StandardCopyOption.REPLACE_EXISTING);
            lib.toFile().deleteOnExit();
            dir.toFile().deleteOnExit();
            System.load(lib.toAbsolutePath().toString());
        } catch (IOException e) {
            UnsatisfiedLinkError err = new UnsatisfiedLinkError("tether-ffi: cannot extract the native library: " + e);
            err.initCause(e);
            throw err;
        }
    }

    static String platform() {
        String os = System.getProperty("os.name").toLowerCase(java.util.Locale.ROOT);
        String arch = System.getProperty("os.arch").toLowerCase(java.util.Locale.ROOT);
        String osName = os.contains("linux") ? "linux" : os.contains("mac") ? "macos" : os.contains("win") ? "windows" : os;
        String archName = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64" : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
        return osName + "-" + archName;
    }

    /** Forces loading (class initialisation) of the library. */
    static void ensureLoaded() {}

    static native void init();

    static native void release(long handle, long generation);

    /** Give an untracked wrapper its slot's weak reference; its word without the bit. */
    static native long track(TetherInstance wrapper, long handle, long word);

    static native Object call0(long function);

    static native Object call1(long function, long kind, long bits, Object ref);

    /**
     * {@code call(x)} of a leaf Function with one plain argument, through JNI with the critical
     * downcall's protocol ({@link Critical#call1}): {@code Critical.ARGUMENT} when the result is
     * the argument's own wrapper, {@code Critical.FALLBACK} for a call it does not take, else
     * {@link #PENDING} with the result or error for {@link #takePending}. No object crosses, so
     * the JNI stub handles no references (JDKs without critical downcalls).
     */
    static native long leaf1(long function, long word, long bits);

    static native Object call2(long function, long k0, long b0, Object r0, long k1, long b1, Object r1);

    static native Object call3(long function, long k0, long b0, Object r0, long k1, long b1, Object r1,
            long k2, long b2, Object r2);

    // The kinds of call1..call3 and call1L..call3L are Marshal.fastWord's: a wrapper's word
    // (NativeRef) or a plain kind.

    static native Object call(long function, int[] kinds, long[] bits, Object[] refs);

    /**
     * What the {@code call*L} natives return when the result is not a plain int (or is an int
     * equal to this value): the result is then parked for {@link #takePending()}, which must
     * be called next on the same thread (crates/java/src/natives.rs, {@code PENDING_RESULT}).
     */
    static final long PENDING = constant("PENDING_RESULT");

    // As call0..call3, for functions whose results have been ints: an int result comes back
    // as a plain long (boxed in Java, no upcall from native code), anything else as PENDING.

    static native long call0L(long function);

    /** The address of the critical downcall entry of {@code call(x)} ({@link Critical}). */
    static native long criticalCall1Entry();

    /** The address of the critical downcall entry of {@code callLong} with {@code n} (1-3) ints. */
    static native long criticalIntsEntry(int n);

    /** The {@code FUNC_*} flags of the Function at {@code function}. */
    static native int functionFlags(long function);

    static native long call1L(long function, long kind, long bits, Object ref);

    static native long call2L(long function, long k0, long b0, Object r0, long k1, long b1, Object r1);

    static native long call3L(long function, long k0, long b0, Object r0, long k1, long b1, Object r1,
            long k2, long b2, Object r2);

    // As call1L..call3L when every argument is an int: bare longs, no kinds, no refs.

    static native long ints1(long function, long a);

    static native long ints2(long function, long a, long b);

    static native long ints3(long function, long a, long b, long c);

    /** The result the last {@code call*L} on this thread parked (it returned {@link #PENDING}). */
    static native Object takePending();

    /** The getter Function of a field of a type (or an ancestor), 0 if none. */
    static native long fieldGetter(int typeIndex, String name);

    static native long callbackFunction(Object callable, int identityHash);

    /**
     * A callback's result, encoded by {@code Marshal}, for the native frame that called it:
     * written into its result slot {@code slot} (only from {@code Callbacks}, with the slot of
     * the call running on this thread, or 0 for the one native code keeps for this thread's
     * running callback). Never throws: a failure is written into the slot.
     */
    static native void putResult(long slot, int kind, long bits, Object ref);

    /** As {@link #putResult}, for a callback that threw {@code t}. */
    static native void putThrown(long slot, Throwable t, String kind, String message);

    /** An owned handle to a new native host value holding {@code value} (its class named {@code typeName}). */
    static native long hostValue(Object value, String typeName);

    static native String functionName(long function);

    /**
     * The words of every argument error (the core's {@code argument_message}):
     * {@code testing.add() argument 'b': message}, by the parameter's name when the function's
     * signature has one; {@code index} is 0-based among the function's own arguments.
     */
    static native String argumentMessage(long function, int index, String message);

    /**
     * As {@link #argumentMessage} for argument {@code index} (0-based, as the caller wrote it) of
     * method {@code method} (its registry or Java name) of a type, or of its constructor when
     * {@code method} is null; the type by {@code typeKey}, or by {@code typeIndex} when that is null.
     */
    static native String memberArgumentMessage(int typeIndex, String typeKey, String method, int index, String message);

    /** The function's declaration in Java ({@code Long add(Long a, Long b)}; the receiver left out). */
    static native String functionSignature(long function);

    /** The function's result type in Java ({@code "Long"}; {@code "Object"} when unknown). */
    static native String functionResultType(long function);

    /** The parameters a caller writes: {@code Object[]{String name, String type, Boolean hasDefault, Object default}} each. */
    static native Object[] functionParameters(long function);

    /** The constructor's {@code Object[]{String signature, String resultType, Object[] parameters}}, or null. */
    static native Object[] typeConstructor(int typeIndex);

    static native Object getGlobal(String name);

    static native String[] listGlobals();

    static native String typeKey(int typeIndex);

    static native String[] typeKeys();

    static native int typeIndexOf(String key);

    /**
     * Every field, inherited ones first: {@code Object[]{String name, Boolean settable, String typeHint,
     * String doc, String javaName, String type}} each.
     */
    static native Object[] typeFields(int typeIndex);

    /**
     * Every method, inherited ones first: {@code Object[]{String name, Boolean isStatic, String doc,
     * String javaName, String signature, String resultType, Object[] parameters}} each.
     */
    static native Object[] typeMethods(int typeIndex);

    static native String typeDoc(int typeIndex);

    static native boolean typeHasConstructor(int typeIndex);

    static native Object construct(String key, int[] kinds, long[] bits, Object[] refs);

    /** The type's constructor Function as a handle (never released by the registry), 0 if none. */
    static native long constructorHandle(int typeIndex);

    // Construct through the handle {@code ctor} with 0-3 arguments encoded by Marshal.fastKind
    // and fastWord, tying a new object of type {@code typeIndex} to {@code wrapper}, a
    // TetherInstance not tied yet (its handle and word written natively; the caller binds its
    // NativeRef when {@code wrapper} comes back). Returns the object's wrapper (or the result
    // as any call).

    static native Object construct0(long ctor, int typeIndex, Object wrapper);

    static native Object construct1(long ctor, int typeIndex, Object wrapper, long k0, long b0, Object r0);

    static native Object construct2(long ctor, int typeIndex, Object wrapper, long k0, long b0, Object r0,
            long k1, long b1, Object r1);

    static native Object construct3(long ctor, int typeIndex, Object wrapper, long k0, long b0, Object r0,
            long k1, long b1, Object r1, long k2, long b2, Object r2);

    /** Construct like {@link #construct}, making {@code wrapper} the new object's wrapper (returns the object's wrapper). */
    static native Object constructInto(Object wrapper, String key, int[] kinds, long[] bits, Object[] refs);

    /** Compare {@code manifest} ({@code item\thash} lines) with the module's; ValueError naming the differences. */
    static native void checkBindings(long module, String manifest);

    static native Object getField(long handle, Object keep, String name);

    static native void setField(long handle, Object keep, String name, int kind, long bits, Object ref);

    static native Object callMethod(long handle, Object keep, String name, int[] kinds, long[] bits, Object[] refs);

    /**
     * The TetherFunction of method {@code name} (registry or Java name) of a type or an
     * ancestor, found as {@link #callMethod} finds it; TetherAttributeError if there is none.
     */
    static native Object methodFunction(int typeIndex, String name);

    static native int arrayLen(long handle);

    static native Object arrayGet(long handle, int index);

    static native int mapLen(long handle);

    static native Object mapKeyAt(long handle, int index);

    static native Object mapValueAt(long handle, int index);

    static native Object mapGet(long handle, int kind, long bits, Object ref, Object missing);

    static native Object loadModule(String path);

    static native Object moduleFunction(long handle, String name);

    static native String[] moduleFunctionNames(long handle);

    static native String[] moduleTypeKeys(long handle);

    static native long liveObjects();

    /** A constant shared with native code, from its one source; TetherKeyError if unknown. */
    static native long constant(String name);

    /** Every error kind native code raises. */
    static native String[] errorKinds();

    static native int sideTableSize();

    /** Spare references kept in the per-thread cells right now (all threads; see docs/java.md). */
    static native int sparesHeld();
}
