package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.settledLive;
import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/**
 * Leaf calls through {@code java.lang.foreign} critical downcalls ({@link Critical}): on JDK
 * 22+ (this suite also runs on Temurin 25, with native access enabled) {@code call(x)} of a
 * leaf with a plain argument takes them; on 17 the same calls take JNI. Either way the
 * outcomes must be the same: the argument's own wrapper back, other results and errors as
 * JNI gives them, nothing leaked, and a leaf that calls back anyway refused with a typed
 * error instead of entering the JVM from a thread in the Java state.
 */
class CriticalCallTest {
    private static final TetherFunction ECHO = t("echo");

    @Test
    void criticalDowncallsAreUsedExactlyWhereTheJdkHasThem() {
        if (Runtime.version().feature() >= 22 && !"false".equals(System.getProperty(Critical.PROPERTY))) {
            assertEquals("critical downcalls", Critical.status());
            assertNotNull(Critical.CALL1);
            assertNotNull(Critical.INTS1);
            assertNotNull(Critical.INTS3);
        } else {
            assertTrue(Critical.status().startsWith("JNI only"), Critical.status());
            assertNull(Critical.CALL1);
            assertNull(Critical.INTS3);
        }
    }

    @Test
    void callLongOfAnIntLeafGivesEveryValueAndErrorAsJniDoes() {
        TetherFunction add3 = t("add3");
        TetherFunction add = t("add");
        assertEquals(6L, add3.callLong(1, 2, 3));
        assertEquals(Long.MIN_VALUE, add3.callLong(Long.MAX_VALUE, 1, 0), "wrapping, as the closure does");
        assertEquals(-7L, add.callLong(-10, 3));
        // The entry's own answers are ints like any other: they come back parked, as values.
        for (long answer : new long[] {Native.PENDING, Critical.ARGUMENT, Critical.FALLBACK}) {
            assertEquals(answer, add3.callLong(answer - 5, 2, 3));
            assertEquals(answer, add.callLong(answer, 0));
        }
        // An error of the closure's own, named as JNI names it.
        TetherFunction failAllocations = t("fail_allocations");
        RuntimeException e = assertThrows(RuntimeException.class, () -> failAllocations.callLong(-1, 0));
        assertTrue(e instanceof TetherError, e.toString());
        assertTrue(e.getMessage().contains("testing.fail_allocations"), e.getMessage());
        assertEquals(0L, failAllocations.callLong(0, 0), "nothing pending, nothing armed");
        // The thread goes on calling through the entry.
        assertEquals(6L, add3.callLong(1, 2, 3));
    }

    @Test
    void anIntLeafThatCallsBackIsRefusedWithATypedErrorAndTheThreadGoesOn() {
        TetherCallback callback = args -> 7L;
        t("stash").call("43", callback);
        try {
            TetherFunction broken = t("call_stashed_as_int_leaf");
            if (Critical.INTS1 != null) {
                Exception e = assertThrows(RuntimeException.class, () -> broken.callLong(43));
                assertTrue(e instanceof TetherError, e.toString());
                assertTrue(e.getMessage().contains("leaf Function called into the JVM"), e.getMessage());
            } else {
                assertEquals(7L, broken.callLong(43), "through JNI the callback runs");
            }
            assertEquals(6L, t("add3").callLong(1, 2, 3));
        } finally {
            t("take").call("43");
        }
    }

    @Test
    void aLeafEchoReturnsTheArgumentsOwnWrapperAndLeaksNothing() throws InterruptedException {
        long base = settledLive();
        TetherInstance p = (TetherInstance) t("make_pair").call(1L, 2L);
        for (int i = 0; i < 1000; i++) {
            assertSame(p, ECHO.call(p));
        }
        assertEquals(5L, ECHO.call(5L));
        assertEquals(5, ((Number) ECHO.call(5)).intValue());
        assertNull(ECHO.call((Object) null));
        p.close();
        assertEquals(base, settledLive(), "the pair and the spares kept for it are gone");
    }

    @Test
    void otherResultsAndErrorsOfALeafComeBackAsThroughJni() {
        TetherFunction isAligned = t("is_aligned");
        Object aligned = t("make_aligned").call(64L);
        assertEquals(Boolean.TRUE, isAligned.call(aligned), "a result that is not the argument");
        TetherTypeError e = assertThrows(TetherTypeError.class, () -> isAligned.call(7L));
        assertTrue(e.getMessage().contains("argument 'x' must be an object"), e.getMessage());
        // Another count than the arity: the entry takes nothing, JNI words the error.
        TetherTypeError arity = assertThrows(TetherTypeError.class, () -> t("add3").call(1L));
        assertTrue(arity.getMessage().contains("add3"), arity.getMessage());
        // The thread goes on calling through the entry.
        TetherInstance p = (TetherInstance) t("make_pair").call(1L, 2L);
        assertSame(p, ECHO.call(p));
        p.close();
    }

    @Test
    void aClosedWrapperPassedToALeafIsATypedErrorAndItsSpareIsGone() throws InterruptedException {
        long base = settledLive();
        TetherInstance p = (TetherInstance) t("make_pair").call(1L, 2L);
        assertSame(p, ECHO.call(p)); // the thread keeps a spare of p
        p.close();
        assertThrows(IllegalStateException.class, () -> ECHO.call(p));
        assertThrows(IllegalStateException.class, () -> t("is_aligned").call(p));
        TetherInstance q = (TetherInstance) t("make_pair").call(3L, 4L);
        assertSame(q, ECHO.call(q));
        assertSame(q, ECHO.call(q));
        q.close();
        assertEquals(base, settledLive(), "the closed pair's spare went with it");
    }

    @Test
    void aSpareLentToALeafThatReturnsAnotherValueIsConsumedOnce() throws InterruptedException {
        long base = settledLive();
        TetherFunction isAligned = t("is_aligned");
        TetherInstance aligned = (TetherInstance) t("make_aligned").call(64L);
        for (int i = 0; i < 1000; i++) {
            // echo keeps a spare of the wrapper; is_aligned is lent it and drops it.
            assertSame(aligned, ECHO.call(aligned));
            assertEquals(Boolean.TRUE, isAligned.call(aligned));
        }
        aligned.close();
        assertEquals(base, settledLive(), "every lent spare was released once");
    }

    @Test
    void theJvmExitsWhileThreadsAreInsideCriticalDowncalls() throws Exception {
        ProcessResult r = Subprocess.runJava(CriticalExitMain.class, true);
        assertEquals(0, r.exitCode, r.output);
        assertTrue(r.output.contains("critical-exit: "), r.output);
        assertFalse(r.output.contains("wrong wrapper") || r.output.contains("wrong sum") || r.output.contains("hs_err"),
                r.output);
    }

    @Test
    void aLeafThatCallsBackIsRefusedWithATypedErrorAndTheThreadGoesOn() {
        TetherCallback callback = args -> "called";
        t("stash").call("41", callback);
        try {
            TetherFunction broken = t("call_stashed_as_leaf");
            // Refused on every JDK: JNI's leaf1 (and call1) marks the thread for a leaf's call
            // as the critical downcall does.
            Exception e = assertThrows(RuntimeException.class, () -> broken.call(41L));
            assertTrue(e instanceof TetherError, e.toString());
            assertTrue(e.getMessage().contains("leaf Function called into the JVM"), e.getMessage());
            TetherInstance p = (TetherInstance) t("make_pair").call(1L, 2L);
            assertSame(p, ECHO.call(p));
            p.close();
        } finally {
            t("take").call("41");
        }
    }
}
