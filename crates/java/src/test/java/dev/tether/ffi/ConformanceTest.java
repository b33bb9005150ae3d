package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.assertBackTo;
import static dev.tether.ffi.TestSupport.live;
import static dev.tether.ffi.TestSupport.settledLive;
import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

/** One test per scenario id of docs/conformance.md. */
class ConformanceTest {
    private final TetherFunction echo = t("echo");

    private static TetherInstance pair(Object a, Object b) {
        return (TetherInstance) t("make_pair").call(a, b);
    }

    // ---- identity ----------------------------------------------------------------------------

    @Test
    void T01_echoIdentity() {
        TetherInstance p = pair(1L, 2L);
        assertSame(p, echo.call(p));
        assertEquals(42L, echo.call(42L));
        assertEquals(42L, echo.call(42), "ints come back as Long");
        assertEquals(-7L, echo.call(Long.valueOf(-7)));
        assertEquals(2.5, echo.call(2.5));
        assertEquals(true, echo.call(true));
        assertEquals(false, echo.call(false));
        assertEquals("short", echo.call("short"));
        String longText = "a longer string that is stored in a Str object, with ünïcödé and 🎉";
        assertEquals(longText, echo.call(longText));
        assertArrayEquals(new byte[] {1, 2, 3}, (byte[]) echo.call((Object) new byte[] {1, 2, 3}));
        byte[] big = new byte[1000];
        big[999] = 9;
        assertArrayEquals(big, (byte[]) echo.call((Object) big));
        assertNull(echo.call((Object) null));
    }

    @Test
    void T02_fieldIdentity() {
        TetherInstance inner = pair(1L, 2L);
        TetherInstance p = pair(inner, 0L);
        assertSame(p.get("first"), p.get("first"));
        assertSame(inner, p.get("first"));
        TetherInstance q = pair(3L, 4L);
        p.set("first", q);
        assertSame(q, p.get("first"));
        p.set("second", "text");
        assertEquals("text", p.get("second"));
    }

    @Test
    void T03_containerGetIdentity() {
        TetherList items = (TetherList) t("make_array").call(3L);
        assertEquals(3, items.size());
        for (int i = 0; i < 3; i++) {
            assertSame(items.get(i), items.get(i));
            assertEquals((long) i, ((TetherObject) items.get(i)).get("first"));
        }
        assertNotSame(items.get(0), items.get(1));

        TetherInstance a = pair(1L, null);
        TetherInstance b = pair(2L, null);
        TetherList fromJava = Tether.array(a, b, 3L, "s");
        assertSame(a, fromJava.get(0));
        assertSame(b, fromJava.get(1));
        assertEquals(List.of(a, b, 3L, "s"), fromJava);

        Map<Object, Object> entries = new LinkedHashMap<>();
        entries.put("k", a);
        entries.put(7L, b);
        TetherMap m = Tether.map(entries);
        assertSame(a, m.get("k"));
        assertSame(b, m.get(7L));
        assertNull(m.get("missing"));
        assertEquals(List.of("k", 7L), new ArrayList<>(m.keySet()));

        // A Java List passed as an argument becomes a native Array.
        TetherMap made = (TetherMap) t("make_map").call(List.of("x", "y"), List.of(a, b));
        assertSame(a, made.get("x"));
        assertSame(b, made.get("y"));
        assertTrue(made.containsKey("x"));
        assertSame(made, echo.call(made));
        assertEquals(6.0, t("sum").call(List.of(1L, 2L, 3.0)));
    }

    @Test
    void T04_callbackReceivesCallersWrapper() {
        TetherInstance x = pair(1L, 2L);
        AtomicReference<Object> seen = new AtomicReference<>();
        TetherCallback cb = args -> {
            seen.set(args[0]);
            return args[0];
        };
        assertSame(x, t("call").call(cb, x));
        assertSame(x, seen.get());
        Function<Object[], Object> plus = args -> (Long) args[0] + (Long) args[1];
        assertEquals(5L, t("call").call(plus, 2L, 3L));
        // A Function<Object, Object> is a one-argument callback: it gets the argument itself.
        Function<Object, Object> twice = v -> (Long) v * 2;
        assertEquals(42L, t("call").call(twice, 21L));
        assertEquals(8L, t("call").call(twice, 4L), "again, once its shape is known");
        // A Function<Object[], Object> called with one argument still gets the array.
        Function<Object[], Object> first = args -> args[0];
        assertSame(x, t("call").call(first, x));
        assertSame(x, t("call").call(first, x));
        // A ClassCastException thrown by the function's own body is its error, not a shape probe.
        Function<Object, Object> bad = v -> ((String) v).length();
        assertThrows(ClassCastException.class, () -> t("call").call(bad, 1L));
    }

    @Test
    void constructTakesShortNames() {
        assertEquals("testing.Pair", ((TetherObject) Tether.construct("Pair", 1L, 2L)).typeKey());
        assertThrows(TetherKeyError.class, () -> Tether.construct("NoSuchType"));
    }

    @Test
    void missingMembersAreAttributeErrors() {
        TetherInstance p = pair(1L, 2L);
        TetherAttributeError call = assertThrows(TetherAttributeError.class, () -> p.call("no_such_method"));
        assertEquals("AttributeError", call.kind());
        assertThrows(TetherAttributeError.class, () -> p.set("no_such_field", 1L));
    }

