package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/**
 * The call paths of {@link TetherFunction} (not conformance scenarios): arguments passed without
 * arrays, the long-returning natives a function switches to once its results are ints, and the
 * parked result when such a function returns something else.
 */
class CallPathTest {
    private static TetherInstance pair(Object a, Object b) {
        return (TetherInstance) t("make_pair").call(a, b);
    }

    @Test
    void resultsSwitchBetweenIntsAndOtherValues() {
        TetherFunction echo = Tether.getGlobalFunc("testing.echo");
        TetherInstance p = pair(1L, 2L);
        for (int round = 0; round < 3; round++) {
            assertEquals(5L, echo.call(5L));
            assertEquals(5L, echo.call(5L), "a second int: on the long path now");
            assertEquals(1_000_000L, echo.call(1_000_000L));
            assertSame(p, echo.call(p), "an argument coming back from the long path is its wrapper");
            assertEquals(7L, echo.call(7L));
            assertEquals("text", echo.call("text"));
            assertEquals(8L, echo.call(8L));
            assertNull(echo.call((Object) null));
            assertEquals(9L, echo.call(9L));
            assertEquals(2.5, echo.call(2.5));
            assertEquals(10L, echo.call(10L));
            assertEquals(Native.PENDING, echo.call(Native.PENDING), "an int equal to the marker value");
            assertEquals(Native.PENDING, echo.call(Native.PENDING));
            assertEquals(Long.MAX_VALUE, echo.call(Long.MAX_VALUE));
            assertEquals(Long.MIN_VALUE, echo.call(Long.MIN_VALUE));
        }
        assertEquals(Long.valueOf(100), echo.call(100L));
        assertSame(Long.valueOf(100), echo.call(100L), "small ints are Java's cached Longs");
    }

    @Test
    void anObjectResultOnTheIntPathIsParkedAndTaken() throws ReflectiveOperationException {
        TetherFunction makeArray = t("make_array");
        java.lang.reflect.Field mode = TetherFunction.class.getDeclaredField("mode");
        mode.setAccessible(true);
        java.lang.reflect.Field intResultsBit = TetherFunction.class.getDeclaredField("INT_RESULTS");
        intResultsBit.setAccessible(true);
        byte intResults = intResultsBit.getByte(null);
        for (int i = 0; i < 3; i++) {
            // as if its last result had been an int
            mode.setByte(makeArray, (byte) (mode.getByte(makeArray) | intResults));
            TetherList items = (TetherList) makeArray.call(3L);
            assertEquals(3, items.size());
            assertEquals(0, mode.getByte(makeArray) & intResults, "a non-int result switches back");
            mode.setByte(makeArray, (byte) (mode.getByte(makeArray) | intResults));
            assertEquals(2, ((TetherList) makeArray.call(new Object[] {2L})).size());
        }
        assertThrows(TetherException.class, Native::takePending, "nothing is parked after a take");
    }

    @Test
    void callLongPassesAndReturnsUnboxedInts() {
        TetherFunction add = t("add");
        TetherFunction add3 = t("add3");
        TetherFunction echo = t("echo");
        for (int i = 0; i < 3; i++) {
            assertEquals(3L, add.callLong(1, 2));
            assertEquals(6L, add3.callLong(1, 2, 3));
            assertEquals(-5L, echo.callLong(-5));
            assertEquals(Long.MIN_VALUE, echo.callLong(Long.MIN_VALUE));
            assertEquals(Native.PENDING, echo.callLong(Native.PENDING), "an int equal to the marker value");
            assertEquals(Native.PENDING, add.callLong(Native.PENDING - 1, 1));
            assertEquals(TestSupport.live(), t("live_objects").callLong(), "no arguments");
        }
    }

    @Test
    void callLongRejectsResultsThatAreNotInts() {
        TetherTypeError e = assertThrows(TetherTypeError.class, () -> t("make_array").callLong(2));
        assertEquals("testing.make_array() returned tether.Array, not an int (callLong)", e.getMessage());
        e = assertThrows(TetherTypeError.class, () -> t("stash_clear").callLong());
        assertTrue(e.getMessage().contains("returned None"), e.getMessage());
        e = assertThrows(TetherTypeError.class, () -> t("echo").callLong(1, 2), "a native arity error");
        assertTrue(e.getMessage().contains("testing.echo"), e.getMessage());
        assertThrows(TetherException.class, Native::takePending, "nothing is left parked");
        assertEquals(7L, t("add").callLong(3, 4), "the function still works");
    }

