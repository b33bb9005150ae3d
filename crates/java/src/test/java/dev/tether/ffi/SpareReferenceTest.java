package dev.tether.ffi;

import static dev.tether.ffi.TestSupport.assertBackTo;
import static dev.tether.ffi.TestSupport.live;
import static dev.tether.ffi.TestSupport.settledLive;
import static dev.tether.ffi.TestSupport.t;
import static org.junit.jupiter.api.Assertions.*;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Spare references kept per thread (tether_core::thread_spares): a call returning one of its
 * wrapper arguments keeps the extra reference in the calling thread's cell and lends it to the
 * next call with that wrapper. The object must still die exactly when its wrapper is released,
 * whichever thread kept the spare and however the wrapper goes (close, Cleaner).
 *
 * <p>Each test starts from a settled heap: a cell keeps one entry, and an entry of an earlier
 * test's unreachable wrapper leaves only when its Cleaner runs.
 */
class SpareReferenceTest {
    private static final TetherFunction ECHO = t("echo");

    private static TetherInstance pair() {
        return (TetherInstance) t("make_pair").call(1L, 2L);
    }

    /** Echo {@code p} a hundred times: the first call keeps a spare, the others lend and keep it. */
    private static void echoes(TetherInstance p) {
        for (int i = 0; i < 100; i++) {
            assertSame(p, ECHO.call(p));
        }
    }