    @Test
    void T05_functionPassedTwiceIsSame() {
        TetherCallback f = args -> 1L;
        assertSame(f, echo.call(f));
        assertSame(f, echo.call(f));
        t("stash").call("T05", f);
        assertSame(f, t("take").call("T05"));
        // The same callable twice is the same native Function: a native map keyed by it finds it.
        TetherMap byFunction = (TetherMap) t("make_map").call(List.of(f), List.of("found"));
        assertEquals("found", byFunction.get(f));
        TetherInstance p = pair(f, f);
        assertSame(f, p.get("first"));
        assertSame(p.get("first"), p.get("second"));
    }

    @Test
    void T06_constructorBuildsTiedObject() {
        TetherInstance p = (TetherInstance) Tether.construct("testing.Pair", 1L, 2L);
        assertEquals(1L, p.get("first"));
        assertSame(p, echo.call(p));
        assertEquals("testing.Pair", p.typeKey());
        assertEquals("testing.Pair(first=1, second=2)", p.toString());
        Object viaType = Tether.type("testing.Pair").construct("a", "b");
        assertEquals("testing.Pair(first=\"a\", second=\"b\")", viaType.toString());
    }

    @Test
    void T07_reflection() {
        TetherType pairType = Tether.type("testing.Pair");
        assertEquals("testing.Pair", pairType.key());
        assertEquals(List.of("first", "second"), pairType.fields().stream().map(TetherType.Field::name).toList());
        assertTrue(pairType.field("first").settable());
        assertTrue(pairType.field("second").settable());
        assertNotNull(pairType.method("swap"));
        assertTrue(pairType.hasConstructor());
        TetherInstance p = pair(1L, 2L);
        TetherInstance swapped = (TetherInstance) p.call("swap");
        assertEquals(2L, swapped.get("first"));
        assertEquals(1L, swapped.get("second"));
        List<String> names = Tether.listGlobalFuncs();
        for (String n : List.of("echo", "make_pair", "add", "add3", "sum", "call", "call_in_thread", "raise_error", "panic",
                "stash", "take", "stash_clear", "drop_in_thread", "live_objects", "make_aligned", "is_aligned",
                "make_array", "make_map")) {
            assertTrue(names.contains("testing." + n), "listGlobalFuncs() has testing." + n);
        }
        assertTrue(Tether.typeKeys().contains("testing.Pair"));
        // A subtype: reflection lists every member, inherited ones first, and they work.
        TetherType triple = Tether.type("testing.Triple");
        assertEquals(List.of("first", "second", "third"), triple.fields().stream().map(TetherType.Field::name).toList());
        assertTrue(triple.field("third").settable());
        assertEquals(List.of("swap"), triple.methods().stream().map(TetherType.Method::name).toList());
        TetherInstance t = (TetherInstance) Tether.construct("testing.Triple", 1L, 2L, 3L);
        assertEquals(List.of(1L, 2L, 3L), List.of(t.get("first"), t.get("second"), t.get("third")));
        assertEquals(2L, ((TetherInstance) t.call("swap")).get("first"));
    }

    // ---- lifetime ----------------------------------------------------------------------------

    private static WeakReference<Object> stashPairAndForget(String key) {
        TetherInstance p = pair(7L, "seven");
        t("stash").call(key, p);
        return new WeakReference<>(p);
    }

    @Test
    void T10_wrapperDiesNativeLives() throws InterruptedException {
        WeakReference<Object> wrapper = stashPairAndForget("T10");
        for (int i = 0; i < 500 && wrapper.get() != null; i++) {
            System.gc();
            Thread.sleep(5);
        }
        assertNull(wrapper.get(), "the first wrapper was collected");
        TetherInstance back = (TetherInstance) t("take").call("T10");
        assertEquals(7L, back.get("first"));
        assertEquals("seven", back.get("second"));
        assertSame(back, echo.call(back));
    }

    private static void makeAndDrop(int n) {
        for (int i = 0; i < n; i++) {
            pair((long) i, null);
        }
    }

    @Test
    void T11_nativeDiesAfterWrapper() throws InterruptedException {
        long base = settledLive();
        makeAndDrop(1);
        assertTrue(live() >= base);
        assertBackTo(base);
    }

    @Test
    void T12_noGrowthOver100kCycles() throws InterruptedException {
        long base = settledLive();
        for (int round = 0; round < 10; round++) {
            makeAndDrop(10_000);
            System.gc();
        }
        assertBackTo(base);
    }

