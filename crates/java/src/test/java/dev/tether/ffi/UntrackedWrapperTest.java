package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.assertBackTo;
import static dev.tether.ffi.TestSupport.onThreads;
import static dev.tether.ffi.TestSupport.settledLive;
import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import java.util.concurrent.CyclicBarrier;
import org.junit.jupiter.api.Test;

/**
 * A wrapper {@code TetherType.construct} makes for an object nothing else holds starts
 * untracked (no weak reference in its slot, {@link NativeRef#UNTRACKED}); it is tracked before
 * its object first reaches native code, by whichever route, so native code returning the object
 * always finds that wrapper.
 */
class UntrackedWrapperTest {
    private static final TetherType PAIR = Tether.type("testing.Pair");

    private static TetherInstance construct(Object first, Object second) {
        return (TetherInstance) PAIR.construct(first, second);
    }

    private static boolean untracked(TetherInstance w) {
        return (w.word & NativeRef.UNTRACKED) != 0;
    }

    @Test
    void aStashedObjectComesBackAsItsWrapper() {
        TetherInstance p = construct(1L, 2L);
        assertTrue(untracked(p), "nothing but the new wrapper holds a constructed object");
        t("stash").call("untracked", p);
        assertFalse(untracked(p), "tracked before native code got the object");
        assertSame(p, t("take").call("untracked"));
        assertSame(p, t("echo").call(p));
    }

    @Test
    void everyRouteToNativeCodeTracksFirst() {
        // As a plain one-argument call's argument (the leaf path on JDK 22+).
        TetherInstance echoed = construct(1L, 2L);
        assertSame(echoed, t("echo").call(echoed));
        assertFalse(untracked(echoed));
        // As a constructor's argument, read back through the field.
        TetherInstance stored = construct(1L, 2L);
        TetherInstance holder = construct(stored, null);
        assertFalse(untracked(stored));
        assertTrue(untracked(holder));
        assertSame(stored, holder.get("first"));
        // Set into a field (the holder is the receiver, the value an argument).
        TetherInstance set = construct(3L, 4L);
        holder.set("second", set);
        assertFalse(untracked(holder), "a receiver reaches native code too");
        assertSame(set, holder.get("second"));
        // Inside a list argument (the encoded path).
        TetherInstance listed = construct(5L, 6L);
        TetherList list = (TetherList) t("echo").call(java.util.List.of(listed, 7L));
        assertSame(listed, list.get(0));
        // As a callback's result, which native code reads from the wrapper's fields.
        TetherInstance returned = construct(8L, 9L);
        TetherCallback cb = args -> returned;
        assertSame(returned, t("call").call(cb));
        assertFalse(untracked(returned));
        t("stash").call("returned", returned);
        assertSame(returned, t("take").call("returned"));
    }

    @Test
    void threadsTrackingOneWrapperAtOnceKeepIt() throws Exception {
        long base = settledLive();
        int threads = 8;
        for (int round = 0; round < 50; round++) {
            TetherInstance p = construct((long) round, null);
            assertTrue(untracked(p));
            CyclicBarrier start = new CyclicBarrier(threads);
            onThreads(threads, i -> {
                start.await();
                assertSame(p, t("echo").call(p));
                t("stash").call("thread" + i, p);
                assertSame(p, t("take").call("thread" + i));
            });
            assertFalse(untracked(p));
            p.close();
        }
        assertBackTo(base);
    }

    @Test
    void untrackedWrappersReleaseTheirObjects() throws Exception {
        long base = settledLive();
        for (int i = 0; i < 1000; i++) {
            construct((long) i, null);
        }
        TetherInstance closed = construct(1L, null);
        assertTrue(untracked(closed));
        closed.close();
        assertThrows(IllegalStateException.class, () -> t("echo").call(closed));
        assertBackTo(base);
    }
}