    /** Run {@code body} on a new thread, which then waits (alive, its cell kept) until released. */
    private static Thread parkedAfter(Runnable body, CountDownLatch done, CountDownLatch release,
            AtomicReference<Throwable> failure) {
        Thread thread = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.set(e);
            }
            done.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        thread.start();
        return thread;
    }

    @Test
    void anEchoKeepsASpareThatCloseReleasesAtOnce() throws InterruptedException {
        long base = settledLive();
        TetherInstance p = pair();
        int held = Native.sparesHeld();
        echoes(p);
        assertEquals(held + 1, Native.sparesHeld(), "this thread's cell keeps one spare of p");
        assertEquals(base + 1, live());
        p.close();
        assertEquals(held, Native.sparesHeld(), "close() took the spare back");
        assertEquals(base, live(), "the object died with its wrapper, as without spares");
    }

    @Test
    void closeReleasesASpareKeptByAnotherLiveThread() throws InterruptedException {
        long base = settledLive();
        TetherInstance p = pair();
        CountDownLatch done = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        int held = Native.sparesHeld();
        Thread other = parkedAfter(() -> echoes(p), done, release, failure);
        done.await();
        assertNull(failure.get());
        assertEquals(held + 1, Native.sparesHeld(), "the other thread keeps a spare of p");
        p.close();
        assertEquals(base, live(), "closed on this thread while the other keeps its cell: still freed");
        release.countDown();
        other.join();
    }

    @Test
    void theCleanerReleasesSparesOfEveryThread() throws InterruptedException {
        long base = settledLive();
        int held = Native.sparesHeld();
        CountDownLatch done = new CountDownLatch(2);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread[] threads = new Thread[2];
        // Both threads keep spares of the same object, then stay alive while it becomes
        // unreachable; only the Cleaner's release can free it.
        AtomicReference<TetherInstance> shared = new AtomicReference<>(pair());
        for (int i = 0; i < threads.length; i++) {
            threads[i] = parkedAfter(() -> echoes(shared.get()), done, release, failure);
        }
        done.await();
        assertNull(failure.get());
        assertEquals(held + 2, Native.sparesHeld(), "each thread keeps a spare of the object");
        shared.set(null);
        assertBackTo(base);
        release.countDown();
        for (Thread thread : threads) {
            thread.join();
        }
    }

    @Test
    void threadsThatExitGiveTheirSparesBack() throws InterruptedException {
        long base = settledLive();
        int held = Native.sparesHeld();
        TetherInstance p = pair();
        // More threads than the table has cells, one after another: each keeps a spare of p,
        // and each hands its cell (and the spare) back as it exits.
        for (int i = 0; i < 100; i++) {
            Thread thread = new Thread(() -> echoes(p));
            thread.start();
            thread.join();
        }
        // Thread.join returns before the native thread's thread-local destructors have run.
        for (int i = 0; i < 500 && Native.sparesHeld() != held; i++) {
            Thread.sleep(10);
        }
        assertEquals(held, Native.sparesHeld(), "exited threads keep no spares");
        assertEquals(base + 1, live(), "p lives on, held by its wrapper alone");
        echoes(p);
        assertEquals(held + 1, Native.sparesHeld());
        p.close();
        assertEquals(base, live());
    }

    @Test
    void aLentSpareSurvivesACallThatRejectsIt() throws InterruptedException {
        long base = settledLive();
        TetherInstance p = pair();
        TetherFunction add = t("add");
        int held = Native.sparesHeld();
        for (int round = 0; round < 3; round++) {
            assertSame(p, ECHO.call(p));
            assertEquals(held + 1, Native.sparesHeld(), "a spare is kept");
            assertThrows(TetherTypeError.class, () -> add.call(p, 1L));
            assertEquals(held, Native.sparesHeld(), "lent to add, whose int conversion rejected it");
            assertEquals(1L, p.get("first"), "the wrapper's own reference is intact");
        }
        p.close();
        assertEquals(base, live(), "no reference leaked or lost on the rejecting path");
    }

    @Test
    void spareOfOneObjectIsNotLentToAnother() throws InterruptedException {
        long base = settledLive();
        TetherInstance a = pair();
        TetherInstance b = pair();
        for (int i = 0; i < 50; i++) {
            assertSame(a, ECHO.call(a));
            assertSame(b, ECHO.call(b));
            assertSame(a, t("echo").call(a));
        }
        a.close();
        assertSame(b, ECHO.call(b));
        b.close();
        assertEquals(base, live());
    }

    // A wrapper passes its own word to calls (NativeRef: type index, generation, whether its
    // object has a slot), so the spares of a call are kept and taken back under the generation
    // of the wrapper Java holds, with no read of the object's slot.

    @Test
    void aLaterWrapperOfTheSameObjectKeepsSparesUnderItsOwnGeneration() throws InterruptedException {
        long base = settledLive();
        TetherInstance first = pair();
        t("stash").call("spares-generation", first);
        int held = Native.sparesHeld();
        echoes(first);
        first.close();
        assertEquals(held, Native.sparesHeld(), "close() took the first wrapper's spare back");
        TetherInstance second = (TetherInstance) t("take").call("spares-generation");
        assertNotSame(first, second, "a closed wrapper is never handed out again");
        echoes(second);
        assertEquals(held + 1, Native.sparesHeld(), "the second wrapper's calls keep a spare");
        second.close();
        assertEquals(held, Native.sparesHeld(), "its close() finds the spare under its own generation");
        assertEquals(base, live(), "nothing kept the object alive past its last wrapper");
    }

    @Test
    void aConstructedWrapperKeepsAndReleasesSpares() throws InterruptedException {
        long base = settledLive();
        // TetherType.construct makes the wrapper before the call; native code writes its
        // handle and word while it ties the new object.
        TetherInstance p = (TetherInstance) Tether.type("testing.Pair").construct(1L, 2L);
        int held = Native.sparesHeld();
        echoes(p);
        assertEquals(held + 1, Native.sparesHeld());
        assertEquals(1L, p.get("first"));
        p.close();
        assertEquals(held, Native.sparesHeld());
        assertEquals(base, live());
        assertThrows(IllegalStateException.class, () -> ECHO.call(p));
    }

    @Test
    void noSpareIsKeptForAnObjectWithoutThisFrontendsSlot() {
        // Global functions were made before the frontend allocator was installed: side-table
        // objects, for which no spares are kept (their wrappers' words say so).
        TetherFunction add = Tether.getGlobalFunc("testing.add");
        int held = Native.sparesHeld();
        for (int i = 0; i < 10; i++) {
            assertSame(add, ECHO.call(add));
        }
        assertEquals(held, Native.sparesHeld());
        assertEquals(5L, add.call(2L, 3L));
    }

    @Test
    void aClosedWrapperStaysClosedWhateverIsCalledOnIt() {
        TetherInstance p = pair();
        p.close();
        p.close();
        assertTrue(p.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ECHO.call(p));
        assertTrue(e.getMessage().contains("testing.Pair wrapper was closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> ECHO.call(1L, p));
        assertThrows(IllegalStateException.class, () -> p.get("first"));
        assertThrows(IllegalStateException.class, () -> p.set("first", 3L));
        assertThrows(IllegalStateException.class, () -> p.call("swap"));
        assertThrows(IllegalStateException.class, () -> Tether.type("testing.Pair").construct(p, null));
        assertEquals("testing.Pair", p.typeKey(), "the type stays known once closed");
    }

    @Test
    void aCloseBeforeTheConstructorsBindLeavesTheReleaseToBind() throws InterruptedException {
        long base = settledLive();
        // What TetherType.construct does, with a close() slipped in between the tie (native
        // code writing handle and word) and bind(), as another thread that found the object
        // through its slot could: the release must wait for bind and happen exactly once.
        TetherInstance w = new TetherInstance(Tether.type("testing.Pair").index());
        long owned = Native.hostValue(new Object(), "java.lang.Object");
        assertEquals(base + 1, live());
        w.handle = owned;
        w.closeNow();
        assertTrue(w.isClosed());
        assertEquals(base + 1, live(), "not bound yet: close() cannot release");
        w.bind();
        assertEquals(base, live(), "bind() saw the close and released the reference");
        w.closeNow();
        assertEquals(base, live(), "released once");
        assertThrows(IllegalStateException.class, () -> ECHO.call(w));
    }
}