    @Test
    void T13_closeReleasesEarly() throws InterruptedException {
        long base = settledLive();
        TetherInstance p = pair(1L, 2L);
        long withP = live();
        p.close();
        assertTrue(p.isClosed());
        assertEquals(withP - 1, live(), "close() frees an object nothing else holds, at once");
        p.close(); // idempotent
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> p.get("first"));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> echo.call(p));
        assertEquals("<closed testing.Pair>", p.toString());

        TetherInstance kept = pair(3L, 4L);
        t("stash").call("T13", kept);
        kept.close();
        TetherInstance again = (TetherInstance) t("take").call("T13");
        assertNotSame(kept, again);
        assertEquals(3L, again.get("first"));
        again.close();
        assertBackTo(base);
    }

    @Test
    void T14_sideTableIdentity() {
        // Global functions are made at init, before the frontend allocator is installed: they
        // carry the builtin allocator's tag and are tied through the side table.
        TetherFunction a = Tether.getGlobalFunc("testing.echo");
        TetherFunction b = Tether.getGlobalFunc("testing.echo");
        assertSame(a, b);
        assertSame(a, echo.call(a));
        assertSame(a, a.call(a));
        assertTrue(Native.sideTableSize() > 0);
        t("stash").call("T14", a);
        assertSame(a, t("take").call("T14"));
    }

    private static void alignedRoundTrip() {
        for (long align : new long[] {8, 16, 32, 64, 4096}) {
            Object x = t("make_aligned").call(align);
            assertEquals(true, t("is_aligned").call(x), "aligned to " + align);
            assertSame(x, t("echo").call(x));
            ((TetherObject) x).close();
        }
    }

    @Test
    void T15_alignment() throws InterruptedException {
        long base = settledLive();
        alignedRoundTrip();
        assertBackTo(base);
        assertThrows(TetherValueError.class, () -> t("make_aligned").call(3L));
    }

    /** A user object with no native conversion: crosses as a host value. */
    static final class Payload {
        final long tag;

        Payload(long tag) {
            this.tag = tag;
        }
    }

    @Test
    void T16_hostValuesComeBackAsThemselves() throws InterruptedException {
        long base = settledLive();
        Payload o = new Payload(1);
        assertSame(o, echo.call(o));
        TetherInstance p = pair(o, null);
        assertSame(o, p.get("first"), "stored in a field");
        p.set("second", o);
        assertSame(o, p.get("second"));
        assertSame(o, ((TetherList) echo.call(List.of(o, 1L))).get(0), "an Array item");
        assertSame(o, ((TetherMap) echo.call(Map.of("k", o))).get("k"), "a Map value");
        AtomicReference<Object> seen = new AtomicReference<>();
        t("call").call((TetherCallback) args -> {
            seen.set(args[0]);
            return null;
        }, o);
        assertSame(o, seen.get(), "passed to a callback");
        for (Object v : new Object[] {new Object(), new int[] {1}, java.util.Optional.of(1), new StringBuilder("s"),
                Thread.currentThread(), new java.util.concurrent.atomic.AtomicLong(3), new java.math.BigDecimal("1.5")}) {
            assertSame(v, echo.call(v));
        }
        // A typed parameter names the parameter and the Java class.
        TetherTypeError typed = assertThrows(TetherTypeError.class, () -> t("add").call(o, 1L));
        assertEquals("testing.add() argument 'a' must be int, not dev.tether.ffi.ConformanceTest$Payload", typed.getMessage());
        // Another language's host value is a TypeError naming both languages, not a crash.
        TetherTypeError foreign = assertThrows(TetherTypeError.class, () -> t("foreign_value").call("Thing"));
        assertEquals("Thing (a Testing value) held by native code cannot be used from Java: "
                + "host values only go back to their own language", foreign.getMessage());
        p = null;
        assertBackTo(base);
    }

    private static WeakReference<Payload> stashPayload(String key, long tag) {
        Payload o = new Payload(tag);
        t("stash").call(key, o);
        return new WeakReference<>(o);
    }

    private static WeakReference<Payload> dropPayloadInThread(long tag) {
        Payload o = new Payload(tag);
        t("drop_in_thread").call(pair(o, null));
        return new WeakReference<>(o);
    }

    private static void awaitCollected(WeakReference<?> ref, String what) throws InterruptedException {
        for (int i = 0; i < 500 && ref.get() != null; i++) {
            System.gc();
            Thread.sleep(5);
        }
        assertNull(ref.get(), what);
    }

    @Test
    void T16_hostValuesLiveWhileNativeCodeHoldsThem() throws InterruptedException {
        long base = settledLive();
        WeakReference<Payload> ref = stashPayload("T16", 2);
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(5);
        }
        assertNotNull(ref.get(), "native code holds it");
        assertSame(ref.get(), t("take").call("T16"));
        awaitCollected(ref, "released when the last native reference went");
        // Released from a foreign native thread (attached to delete the global reference).
        awaitCollected(dropPayloadInThread(3), "released from a foreign native thread");
        // No growth over 100k round trips.
        Payload o = new Payload(4);
        for (int i = 0; i < 100_000; i++) {
            assertSame(o, echo.call(o));
        }
        WeakReference<Payload> last = new WeakReference<>(o);
        o = null;
        awaitCollected(last, "released after 100k round trips");
        assertBackTo(base);
    }

    @Test
    void T16_aHostValueStoredAndReleasedFrom16Threads() throws Exception {
        long base = settledLive();
        Payload o = new Payload(16);
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            String key = "T16-" + i;
            Thread th = new Thread(() -> {
                try {
                    start.await();
                    for (int j = 0; j < 300; j++) {
                        t("stash").call(key, o);
                        assertSame(o, t("take").call(key));
                        t("drop_in_thread").call(List.of(o, (long) j));
                        assertSame(o, ((TetherList) echo.call(List.of(o))).get(0));
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            threads.add(th);
            th.start();
        }
        start.countDown();
        for (Thread th : threads) {
            th.join();
        }
        assertNull(failure.get());
        assertBackTo(base);
    }

    private static WeakReference<Object> stashWithCleaner(String key, java.lang.ref.Cleaner cleaner,
            java.util.concurrent.atomic.AtomicInteger cleaned) {
        TetherInstance p = pair(1L, 2L);
        cleaner.register(p, cleaned::incrementAndGet);
        t("stash").call(key, p);
        return new WeakReference<>(p);
    }

    @Test
    void T17_weakReferencesToWrappers() throws InterruptedException {
        long base = settledLive();
        java.lang.ref.Cleaner cleaner = java.lang.ref.Cleaner.create();
        java.util.concurrent.atomic.AtomicInteger cleaned = new java.util.concurrent.atomic.AtomicInteger();
        WeakReference<Object> ref = stashWithCleaner("T17", cleaner, cleaned);
        for (int i = 0; i < 500 && (ref.get() != null || cleaned.get() == 0); i++) {
            System.gc();
            Thread.sleep(5);
        }
        // The weak reference and the Cleaner go with the wrapper; the native object lives on.
        assertNull(ref.get());
        assertEquals(1, cleaned.get());
        TetherInstance back = (TetherInstance) t("take").call("T17");
        assertEquals(1L, back.get("first"));
        assertSame(back, new WeakReference<>(back).get());
        back = null;
        assertBackTo(base);
    }

    @Test
    void T18_subclassingIsNotOffered() {
        // docs/java.md: the reflective wrapper is final; generated classes (also final) are the
        // typed surface, and TetherWrapper's constructors are for them.
        assertTrue(java.lang.reflect.Modifier.isFinal(TetherInstance.class.getModifiers()));
        assertTrue(java.lang.reflect.Modifier.isFinal(TetherFunction.class.getModifiers()));
    }

    // ---- threads -----------------------------------------------------------------------------

    private static void stress(int threads, int iterations) throws InterruptedException {
        TetherList shared = (TetherList) t("make_array").call(8L);
        TetherFunction echo = t("echo");
        AtomicReferenceArray<WeakReference<Object>> seen = new AtomicReferenceArray<>(8);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int w = 0; w < threads; w++) {
            final int id = w;
            Thread th = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < iterations; i++) {
                        int k = (i + id) % 8;
                        Object a = shared.get(k);
                        assertSame(a, echo.call(a));
                        assertSame(a, shared.get(k));
                        assertEquals((long) k, ((TetherObject) a).get("first"));
                        WeakReference<Object> prev = seen.get(k);
                        Object earlier = prev == null ? null : prev.get();
                        if (earlier != null) {
                            assertSame(earlier, a, "one wrapper per native object at any moment");
                        }
                        seen.set(k, new WeakReference<>(a));
                        a = null; // drop, then refetch on a later iteration
                        if (i % 64 == id) {
                            System.gc();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }, "tether-stress-" + w);
            workers.add(th);
            th.start();
        }
        start.countDown();
        for (Thread th : workers) {
            th.join();
        }
        if (failure.get() != null) {
            throw new AssertionError("a stress thread failed", failure.get());
        }
    }

    @Test
    void T20_concurrentFetchDropRefetch() throws InterruptedException {
        long base = settledLive();
        stress(16, 2_000);
        assertBackTo(base);
    }

    @Test
    void T21_callbackFromNativeThread() {
        Thread caller = Thread.currentThread();
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        TetherInstance x = pair(1L, 2L);
        TetherCallback cb = args -> {
            ranOn.set(Thread.currentThread());
            assertSame(x, args[0]);
            return (Long) ((TetherObject) args[0]).get("first") + 41L;
        };
        assertEquals(42L, t("call_in_thread").call(cb, x));
        assertNotNull(ranOn.get());
        assertNotSame(caller, ranOn.get(), "the callback ran on the native thread");
        // Many times: each native thread attaches and detaches again.
        for (int i = 0; i < 20; i++) {
            assertEquals((long) i, t("call_in_thread").call((TetherCallback) args -> args[0], (long) i));
        }
    }

    private static void stashAndClearOnForeignThread() {
        t("stash").call("T22-pair", pair(1L, 2L));
        t("stash").call("T22-callback", (TetherCallback) args -> null);
        t("call_in_thread").call(t("stash_clear"));
        TetherInstance p = pair(3L, 4L);
        t("drop_in_thread").call(p);
        assertEquals(3L, p.get("first"), "drop_in_thread drops its own reference only");
    }

    @Test
    void T22_freeOnForeignThread() throws InterruptedException {
        long base = settledLive();
        stashAndClearOnForeignThread();
        assertBackTo(base);
    }

    // ---- faults ------------------------------------------------------------------------------

    @Test
    void T30_wrongArgumentType() {
        TetherTypeError e = assertThrows(TetherTypeError.class, () -> t("add").call(1L, "x"));
        assertTrue(e instanceof IllegalArgumentException);
        assertEquals("TypeError", e.kind());
        assertEquals("testing.add() argument 'b' must be int, not str", e.getMessage());
        // Any other object crosses as a host value; a typed parameter names its class.
        TetherTypeError host = assertThrows(TetherTypeError.class, () -> t("add").call(1L, new Object()));
        assertEquals("testing.add() argument 'b' must be int, not java.lang.Object", host.getMessage());
        // Java's own encoding failure names the parameter too (the core's argument_message).
        TetherValueError named = assertThrows(TetherValueError.class,
                () -> t("add").call(1L, java.math.BigInteger.TWO.pow(64)));
        assertEquals("testing.add() argument 'b': int too large to convert to a 64-bit signed integer", named.getMessage());
    }

    @Test
    void T31_wrongArity() {
        TetherTypeError e = assertThrows(TetherTypeError.class, () -> t("add").call(1L));
        assertEquals("testing.add() missing 1 required argument: 'b'", e.getMessage());
        TetherTypeError more = assertThrows(TetherTypeError.class, () -> t("add").call(1L, 2L, 3L));
        assertEquals("testing.add() takes 2 positional arguments but 3 were given", more.getMessage());
    }

    @Test
    void T32_rustPanic() {
        TetherException e = assertThrows(TetherException.class, () -> t("panic").call("boom"));
        assertEquals("RustPanic", e.kind());
        assertEquals("boom", e.getMessage());
    }

    @Test
    void T33_callbackThrowsSameException() {
        IllegalStateException thrown = new IllegalStateException("from the callback");
        TetherCallback cb = args -> {
            throw thrown;
        };
        IllegalStateException caught = assertThrows(IllegalStateException.class, () -> t("call").call(cb));
        assertSame(thrown, caught);
        // Also across a native thread.
        IllegalStateException again = assertThrows(IllegalStateException.class, () -> t("call_in_thread").call(cb));
        assertSame(thrown, again);
        // A tether error raised inside a callback keeps its kind on the way through.
        TetherCallback nested = args -> t("raise_error").call("KeyError", "inner");
        TetherKeyError k = assertThrows(TetherKeyError.class, () -> t("call").call(nested));
        assertEquals("inner", k.getMessage());
    }

    @Test
    void T34_errorKinds() {
        Map<String, Class<? extends Throwable>> expected = new LinkedHashMap<>();
        expected.put("TypeError", TetherTypeError.class);
        expected.put("ValueError", TetherValueError.class);
        expected.put("IndexError", TetherIndexError.class);
        expected.put("KeyError", TetherKeyError.class);
        expected.put("AttributeError", TetherAttributeError.class);
        expected.put("RuntimeError", TetherException.class);
        expected.put("RustPanic", TetherException.class);
        expected.put("MemoryError", TetherOutOfMemoryError.class);
        // The core's kinds (constants.rs ERROR_KINDS) are exactly the ones mapped here.
        assertEquals(new java.util.TreeSet<>(expected.keySet()), new java.util.TreeSet<>(List.of(Native.errorKinds())));
        expected.put("SomethingElse", TetherException.class);
        for (Map.Entry<String, Class<? extends Throwable>> e : expected.entrySet()) {
            Throwable ex = assertThrows(e.getValue(), () -> t("raise_error").call(e.getKey(), "msg " + e.getKey()));
            assertEquals(e.getKey(), ((TetherError) ex).kind());
            assertEquals("msg " + e.getKey(), ex.getMessage());
        }
        assertTrue(IllegalArgumentException.class.isAssignableFrom(TetherTypeError.class));
        assertTrue(IllegalArgumentException.class.isAssignableFrom(TetherValueError.class));
        assertTrue(IndexOutOfBoundsException.class.isAssignableFrom(TetherIndexError.class));
        assertTrue(java.util.NoSuchElementException.class.isAssignableFrom(TetherKeyError.class));
        assertTrue(OutOfMemoryError.class.isAssignableFrom(TetherOutOfMemoryError.class));
        TetherList items = (TetherList) t("make_array").call(2L);
        assertThrows(IndexOutOfBoundsException.class, () -> items.get(5));
        TetherAttributeError attr = assertThrows(TetherAttributeError.class, () -> pair(1L, 2L).get("third"));
        assertEquals("AttributeError", attr.kind());
        assertThrows(TetherKeyError.class, () -> Tether.getGlobalFunc("testing.no_such_function"));
    }

    @Test
    void T35_closedHandle() {
        TetherFunction add = Tether.getGlobalFunc("testing.add");
        TetherList items = (TetherList) t("make_array").call(2L);
        items.close();
        assertThrows(IllegalStateException.class, () -> items.get(0));
        assertThrows(IllegalStateException.class, items::size);
        TetherInstance p = pair(1L, 2L);
        p.close();
        assertThrows(IllegalStateException.class, () -> add.call(p, 1L));
        assertThrows(IllegalStateException.class, () -> p.set("first", 3L));
        assertThrows(IllegalStateException.class, () -> p.call("swap"));
        add.close();
        assertThrows(IllegalStateException.class, () -> add.call(1L, 2L));
        // A fresh fetch of the same global works again.
        assertEquals(3L, Tether.getGlobalFunc("testing.add").call(1L, 2L));
    }

    @Test
    void T36_loadModuleFaults() throws Exception {
        TetherValueError missing = assertThrows(TetherValueError.class, () -> Tether.loadModule("/no/such/plugin.so"));
        assertTrue(missing.getMessage().contains("no such file"), missing.getMessage());
        Path notLibrary = Files.createTempFile("tether-not-a-library", ".so");
        Files.writeString(notLibrary, "this is not a shared library");
        try {
            TetherValueError e = assertThrows(TetherValueError.class, () -> Tether.loadModule(notLibrary.toString()));
            assertTrue(e.getMessage().contains("not a loadable shared library"), e.getMessage());
        } finally {
            Files.deleteIfExists(notLibrary);
        }
        Path noInit = TestSupport.nativeLibrary();
        assertTrue(Files.isRegularFile(noInit), "the JNI library exists at " + noInit);
        TetherValueError e = assertThrows(TetherValueError.class, () -> Tether.loadModule(noInit.toString()));
        assertTrue(e.getMessage().contains("is not a tether module"), e.getMessage());
        Path badAbi = TestSupport.pluginBadAbi();
        assertTrue(Files.isRegularFile(badAbi), "the bad-ABI test plugin was built: " + badAbi);
        TetherException abi = assertThrows(TetherException.class, () -> Tether.loadModule(badAbi.toString()));
        assertTrue(abi.getMessage().contains("ABI"), abi.getMessage());
    }

    private static void everyFault() {
        for (Runnable fault : List.<Runnable>of(
                () -> t("add").call(1L, "x"),
                () -> t("add").call(1L),
                () -> t("panic").call("boom"),
                () -> t("call").call((TetherCallback) args -> {
                    throw new IllegalStateException("x");
                }),
                () -> t("raise_error").call("ValueError", "v"),
                () -> Tether.loadModule("/no/such/plugin.so"),
                () -> t("take").call("T37-nothing-here"))) {
            assertThrows(RuntimeException.class, fault::run);
        }
    }

    @Test
    void T37_keepsWorkingAfterFaults() throws InterruptedException {
        long base = settledLive();
        everyFault();
        assertEquals(3L, t("add").call(1L, 2L));
        TetherInstance p = pair(1L, 2L);
        assertSame(p, echo.call(p));
        p = null;
        assertBackTo(base);
    }

    private static Object nested(int depth, Object leaf) {
        for (int i = 0; i < depth; i++) {
            leaf = List.of(leaf);
        }
        return leaf;
    }

    private static void assertValueError(String pattern, Runnable call) {
        TetherValueError e = assertThrows(TetherValueError.class, call::run);
        assertTrue(java.util.regex.Pattern.compile(pattern).matcher(e.getMessage()).find(), e.getMessage());
    }

    @Test
    void T38_cyclicAndDeepContainers() throws InterruptedException {
        long base = settledLive();
        int limit = Tether.MAX_NESTING_DEPTH;
        assertEquals(100, limit);
        List<Object> selfish = new ArrayList<>();
        selfish.add(selfish);
        Map<String, Object> throughMap = new LinkedHashMap<>();
        throughMap.put("items", List.of(throughMap));
        Object[] throughArray = new Object[1];
        throughArray[0] = List.of(7L, throughArray);
        String cycle = "contains itself.*at most " + limit + " levels";
        for (Object cyclic : List.of(selfish, throughMap, throughArray, List.of(1L, List.of(2L, selfish)))) {
            assertValueError(cycle, () -> echo.call(cyclic));
        }
        String deep = "more than " + limit + " levels deep";
        for (Object tooDeep : List.of(nested(100_000, 1L), nested(limit + 1, 1L), nested(limit, Map.of("k", List.of(1L))))) {
            assertValueError(deep, () -> echo.call(tooDeep));
        }
        assertValueError(cycle, () -> t("call").call((Function<Object[], Object>) args -> selfish));
        assertValueError(cycle, () -> Tether.construct("testing.Pair", selfish, 1L));
        assertValueError(cycle, () -> Tether.array(selfish));
        List<Long> shared = List.of(1L, 2L);
        assertEquals(shared, ((List<?>) echo.call(List.of(shared, shared))).get(1));
        Object out = echo.call(nested(limit - 1, List.of(7L)));
        int levels = 0;
        while (out instanceof TetherList) {
            levels++;
            out = ((TetherList) out).get(0);
        }
        assertEquals(limit, levels);
        assertEquals(List.of(1L, "x"), echo.call((Object) new Object[] {1L, "x"}), "object arrays convert as Lists");
        assertEquals(5L, t("add").call(2L, 3L));
        out = null;
        assertBackTo(base);
    }

    @Test
    void T39_hugeAndOddValues() throws InterruptedException {
        long base = settledLive();
        byte[] big = new byte[100 * 1024 * 1024];
        big[big.length - 1] = 7;
        assertArrayEquals(big, (byte[]) echo.call((Object) big));
        big = null;
        List<Long> many = new ArrayList<>();
        for (long i = 0; i < 1_000_000; i++) {
            many.add(i);
        }
        assertEquals(1_000_000, ((List<?>) echo.call(many)).size());
        many = null;
        assertTrue(Double.isNaN((Double) echo.call(Double.NaN)));
        assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits((Double) echo.call(-0.0)));
        assertEquals(Double.POSITIVE_INFINITY, echo.call(Double.POSITIVE_INFINITY));
        // A lone surrogate has no UTF-8 form: Java's encoder writes '?' for it.
        assertEquals("lone ? surrogate", echo.call("lone \ud800 surrogate"));
        assertThrows(TetherValueError.class, () -> echo.call(new java.math.BigInteger("2").pow(200)));
        assertEquals(-5L, echo.call(java.math.BigInteger.valueOf(-5)));
        // Found by the seeded Java argument fuzzer (cargo xtask harden): a Map whose size()
        // understates its entries was a ConcurrentModificationException ("the map grew while it
        // was converted"); its real entries convert, whatever size() says.
        Map<Object, Object> real = new LinkedHashMap<>(Map.of("a", 1L, "b", 2L, "c", 3L));
        for (int lie : new int[] {-3, -1, 0, 1, 5, Integer.MAX_VALUE - 3, Integer.MIN_VALUE}) {
            Map<Object, Object> lying = new java.util.AbstractMap<>() {
                @Override
                public java.util.Set<Map.Entry<Object, Object>> entrySet() {
                    return real.entrySet();
                }

                @Override
                public int size() {
                    return real.size() + lie; // may be negative or near Integer.MAX_VALUE
                }
            };
            assertEquals(real, echo.call(lying), "size() off by " + lie);
        }
        assertEquals(5L, t("add").call(2L, 3L));
        assertBackTo(base);
    }

    // ---- shutdown ----------------------------------------------------------------------------

    @Test
    void T40_vmExitsWithLiveObjects() throws Exception {
        ProcessResult r = Subprocess.runJava(ShutdownMain.class, true);
        assertEquals(0, r.exitCode, r.output);
        assertTrue(r.output.contains("shutdown-main: done"), r.output);
    }

    @Test
    void T41_vmExitsWhileANativeThreadCallsAStoredCallback() throws Exception {
        for (String how : List.of("exit", "return")) {
            ProcessResult r = Subprocess.runJava(CallbackAtExitMain.class, true, how);
            assertEquals(0, r.exitCode, how + ": " + r.output);
            assertTrue(r.output.contains("callback-at-exit: exiting after the callback ran"), r.output);
        }
    }

    /** {@code call} fails with the MemoryError; returns the injected failures it left pending. */
    private static long failsWithMemoryError(Runnable call, long pending) {
        assertEquals(0L, t("fail_allocations").call(pending));
        TetherOutOfMemoryError e = assertThrows(TetherOutOfMemoryError.class, call::run);
        assertEquals("MemoryError", e.kind());
        assertTrue(e.getMessage().contains("out of memory"), e.getMessage());
        return (Long) t("fail_allocations").call(0L);
    }

    @Test
    void T42_anAllocationFailureIsAnOutOfMemoryError() throws Exception {
        t("stash_clear").call();
        long base = settledLive();
        assertEquals(0L, failsWithMemoryError(() -> pair(1L, 2L), 1), "the native function's object");
        assertEquals(0L, failsWithMemoryError(() -> Tether.construct("testing.Pair", 1L, 2L), 1), "a constructor");
        assertEquals(0L, failsWithMemoryError(() -> echo.call(List.of(1L, 2L)), 1), "a List converted to an Array");
        assertEquals(0L, failsWithMemoryError(() -> echo.call("a string longer than seven bytes"), 1), "a string's copy");
        assertEquals(0L, failsWithMemoryError(() -> echo.call(new byte[32]), 1), "a byte[]'s copy");
        assertEquals(0L, failsWithMemoryError(() -> echo.call(Map.of("key", 1L)), 1), "a Map converted to a Map");
        TetherCallback cb = args -> List.of(1L, 2L);
        assertEquals(0L, failsWithMemoryError(() -> t("call").call(cb), 1), "the callback's own Function");
        t("stash").call("T42-cb", cb); // keeps the callback's Function: the next failure is its result's
        assertEquals(0L, failsWithMemoryError(() -> t("call").call(cb), 1), "a callback's result");
        assertEquals(1L, failsWithMemoryError(() -> t("make_array").call(3L), 2), "two armed: the first one raised");
        t("fail_allocations").call(3L);
        for (int i = 0; i < 3; i++) {
            assertThrows(TetherOutOfMemoryError.class, () -> pair(1L, 2L));
        }
        assertEquals(1L, pair(1L, 2L).get("first"));
        assertEquals(List.of(1L, 2L), new ArrayList<>((TetherList) t("call").call(cb)));
        TetherValueError bad = assertThrows(TetherValueError.class, () -> t("fail_allocations").call(-1L));
        assertTrue(bad.getMessage().contains("argument 'n' must not be negative"), bad.getMessage());
        t("stash_clear").call();
        assertBackTo(base);
    }

    // ---- modules -----------------------------------------------------------------------------

    @Test
    void T50_loadModule() {
        Path path = TestSupport.plugin();
        assertTrue(Files.isRegularFile(path), "the test plugin was built: " + path);
        TetherModule m = Tether.loadModule(path.toString());
        assertSame(m, Tether.loadModule(path.toString()), "loading twice gives the same module");
        assertEquals(List.of("greet", "make_counter", "scale"), m.functionNames());
        assertEquals(List.of("sample.Counter", "sample.Names"), m.typeKeys());
        assertEquals("hello, tether", m.function("greet").call("tether"));
        TetherInstance counter = (TetherInstance) m.function("make_counter").call(5L);
        assertEquals("sample.Counter", counter.typeKey());
        assertEquals(5L, counter.get("count"));
        assertEquals(6L, counter.call("increment"));
        assertEquals(6L, counter.get("count"));
        assertSame(counter, echo.call(counter));
        TetherInstance built = (TetherInstance) m.construct("sample.Counter", 10L);
        assertEquals(10L, built.get("count"));
        assertEquals("sample.Counter(count=10, isEven=true)", built.toString());
        assertThrows(TetherKeyError.class, () -> m.function("nope"));
    }

    /** {@code fn} throws a {@code cls} whose message contains every part; returns it. */
    private static <E extends Throwable> E throwsWith(Class<E> cls, org.junit.jupiter.api.function.Executable fn, String... parts) {
        E e = assertThrows(cls, fn);
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), "expected \"" + part + "\" in: " + e.getMessage());
        }
        return e;
    }

    @Test
    void T51_initThatPanicsOrFails() throws InterruptedException {
        String panics = TestSupport.testPlugin("tether_test_plugin_init_panics").toString();
        String fails = TestSupport.testPlugin("tether_c_init_fails").toString();
        TetherException p = throwsWith(TetherException.class, () -> Tether.loadModule(panics), "initialising module",
                "libtether_test_plugin_init_panics", "the plugin panicked: init_panics: refusing to start");
        assertEquals("RustPanic", p.kind());
        TetherException f = throwsWith(TetherException.class, () -> Tether.loadModule(fails), "cplugin init refused to start");
        assertEquals("RuntimeError", f.kind());
        p = null;
        f = null;
        long base = settledLive();
        assertEquals("RustPanic", throwsWith(TetherException.class, () -> Tether.loadModule(panics), "remembered").kind());
        throwsWith(TetherException.class, () -> Tether.loadModule(fails), "refused to start", "remembered");
        assertEquals(7L, Tether.getGlobalFunc("init_fails.leftover").call(), "what the failed init registered stays callable");
        assertEquals(5L, t("add").call(2L, 3L));
        assertBackTo(base);
    }

    @Test
    void T52_existingTypeKeyWithAnotherLayout() throws InterruptedException {
        throwsWith(TetherValueError.class,
                () -> Tether.loadModule(TestSupport.testPlugin("tether_test_plugin_conflict").toString()),
                "type key \"testing.Pair\" is already registered with fields [\"first\", \"second\"]", "[\"left\", \"right\"]");
        TetherModule hostile = Tether.loadModule(TestSupport.testPlugin("tether_c_hostile").toString());
        TetherFunction register = hostile.function("register_type");
        Object point = register.call("hostile.Point", "tether.Object", "x,y");
        long base = settledLive();
        assertEquals(point, register.call("hostile.Point", "tether.Object", "x,y"), "the same layout again is fine");
        assertEquals((long) Native.typeIndexOf("testing.Pair"), register.call("testing.Pair", "tether.Object", "first,second"));
        throwsWith(TetherValueError.class, () -> register.call("hostile.Point", "tether.Object", "x"),
                "\"hostile.Point\" is already registered with fields [\"x\", \"y\"]");
        throwsWith(TetherValueError.class, () -> register.call("testing.Triple", "tether.Object", "first,second,third"),
                "\"testing.Triple\" is already registered with parent \"testing.Pair\"");
        TetherInstance pair = pair(1L, 2L);
        assertEquals(1L, pair.get("first"), "the registered Pair is untouched");
        pair = null;
        assertBackTo(base);
    }

    @Test
    void T53_outOfRangeTypeIndexFromACPlugin() throws InterruptedException {
        TetherModule hostile = Tether.loadModule(TestSupport.testPlugin("tether_c_hostile").toString());
        long base = settledLive();
        for (long kind : new long[] {-1, 9, 63, 100, 1_000_000}) {
            throwsWith(TetherValueError.class, () -> hostile.function("bad_result").call(kind),
                    "the result of hostile.bad_result has type index " + kind + ", which is neither");
            throwsWith(TetherValueError.class, () -> hostile.function("bad_array").call(kind),
                    "make_array: item 0 has type index " + kind);
            throwsWith(TetherValueError.class, () -> hostile.function("bad_call").call(echo, kind),
                    "call_function: argument 1 has type index " + kind);
        }
        throwsWith(TetherValueError.class,
                () -> hostile.function("bad_header").call((long) Native.typeIndexOf("tether.Array")), "header says index 3");
        assertEquals(42L, hostile.function("ok").call());
        assertEquals(5L, t("add").call(2L, 3L));
        assertBackTo(base);
    }

    @Test
    void T54_loadModuleOfADirectory() throws Exception {
        Path dir = Files.createTempDirectory("tether-T54");
        try {
            throwsWith(TetherValueError.class, () -> Tether.loadModule(dir.toString()),
                    "it is a directory, not a shared library file");
        } finally {
            Files.deleteIfExists(dir);
        }
        assertEquals(2L, t("add").call(1L, 1L));
    }

    @Test
    void T55_bareNameIsRelativeToTheWorkingDirectory() throws Exception {
        throwsWith(TetherValueError.class, () -> Tether.loadModule("libc.so.6"), "no such file in the working directory");
        TetherModule sample = Tether.loadModule(TestSupport.plugin().toString());
        // The JVM cannot change its working directory: a link to the plugin is put there instead.
        String name = "tether-T55-" + ProcessHandle.current().pid() + ".so";
        Path link = Path.of("").toAbsolutePath().resolve(name);
        Files.createSymbolicLink(link, TestSupport.plugin().toAbsolutePath());
        try {
            assertSame(sample, Tether.loadModule(name));
        } finally {
            Files.deleteIfExists(link);
        }
    }

    @Test
    void T56_samePluginUnderTwoPaths() throws Exception {
        TetherModule sample = Tether.loadModule(TestSupport.plugin().toString());
        Path dir = Files.createTempDirectory("tether-T56");
        Path link = dir.resolve("libsample_link.so");
        Path copy = dir.resolve("libsample_copy.so");
        try {
            Files.createSymbolicLink(link, TestSupport.plugin().toAbsolutePath());
            assertSame(sample, Tether.loadModule(link.toString()), "a link to the same file is the same module");
            Files.copy(TestSupport.plugin(), copy);
            TetherModule other = Tether.loadModule(copy.toString());
            assertNotSame(sample, other, "a copy is another file");
            assertEquals(sample.typeKeys(), other.typeKeys(), "the same key with the same layout is one type");
            long base = settledLive();
            TetherInstance c = (TetherInstance) other.function("make_counter").call(4L);
            assertEquals("sample.Counter", c.typeKey());
            assertEquals(4L, c.get("count"));
            assertEquals(5L, c.call("increment"));
            assertSame(c, echo.call(c));
            assertSame(other, Tether.loadModule(copy.toString()));
            c = null;
            assertBackTo(base);
        } finally {
            Files.deleteIfExists(link);
            Files.deleteIfExists(copy);
            Files.deleteIfExists(dir);
        }
    }

    // ---- signatures ------------------------------------------------------------------------

    @Test
    void T60_signaturesAreReadable() {
        assertEquals("Long add(Long a, Long b)", t("add").signature());
        TetherType pair = Tether.type("testing.Pair");
        assertEquals("Pair Pair(Object first, Object second)", pair.constructorSignature());
        assertEquals("Pair swap()", pair.method("swap").signature(), "the receiver is left out");
    }

    @Test
    void T61_defaultsFillWhatIsLeftOut() {
        assertEquals("hello, ann", t("greet").call("ann"));
        assertEquals("hi, ann", t("greet").call("ann", "hi"));
        assertEquals(1, t("greet").parameters().stream().filter(p -> !p.hasDefault()).count());
    }
}