    /** A {@code callLong} whose count is not the arity: the signature's binding, as {@code call}'s. */
    @Test
    void callLongBindsMissingArgumentsAsCallDoes() {
        String viaCall = assertThrows(TetherTypeError.class, () -> t("add").call(1L)).getMessage();
        assertEquals(viaCall, assertThrows(TetherTypeError.class, () -> t("add").callLong(1)).getMessage());
        viaCall = assertThrows(TetherTypeError.class, () -> t("greet").call(1L)).getMessage();
        assertEquals(viaCall, assertThrows(TetherTypeError.class, () -> t("greet").callLong(1)).getMessage(),
                "a default filled in, then the argument's type refused");
        assertEquals(3L, t("add").callLong(1, 2));
    }

    @Test
    void everyArityOnBothPaths() {
        TetherFunction add = t("add");
        TetherFunction add3 = t("add3");
        for (int i = 0; i < 4; i++) {
            assertEquals(3L, add.call(1L, 2L));
            assertEquals(6L, add3.call(1L, 2L, 3L));
            assertEquals(6L, add3.call(new Object[] {1L, 2L, 3L}));
            assertEquals(6L, add3.call(1, (short) 2, (byte) 3), "other integer boxes take the encoding path");
            assertEquals(6L, add3.call(1, 2, 3), "Integers pass like Longs");
            assertEquals(6L, add3.call(1, 2L, 3));
            assertEquals(Integer.MIN_VALUE * 2L, add.call(Integer.MIN_VALUE, Integer.MIN_VALUE));
            assertEquals(Native.PENDING, add3.call(Native.PENDING - 3, 1L, 2L));
            assertTrue((Long) t("live_objects").call() > 0);
        }
    }

    @Test
    void errorsOnTheLongPath() {
        TetherFunction add = t("add");
        for (int i = 0; i < 3; i++) {
            assertEquals(3L, add.call(1L, 2L));
        }
        TetherTypeError e = assertThrows(TetherTypeError.class, () -> add.call(1L, "x"));
        assertTrue(e.getMessage().contains("argument 'b'"), e.getMessage());
        assertThrows(TetherTypeError.class, () -> add.call(1L, null));
        assertThrows(TetherTypeError.class, () -> add.call(1L));
        assertEquals(5L, add.call(2L, 3L), "still works after the errors");
    }

    @Test
    void closedWrapperArgumentsThrowBeforeTheCall() {
        TetherFunction echo = t("echo");
        TetherInstance p = pair(1L, 2L);
        TetherFunction f = t("add");
        p.close();
        assertThrows(IllegalStateException.class, () -> echo.call(p));
        assertThrows(IllegalStateException.class, () -> echo.call(p, 1L));
        assertThrows(IllegalStateException.class, () -> echo.call(1L, 2L, p));
        assertSame(f, echo.call(f), "a Function argument comes back as itself");
    }

    @Test
    void resultsOfManyThreadsStayTheirOwn() throws InterruptedException {
        TetherFunction echo = t("echo");
        Thread[] threads = new Thread[4];
        Throwable[] failure = new Throwable[1];
        for (int t = 0; t < threads.length; t++) {
            int id = t;
            threads[t] = new Thread(() -> {
                try {
                    TetherInstance p = pair((long) id, null);
                    for (int i = 0; i < 20_000; i++) {
                        long v = id * 1_000_000L + i;
                        assertEquals(v, echo.call(v));
                        assertSame(p, echo.call(p));
                        if (i % 7 == 0) {
                            assertEquals("s" + id, echo.call("s" + id));
                        }
                    }
                } catch (Throwable e) {
                    synchronized (failure) {
                        failure[0] = e;
                    }
                }
            });
            threads[t].start();
        }
        for (Thread th : threads) {
            th.join();
        }
        if (failure[0] != null) {
            fail(failure[0]);
        }
    }
}
