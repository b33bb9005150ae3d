package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.assertBackTo;
import static dev.tether.ffi.TestSupport.onThreads;
import static dev.tether.ffi.TestSupport.settledLive;
import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import org.junit.jupiter.api.Test;

/**
 * Callables passed straight to a call (crates/java/src/callback.rs, {@code lend}): lent this
 * thread's spare Function for the call, registered only when the callee keeps it; and the
 * array-free constructor path of {@link TetherType#construct(Object, Object)}.
 */
class LentCallableTest {
    private static final TetherFunction CALL = t("call");
    private static final TetherFunction ECHO = t("echo");

    /** This thread's spare shell exists from here on (made by its first lend). */
    private static void lentOnce() {
        assertEquals(1L, CALL.call((TetherCallback) a -> 1L));
    }

    /**
     * A callback's outcome that is not a wrapper goes to the result slot native code keeps for
     * the callback running on this thread: with callbacks nested (a callback's Java code makes
     * another call that calls back), each value, wrapper and exception reaches its own frame.
     */
    @Test
    void nestedCallbacksEachDeliverTheirOwnOutcome() {
        TetherInstance p = (TetherInstance) t("make_pair").call(1L, 2L);
        TetherCallback inner = a -> "inner";
        assertEquals("inner+outer", CALL.call((TetherCallback) a -> CALL.call(inner) + "+outer"));
        assertEquals(3L, CALL.call((TetherCallback) a -> {
            assertSame(p, CALL.call((TetherCallback) b -> p), "a wrapper from the inner callback");
            return 3L;
        }));
        assertSame(p, CALL.call((TetherCallback) a -> {
            assertEquals(4L, CALL.call((TetherCallback) b -> 4L));
            return p;
        }), "a wrapper from the outer callback after an inner plain value");
        IllegalStateException thrown = new IllegalStateException("deep");
        assertEquals("deep!", CALL.call((TetherCallback) a -> {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> CALL.call((TetherCallback) b -> { throw thrown; }));
            assertSame(thrown, e, "the inner callback's own exception");
            return e.getMessage() + "!";
        }));
        assertSame(thrown, assertThrows(IllegalStateException.class, () -> CALL.call((TetherCallback) a -> {
            assertEquals(5L, CALL.call((TetherCallback) b -> 5L));
            throw thrown;
        })), "the outer callback's exception after an inner plain value");
        // Callbacks given arguments (`testing.call(f, args...)`) nested in ones given none and
        // the other way round.
        assertEquals(42L, CALL.call((TetherCallback) a -> (Long) a[0] + (Long) CALL.call(
                (TetherCallback) b -> CALL.call((TetherCallback) c -> (Long) b[0] * 2), 20L), 2L));
        assertEquals("x!", CALL.call((TetherCallback) a -> {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> CALL.call((TetherCallback) b -> { throw thrown; }, "ignored"));
            assertSame(thrown, e);
            return a[0] + "!";
        }, "x"));
    }

    /**
     * A callback that calls back into itself without end: each level is a native call and a
     * callback's upcall with its own result slot; the thread's stack runs out in Java, the
     * StackOverflowError comes back out of the outermost call, and the thread keeps working.
     */
    @Test
    void unboundedCallbackRecursionEndsInStackOverflowError() {
        int[] depth = {0};
        TetherCallback[] self = new TetherCallback[1];
        self[0] = a -> {
            depth[0]++;
            return CALL.call(self[0]);
        };
        assertThrows(StackOverflowError.class, () -> CALL.call(self[0]));
        assertTrue(depth[0] > 10, "the recursion went some levels deep: " + depth[0]);
        assertEquals(7L, CALL.call((TetherCallback) a -> 7L), "the thread's next callback works");
        assertEquals("inner+outer", CALL.call((TetherCallback) a -> CALL.call((TetherCallback) b -> "inner") + "+outer"));
    }

    @Test
    void lentCallsLeaveNoObjectsBehind() throws InterruptedException {
        lentOnce();
        long base = settledLive();
        for (int i = 0; i < 2000; i++) {
            long n = i;
            assertEquals(n, CALL.call((TetherCallback) a -> n), "a new callable each call");
        }
        TetherCallback same = a -> "same";
        for (int i = 0; i < 2000; i++) {
            assertEquals("same", CALL.call(same));
        }
        assertBackTo(base);
    }

    /**
     * A lending call that fails (a callable where the function wants an int, or a callback
     * that throws) gives its lent Function back all the same: nothing is left behind, and the
     * spare lends again.
     */
    @Test
    void failedLendingCallsLeaveNoObjectsBehind() throws InterruptedException {
        lentOnce();
        long base = settledLive();
        TetherFunction add = t("add");
        for (int i = 0; i < 500; i++) {
            long n = i;
            assertThrows(TetherTypeError.class, () -> add.call((TetherCallback) a -> n, 1L),
                    "a callable where an int is due");
            RuntimeException planted = new IllegalStateException("planted " + i);
            assertSame(planted, assertThrows(IllegalStateException.class, () -> CALL.call((TetherCallback) a -> {
                throw planted;
            })));
        }
        assertEquals(7L, CALL.call((TetherCallback) a -> 7L), "the spare lends again");
        assertBackTo(base);
    }

    @Test
    void aLentCallableComesBackAsItself() {
        TetherCallback cb = a -> 1L;
        Function<Object[], Object> f = a -> 2L;
        assertSame(cb, ECHO.call(cb));
        assertSame(f, ECHO.call(f));
        assertSame(cb, CALL.call((TetherCallback) a -> cb), "a callback returning another callable");
        assertSame(cb, ECHO.call(cb), "the spare is aimed at each callable in turn");
    }

    @Test
    void aKeptCallableIsRegisteredAndStaysOneFunction() throws InterruptedException {
        lentOnce();
        long base = settledLive();
        TetherCallback cb = a -> "kept";
        TetherFunction makeMap = Tether.getGlobalFunc("tether.Map");
        // Both arguments are cb: the second finds the shell lent to the first (one Function),
        // and the Map keeps it, so it escapes and is registered after the call.
        TetherMap m = (TetherMap) makeMap.call(cb, cb);
        assertEquals(1, m.size());
        assertSame(cb, m.get(cb), "a later pass of cb (the registry's path) is that same Function");
        assertSame(cb, m.keySet().iterator().next());
        assertEquals("kept", CALL.call(cb), "a lend finds the registered Function");
        t("stash").call("lent", cb);
        assertSame(cb, t("take").call("lent"));
        m.close();
        m = null;
        assertBackTo(base);
    }

    /**
     * A shell lent on a thread that then exited, kept by the callee (so it escaped), is called
     * from new threads, which the C library may give the exited thread's thread pointer: its
     * callbacks must not take the exited thread's lending state for theirs.
     */
    @Test
    void aShellThatEscapedOnAThreadThatExitedIsCalledFromNewThreads() throws InterruptedException {
        long base = settledLive();
        TetherCallback cb = a -> "escaped";
        onThreads(1, id -> t("stash").call("escaped on an exited thread", cb));
        for (int round = 0; round < 4; round++) {
            onThreads(2, id -> {
                assertEquals("escaped", CALL.call(cb), "the registered shell, called through a lend");
                assertEquals("escaped", t("call_in_thread").call(cb), "and on a native thread");
            });
        }
        assertSame(cb, t("take").call("escaped on an exited thread"));
        assertBackTo(base);
    }

    @Test
    void aLentFunctionCalledOnAnotherThreadWorks() {
        TetherCallback cb = a -> Thread.currentThread();
        Object thread = t("call_in_thread").call(cb);
        assertNotNull(thread);
        assertNotSame(Thread.currentThread(), thread, "called on the native thread");
        Object times = t("call_times").call((TetherCallback) a -> 3L, 5L);
        assertEquals(3L, times);
    }

    @Test
    void nestedCallsWithTheSameCallable() {
        AtomicReference<Object> inner = new AtomicReference<>();
        TetherCallback[] self = new TetherCallback[1];
        self[0] = a -> {
            if (inner.get() == null) {
                inner.set("entered");
                return CALL.call(self[0]); // the same callable while its lent Function runs
            }
            return ECHO.call(self[0]);
        };
        assertSame(self[0], CALL.call(self[0]));
    }

    @Test
    void callbackErrorsAndResultsKeepTheirKinds() {
        RuntimeException planted = new IllegalStateException("planted");
        RuntimeException thrown = assertThrows(RuntimeException.class, () -> CALL.call((TetherCallback) a -> {
            throw planted;
        }));
        assertSame(planted, thrown);
        TetherInstance closed = (TetherInstance) t("make_pair").call(1L, 2L);
        closed.close();
        assertThrows(RuntimeException.class, () -> CALL.call((TetherCallback) a -> closed),
                "a closed wrapper as a callback's result");
        assertEquals(List.of(1L, "x"), new ArrayList<>((TetherList) CALL.call((TetherCallback) a -> List.of(1L, "x"))));
        assertEquals("a string longer than seven bytes", CALL.call((TetherCallback) a -> "a string longer than seven bytes"));
        assertNull(CALL.call((TetherCallback) a -> null));
        assertEquals(2.5, CALL.call((TetherCallback) a -> 2.5));
    }

    /**
     * A callback whose result is a {@code TetherInstance} hands it back itself (native code
     * reads its fields, and the lending call returns that reference when its result is the
     * same object): every way it can come back is the one wrapper, and nothing is left behind.
     */
    @Test
    void callbacksReturningWrappers() throws InterruptedException {
        lentOnce();
        long base = settledLive();
        TetherInstance x = (TetherInstance) t("make_pair").call(1L, 2L);
        TetherInstance y = (TetherInstance) t("make_pair").call(3L, 4L);
        TetherCallback returnsX = a -> x;
        for (int i = 0; i < 100; i++) {
            assertSame(x, CALL.call(returnsX), "the same wrapper, call after call");
        }
        assertSame(x, CALL.call((TetherCallback) a -> a[0], x), "its argument");
        assertSame(y, CALL.call((TetherCallback) a -> y, x), "another wrapper than its argument");
        assertNull(CALL.call((TetherCallback) a -> null, x));
        assertSame(x, t("call_times").call(returnsX, 5L), "several callbacks in one call");
        assertSame(y, t("call_times").call((TetherCallback) a -> a.length == 0 ? y : x, 3L));
        assertSame(x, t("call_in_thread").call(returnsX), "returned on a native thread");
        assertSame(y, CALL.call((TetherCallback) a -> CALL.call((TetherCallback) b -> y)), "nested");
        assertSame(x, CALL.call((TetherCallback) a -> {
            assertSame(y, CALL.call((TetherCallback) b -> y));
            return x;
        }), "a nested call's result is not the outer one's");
        assertSame(x, ECHO.call(CALL.call(returnsX)));
        TetherFunction ints = t("call");
        for (int i = 0; i < 5; i++) {
            assertEquals(7L, ints.call((TetherCallback) a -> 7L), "ints: the long-returning natives");
        }
        assertSame(x, ints.call(returnsX), "a wrapper through the long-returning natives");
        RuntimeException planted = new IllegalArgumentException("planted");
        assertSame(planted, assertThrows(RuntimeException.class, () -> CALL.call((TetherCallback) a -> {
            if (a.length == 0) {
                throw planted;
            }
            return x;
        })));
        TetherInstance z = (TetherInstance) t("make_pair").call(5L, 6L);
        assertThrows(IllegalStateException.class, () -> CALL.call((TetherCallback) a -> {
            z.close();
            return z;
        }), "closed inside the callback");
        TetherInstance w = (TetherInstance) t("make_pair").call(7L, 8L);
        int[] calls = {0};
        Object last = t("call_times").call((TetherCallback) a -> {
            switch (calls[0]++) {
                case 0: return w;
                case 1: w.close(); return null; // the call drops the first result: w's object goes
                default: return List.of(1L, 2L); // a new object, maybe at w's object's address
            }
        }, 3L);
        assertEquals(List.of(1L, 2L), new ArrayList<>((TetherList) last), "not the wrapper closed meanwhile");
        last = null;
        assertEquals(1L, x.get("first"));
        x.close();
        y.close();
        assertBackTo(base);
    }

    /**
     * Lend tokens ({@link Callbacks#lendToken}): the spare Function is aimed at the right
     * callable whichever callables threads pass in turn, the same one again, or one that was
     * collected meanwhile.
     */
    @Test
    void alternatingCallablesAcrossThreads() throws InterruptedException {
        TetherCallback a = args -> "a";
        TetherCallback b = args -> "b";
        for (int i = 0; i < 50; i++) {
            assertEquals("a", CALL.call(a));
            assertEquals("a", CALL.call(a));
            assertEquals("b", CALL.call(b));
            long n = i;
            assertEquals(n, CALL.call((TetherCallback) args -> n), "a new callable, then collectable");
        }
        System.gc();
        assertEquals("b", CALL.call(b));
        onThreads(3, id -> {
            for (int k = 0; k < 300; k++) {
                TetherCallback mine = (k + id) % 3 == 0 ? a : b;
                assertEquals(mine == a ? "a" : "b", CALL.call(mine));
                assertSame(mine, ECHO.call(mine));
            }
        });
    }

    @Test
    void callablesFromManyThreads() throws InterruptedException {
        lentOnce();
        long base = settledLive();
        onThreads(4, id -> {
            TetherCallback shared = a -> 7L;
            for (int k = 0; k < 500; k++) {
                assertEquals(7L, CALL.call(shared));
                assertSame(shared, ECHO.call(shared));
            }
        });
        assertBackTo(base); // each thread's spare went when it exited
    }

    /** What a construct did: its result's first field, or the exception's class and message. */
    private static String outcome(java.util.function.Supplier<Object> construct) {
        try {
            Object made = construct.get();
            return made instanceof TetherInstance ? "first=" + ((TetherInstance) made).get("first") : "result " + made;
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    @Test
    void constructWithPlainArgumentsTiesTheWrapperJavaMade() throws InterruptedException {
        long base = settledLive();
        TetherType pair = Tether.type("testing.Pair");
        TetherInstance x = (TetherInstance) pair.construct(1L, 2L);
        assertEquals(1L, x.get("first"));
        TetherInstance p = (TetherInstance) pair.construct(x, x);
        assertSame(x, p.get("first"), "one wrapper per object");
        assertSame(x, p.get("second"));
        assertSame(p, ECHO.call(p));
        assertEquals(TetherInstance.class, p.getClass());
        Object[][] calls = {{}, {x}, {1L, x}, {null, 2}, {1L, 2L, 3L}, {"a", 1L}, {1L, 2L, 3L, 4L}};
        for (Object[] args : calls) {
            String direct = outcome(() -> {
                switch (args.length) {
                    case 0: return pair.construct();
                    case 1: return pair.construct(args[0]);
                    case 2: return pair.construct(args[0], args[1]);
                    case 3: return pair.construct(args[0], args[1], args[2]);
                    default: return pair.construct(args);
                }
            });
            String general = outcome(() -> Tether.construct("testing.Pair", args));
            assertEquals(general, direct, "the same outcome either path, for " + java.util.Arrays.toString(args));
        }
        p.close();
        x.close();
        TetherInstance closed = x;
        assertThrows(IllegalStateException.class, () -> pair.construct(closed, 1L), "a closed wrapper argument");
        x = null;
        p = null;
        assertBackTo(base);
    }
}
